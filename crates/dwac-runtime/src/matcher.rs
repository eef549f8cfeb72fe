//! `Matcher`: incremental lexing + GLR `commit`, `rollback`, cheap `Clone`, and the
//! reference mask (the oracle every faster mask is tested against).

use std::sync::Arc;

use crate::dwa::MaskTables;
use crate::glr::Closure;
use crate::gss::{push_unique, Node, NodeRef};
use crate::lexer::Inhibitor;
use crate::mask::{self, MaskCounters, ThreadView, WalkScratch};
use crate::prio;
use crate::tables::{GrammarTables, TableError, Vocabulary};
use crate::trie::Trie;

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
    #[doc(hidden)]
    /// Validate the tables (every index they hold is in range) and bundle them with `vocab`.
    pub fn new(tables: GrammarTables, vocab: Vocabulary) -> Result<Engine, TableError> {
        Engine::with_mask(tables, vocab, None)
    }

    #[doc(hidden)]
    /// As [`Engine::new`], with the Parser DWA for `fill_mask` (validated against the tables).
    pub fn with_mask(tables: GrammarTables, vocab: Vocabulary, mask: Option<MaskTables>) -> Result<Engine, TableError> {
        tables.validate()?;
        vocab.validate()?;
        if let Some(m) = &mask {
            m.validate(tables.lexer.num_states, vocab.len() as u32)?;
        }
        let p = &tables.lexer.priority;
        let mixed_priorities = p.iter().any(|&x| Some(&x) != p.first());
        Ok(Engine { tables, vocab, trie: std::sync::OnceLock::new(), mask, mixed_priorities })
    }

    #[doc(hidden)]
    /// As [`Engine::with_mask`] without validating the tables: for tables already validated
    /// (an artifact verified at deploy time). Reads stay bounds-checked, so invalid tables can
    /// make later calls panic but never read out of bounds.
    pub fn with_mask_unchecked(tables: GrammarTables, vocab: Vocabulary, mask: Option<MaskTables>) -> Engine {
        let p = &tables.lexer.priority;
        let mixed_priorities = p.iter().any(|&x| Some(&x) != p.first());
        Engine { tables, vocab, trie: std::sync::OnceLock::new(), mask, mixed_priorities }
    }

    #[doc(hidden)]
    /// The Parser DWA, if this engine has one.
    pub fn mask_tables(&self) -> Option<&MaskTables> {
        self.mask.as_ref()
    }

    /// The grammar's lexer and LR tables.
    #[doc(hidden)]
    pub fn tables(&self) -> &GrammarTables {
        &self.tables
    }

    /// The vocabulary: every token's exact bytes, which ids are special, the end tokens.
    pub fn vocab(&self) -> &Vocabulary {
        &self.vocab
    }
}

/// Why a `commit` or `rollback` was refused. The matcher is unchanged after any error.
#[derive(Clone, Debug, PartialEq, Eq)]
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

/// Working memory of a mask fill: accumulators of up to a vocabulary's width and small lists.
/// One per thread that fills masks; reusing it means the mask path allocates nothing once it has
/// grown to the workload. It holds no parse state: any matcher of any engine may use any
/// scratch (it grows to the widest vocabulary it has served).
#[derive(Default)]
pub struct MaskScratch {
    walk: WalkScratch,
    kills: Vec<u32>,
    kill_ranges: Vec<(usize, usize)>,
    /// Masks computed by the reference because the tables did not cover a thread.
    fallbacks: u64,
}

impl MaskScratch {
    /// A scratch sized for masks of `words` 32-bit words (it grows if it has to).
    pub fn with_words(words: usize) -> MaskScratch {
        MaskScratch {
            walk: WalkScratch::with_capacity(words),
            kills: Vec::with_capacity(16),
            kill_ranges: Vec::with_capacity(16),
            fallbacks: 0,
        }
    }

    /// What the last mask filled with this scratch did (stack reads, sets ORed, UNDECIDED tokens
    /// decided by committing them).
    pub fn counters(&self) -> MaskCounters {
        self.walk.counters
    }

