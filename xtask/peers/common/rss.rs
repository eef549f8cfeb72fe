//! Shared by xtask's bench worker and the Rust peers' bench crates (each its own workspace, so
//! included by path rather than depended on): a job's peak resident memory.

/// Reset this process's peak RSS (VmHWM), so that the next reading is one job's peak (`5` into
/// `/proc/self/clear_refs`; a no-op where there is no such file).
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Peak resident memory of this process since the last reset (VmHWM of `/proc/self/status`),
/// MiB; `None` where there is no such file.
pub fn peak_rss_mb() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
