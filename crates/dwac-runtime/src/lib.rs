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
//! Open an artifact with options ([`OpenOptions`]: a vocabulary for a transport form that
//! leaves it out, verification off for files verified at deploy time) or with the defaults
//! ([`Artifact::open`], [`Artifact::from_bytes`]).
//!
//! With the feature `unstable`, the module `unstable` gives the compiler and the tests the
//! tables themselves and the artifact writer: not a stable API, and not needed to serve.

mod array;
mod artifact;
mod batch;
mod dwa;
mod glr;
mod gss;
mod lexer;
mod matcher;
mod prio;
mod tables;
mod trie;
#[cfg(feature = "unstable")]
pub mod unstable;

pub use artifact::{Artifact, ArtifactError, OpenOptions};
pub use batch::fill_masks;
pub use dwa::MaskCounters;
pub use matcher::{CommitError, CommitTokensError, Engine, MaskError, MaskScratch, Matcher};
pub use tables::{TableError, Vocabulary};

// Servers share engines and artifacts across threads and move matchers between them.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Engine>();
    send_sync::<Artifact>();
    send_sync::<Matcher>();
    send_sync::<MaskScratch>();
};
