//! Bases and diffs: a lexer state that enters most first bytes the way an earlier, fully walked
//! state does takes that state's classes and re-walks only the subtrees where the two differ.

use super::{live_entry_key, Branch, FastMap, LiveHeights, Scratch, SetPool, StateClasses, Tokens, Walker, DEAD};
use std::sync::Arc;

/// A lexer state whose classes were found by a full walk, kept so that later states entering
/// most first bytes the same way reuse its classes (see [`Walker::classes`]).
pub(super) struct Base {
    pub(super) q: u32,
    /// When it was made or last derived from ([`Walker::clock`]): the least recently used base
    /// makes way for a new one.
    pub(super) used: u64,
    /// Per child of the trie's root: how a token starting there is entered ([`Walker::entries`]).
    pub(super) entry: Vec<u32>,
    /// [`Walker::entry_keys`] of `entry`.
    pub(super) keys: Vec<u64>,
    /// A quarter of the tokens below each child it enters, summed (see [`Walker::classes`]).
    pub(super) quarter: usize,
    /// Its classes: (signature set id, tokens).
    pub(super) classes: Vec<(u32, Tokens)>,
}

/// [`Walker::diff`] walks a subtree with at most this many tokens rather than comparing it
/// level by level.
pub(super) const DIFF_WALK_UPTO: u32 = 32;

/// Bases a walker keeps (a memory bound: each holds its classes' bitmaps).
pub(super) const MAX_BASES: usize = 64;

/// [`Walker::entries`]: no lexing of the byte from the state.
pub(super) const ENTRY_DEAD: u32 = u32::MAX - 1;

/// [`Walker::entries`]: the byte does something other than entering one fresh branch.
pub(super) const ENTRY_WALK: u32 = u32::MAX;

