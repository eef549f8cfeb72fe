//! The plan of a lexer state's build ([`Determinizer::plan`]): the trie of its lexings, the
//! interned plan below each node, and which classes lie below each node and end there.

use super::{Determinizer, FastMap};
use crate::dwa::compose::{Plan, Step, NO_PLAN};
use crate::dwa::set_pool::SetPool;
use crate::dwa::terminal_dwa::TokenClass;

impl Determinizer<'_> {
    /// The lexing trie of a lexer state with these classes (`Plan`: children in step order,
    /// ends in class order, the interned plan below each node), and, as class sets in `sets`,
    /// which classes lie below each node and at each end.
    pub(super) fn plan(
        &mut self,
        classes: &[TokenClass],
        nodes: &[(u32, Step)],
        thread: u32,
        sets: &mut SetPool,
    ) -> (Plan, FastMap<u32, u32>, FastMap<u32, u32>) {
        // The lexing trie of this state, and which classes lie below each node / end there.
        let mut plan = Plan { thread, ..Plan::default() };
        // The nodes of the plan, by local index in the order met, with the classes below each
        // (in class order: a class is pushed once on each node above its lexings, the walk up
        // stopping at the first node that has it already), their children (in the order met)
        // and the lexings that end there.
        if self.plan_local.len() < nodes.len() {
            self.plan_local.resize(nodes.len(), u32::MAX);
        }
        let local = &mut self.plan_local;
        let mut node_of: Vec<u32> = Vec::new();
        let mut below: Vec<Vec<u32>> = Vec::new();
        let mut children: Vec<Vec<u32>> = Vec::new();
        let mut ends: Vec<Vec<(u32, u32)>> = Vec::new();
        let mut at_end: FastMap<u32, Vec<u32>> = FastMap::default();
        for (ci, cls) in classes.iter().enumerate() {
            let ci = ci as u32;
            for &(node, la) in &cls.sigs {
                let e = self.comp.end(node, la);
                at_end.entry(e).or_default().push(ci);
                let mut n = node;
                // (A node met for the first time, to be listed as a child of the next one up.)
                let mut child: Option<u32> = None;
                loop {
                    let mut l = local[n as usize];
                    let new = l == u32::MAX;
                    if new {
                        l = node_of.len() as u32;
                        local[n as usize] = l;
                        node_of.push(n);
                        below.push(Vec::new());
                        children.push(Vec::new());
                        ends.push(Vec::new());
                    }
                    let l = l as usize;
                    if n == node && child.is_none() && ends[l].last() != Some(&(e, la)) {
                        ends[l].push((e, la));
                    }
                    if let Some(c) = child.take() {
                        children[l].push(c);
                    }
                    if below[l].last() == Some(&ci) {
                        break;
                    }
                    below[l].push(ci);
                    if n == 0 {
                        break;
                    }
                    if new {
                        child = Some(n);
                    }
                    n = nodes[n as usize].0;
                }
            }
        }
        // (Children in step order and ends in class order: the canonical order of
        // `Plan::below`, in which nodes with the same plan below them correspond.)
        let mut sorted: Vec<Vec<(u32, Step)>> = Vec::with_capacity(node_of.len());
        for cs in &children {
            let mut cs: Vec<(u32, Step)> = cs.iter().map(|&c| (c, nodes[c as usize].1)).collect();
            cs.sort_unstable_by_key(|&(_, step)| step);
            sorted.push(cs);
        }
        for es in &mut ends {
            // (A node's ends have distinct classes: one end per (node, class).)
            es.sort_unstable_by_key(|&(_, la)| la);
            es.dedup();
        }
        // The plans below nodes, children first (a child's id is larger than its parent's).
        let mut in_plan: Vec<(u32, u32)> = (0..node_of.len())
            .filter(|&l| !sorted[l].is_empty() || !ends[l].is_empty())
            .map(|l| (node_of[l], l as u32))
            .collect();
        in_plan.sort_unstable_by(|a, b| b.cmp(a));
        let mut below_id = vec![NO_PLAN; node_of.len()];
        let mut key: Vec<u32> = Vec::new();
        for &(n, l) in &in_plan {
            let l = l as usize;
            key.clear();
            key.push(ends[l].len() as u32);
            key.extend(ends[l].iter().map(|&(_, la)| la));
            for &(c, step) in &sorted[l] {
                let (kind, terms, guard) = match step {
                    Step::Shift { terms, guard } => (0, terms, guard),
                    Step::Pass { guard } => (1, 0, guard),
                };
                key.extend([kind, terms, guard, below_id[local[c as usize] as usize]]);
            }
            key.push(if n == 0 { thread } else { u32::MAX });
            let id = match self.sub_plans.get(&key[..]) {
                Some(&id) => id,
                None => {
                    let id = self.sub_plans.len() as u32 + 1;
                    self.sub_plans.insert(key.clone(), id);
                    id
                }
            };
            below_id[l] = id;
        }
        for &n in &node_of {
            local[n as usize] = u32::MAX;
        }
        plan.below.reserve(in_plan.len());
        plan.below.extend(in_plan.iter().map(|&(n, l)| (n, below_id[l as usize])));
        plan.children.reserve(in_plan.len());
        plan.ends.reserve(in_plan.len());
        for (l, (cs, es)) in sorted.into_iter().zip(ends).enumerate() {
            if !cs.is_empty() {
                plan.children.insert(node_of[l], cs);
            }
            if !es.is_empty() {
                plan.ends.insert(node_of[l], es);
            }
        }
        let below: FastMap<u32, u32> = node_of.into_iter().zip(below).map(|(n, v)| (n, sets.intern(v))).collect();
        let at_end: FastMap<u32, u32> = at_end.into_iter().map(|(e, v)| (e, sets.intern(v))).collect();
        (plan, below, at_end)
    }
}
