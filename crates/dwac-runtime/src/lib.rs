#![deny(missing_docs)]
//! dwac-runtime: grammar-constrained decoding at serving time.
//!
//! An [`Artifact`] (written by `dwac compile`) holds a grammar's compiled tables and the
//! vocabulary they were compiled for; [`Artifact::open`] maps it and validates every table
//! index once, after which the tables are read in place (zero-copy). An [`Engine`] is those
//! tables, shared by every sequence; a [`Matcher`] is one sequence's parse state:
//!
//! - [`Matcher::fill_mask`] writes the allowed next tokens as a bitmask (bit `v % 32` of word
//!   `v / 32` is token `v`), read from the precompiled Parser DWA without lexing or parsing;
//!   [`fill_masks`] fills a batch's rows in one call;
//! - [`Matcher::commit`] / [`Matcher::commit_tokens`] advance the sequence (incremental lexing
//!   and GLR over a graph-structured stack); [`Matcher::validate_tokens`] checks a speculative
//!   draft without committing; [`Matcher::rollback`], [`Matcher::reset`] and `Clone` (an O(1)
//!   fork) go back or branch; [`Matcher::forced_tokens`] / [`Matcher::forced_bytes`] give what
//!   the grammar forces (jump-forward).
//!
//! ```no_run
//! use std::sync::Arc;
//! use dwac_runtime::{Artifact, Matcher};
//!
//! let artifact = Artifact::open("artifacts/book_flight.dwa")?;
//! let mut m = Matcher::new(Arc::clone(artifact.engine()));
//! let mut mask = vec![0u32; m.mask_words()];
//! m.fill_mask(&mut mask)?;          // before sampling
//! let token = mask.iter().enumerate().find(|(_, w)| **w != 0).map(|(i, w)| i as u32 * 32 + w.trailing_zeros()).unwrap();
//! m.commit(token)?;                 // after sampling
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Engine`], [`Artifact`] and [`Matcher`] are `Send + Sync`; mask work uses a
//! [`MaskScratch`] per thread (the runtime keeps one, or the caller passes its own), so masks of
//! different matchers can be filled on many threads at once.
//!
//! Nothing here panics on any input: artifacts and tables are validated once, token ids and
//! bytes are checked on every call, and a refused commit leaves the matcher unchanged.
//! Depends on `zerocopy` (and, with the default features, `memmap2` and `zstd`; `rayon` for
//! parallel [`fill_masks`]).
//!
//! The table types and modules hidden from these docs are the compiler's and the tests' view
//! of the same data; they are not a stable API.

#[doc(hidden)]
pub mod array;
#[doc(hidden)]
pub mod artifact;
mod batch;
#[doc(hidden)]
pub mod dwa;
mod glr;
#[doc(hidden)]
pub mod gss;
#[doc(hidden)]
pub mod lexer;
#[doc(hidden)]
pub mod mask;
mod matcher;
mod prio;
#[doc(hidden)]
pub mod tables;
#[doc(hidden)]
pub mod trie;

pub use artifact::{transport, Artifact, ArtifactError};
pub use batch::fill_masks;
pub use mask::MaskCounters;
pub use matcher::{CommitError, CommitTokensError, Engine, MaskError, MaskScratch, Matcher};
pub use tables::Vocabulary;

#[doc(hidden)]
pub use array::{Array, Backing};
#[doc(hidden)]
pub use tables::{Action, GrammarTables, LexerTables, LrTables, TableError, DEAD};

// Servers share engines and artifacts across threads and move matchers between them.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Engine>();
    send_sync::<Artifact>();
    send_sync::<Matcher>();
    send_sync::<MaskScratch>();
};
