//! The LR states that can be on top of the stack where a rule of the saturation's pushdown
//! system applies ([`from_root`]): rules are made for those only (`System::terminal_rules`).
//!
//! The root is entered with any stack. `Node(c)` is entered only by a shift into `c`, so with
//! one of the states its step shifts to on top; a step or a lookahead check by its node's
//! continuation (the node's top, the same stack) or by the GOTO rule of a reduction it entered,
//! which pushes a GOTO state. By induction on a run, every configuration reached from the
//! root has its top among its control state's tops: a rule left out applies to no such
//! configuration, and the stacks from which the root reaches each acceptance are the same.

use super::{has, set, Bits, System};
use crate::dwa::compose::Step;
use crate::dwa::set_pool::SetPool;
use crate::dwa::FastMap;

/// Do the two sets meet?
pub(super) fn meets(a: &Bits, b: &Bits) -> bool {
    a.iter().zip(b).any(|(x, y)| x & y != 0)
}

/// Per trie node and per step `(node, terminal)` of the sub-trie (`kids`: children by parent),
/// the states that can be on top when it runs; `None`: any (the root and its steps). `None`
/// altogether if the saturation has lost its race or its compile was asked to stop meanwhile.
#[allow(clippy::type_complexity, reason = "two maps of sets, documented above")]
pub(super) fn from_root(
    sys: &mut System,
    terms: &SetPool,
    nodes: &[(u32, Step)],
    kids: &[(u32, Vec<u32>)],
) -> Option<(FastMap<u32, Option<Vec<u64>>>, FastMap<(u32, u32), Option<Vec<u64>>>)> {
    let by_parent: FastMap<u32, &Vec<u32>> = kids.iter().map(|(p, cs)| (*p, cs)).collect();
    let mut node_top: FastMap<u32, Option<Vec<u64>>> = FastMap::default();
    let mut step_top: FastMap<(u32, u32), Option<Vec<u64>>> = FastMap::default();
    node_top.insert(0, None);
    let mut stack = vec![0u32];
    while let Some(parent) = stack.pop() {
        if sys.lost() {
            return None;
        }
        let Some(cs) = by_parent.get(&parent) else { continue };
        let above = node_top[&parent].clone();
        for &c in cs.iter() {
            let Step::Shift { terms: set, .. } = nodes[c as usize].1 else { continue };
            let mut into = vec![0u64; sys.w];
            for &t in terms.get(set) {
                let top = sys.tops_running(t, false, above.as_deref());
                sys.shifted_to(t, top.as_deref(), &mut into);
                step_top.insert((c, t), top);
            }
            node_top.insert(c, Some(into));
            stack.push(c);
        }
    }
    Some((node_top, step_top))
}

impl System<'_> {
    /// The states that can be on top of the stack while a control state runs terminal `t` (a
    /// lookahead check's if `check`), entered with one of `entry` on top (`None`: any state,
    /// and then any state): `entry`, and what the reductions it enters push, closed under
    /// those. A reduction to `a` is entered from a top that pops by it (`Template::pops`) and
    /// pushes every state of GOTO's rules for `a` (`Template::reveals`), as the rules made by
    /// [`System::terminal_rules`] do.
    pub(super) fn tops_running(&mut self, t: u32, check: bool, entry: Option<&Bits>) -> Option<Vec<u64>> {
        let entry = entry?;
        let tpl = self.template(t, check);
        let mut top = entry.to_vec();
        let mut entered: Vec<u32> = Vec::new();
        loop {
            let mut grew = false;
            for ((a, _), b) in &tpl.pops {
                if entered.contains(a) || !meets(b, &top) {
                    continue;
                }
                entered.push(*a);
                let Some((_, groups)) = tpl.reveals.iter().find(|(r, _)| r == a) else { continue };
                for &(h, _) in groups {
                    if !has(&top, h) {
                        set(&mut top, h);
                        grew = true;
                    }
                }
            }
            if !grew {
                return Some(top);
            }
        }
    }

    /// The states a step running terminal `t` with one of `top` on top (`None`: any) can shift
    /// to, added to `into`.
    fn shifted_to(&mut self, t: u32, top: Option<&Bits>, into: &mut [u64]) {
        let tpl = self.template(t, false);
        for &(p, g) in &tpl.shifts {
            let w = self.w;
            if top.is_none_or(|tp| meets(&self.gsets[g as usize * w..(g as usize + 1) * w], tp)) {
                set(into, p);
            }
        }
    }
}
