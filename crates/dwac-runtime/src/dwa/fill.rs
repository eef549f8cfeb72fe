//! `get_mask`: the GSS read top-down through the Parser DWA ([`MaskTables`]).
//!
//! **No lexing and no parsing happen here**: this module imports neither the lexer nor the GLR
//! code. It looks up DWA transitions by the LR state of each GSS node and unions token sets.
//!
//! For every thread `(q, inhibitors, heads)`: the seed is every token, minus the tokens that fire
//! one of the thread's carried inhibitors (`KILL`); tokens in `start_rho[q]` are allowed at once;
//! every head starts a walk at `start[q]`, and at `aux_start[q]` too where the lexer state has a
//! second start (tokens decided by an automaton saturated backwards). A walk item `(node, d, seed)` reads `node`'s LR state,
//! outputs `seed ∩ ρ(edge)` and continues to every predecessor of `node`, unless the new state
//! is final. The result is the union over all paths, which is exact because the DWA's states
//! carry their residual token sets (`E(path) = seed ∩ F(path)`, and ∩ distributes over ∪).
//! Items are processed by decreasing GSS level, so the walks of stacks that share a node are
//! merged there (each `(node, state)` is read once per batch).

use std::sync::Arc;

use super::{MaskTables, NONE};
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

/// An item's seed: [`ALL`] (every token), or a set of thread groups (bit `i`: group `i` of the
/// round, [`WalkScratch`]), the seed being the union of theirs.
const ALL: u64 = 0;

/// Thread groups one round of the walk tells apart (the bits of a seed).
const GROUPS_PER_ROUND: usize = 64;

struct Item {
    node: NodeRef,
    d: u32,
    seed: u64,
}

/// What a mask fill did, returned by [`Matcher::fill_mask`](crate::Matcher::fill_mask) (and
/// summed over the rows by [`fill_masks`](crate::fill_masks)): how much of the Parser DWA it
/// read, and how much of the mask had to be decided the slow way, by committing tokens at run
/// time. A server that wants to know whether its masks stay on the fast path watches
/// `fallbacks` and `undecided`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaskCounters {
    /// (node, state) reads.
    pub reads: u32,
    /// Token sets ORed in as bitmaps.
    pub dense_sets: u32,
    /// Token sets ORed in as ranges.
    pub range_sets: u32,
    /// Ranges filled by those sets.
    pub ranges: u32,
    /// UNDECIDED tokens (left so by the compiler at a live lexer state) decided at run time as
    /// the reference mask decides them, by committing them (one by one, or over the vocabulary
    /// trie when there are many): each token counted once, and not those the Parser DWA
    /// already allowed.
    pub undecided: u32,
    /// Masks computed entirely by the reference mask (clone, commit every token) because the
    /// Parser DWA did not cover a thread, or the engine has none: 1 for such a fill, else 0.
    pub fallbacks: u32,
    /// Groups of threads with the same (non-empty) kill sets.
    pub kill_groups: u32,
    /// Rounds of the walk (64 groups a round).
    pub rounds: u32,
}

impl MaskCounters {
    /// Add `other`'s counts to these (a batch's counters are the sum of its rows').
    pub fn add(&mut self, other: &MaskCounters) {
        self.reads += other.reads;
        self.dense_sets += other.dense_sets;
        self.range_sets += other.range_sets;
        self.ranges += other.ranges;
        self.undecided += other.undecided;
        self.fallbacks += other.fallbacks;
        self.kill_groups += other.kill_groups;
        self.rounds += other.rounds;
    }

    /// Was the mask (or some mask of a batch) decided in part or in full by committing tokens
    /// at run time rather than read from the Parser DWA alone?
    pub fn slow_path(&self) -> bool {
        self.undecided > 0 || self.fallbacks > 0
    }
}

/// Reusable buffers: no allocation once they have grown to the workload.
#[derive(Default)]
pub struct WalkScratch {
    pub counters: MaskCounters,
    pending: Vec<Item>,
    batch: Vec<Item>,
    /// Threads with the same carried kill sets form a group: its kill set ids are
    /// `group_kills[group_off[g]..group_off[g + 1]]`.
    group_kills: Vec<u32>,
    group_off: Vec<usize>,
    /// Per thread (in order): its group, or `u32::MAX` without kill sets.
    thread_group: Vec<u32>,
    /// Per group of the current round: the union of the sets its walks output, before its kill
    /// sets are taken out, and whether it has been written yet.
    acc: Vec<Vec<u32>>,
    acc_fresh: Vec<bool>,
    /// Groups walked per round (0: [`GROUPS_PER_ROUND`]; fewer only to test the rounds).
    pub(crate) groups_per_round: usize,
}

