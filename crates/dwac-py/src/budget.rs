//! Compile budgets: a request's compile gives up past its time or memory budget with the CLI's
//! clear error, instead of holding a core for minutes or growing until the server is killed.
//!
//! The module's allocator counts every allocation to the account of the thread that makes it
//! (`dwac_measure::accounts`; the compiler's helper threads charge the account of the thread
//! that started them), so each compile's live memory is known apart from the others a server
//! runs at the same time. A monitor thread per compile looks at its clock and its account every
//! few milliseconds and, past a budget, asks the compile to stop (`dwac_compile::threads::Stop`):
//! the compiler looks at the request between lexer states and every few hundred steps within
//! one, and ends with the budget's message, having dropped (freed) everything it built.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dwac_compile::threads::{with_stop, Stop};
use dwac_measure::accounts::Account;

/// How long a request's compile may take and how much memory it may hold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Budget {
    /// Seconds (`None`: no limit).
    pub(crate) max_seconds: Option<f64>,
    /// MiB of live allocation (`None`: no limit).
    pub(crate) max_memory_mb: Option<u64>,
}

/// The defaults for a request compiled while it waits (documented in the package's docstrings
/// and the README): a server's worst case, far above what real schemas and tool lists take
/// (JSONSchemaBench's slowest take seconds and hundreds of MiB).
pub(crate) const DEFAULT: Budget = Budget { max_seconds: Some(10.0), max_memory_mb: Some(2048) };

impl Budget {
    /// A cache key's part: the budget in whole milliseconds and MiB.
    pub(crate) fn key(&self) -> (Option<u64>, Option<u64>) {
        (self.max_seconds.map(|s| (s * 1e3).round() as u64), self.max_memory_mb)
    }

    /// Checked arguments from Python (`None` or positive).
    pub(crate) fn new(max_seconds: Option<f64>, max_memory_mb: Option<u64>) -> Result<Budget, String> {
        if let Some(s) = max_seconds {
            if !(s > 0.0 && s.is_finite()) {
                return Err(format!("max_seconds must be a positive number of seconds or None, not {s}"));
            }
        }
        if max_memory_mb == Some(0) {
            return Err("max_memory_mb must be a positive number of MiB or None, not 0".into());
        }
        Ok(Budget { max_seconds, max_memory_mb })
    }
}

/// How often the monitor looks at the clock and the account.
const TICK: Duration = Duration::from_millis(5);

/// Run `compile` (on this thread) within `budget`: `Err` with the budget's message (naming
/// `what`) if it went past it. Without any limit, `compile` runs as it is.
pub(crate) fn within<T>(budget: Budget, what: &str, compile: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    if budget.max_seconds.is_none() && budget.max_memory_mb.is_none() {
        return compile();
    }
    let stop = Stop::new();
    let account = Account::open().map(Arc::new);
    let done = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let watch = {
        let (stop, account, done, what) = (Arc::clone(&stop), account.clone(), Arc::clone(&done), what.to_string());
        move || {
            while !done.load(Ordering::Acquire) {
                std::thread::park_timeout(TICK);
                if done.load(Ordering::Acquire) {
                    return;
                }
                if let Some(s) = budget.max_seconds.filter(|&s| t0.elapsed().as_secs_f64() > s) {
                    stop.stop(format!("{what}: compilation exceeded its time budget of {s} s (max_seconds)"));
                    return;
                }
                let live_mb = account.as_ref().map_or(0.0, |a| a.live_bytes() as f64 / (1024.0 * 1024.0));
                if let Some(m) = budget.max_memory_mb.filter(|&m| live_mb > m as f64) {
                    stop.stop(format!(
                        "{what}: compilation exceeded its memory budget of {m} MiB (max_memory_mb): {live_mb:.0} MiB \
                         allocated for it"
                    ));
                    return;
                }
            }
        }
    };
    let monitor = std::thread::Builder::new().name("dwac-budget".into()).spawn(watch).ok();
    let result = {
        let _charged = account.as_ref().map(|a| a.enter());
        with_stop(&stop, compile)
    };
    done.store(true, Ordering::Release);
    if let Some(m) = monitor {
        m.thread().unpark();
        let _ = m.join();
    }
    // (A compile that ended on its own past the budget's moment keeps its result; one that was
    // stopped reports the budget, whatever stage it was in.)
    match (result, stop.reason()) {
        (Err(_), Some(why)) => {
            // What the stopped compile built is dropped by now: hand the memory back to the
            // system at once rather than when the allocator gets round to it.
            // SAFETY: `mi_collect` only frees memory no live allocation uses.
            unsafe { libmimalloc_sys::mi_collect(true) };
            Err(why)
        }
        (r, _) => r,
    }
}
