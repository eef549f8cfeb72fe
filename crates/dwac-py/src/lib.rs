//! `dwac._dwac`: the Python bindings (PyO3, abi3). The package `dwac` (`python/dwac`) wraps
//! this module; see its docstrings and `python/dwac/_dwac.pyi` for the API.
//!
//! Every call that can fail raises `dwac.DwacError` (a `ValueError`) with the CLI's one-line
//! message; nothing panics into Python (a panic in the runtime would be a bug, and PyO3 turns
//! it into `PanicException`). Compilation, mask filling and batch filling release the GIL.

#[cfg(feature = "bench")]
mod bench_hook;
mod bitmask;
mod budget;
mod compiler;
mod grammar;
mod matcher;
mod tokenizer;

use bitmask::{apply_bitmask_f32, fill_next_token_bitmask_batch};
use grammar::{CompileOptions, Grammar};
use matcher::Matcher;
use tokenizer::Tokenizer;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use dwac_runtime::MaskError;

/// The compiler allocates many small, short-lived values: mimalloc takes markedly fewer
/// instructions per allocation than glibc's malloc (as in the CLI), and every allocation is
/// counted to the account of the compile that makes it, for its memory budget (`budget.rs`).
/// Only Rust's allocations go through it; Python's and numpy's keep their own.
#[global_allocator]
static GLOBAL: dwac_measure::accounts::Counting<mimalloc::MiMalloc> =
    dwac_measure::accounts::Counting(mimalloc::MiMalloc);

pyo3::create_exception!(_dwac, DwacError, PyValueError, "An error from dwac: a bad grammar or schema (with its location), a corrupt or mismatched artifact, a refused token, a bad buffer.");

fn err(msg: impl Into<String>) -> PyErr {
    DwacError::new_err(msg.into())
}

/// A mask that could not be written: a bad buffer is the caller's `ValueError`; a worker thread
/// that panicked is a bug in dwac (`RuntimeError`), never an empty mask.
pub(crate) fn mask_err(e: MaskError) -> PyErr {
    match e {
        MaskError::BufferTooSmall { .. } => PyValueError::new_err(e.to_string()),
        e => PyRuntimeError::new_err(e.to_string()),
    }
}

#[pymodule]
fn _dwac(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // (The compiler's helper threads charge the account of the thread that starts them.)
    dwac_compile::threads::set_context_hooks(dwac_compile::threads::ContextHooks {
        capture: dwac_measure::accounts::current,
        enter: dwac_measure::accounts::set_current,
    });
    m.add("DwacError", m.py().get_type::<DwacError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Tokenizer>()?;
    m.add_class::<Grammar>()?;
    m.add_class::<Matcher>()?;
    m.add_class::<compiler::Compiler>()?;
    m.add_function(wrap_pyfunction!(compiler::tools_structural_tag, m)?)?;
    m.add_function(wrap_pyfunction!(compiler::cache_key, m)?)?;
    m.add_function(wrap_pyfunction!(compiler::check_source, m)?)?;
    m.add_function(wrap_pyfunction!(fill_next_token_bitmask_batch, m)?)?;
    m.add_function(wrap_pyfunction!(apply_bitmask_f32, m)?)?;
    #[cfg(feature = "bench")]
    m.add_function(wrap_pyfunction!(bench_hook::_time_trace, m)?)?;
    Ok(())
}
