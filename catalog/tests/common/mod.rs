//! Helpers of the catalog's integration suites (each suite uses some of them).
#![allow(dead_code)]

pub mod ops;
pub mod postgres;
