//! Masks: `fill_mask` through the Parser DWA (with its scratch), the reference mask it is tested
//! against (clone, commit, non-empty), jump-forward (`forced_tokens`, `forced_bytes`) and the
//! configuration key the differential tests cache reference masks by.

#[cfg(feature = "unstable")]
use super::NodeRef;
use super::{fill, MaskCounters, Matcher, Scratch, Thread, ThreadView, Trie, Vocabulary, WalkScratch};

/// Working memory of a mask fill: accumulators of up to a vocabulary's width and small lists.
/// One per thread that fills masks; reusing it means the mask path allocates nothing once it has
/// grown to the workload. It holds no parse state: any matcher of any engine may use any
/// scratch (it grows to the widest vocabulary it has served).
#[derive(Default)]
pub struct MaskScratch {
    pub(super) walk: WalkScratch,
    pub(super) kills: Vec<u32>,
    pub(super) kill_ranges: Vec<(usize, usize)>,
    /// The UNDECIDED tokens of the fill under way (sorted, distinct).
    pub(super) undecided: Vec<u32>,
    /// Masks computed by the reference because the tables did not cover a thread.
    pub(super) fallbacks: u64,
}

impl MaskScratch {
    /// A scratch sized for masks of `words` 32-bit words (it grows if it has to).
    pub fn with_words(words: usize) -> MaskScratch {
        MaskScratch {
            walk: WalkScratch::with_capacity(words),
            kills: Vec::with_capacity(16),
            kill_ranges: Vec::with_capacity(16),
            undecided: Vec::new(),
            fallbacks: 0,
        }
    }

    /// What the last mask filled with this scratch did (stack reads, sets ORed, UNDECIDED tokens
    /// decided by committing them, whether it fell back to the reference mask); the same value
    /// [`Matcher::fill_mask_with`] returned.
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
    /// masks of more than 64 such groups need otherwise. Unstable (feature `unstable`).
    #[cfg(feature = "unstable")]
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

/// From this many UNDECIDED tokens in one mask on, they are decided over the vocabulary trie
/// ([`Matcher::decide_by_trie`]) rather than committed one by one.
const SHARED_DECISION_FROM: usize = 256;

/// The trie of the vocabulary's tokens with bytes (special tokens have none).
pub(super) fn vocabulary_trie(vocab: &Vocabulary) -> Trie {
    let toks: Vec<(u32, &[u8])> = (0..vocab.len() as u32)
        .filter(|&v| !vocab.is_special(v))
        .filter_map(|v| vocab.token_bytes(v).map(|b| (v, b)))
        .collect();
    Trie::build(&toks)
}

/// Why a mask could not be written.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MaskError {
    /// The output buffer has fewer words than the vocabulary needs.
    BufferTooSmall {
        /// Words needed (`ceil(vocabulary size / 32)`, or rows × row width for a batch).
        need: usize,
        /// Words given.
        got: usize,
    },
    /// A worker thread of a parallel mask computation panicked (a bug): the mask it was to
    /// contribute is unknown, so no mask is claimed. Carries the panic's message.
    WorkerPanicked(String),
}

impl std::fmt::Display for MaskError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MaskError::BufferTooSmall { need, got } => write!(f, "mask buffer holds {got} words, {need} needed"),
            MaskError::WorkerPanicked(m) => write!(f, "a mask worker thread panicked: {m}"),
        }
    }
}

/// The results of scoped worker threads, in order; a panicking worker is an error carrying its
/// message, never an empty result (an empty part of a mask would read as "nothing allowed").
#[cfg(feature = "unstable")]
fn join_workers<'scope, T>(handles: Vec<std::thread::ScopedJoinHandle<'scope, T>>) -> Result<Vec<T>, MaskError> {
    handles
        .into_iter()
        .map(|h| {
            h.join().map_err(|p| {
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "(no message)".to_string());
                MaskError::WorkerPanicked(msg)
            })
        })
        .collect()
}

impl std::error::Error for MaskError {}

impl Matcher {
    /// Would `commit(token)` succeed? Does not change the matcher.
    pub fn is_allowed(&self, token: u32) -> bool {
        self.token_allowed(token, &mut Scratch::default())
    }

