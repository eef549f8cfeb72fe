//! `get_mask`: the GSS read top-down through the Parser DWA ([`MaskTables`]).
//!
//! **No lexing and no parsing happen here**: this module imports neither the lexer nor the GLR
//! code. It looks up DWA transitions by the LR state of each GSS node and unions token sets.
//!
//! For every thread `(q, inhibitors, heads)`: the seed is every token, minus the tokens that fire
//! one of the thread's carried inhibitors (`KILL`); tokens in `start_rho[q]` are allowed at once;
//! every head starts a walk at `start[q]`. A walk item `(node, d, seed)` reads `node`'s LR state,
//! outputs `seed ∩ ρ(edge)` and continues to every predecessor of `node`, unless the new state
//! is final. The result is the union over all paths, which is exact because the DWA's states
//! carry their residual token sets (`E(path) = seed ∩ F(path)`, and ∩ distributes over ∪).
//! Items are processed by decreasing GSS level, so the walks of stacks that share a node are
//! merged there (each `(node, state)` is read once per batch).

use std::sync::Arc;

use crate::dwa::{MaskTables, NONE};
use crate::gss::NodeRef;
use crate::tables::DEAD;

/// What the mask walk needs of one lexer thread.
pub struct ThreadView<'a> {
    /// The thread's lexer state.
    pub q: u32,
    /// Kill sets (ids into the mask tables' sets) of its carried inhibitors.
    pub kills: &'a [u32],
    pub heads: &'a [NodeRef],
}

/// A seed: every token, or a dense mask in [`MaskScratch::seeds`].
const ALL: u32 = u32::MAX;

struct Item {
    node: NodeRef,
    d: u32,
    seed: u32,
}

/// What the last [`fill`] did (for benchmarks and diagnostics).
#[derive(Clone, Copy, Debug, Default)]
pub struct MaskCounters {
    /// (node, state) reads.
    pub reads: u32,
    /// Token sets ORed in as bitmaps / as ranges, and the ranges filled.
    pub dense_sets: u32,
    pub range_sets: u32,
    pub ranges: u32,
    /// UNDECIDED tokens decided by committing them (counted by the matcher).
    pub undecided: u32,
}

/// Reusable buffers: no allocation once they have grown to the workload.
#[derive(Default)]
pub struct MaskScratch {
    pub counters: MaskCounters,
    pending: Vec<Item>,
    batch: Vec<Item>,
    seeds: Vec<Vec<u32>>,
    used_seeds: usize,
}

impl MaskScratch {
    /// Buffers sized for `words`-word masks, so that typical masks (up to two seeds, tens of
    /// walk items) allocate nothing.
    pub fn with_capacity(words: usize) -> MaskScratch {
        MaskScratch {
            counters: MaskCounters::default(),
            pending: Vec::with_capacity(64),
            batch: Vec::with_capacity(64),
            seeds: vec![vec![0; words], vec![0; words]],
            used_seeds: 0,
        }
    }

    fn new_seed(&mut self, words: usize) -> u32 {
        if self.used_seeds == self.seeds.len() {
            self.seeds.push(Vec::new());
        }
        let s = &mut self.seeds[self.used_seeds];
        s.clear();
        s.resize(words, 0);
        self.used_seeds += 1;
        (self.used_seeds - 1) as u32
    }
}

/// The words of a bit range `lo..hi` (non-empty) and the bits of each that lie in it.
#[inline]
pub(crate) fn range_words(lo: u32, hi: u32) -> impl Iterator<Item = (usize, u32)> {
    let (lo, hi) = (lo as usize, hi as usize);
    let (wl, wh) = (lo / 32, (hi - 1) / 32);
    (wl..=wh).map(move |w| {
        let from = if w == wl { lo % 32 } else { 0 };
        let to = if w == wh { (hi - 1) % 32 + 1 } else { 32 };
        let bits = if to - from == 32 { u32::MAX } else { ((1u32 << (to - from)) - 1) << from };
        (w, bits)
    })
}

/// Set bits `lo..hi` of `out`, each ANDed with `seed` when there is one.
#[inline]
fn or_range(out: &mut [u32], lo: u32, hi: u32, seed: Option<&[u32]>) {
    let w = (lo / 32) as usize;
    if (hi - 1) / 32 == lo / 32 {
        // Within one word (most ranges: one or a few tokens).
        let n = hi - lo;
        let bits = if n == 32 { u32::MAX } else { ((1u32 << n) - 1) << (lo % 32) };
        out[w] |= bits & seed.map_or(u32::MAX, |s| s[w]);
        return;
    }
    for (w, bits) in range_words(lo, hi) {
        out[w] |= bits & seed.map_or(u32::MAX, |s| s[w]);
    }
}

/// OR set `set` (∩ `seed`) into `out`. `fresh`: `out` has not been written yet (it is then
/// zeroed first, or overwritten by a bitmap copy, which saves a pass).
fn or_set(t: &MaskTables, out: &mut [u32], set: u32, seed: Option<&[u32]>, c: &mut MaskCounters, fresh: &mut bool) {
    if set == NONE {
        return;
    }
    if *fresh {
        *fresh = false;
        if let (Some(bits), None) = (t.dense(set), seed) {
            c.dense_sets += 1;
            out.copy_from_slice(bits);
            return;
        }
        out.iter_mut().for_each(|w| *w = 0);
    }
    if let Some(bits) = t.dense(set) {
        c.dense_sets += 1;
        match seed {
            None => out.iter_mut().zip(bits).for_each(|(o, b)| *o |= b),
            Some(s) => out.iter_mut().zip(bits).zip(s).for_each(|((o, b), s)| *o |= b & s),
        }
        return;
    }
    c.range_sets += 1;
    c.ranges += (t.set(set).len() / 2) as u32;
    for r in t.set(set).chunks_exact(2) {
        or_range(out, r[0], r[1], seed);
    }
}

