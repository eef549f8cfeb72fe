//! dwac-grammar's tests, one binary: the Lark and GBNF front-ends (snapshots, diagnostics,
//! the shared corpus), lexer inference, normalization, and JSON Schema numbers and strings.

mod frontends;
mod frontends_corpus;
mod lift;
mod normalize;
mod schema_numbers;
mod schema_strings;