impl WalkScratch {
    /// Buffers sized for `words`-word masks, so that typical masks (up to two thread groups with
    /// kill sets, tens of walk items) allocate nothing.
    pub fn with_capacity(words: usize) -> WalkScratch {
        WalkScratch {
            counters: MaskCounters::default(),
            pending: Vec::with_capacity(64),
            batch: Vec::with_capacity(64),
            group_kills: Vec::with_capacity(16),
            group_off: Vec::with_capacity(8),
            thread_group: Vec::with_capacity(8),
            acc: vec![vec![0; words], vec![0; words]],
            acc_fresh: Vec::with_capacity(GROUPS_PER_ROUND),
            groups_per_round: 0,
        }
    }
}

/// The words of a bit range `lo..hi` (non-empty): the first and last word, and the bits of the
/// range in each (the words between are wholly in it).
#[inline]
fn range_ends(lo: u32, hi: u32) -> (usize, u32, usize, u32) {
    let (wl, wh) = ((lo / 32) as usize, ((hi - 1) / 32) as usize);
    (wl, u32::MAX << (lo % 32), wh, u32::MAX >> (31 - (hi - 1) % 32))
}

/// Set bits `lo..hi` of `out`; the whole words between the ends in one fill (a range may span
/// the vocabulary: free text allows almost every token).
#[inline]
fn or_range(out: &mut [u32], lo: u32, hi: u32) {
    let (wl, lo_bits, wh, hi_bits) = range_ends(lo, hi);
    if wl == wh {
        out[wl] |= lo_bits & hi_bits;
        return;
    }
    out[wl] |= lo_bits;
    out[wl + 1..wh].fill(u32::MAX);
    out[wh] |= hi_bits;
}

/// OR set `set` into `out`. `fresh`: `out` has not been written yet (it is then zeroed first, or
/// overwritten by a bitmap copy, which saves a pass).
fn or_set(t: &MaskTables, out: &mut [u32], set: u32, c: &mut MaskCounters, fresh: &mut bool) {
    if set == NONE {
        return;
    }
    if let Some(d) = t.dense(set) {
        c.dense_sets += 1;
        if std::mem::replace(fresh, false) {
            d.copy_into(out);
        } else {
            d.or_into(out);
        }
        return;
    }
    if std::mem::replace(fresh, false) {
        out.iter_mut().for_each(|w| *w = 0);
    }
    c.range_sets += 1;
    c.ranges += (t.set(set).len() / 2) as u32;
    for r in t.set(set).chunks_exact(2) {
        or_range(out, r[0], r[1]);
    }
}

