//! Masks of many matchers at once: one decoding step of a batch.

use crate::dwa::MaskCounters;
use crate::matcher::{MaskError, Matcher};

/// Fill the mask of `matchers[i]` into row `i` of `out`, a row-major bitmask of
/// `matchers.len()` rows of `row_words` 32-bit words each (the `[batch, ceil(n_logits / 32)]`
/// int32 layout servers pass to their logits kernels). Each row is what
/// [`Matcher::fill_mask`] writes: the allowed tokens' bits set, every bit past the matcher's
/// vocabulary cleared, so `row_words` may be wider than the vocabulary needs. With the cargo
/// feature `rayon`, rows are filled in parallel on rayon's current thread pool (each worker
/// with its own [`MaskScratch`](crate::MaskScratch)); without it, one after another.
///
/// Returns the rows' [`MaskCounters`] summed (`fallbacks` is then the number of rows computed
/// by the reference mask).
///
/// Errors: `out` shorter than `matchers.len() * row_words`, or a row narrower than a
/// matcher's vocabulary ([`MaskError::BufferTooSmall`]); rows before the error may have been
/// written.
pub fn fill_masks(matchers: &[&Matcher], out: &mut [u32], row_words: usize) -> Result<MaskCounters, MaskError> {
    let need = matchers.len().saturating_mul(row_words);
    if out.len() < need {
        return Err(MaskError::BufferTooSmall { need, got: out.len() });
    }
    if row_words == 0 {
        return match matchers.first() {
            Some(m) => Err(MaskError::BufferTooSmall { need: m.mask_words(), got: 0 }),
            None => Ok(MaskCounters::default()),
        };
    }
    let rows = out[..need].chunks_mut(row_words);
    #[cfg(feature = "rayon")]
    {
        use rayon::prelude::*;
        let rows: Vec<&mut [u32]> = rows.collect();
        rows.into_par_iter().zip(matchers.par_iter()).map(|(row, m)| m.fill_mask(row)).try_reduce(
            MaskCounters::default,
            |mut a, b| {
                a.add(&b);
                Ok(a)
            },
        )
    }
    #[cfg(not(feature = "rayon"))]
    {
        let mut sum = MaskCounters::default();
        for (row, m) in rows.zip(matchers) {
            sum.add(&m.fill_mask(row)?);
        }
        Ok(sum)
    }
}
