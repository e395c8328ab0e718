//! Topic expansions: the JSON of each record's value (or key) parsed into the typed
//! columns of a separate Iceberg table.
//!
//! [`Layout`] turns the expansion's Iceberg struct schema and [`Options`] into the target
//! table's columns; [`Expander`] turns record bytes into Arrow record batches of the
//! target table's Arrow schema, one pass of a JSON pull parser per record. A typed
//! expansion ([`registered`]) reads Avro, Protobuf or JSON Schema records by their
//! registered schemas into the same parser.

pub mod layout;
pub mod parse;

pub use layout::{Column, Layout, LayoutError, Options, Source};
pub use parse::{Counters, Expander};
#[doc(hidden)]
pub mod fuzzing;
pub mod infer;
pub mod manage;
pub mod registered;
pub mod spec;
pub mod target;
