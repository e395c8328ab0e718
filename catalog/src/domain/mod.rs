//! The catalog's domains, one module each: its operations (a sub-enum of
//! [`crate::Op`]), their checks and how they apply to the store's tables. A new domain
//! is a module here, a variant of `Op` and one line in each dispatch of
//! [`crate::apply::Tables`].

pub mod expansion;
pub mod groups;
pub mod iam;
pub mod iceberg;
pub mod kafka;
pub mod pipelines;
pub mod s3;
pub mod schemas;
pub mod transactions;

pub use expansion::ExpansionOp;
pub use groups::GroupOp;
pub use iam::IamOp;
pub use iceberg::IcebergOp;
pub use kafka::KafkaOp;
pub use pipelines::PipelineOp;
pub use s3::S3Op;
pub use schemas::SchemaOp;
pub use transactions::TxnOp;
