//! The mask tables: the Parser DWA (a deterministic weighted automaton read over the GSS, top
//! down) and the token sets it outputs. Plain flat arrays, filled by the compiler, stored
//! verbatim by the artifact, validated once by [`MaskTables::validate`].
//!
//! * For every lexer state `q` a thread can be in, `start[q]` is the DWA state to read that
//!   thread's stacks from, and `start_rho[q]` the tokens accepted before reading anything
//!   (`ALWAYS[q]`: tokens that emit no terminal and keep the pending lexeme viable).
//! * A DWA state `d` reads one LR state (a GSS node's label): an explicit edge, found by label in
//!   the state's sorted label list, or else the DEFAULT edge. Each edge leads to one of the
//!   state's *outcomes*, a (target state, output token set) pair: taking it outputs the tokens
//!   whose every check is decided on this stack prefix. A state with no explicit edge and a
//!   [`DEAD`] DEFAULT target is final.
//! * Stored compactly (format 4.0): states with the same label list share one copy of it, and an
//!   edge stores only the index of its outcome among the state's distinct outcomes (outcome 0
//!   being the DEFAULT edge), so an edge costs 2 + 2 bytes where most states have few distinct
//!   outcomes over many labels.
//! * Token sets are sorted, disjoint half-open ranges of token ids.
//! * `kill_*`: for a carried inhibitor `(s, k)`, the tokens whose bytes fire it.

use crate::array::{Array, Col};
use crate::tables::{TableError, DEAD};

pub(crate) mod fill;
#[cfg(feature = "unstable")]
mod write;
pub use fill::{MaskCounters, ThreadView, WalkScratch};
#[cfg(feature = "unstable")]
pub use write::{pack_bitmaps, DwaWriter};

/// "No set" / "no state" in the tables.
pub const NONE: u32 = u32::MAX;

/// Words (`u32`) of a bitmap block (8,192 tokens): large enough that the per-block step of a
/// mask walk's OR costs little next to the words it ORs (measured on JSON with qwen3, mask p99.9
/// +2% over flat bitmaps, against +9% with 1,024-token blocks), small enough that sets differing
/// in a few tokens share most blocks.
pub const BLOCK_WORDS: usize = 256;

/// A bitmap set's blocks ([`MaskTables::dense`]).
#[derive(Clone, Copy)]
pub struct Dense<'a> {
    refs: &'a [u32],
    blocks: &'a [u32],
    words: usize,
}

/// All zeros: what a block that cannot be read reads as (validation rules it out).
static ZERO_BLOCK: [u32; BLOCK_WORDS] = [0; BLOCK_WORDS];

