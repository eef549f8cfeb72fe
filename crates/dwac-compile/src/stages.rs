//! Wall-time laps of a compile's stages (`CompileStats::stages_ms`, `MaskStats::stages_ms`),
//! shared by the pipeline and the Parser DWA build.

use std::time::Instant;

/// Wall-time laps of a compile's stages.
pub(crate) struct Stages {
    last: Instant,
    pub(crate) done: Vec<(&'static str, f64)>,
}

impl Stages {
    pub(crate) fn new() -> Self {
        Stages { last: Instant::now(), done: Vec::new() }
    }

    /// Close the stage `name` (the time since the previous lap), adding to an earlier lap of the
    /// same name.
    pub(crate) fn lap(&mut self, name: &'static str) {
        let now = Instant::now();
        self.add(name, now - self.last);
        self.last = now;
    }

    /// Add `d` to stage `name` without closing a lap.
    pub(crate) fn add(&mut self, name: &'static str, d: std::time::Duration) {
        let ms = d.as_secs_f64() * 1e3;
        match self.done.iter_mut().find(|(n, _)| *n == name) {
            Some((_, t)) => *t += ms,
            None => self.done.push((name, ms)),
        }
    }

    /// Restart the clock without recording (time that belongs to no stage).
    pub(crate) fn skip(&mut self) {
        self.last = Instant::now();
    }
}
