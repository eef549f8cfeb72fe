//! The benchmark hook `dwac._dwac._time_trace`, only in builds with the feature `bench` (the
//! venvs of `cargo dwac-bench py-bench` and `e2e`, and CI's build, whose tests cover it); the
//! package as maturin builds it by default has no such function.

use pyo3::prelude::*;

use crate::mask_err;
use crate::matcher::Matcher;

/// Benchmark hook (`cargo dwac-bench py-bench`): replay `tokens` on `matcher`, each step a mask fill
/// into a buffer of its own, then a commit, timed in Rust with no Python between them. Returns
/// (fill ns, commit ns) per step, stopping after a refused token. The matcher advances, and its
/// `counters()` count the fills.
#[pyfunction]
pub(crate) fn _time_trace(
    py: Python<'_>,
    mut matcher: PyRefMut<'_, Matcher>,
    tokens: Vec<u32>,
) -> PyResult<(Vec<u64>, Vec<u64>)> {
    let Matcher { inner: m, counts, .. } = &mut *matcher;
    let counts = counts.get_mut().unwrap_or_else(|p| p.into_inner());
    py.detach(|| {
        let mut buf = vec![0u32; m.mask_words()];
        let (mut fill, mut commit) = (Vec::with_capacity(tokens.len()), Vec::with_capacity(tokens.len()));
        for t in tokens {
            let t0 = std::time::Instant::now();
            let c = m.fill_mask(&mut buf).map_err(mask_err)?;
            let t1 = std::time::Instant::now();
            let ok = m.commit(t).is_ok();
            let t2 = std::time::Instant::now();
            counts.record(c);
            fill.push((t1 - t0).as_nanos() as u64);
            commit.push((t2 - t1).as_nanos() as u64);
            if !ok {
                break;
            }
        }
        Ok((fill, commit))
    })
}