impl<'a> Dense<'a> {
    /// Block `r` as a fixed-size array (so loops over it have a known trip count).
    #[inline(always)]
    fn block(&self, r: u32) -> &'a [u32; BLOCK_WORDS] {
        let at = r as usize * BLOCK_WORDS;
        self.blocks.get(at..at + BLOCK_WORDS).and_then(|b| b.try_into().ok()).unwrap_or(&ZERO_BLOCK)
    }

    /// Apply `f(out block, bitmap block or None if zero)` over `out` (`words` words) block by
    /// block: whole blocks as fixed-size arrays, the last partial one as a slice.
    #[inline(always)]
    fn zip_blocks(
        &self,
        out: &mut [u32],
        mut full: impl FnMut(&mut [u32; BLOCK_WORDS], Option<&[u32; BLOCK_WORDS]>),
        mut part: impl FnMut(&mut [u32], Option<&[u32]>),
    ) {
        let mut chunks = out.chunks_exact_mut(BLOCK_WORDS);
        let mut refs = self.refs.iter();
        for (o, &r) in (&mut chunks).zip(&mut refs) {
            let o: &mut [u32; BLOCK_WORDS] = o.try_into().expect("chunks_exact_mut gives whole blocks");
            full(o, (r != 0).then(|| self.block(r)));
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let r = refs.next().copied().unwrap_or(0);
            let n = rest.len();
            part(rest, (r != 0).then(|| &self.block(r)[..n]));
        }
    }

    /// `op(out word, bitmap word)` for every word of a block that is not all zeros.
    #[inline(always)]
    fn apply(&self, out: &mut [u32], op: impl Fn(&mut u32, u32) + Copy) {
        self.zip_blocks(
            out,
            |o, b| {
                if let Some(b) = b {
                    for i in 0..BLOCK_WORDS {
                        op(&mut o[i], b[i]);
                    }
                }
            },
            |o, b| {
                if let Some(b) = b {
                    o.iter_mut().zip(b).for_each(|(o, &b)| op(o, b));
                }
            },
        );
    }

    /// OR the bitmap into `out` (`words` words).
    #[inline]
    pub fn or_into(&self, out: &mut [u32]) {
        self.apply(out, |o, b| *o |= b);
    }

    /// Copy the bitmap into `out` (`words` words).
    #[inline]
    pub fn copy_into(&self, out: &mut [u32]) {
        self.zip_blocks(
            out,
            |o, b| match b {
                Some(b) => *o = *b,
                None => o.fill(0),
            },
            |o, b| match b {
                Some(b) => o.copy_from_slice(b),
                None => o.fill(0),
            },
        );
    }

    /// Clear the bitmap's tokens from `out` (`words` words).
    #[inline]
    pub fn clear_from(&self, out: &mut [u32]) {
        self.apply(out, |o, b| *o &= !b);
    }

    /// `out = acc & !self` (`fresh`) or `out |= acc & !self`, word by word.
    #[inline]
    pub fn and_not_into(&self, acc: &[u32], out: &mut [u32], fresh: bool) {
        for ((o, a), &r) in out.chunks_mut(BLOCK_WORDS).zip(acc.chunks(BLOCK_WORDS)).zip(self.refs) {
            match (r, fresh) {
                (0, true) => o.copy_from_slice(a),
                (0, false) => o.iter_mut().zip(a).for_each(|(o, a)| *o |= a),
                (r, true) => o.iter_mut().zip(a).zip(self.block(r)).for_each(|((o, a), b)| *o = a & !b),
                (r, false) => o.iter_mut().zip(a).zip(self.block(r)).for_each(|((o, a), b)| *o |= a & !b),
            }
        }
    }

    /// Call `f(word offset, block words)` for every block that is not all zeros, in order (the
    /// last block is cut at the bitmap's end).
    #[inline]
    pub fn for_each_block(&self, mut f: impl FnMut(usize, &'a [u32])) {
        for (j, &r) in self.refs.iter().enumerate() {
            if r != 0 {
                let w0 = j * BLOCK_WORDS;
                let n = BLOCK_WORDS.min(self.words - w0);
                let b = r as usize * BLOCK_WORDS;
                f(w0, &self.blocks[b..b + n]);
            }
        }
    }
}

