//! dwac-runtime: the tables the compiler produces and the artifact that stores them
//! ([`Artifact`]: mmap, validation, zero-copy views), incremental lexing + GLR `commit`
//! over a persistent graph-structured stack, the Parser DWA mask and the reference mask
//! oracle. Depends on `zerocopy` (and, with the default features, `memmap2` and `zstd`).
//! Nothing here panics on any input: artifacts and tables are validated once (by
//! [`Artifact::open`] / [`Engine::new`]), token ids and bytes are checked on every call.

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
