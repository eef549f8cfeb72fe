//! The subtree walk: branches carried down the vocabulary trie, each token's signature set
//! recorded where it ends, and results below the root's children memoized.

use super::{
    Branch, Scratch, SetPool, Walker, ACT_LEAVE, ACT_SKIP, CLOSURE_WALK_FROM, MAX_LEXINGS, MAX_STEPS, PREWALK_FROM,
};

/// Pairs [`Walker::root_memo`] may hold in all (a memory bound; past it subtrees are walked).
pub(super) const ROOT_MEMO_PAIRS: usize = 24 << 20;

/// A memoized subtree below a root child: a range of one chunk of [`Walker::root_results`]
/// (chunk, start, length) and a range of [`Walker::root_bulk`].
#[derive(Clone, Copy)]
pub(super) struct RootResult {
    pub(super) pairs: (u32, u32, u32),
    pub(super) bulk: (u32, u32),
}

/// Pairs the chunks of [`Walker::root_results`] are reserved for: the first, and at most (each
/// twice the one before; a larger result gets a chunk of its own size). The memo grows by
/// chunks, never by reallocation: a growing vector of many millions of pairs was copied on
/// every doubling, into fresh pages each time.
const ROOT_CHUNKS: (usize, usize) = (1 << 14, 1 << 20);

impl<'a> Walker<'a> {
    /// Walk the trie below `node` with the branches `arena[off..off + len]`.
    pub(super) fn walk(&mut self, node: u32, off: usize, len: usize, sc: &mut Scratch, terms: &mut SetPool) {
        if node != 0 && len == 1 && sc.arena[off].inh == 0 && sc.arena[off].q != self.lex.start {
            let br = sc.arena[off];
            return self.walk_single(node, br, sc, terms);
        }
        if node != 0 && !self.trie.tokens_at(node).is_empty() {
            let id = self.sig_set(sc, off, len, terms);
            for &tok in self.trie.tokens_at(node) {
                sc.per_token.push((tok, id));
            }
        }
        for &(b, child) in self.trie.children(node) {
            self.walk_child(node, b, child, off, len, sc, terms);
        }
    }

    /// [`Self::walk`] with one branch, without inhibitors and not at the lexer's start (most of
    /// the trie): bytes that only move the lexer on are followed in place, without the branch
    /// arena; any other byte goes the general way.
    pub(super) fn walk_single(&mut self, node: u32, br: Branch, sc: &mut Scratch, terms: &mut SetPool) {
        let lex = self.lex;
        let trie = self.trie;
        if !trie.tokens_at(node).is_empty() {
            let id = match self.sig_cache[br.q as usize] {
                (p, id) if p == br.prefix => id,
                _ => {
                    let class = self.class(br.q, terms);
                    let id = self.single_sig_id((br.prefix, class));
                    self.sig_cache[br.q as usize] = (br.prefix, id);
                    id
                }
            };
            sc.per_token.extend(trie.tokens_at(node).iter().map(|&tok| (tok, id)));
        }
        let row = self.step_rows.row(lex, br.q);
        for &(b, child) in trie.children(node) {
            match self.step_rows.at(row, b) {
                ACT_SKIP => {}
                ACT_LEAVE => self.leave(node, b, child, br, sc, terms),
                q2 => self.walk_single(child, Branch { q: q2, inh: 0, prefix: br.prefix }, sc, terms),
            }
        }
    }

    /// [`Self::walk_single`] below `child` (of `node`, by byte `b`) where the byte does more
    /// than move the lexer on: a lexeme is accepted, or the lexer is back at its start.
    pub(super) fn leave(&mut self, node: u32, b: u8, child: u32, br: Branch, sc: &mut Scratch, terms: &mut SetPool) {
        let q2 = self.lex.step(br.q, b);
        if self.lex.accepts(q2).is_empty() {
            sc.arena.push(Branch { q: q2, inh: 0, prefix: br.prefix });
            let at = sc.arena.len() - 1;
            self.walk(child, at, 1, sc, terms);
            sc.arena.truncate(at);
            return;
        }
        sc.arena.push(br);
        let at = sc.arena.len() - 1;
        self.walk_child(node, b, child, at, 1, sc, terms);
        sc.arena.truncate(at);
    }

