//! The Parser DWA's writer side (feature `unstable`): bitmap packing and [`DwaWriter`].

use super::{MaskTables, BLOCK_WORDS};

/// Cut bitmaps (each `words` words) into interned blocks: the `block_refs` of each bitmap in
/// order (`ceil(words / BLOCK_WORDS)` each) and the `blocks` (block 0 all zeros), as
/// [`MaskTables`] stores them.
pub fn pack_bitmaps<'b>(bitmaps: impl IntoIterator<Item = &'b [u32]>, words: usize) -> (Vec<u32>, Vec<u32>) {
    // Blocks by a multiply-xor hash of their words (a general-purpose hash of 1 KiB keys costs
    // more than the rest of the packing), compared in full on a hit.
    // (Four independent lanes: a single multiply chain is latency-bound.)
    let hash = |b: &[u32]| {
        let mut lanes = [1u64, 2, 3, 4];
        for c in b.chunks_exact(8) {
            for j in 0..4 {
                let w = c[2 * j] as u64 | (c[2 * j + 1] as u64) << 32;
                lanes[j] = (lanes[j] ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
            }
        }
        lanes.iter().fold(0u64, |h, &l| (h ^ l).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(31))
    };
    let mut index: std::collections::HashMap<u64, Vec<u32>> = std::collections::HashMap::new();
    let mut blocks = vec![0u32; BLOCK_WORDS];
    index.entry(hash(&blocks)).or_default().push(0);
    let mut refs = Vec::new();
    let mut block = [0u32; BLOCK_WORDS];
    for bits in bitmaps {
        for w0 in (0..words).step_by(BLOCK_WORDS) {
            let n = BLOCK_WORDS.min(words - w0);
            block[..n].copy_from_slice(&bits[w0..w0 + n]);
            block[n..].fill(0);
            let ids = index.entry(hash(&block)).or_default();
            let at = |id: u32| &blocks[id as usize * BLOCK_WORDS..(id as usize + 1) * BLOCK_WORDS];
            let id = match ids.iter().copied().find(|&id| at(id) == block) {
                Some(id) => id,
                None => {
                    let id = (blocks.len() / BLOCK_WORDS) as u32;
                    blocks.extend_from_slice(&block);
                    ids.push(id);
                    id
                }
            };
            refs.push(id);
        }
    }
    (refs, blocks)
}

/// Appends states to a [`MaskTables`] automaton in its stored form: label lists interned across
/// states, outcomes made distinct per state (the DEFAULT edge first). Use one writer per
/// automaton, from empty tables to the last state.
#[derive(Default)]
pub struct DwaWriter {
    /// Label list → its offset in `edge_label`.
    rows: WordMap<Vec<u32>, u32>,
    labels: Vec<u32>,
    /// The current state's outcomes, and their indices once there are more than
    /// [`Self::LINEAR`] (fewer are found by a scan).
    outcomes: Vec<(u32, u32)>,
    index: WordMap<(u32, u32), u32>,
}

/// A hash map keyed by integers, with a multiply-rotate hash (the writer hashes every label of
/// every state: a general-purpose hash costs more than the rest of the writing).
type WordMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<WordHasher>>;

#[derive(Default)]
struct WordHasher(u64);

impl WordHasher {
    #[inline]
    fn mix(&mut self, w: u64) {
        self.0 = (self.0 ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(26);
    }
}

impl std::hash::Hasher for WordHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.mix(u64::from_le_bytes(c.try_into().unwrap_or_default()));
        }
        let mut last = [0u8; 8];
        let rest = chunks.remainder();
        last[..rest.len()].copy_from_slice(rest);
        self.mix(u64::from_le_bytes(last) ^ (rest.len() as u64) << 59);
    }

    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.mix(x as u64);
    }

    #[inline]
    fn write_usize(&mut self, x: usize) {
        self.mix(x as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

impl DwaWriter {
    /// Outcomes up to which a state's are found by a scan rather than the hash index.
    const LINEAR: usize = 8;

    /// An empty writer.
    pub fn new() -> DwaWriter {
        DwaWriter::default()
    }

    /// Append a state with the DEFAULT edge `default` (target, output) and the explicit edges
    /// `edges` (label, target, output), in increasing label order; returns the state's id.
    pub fn push(
        &mut self,
        t: &mut MaskTables,
        default: (u32, u32),
        edges: impl IntoIterator<Item = (u32, u32, u32)>,
    ) -> u32 {
        if t.edge_off.is_empty() {
            t.edge_off.push(0);
        }
        if t.outcome_off.is_empty() {
            t.outcome_off.push(0);
        }
        let id = t.num_states() as u32;
        self.labels.clear();
        self.outcomes.clear();
        self.index.clear();
        self.outcomes.push(default);
        {
            let mut ko = t.edge_outcome.to_mut();
            for (label, target, rho) in edges {
                debug_assert!(self.labels.last().is_none_or(|&l| l < label), "edges must be sorted by label");
                self.labels.push(label);
                let o = (target, rho);
                let next = self.outcomes.len() as u32;
                let k = if self.outcomes.len() <= Self::LINEAR {
                    match self.outcomes.iter().position(|&x| x == o) {
                        Some(i) => i as u32,
                        None => {
                            self.outcomes.push(o);
                            if self.outcomes.len() > Self::LINEAR {
                                self.index.extend(self.outcomes.iter().enumerate().map(|(i, &x)| (x, i as u32)));
                            }
                            next
                        }
                    }
                } else {
                    let k = *self.index.entry(o).or_insert(next);
                    if k == next {
                        self.outcomes.push(o);
                    }
                    k
                };
                ko.push(k);
            }
        }
        let off = match self.rows.get(&self.labels) {
            Some(&off) => off,
            None => {
                let off = t.edge_label.len() as u32;
                t.edge_label.to_mut().extend_from_slice(&self.labels);
                self.rows.insert(self.labels.clone(), off);
                off
            }
        };
        t.label_off.push(off);
        t.edge_off.push(t.edge_outcome.len() as u32);
        {
            let (mut tg, mut rh) = (t.outcome_target.to_mut(), t.outcome_rho.to_mut());
            for &(target, rho) in &self.outcomes {
                tg.push(target);
                rh.push(rho);
            }
        }
        t.outcome_off.push(t.outcome_target.len() as u32);
        id
    }
}
