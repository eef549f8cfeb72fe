//! Shared by the Rust peers' bench crates (each its own workspace, so included by path rather
//! than depended on): the process's CPU time, for `compile_cpu_ms`.

/// CPU time (user + system) of the whole process so far, ms (every thread's).
pub fn process_cpu_ms() -> f64 {
    // SAFETY: `getrusage` only writes the `rusage` it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return f64::NAN;
    }
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1e3 + t.tv_usec as f64 / 1e3;
    ms(ru.ru_utime) + ms(ru.ru_stime)
}
