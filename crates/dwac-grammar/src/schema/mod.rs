//! JSON Schema → grammar IR.

pub mod numbers;
pub mod strings;
