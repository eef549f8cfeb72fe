//! dwac-runtime: the tables the compiler produces, incremental lexing + GLR `commit`
//! over a persistent graph-structured stack, and the reference mask oracle.
//! Depends on `std` only. Nothing here panics on any input.

pub mod tables;

pub use tables::{Action, GrammarTables, LexerTables, LrTables, Vocabulary, DEAD};
