//! dwac-runtime: the tables the compiler produces, incremental lexing + GLR `commit`
//! over a persistent graph-structured stack, and the reference mask oracle.
//! Depends on `std` only. Nothing here panics on any input: tables are validated once
//! by [`Engine::new`], token ids and bytes are checked on every call.

pub mod array;
pub mod artifact;
pub mod dwa;
mod glr;
pub mod gss;
pub mod lexer;
pub mod mask;
pub mod matcher;
mod prio;
pub mod tables;
pub mod trie;

pub use array::{Array, Backing};
pub use artifact::{Artifact, ArtifactError};
pub use matcher::{CommitError, Engine, MaskError, Matcher};
pub use tables::{Action, GrammarTables, LexerTables, LrTables, TableError, Vocabulary, DEAD};