impl<'a> Walker<'a> {
    /// Below `node`, where `q`'s branches are `arena[qo..qo + ql]` and the base's `arena[po..po +
    /// pl]`: every token whose lexings from `q` may differ from the base's is pushed to `removed`
    /// and, when it has lexings, walked from `q` into `sc.per_token` (or `sc.undecided`). Where a
    /// byte leads both to the same branches, everything below agrees and is skipped; where the
    /// subtree is large, the two are compared again one level down.
    #[allow(
        clippy::too_many_arguments,
        reason = "a recursive walk of two branch ranges at once, with the walk's scratch and the terminal pool borrowed apart from the walker"
    )]
    pub(super) fn diff(
        &mut self,
        node: u32,
        q: (usize, usize),
        p: (usize, usize),
        sc: &mut Scratch,
        removed: &mut Vec<u32>,
        terms: &mut SetPool,
    ) {
        for &(b, child) in self.trie.children(node) {
            self.diff_child(node, b, child, q, p, sc, removed, terms);
        }
    }

    /// [`Self::diff`] below `child`, the child of `node` by byte `b`.
    #[allow(clippy::too_many_arguments, reason = "as `diff`, one level down")]
    pub(super) fn diff_child(
        &mut self,
        node: u32,
        b: u8,
        child: u32,
        (qo, ql): (usize, usize),
        (po, pl): (usize, usize),
        sc: &mut Scratch,
        removed: &mut Vec<u32>,
        terms: &mut SetPool,
    ) {
        let vi = Arc::clone(&self.index);
        let (qs, qn) = self.step_branches(qo, ql, b, sc, terms);
        let (ps, pn) = self.step_branches(po, pl, b, sc, terms);
        if sc.arena[qs..qs + qn] == sc.arena[ps..ps + pn]
            || self.equivalent_branches(sc, (qs, qn), (ps, pn), vi.height[child as usize])
        {
            sc.arena.truncate(qs);
            return;
        }
        if qn == 0 {
            self.trie.subtree_tokens(child, removed);
        } else if pn == 0 || vi.subtree_len[child as usize] <= DIFF_WALK_UPTO || self.over_limits(sc, qs, qn) {
            // (Without branches, the base has no tokens below to remove.)
            if pn > 0 {
                self.trie.subtree_tokens(child, removed);
            }
            // The walk reads branches at the arena's end: move q's there.
            let (ws, _) = (sc.arena.len(), ());
            for i in qs..qs + qn {
                let br = sc.arena[i];
                sc.arena.push(br);
            }
            self.walk_region(node, child, ws, qn, sc, terms);
        } else {
            let at = self.trie.tokens_at(child);
            if !at.is_empty() {
                removed.extend_from_slice(at);
                let id = self.sig_set(sc, qs, qn, terms);
                sc.per_token.extend(at.iter().map(|&t| (t, id)));
            }
            self.diff(child, (qs, qn), (ps, pn), sc, removed, terms);
        }
        sc.arena.truncate(qs);
    }

    /// Per child of the trie's root, how `q` enters it: [`ENTRY_DEAD`] (no lexing), the lexer
    /// state of the one fresh branch, or [`ENTRY_WALK`] (anything else).
    pub(super) fn entries(&mut self, q: u32, terms: &mut SetPool) -> Vec<u32> {
        let lex = self.lex;
        let mut out = Vec::new();
        let root = self.trie.children(0);
        let mut entry = Vec::with_capacity(root.len());
        for &(b, _) in root {
            // `advance`'s fast path, without the branch list.
            if q != lex.start {
                let q2 = lex.step(q, b);
                if q2 == DEAD {
                    entry.push(ENTRY_DEAD);
                    continue;
                }
                if lex.accepts(q2).is_empty() {
                    entry.push(if lex.can_continue(q2) { q2 } else { ENTRY_DEAD });
                    continue;
                }
            }
            out.clear();
            self.advance(Branch { q, inh: 0, prefix: 0 }, b, terms, &mut out);
            out.sort_unstable();
            out.dedup();
            entry.push(match out.as_slice() {
                [] => ENTRY_DEAD,
                [br] if br.inh == 0 && br.prefix == 0 => br.q,
                _ => ENTRY_WALK,
            });
        }
        entry
    }

    /// Per child of the trie's root, what decides the tokens below it given `entry`: equal keys,
    /// equal lexings. A fresh branch at a lexer state from which no inhibitor is created within
    /// the subtree's height is keyed by its block of bounded-horizon equivalence at that height
    /// (see [`Self::equivalent_branches`]); any other entry by itself.
    pub(super) fn entry_keys(&self, entry: &[u32]) -> Vec<u64> {
        let root = self.trie.children(0);
        let mut live = self.live.borrow_mut();
        entry.iter().zip(root).map(|(&e, &(_, child))| self.entry_key_with(&mut live, e, child)).collect()
    }

    /// The key of entering the trie's node `child` (of height `h`) with the one fresh branch
    /// `(e, ∅, ε)`: `e`'s block of `≡_h` when no inhibitor is created within `h` bytes of `e`
    /// (equal keys, equal lexings below, by the argument of [`Self::equivalent_branches`] with
    /// nothing else in the lists), else `e` itself. [`ENTRY_DEAD`] and [`ENTRY_WALK`] are
    /// keyed as themselves.
    pub(super) fn entry_key(&self, e: u32, child: u32) -> u64 {
        self.entry_key_with(&mut self.live.borrow_mut(), e, child)
    }

    fn entry_key_with(&self, live: &mut LiveHeights, e: u32, child: u32) -> u64 {
        match e {
            ENTRY_DEAD | ENTRY_WALK => e as u64,
            _ => live_entry_key((self.lex, self.trie, &self.index, &self.horizon), live, e, child),
        }
    }

    /// Do the branches `arena[qs..qs + qn]` (of a state being derived) and `arena[ps..ps + pn]`
    /// (of its base, at the same trie node) give every token of a subtree of height `h` the
    /// same lexings? Besides when the lists are equal, when they differ in one branch each,
    /// `(x, ∅, p)` against `(y, ∅, p)`, with `x ≡_h y` ([`Horizon`]) and no inhibitor created
    /// within `h` bytes of `x`:
    /// - below, the walk reads at the states `x` and `y` lead to only what `≡_h` compares, so
    ///   the two take the same steps and end in states of the same lookahead class on every
    ///   token; what they emit restarts at `q0` with no inhibitor, identically on both sides;
    /// - so the branch lists below stay equal but for the one branch still in its first
    ///   lexeme. No other branch of the list has a step sequence that is `p` or leads to it
    ///   (checked), so none can ever meet that branch (same state, inhibitors and steps) on one
    ///   side and be merged with it, but not on the other: the lists below have the same
    ///   length on both sides, and neither reaches the limit of [`MAX_LEXINGS`] (and leaves
    ///   tokens UNDECIDED) where the other does not. At the root (one branch `(q, ∅, ε)`, as
    ///   [`Walker::state_memo`] and [`Walker::root_memo`] compare) there is no other branch.
    pub(super) fn equivalent_branches(
        &self,
        sc: &Scratch,
        (qs, qn): (usize, usize),
        (ps, pn): (usize, usize),
        h: u32,
    ) -> bool {
        if qn != pn || qn == 0 {
            return false;
        }
        let (a, b) = (&sc.arena[qs..qs + qn], &sc.arena[ps..ps + pn]);
        let (mut i, mut j) = (0, 0);
        let (mut only_a, mut only_b) = (None, None);
        while i < a.len() || j < b.len() {
            if i < a.len() && j < b.len() && a[i] == b[j] {
                i += 1;
                j += 1;
            } else if j == b.len() || (i < a.len() && a[i] < b[j]) {
                if only_a.replace(a[i]).is_some() {
                    return false;
                }
                i += 1;
            } else {
                if only_b.replace(b[j]).is_some() {
                    return false;
                }
                j += 1;
            }
        }
        match (only_a, only_b) {
            (Some(x), Some(y)) => {
                x.inh == 0
                    && y.inh == 0
                    && x.prefix == y.prefix
                    && self.horizon.inhibitor_free(x.q, h)
                    && self.horizon.equivalent(x.q, y.q, h)
                    && !a.iter().any(|w| *w != x && self.is_prefix_of(w.prefix, x.prefix))
            }
            _ => false,
        }
    }

    /// Is step sequence `p` an ancestor of `n`, or `n` itself, in the trie of step sequences?
    pub(super) fn is_prefix_of(&self, p: u32, mut n: u32) -> bool {
        let d = self.depth[p as usize];
        if d > self.depth[n as usize] {
            return false;
        }
        while self.depth[n as usize] > d {
            n = self.prefixes[n as usize].0;
        }
        n == p
    }

    /// [`Self::classes`] of `q` from base `bi`: the base's classes without the tokens whose
    /// lexings may differ ([`Self::diff`]), plus those tokens walked from `q`.
    pub(super) fn classes_from_base(
        &mut self,
        q: u32,
        bi: usize,
        (entry, keys): (&[u32], &[u64]),
        terms: &mut SetPool,
    ) -> StateClasses {
        let mut sc = Scratch::default();
        sc.arena.push(Branch { q, inh: 0, prefix: 0 });
        sc.arena.push(Branch { q: self.bases[bi].q, inh: 0, prefix: 0 });
        let mut removed = Vec::new();
        // At the root, children entered alike (equal keys, [`Self::entry_keys`]) have the same
        // lexings below, as the diff would find: skipped without stepping.
        let root = self.trie.children(0);
        for (i, &(b, child)) in root.iter().enumerate() {
            let base = &self.bases[bi];
            if entry[i] != ENTRY_WALK && base.entry[i] != ENTRY_WALK && keys[i] == base.keys[i] {
                continue;
            }
            self.diff_child(0, b, child, (0, 1), (1, 1), &mut sc, &mut removed, terms);
        }
        let walked = self.group(&sc.per_token, &sc.bulk);
        if removed.is_empty() && walked.is_empty() && sc.undecided.is_empty() {
            // Every token as at the base (e.g. counter positions far from their bound): its
            // classes, bitmaps shared.
            return (self.bases[bi].classes.clone(), Vec::new());
        }
        // The base's classes, less the removed tokens; then the walked tokens merged into the
        // class of their signature set.
        let mut gone = std::mem::take(&mut self.gone);
        gone.resize(self.words, 0);
        for &t in &removed {
            gone[(t / 64) as usize] |= 1 << (t % 64);
        }
        let mut by_sig: FastMap<u32, Tokens> = FastMap::default();
        let mut order: Vec<u32> = Vec::new();
        for (id, toks) in &self.bases[bi].classes {
            let kept = match toks {
                Tokens::List(l) => {
                    let is_gone = |t: u32| gone[(t / 64) as usize] >> (t % 64) & 1 == 1;
                    if l.iter().any(|&t| is_gone(t)) {
                        Tokens::List(l.iter().copied().filter(|&t| !is_gone(t)).collect::<Vec<_>>().into())
                    } else {
                        // Untouched: the base's list, shared.
                        Tokens::List(Arc::clone(l))
                    }
                }
                Tokens::Bits { bits, len } => {
                    // (Past a bitmap's words, testing each removed token costs more than a copy.)
                    let touched = removed.len() > self.words
                        || removed.iter().any(|&t| bits[(t / 64) as usize] >> (t % 64) & 1 == 1);
                    if touched {
                        let bits: Vec<u64> = bits.iter().zip(&gone).map(|(b, g)| b & !g).collect();
                        let len = bits.iter().map(|w| w.count_ones() as usize).sum();
                        Tokens::Bits { bits: bits.into(), len }
                    } else {
                        // Untouched: the base's bitmap, shared.
                        Tokens::Bits { bits: Arc::clone(bits), len: *len }
                    }
                }
            };
            if !kept.is_empty() {
                by_sig.insert(*id, kept);
                order.push(*id);
            }
        }
        for (id, toks) in walked {
            match by_sig.get_mut(&id) {
                None => {
                    by_sig.insert(id, toks);
                    order.push(id);
                }
                Some(Tokens::Bits { bits, len }) => {
                    let bits = Arc::make_mut(bits);
                    match &toks {
                        Tokens::Bits { bits: more, len: more_len } => {
                            bits.iter_mut().zip(more.iter()).for_each(|(a, b)| *a |= b);
                            *len += more_len;
                        }
                        Tokens::List(l) => {
                            for &t in l.iter() {
                                bits[(t / 64) as usize] |= 1 << (t % 64);
                            }
                            *len += l.len();
                        }
                    }
                }
                Some(Tokens::List(l)) => {
                    let mut merged: Vec<u32> = l.iter().copied().chain(toks.iter()).collect();
                    merged.sort_unstable();
                    by_sig.insert(id, Tokens::from_sorted(merged, self.words));
                }
            }
        }
        for &t in &removed {
            gone[(t / 64) as usize] = 0;
        }
        self.gone = gone;
        let mut classes: Vec<(u32, (u32, Tokens))> = order
            .into_iter()
            .map(|id| {
                let tokens = by_sig.remove(&id).unwrap_or_else(|| Tokens::List(Vec::new().into()));
                (tokens.first().unwrap_or(u32::MAX), (id, tokens))
            })
            .collect();
        classes.sort_unstable_by_key(|c| c.0);
        sc.undecided.sort_unstable();
        sc.undecided.dedup();
        (classes.into_iter().map(|c| c.1).collect(), sc.undecided)
    }
}
