//! Per-terminal stack effects (docs/CONSTRUCTION.md "The Parser DWA", step 2), run symbolically.
//!
//! A simulation runs the LR table for one terminal `t` on a stack it knows only partly: a
//! *known segment* `k` (LR states, bottom first) above the real stack, which is read top-down
//! only when needed. Reductions pop the known segment first; when it is used up the simulation
//! *waits*:
//!
//! * [`Wait::Peek`]: it needs the top real state to look up ACTION;
//! * [`Wait::Pop`]: it must discard `j` real states (their identity is irrelevant: a DEFAULT
//!   read) and then read the revealed one, the GOTO source of nonterminal `a`.
//!
//! Reading a real state moves it into the known segment (a peek keeps it on the stack). This is
//! a template (docs/CONSTRUCTION.md "The Parser DWA", step 2) with its push/pop cancellation done by construction: a known
//! segment holds exactly the pushes not yet cancelled by later pops. Every reduction pops at least
//! one symbol (the grammar is ε-free), so a segment never grows by reductions alone.

use dwac_runtime::unstable::{Action, LrTables, DEAD};

/// What a simulation that has used up its known segment needs from the real stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Wait {
    /// The top real state (to look up ACTION).
    Peek,
    /// Discard `j` real states, then read the revealed one as the GOTO source of `a`.
    Pop {
        /// Real states to discard before the read.
        j: u32,
        /// The nonterminal whose GOTO the revealed state is read for.
        a: u32,
    },
}

/// The outcomes of running one terminal's reductions on a known segment.
#[derive(Default, Debug)]
pub struct Outcome {
    /// Stacks (known segments) after shifting the terminal.
    pub shifted: Vec<Vec<u32>>,
    /// The terminal can be shifted (or, for `$`, accepted).
    pub success: bool,
    /// Reduction paths waiting for the real stack.
    pub waiting: Vec<Wait>,
}

/// The result of reading one real state (or an unknown one: DEFAULT) for a waiting simulation.
pub enum Read {
    /// Still waiting, as this [`Wait`] (a pop with real states left to discard).
    Wait(Wait),
    /// Continue from this known segment (its bottom is the state read).
    Run(Vec<u32>),
    /// The state read is the top: look up ACTION on it ([`Lr::run_peek`]).
    Peek(u32),
    /// The simulation dies: the state read has no GOTO on the nonterminal, or no explicit label
    /// covers it.
    Dead,
}

/// The LR tables with the label sets that matter to waiting simulations.
pub struct Lr<'a> {
    /// The LR tables the simulations run.
    pub tables: &'a LrTables,
    /// Per terminal, the states with an action on it; per nonterminal, the states with a GOTO
    /// on it (ascending): the tables inverted in one pass over them, on first use.
    action_labels: Option<Inverted>,
    goto_labels: Option<Inverted>,
    /// Set when a simulation looks up ACTION or GOTO on the bottom of a known segment (the state a
    /// read put there) other than in that read's own first lookup: the outcome then depends on
    /// which state was read, not only on that first lookup's result.
    pub bottom_touched: std::cell::Cell<bool>,
}