    /// Masks filled with this scratch that had to be computed by the reference mask (a matcher
    /// without a Parser DWA, or a thread the DWA does not cover; see [`Matcher::fill_mask`]).
    pub fn fallbacks(&self) -> u64 {
        self.fallbacks
    }

    /// Walk at most `n` groups of threads with carried kill sets per round of a mask fill
    /// (default and most 64; the mask is the same), so that tests reach the rounds that only
    /// masks of more than 64 such groups need otherwise.
    #[doc(hidden)]
    pub fn set_groups_per_round(&mut self, n: usize) {
        self.walk.groups_per_round = n;
    }
}

impl std::fmt::Debug for MaskScratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MaskScratch").field("fallbacks", &self.fallbacks).finish_non_exhaustive()
    }
}

thread_local! {
    /// The scratch [`Matcher::fill_mask`] uses on this thread.
    static SCRATCH: std::cell::RefCell<MaskScratch> = std::cell::RefCell::new(MaskScratch::default());
}

/// Why [`Matcher::commit_tokens`] stopped: the tokens before `accepted` were committed, token
/// `accepted` was refused with `error` (and not committed), the rest were not tried.
#[derive(Debug, Clone, PartialEq, Eq)]
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

fn add_thread(out: &mut Vec<Thread>, q: u32, inh: &[Inhibitor], heads: &[NodeRef]) {
    if let Some(t) = out.iter_mut().find(|t| t.q == q && t.inh == inh) {
        for h in heads {
            push_unique(&mut t.heads, h);
        }
    } else {
        out.push(Thread { q, inh: inh.to_vec(), heads: heads.to_vec() });
    }
}

/// Nodes shifted at one byte, merged by (LR state, inhibitors): (state, inhibitors, preds).
type Shifted = (u32, Vec<Inhibitor>, Vec<NodeRef>);