/// The Parser DWA and its token sets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MaskTables {
    /// Tokens in the vocabulary (mask bits).
    pub num_tokens: u32,
    /// Per lexer state: the DWA start state, or [`NONE`] if no token can follow a thread there.
    pub start: Array<u32>,
    /// Per lexer state: token set accepted before any stack read, or [`NONE`].
    pub start_rho: Array<u32>,
    /// Per lexer state: tokens the DWA leaves UNDECIDED (too many or too long lexings), decided
    /// at run time by committing them; a set or [`NONE`].
    pub undecided: Array<u32>,
    /// Per lexer state (format 4.1; empty when no state has one): a second DWA state that
    /// thread's stacks are read from as well, or [`NONE`]. It decides tokens the start state's
    /// automaton could not be built for (their lexings saturated backwards instead); its
    /// outputs join the start state's.
    pub aux_start: Array<u32>,
    /// Per DWA state: its explicit edges are `edge_off[d]..edge_off[d+1]` (indices into
    /// `edge_outcome`).
    pub edge_off: Array<u32>,
    /// Per DWA state: where its label list starts in `edge_label`. Edge `e` of state `d` reads
    /// label `edge_label[label_off[d] + (e - edge_off[d])]`; a state's labels are sorted, and
    /// states with equal label lists share one.
    pub label_off: Array<u32>,
    /// The label lists. (Narrowed to 16 bits in an artifact when the values fit, as are the edge
    /// outcomes and the outcomes' targets and outputs.)
    pub edge_label: Col,
    /// Per explicit edge: its outcome, an index into its state's outcomes.
    pub edge_outcome: Col,
    /// Per DWA state: its outcomes are `outcome_off[d]..outcome_off[d+1]` (at least one), distinct
    /// (target, output) pairs; the first is the DEFAULT edge.
    pub outcome_off: Array<u32>,
    /// Per outcome: the target state (or [`DEAD`]).
    pub outcome_target: Col,
    /// Per outcome: the output token set (or [`NONE`]).
    pub outcome_rho: Col,
    /// Token set `i` is a bitmap if `set_dense[i]` says so; otherwise the ranges
    /// `set_ranges[2j]..set_ranges[2j+1]` for `j` in `set_off[i]..set_off[i+1]`.
    pub set_off: Array<u32>,
    /// Token ranges: (start, end) pairs.
    pub set_ranges: Array<u32>,
    /// Per set: [`NONE`] (a range set), or the offset in `block_refs` of its bitmap's blocks:
    /// sets with many runs, where a word-wise OR is cheaper than filling ranges. A bitmap set has
    /// no ranges. Its bitmap (`ceil(num_tokens / 32)` words, bit `v % 32` of word `v / 32`) is
    /// cut into blocks of [`BLOCK_WORDS`] words; block `j` of the set is block
    /// `block_refs[set_dense[i] + j]` of `blocks`. Blocks are interned (sets that differ in a few
    /// tokens share all their other blocks), and block 0 is all zeros, skipped when ORing.
    pub set_dense: Array<u32>,
    /// Block references of bitmap sets (see [`MaskTables::set_dense`]).
    pub block_refs: Array<u32>,
    /// Interned blocks of [`BLOCK_WORDS`] words each; block 0 is all zeros.
    pub blocks: Array<u32>,
    /// Carried inhibitors `(kill_s[i], kill_k[i])`, sorted, and the tokens that fire each.
    pub kill_s: Array<u32>,
    /// Carried inhibitors: inhibition sets.
    pub kill_k: Array<u32>,
    /// Carried inhibitors: the token set that fires each.
    pub kill_set: Array<u32>,
}

impl MaskTables {
    /// Number of DWA states.
    pub fn num_states(&self) -> usize {
        self.outcome_off.len().saturating_sub(1)
    }

    /// The explicit edges of state `d`: indices into `edge_outcome`.
    #[inline]
    pub fn edge_range(&self, d: u32) -> std::ops::Range<usize> {
        self.edge_off[d as usize] as usize..self.edge_off[d as usize + 1] as usize
    }

    /// Outcome `o` (an index into the outcome columns): (target, output).
    #[inline]
    fn outcome(&self, o: usize) -> (u32, u32) {
        (self.outcome_target.get(o), self.outcome_rho.get(o))
    }

    /// The DEFAULT edge of state `d`: (target, output).
    #[inline]
    #[cfg(feature = "unstable")]
    pub fn default_edge(&self, d: u32) -> (u32, u32) {
        self.outcome(self.outcome_off[d as usize] as usize)
    }

