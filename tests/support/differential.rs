//! The Parser DWA mask against the reference mask along token traces, with reference masks
//! cached by configuration (`Matcher::configuration_key`: the reference mask is a function of
//! the configuration alone), shared by the corpus tests and `cargo dwac-bench differential`.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use dwac_runtime::{Engine, MaskScratch, Matcher};

/// What a differential run compared.
#[derive(Clone, Debug, Default)]
pub struct DiffReport {
    pub traces: usize,
    pub steps_compared: u64,
    pub reference_masks_computed: u64,
    /// Configurations with too many stacks to key (their references were not cached).
    pub uncached: u64,
    pub mismatches: u64,
    /// (trace, step, first differing tokens as "id bytes dwa=bool") of the first mismatches.
    pub examples: Vec<(usize, usize, Vec<String>)>,
    /// Traces whose commit failed (a trace the grammar rejects; not a mask mismatch).
    pub rejected_traces: usize,
    /// (trace, step, token) of each of those: the token its commit refused.
    pub rejected: Vec<(usize, usize, u32)>,
    /// Masks `fill_mask` computed entirely by the reference mask (`MaskCounters::fallbacks`
    /// summed: the tables did not cover a thread): every bit of such a mask is compared
    /// reference against reference.
    pub fallbacks: u64,
    /// UNDECIDED tokens the fills decided at run time by committing them
    /// (`MaskCounters::undecided` summed: one per commit; tokens the DWA or an earlier commit
    /// already allowed are not committed again).
    pub undecided: u64,
    /// Masks with at least one such token.
    pub undecided_masks: u64,
    /// An upper bound on the bits compared reference against reference: per mask, every bit of
    /// a fallback, else `min(undecided, vocabulary)`.
    pub reference_bits_at_most: u64,
    /// The vocabulary's size (bits per mask).
    pub vocab: usize,
    /// Fills that failed (`fill_mask` or the reference), each ending its trace:
    /// "trace i step k: error".
    pub errors: Vec<String>,
}

impl DiffReport {
    /// One line for a test's output: how much of the comparison was the DWA's, and how much
    /// (at most) the reference mask's against itself.
    pub fn slow_path_summary(&self) -> String {
        format!(
            "{} steps ({} bits): {} UNDECIDED tokens decided by commit in {} masks, {} masks fell back to the \
             reference; at most {} bits compared reference against reference",
            self.steps_compared,
            self.steps_compared * self.vocab as u64,
            self.undecided,
            self.undecided_masks,
            self.fallbacks,
            self.reference_bits_at_most
        )
    }
}

fn hash128(mask: &[u32]) -> (u64, u64) {
    let mut a = std::collections::hash_map::DefaultHasher::new();
    mask.hash(&mut a);
    let mut b = std::collections::hash_map::DefaultHasher::new();
    (0x9e37_79b9_7f4a_7c15u64, mask).hash(&mut b);
    (a.finish(), b.finish())
}

/// Compare masks at every step of every trace (before each token and after the last), the
/// reference computed once per distinct configuration on `threads` threads. `progress` is
/// called after each trace.
pub fn differential(
    engine: &Arc<Engine>,
    traces: &[Vec<u32>],
    threads: usize,
    progress: &mut dyn FnMut(&DiffReport),
) -> DiffReport {
    let mut r = DiffReport { vocab: engine.vocab().len(), ..DiffReport::default() };
    let mut cache: HashMap<Vec<u32>, (u64, u64)> = HashMap::new();
    let mut dwa = vec![0u32; engine.vocab().len().div_ceil(32)];
    let mut reference = dwa.clone();
    for (i, ids) in traces.iter().enumerate() {
        let mut m = Matcher::new(Arc::clone(engine));
        let mut sc = MaskScratch::default();
        for (k, id) in ids.iter().map(Some).chain(std::iter::once(None)).enumerate() {
            let counters = match m.fill_mask_with(&mut sc, &mut dwa) {
                Ok(c) => c,
                Err(e) => {
                    r.errors.push(format!("trace {i} step {k}: fill_mask: {e}"));
                    break;
                }
            };
            r.fallbacks += u64::from(counters.fallbacks);
            r.undecided += u64::from(counters.undecided);
            r.undecided_masks += u64::from(counters.undecided > 0);
            r.reference_bits_at_most +=
                if counters.fallbacks > 0 { r.vocab as u64 } else { (counters.undecided as u64).min(r.vocab as u64) };
            let key = m.configuration_key(64);
            let want = match key.as_ref().and_then(|key| cache.get(key)) {
                Some(&h) => h,
                None => {
                    if let Err(e) = m.fill_reference_mask_shared(&mut reference, threads) {
                        r.errors.push(format!("trace {i} step {k}: reference mask: {e}"));
                        break;
                    }
                    r.reference_masks_computed += 1;
                    let h = hash128(&reference);
                    match key {
                        Some(key) => {
                            cache.insert(key, h);
                        }
                        None => r.uncached += 1,
                    }
                    h
                }
            };
            r.steps_compared += 1;
            if hash128(&dwa) != want {
                r.mismatches += 1;
                if r.examples.len() < 10 && m.fill_reference_mask(&mut reference).is_ok() {
                    let bit = |mask: &[u32], v: u32| mask[(v / 32) as usize] >> (v % 32) & 1 == 1;
                    let diff = (0..engine.vocab().len() as u32)
                        .filter(|&v| bit(&dwa, v) != bit(&reference, v))
                        .take(8)
                        .map(|v| {
                            let b = engine.vocab().token_bytes(v).unwrap_or_default();
                            format!("{v} {:?} dwa={}", String::from_utf8_lossy(b), bit(&dwa, v))
                        })
                        .collect();
                    r.examples.push((i, k, diff));
                }
            }
            let Some(&id) = id else { break };
            if m.commit(id).is_err() {
                r.rejected_traces += 1;
                r.rejected.push((i, k, id));
                break;
            }
        }
        r.traces += 1;
        progress(&r);
    }
    r
}