/// Write the mask of `threads` into `out` (bit `v % 32` of `out[v / 32]`), which must hold
/// `ceil(num_tokens / 32)` words.
///
/// A thread's walks output their sets intersected with its seed, every token less those its
/// carried inhibitors would fire (`KILL`). Threads with the same kill sets form a group, and as
/// `∪ (seed ∩ F) = seed ∩ ∪ F`, a group's outputs are ORed into an accumulator of its own and its
/// kill sets taken out once at the end, rather than a seed bitmap being built and ANDed into
/// every set; threads without kill sets write into `out` directly. Where walks of different
/// groups meet, the merged walk outputs into each of their accumulators. Up to 64 groups are
/// walked at a time (a seed is a bit set of groups); more take further rounds of the walk over
/// their threads (the mask is the union over threads).
pub fn fill<'a, I>(t: &MaskTables, threads: I, sc: &mut WalkScratch, out: &mut [u32])
where
    I: IntoIterator<Item = ThreadView<'a>>,
    I::IntoIter: Clone,
{
    let threads = threads.into_iter();
    let words = out.len();
    let mut fresh = true;
    sc.counters = MaskCounters::default();
    // Group the threads by their kill sets.
    sc.group_kills.clear();
    sc.group_off.clear();
    sc.group_off.push(0);
    sc.thread_group.clear();
    for th in threads.clone() {
        if th.kills.is_empty() {
            sc.thread_group.push(u32::MAX);
            continue;
        }
        let found =
            (0..sc.group_off.len() - 1).find(|&g| &sc.group_kills[sc.group_off[g]..sc.group_off[g + 1]] == th.kills);
        let g = found.unwrap_or_else(|| {
            sc.group_kills.extend_from_slice(th.kills);
            sc.group_off.push(sc.group_kills.len());
            sc.group_off.len() - 2
        });
        sc.thread_group.push(g as u32);
    }
    let groups = sc.group_off.len() - 1;
    let per_round = match sc.groups_per_round {
        0 => GROUPS_PER_ROUND,
        n => n.min(GROUPS_PER_ROUND),
    };
    let rounds = groups.div_ceil(per_round).max(1);
    sc.counters.kill_groups = groups as u32;
    sc.counters.rounds = rounds as u32;
    for round in 0..rounds {
        let first = round * per_round;
        let in_round = (groups - first.min(groups)).min(per_round);
        while sc.acc.len() < in_round {
            sc.acc.push(Vec::new());
        }
        sc.acc_fresh.clear();
        sc.acc_fresh.resize(in_round, true);
        sc.pending.clear();
        for (j, th) in threads.clone().enumerate() {
            let seed = match sc.thread_group[j] {
                u32::MAX if round == 0 => ALL,
                u32::MAX => continue,
                g if (g as usize) / per_round == round => 1u64 << (g as usize % per_round),
                _ => continue,
            };
            let d0 = t.start.get(th.q as usize).copied().unwrap_or(NONE);
            let r0 = t.start_rho.get(th.q as usize).copied().unwrap_or(NONE);
            output(t, r0, seed, out, &mut fresh, sc, words);
            let d1 = t.aux_start.get(th.q as usize).copied().unwrap_or(NONE);
            for d in [d0, d1] {
                if d == NONE {
                    continue;
                }
                for h in th.heads {
                    sc.pending.push(Item { node: h.clone(), d, seed });
                }
            }
        }
        walk(t, sc, out, &mut fresh, words);
        // Each group's union, less its kill sets, into `out`.
        for i in 0..in_round {
            if sc.acc_fresh[i] {
                continue;
            }
            let g = first + i;
            let kills = &sc.group_kills[sc.group_off[g]..sc.group_off[g + 1]];
            let acc = &mut sc.acc[i];
            let mut dense = None;
            for &k in kills {
                match t.dense(k) {
                    // One bitmap is taken out while ORing into `out`; any other beforehand.
                    Some(bits) => {
                        if let Some(prev) = dense.replace(bits) {
                            prev.clear_from(acc);
                        }
                    }
                    None => {
                        for r in t.set(k).chunks_exact(2) {
                            clear_range(acc, r[0], r[1]);
                        }
                    }
                }
            }
            let first_write = std::mem::replace(&mut fresh, false);
            match (dense, first_write) {
                (Some(k), fresh) => k.and_not_into(acc, out, fresh),
                (None, true) => out.copy_from_slice(acc),
                (None, false) => out.iter_mut().zip(acc.iter()).for_each(|(o, a)| *o |= a),
            }
        }
    }
    if fresh {
        out.iter_mut().for_each(|w| *w = 0);
    }
}

/// OR set `set` into the output of `seed`: `out` for [`ALL`], else each of its groups'
/// accumulators.
fn output(t: &MaskTables, set: u32, seed: u64, out: &mut [u32], fresh: &mut bool, sc: &mut WalkScratch, words: usize) {
    if set == NONE {
        return;
    }
    if seed == ALL {
        return or_set(t, out, set, &mut sc.counters, fresh);
    }
    let mut m = seed;
    while m != 0 {
        let i = m.trailing_zeros() as usize;
        m &= m - 1;
        let acc = &mut sc.acc[i];
        if acc.len() != words {
            acc.resize(words, 0);
        }
        or_set(t, acc, set, &mut sc.counters, &mut sc.acc_fresh[i]);
    }
}

/// The walk of the pending items, by decreasing GSS level.
fn walk(t: &MaskTables, sc: &mut WalkScratch, out: &mut [u32], fresh: &mut bool, words: usize) {
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
                seed = if seed == ALL || batch[k].seed == ALL { ALL } else { seed | batch[k].seed };
                k += 1;
            }
            let it = &batch[j];
            let (d2, rho) = t.step(it.d, it.node.state);
            output(t, rho, seed, out, fresh, sc, words);
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
}