    /// The explicit edges of state `d`: (label, target, output), by label.
    #[cfg(feature = "unstable")]
    pub fn edges(&self, d: u32) -> impl Iterator<Item = (u32, u32, u32)> + '_ {
        let r = self.edge_range(d);
        let (labels, outcomes) = (self.label_off[d as usize] as usize, self.outcome_off[d as usize] as usize);
        r.clone().map(move |e| {
            let (t, rho) = self.outcome(outcomes + self.edge_outcome.get(e) as usize);
            (self.edge_label.get(labels + e - r.start), t, rho)
        })
    }

    /// Read `label` from state `d`: the next state ([`DEAD`] if none) and the output set.
    #[inline]
    pub fn step(&self, d: u32, label: u32) -> (u32, u32) {
        let r = self.edge_range(d);
        let l = self.label_off[d as usize] as usize;
        let k = match self.edge_label.search(l, l + r.len(), label) {
            Some(i) => self.edge_outcome.get(r.start + i - l) as usize,
            None => 0,
        };
        self.outcome(self.outcome_off[d as usize] as usize + k)
    }

    /// Does state `d` read anything further?
    #[inline]
    pub fn is_final(&self, d: u32) -> bool {
        let r = self.edge_range(d);
        r.is_empty() && self.outcome_target.get(self.outcome_off[d as usize] as usize) == DEAD
    }

    /// The ranges of set `s`, as (start, end) pairs flattened (none for a bitmap set: see
    /// [`Self::dense`]).
    #[inline]
    pub fn set(&self, s: u32) -> &[u32] {
        let (a, b) = (self.set_off[s as usize] as usize, self.set_off[s as usize + 1] as usize);
        &self.set_ranges[2 * a..2 * b]
    }

    /// Number of token sets.
    pub fn num_sets(&self) -> usize {
        self.set_off.len().saturating_sub(1)
    }

    /// Words of a token bitmap.
    pub fn words(&self) -> usize {
        self.num_tokens.div_ceil(32) as usize
    }

    /// Blocks of a token bitmap.
    pub fn blocks_per_set(&self) -> usize {
        self.words().div_ceil(BLOCK_WORDS)
    }

    /// Call `f` with every token of set `s`, ascending (ranges or bitmap).
    pub fn for_each_token(&self, s: u32, mut f: impl FnMut(u32)) {
        match self.dense(s) {
            Some(d) => {
                d.for_each_block(|w0, block| {
                    for (i, &w) in block.iter().enumerate() {
                        let mut w = w;
                        while w != 0 {
                            f((w0 + i) as u32 * 32 + w.trailing_zeros());
                            w &= w - 1;
                        }
                    }
                });
            }
            None => {
                for r in self.set(s).chunks_exact(2) {
                    (r[0]..r[1]).for_each(&mut f);
                }
            }
        }
    }

    /// The bitmap of set `s` (its blocks), if it is a bitmap set.
    #[inline]
    pub fn dense(&self, s: u32) -> Option<Dense<'_>> {
        let off = *self.set_dense.get(s as usize)?;
        (off != NONE).then(|| Dense {
            refs: &self.block_refs[off as usize..off as usize + self.blocks_per_set()],
            blocks: &self.blocks,
            words: self.words(),
        })
    }

    /// The kill set of carried inhibitor `(s, k)`, if the compiler tabulated it.
    pub fn kill(&self, s: u32, k: u32) -> Option<u32> {
        let lo = self.kill_s.partition_point(|&x| x < s);
        let hi = self.kill_s.partition_point(|&x| x <= s);
        self.kill_k[lo..hi].binary_search(&k).ok().map(|i| self.kill_set[lo + i])
    }

    /// Check every index, so the mask walk can index freely. `lexer_states` and `lr_states`
    /// are the sizes of the tables the DWA refers to.
    pub fn validate(&self, lexer_states: u32, vocab_size: u32) -> Result<(), TableError> {
        let check = |c: bool, what: &str| if c { Ok(()) } else { Err(TableError(format!("mask tables: {what}"))) };
        let n = self.num_states();
        let sets = self.num_sets();
        let set_ok = |s: u32| s == NONE || (s as usize) < sets;
        let state_ok = |d: u32| d == DEAD || (d as usize) < n;
        check(self.num_tokens == vocab_size, "token count differs from the vocabulary")?;
        check(self.start.len() == lexer_states as usize, "start table size")?;
        check(self.start_rho.len() == lexer_states as usize, "start output table size")?;
        check(self.start.iter().all(|&d| d == NONE || (d as usize) < n), "start state out of range")?;
        check(self.start_rho.iter().all(|&s| set_ok(s)), "start output out of range")?;
        check(self.undecided.len() == lexer_states as usize, "undecided table size")?;
        check(self.undecided.iter().all(|&s| set_ok(s)), "undecided set out of range")?;
        check(self.aux_start.is_empty() || self.aux_start.len() == lexer_states as usize, "aux start table size")?;
        check(self.aux_start.iter().all(|&d| d == NONE || (d as usize) < n), "aux start state out of range")?;
        check(self.outcome_off.len() == n + 1, "outcome offsets size")?;
        check(self.outcome_off.first() == Some(&0), "outcome offsets start")?;
        check(self.outcome_off.windows(2).all(|w| w[0] < w[1]), "every state has its DEFAULT outcome")?;
        let no = self.outcome_off.last().copied().unwrap_or(0) as usize;
        check(self.outcome_target.len() == no && self.outcome_rho.len() == no, "outcomes size")?;
        check(self.outcome_target.iter().all(state_ok), "outcome target out of range")?;
        check(self.outcome_rho.iter().all(set_ok), "outcome output out of range")?;
        check(self.edge_off.len() == n + 1, "edge offsets size")?;
        check(self.edge_off.first() == Some(&0), "edge offsets start")?;
        check(self.edge_off.windows(2).all(|w| w[0] <= w[1]), "edge offsets order")?;
        let ne = self.edge_off.last().copied().unwrap_or(0) as usize;
        check(self.edge_outcome.len() == ne, "edge outcomes size")?;
        check(self.label_off.len() == n, "label offsets size")?;
        for d in 0..n {
            let (a, b) = (self.edge_off[d] as usize, self.edge_off[d + 1] as usize);
            let l = self.label_off[d] as usize;
            check(l.checked_add(b - a).is_some_and(|end| end <= self.edge_label.len()), "label list out of range")?;
            check(
                (l + 1..l + b - a).all(|i| self.edge_label.get(i - 1) < self.edge_label.get(i)),
                "edge labels must be sorted",
            )?;
            let outcomes = self.outcome_off[d + 1] - self.outcome_off[d];
            check(self.edge_outcome.range(a, b).all(|k| k < outcomes), "edge outcome out of range")?;
        }
        check(self.set_off.first() == Some(&0), "set offsets start")?;
        check(self.set_off.windows(2).all(|w| w[0] <= w[1]), "set offsets order")?;
        check(self.set_off.last().map(|&x| 2 * x as usize) == Some(self.set_ranges.len()), "set ranges size")?;
        for s in 0..sets as u32 {
            let r = self.set(s);
            let mut prev = 0u32;
            for (i, pair) in r.chunks(2).enumerate() {
                check(pair[0] < pair[1] && pair[1] <= self.num_tokens, "set range out of bounds")?;
                check(i == 0 || pair[0] > prev, "set ranges must be sorted and disjoint")?;
                prev = pair[1];
            }
        }
        check(self.set_dense.len() == sets, "dense set table size")?;
        let words = self.words();
        let per_set = self.blocks_per_set();
        check(self.blocks.len().is_multiple_of(BLOCK_WORDS) && !self.blocks.is_empty(), "bitmap blocks size")?;
        check(self.blocks[..BLOCK_WORDS].iter().all(|&w| w == 0), "bitmap block 0 is not all zeros")?;
        let n_blocks = self.blocks.len() / BLOCK_WORDS;
        check(self.block_refs.iter().all(|&r| (r as usize) < n_blocks), "bitmap block out of range")?;
        // Bits past the last token would be in the last block of a set: in the last word, and
        // in the words past the bitmap's end that the block holds.
        let (last_word, tail) = (words.saturating_sub(1) % BLOCK_WORDS, self.num_tokens % 32);
        let clean = |r: u32| {
            let b = &self.blocks[r as usize * BLOCK_WORDS..(r as usize + 1) * BLOCK_WORDS];
            (tail == 0 || b[last_word] >> tail == 0) && b[last_word + 1..].iter().all(|&w| w == 0)
        };
        for s in 0..sets as u32 {
            let off = self.set_dense[s as usize];
            if off == NONE {
                continue;
            }
            check(
                (off as usize).checked_add(per_set).is_some_and(|e| e <= self.block_refs.len()),
                "dense set out of range",
            )?;
            // A bitmap set has no ranges, and no bit past the last token.
            check(self.set(s).is_empty(), "a bitmap set also has ranges")?;
            check(clean(self.block_refs[off as usize + per_set - 1]), "bitmap set past the last token")?;
        }
        check(self.kill_s.len() == self.kill_k.len() && self.kill_k.len() == self.kill_set.len(), "kill table size")?;
        for i in 1..self.kill_s.len() {
            check((self.kill_s[i - 1], self.kill_k[i - 1]) < (self.kill_s[i], self.kill_k[i]), "kill table order")?;
        }
        check(self.kill_set.iter().all(|&s| (s as usize) < sets), "kill set out of range")
    }
}

