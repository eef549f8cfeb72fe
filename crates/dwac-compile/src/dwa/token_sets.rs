//! Token sets over token ids, interned for the mask tables ([`TokenSets`]), and unions of a
//! lexer state's token classes into them ([`Union`]). Part of assembly (`mod.rs`): class sets
//! of the determinized automata become these sets; bitmap sets are cut into blocks once the
//! automaton is minimized (`minimize::compact_sets`).

use dwac_runtime::unstable::NONE;

use super::terminal_dwa::{TokenClass, Tokens};
use super::FastMap;

/// Sets with more ranges than this (and than a sixteenth of the bitmap's words) also get a bitmap.
const DENSE_FROM_RANGES: usize = 64;

/// Token sets over token ids, interned: a set of at most `dense_from` runs as ranges, a larger
/// one as a bitmap only (filling a bitmap costs `words` word writes whatever the set; ranges cost
/// one per range, so past about `words / 16` ranges a bitmap is cheaper to read, and building
/// and interning it costs no pass over its runs). The choice depends on the set alone, so a set
/// has one id however it was built.
pub(super) struct TokenSets {
    /// Sets with more runs than this are bitmaps.
    pub(super) dense_from: usize,
    /// Words (`u32`) of a bitmap.
    pub(super) words: usize,
    pub(super) index: FastMap<Vec<u32>, u32>,
    /// Bitmap sets by the hash of their words (as `u64`s): their ids (compared in full).
    pub(super) dense_index: FastMap<u64, Vec<u32>>,
    /// Per set `i`: ranges `off[i]..off[i+1]` (pairs) of `ranges`; none for a bitmap set.
    pub(super) off: Vec<u32>,
    pub(super) ranges: Vec<u32>,
    /// Per set: its bitmap's offset in `bitmaps`, or [`NONE`].
    pub(super) dense: Vec<u32>,
    pub(super) bitmaps: Vec<u32>,
    /// A bitmap buffer reused by [`TokenSets::intern_ranges`].
    pub(super) scratch: Vec<u64>,
}