    pub(super) fn token_allowed(&self, token: u32, sc: &mut Scratch) -> bool {
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

    /// The mask (ARCHITECTURE.md, "The contract"): bit `v % 32` of `out[v / 32]` is set iff token `v` is allowed
    /// (end tokens included). Read from the Parser DWA without lexing or parsing (`mask.rs`);
    /// equal to [`fill_reference_mask`](Self::fill_reference_mask) by construction, which the
    /// differential tests check. Without a DWA, or where it does not cover a thread (a lexer
    /// state or carried inhibitor no token boundary produces, e.g. after raw `commit_bytes`),
    /// the reference mask is computed instead (counted by [`MaskScratch::fallbacks`] and in the
    /// returned counters' `fallbacks`).
    ///
    /// Returns what the fill did ([`MaskCounters`]): among other things how many UNDECIDED
    /// tokens it decided by committing them and whether it fell back to the reference mask, the
    /// two slow paths a server may want to watch.
    ///
    /// `out` needs at least [`mask_words`](Self::mask_words) words and may be wider (a model
    /// with more logit rows than tokenizer ids: padded embeddings); every bit past the
    /// vocabulary is cleared. Uses this thread's [`MaskScratch`], kept by the runtime; see
    /// [`fill_mask_with`](Self::fill_mask_with) to pass one.
    pub fn fill_mask(&self, out: &mut [u32]) -> Result<MaskCounters, MaskError> {
        SCRATCH.with(|sc| match sc.try_borrow_mut() {
            Ok(mut sc) => self.fill_mask_with(&mut sc, out),
            // (Only if a fill on this thread were re-entered; none is.)
            Err(_) => self.fill_mask_with(&mut MaskScratch::default(), out),
        })
    }

    /// [`fill_mask`](Self::fill_mask) with the caller's scratch.
    pub fn fill_mask_with(&self, sc: &mut MaskScratch, out: &mut [u32]) -> Result<MaskCounters, MaskError> {
        let need = self.mask_words();
        if out.len() < need {
            return Err(MaskError::BufferTooSmall { need, got: out.len() });
        }
        // Every path below starts from zero counts (the walk resets them too, but the fallback
        // and terminated paths do not walk).
        sc.walk.counters = MaskCounters::default();
        // (Past the vocabulary: nothing is allowed.)
        let (out, past) = out.split_at_mut(need);
        past.iter_mut().for_each(|w| *w = 0);
        let Some(t) = self.engine.mask.as_ref() else {
            return self.fill_fallback(sc, out);
        };
        if self.cur.terminated {
            out.iter_mut().for_each(|w| *w = 0);
            return Ok(sc.walk.counters);
        }
        sc.kills.clear();
        sc.kill_ranges.clear();
        for th in self.cur.threads.iter() {
            let from = sc.kills.len();
            for i in &th.inh {
                match t.kill(i.s, i.k) {
                    Some(set) => sc.kills.push(set),
                    None => return self.fill_fallback(sc, out),
                }
            }
            sc.kill_ranges.push((from, sc.kills.len()));
        }
        let views = self.cur.threads.iter().zip(&sc.kill_ranges).map(|(th, &(a, b))| ThreadView {
            q: th.q,
            kills: &sc.kills[a..b],
            heads: &th.heads,
        });
        fill::fill(t, views, &mut sc.walk, out);
        // Tokens the DWA left UNDECIDED at a thread's lexer state: decided exactly, as the
        // reference mask decides them, by committing them (`fill::fill` reset the counters;
        // they are added to below). (Tokens another thread's walk already allowed need no
        // commit.)
        sc.undecided.clear();
        for th in self.cur.threads.iter() {
            let u = t.undecided.get(th.q as usize).copied().unwrap_or(crate::dwa::NONE);
            if u != crate::dwa::NONE {
                t.for_each_token(u, |v| {
                    if out[(v / 32) as usize] >> (v % 32) & 1 == 0 {
                        sc.undecided.push(v);
                    }
                });
            }
        }
        if sc.undecided.is_empty() {
            return Ok(sc.walk.counters);
        }
        sc.undecided.sort_unstable();
        sc.undecided.dedup();
        sc.walk.counters.undecided = sc.undecided.len() as u32;
        let mut commit_sc = Scratch::default();
        if sc.undecided.len() < SHARED_DECISION_FROM {
            for &v in &sc.undecided {
                if self.token_allowed(v, &mut commit_sc) {
                    out[(v / 32) as usize] |= 1 << (v % 32);
                }
            }
        } else {
            self.decide_by_trie(&sc.undecided, out, &mut commit_sc);
        }
        Ok(sc.walk.counters)
    }

    /// Decide `tokens` (sorted) as [`token_allowed`](Self::token_allowed) does, over the
    /// vocabulary trie: each byte prefix is stepped once for every token it begins, and a
    /// prefix no branch survives ends its subtree. Many UNDECIDED tokens (a character-level
    /// grammar's state past the compiler's budget: tens of thousands) cost a walk of the live
    /// prefixes instead of a commit each.
    fn decide_by_trie(&self, tokens: &[u32], out: &mut [u32], sc: &mut Scratch) {
        let vocab = &self.engine.vocab;
        let trie = self.engine.trie.get_or_init(|| vocabulary_trie(vocab));
        let wanted = |v: u32| tokens.binary_search(&v).is_ok();
        let mut stack: Vec<(u32, Vec<Thread>, u32)> = Vec::new();
        for &(b, child) in trie.children(0) {
            let next = self.step_byte(&self.cur.threads, b, self.cur.pos.saturating_add(1), sc);
            if !next.is_empty() {
                stack.push((child, next, self.cur.pos.saturating_add(1)));
            }
        }
        while let Some((node, threads, pos)) = stack.pop() {
            for &v in trie.tokens_at(node) {
                if wanted(v) && !self.prune(threads.clone(), sc).is_empty() {
                    out[(v / 32) as usize] |= 1 << (v % 32);
                }
            }
            for &(b, child) in trie.children(node) {
                let next = self.step_byte(&threads, b, pos.saturating_add(1), sc);
                if !next.is_empty() {
                    stack.push((child, next, pos.saturating_add(1)));
                }
            }
        }
        // Tokens the trie does not hold (special tokens, end tokens): one by one.
        for &v in tokens {
            if (vocab.is_special(v) || vocab.token_bytes(v).is_none_or(<[u8]>::is_empty)) && self.token_allowed(v, sc) {
                out[(v / 32) as usize] |= 1 << (v % 32);
            }
        }
    }

    /// The mask by the reference path, counted as a fallback (`out` is exactly the vocabulary's
    /// words).
    fn fill_fallback(&self, sc: &mut MaskScratch, out: &mut [u32]) -> Result<MaskCounters, MaskError> {
        sc.fallbacks += 1;
        sc.walk.counters = MaskCounters { fallbacks: 1, ..MaskCounters::default() };
        self.fill_reference_mask(out)?;
        Ok(sc.walk.counters)
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

    /// The reference mask (ARCHITECTURE.md, "The contract"): for every token, clone, commit, test liveness;
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

    /// The reference mask again, computed with the vocabulary trie: for every token exactly the
    /// byte steps `commit` takes and its final lookahead pruning, but each prefix shared by several
    /// tokens is stepped once, and the first bytes are spread over `threads` OS threads. Equal to
    /// [`fill_reference_mask`](Self::fill_reference_mask) (tested); for differential corpus runs,
    /// where the per-token reference at 151k tokens takes ~0.1 s a mask. Unstable (feature
    /// `unstable`).
    #[cfg(feature = "unstable")]
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
        let trie = self.engine.trie.get_or_init(|| vocabulary_trie(vocab));
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
            join_workers(handles)
        })?;
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

    /// A canonical description of the configuration: per thread (sorted) its lexer state, carried
    /// inhibitors and the set of its stacks as LR-state sequences, top first. Masks (and every
    /// future of the matcher) depend on nothing else, so equal keys mean equal masks: corpus runs
    /// use it to cache reference masks. `None` if some thread has more than `max_paths` stacks.
    /// Unstable (feature `unstable`).
    #[cfg(feature = "unstable")]
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

// (The tests build tables with the writer's side: feature `unstable`.)
#[cfg(all(test, feature = "unstable"))]
mod tests {
    use super::{join_workers, MaskError};

    #[test]
    fn a_panicking_worker_is_an_error_not_an_empty_result() {
        let r = std::thread::scope(|scope| {
            let handles = vec![
                scope.spawn(|| vec![1u32, 2]),
                scope.spawn(|| -> Vec<u32> { panic!("worker 2 fails on purpose") }),
            ];
            join_workers(handles)
        });
        assert_eq!(r, Err(MaskError::WorkerPanicked("worker 2 fails on purpose".into())));
        let ok = std::thread::scope(|scope| join_workers(vec![scope.spawn(|| 7u32), scope.spawn(|| 8u32)]));
        assert_eq!(ok, Ok(vec![7, 8]));
    }
}
