//! Contextual terminal priorities (ARCHITECTURE.md, "The contract"), resolved per stack.
//!
//! Where a lexeme matches terminals of several priorities, a lower-priority terminal is used
//! only on stacks where none of the higher-priority ones can be shifted; equal priorities
//! fork. "Stack" means one path of the GSS: a GSS node stands for every path below it, and
//! those paths may disagree on whether a terminal can be shifted after reductions. The
//! definition is per path because it is the only one that does not depend on how the GSS
//! happened to merge nodes (and the only one a weighted automaton, which takes the union
//! over paths, can reproduce).
//!
//! Most heads are decided by their top LR state alone ([`decide`]): a terminal with no
//! ACTION entry there cannot be shifted on any path, one with a shift entry can be shifted
//! on every path. Only when a higher-priority group is reducible-but-not-shiftable at the
//! top and a lower group could also be used does [`PathResolver`] simulate the LR
//! reductions on explicit paths, extending each path one node at a time until every
//! relevant terminal is decided, and rebuilds the used stacks restricted to those paths.

use crate::gss::{Node, NodeRef};
use crate::tables::{Action, LexerTables, LrTables, DEAD};

/// How a head's stacks resolve the priority groups of one lexeme.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// No group can be shifted on any path from this head.
    Nothing,
    /// Group `i` is the one used on every path where it can be shifted, and no other group is
    /// used on any path: the ordinary GLR closure of group `i`'s terminals is exact.
    Group(usize),
    /// Path-dependent: resolve with [`PathResolver`].
    PerPath,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
    /// No terminal of the group has an ACTION entry at the top state: shiftable on no path.
    None,
    /// Some terminal of the group is ignored or has a shift entry: shiftable on every path.
    All,
    /// Only reductions: shiftable on some paths, maybe.
    Some,
}

fn status(lr: &LrTables, lex: &LexerTables, top: u32, group: &[u32]) -> Status {
    let mut some = false;
    for &t in group {
        if lex.is_ignored(t) {
            return Status::All;
        }
        let acts = lr.actions(top, t);
        if acts.iter().any(|&a| matches!(Action::unpack(a), Action::Shift(_))) {
            return Status::All;
        }
        some |= !acts.is_empty();
    }
    if some {
        Status::Some
    } else {
        Status::None
    }
}

/// Decide a head from its top LR state. `groups` are the lexeme's terminals grouped by
/// priority, highest first.
pub(crate) fn decide(lr: &LrTables, lex: &LexerTables, top: u32, groups: &[Vec<u32>]) -> Decision {
    for (i, g) in groups.iter().enumerate() {
        match status(lr, lex, top, g) {
            Status::None => continue,
            Status::All => return Decision::Group(i),
            Status::Some => {
                let later_none = groups[i + 1..].iter().all(|g2| status(lr, lex, top, g2) == Status::None);
                return if later_none { Decision::Group(i) } else { Decision::PerPath };
            }
        }
    }
    Decision::Nothing
}

/// What one used terminal does on the stacks of one resolved head.
pub(crate) enum Outcome {
    /// Shift `term` to LR state `target` on top of `below`.
    Shift { term: u32, target: u32, below: NodeRef },
    /// The ignored terminal `term` is used: the stacks `head` (restricted to the paths where
    /// it is used) go on unchanged.
    Ignored { term: u32, head: NodeRef },
}

/// One way of shifting a terminal on a path: (state pushed by the last reduction, or `None` if
/// there was no reduction; index into the path of the node below it; shift target).
type PathShift = (Option<u32>, usize, u32);

/// A used terminal on one path prefix: its shifts, or `None` for an ignored terminal.
type Used = (u32, Option<Vec<PathShift>>);

/// The result of simulating one terminal's reductions on one explicit path prefix.
enum Sim {
    /// Every way of shifting the terminal on any stack that starts with this prefix.
    Done(Vec<PathShift>),
    /// A reduction pops below the prefix: extend the path.
    Blocked,
}

/// Scratch space for per-path resolution.
#[derive(Default)]
pub(crate) struct PathResolver {
    paths: Vec<Vec<NodeRef>>,
    work: Vec<(Option<u32>, usize)>,
    seen: Vec<(Option<u32>, usize)>,
    /// Reduction nodes made in one `resolve` call, reused for equal (state, node below).
    made: Vec<(u32, NodeRef, NodeRef)>,
}