fn clear_range(mask: &mut [u32], lo: u32, hi: u32) {
    let (wl, lo_bits, wh, hi_bits) = range_ends(lo, hi);
    if wl == wh {
        mask[wl] &= !(lo_bits & hi_bits);
        return;
    }
    mask[wl] &= !lo_bits;
    mask[wl + 1..wh].fill(0);
    mask[wh] &= !hi_bits;
}

// (The tests build tables with the writer's side: feature `unstable`.)
#[cfg(all(test, feature = "unstable"))]
mod tests {
    use super::*;

    /// xorshift64*: a small deterministic generator for the randomized test.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
        }
    }

    /// Random tables, GSS and threads (several threads sharing kill sets or not, walks that
    /// meet): `fill` equals the mask by definition, the union over every thread and every
    /// path of its outputs less the thread's kill sets, whatever the groups per round.
    #[test]
    fn fill_is_the_union_over_threads_and_paths() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let n_tokens = 200u32;
        let words = n_tokens.div_ceil(32) as usize;
        let mut with_groups = 0;
        for case in 0..400 {
            // Token sets: ranges or bitmaps, as the tables store them.
            let (mut set_off, mut set_ranges, mut set_dense, mut dense) =
                (vec![0u32], Vec::new(), Vec::new(), Vec::new());
            let mut members: Vec<Vec<bool>> = Vec::new();
            for _ in 0..10 {
                let mut m = vec![false; n_tokens as usize];
                for _ in 0..1 + rng.below(6) {
                    let lo = rng.below(n_tokens as usize);
                    let hi = (lo + 1 + rng.below(60)).min(n_tokens as usize);
                    m[lo..hi].iter_mut().for_each(|b| *b = true);
                }
                if rng.below(2) == 0 {
                    set_dense.push(dense.len() as u32);
                    let mut bits = vec![0u32; words];
                    for v in (0..n_tokens as usize).filter(|&v| m[v]) {
                        bits[v / 32] |= 1 << (v % 32);
                    }
                    dense.extend(bits);
                } else {
                    set_dense.push(NONE);
                    let mut v = 0;
                    while v < m.len() {
                        if m[v] {
                            let lo = v;
                            while v < m.len() && m[v] {
                                v += 1;
                            }
                            set_ranges.extend([lo as u32, v as u32]);
                        } else {
                            v += 1;
                        }
                    }
                }
                set_off.push((set_ranges.len() / 2) as u32);
                members.push(m);
            }
            let (block_refs, blocks) = crate::dwa::pack_bitmaps(dense.chunks(words), words);
            let set_or_none = |rng: &mut Rng| if rng.below(3) == 0 { NONE } else { rng.below(10) as u32 };
            // A small DWA over LR states 0..4.
            let states = 6;
            let mut dwa = MaskTables::default();
            let mut writer = crate::dwa::DwaWriter::new();
            for _ in 0..states {
                let mut labels: Vec<u32> = (0..rng.below(3)).map(|_| rng.below(4) as u32).collect();
                labels.sort_unstable();
                labels.dedup();
                let edges: Vec<(u32, u32, u32)> = labels
                    .into_iter()
                    .map(|l| {
                        let target = if rng.below(4) == 0 { DEAD } else { rng.below(states) as u32 };
                        (l, target, set_or_none(&mut rng))
                    })
                    .collect();
                let default = (if rng.below(3) == 0 { DEAD } else { rng.below(states) as u32 }, set_or_none(&mut rng));
                writer.push(&mut dwa, default, edges);
            }
            let lexer_states = 3;
            let t = MaskTables {
                num_tokens: n_tokens,
                start: (0..lexer_states)
                    .map(|_| if rng.below(5) == 0 { NONE } else { rng.below(states) as u32 })
                    .collect::<Vec<_>>()
                    .into(),
                start_rho: (0..lexer_states).map(|_| set_or_none(&mut rng)).collect::<Vec<_>>().into(),
                undecided: vec![NONE; lexer_states].into(),
                aux_start: if rng.below(2) == 0 {
                    Vec::new().into()
                } else {
                    (0..lexer_states)
                        .map(|_| if rng.below(3) == 0 { NONE } else { rng.below(states) as u32 })
                        .collect::<Vec<_>>()
                        .into()
                },
                edge_off: dwa.edge_off,
                label_off: dwa.label_off,
                edge_label: dwa.edge_label,
                edge_outcome: dwa.edge_outcome,
                outcome_off: dwa.outcome_off,
                outcome_target: dwa.outcome_target,
                outcome_rho: dwa.outcome_rho,
                set_off: set_off.into(),
                set_ranges: set_ranges.into(),
                // (Offsets in words → offsets in block refs: one block per set here.)
                set_dense: set_dense
                    .iter()
                    .map(|&o| if o == NONE { NONE } else { o / words as u32 })
                    .collect::<Vec<_>>()
                    .into(),
                block_refs: block_refs.into(),
                blocks: blocks.into(),
                ..MaskTables::default()
            };
            // A GSS: nodes by level, each above up to two lower ones (walks meet where they share).
            let mut nodes: Vec<NodeRef> = Vec::new();
            for level in 0..8u32 {
                let preds: Vec<NodeRef> = if nodes.is_empty() {
                    Vec::new()
                } else {
                    (0..rng.below(3)).map(|_| nodes[rng.below(nodes.len())].clone()).collect()
                };
                nodes.push(crate::gss::Node::new(rng.below(5) as u32, level, preds));
            }
            // Threads: kill lists drawn from few choices, so that groups repeat.
            let kill_choices: [&[u32]; 4] = [&[], &[3], &[5, 7], &[3]];
            let threads: Vec<(u32, &[u32], Vec<NodeRef>)> = (0..1 + rng.below(4))
                .map(|_| {
                    let heads = (0..1 + rng.below(2)).map(|_| nodes[rng.below(nodes.len())].clone()).collect();
                    (rng.below(lexer_states) as u32, kill_choices[rng.below(4)], heads)
                })
                .collect();
            // The mask by definition.
            let mut want = vec![false; n_tokens as usize];
            for (q, kills, heads) in &threads {
                let seed: Vec<bool> =
                    (0..n_tokens as usize).map(|v| !kills.iter().any(|&k| members[k as usize][v])).collect();
                let mut add = |set: u32| {
                    if set != NONE {
                        for v in 0..n_tokens as usize {
                            want[v] |= members[set as usize][v] && seed[v];
                        }
                    }
                };
                add(t.start_rho[*q as usize]);
                let aux = t.aux_start.get(*q as usize).copied().unwrap_or(NONE);
                let mut stack: Vec<(NodeRef, u32)> = [t.start[*q as usize], aux]
                    .into_iter()
                    .filter(|&d| d != NONE)
                    .flat_map(|d| heads.iter().map(move |h| (h.clone(), d)))
                    .collect();
                while let Some((node, d)) = stack.pop() {
                    let (d2, rho) = t.step(d, node.state);
                    add(rho);
                    if d2 != DEAD && !t.is_final(d2) {
                        stack.extend(node.preds.iter().map(|p| (p.clone(), d2)));
                    }
                }
            }
            for per_round in [0, 1, 2] {
                let mut sc = WalkScratch::with_capacity(words);
                sc.groups_per_round = per_round;
                let mut out = vec![0xdead_beefu32; words];
                let views = threads.iter().map(|(q, kills, heads)| ThreadView { q: *q, kills, heads });
                fill(&t, views, &mut sc, &mut out);
                for v in 0..n_tokens as usize {
                    let got = out[v / 32] >> (v % 32) & 1 == 1;
                    assert_eq!(got, want[v], "case {case}, {per_round} groups per round: token {v}");
                }
                with_groups += usize::from(per_round == 0 && sc.counters.kill_groups >= 2);
            }
        }
        assert!(with_groups >= 50, "{with_groups} cases with two or more kill groups");
    }

    #[test]
    fn ranges_set_and_clear_exactly_their_bits() {
        for (lo, hi) in [(0, 1), (0, 32), (3, 35), (31, 33), (32, 64), (5, 100), (63, 64), (0, 96), (1, 128), (0, 128)]
        {
            let mut out = vec![0u32; 4];
            or_range(&mut out, lo, hi);
            let mut cleared = vec![u32::MAX; 4];
            clear_range(&mut cleared, lo, hi);
            for v in 0..128u32 {
                let (w, b) = ((v / 32) as usize, v % 32);
                assert_eq!(out[w] >> b & 1 == 1, (lo..hi).contains(&v), "{lo}..{hi} bit {v}");
                assert_eq!(cleared[w] >> b & 1 == 0, (lo..hi).contains(&v), "clear {lo}..{hi} bit {v}");
            }
        }
    }
}