impl TokenSets {
    pub(super) fn new(num_tokens: u32) -> TokenSets {
        let words = (num_tokens as usize).div_ceil(32);
        TokenSets {
            dense_from: DENSE_FROM_RANGES.max(words / 16),
            words,
            index: FastMap::default(),
            dense_index: FastMap::default(),
            off: vec![0],
            ranges: Vec::new(),
            dense: Vec::new(),
            bitmaps: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// The id of the set of (sorted, distinct) `tokens`, or [`NONE`] for the empty set.
    pub(super) fn intern(&mut self, tokens: &[u32]) -> u32 {
        let mut ranges = Vec::new();
        let mut i = 0;
        while i < tokens.len() {
            let lo = tokens[i];
            let mut hi = lo + 1;
            i += 1;
            while i < tokens.len() && tokens[i] == hi {
                hi += 1;
                i += 1;
            }
            ranges.push(lo);
            ranges.push(hi);
        }
        self.intern_ranges(ranges)
    }

    /// The id of the set given as sorted, disjoint, non-adjacent half-open `ranges` (flat), or
    /// [`NONE`] for the empty set.
    fn intern_ranges(&mut self, ranges: Vec<u32>) -> u32 {
        if ranges.is_empty() {
            return NONE;
        }
        if ranges.len() / 2 > self.dense_from {
            let mut bits = std::mem::take(&mut self.scratch);
            bits.clear();
            bits.resize(self.words.div_ceil(2), 0);
            for r in ranges.chunks(2) {
                fill_range64(&mut bits, r[0], r[1]);
            }
            let id = self.intern_dense(&bits);
            self.scratch = bits;
            return id;
        }
        if let Some(&id) = self.index.get(&ranges) {
            return id;
        }
        let id = self.dense.len() as u32;
        self.off.push(self.off[id as usize] + (ranges.len() / 2) as u32);
        self.dense.push(NONE);
        self.ranges.extend_from_slice(&ranges);
        self.index.insert(ranges, id);
        id
    }

    /// The id of the set of bitmap `bits` (bit `v % 64` of word `v / 64`), or [`NONE`] for the
    /// empty set.
    fn intern_bits(&mut self, bits: &[u64]) -> u32 {
        // Runs of ones: a run starts at every 0→1 step.
        // Counted only until past `dense_from` (a bit count per word is not one instruction
        // on every target).
        let mut runs = 0usize;
        let mut carry = 0u64;
        for chunk in bits.chunks(64) {
            for &w in chunk {
                runs += (w & !((w << 1) | carry)).count_ones() as usize;
                carry = w >> 63;
            }
            if runs > self.dense_from {
                break;
            }
        }
        if runs <= self.dense_from {
            let mut ranges = Vec::with_capacity(2 * runs);
            bitmap_ranges(bits, &mut ranges);
            return self.intern_ranges(ranges);
        }
        self.intern_dense(bits)
    }

    /// The id of the bitmap set `bits` (bit `v % 64` of word `v / 64`, at least
    /// `words / 2` words, zero past the vocabulary): looked up by the hash of its words and
    /// compared in full, without making its `u32` words unless it is new.
    fn intern_dense(&mut self, bits: &[u64]) -> u32 {
        let bits = &bits[..self.words.div_ceil(2)];
        let h = bitmap_hash(bits);
        let words = self.words;
        // Compared a word pair at a time (the last `u32` word may have no partner).
        let same = |stored: &[u32]| {
            stored.chunks(2).zip(bits).all(|(p, &w)| p[0] as u64 | (p.get(1).copied().unwrap_or(0) as u64) << 32 == w)
        };
        if let Some(ids) = self.dense_index.get(&h) {
            for &id in ids {
                let d = self.dense[id as usize] as usize;
                if same(&self.bitmaps[d..d + words]) {
                    return id;
                }
            }
        }
        let id = self.dense.len() as u32;
        self.off.push(self.off[id as usize]);
        let at = self.bitmaps.len();
        self.dense.push(at as u32);
        self.bitmaps.resize(at + words, 0);
        for (pair, &w) in self.bitmaps[at..].chunks_mut(2).zip(bits) {
            pair[0] = w as u32;
            if let Some(hi) = pair.get_mut(1) {
                *hi = (w >> 32) as u32;
            }
        }
        self.dense_index.entry(h).or_default().push(id);
        id
    }

    /// The tokens of set `id` ([`NONE`]: none).
    pub(super) fn members(&self, id: u32) -> Vec<u32> {
        if id == NONE {
            return Vec::new();
        }
        let d = self.dense[id as usize];
        if d != NONE {
            let bits = &self.bitmaps[d as usize..d as usize + self.words];
            return (0..self.words as u32 * 32).filter(|&v| bits[(v / 32) as usize] >> (v % 32) & 1 == 1).collect();
        }
        let (a, b) = (self.off[id as usize] as usize, self.off[id as usize + 1] as usize);
        self.ranges[2 * a..2 * b].chunks(2).flat_map(|r| r[0]..r[1]).collect()
    }

    /// A set with no ranges (for kill entries that kill nothing).
    pub(super) fn intern_empty(&mut self) -> u32 {
        if let Some(&id) = self.index.get(&Vec::new()) {
            return id;
        }
        let id = self.dense.len() as u32;
        self.off.push(self.off[id as usize]);
        self.dense.push(NONE);
        self.index.insert(Vec::new(), id);
        id
    }
}

/// Unions of several classes with at most this many tokens in all are sorted; larger ones go
/// through a bitmap.
const SORT_UNION_UPTO: usize = 256;

/// The union of token classes as ranges: small unions by sorting, large ones through a bitmap.
#[derive(Default)]
pub(super) struct Union {
    bits: Vec<u64>,
    list: Vec<u32>,
    /// Unions made, by the identities of their classes' token storage (lexer states derived
    /// from one another share it, so the same union recurs across states); each entry holds
    /// handles on that storage, so an address cannot be reused while it is a key.
    memo: FastMap<Vec<usize>, (u32, Vec<Tokens>)>,
    key: Vec<usize>,
}

impl Union {
    /// The interned set of the tokens of `members` (indices into `classes`).
    pub(super) fn intern(
        &mut self,
        members: &[u32],
        classes: &[TokenClass],
        sets: &mut TokenSets,
        n_tokens: u32,
    ) -> u32 {
        self.key.clear();
        self.key.extend(members.iter().map(|&c| classes[c as usize].tokens.addr()));
        self.key.sort_unstable();
        if let Some(&(id, _)) = self.memo.get(&self.key) {
            return id;
        }
        let id = self.make(members, classes, sets, n_tokens);
        let held = members.iter().map(|&c| classes[c as usize].tokens.clone()).collect();
        self.memo.insert(self.key.clone(), (id, held));
        id
    }

    /// [`Union::intern`] without the memo: small unions through a sorted list, large ones
    /// through a bitmap.
    fn make(&mut self, members: &[u32], classes: &[TokenClass], sets: &mut TokenSets, n_tokens: u32) -> u32 {
        let total: usize = members.iter().map(|&c| classes[c as usize].tokens.len()).sum();
        // (A single class's tokens are sorted already; several are sorted only when few: past
        // that, marking them in a bitmap and reading its runs costs less than the sort.)
        if total <= 4096 && (members.len() == 1 || total <= SORT_UNION_UPTO) {
            let mut ranges = Vec::new();
            self.list.clear();
            for &c in members {
                self.list.extend(classes[c as usize].tokens.iter());
            }
            // One class's tokens are sorted already.
            if members.len() > 1 {
                self.list.sort_unstable();
                self.list.dedup();
            }
            for &t in &self.list {
                match ranges.last_mut() {
                    Some(hi) if *hi == t => *hi = t + 1,
                    _ => {
                        ranges.push(t);
                        ranges.push(t + 1);
                    }
                }
            }
            return sets.intern_ranges(ranges);
        }
        let words = (n_tokens as usize).div_ceil(64);
        self.bits.clear();
        self.bits.resize(words, 0);
        for &c in members {
            match &classes[c as usize].tokens {
                Tokens::Bits { bits, .. } => {
                    for (w, x) in self.bits.iter_mut().zip(bits.iter()) {
                        *w |= x;
                    }
                }
                Tokens::List(l) => {
                    for &t in l.iter() {
                        self.bits[(t / 64) as usize] |= 1 << (t % 64);
                    }
                }
            }
        }
        sets.intern_bits(&self.bits)
    }
}
/// Append the runs of ones of `bits` (bit `v % 64` of word `v / 64`) to `ranges` as flat
/// half-open ranges: a bit count per run rather than per bit.
fn bitmap_ranges(bits: &[u64], ranges: &mut Vec<u32>) {
    let mut open: Option<u32> = None;
    for (wi, &word) in bits.iter().enumerate() {
        if word == 0 || word == u64::MAX {
            match (open, word) {
                (Some(lo), 0) => {
                    ranges.push(lo);
                    ranges.push(wi as u32 * 64);
                    open = None;
                }
                (None, u64::MAX) => open = Some(wi as u32 * 64),
                _ => {}
            }
            continue;
        }
        let mut b = 0u32;
        while b < 64 {
            match open {
                None => {
                    let rest = word >> b;
                    if rest == 0 {
                        break;
                    }
                    b += rest.trailing_zeros();
                    open = Some(wi as u32 * 64 + b);
                }
                Some(lo) => {
                    let rest = !word >> b;
                    if rest == 0 {
                        break;
                    }
                    b += rest.trailing_zeros();
                    ranges.push(lo);
                    ranges.push(wi as u32 * 64 + b);
                    open = None;
                }
            }
        }
    }
    if let Some(lo) = open {
        ranges.push(lo);
        ranges.push(bits.len() as u32 * 64);
    }
}

/// A hash of a large bitmap for [`TokenSets::intern_dense`]'s index, four independent lanes at
/// a time (a general-purpose hash takes several times longer on a vocabulary-sized bitmap;
/// the index compares candidates in full, so the hash only spreads them).
fn bitmap_hash(bits: &[u64]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut lanes = [1u64, 2, 3, 4];
    let mut chunks = bits.chunks_exact(4);
    for c in &mut chunks {
        for j in 0..4 {
            lanes[j] = (lanes[j] ^ c[j]).wrapping_mul(K).rotate_left(29);
        }
    }
    for (j, &w) in chunks.remainder().iter().enumerate() {
        lanes[j] = (lanes[j] ^ w).wrapping_mul(K).rotate_left(29);
    }
    let mut h = bits.len() as u64;
    for l in lanes {
        h = (h ^ l).wrapping_mul(K).rotate_left(31);
    }
    h ^ h >> 32
}

/// Set bits `lo..hi` of `bits` (bit `v % 64` of word `v / 64`), a word at a time.
fn fill_range64(bits: &mut [u64], lo: u32, hi: u32) {
    if lo >= hi {
        return;
    }
    let (wl, wh) = ((lo / 64) as usize, ((hi - 1) / 64) as usize);
    let first = u64::MAX << (lo % 64);
    let last = u64::MAX >> (63 - (hi - 1) % 64);
    if wl == wh {
        bits[wl] |= first & last;
        return;
    }
    bits[wl] |= first;
    for w in &mut bits[wl + 1..wh] {
        *w = u64::MAX;
    }
    bits[wh] |= last;
}