/// Write the mask of `threads` into `out` (bit `v % 32` of `out[v / 32]`), which must hold
/// `ceil(num_tokens / 32)` words.
pub fn fill<'a>(
    t: &MaskTables,
    threads: impl IntoIterator<Item = ThreadView<'a>>,
    sc: &mut MaskScratch,
    out: &mut [u32],
) {
    let words = out.len();
    let mut fresh = true;
    sc.pending.clear();
    sc.used_seeds = 0;
    sc.counters = MaskCounters::default();
    for th in threads {
        let d0 = t.start.get(th.q as usize).copied().unwrap_or(NONE);
        let r0 = t.start_rho.get(th.q as usize).copied().unwrap_or(NONE);
        let seed = if th.kills.is_empty() {
            ALL
        } else {
            let s = sc.new_seed(words);
            let seed = &mut sc.seeds[s as usize];
            seed.iter_mut().for_each(|w| *w = u32::MAX);
            if !t.num_tokens.is_multiple_of(32) {
                if let Some(last) = seed.last_mut() {
                    *last = (1u32 << (t.num_tokens % 32)) - 1;
                }
            }
            for &k in th.kills {
                match t.dense(k) {
                    Some(bits) => seed.iter_mut().zip(bits).for_each(|(s, b)| *s &= !b),
                    None => {
                        for r in t.set(k).chunks_exact(2) {
                            clear_range(seed, r[0], r[1]);
                        }
                    }
                }
            }
            s
        };
        let seed_ref = (seed != ALL).then(|| sc.seeds[seed as usize].as_slice());
        or_set(t, out, r0, seed_ref, &mut sc.counters, &mut fresh);
        if d0 == NONE {
            continue;
        }
        for h in th.heads {
            sc.pending.push(Item { node: h.clone(), d: d0, seed });
        }
    }
    while !sc.pending.is_empty() {
        // The items of the highest level: no other pending item can reach their nodes.
        let level = sc.pending.iter().map(|i| i.node.level).max().unwrap_or(0);
        let mut i = 0;
        while i < sc.pending.len() {
            if sc.pending[i].node.level == level {
                let it = sc.pending.swap_remove(i);
                sc.batch.push(it);
            } else {
                i += 1;
            }
        }
        // Merge the walks that meet at one (node, state): one read, the union of their seeds.
        sc.batch.sort_unstable_by_key(|it| (Arc::as_ptr(&it.node) as usize, it.d, it.seed));
        let mut batch = std::mem::take(&mut sc.batch);
        let mut j = 0;
        while j < batch.len() {
            let mut k = j + 1;
            let mut seed = batch[j].seed;
            while k < batch.len() && Arc::ptr_eq(&batch[k].node, &batch[j].node) && batch[k].d == batch[j].d {
                seed = merge_seeds(sc, seed, batch[k].seed, words);
                k += 1;
            }
            let it = &batch[j];
            let (d2, rho) = t.step(it.d, it.node.state);
            let seed_ref = (seed != ALL).then(|| sc.seeds[seed as usize].as_slice());
            or_set(t, out, rho, seed_ref, &mut sc.counters, &mut fresh);
            sc.counters.reads += 1;
            if d2 != DEAD && !t.is_final(d2) {
                for m in it.node.preds.iter() {
                    sc.pending.push(Item { node: m.clone(), d: d2, seed });
                }
            }
            j = k;
        }
        batch.clear();
        sc.batch = batch;
    }
    if fresh {
        out.iter_mut().for_each(|w| *w = 0);
    }
}

fn clear_range(mask: &mut [u32], lo: u32, hi: u32) {
    for (w, bits) in range_words(lo, hi) {
        mask[w] &= !bits;
    }
}

fn merge_seeds(sc: &mut MaskScratch, a: u32, b: u32, words: usize) -> u32 {
    if a == ALL || b == ALL {
        return ALL;
    }
    if a == b {
        return a;
    }
    let s = sc.new_seed(words);
    for w in 0..words {
        let v = sc.seeds[a as usize][w] | sc.seeds[b as usize][w];
        sc.seeds[s as usize][w] = v;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_set_exactly_their_bits() {
        for (lo, hi) in [(0, 1), (0, 32), (3, 35), (31, 33), (32, 64), (5, 100), (63, 64), (0, 96)] {
            let mut out = vec![0u32; 4];
            or_range(&mut out, lo, hi, None);
            for v in 0..128u32 {
                assert_eq!(out[(v / 32) as usize] >> (v % 32) & 1 == 1, (lo..hi).contains(&v), "{lo}..{hi} bit {v}");
            }
            let seed = vec![0xAAAA_AAAAu32; 4];
            let mut out = vec![0u32; 4];
            or_range(&mut out, lo, hi, Some(&seed));
            for v in 0..128u32 {
                let want = (lo..hi).contains(&v) && v % 2 == 1;
                assert_eq!(out[(v / 32) as usize] >> (v % 32) & 1 == 1, want);
            }
        }
    }
}