// (The tests build tables with the writer's side: feature `unstable`.)
#[cfg(all(test, feature = "unstable"))]
mod tests {
    use super::*;

    /// States written through [`DwaWriter`] read back edge for edge: outcomes made distinct per
    /// state (past the linear scan too), label lists shared between states with equal ones, and
    /// every label read as written (explicit edges, DEFAULT elsewhere).
    #[test]
    fn written_states_read_back_with_shared_labels_and_distinct_outcomes() {
        let mut t =
            MaskTables { set_off: vec![0, 0, 0, 0].into(), set_dense: vec![NONE; 3].into(), ..MaskTables::default() };
        t.blocks = vec![0; BLOCK_WORDS].into();
        let mut w = DwaWriter::new();
        // State 0: 40 labels to 20 distinct outcomes (past `LINEAR`), one equal to the DEFAULT.
        let wide: Vec<(u32, u32, u32)> =
            (0..40u32).map(|i| (3 * i + 1, if i % 20 == 7 { 2 } else { (i % 20) % 4 }, (i % 20) / 7)).collect();
        // (DEFAULT edge, explicit edges) per state.
        type Row = ((u32, u32), Vec<(u32, u32, u32)>);
        let rows: Vec<Row> = vec![
            ((2, 1), wide.clone()),
            // Same labels, other outcomes: shares state 0's label list.
            ((DEAD, NONE), wide.iter().map(|&(l, _, r)| (l, DEAD, (r + 1) % 3)).collect()),
            // Final.
            ((DEAD, NONE), vec![]),
            ((1, 0), vec![(0, 3, 2), (5, DEAD, NONE)]),
        ];
        for (i, (default, edges)) in rows.iter().enumerate() {
            assert_eq!(w.push(&mut t, *default, edges.iter().copied()), i as u32);
        }
        t.validate(0, 0).unwrap();
        assert_eq!(t.num_states(), 4);
        assert_eq!(t.label_off[0], t.label_off[1], "equal label lists are shared");
        assert_eq!(t.edge_label.len(), 40 + 2);
        for (d, (default, edges)) in rows.iter().enumerate() {
            let d = d as u32;
            assert_eq!(t.default_edge(d), *default);
            assert_eq!(t.edges(d).collect::<Vec<_>>(), *edges);
            let outcomes = t.outcome_off[d as usize + 1] - t.outcome_off[d as usize];
            let mut distinct: Vec<(u32, u32)> = edges.iter().map(|&(_, x, r)| (x, r)).collect();
            distinct.push(*default);
            distinct.sort_unstable();
            distinct.dedup();
            assert_eq!(outcomes as usize, distinct.len(), "state {d}: outcomes are distinct");
            for label in 0..130 {
                let want = edges.iter().find(|e| e.0 == label).map_or(*default, |&(_, x, r)| (x, r));
                assert_eq!(t.step(d, label), want, "state {d}, label {label}");
            }
        }
        assert!(t.is_final(2) && !t.is_final(0) && !t.is_final(1) && !t.is_final(3));
        // An outcome index past the state's outcomes is refused.
        let mut bad = t.clone();
        let last = bad.edge_outcome.len() - 1;
        bad.edge_outcome.to_mut()[last] = 7;
        assert!(bad.validate(0, 0).is_err());
    }
}
