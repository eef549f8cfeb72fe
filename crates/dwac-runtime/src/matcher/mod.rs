//! `Matcher`: incremental lexing + GLR `commit`, `rollback`, cheap `Clone`, and the
//! reference mask (the oracle every faster mask is tested against).

use std::sync::Arc;

use crate::dwa::MaskTables;
use crate::dwa::{fill, MaskCounters, ThreadView, WalkScratch};
use crate::glr::Closure;
use crate::gss::{push_unique, Node, NodeRef};
use crate::lexer::Inhibitor;
use crate::prio;
use crate::tables::{GrammarTables, TableError, Vocabulary};
use crate::trie::Trie;

mod commit;
mod masks;

pub use masks::{MaskError, MaskScratch};

/// Validated grammar tables plus the vocabulary they are used with.
#[derive(Debug)]
pub struct Engine {
    tables: GrammarTables,
    vocab: Vocabulary,
    /// The vocabulary trie, built on first use of the shared reference mask.
    trie: std::sync::OnceLock<Trie>,
    /// The Parser DWA, if compiled: `fill_mask` reads it; without it `fill_mask` is the reference.
    mask: Option<MaskTables>,
    /// Some terminals have different priorities (else no lexeme needs priority resolution).
    mixed_priorities: bool,
}

impl Engine {
    /// Validate the tables (every index they hold is in range) and the Parser DWA, if any,
    /// against them, and bundle them with `vocab`.
    pub(crate) fn validated(
        tables: GrammarTables,
        vocab: Vocabulary,
        mask: Option<MaskTables>,
    ) -> Result<Engine, TableError> {
        tables.validate()?;
        vocab.validate()?;
        if let Some(m) = &mask {
            m.validate(tables.lexer.num_states, vocab.len() as u32)?;
        }
        let p = &tables.lexer.priority;
        let mixed_priorities = p.iter().any(|&x| Some(&x) != p.first());
        // Tables with UNDECIDED tokens have them decided over the vocabulary trie at run time:
        // made now, at load, rather than by the first mask that needs it.
        let trie = std::sync::OnceLock::new();
        if mask.as_ref().is_some_and(|m| m.undecided.iter().any(|&u| u != crate::dwa::NONE)) {
            let _ = trie.set(masks::vocabulary_trie(&vocab));
        }
        Ok(Engine { tables, vocab, trie, mask, mixed_priorities })
    }

    /// As [`Engine::validated`] without validating: for tables already validated (an artifact
    /// verified at deploy time). Reads stay bounds-checked, so invalid tables can make later
    /// calls panic but never read out of bounds.
    pub(crate) fn unchecked(tables: GrammarTables, vocab: Vocabulary, mask: Option<MaskTables>) -> Engine {
        let p = &tables.lexer.priority;
        let mixed_priorities = p.iter().any(|&x| Some(&x) != p.first());
        Engine { tables, vocab, trie: std::sync::OnceLock::new(), mask, mixed_priorities }
    }

    /// How many (lexer state, token) pairs the compiler left UNDECIDED: masks decide them at
    /// run time by committing the token (which [`MaskCounters`](crate::MaskCounters) counts as
    /// they happen). `None` for an engine without a Parser DWA, whose every mask is the
    /// reference mask.
    pub fn undecided_tokens(&self) -> Option<u64> {
        let t = self.mask.as_ref()?;
        let mut n = 0u64;
        for &set in t.undecided.iter().filter(|&&s| s != crate::dwa::NONE) {
            t.for_each_token(set, |_| n += 1);
        }
        Some(n)
    }

    /// The vocabulary: every token's exact bytes, which ids are special, the end tokens.
    pub fn vocab(&self) -> &Vocabulary {
        &self.vocab
    }
}

/// Why a `commit` or `rollback` was refused. The matcher is unchanged after any error.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommitError {
    /// The token id is not in the vocabulary.
    TokenOutOfRange {
        /// The id given.
        token: u32,
        /// The vocabulary's size (ids are below it).
        vocab_size: u32,
    },
    /// A special token without bytes that the grammar does not allow (not an end token).
    SpecialToken {
        /// The id given.
        token: u32,
    },
    /// The bytes leave no live branch.
    Rejected {
        /// The token committed (`None` for raw bytes).
        token: Option<u32>,
        /// The absolute byte position (from the start of the output) of the first byte after
        /// which no branch was live.
        offset: u32,
        /// That byte (`None` for an end token committed where the grammar cannot end).
        byte: Option<u8>,
    },
    /// The matcher already accepted an end token.
    Terminated,
    /// `rollback(n)` asked for more steps than were committed.
    RollbackTooFar {
        /// Steps asked for.
        requested: usize,
        /// Steps that can be undone.
        available: usize,
    },
}

