//! Per-trie facts the walk reads ([`TrieIndex`]): token counts and heights below each node, the
//! cost estimate of a diff, and the caches shared by every grammar compiled against the trie.

use super::{ClosureCache, FastMap, Trie};
use std::sync::{Arc, Mutex};

/// Kill sets by their inhibitor's canonical table ([`kill_set_shared`](super::kill_set_shared)).
#[derive(Default)]
pub(super) struct KillCache {
    pub(super) sets: FastMap<Arc<[u32]>, Arc<[u32]>>,
    /// Words the tables and sets hold in all (bounded by [`KILL_CACHE_WORDS`](super::kill::KILL_CACHE_WORDS)).
    pub(super) words: usize,
    /// Kill sets taken from the cache.
    pub(super) hits: usize,
}

/// Per node of a trie: the number of tokens below it (its own and its descendants'), and its
/// height (the most bytes a token below it has past the node).
pub struct TrieIndex {
    /// Per node: the number of tokens below it (its own and its descendants').
    pub subtree_len: Vec<u32>,
    /// Per node: its height, the most bytes a token below it has past the node.
    pub height: Vec<u32>,
    /// Per child `i` of the root (in [`Trie::children`] order), `reach[reach_off[i] + a]` for
    /// `a` from 0 to the child's height: over the nodes `v` below it (the child included) whose
    /// reach, `v`'s depth below the child plus `v`'s height, exceeds `a`, their tokens plus two
    /// per child. Entered in two lexer states that agree for `a` bytes
    /// ([`Horizon::agreement`](super::Horizon::agreement)), those are the nodes `Walker::diff` may have to visit (a step
    /// of both sides per child) and the tokens it may have to walk; the other nodes lie in
    /// subtrees it skips. A cost estimate, in tokens.
    pub reach_off: Vec<u32>,
    /// The cost estimates [`TrieIndex::reach_off`] indexes: per child of the root, one per `a`
    /// from 0 to the child's height, the children's runs concatenated.
    pub reach: Vec<u32>,
    /// Every node's children as [`Trie::children`] lists them, but tallest first (by height,
    /// then byte): `tallest[trie.child_off[n]..trie.child_off[n + 1]]` (for `LiveHeights`).
    pub tallest: Vec<(u8, u32)>,
    /// Subtree walks inside lexer-state closures, shared by every grammar compiled against this
    /// trie ([`Walker::closure_walk`]).
    pub(super) closures: Mutex<ClosureCache>,
    /// Kill sets by the canonical table of their inhibitor, shared by every grammar compiled
    /// against this trie ([`kill_set_shared`]).
    pub(super) kills: Mutex<KillCache>,
}

impl TrieIndex {
    /// The index of `trie` (its caches empty).
    pub fn new(trie: &Trie) -> TrieIndex {
        let n = trie.child_off.len() - 1;
        let mut subtree_len = vec![0u32; n];
        let mut height = vec![0u32; n];
        // Children have larger ids than their parent: one pass from the last node up.
        for v in (0..n).rev() {
            let children = trie.children(v as u32);
            let below: u32 = children.iter().map(|&(_, c)| subtree_len[c as usize]).sum();
            subtree_len[v] = trie.tokens_at(v as u32).len() as u32 + below;
            height[v] = children.iter().map(|&(_, c)| height[c as usize] + 1).max().unwrap_or(0);
        }
        // Reach per node, below each child of the root.
        let root = trie.children(0);
        let mut top = vec![u32::MAX; n];
        let mut depth = vec![0u32; n];
        for (i, &(_, c)) in root.iter().enumerate() {
            top[c as usize] = i as u32;
        }
        let mut reach_off = Vec::with_capacity(root.len() + 1);
        reach_off.push(0u32);
        for &(_, c) in root {
            reach_off.push(reach_off.last().unwrap() + height[c as usize] + 1);
        }
        let mut reach = vec![0u32; *reach_off.last().unwrap() as usize];
        for v in 1..n {
            let i = top[v] as usize;
            for &(_, c) in trie.children(v as u32) {
                top[c as usize] = top[v];
                depth[c as usize] = depth[v] + 1;
            }
            let r = depth[v] + height[v];
            // Counted at every `a < r` (a difference array, summed below): its tokens and a
            // step of both sides per child.
            let k = (trie.tokens_at(v as u32).len() + 2 * trie.children(v as u32).len()) as u32;
            let at = &mut reach[reach_off[i] as usize];
            *at = at.wrapping_add(k);
            if r < reach_off[i + 1] - reach_off[i] {
                let at = &mut reach[(reach_off[i] + r) as usize];
                *at = at.wrapping_sub(k);
            }
        }
        for i in 0..root.len() {
            for a in reach_off[i] + 1..reach_off[i + 1] {
                reach[a as usize] = reach[a as usize].wrapping_add(reach[a as usize - 1]);
            }
        }
        let mut tallest = trie.edges.clone();
        for v in 0..n {
            let (a, b) = (trie.child_off[v] as usize, trie.child_off[v + 1] as usize);
            tallest[a..b].sort_by_key(|&(byte, c)| (std::cmp::Reverse(height[c as usize]), byte));
        }
        TrieIndex {
            subtree_len,
            height,
            reach_off,
            reach,
            tallest,
            closures: Mutex::default(),
            kills: Mutex::default(),
        }
    }

    /// Kill sets [`kill_set_shared`](super::kill_set_shared) took from this trie's cache.
    pub fn kill_cache_hits(&self) -> usize {
        self.kills.lock().unwrap_or_else(|p| p.into_inner()).hits
    }

    /// The cost of a diff below the root's `i`-th child entered in states that agree for `a`
    /// bytes (see [`TrieIndex::reach`]).
    pub fn reaching(&self, i: usize, a: u32) -> u32 {
        let (lo, hi) = (self.reach_off[i], self.reach_off[i + 1]);
        if a >= hi - lo {
            0
        } else {
            self.reach[(lo + a) as usize]
        }
    }
}
