//! The measurements dwac's tools report, in one place: the CLI (`dwac compile`'s `peak_rss_mb`
//! and its memory budget, `dwac bench`'s latency percentiles), dwac-bench's worker and
//! reports, and the benchmark peers (`bench/peers/*`, separate workspaces that depend on this
//! crate by path), so every engine in a benchmark is measured the same way.
//!
//! Memory readings come from `/proc/self/status` and are `None` where there is none.

#![deny(missing_docs)]

pub mod accounts;

/// Peak resident memory of this process (`VmHWM`), MiB: since the start, or since the last
/// [`reset_peak_rss`].
pub fn peak_rss_mb() -> Option<f64> {
    status_mb("VmHWM:")
}

/// Resident memory of this process now (`VmRSS`), MiB.
pub fn current_rss_mb() -> Option<f64> {
    status_mb("VmRSS:")
}

/// Reset this process's peak RSS to its current RSS (`5` into `/proc/self/clear_refs`), so that
/// the next [`peak_rss_mb`] is one job's peak; a no-op where there is no such file.
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// A `kB` line of `/proc/self/status`, in MiB.
fn status_mb(field: &str) -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// CPU time (user + system) of the whole process so far, every thread's, ms; NaN where it
/// cannot be read.
#[cfg(unix)]
pub fn process_cpu_ms() -> f64 {
    // SAFETY: `getrusage` only writes the `rusage` it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return f64::NAN;
    }
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1e3 + t.tv_usec as f64 / 1e3;
    ms(ru.ru_utime) + ms(ru.ru_stime)
}

/// CPU time of the process: not measured on this platform (NaN).
#[cfg(not(unix))]
pub fn process_cpu_ms() -> f64 {
    f64::NAN
}

/// Percentile `p` (0..=1) of an ascending-sorted slice, by nearest rank (the element at
/// `round((n - 1) * p)`); `None` for an empty slice.
pub fn pct(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let i = ((sorted.len() as f64 - 1.0) * p.clamp(0.0, 1.0)).round() as usize;
    Some(sorted[i])
}

/// The latency summary the tools print: p50, p90, p99, p99.9, max and mean.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// The median.
    pub p50: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// The 99.9th percentile.
    pub p999: f64,
    /// The largest value.
    pub max: f64,
    /// The arithmetic mean.
    pub mean: f64,
}

impl Summary {
    /// The summary of `v` (any order); `None` if it is empty.
    pub fn of(mut v: Vec<f64>) -> Option<Summary> {
        v.sort_by(f64::total_cmp);
        let q = |p: f64| pct(&v, p);
        Some(Summary {
            p50: q(0.5)?,
            p90: q(0.9)?,
            p99: q(0.99)?,
            p999: q(0.999)?,
            max: q(1.0)?,
            mean: v.iter().sum::<f64>() / v.len() as f64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_ranks() {
        let v: Vec<f64> = (1..=1000).map(f64::from).collect();
        assert_eq!(pct(&v, 0.5), Some(501.0)); // round(999 * 0.5) = 500 (rounds half away from zero)
        assert_eq!(pct(&v, 0.0), Some(1.0));
        assert_eq!(pct(&v, 1.0), Some(1000.0));
        assert_eq!(pct(&v, 0.999), Some(999.0));
        assert_eq!(pct(&[], 0.5), None);
        let mut shuffled = v.clone();
        shuffled.reverse();
        let s = Summary::of(shuffled).unwrap();
        assert_eq!((s.p50, s.p90, s.p99, s.p999, s.max), (501.0, 900.0, 990.0, 999.0, 1000.0));
        assert_eq!(s.mean, 500.5);
        assert_eq!(Summary::of(Vec::new()), None);
    }

    #[test]
    fn memory_readings_see_an_allocation() {
        if std::fs::metadata("/proc/self/status").is_err() {
            return; // (no procfs: nothing to read)
        }
        reset_peak_rss();
        let before = peak_rss_mb().unwrap();
        let block = vec![1u8; 64 << 20];
        let now = current_rss_mb().unwrap();
        let peak = peak_rss_mb().unwrap();
        assert!(block.iter().step_by(4096).all(|&b| b == 1));
        assert!(now >= before + 60.0, "RSS {now} MiB after touching 64 MiB (peak before {before})");
        assert!(peak >= now, "peak {peak} below current {now}");
        assert!(process_cpu_ms() > 0.0);
    }
}
