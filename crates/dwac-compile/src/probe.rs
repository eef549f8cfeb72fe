//! How fast a compiled engine's masks are, found before a server finds out: UNDECIDED tokens
//! per lexer state (decided at run time by committing them), and masks timed along random walks
//! of the grammar (each step a token the mask allows, drawn by a fixed-seed generator, so the
//! same grammar gives the same walks).

use std::sync::Arc;
use std::time::{Duration, Instant};

use dwac_runtime::{Engine, MaskCounters, MaskScratch, Matcher};

/// How much probing a compile affords.
#[derive(Clone, Debug)]
pub struct ProbeOptions {
    /// Masks timed at most.
    pub max_masks: usize,
    /// Time spent at most (a grammar with slow masks is found quickly: its masks are slow).
    pub max_time: Duration,
    /// Steps of one walk before it starts over.
    pub walk_len: usize,
    /// A mask slower than this is reported as slow (µs).
    pub slow_us: f64,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions { max_masks: 48, max_time: Duration::from_millis(50), walk_len: 24, slow_us: 1000.0 }
    }
}

/// Fills timed per probed mask (its cost is their minimum).
pub const FILLS_PER_MASK: usize = 3;

/// What the probe found.
#[derive(Clone, Debug, Default)]
pub struct MaskProbe {
    /// Masks timed.
    pub masks: usize,
    /// The median mask, µs, each mask timed as the minimum of [`FILLS_PER_MASK`] fills (so a
    /// preemption of this process is not reported as the grammar's).
    pub p50_us: f64,
    /// The slowest mask's time, µs (the minimum of its [`FILLS_PER_MASK`] fills).
    pub max_us: f64,
    /// The slowest mask's position: the text committed before it.
    pub worst_prefix: Vec<u8>,
    /// The counters of the slowest mask's fill.
    pub worst_counters: MaskCounters,
    /// Masks slower than [`ProbeOptions::slow_us`].
    pub slow_masks: usize,
    /// Masks that decided UNDECIDED tokens at run time.
    pub masks_with_undecided: usize,
    /// Lexer states with UNDECIDED tokens.
    pub undecided_states: usize,
    /// (lexer state, UNDECIDED tokens) of the (at most five) lexer states with the most
    /// UNDECIDED tokens, most first.
    pub worst_undecided_states: Vec<(u32, usize)>,
}

/// Probe `engine`'s masks (see the module docs).
pub fn probe_masks(engine: &Arc<Engine>, opts: &ProbeOptions) -> MaskProbe {
    let mut p = MaskProbe::default();
    if let Some(t) = engine.mask_tables() {
        let mut per_state: Vec<(u32, usize)> = (0..t.undecided.len() as u32)
            .filter_map(|q| {
                let set = *t.undecided.get(q as usize)?;
                if set == dwac_runtime::unstable::NONE {
                    return None;
                }
                let mut n = 0;
                t.for_each_token(set, |_| n += 1);
                (n > 0).then_some((q, n))
            })
            .collect();
        per_state.sort_by_key(|&(q, n)| (std::cmp::Reverse(n), q));
        p.undecided_states = per_state.len();
        per_state.truncate(5);
        p.worst_undecided_states = per_state;
    }
    let vocab = engine.vocab();
    let mut mask = vec![0u32; vocab.len().div_ceil(32)];
    let mut sc = MaskScratch::default();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let t0 = Instant::now();
    let mut times: Vec<f64> = Vec::new();
    let mut worst: Option<(f64, MaskCounters, Vec<u8>)> = None;
    'walks: while times.len() < opts.max_masks && t0.elapsed() < opts.max_time {
        let mut m = Matcher::new(Arc::clone(engine));
        let mut text: Vec<u8> = Vec::new();
        for _ in 0..opts.walk_len {
            if times.len() >= opts.max_masks || t0.elapsed() >= opts.max_time {
                break 'walks;
            }
            // A mask's cost: the minimum of a few fills of it (the first may pay cold caches or
            // a preemption of this process, which are not the grammar's); the median and the
            // slowest are taken over these same figures.
            let mut us = f64::INFINITY;
            let mut counters = None;
            for _ in 0..FILLS_PER_MASK {
                let s = Instant::now();
                let Ok(c) = m.fill_mask_with(&mut sc, &mut mask) else { break 'walks };
                us = us.min(s.elapsed().as_secs_f64() * 1e6);
                counters = Some(c);
            }
            let c = counters.unwrap_or_default();
            times.push(us);
            p.masks_with_undecided += usize::from(c.undecided > 0);
            if worst.as_ref().is_none_or(|w| us > w.0) {
                worst = Some((us, c, text.clone()));
            }
            // An allowed token that is not an end token (the walk goes on): the first one at or
            // after a random id (wrapping round), a word scan rather than a list of the mask.
            for &e in vocab.eos() {
                if let Some(w) = mask.get_mut((e / 32) as usize) {
                    *w &= !(1 << (e % 32));
                }
            }
            let Some(tok) = set_bit_from(&mask, (next() % vocab.len().max(1) as u64) as u32) else { break };
            if m.commit(tok).is_err() {
                break;
            }
            text.extend_from_slice(vocab.token_bytes(tok).unwrap_or_default());
        }
    }
    p.masks = times.len();
    if times.is_empty() {
        return p;
    }
    if let Some((us, c, text)) = worst {
        p.max_us = us;
        p.worst_counters = c;
        p.worst_prefix = text;
    }
    p.slow_masks = times.iter().filter(|&&t| t > opts.slow_us).count();
    times.sort_by(|a, b| a.total_cmp(b));
    p.p50_us = times[times.len() / 2];
    p
}