impl std::fmt::Display for CommitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommitError::TokenOutOfRange { token, vocab_size } => {
                write!(f, "token {token} is out of range (vocabulary size {vocab_size})")
            }
            CommitError::SpecialToken { token } => write!(f, "special token {token} is not allowed here"),
            CommitError::Rejected { token, offset, byte } => {
                match token {
                    Some(t) => write!(f, "token {t} rejected")?,
                    None => write!(f, "bytes rejected")?,
                }
                match byte {
                    Some(b) => write!(f, " at byte {offset} ({:?})", char::from(*b)),
                    None => write!(f, " at byte {offset} (end of input not allowed here)"),
                }
            }
            CommitError::Terminated => write!(f, "the matcher has already accepted an end token"),
            CommitError::RollbackTooFar { requested, available } => {
                write!(f, "cannot roll back {requested} steps, only {available} committed")
            }
        }
    }
}

impl std::error::Error for CommitError {}

/// A lexer thread: a pending partial lexeme (`q`), carried inhibitors, and the GSS heads it applies to.
#[derive(Clone, Debug)]
struct Thread {
    q: u32,
    inh: Vec<Inhibitor>,
    heads: Vec<NodeRef>,
}

#[derive(Clone, Debug)]
struct Config {
    threads: Arc<Vec<Thread>>,
    /// Bytes committed so far.
    pos: u32,
    terminated: bool,
}

/// The states `rollback` can return to: a persistent list (newest first), so cloning a matcher
/// shares it in O(1). Bounded by `max_rollback`: once it holds twice the bound, the newest
/// `max_rollback` entries are copied into a fresh list and the rest is released (amortized O(1)
/// per commit, memory O(max_rollback) per matcher).
#[derive(Clone, Default)]
struct History {
    head: Option<Arc<HistNode>>,
    len: usize,
}

impl std::fmt::Debug for History {
    // Not the derived one: it would recurse down the whole list.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("History").field("len", &self.len).finish_non_exhaustive()
    }
}

struct HistNode {
    config: Config,
    prev: Option<Arc<HistNode>>,
}

impl Drop for HistNode {
    fn drop(&mut self) {
        // Unlink iteratively: a long history must not overflow the stack when it is dropped.
        let mut next = self.prev.take();
        while let Some(node) = next {
            match Arc::try_unwrap(node) {
                Ok(mut n) => next = n.prev.take(),
                Err(_) => break,
            }
        }
    }
}

impl History {
    fn push(&mut self, config: Config, max: usize) {
        self.head = Some(Arc::new(HistNode { config, prev: self.head.take() }));
        self.len += 1;
        if self.len > max.saturating_mul(2) {
            self.truncate_to(max);
        }
    }

    /// Keep only the newest `keep` entries (in a fresh list).
    fn truncate_to(&mut self, keep: usize) {
        let mut kept = Vec::with_capacity(keep.min(self.len));
        let mut at = self.head.clone();
        while let Some(n) = at {
            if kept.len() == keep {
                break;
            }
            kept.push(n.config.clone());
            at = n.prev.clone();
        }
        self.head = None;
        self.len = 0;
        for c in kept.into_iter().rev() {
            self.head = Some(Arc::new(HistNode { config: c, prev: self.head.take() }));
            self.len += 1;
        }
    }

    /// Drop the newest `n - 1` entries and pop the next one (`n ≥ 1`, `n ≤ len`).
    fn pop_n(&mut self, n: usize) -> Option<Config> {
        let mut at = self.head.clone();
        for _ in 1..n {
            at = at?.prev.clone();
        }
        let node = at?;
        self.head = node.prev.clone();
        self.len -= n;
        Some(node.config.clone())
    }
}

/// Parser state for one sequence: lexer threads over a graph-structured stack, and the states
/// [`rollback`](Self::rollback) can return to. A matcher holds parse state only, no buffers:
/// `Clone` (a fork, for speculative decoding and beam search) is O(1) in the history and
/// O(#threads) pointer copies otherwise, and allocates nothing per vocabulary token. Mask work
/// uses a [`MaskScratch`], owned by the caller ([`fill_mask_with`](Self::fill_mask_with)) or
/// kept by the runtime per thread ([`fill_mask`](Self::fill_mask)), so the masks of different
/// matchers can be filled on many threads at once.
#[derive(Clone, Debug)]
pub struct Matcher {
    engine: Arc<Engine>,
    cur: Config,
    history: History,
    /// How many steps `rollback` can undo (`usize::MAX`: all of them).
    max_rollback: usize,
}

/// Why [`Matcher::commit_tokens`] stopped: the tokens before `accepted` were committed, token
/// `accepted` was refused with `error` (and not committed), the rest were not tried.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommitTokensError {
    /// Tokens committed (the index of the refused one).
    pub accepted: usize,
    /// Why that token was refused.
    pub error: CommitError,
}

impl std::fmt::Display for CommitTokensError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "token {} of the run refused: {}", self.accepted, self.error)
    }
}

impl std::error::Error for CommitTokensError {}

