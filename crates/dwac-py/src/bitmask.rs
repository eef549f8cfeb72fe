//! Batch mask fills and logits masking over bitmasks (numpy int32 rows).

use numpy::{PyArray1, PyArray2, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use dwac_runtime::{MaskCounters, MaskError, Matcher as RMatcher};

use crate::mask_err;
use crate::matcher::{bitmask_rows, check_width, with_words, Matcher};

/// Fill the masks of `matchers` into the rows of `bitmask` (row `indices[i]` for matcher `i`;
/// default: row `i`), across threads with the GIL released.
#[pyfunction]
#[pyo3(signature = (matchers, bitmask, indices = None))]
pub(crate) fn fill_next_token_bitmask_batch(
    matchers: Vec<PyRef<'_, Matcher>>,
    bitmask: &Bound<'_, PyAny>,
    indices: Option<Vec<usize>>,
) -> PyResult<()> {
    let (arr, rows, cols) = bitmask_rows(bitmask)?;
    for m in &matchers {
        check_width(cols, m.width)?;
    }
    let indices = indices.unwrap_or_else(|| (0..matchers.len()).collect());
    if indices.len() != matchers.len() {
        return Err(PyValueError::new_err(format!("{} indices for {} matchers", indices.len(), matchers.len())));
    }
    let mut seen = vec![false; rows];
    for &i in &indices {
        if i >= rows || std::mem::replace(&mut seen[i], true) {
            return Err(PyValueError::new_err(format!("row index {i} is out of range or repeated ({rows} rows)")));
        }
    }
    // (Matchers are cloned, O(1) each, so no Python object is touched without the GIL.)
    let ms: Vec<RMatcher> = matchers.iter().map(|m| m.inner.clone()).collect();
    let counters = with_words(&arr, move |words| {
        use rayon::prelude::*;
        let mut slots: Vec<Option<&mut [u32]>> = words.chunks_mut(cols).map(Some).collect();
        let mut jobs: Vec<(&RMatcher, &mut [u32])> = Vec::with_capacity(ms.len());
        for (m, &i) in ms.iter().zip(&indices) {
            if let Some(row) = slots[i].take() {
                jobs.push((m, row));
            }
        }
        // (In the matchers' order: each row's counters go to its matcher below.)
        jobs.into_par_iter().map(|(m, row)| m.fill_mask(row)).collect::<Result<Vec<MaskCounters>, MaskError>>()
    })?
    .map_err(mask_err)?;
    for (m, c) in matchers.iter().zip(counters) {
        m.record(c);
    }
    Ok(())
}

/// Set `-inf` in `row` wherever `words` has a zero bit (bit `v % 32` of word `v / 32`); ids past
/// the words are disallowed too.
fn mask_row(row: &mut [f32], words: &[u32]) {
    for (k, chunk) in row.chunks_mut(32).enumerate() {
        let w = words.get(k).copied().unwrap_or(0);
        if w == u32::MAX {
            continue;
        }
        if w == 0 {
            chunk.fill(f32::NEG_INFINITY);
            continue;
        }
        for (b, x) in chunk.iter_mut().enumerate() {
            if w >> b & 1 == 0 {
                *x = f32::NEG_INFINITY;
            }
        }
    }
}

/// `apply_token_bitmask_inplace` for C-contiguous float32 numpy logits (`[vocab]` with bitmask
/// row 0, or `[batch, vocab]` with row `indices[j]` of the logits masked by bitmask row `j`, or
/// row `r` by row `r` without indices). Returns False, touching nothing, for any other logits
/// (the Python fallback handles those).
#[pyfunction]
#[pyo3(signature = (logits, bitmask, indices = None))]
pub(crate) fn apply_bitmask_f32(
    logits: &Bound<'_, PyAny>,
    bitmask: &Bound<'_, PyAny>,
    indices: Option<Vec<usize>>,
) -> PyResult<bool> {
    let (arr, rows, cols) = bitmask_rows(bitmask)?;
    let mask = arr.readonly();
    let words = mask.as_slice().map_err(|_| PyValueError::new_err("bitmask must be C-contiguous"))?;
    // SAFETY: i32 and u32 have the same size and alignment.
    let words: &[u32] = unsafe { std::slice::from_raw_parts(words.as_ptr().cast(), words.len()) };
    if let Ok(l) = logits.extract::<Bound<'_, PyArray1<f32>>>() {
        if rows == 0 || indices.is_some() {
            return Err(PyValueError::new_err("1-D logits take bitmask row 0 and no indices"));
        }
        let Ok(mut l) = l.try_readwrite() else { return Ok(false) };
        let Ok(row) = l.as_slice_mut() else { return Ok(false) };
        mask_row(row, &words[..cols]);
        return Ok(true);
    }
    if let Ok(l) = logits.extract::<Bound<'_, PyArray2<f32>>>() {
        let (b, n) = (l.shape()[0], l.shape()[1]);
        let Ok(mut l) = l.try_readwrite() else { return Ok(false) };
        let Ok(all) = l.as_slice_mut() else { return Ok(false) };
        let pairs: Vec<(usize, usize)> = match indices {
            Some(ix) => ix.into_iter().enumerate().map(|(j, r)| (r, j)).collect(),
            None => (0..b).map(|r| (r, r)).collect(),
        };
        for &(r, j) in &pairs {
            if r >= b || j >= rows {
                return Err(PyValueError::new_err(format!(
                    "logits row {r} / bitmask row {j} out of range ({b} logits rows, {rows} bitmask rows)"
                )));
            }
        }
        for (r, j) in pairs {
            mask_row(&mut all[r * n..(r + 1) * n], &words[j * cols..(j + 1) * cols]);
        }
        return Ok(true);
    }
    Ok(false)
}