impl<'a> Lr<'a> {
    /// The simulator of `tables`, its label sets not yet inverted.
    pub fn new(tables: &'a LrTables) -> Lr<'a> {
        Lr { tables, action_labels: None, goto_labels: None, bottom_touched: Default::default() }
    }

    /// Run terminal `t` (or `$`) from known segment `k`, adding to `out`.
    pub fn run(&self, t: u32, k: Vec<u32>, out: &mut Outcome) {
        let lr = self.tables;
        let mut work = vec![k];
        let mut seen: Vec<Vec<u32>> = Vec::new();
        while let Some(k) = work.pop() {
            let Some(&top) = k.last() else {
                push_unique(&mut out.waiting, Wait::Peek);
                continue;
            };
            if k.len() == 1 {
                self.bottom_touched.set(true);
            }
            for &a in lr.actions(top, t) {
                match Action::unpack(a) {
                    Action::Shift(p) => {
                        let mut k2 = k.clone();
                        k2.push(p);
                        out.success = true;
                        if !out.shifted.contains(&k2) {
                            out.shifted.push(k2);
                        }
                    }
                    Action::Accept => out.success = true,
                    Action::Reduce(r) => {
                        let (Some(&m), Some(&lhs)) = (lr.rule_len.get(r as usize), lr.rule_lhs.get(r as usize)) else {
                            continue;
                        };
                        let m = m as usize;
                        if m < k.len() {
                            let mut k2 = k[..k.len() - m].to_vec();
                            if k2.len() == 1 {
                                self.bottom_touched.set(true);
                            }
                            let g = lr.goto(*k2.last().unwrap_or(&0), lhs);
                            if g == DEAD {
                                continue;
                            }
                            k2.push(g);
                            if !seen.contains(&k2) {
                                seen.push(k2.clone());
                                work.push(k2);
                            }
                        } else {
                            push_unique(&mut out.waiting, Wait::Pop { j: (m - k.len()) as u32, a: lhs });
                        }
                    }
                }
            }
        }
    }

    /// Run terminal `t` from the real state `p` just read as the top: its ACTION row, then shifts
    /// on top of `p` and pops past it. Only this first lookup uses `p` (it does not count as
    /// touching the bottom).
    pub fn run_peek(&self, t: u32, p: u32, out: &mut Outcome) {
        let lr = self.tables;
        for &a in lr.actions(p, t) {
            match Action::unpack(a) {
                Action::Shift(s) => {
                    out.success = true;
                    let k2 = vec![p, s];
                    if !out.shifted.contains(&k2) {
                        out.shifted.push(k2);
                    }
                }
                Action::Accept => out.success = true,
                Action::Reduce(r) => {
                    let (Some(&m), Some(&lhs)) = (lr.rule_len.get(r as usize), lr.rule_lhs.get(r as usize)) else {
                        continue;
                    };
                    // The known segment is [p]: pop it and m − 1 more, then read the revealed state.
                    push_unique(&mut out.waiting, Wait::Pop { j: m.saturating_sub(1), a: lhs });
                }
            }
        }
    }

    /// What a read of `p` tells waiting simulation `w` of terminal `t` before anything else runs:
    /// the ACTION row of `p` for a peek, the GOTO target for a revealed state; nothing for a pop.
    pub fn first_use(&self, t: u32, w: Wait, p: u32, out: &mut Vec<u32>) {
        match w {
            Wait::Peek => {
                out.push(u32::MAX);
                out.extend_from_slice(self.tables.actions(p, t));
            }
            Wait::Pop { j: 0, a } => {
                out.push(u32::MAX - 1);
                out.push(self.tables.goto(p, a));
            }
            Wait::Pop { .. } => {}
        }
    }

    /// Read real state `label` (`None`: a state no explicit label covers) for a waiting simulation.
    pub fn read(&self, w: Wait, label: Option<u32>) -> Read {
        match (w, label) {
            (Wait::Peek, Some(p)) => Read::Peek(p),
            (Wait::Peek, None) => Read::Dead,
            (Wait::Pop { j: 0, a }, Some(p)) => match self.tables.goto(p, a) {
                DEAD => Read::Dead,
                g => Read::Run(vec![p, g]),
            },
            (Wait::Pop { j: 0, .. }, None) => Read::Dead,
            (Wait::Pop { j, a }, _) => Read::Wait(Wait::Pop { j: j - 1, a }),
        }
    }

    /// The real states for which a waiting simulation of `t` does something other than die (its
    /// DEFAULT); empty for a pure pop, whose every read is DEFAULT.
    pub fn labels(&mut self, t: u32, w: Wait) -> &[u32] {
        let lr = self.tables;
        match w {
            Wait::Peek => self
                .action_labels
                .get_or_insert_with(|| {
                    Inverted::of(lr.num_states, |p| {
                        lr.action_terminals(p).iter().copied().filter(|&t| !lr.actions(p, t).is_empty()).collect()
                    })
                })
                .get(t),
            Wait::Pop { j: 0, a } => self
                .goto_labels
                .get_or_insert_with(|| {
                    Inverted::of(lr.num_states, |p| {
                        let (a, b) = (lr.goto_row[p as usize] as usize, lr.goto_row[p as usize + 1] as usize);
                        (a..b).filter(|&e| lr.goto_target[e] != DEAD).map(|e| lr.goto_nt[e]).collect()
                    })
                })
                .get(a),
            Wait::Pop { .. } => &[],
        }
    }
}

/// A table inverted: per symbol, the states whose row names it, ascending.
struct Inverted(Vec<Vec<u32>>);

impl Inverted {
    /// `row(p)`: the symbols state `p`'s row names.
    fn of(states: u32, row: impl Fn(u32) -> Vec<u32>) -> Inverted {
        let mut by_symbol: Vec<Vec<u32>> = Vec::new();
        for p in 0..states {
            for x in row(p) {
                if by_symbol.len() <= x as usize {
                    by_symbol.resize_with(x as usize + 1, Vec::new);
                }
                by_symbol[x as usize].push(p);
            }
        }
        Inverted(by_symbol)
    }

    fn get(&self, x: u32) -> &[u32] {
        self.0.get(x as usize).map_or(&[], |v| v)
    }
}

fn push_unique<T: PartialEq>(v: &mut Vec<T>, x: T) {
    if !v.contains(&x) {
        v.push(x);
    }
}
