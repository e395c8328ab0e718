//! IAM-style access policies for Eddy: AWS IAM JSON policy documents, parsed, validated and
//! evaluated against requests.
//!
//! The same grammar serves identity policies (attached to users) and bucket policies (attached
//! to resources, naming their principals in each statement), for both S3 actions
//! (`s3:GetObject`) and Eddy's Kafka actions (`KafkaRead`, `KafkaWrite`, ...). Documents that
//! AWS would reject, or that use features Eddy does not implement, are refused when parsed so
//! that a stored policy never means less than its author thinks.
//!
//! [`directory`] keeps the users (S3 secrets, SCRAM credentials from [`scram`]), the named
//! identity policies and the bucket policies in the catalog and answers from memory.
//!
//! ```
//! use iam::{Context, Decision, Policy, PolicyKind, Request};
//!
//! let policy = Policy::parse(
//!     r#"{"Statement": {"Effect": "Allow", "Principal": "*",
//!         "Action": "s3:GetObject", "Resource": "arn:aws:s3:::bucket/public/*"}}"#,
//!     PolicyKind::Resource,
//! )?;
//! let context = Context::default();
//! let request = Request {
//!     action: "s3:GetObject",
//!     resource: "arn:aws:s3:::bucket/public/logo.png",
//!     principal: None,
//!     context: &context,
//! };
//! assert_eq!(policy.evaluate(&request), Decision::Allow);
//! # Ok::<(), iam::PolicyError>(())
//! ```

#![warn(missing_docs)]

pub mod audit;
pub mod condition;
pub mod directory;
pub mod error;
pub mod policy;
pub mod scram;
pub mod wildcard;

pub use condition::{Condition, Conditions, Context, Operator, SetQualifier};
pub use directory::{ANONYMOUS, ConfigUser, Directory, EVERYONE, IamError, NamedPolicy};
pub use policy::{
    Decision, Effect, Matchers, Policy, PolicyError, PolicyKind, Principals, Request, Statement,
};