    /// [`Self::walk`] below `child`, the child of `node` by byte `b`.
    #[allow(
        clippy::too_many_arguments,
        reason = "a recursive walk: node, byte, child and branch range, with the walk's scratch and the terminal pool borrowed apart from the walker"
    )]
    pub(super) fn walk_child(
        &mut self,
        node: u32,
        b: u8,
        child: u32,
        off: usize,
        len: usize,
        sc: &mut Scratch,
        terms: &mut SetPool,
    ) {
        let (start, n) = self.step_branches(off, len, b, sc, terms);
        if n > 0 {
            self.walk_region(node, child, start, n, sc, terms);
        }
        sc.arena.truncate(start);
    }

    /// Too many lexings (same-length forks or every-segmentation grammars) or too long ones: the
    /// tokens below are decided at run time by committing them.
    pub(super) fn over_limits(&self, sc: &Scratch, start: usize, n: usize) -> bool {
        n > MAX_LEXINGS || sc.arena[start..start + n].iter().any(|b| self.depth[b.prefix as usize] > MAX_STEPS)
    }

    /// Append the results of a memoized subtree below a root child.
    fn replay_root(&self, RootResult { pairs: (chunk, off, len), bulk: (boff, blen) }: RootResult, sc: &mut Scratch) {
        sc.per_token.extend_from_slice(&self.root_results[chunk as usize][off as usize..(off + len) as usize]);
        sc.bulk.extend_from_slice(&self.root_bulk[boff as usize..(boff + blen) as usize]);
    }

    /// Keep what a subtree's walk added to `sc` since `mark` (its lengths of `per_token`,
    /// `undecided` and `bulk` before the walk) for [`Self::replay_root`]; `None` if the walk left
    /// tokens UNDECIDED (rare; such subtrees are walked again) or the memo is full
    /// ([`ROOT_MEMO_PAIRS`]).
    fn keep_root(
        &mut self,
        sc: &Scratch,
        (before, undecided_before, bulk_before): (usize, usize, usize),
    ) -> Option<RootResult> {
        let found = &sc.per_token[before..];
        let found_bulk = &sc.bulk[bulk_before..];
        if sc.undecided.len() != undecided_before || self.root_pairs + found.len() > ROOT_MEMO_PAIRS {
            return None;
        }
        self.root_pairs += found.len();
        let last = self.root_results.last().map(|c| (c.capacity(), c.capacity() - c.len()));
        if last.is_none_or(|(_, free)| free < found.len()) {
            let size = last.map_or(ROOT_CHUNKS.0, |(cap, _)| (2 * cap).min(ROOT_CHUNKS.1));
            self.root_results.push(Vec::with_capacity(size.max(found.len())));
        }
        let chunk = self.root_results.len() - 1;
        let pairs = (chunk as u32, self.root_results[chunk].len() as u32, found.len() as u32);
        let bulk = (self.root_bulk.len() as u32, found_bulk.len() as u32);
        self.root_results[chunk].extend_from_slice(found);
        self.root_bulk.extend_from_slice(found_bulk);
        Some(RootResult { pairs, bulk })
    }

    /// Walk the trie below `child` (a child of `node`) with the (non-empty) branches
    /// `arena[start..start + n]`.
    pub(super) fn walk_region(
        &mut self,
        node: u32,
        child: u32,
        start: usize,
        n: usize,
        sc: &mut Scratch,
        terms: &mut SetPool,
    ) {
        if self.over_limits(sc, start, n) {
            let below = self.index.subtree_len[child as usize] as u64;
            if n > MAX_LEXINGS {
                self.limit_hits.lexings += below;
            } else {
                self.limit_hits.steps += below;
            }
            self.trie.subtree_tokens(child, &mut sc.undecided);
        } else if node == 0 && n == 1 && sc.arena[start].inh == 0 && sc.arena[start].prefix == 0 {
            let key = (child, self.entry_key(sc.arena[start].q, child));
            if let Some(&r) = self.root_memo.get(&key) {
                self.replay_root(r, sc);
            } else {
                let mark = (sc.per_token.len(), sc.undecided.len(), sc.bulk.len());
                let e = sc.arena[start].q;
                // (Through a closure only below a large subtree: the closure's table costs more
                // than a small walk, and what pays is reusing the walks of large subtrees.)
                let large = self.index.subtree_len[child as usize] >= CLOSURE_WALK_FROM;
                // (A subtree the assembling thread walked ahead is replayed, [`Prewalks`].)
                let prewalked = self
                    .prewalks
                    .filter(|_| e != self.lex.start && self.index.subtree_len[child as usize] >= PREWALK_FROM)
                    .and_then(|pw| pw.take(key));
                if let Some(rec) = prewalked {
                    self.replay(&rec, sc, terms);
                } else if e == self.lex.start
                    || !large
                    || !self.closure_walks
                    || !self.closure_walk(child, e, sc, terms)
                {
                    self.walk(child, start, n, sc, terms);
                }
                if let Some(r) = self.keep_root(sc, mark) {
                    self.root_memo.insert(key, r);
                }
            }
        } else if node == 0 {
            // Any other entry below a root child: keyed by the child and the whole branch list
            // (the walk below depends on nothing else), e.g. a number's first digit from every
            // state where a whitespace lexeme ends before it.
            let key = (child, sc.arena[start..start + n].to_vec().into_boxed_slice());
            if let Some(&r) = self.branch_memo.get(&key) {
                return self.replay_root(r, sc);
            }
            let mark = (sc.per_token.len(), sc.undecided.len(), sc.bulk.len());
            self.walk(child, start, n, sc, terms);
            if let Some(r) = self.keep_root(sc, mark) {
                self.branch_memo.insert(key, r);
            }
        } else {
            self.walk(child, start, n, sc, terms);
        }
    }
}
