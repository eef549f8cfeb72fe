//! `Matcher`: one sequence's parse state; masks written into numpy or torch bitmasks.

use std::sync::{Arc, Mutex};

use numpy::{PyArray1, PyArray2, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use dwac_runtime::{MaskCounters, Matcher as RMatcher};

use crate::grammar::Grammar;
use crate::{err, mask_err};

/// One sequence's parse state. See the package docs for the method contract.
#[pyclass(module = "dwac._dwac")]
pub(crate) struct Matcher {
    pub(crate) inner: RMatcher,
    /// The grammar's mask width (bitmask rows must hold it).
    pub(crate) width: usize,
    /// What this matcher's mask fills did (`counters()`). Behind a lock so that fills, which
    /// borrow the matcher shared and release the GIL, can record into it.
    pub(crate) counts: Mutex<Counts>,
}

/// A matcher's mask counters: the last fill's, and sums over its life.
#[derive(Clone, Copy, Default)]
pub(crate) struct Counts {
    pub(crate) last: MaskCounters,
    pub(crate) masks: u64,
    pub(crate) undecided_total: u64,
    pub(crate) fallbacks_total: u64,
    pub(crate) masks_with_undecided: u64,
}

impl Counts {
    pub(crate) fn record(&mut self, c: MaskCounters) {
        self.last = c;
        self.masks += 1;
        self.undecided_total += u64::from(c.undecided);
        self.fallbacks_total += u64::from(c.fallbacks);
        self.masks_with_undecided += u64::from(c.undecided > 0);
    }
}

impl Matcher {
    fn wrap(inner: RMatcher, width: usize) -> Matcher {
        Matcher { inner, width, counts: Mutex::new(Counts::default()) }
    }

    /// Add one fill's counters (a poisoned lock only means another thread panicked while
    /// holding it: the counts are plain numbers, still usable).
    pub(crate) fn record(&self, c: MaskCounters) {
        self.counts.lock().unwrap_or_else(|p| p.into_inner()).record(c);
    }
}

/// Refuse bitmask rows of `cols` words too narrow for masks `width` tokens wide.
pub(crate) fn check_width(cols: usize, width: usize) -> PyResult<()> {
    if cols.saturating_mul(32) < width {
        return Err(PyValueError::new_err(format!(
            "bitmask rows have {cols} words; vocab_size {width} needs {} (allocate_token_bitmask(batch, {width}))",
            width.div_ceil(32)
        )));
    }
    Ok(())
}

/// The rows of `bitmask` (a 2-D C-contiguous int32 numpy array, or a CPU torch tensor, whose
/// `.numpy()` shares its memory) as `u32` words.
pub(crate) fn bitmask_rows<'py>(bitmask: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyArray2<i32>>, usize, usize)> {
    let module = bitmask.get_type().module().map(|m| m.to_string()).unwrap_or_default();
    let bitmask = &if module.starts_with("torch") {
        let device = bitmask.getattr("device")?.getattr("type")?.extract::<String>()?;
        if device != "cpu" {
            return Err(PyValueError::new_err(format!(
                "bitmask must be a CPU tensor (got device {device:?}); fill it on the CPU, then copy it"
            )));
        }
        bitmask.call_method0("numpy")?
    } else {
        bitmask.clone()
    };
    let arr: Bound<'py, PyArray2<i32>> = match bitmask.extract() {
        Ok(a) => a,
        Err(_) => {
            let ok1 = bitmask.extract::<Bound<'py, PyArray1<i32>>>().is_ok();
            let what = if ok1 {
                "a 1-D array; use shape (batch, words), e.g. allocate_token_bitmask(1, vocab_size)".to_string()
            } else {
                let ty = bitmask.get_type().name().map(|n| n.to_string()).unwrap_or_default();
                let dtype = bitmask.getattr("dtype").map(|d| d.to_string()).unwrap_or_else(|_| "?".into());
                format!("{ty} with dtype {dtype}")
            };
            return Err(PyValueError::new_err(format!("bitmask must be a 2-D numpy int32 array, got {what}")));
        }
    };
    if !arr.is_c_contiguous() {
        return Err(PyValueError::new_err("bitmask must be C-contiguous"));
    }
    let shape = arr.shape();
    Ok((arr.clone(), shape[0], shape[1]))
}