/// Nodes shifted at one byte, merged by (LR state, inhibitors): (state, inhibitors, preds).
type Shifted = (u32, Vec<Inhibitor>, Vec<NodeRef>);

/// Reusable scratch for stepping.
#[derive(Default)]
struct Scratch {
    closure: Closure,
    resolver: prio::PathResolver,
    h1: Vec<Inhibitor>,
    shifts: Vec<(u32, NodeRef)>,
}

impl Matcher {
    /// A matcher at the start of the grammar, able to roll back any number of commits (see
    /// [`with_max_rollback`](Self::with_max_rollback) for a bounded history).
    pub fn new(engine: Arc<Engine>) -> Matcher {
        let lex_start = engine.tables.lexer.start;
        let root = Node::new(0, 0, Vec::new());
        let threads = vec![Thread { q: lex_start, inh: Vec::new(), heads: vec![root] }];
        Matcher {
            engine,
            cur: Config { threads: Arc::new(threads), pos: 0, terminated: false },
            history: History::default(),
            max_rollback: usize::MAX,
        }
    }

    /// Back to the start of the grammar, as [`Matcher::new`] made it (the rollback bound is
    /// kept; the history is released).
    pub fn reset(&mut self) {
        let fresh = Matcher::new(Arc::clone(&self.engine));
        self.cur = fresh.cur;
        self.history = History::default();
    }

    /// The engine this matcher runs on.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Bytes committed so far.
    pub fn position(&self) -> u32 {
        self.cur.pos
    }

    /// Number of committed steps that `rollback` can undo.
    pub fn history_len(&self) -> usize {
        self.history.len.min(self.max_rollback)
    }

    /// A matcher whose `rollback` can always undo the last `max_rollback` commits (and never
    /// more than that many at once); older states are released (it keeps at most twice that
    /// many), so a long generation does not keep every state alive.
    pub fn with_max_rollback(engine: Arc<Engine>, max_rollback: usize) -> Matcher {
        let mut m = Matcher::new(engine);
        m.max_rollback = max_rollback;
        m
    }

    /// Change the rollback bound (releasing older states now if it shrinks).
    pub fn set_max_rollback(&mut self, max_rollback: usize) {
        self.max_rollback = max_rollback;
        if self.history.len > max_rollback {
            self.history.truncate_to(max_rollback);
        }
    }

    /// How many commits [`rollback`](Self::rollback) can always undo (`usize::MAX`: all).
    pub fn max_rollback(&self) -> usize {
        self.max_rollback
    }

    /// Lexer threads and total GSS heads (diagnostics). Unstable (feature `unstable`).
    #[cfg(feature = "unstable")]
    pub fn stats(&self) -> (usize, usize) {
        (self.cur.threads.len(), self.cur.threads.iter().map(|t| t.heads.len()).sum())
    }

    /// Has an end token been committed? Then the output is complete: every further commit is
    /// refused ([`CommitError::Terminated`]) and the mask is empty. Only
    /// [`rollback`](Self::rollback) or [`reset`](Self::reset) leave this state.
    pub fn is_terminated(&self) -> bool {
        self.cur.terminated
    }

    /// May the output end here? True iff the text committed so far is a complete sentence of the
    /// grammar (an end token is in the mask) and no end token has been committed yet. A server
    /// that stops on its own (a length limit, a stop string) checks this to know whether the
    /// output is valid; a matcher can be accepting and still allow more tokens (`{"a": 1}` may
    /// be followed by whitespace).
    pub fn is_accepting(&self) -> bool {
        !self.cur.terminated && self.accepts_eof(&self.cur.threads, &mut Scratch::default())
    }
}

/// The compiler's and the tests' access to an engine's tables (feature `unstable`; no semver
/// promise).
#[cfg(feature = "unstable")]
impl Engine {
    /// Validate the tables (every index they hold is in range) and bundle them with `vocab`.
    pub fn new(tables: GrammarTables, vocab: Vocabulary) -> Result<Engine, TableError> {
        Engine::validated(tables, vocab, None)
    }

    /// As [`Engine::new`], with the Parser DWA for `fill_mask` (validated against the tables).
    pub fn with_mask(tables: GrammarTables, vocab: Vocabulary, mask: Option<MaskTables>) -> Result<Engine, TableError> {
        Engine::validated(tables, vocab, mask)
    }

    /// As [`Engine::with_mask`] without validating the tables: for tables already validated
    /// (the compiler's own output). Reads stay bounds-checked, so invalid tables can make later
    /// calls panic but never read out of bounds.
    pub fn with_mask_unchecked(tables: GrammarTables, vocab: Vocabulary, mask: Option<MaskTables>) -> Engine {
        Engine::unchecked(tables, vocab, mask)
    }

    /// The Parser DWA, if this engine has one.
    pub fn mask_tables(&self) -> Option<&MaskTables> {
        self.mask.as_ref()
    }

    /// The grammar's lexer and LR tables.
    pub fn tables(&self) -> &GrammarTables {
        &self.tables
    }
}