impl PathResolver {
    /// Simulate the GLR reductions of `t` on the explicit path prefix `path` (top first).
    fn simulate(&mut self, lr: &LrTables, path: &[NodeRef], t: u32) -> Sim {
        let k = path.len() - 1;
        let at_root = path[k].preds.is_empty();
        self.work.clear();
        self.seen.clear();
        self.work.push((None, 0));
        let mut shifts = Vec::new();
        let mut blocked = false;
        while let Some((over, d)) = self.work.pop() {
            let top = over.unwrap_or(path[d].state);
            for &a in lr.actions(top, t) {
                match Action::unpack(a) {
                    Action::Shift(p) => shifts.push((over, d, p)),
                    Action::Accept => {}
                    Action::Reduce(r) => {
                        let (Some(&m), Some(&lhs)) = (lr.rule_len.get(r as usize), lr.rule_lhs.get(r as usize)) else {
                            continue;
                        };
                        let m = m as usize;
                        // Popping the pushed state reveals path[d]; each further pop goes one node down.
                        let reveal = if over.is_some() { d + m - 1 } else { d + m };
                        if reveal > k {
                            // Below the root there is nothing to pop: this reduction cannot happen.
                            blocked |= !at_root;
                            continue;
                        }
                        let g = lr.goto(path[reveal].state, lhs);
                        if g == DEAD {
                            continue;
                        }
                        let c = (Some(g), reveal);
                        if !self.seen.contains(&c) {
                            self.seen.push(c);
                            self.work.push(c);
                        }
                    }
                }
            }
        }
        if blocked {
            Sim::Blocked
        } else {
            Sim::Done(shifts)
        }
    }

    /// Resolve the priority groups of one lexeme (highest first) on every stack below `head`.
    /// Reduction nodes get level `reduce_level`.
    pub(crate) fn resolve(
        &mut self,
        lr: &LrTables,
        lex: &LexerTables,
        head: &NodeRef,
        groups: &[Vec<u32>],
        reduce_level: u32,
        out: &mut Vec<Outcome>,
    ) {
        self.made.clear();
        self.paths.clear();
        self.paths.push(vec![head.clone()]);
        while let Some(path) = self.paths.pop() {
            // The first group with a terminal used on this path prefix; `None` if a terminal of
            // a group that matters is not decided yet.
            let mut used: Option<Vec<Used>> = Some(Vec::new());
            for g in groups {
                let mut res = Vec::new();
                let mut blocked = false;
                for &t in g {
                    if lex.is_ignored(t) {
                        res.push((t, None));
                        continue;
                    }
                    match self.simulate(lr, &path, t) {
                        Sim::Blocked => blocked = true,
                        Sim::Done(s) if !s.is_empty() => res.push((t, Some(s))),
                        Sim::Done(_) => {}
                    }
                }
                if blocked {
                    used = None;
                    break;
                }
                if !res.is_empty() {
                    used = Some(res);
                    break;
                }
            }
            let Some(used) = used else {
                let last = &path[path.len() - 1];
                for p in last.preds.iter() {
                    let mut longer = path.clone();
                    longer.push(p.clone());
                    self.paths.push(longer);
                }
                continue;
            };
            for (term, shifts) in used {
                match shifts {
                    None => out.push(Outcome::Ignored { term, head: restrict(&path, 0) }),
                    Some(shifts) => {
                        for (over, d, target) in shifts {
                            let below = match over {
                                None => restrict(&path, d),
                                Some(s) => self.reduction_node(s, restrict(&path, d), reduce_level),
                            };
                            out.push(Outcome::Shift { term, target, below });
                        }
                    }
                }
            }
        }
    }

    fn reduction_node(&mut self, state: u32, base: NodeRef, level: u32) -> NodeRef {
        if let Some((_, _, n)) = self.made.iter().find(|(s, b, _)| *s == state && std::sync::Arc::ptr_eq(b, &base)) {
            return n.clone();
        }
        let n = Node::new(state, level, vec![base.clone()]);
        self.made.push((state, base, n.clone()));
        n
    }
}

/// The stacks through `path[d]` that continue along `path` down to its last node (and anything
/// below that): `path[d..last]` copied with one predecessor each, over the original last node.
fn restrict(path: &[NodeRef], d: usize) -> NodeRef {
    let k = path.len() - 1;
    let mut node = path[k].clone();
    for n in path[d..k].iter().rev() {
        node = Node::new(n.state, n.level, vec![node]);
    }
    node
}