/// The first set bit of `mask` at or after `from`, wrapping round to the start.
fn set_bit_from(mask: &[u32], from: u32) -> Option<u32> {
    let (w0, b0) = ((from / 32) as usize, from % 32);
    let first = mask.get(w0).map(|&w| w & (u32::MAX << b0)).filter(|&w| w != 0);
    if let Some(w) = first {
        return Some(w0 as u32 * 32 + w.trailing_zeros());
    }
    let words = mask.len();
    (1..=words).map(|k| (w0 + k) % words).find_map(|i| {
        let w = mask[i];
        (w != 0).then(|| i as u32 * 32 + w.trailing_zeros())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_bit_from_wraps_round() {
        let mask = [0b1000u32, 0, 1 << 31];
        assert_eq!(set_bit_from(&mask, 0), Some(3));
        assert_eq!(set_bit_from(&mask, 4), Some(95));
        assert_eq!(set_bit_from(&mask, 95), Some(95));
        assert_eq!(set_bit_from(&mask, 64), Some(95));
        assert_eq!(set_bit_from(&[0, 1 << 2], 40), Some(34));
        assert_eq!(set_bit_from(&[1, 0], 33), Some(0));
        assert_eq!(set_bit_from(&[0, 0], 5), None);
    }

    #[test]
    fn the_median_and_the_slowest_mask_are_the_same_kind_of_figure() {
        use dwac_runtime::Vocabulary;
        let toks: Vec<Vec<u8>> = [&b"a"[..], b"b", b"ab", b"ba", b"aab", b""].iter().map(|t| t.to_vec()).collect();
        let special = (0..toks.len()).map(|i| i == toks.len() - 1).collect();
        let vocab = Vocabulary::from_tokens(&toks, special, vec![(toks.len() - 1) as u32]);
        let g = crate::parse_source(crate::SourceKind::Lark, "start: (\"a\" | \"b\")+\n").expect("grammar");
        let (engine, _) = crate::compile_engine(&g, vocab).expect("compile");
        let opts = ProbeOptions { max_masks: 40, max_time: Duration::from_secs(10), ..ProbeOptions::default() };
        let p = probe_masks(&Arc::new(engine), &opts);
        assert_eq!(p.masks, 40);
        assert!(p.p50_us > 0.0 && p.p50_us <= p.max_us, "p50 {} max {}", p.p50_us, p.max_us);
        assert_eq!((p.masks_with_undecided, p.slow_masks), (0, 0));
    }
}
