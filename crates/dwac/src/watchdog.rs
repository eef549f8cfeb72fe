//! The compile budget: a watchdog thread that gives up past `--max-seconds` or
//! `--max-memory-mb` (exit 2 with a message naming the input).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Ends the process with a clear error when the compilation overruns its time or memory budget
/// (instead of an OOM kill), until dropped.
pub(crate) struct Watchdog {
    pub(crate) done: Arc<AtomicBool>,
}

impl Watchdog {
    /// `bar`, if given, is the lexer-state progress of the Parser DWA build: the error then says
    /// how far the build got and how many lexer states it has, what grows with the grammar.
    pub(crate) fn start(
        what: String,
        max_seconds: f64,
        max_memory_mb: u64,
        bar: Option<indicatif::ProgressBar>,
    ) -> Watchdog {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let t0 = Instant::now();
        let whence = move || match bar.as_ref().and_then(|b| b.length().map(|n| (b.position(), n))) {
            Some((at, n)) if n > 0 => format!(
                " while building the Parser DWA, at lexer state {at} of {n} (the DWA is built per \
                 lexer state: a schema with many keys, enums or long strings has many)"
            ),
            _ => String::new(),
        };
        std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                if flag.load(Ordering::Relaxed) {
                    return;
                }
                if t0.elapsed().as_secs_f64() > max_seconds {
                    eprintln!(
                        "error: {what}: compilation exceeded its time budget of {max_seconds} s (--max-seconds){}",
                        whence()
                    );
                    std::process::exit(2);
                }
                if dwac_measure::current_rss_mb().is_some_and(|m| m > max_memory_mb as f64) {
                    eprintln!(
                        "error: {what}: compilation exceeded its memory budget of {max_memory_mb} MiB (--max-memory-mb){}",
                        whence()
                    );
                    std::process::exit(2);
                }
            }
        });
        Watchdog { done }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
    }
}