/// `f` on the bitmask's words as `&mut [u32]` (checked writable and aligned), with the GIL
/// released.
///
/// Not through rust-numpy's borrow tracking: servers fill different rows of one bitmask from
/// several threads at once, which its exclusive borrows would refuse. The callers write only
/// the rows they are given; two threads writing the same row is the caller's race on its own
/// array, as with any numpy buffer written without the GIL.
pub(crate) fn with_words<R>(arr: &Bound<'_, PyArray2<i32>>, f: impl FnOnce(&mut [u32]) -> R + Send) -> PyResult<R>
where
    R: Send,
{
    let writeable: bool = arr.getattr("flags")?.getattr("writeable")?.extract()?;
    if !writeable {
        return Err(PyValueError::new_err("bitmask is not writable (a read-only array)"));
    }
    // SAFETY: checked C-contiguous (by the caller) and writeable; the array object stays alive
    // (we hold a reference) while `f` runs.
    let slice = unsafe { arr.as_slice_mut() }.map_err(|_| PyValueError::new_err("bitmask must be C-contiguous"))?;
    if !slice.as_ptr().cast::<u32>().is_aligned() {
        return Err(PyValueError::new_err("bitmask is not aligned for int32"));
    }
    // SAFETY: i32 and u32 have the same size and alignment.
    let words: &mut [u32] = unsafe { std::slice::from_raw_parts_mut(slice.as_mut_ptr().cast(), slice.len()) };
    let py = arr.py();
    Ok(py.detach(move || f(words)))
}

#[pymethods]
impl Matcher {
    /// A matcher at the start of `grammar`. `max_rollback` bounds how many commits `rollback`
    /// can undo (default: all).
    #[new]
    #[pyo3(signature = (grammar, max_rollback = None))]
    fn new(grammar: &Bound<'_, PyAny>, max_rollback: Option<usize>) -> PyResult<Matcher> {
        // (The package's `dwac.Grammar` wraps the native one as `_g`.)
        let native = match grammar.extract::<PyRef<'_, Grammar>>() {
            Ok(g) => g,
            Err(_) => grammar
                .getattr("_g")
                .and_then(|g| g.extract::<PyRef<'_, Grammar>>().map_err(Into::into))
                .map_err(|_| PyValueError::new_err("Matcher(grammar): grammar must be a dwac.Grammar"))?,
        };
        let engine = Arc::clone(&native.engine);
        let inner = match max_rollback {
            Some(n) => RMatcher::with_max_rollback(engine, n),
            None => RMatcher::new(engine),
        };
        Ok(Matcher::wrap(inner, native.width))
    }

    /// Write the allowed next tokens into row `index` of `bitmask` (int32, shape `[batch,
    /// words]`, `words >= ceil(vocab_size / 32)`; bit `v % 32` of word `v / 32` set iff token
    /// `v` is allowed; bits past the vocabulary cleared). Releases the GIL. What the fill did
    /// is added to `counters()`.
    #[pyo3(signature = (bitmask, index = 0))]
    fn fill_next_token_bitmask(&self, bitmask: &Bound<'_, PyAny>, index: usize) -> PyResult<()> {
        let (arr, rows, cols) = bitmask_rows(bitmask)?;
        if index >= rows {
            return Err(PyValueError::new_err(format!("index {index} is out of range for a bitmask of {rows} rows")));
        }
        check_width(cols, self.width)?;
        let m = &self.inner;
        let c = with_words(&arr, |w| m.fill_mask(&mut w[index * cols..(index + 1) * cols]))?.map_err(mask_err)?;
        self.record(c);
        Ok(())
    }

    /// What this matcher's mask fills did: the last fill's `undecided` (UNDECIDED tokens it
    /// decided by committing them), `fallbacks` (1 if the whole mask was the reference mask)
    /// and `reads` (Parser DWA reads); and over the matcher's life (every fill path:
    /// `fill_next_token_bitmask`, `fill_next_token_bitmask_batch`), `masks` filled,
    /// `undecided_total`, `fallbacks_total` and `masks_with_undecided`. `reset` keeps them; a
    /// `fork` starts from zero.
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = *self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let d = PyDict::new(py);
        d.set_item("undecided", c.last.undecided)?;
        d.set_item("fallbacks", c.last.fallbacks)?;
        d.set_item("reads", c.last.reads)?;
        d.set_item("masks", c.masks)?;
        d.set_item("undecided_total", c.undecided_total)?;
        d.set_item("fallbacks_total", c.fallbacks_total)?;
        d.set_item("masks_with_undecided", c.masks_with_undecided)?;
        Ok(d)
    }

    /// Commit `token`; `False` (and no change) if the grammar refuses it.
    fn accept_token(&mut self, token: u32) -> bool {
        self.inner.commit(token).is_ok()
    }

    /// Commit `token`, raising `DwacError` with the reason if the grammar refuses it.
    fn commit(&mut self, token: u32) -> PyResult<()> {
        self.inner.commit(token).map_err(|e| err(e.to_string()))
    }

    /// Commit tokens in turn up to the first refused one; returns how many were committed.
    fn accept_tokens(&mut self, tokens: Vec<u32>) -> usize {
        match self.inner.commit_tokens(&tokens) {
            Ok(()) => tokens.len(),
            Err(e) => e.accepted,
        }
    }

    /// Commit raw bytes (e.g. a forced prefix), raising `DwacError` if refused.
    fn accept_bytes(&mut self, data: &[u8]) -> PyResult<()> {
        self.inner.commit_bytes(data).map_err(|e| err(e.to_string()))
    }

    /// The length of the longest prefix of `tokens` that could be committed in turn, without
    /// changing the matcher (speculative decoding).
    fn validate_tokens(&self, tokens: Vec<u32>) -> usize {
        self.inner.validate_tokens(&tokens)
    }

    /// Undo the last `n` commits (`DwacError` if fewer can be undone).
    #[pyo3(signature = (n = 1))]
    fn rollback(&mut self, n: usize) -> PyResult<()> {
        self.inner.rollback(n).map_err(|e| err(e.to_string()))
    }

    /// Back to the start of the grammar.
    fn reset(&mut self) {
        self.inner.reset()
    }

    /// An independent copy (O(1)) for beam search or speculation; its `counters()` start from
    /// zero.
    fn fork(&self) -> Matcher {
        Matcher::wrap(self.inner.clone(), self.width)
    }

    /// Has an end token been committed (the output is complete; nothing more is allowed)?
    fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }

    /// May the output end here (an end token is allowed)?
    fn is_accepting(&self) -> bool {
        self.inner.is_accepting()
    }

    /// The tokens the grammar forces from here (at most `limit`), for jump-forward decoding.
    #[pyo3(signature = (limit = 64))]
    fn forced_tokens(&self, py: Python<'_>, limit: usize) -> PyResult<Vec<u32>> {
        let m = &self.inner;
        py.detach(|| m.forced_tokens(limit)).map_err(|e| err(e.to_string()))
    }

    /// The bytes every continuation starts with (at most `limit`).
    #[pyo3(signature = (limit = 256))]
    fn forced_bytes<'py>(&self, py: Python<'py>, limit: usize) -> PyResult<Bound<'py, PyBytes>> {
        let m = &self.inner;
        let b = py.detach(|| m.forced_bytes(limit)).map_err(|e| err(e.to_string()))?;
        Ok(PyBytes::new(py, &b))
    }

    /// Allowed next token ids as a list (slow; for tests and debugging).
    fn allowed_tokens(&self) -> Vec<u32> {
        self.inner.allowed()
    }

    fn __repr__(&self) -> String {
        format!(
            "Matcher(position={}, accepting={}, terminated={})",
            self.inner.position(),
            self.inner.is_accepting(),
            self.inner.is_terminated()
        )
    }
}
