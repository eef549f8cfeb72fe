//! A deterministic race between the two constructions of one lexer state's automaton: the
//! forward build on the driving thread and the saturation beside it (`assemble/later.rs`;
//! docs/CONSTRUCTION.md, "The Parser DWA", step 4).
//!
//! Either automaton is exact; the race keeps the one that is cheaper to build. Cheaper is
//! measured in *ticks*, a count of each side's own steps weighted by what they cost (a tick is
//! about 5 ns on the machine the weights were fitted on: Lua's and regex's lexer states under
//! qwen3 and phi-3), never in time: the winner is a function of the lexer state and of what was
//! memoized before it, so the tables are the same whichever thread the scheduler favours. Each
//! side publishes its total when it succeeds, and stops once its own count passes the other's
//! published total (it would lose); a side that fails (over its budget) publishes nothing, so
//! the other runs to its end. The forward build wins ties. The forward build, restarted after a
//! first try, is also capped: past [`RESTART_CAP`] times the ticks of that try, it fails.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};

/// Ticks per expansion of the forward build ([`super::compose::Composer::work`]): an expansion
/// continues a set of lexings through one LR simulation (~0.4 µs).
pub const FORWARD_EXPANSION: u64 = 76;

/// Ticks per configuration read in a forward DWA state (a memoized read, a set union: ~0.13 µs).
/// A build can fit its work budget with tens of thousands of states, all reads.
pub const FORWARD_READ: u64 = 27;

/// Ticks per control state of the saturation's pushdown system (its rules made: ~0.4 µs).
pub const SATURATION_CONTROL: u64 = 75;

/// Ticks per transition addition or visit of the saturation and its subset construction, plus
/// one per word of the label set it reads.
pub const SATURATION_EDGE: u64 = 4;

/// Ticks per work item of the saturation (a transition whose label set grew: its control
/// state's rules and waiting rules read, ~0.12 µs of scattered reads), and per derived rule
/// that gains states (a lookup and the reading of a row). Uncounted, the saturation's ticks
/// fell far behind its time once rules were made only for possible tops (regex's saturation
/// under phi-3's vocabulary: 2.3M ticks in 56 ms), and a lost race ran on long after the
/// forward build had won.
pub const SATURATION_POP: u64 = 24;

/// Ticks per transition followed backwards by the subset construction's reach fixpoint, plus
/// one per four words of its class sets (whole-word ORs, cheap per word).
pub const SATURATION_REACH: u64 = 2;

/// Ticks per control state a subset's successor filters, plus one per sixteen words of its
/// class set.
pub const SATURATION_TARGET: u64 = 2;

/// How many times the ticks its first try spent a restarted forward build may spend
/// ([`Race::capped`]), as a fraction: 3/2. The restart reads what the first try memoized, so a
/// build that fits needs no more than that again. Measured on the collection's character-level
/// grammars under qwen3, qwen2, deepseek-r1, gpt2 and phi-3.5: every restart that fitted its
/// budget spent 0.48–0.99 times the first try's ticks; every other one (Lua's) failed its
/// budget at 3.7–5.4 times, or lost to the saturation, some of them only past 1.9 times.
pub const RESTART_CAP: (u64, u64) = (3, 2);

/// The two totals, `u64::MAX` until a side succeeds, and the forward build's cap.
#[derive(Debug)]
pub struct Race {
    forward: AtomicU64,
    saturation: AtomicU64,
    cap: u64,
    /// Is the forward build over (succeeded, failed, or stopped)?
    over: Mutex<bool>,
    over_cv: Condvar,
}

impl Default for Race {
    fn default() -> Race {
        Race {
            forward: AtomicU64::new(u64::MAX),
            saturation: AtomicU64::new(u64::MAX),
            cap: u64::MAX,
            over: Mutex::new(false),
            over_cv: Condvar::new(),
        }
    }
}

impl Race {
    /// A race in which the forward build, restarted after a first try that spent `first`
    /// ticks, fails once past [`RESTART_CAP`] times that.
    pub fn capped(first: u64) -> Race {
        let (num, den) = RESTART_CAP;
        Race { cap: first.saturating_mul(num) / den, ..Race::default() }
    }

    /// Is the forward build, `ticks` in, past its cap ([`Race::capped`])? It fails there.
    pub fn forward_capped(&self, ticks: u64) -> bool {
        ticks > self.cap
    }

    /// The forward build succeeded after `ticks`.
    pub fn forward_done(&self, ticks: u64) {
        self.forward.store(ticks, Ordering::Relaxed);
    }

    /// The forward build is over, after [`Race::forward_done`] if it succeeded.
    pub fn forward_over(&self) {
        *self.over.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.over_cv.notify_all();
    }

    /// Wait until the forward build is over; did it succeed?
    pub fn wait_forward_over(&self) -> bool {
        let mut over = self.over.lock().unwrap_or_else(|e| e.into_inner());
        while !*over {
            over = self.over_cv.wait(over).unwrap_or_else(|e| e.into_inner());
        }
        self.forward.load(Ordering::Relaxed) != u64::MAX
    }

    /// The saturation succeeded after `ticks`.
    pub fn saturation_done(&self, ticks: u64) {
        self.saturation.store(ticks, Ordering::Relaxed);
    }

    /// Has the forward build, `ticks` in, lost (the saturation succeeded in fewer), or is it
    /// past its cap? Either way it stops.
    pub fn forward_lost(&self, ticks: u64) -> bool {
        self.forward_capped(ticks) || ticks > self.saturation.load(Ordering::Relaxed)
    }

    /// Has the saturation, `ticks` in, lost (the forward build succeeded in as many or fewer)?
    pub fn saturation_lost(&self, ticks: u64) -> bool {
        ticks >= self.forward.load(Ordering::Relaxed)
    }

    /// The winner once both sides are done, given which succeeded and their ticks: is it the
    /// saturation?
    pub fn saturation_wins(forward: Option<u64>, saturation: Option<u64>) -> bool {
        match (forward, saturation) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(f), Some(s)) => s < f,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Race;

    #[test]
    fn the_cheaper_side_wins_and_the_forward_build_wins_ties() {
        assert!(Race::saturation_wins(Some(10), Some(9)));
        assert!(!Race::saturation_wins(Some(10), Some(10)));
        assert!(!Race::saturation_wins(Some(10), None));
        assert!(Race::saturation_wins(None, Some(1_000)));
        assert!(!Race::saturation_wins(None, None));
        let race = Race::default();
        assert!(!race.forward_lost(u64::MAX - 1) && !race.saturation_lost(u64::MAX - 1));
        race.saturation_done(100);
        assert!(race.forward_lost(101) && !race.forward_lost(100));
        race.forward_done(50);
        assert!(race.saturation_lost(50) && !race.saturation_lost(49));
        // A restart capped at 3/2 of its first try's 1,000 ticks fails past 1,500.
        let capped = Race::capped(1_000);
        assert!(!capped.forward_lost(1_500) && capped.forward_lost(1_501) && capped.forward_capped(1_501));
        assert!(!Race::default().forward_capped(u64::MAX - 1));
        capped.forward_over();
        assert!(!capped.wait_forward_over());
        race.forward_over();
        assert!(race.wait_forward_over());
    }
}