fn add_shifted(shifted: &mut Vec<Shifted>, p: u32, h2: &[Inhibitor], below: NodeRef) {
    match shifted.iter_mut().find(|s| s.0 == p && s.1 == h2) {
        Some(s) => {
            push_unique(&mut s.2, &below);
        }
        None => shifted.push((p, h2.to_vec(), vec![below])),
    }
}

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

    #[doc(hidden)]
    /// Lexer threads and total GSS heads (diagnostics).
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

    fn accepts_eof(&self, threads: &[Thread], sc: &mut Scratch) -> bool {
        let t = &self.engine.tables;
        let eof = t.lr.eof();
        threads.iter().any(|th| {
            th.q == t.lexer.start && {
                sc.closure.run(&t.lr, &th.heads, eof);
                sc.closure.can_shift(&t.lr, eof)
            }
        })
    }

    /// One byte through every thread (no lookahead pruning). `pos` is the byte count after `b`.
    fn step_byte(&self, threads: &[Thread], b: u8, pos: u32, sc: &mut Scratch) -> Vec<Thread> {
        let t = &self.engine.tables;
        let lex = &t.lexer;
        let mut out: Vec<Thread> = Vec::new();
        // Shifted nodes at this byte, merged by (LR state, inhibitors): (state, inhibitors, preds).
        // Nodes are only merged under equal inhibitors, so a stack never escapes the inhibitors
        // of the lexing that built it.
        let mut shifted: Vec<Shifted> = Vec::new();
        for th in threads {
            if lex.step_inhibitors(&th.inh, b, &mut sc.h1).is_none() {
                continue;
            }
            for q2 in lex.successors(th.q, b) {
                if lex.can_continue(q2) {
                    add_thread(&mut out, q2, &sc.h1, &th.heads);
                }
                let acc = lex.accepts(q2);
                if !self.engine.mixed_priorities || lex.uniform_priority(acc) {
                    for &term in acc {
                        self.emit(term, q2, &th.heads, pos, sc, &mut out, &mut shifted);
                    }
                } else {
                    self.emit_prioritized(acc, q2, &th.heads, pos, sc, &mut out, &mut shifted);
                }
            }
        }
        for (p, h2, preds) in shifted {
            let n = Node::new(p, 2 * pos, preds);
            add_thread(&mut out, lex.start, &h2, std::slice::from_ref(&n));
        }
        out
    }

    /// The inhibitors after emitting `term` at lexer state `q2`: the carried ones (`sc.h1`) plus
    /// the one `term` creates.
    fn inhibitors_after(&self, term: u32, q2: u32, h1: &[Inhibitor]) -> Vec<Inhibitor> {
        let mut h2 = h1.to_vec();
        if let Some(i) = self.engine.tables.lexer.inhibitor_for(term, q2) {
            h2.push(i);
            h2.sort_unstable();
            h2.dedup();
        }
        h2
    }

    /// Emit `term` (a lexeme ending at lexer state `q2`) on every stack of `heads`: an ignored
    /// terminal leaves the stacks as they are; any other is reduced to and shifted.
    #[allow(
        clippy::too_many_arguments,
        reason = "the hot commit path: the lexeme, its end state and the caller's scratch buffers, passed apart so that none is borrowed through `self`"
    )]
    #[inline]
    fn emit(
        &self,
        term: u32,
        q2: u32,
        heads: &[NodeRef],
        pos: u32,
        sc: &mut Scratch,
        out: &mut Vec<Thread>,
        shifted: &mut Vec<Shifted>,
    ) {
        let t = &self.engine.tables;
        if t.lexer.is_ignored(term) {
            let h2 = self.inhibitors_after(term, q2, &sc.h1);
            add_thread(out, t.lexer.start, &h2, heads);
            return;
        }
        sc.closure.run(&t.lr, heads, term);
        sc.shifts.clear();
        sc.closure.shifts(&t.lr, term, (2 * pos).saturating_sub(1), &mut sc.shifts);
        if sc.shifts.is_empty() {
            return;
        }
        let h2 = self.inhibitors_after(term, q2, &sc.h1);
        for (p, n) in sc.shifts.drain(..) {
            add_shifted(shifted, p, &h2, n);
        }
    }

    /// Emit a lexeme whose terminals have different priorities (DESIGN.md §2, `prio.rs`): per
    /// stack, only the highest-priority group that can be used there.
    #[allow(clippy::too_many_arguments, reason = "as `emit`, plus the priority groups of the lexeme")]
    fn emit_prioritized(
        &self,
        acc: &[u32],
        q2: u32,
        heads: &[NodeRef],
        pos: u32,
        sc: &mut Scratch,
        out: &mut Vec<Thread>,
        shifted: &mut Vec<Shifted>,
    ) {
        let t = &self.engine.tables;
        let (lex, lr) = (&t.lexer, &t.lr);
        let mut sorted = acc.to_vec();
        sorted.sort_by_key(|&x| std::cmp::Reverse(lex.priority_of(x)));
        let mut groups: Vec<Vec<u32>> = Vec::new();
        for x in sorted {
            match groups.last_mut() {
                Some(g) if lex.priority_of(g[0]) == lex.priority_of(x) => g.push(x),
                _ => groups.push(vec![x]),
            }
        }
        // Heads decided by their top state, bucketed by the group they use.
        let mut buckets: Vec<Vec<NodeRef>> = vec![Vec::new(); groups.len()];
        let mut outcomes = Vec::new();
        for h in heads {
            match prio::decide(lr, lex, h.state, &groups) {
                prio::Decision::Nothing => {}
                prio::Decision::Group(i) => buckets[i].push(h.clone()),
                prio::Decision::PerPath => {
                    sc.resolver.resolve(lr, lex, h, &groups, (2 * pos).saturating_sub(1), &mut outcomes)
                }
            }
        }
        for (g, bucket) in groups.iter().zip(&buckets) {
            if !bucket.is_empty() {
                for &term in g {
                    self.emit(term, q2, bucket, pos, sc, out, shifted);
                }
            }
        }
        for o in outcomes {
            match o {
                prio::Outcome::Shift { term, target, below } => {
                    let h2 = self.inhibitors_after(term, q2, &sc.h1);
                    add_shifted(shifted, target, &h2, below);
                }
                prio::Outcome::Ignored { term, head } => {
                    let h2 = self.inhibitors_after(term, q2, &sc.h1);
                    add_thread(out, lex.start, &h2, std::slice::from_ref(&head));
                }
            }
        }
    }

    /// Keep only branches satisfying the one-lexeme lookahead `LA` (DESIGN.md §2).
    fn prune(&self, threads: Vec<Thread>, sc: &mut Scratch) -> Vec<Thread> {
        let t = &self.engine.tables;
        let (lex, lr) = (&t.lexer, &t.lr);
        let mut out = Vec::with_capacity(threads.len());
        for mut th in threads {
            if th.q == lex.start || lex.may_become_ignored(th.q) {
                out.push(th);
                continue;
            }
            th.heads.retain(|h| {
                lex.pending_terminals(th.q).any(|term| {
                    sc.closure.run(lr, std::slice::from_ref(h), term);
                    sc.closure.can_shift(lr, term)
                })
            });
            if !th.heads.is_empty() {
                out.push(th);
            }
        }
        out
    }

    /// Run `bytes` from `threads`; `Err(i)` if no live branch remains, `i` = index of the byte
    /// after which that became certain.
    fn advance(&self, threads: &[Thread], pos: u32, bytes: &[u8], sc: &mut Scratch) -> Result<Vec<Thread>, usize> {
        let mut cur: Vec<Thread> = threads.to_vec();
        for (i, &b) in bytes.iter().enumerate() {
            cur = self.step_byte(&cur, b, pos.saturating_add(i as u32 + 1), sc);
            if cur.is_empty() {
                return Err(self.first_dead_byte(threads, pos, &bytes[..=i], sc));
            }
        }
        let out = self.prune(cur, sc);
        if out.is_empty() && !bytes.is_empty() {
            return Err(self.first_dead_byte(threads, pos, bytes, sc));
        }
        Ok(out)
    }

    /// Error path only: prune after every byte to find the first byte after which nothing is live.
    fn first_dead_byte(&self, threads: &[Thread], pos: u32, bytes: &[u8], sc: &mut Scratch) -> usize {
        let mut cur: Vec<Thread> = threads.to_vec();
        for (i, &b) in bytes.iter().enumerate() {
            let next = self.step_byte(&cur, b, pos.saturating_add(i as u32 + 1), sc);
            cur = self.prune(next, sc);
            if cur.is_empty() {
                return i;
            }
        }
        bytes.len().saturating_sub(1)
    }

    fn push(&mut self, next: Config) {
        let prev = std::mem::replace(&mut self.cur, next);
        if self.max_rollback > 0 {
            self.history.push(prev, self.max_rollback);
        }
    }

    /// Commit raw bytes (e.g. a prompt prefix), with no token alignment.
    pub fn commit_bytes(&mut self, bytes: &[u8]) -> Result<(), CommitError> {
        self.commit_inner(bytes, None)
    }

    fn commit_inner(&mut self, bytes: &[u8], token: Option<u32>) -> Result<(), CommitError> {
        if self.cur.terminated {
            return Err(CommitError::Terminated);
        }
        let mut sc = Scratch::default();
        match self.advance(&self.cur.threads, self.cur.pos, bytes, &mut sc) {
            Ok(threads) => {
                let pos = self.cur.pos.saturating_add(bytes.len() as u32);
                self.push(Config { threads: Arc::new(threads), pos, terminated: false });
                Ok(())
            }
            Err(i) => Err(CommitError::Rejected {
                token,
                offset: self.cur.pos.saturating_add(i as u32),
                byte: bytes.get(i).copied(),
            }),
        }
    }

    /// Commit one sampled token.
    pub fn commit(&mut self, token: u32) -> Result<(), CommitError> {
        // An `Arc` clone (not a copy of the token's bytes) frees `self` for the commit below.
        let engine = Arc::clone(&self.engine);
        let vocab = &engine.vocab;
        let Some(bytes) = vocab.token_bytes(token) else {
            return Err(CommitError::TokenOutOfRange { token, vocab_size: vocab.len() as u32 });
        };
        if self.cur.terminated {
            return Err(CommitError::Terminated);
        }
        if vocab.is_eos(token) {
            if !self.is_accepting() {
                return Err(CommitError::Rejected { token: Some(token), offset: self.cur.pos, byte: None });
            }
            let mut next = self.cur.clone();
            next.terminated = true;
            self.push(next);
            return Ok(());
        }
        if vocab.is_special(token) || bytes.is_empty() {
            return Err(CommitError::SpecialToken { token });
        }
        self.commit_inner(bytes, Some(token))
    }

    /// Commit a run of tokens (e.g. the accepted prefix of a speculative draft): each in turn,
    /// stopping at the first refused one, which is not committed (the matcher is then as after
    /// the tokens before it). `Ok(())` when all were committed; each commit can be undone by
    /// [`rollback`](Self::rollback) on its own.
    pub fn commit_tokens(&mut self, tokens: &[u32]) -> Result<(), CommitTokensError> {
        for (i, &t) in tokens.iter().enumerate() {
            self.commit(t).map_err(|error| CommitTokensError { accepted: i, error })?;
        }
        Ok(())
    }

    /// The length of the longest prefix of `tokens` that could be committed in turn, without
    /// changing the matcher (speculative decoding checks every draft with this). Tokens after
    /// an end token are never accepted.
    pub fn validate_tokens(&self, tokens: &[u32]) -> usize {
        let mut m = Matcher { max_rollback: 0, history: History::default(), ..self.clone() };
        for (i, &t) in tokens.iter().enumerate() {
            if m.commit(t).is_err() {
                return i;
            }
        }
        tokens.len()
    }

    /// Undo the last `n` commits (tokens or byte strings).
    pub fn rollback(&mut self, n: usize) -> Result<(), CommitError> {
        let available = self.history_len();
        if n > available {
            return Err(CommitError::RollbackTooFar { requested: n, available });
        }
        if n > 0 {
            if let Some(c) = self.history.pop_n(n) {
                self.cur = c;
            }
        }
        Ok(())
    }

    /// Would `commit(token)` succeed? Does not change the matcher.
    pub fn is_allowed(&self, token: u32) -> bool {
        self.token_allowed(token, &mut Scratch::default())
    }

    fn token_allowed(&self, token: u32, sc: &mut Scratch) -> bool {
        let vocab = &self.engine.vocab;
        let Some(bytes) = vocab.token_bytes(token) else { return false };
        if self.cur.terminated {
            return false;
        }
        if vocab.is_eos(token) {
            return self.accepts_eof(&self.cur.threads, sc);
        }
        if vocab.is_special(token) || bytes.is_empty() {
            return false;
        }
        self.advance(&self.cur.threads, self.cur.pos, bytes, sc).is_ok()
    }

    /// Words (`u32`) a mask over this vocabulary needs.
    pub fn mask_words(&self) -> usize {
        self.engine.vocab.len().div_ceil(32)
    }

    /// The mask (DESIGN.md §2): bit `v % 32` of `out[v / 32]` is set iff token `v` is allowed
    /// (end tokens included). Read from the Parser DWA without lexing or parsing (`mask.rs`);
    /// equal to [`fill_reference_mask`](Self::fill_reference_mask) by construction, which the
    /// differential tests check. Without a DWA, or where it does not cover a thread (a lexer
    /// state or carried inhibitor no token boundary produces, e.g. after raw `commit_bytes`),
    /// the reference mask is computed instead (counted by [`MaskScratch::fallbacks`]).
    ///
    /// `out` needs at least [`mask_words`](Self::mask_words) words and may be wider (a model
    /// with more logit rows than tokenizer ids: padded embeddings); every bit past the
    /// vocabulary is cleared. Uses this thread's [`MaskScratch`], kept by the runtime; see
    /// [`fill_mask_with`](Self::fill_mask_with) to pass one.
    pub fn fill_mask(&self, out: &mut [u32]) -> Result<(), MaskError> {
        SCRATCH.with(|sc| match sc.try_borrow_mut() {
            Ok(mut sc) => self.fill_mask_with(&mut sc, out),
            // (Only if a fill on this thread were re-entered; none is.)
            Err(_) => self.fill_mask_with(&mut MaskScratch::default(), out),
        })
    }

    /// [`fill_mask`](Self::fill_mask) with the caller's scratch.
    pub fn fill_mask_with(&self, sc: &mut MaskScratch, out: &mut [u32]) -> Result<(), MaskError> {
        let need = self.mask_words();
        if out.len() < need {
            return Err(MaskError::BufferTooSmall { need, got: out.len() });
        }
        // (Past the vocabulary: nothing is allowed.)
        let (out, past) = out.split_at_mut(need);
        past.iter_mut().for_each(|w| *w = 0);
        let Some(t) = self.engine.mask.as_ref() else {
            sc.fallbacks += 1;
            return self.fill_reference_mask(out);
        };
        if self.cur.terminated {
            out.iter_mut().for_each(|w| *w = 0);
            return Ok(());
        }
        sc.kills.clear();
        sc.kill_ranges.clear();
        for th in self.cur.threads.iter() {
            let from = sc.kills.len();
            for i in &th.inh {
                match t.kill(i.s, i.k) {
                    Some(set) => sc.kills.push(set),
                    None => {
                        sc.fallbacks += 1;
                        return self.fill_reference_mask(out);
                    }
                }
            }
            sc.kill_ranges.push((from, sc.kills.len()));
        }
        let views = self.cur.threads.iter().zip(&sc.kill_ranges).map(|(th, &(a, b))| ThreadView {
            q: th.q,
            kills: &sc.kills[a..b],
            heads: &th.heads,
        });
        mask::fill(t, views, &mut sc.walk, out);
        // Tokens the DWA left UNDECIDED at a thread's lexer state: decided exactly by commit.
        let mut commit_sc = Scratch::default();
        for th in self.cur.threads.iter() {
            let u = t.undecided.get(th.q as usize).copied().unwrap_or(crate::dwa::NONE);
            if u == crate::dwa::NONE {
                continue;
            }
            let mut undecided = 0;
            t.for_each_token(u, |v| {
                let (w, b) = ((v / 32) as usize, 1u32 << (v % 32));
                if out[w] & b == 0 && self.token_allowed(v, &mut commit_sc) {
                    out[w] |= b;
                }
                undecided += 1;
            });
            sc.walk.counters.undecided += undecided;
        }
        Ok(())
    }

    /// The mask as a list of allowed token ids (see [`fill_mask`](Self::fill_mask)).
    pub fn allowed(&self) -> Vec<u32> {
        let mut m = vec![0u32; self.mask_words()];
        if self.fill_mask(&mut m).is_err() {
            return Vec::new();
        }
        (0..self.engine.vocab.len() as u32).filter(|&v| m[(v / 32) as usize] >> (v % 32) & 1 == 1).collect()
    }

    /// The tokens the grammar forces from here, for fast-forward: while the mask allows exactly
    /// one token, that token (committed on a copy; `self` is unchanged), at most `limit` of
    /// them. An end token that is the only choice is included and ends the run. Stops at the
    /// first step with a choice (or none).
    pub fn forced_tokens(&self, limit: usize) -> Result<Vec<u32>, MaskError> {
        let mut m = self.clone();
        m.set_max_rollback(0);
        let mut mask = vec![0u32; self.mask_words()];
        let mut out = Vec::new();
        while out.len() < limit {
            m.fill_mask(&mut mask)?;
            let mut only = None;
            let mut count = 0u32;
            for (w, &bits) in mask.iter().enumerate() {
                count += bits.count_ones();
                if count > 1 {
                    break;
                }
                if bits != 0 {
                    only = Some(w as u32 * 32 + bits.trailing_zeros());
                }
            }
            let (1, Some(t)) = (count, only) else { break };
            out.push(t);
            if self.engine.vocab.is_eos(t) || m.commit(t).is_err() {
                break;
            }
        }
        Ok(out)
    }

    /// The bytes every continuation starts with, for fast-forward with re-tokenization: while
    /// the end token is not allowed and every allowed token starts with the same byte, that byte
    /// (committed on a copy), at most `limit` of them.
    pub fn forced_bytes(&self, limit: usize) -> Result<Vec<u8>, MaskError> {
        let mut m = self.clone();
        m.set_max_rollback(0);
        let mut mask = vec![0u32; self.mask_words()];
        let vocab = &self.engine.vocab;
        let mut out = Vec::new();
        while out.len() < limit {
            m.fill_mask(&mut mask)?;
            if vocab.eos.iter().any(|&e| mask[(e / 32) as usize] >> (e % 32) & 1 == 1) {
                break;
            }
            let mut first: Option<u8> = None;
            let mut unique = true;
            'scan: for (w, &bits) in mask.iter().enumerate() {
                let mut b = bits;
                while b != 0 {
                    let v = w as u32 * 32 + b.trailing_zeros();
                    b &= b - 1;
                    let Some(&c) = vocab.token_bytes(v).and_then(|t| t.first()) else { continue };
                    match first {
                        None => first = Some(c),
                        Some(f) if f == c => {}
                        Some(_) => {
                            unique = false;
                            break 'scan;
                        }
                    }
                }
            }
            let (true, Some(c)) = (unique, first) else { break };
            if m.commit_bytes(&[c]).is_err() {
                break;
            }
            out.push(c);
        }
        Ok(out)
    }

    /// The reference mask (DESIGN.md §2): for every token, clone, commit, test liveness;
    /// end tokens where the output may end. Bit `v % 32` of `out[v / 32]` is token `v`.
    /// Slow and obviously right. `out` must hold at least [`mask_words`](Self::mask_words) words.
    pub fn fill_reference_mask(&self, out: &mut [u32]) -> Result<(), MaskError> {
        let need = self.mask_words();
        if out.len() < need {
            return Err(MaskError::BufferTooSmall { need, got: out.len() });
        }
        out.iter_mut().for_each(|w| *w = 0);
        let mut sc = Scratch::default();
        for v in 0..self.engine.vocab.len() as u32 {
            if self.token_allowed(v, &mut sc) {
                out[(v / 32) as usize] |= 1 << (v % 32);
            }
        }
        Ok(())
    }

    #[doc(hidden)]
    /// The reference mask again, computed with the vocabulary trie: for every token exactly the
    /// byte steps `commit` takes and its final lookahead pruning, but each prefix shared by several
    /// tokens is stepped once, and the first bytes are spread over `threads` OS threads. Equal to
    /// [`fill_reference_mask`](Self::fill_reference_mask) (tested); for differential corpus runs,
    /// where the per-token reference at 151k tokens takes ~0.1 s a mask.
    pub fn fill_reference_mask_shared(&self, out: &mut [u32], threads: usize) -> Result<(), MaskError> {
        let need = self.mask_words();
        if out.len() < need {
            return Err(MaskError::BufferTooSmall { need, got: out.len() });
        }
        out.iter_mut().for_each(|w| *w = 0);
        if self.cur.terminated {
            return Ok(());
        }
        let vocab = &self.engine.vocab;
        let trie = self.engine.trie.get_or_init(|| {
            let toks: Vec<(u32, &[u8])> = (0..vocab.len() as u32)
                .filter(|&v| !vocab.is_special(v))
                .filter_map(|v| vocab.token_bytes(v).map(|b| (v, b)))
                .collect();
            Trie::build(&toks)
        });
        let roots = trie.children(0);
        let parts = threads.clamp(1, 64);
        let results: Vec<Vec<u32>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..parts)
                .map(|i| {
                    scope.spawn(move || {
                        let mut allowed = Vec::new();
                        let mut sc = Scratch::default();
                        let mut stack: Vec<(u32, Vec<Thread>, u32)> = Vec::new();
                        for &(b, child) in roots.iter().skip(i).step_by(parts) {
                            let first = self.step_byte(&self.cur.threads, b, self.cur.pos.saturating_add(1), &mut sc);
                            if !first.is_empty() {
                                stack.push((child, first, self.cur.pos.saturating_add(1)));
                            }
                        }
                        while let Some((node, threads, pos)) = stack.pop() {
                            for &tok in trie.tokens_at(node) {
                                if !self.prune(threads.clone(), &mut sc).is_empty() {
                                    allowed.push(tok);
                                }
                            }
                            for &(b, child) in trie.children(node) {
                                let next = self.step_byte(&threads, b, pos.saturating_add(1), &mut sc);
                                if !next.is_empty() {
                                    stack.push((child, next, pos.saturating_add(1)));
                                }
                            }
                        }
                        allowed
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
        });
        for v in results.into_iter().flatten() {
            out[(v / 32) as usize] |= 1 << (v % 32);
        }
        let mut sc = Scratch::default();
        if self.accepts_eof(&self.cur.threads, &mut sc) {
            for &e in &vocab.eos {
                out[(e / 32) as usize] |= 1 << (e % 32);
            }
        }
        Ok(())
    }

    #[doc(hidden)]
    /// A canonical description of the configuration: per thread (sorted) its lexer state, carried
    /// inhibitors and the set of its stacks as LR-state sequences, top first. Masks (and every
    /// future of the matcher) depend on nothing else, so equal keys mean equal masks: corpus runs
    /// use it to cache reference masks. `None` if some thread has more than `max_paths` stacks.
    pub fn configuration_key(&self, max_paths: usize) -> Option<Vec<u32>> {
        let mut threads: Vec<Vec<u32>> = Vec::new();
        for th in self.cur.threads.iter() {
            let mut paths: Vec<Vec<u32>> = Vec::new();
            let mut stack: Vec<(NodeRef, Vec<u32>)> = th.heads.iter().map(|h| (h.clone(), Vec::new())).collect();
            while let Some((n, mut path)) = stack.pop() {
                path.push(n.state);
                if n.preds.is_empty() {
                    paths.push(path);
                    if paths.len() > max_paths {
                        return None;
                    }
                } else {
                    for p in n.preds.iter() {
                        stack.push((p.clone(), path.clone()));
                    }
                }
            }
            paths.sort();
            paths.dedup();
            let mut enc = vec![th.q, th.inh.len() as u32];
            enc.extend(th.inh.iter().flat_map(|i| [i.s, i.k]));
            enc.push(paths.len() as u32);
            for p in paths {
                enc.push(p.len() as u32);
                enc.extend(p);
            }
            threads.push(enc);
        }
        threads.sort();
        threads.dedup();
        let mut key = vec![u32::from(self.cur.terminated), threads.len() as u32];
        key.extend(threads.into_iter().flatten());
        Some(key)
    }

    /// The reference mask as a list of allowed token ids.
    pub fn reference_allowed(&self) -> Vec<u32> {
        let mut sc = Scratch::default();
        (0..self.engine.vocab.len() as u32).filter(|&v| self.token_allowed(v, &mut sc)).collect()
    }
}

/// Why a mask could not be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MaskError {
    /// The output buffer has fewer words than the vocabulary needs.
    BufferTooSmall {
        /// Words needed (`ceil(vocabulary size / 32)`, or rows × row width for a batch).
        need: usize,
        /// Words given.
        got: usize,
    },
}

impl std::fmt::Display for MaskError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MaskError::BufferTooSmall { need, got } => write!(f, "mask buffer holds {got} words, {need} needed"),
        }
    }
}

impl std::error::Error for MaskError {}
