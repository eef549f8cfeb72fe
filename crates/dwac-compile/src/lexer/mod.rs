//! All terminal regexes → one minimized byte DFA with accept sets and `Next⁺` per state.
//!
//! `regex-automata` parses each pattern and builds a Thompson NFA; the subset
//! construction and minimization are ours, because the runtime needs exact per-state
//! accept sets over *all* terminals (not leftmost-first match semantics) and a
//! dedicated empty-lexeme start state `q0` with no incoming edges.

use std::collections::HashMap;

use dwac_grammar::{Munch, Terminal};
use dwac_runtime::unstable::{LexerTables, DEAD, MUNCH_GLOBAL, MUNCH_NONE, MUNCH_OWN};
use regex_automata::nfa::thompson::{self, State, WhichCaptures, NFA};
use regex_automata::util::primitives::StateID;
use regex_automata::util::syntax;

use crate::dwa::FastMap;
use crate::CompileError;

mod components;
mod counted;
mod length;
mod minimize;
pub mod munch;
mod subset;

use components::build_components;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Main,
    Also,
    Except,
}

/// Upper bound on DFA states before minimization (a budget, not a limit of the design).
pub const MAX_DFA_STATES: usize = 250_000;

/// Patterns are read as Unicode and may match bytes that are not UTF-8: only token terminals'
/// escapes do ([`crate::token_terminals`]); every text pattern is checked to match UTF-8 only
/// ([`check_text_pattern`]) before it gets here.
fn compile_nfa(patterns: &[&str]) -> Result<NFA, Box<thompson::BuildError>> {
    NFA::compiler()
        .syntax(syntax::Config::new().unicode(true).utf8(false))
        .configure(thompson::Config::new().which_captures(WhichCaptures::None).shrink(false))
        .build_many(patterns)
        .map_err(Box::new)
}

/// Build the lexer over `terminals`; only terminals with `active[t]` take part
/// (unused terminals must not inhibit anything). Terminal ids are kept.
///
/// Each lexer component ([`Terminal::component`]) gets its own minimized DFA; the main
/// component's start state is `q0`, and the other components' first transitions are forks
/// from `q0` ([`LexerTables::fork`]).
pub fn build_lexer(terminals: &[Terminal], active: &[bool]) -> Result<LexerTables, CompileError> {
    let nt = terminals.len();
    let words = nt.div_ceil(64);
    let is_active = |i: usize| active.get(i).copied().unwrap_or(true);
    let mut comps: Vec<u32> = (0..nt).filter(|&i| is_active(i)).map(|i| terminals[i].component).collect();
    comps.push(0);
    comps.sort_unstable();
    comps.dedup();
    // Per component: (states, transitions, accept sets); state 0 is its start.
    let acts: Vec<Vec<bool>> =
        comps.iter().map(|&c| (0..nt).map(|i| is_active(i) && terminals[i].component == c).collect()).collect();
    let built = build_components(terminals, &acts);
    let parts: Vec<ComponentDfa> = built.into_iter().collect::<Result<_, _>>()?;
    let total: usize = parts.iter().map(|p| p.n).sum();
    // (Named: the largest component, where a smaller bound or a plainer pattern helps most.)
    let largest = parts.iter().enumerate().max_by_key(|&(i, p)| (p.n, usize::MAX - i));
    if let Some((largest, part)) = largest.filter(|_| total > MAX_DFA_STATES) {
        return Err(CompileError::Budget(format!(
            "lexer DFA exceeds {MAX_DFA_STATES} states ({total} in all; the largest of its components, {} states, \
             is the one of {})",
            part.n,
            component_terminals(terminals, &acts[largest])
        )));
    }
    // Merge: component 0 keeps its numbering (its start is q0); the others follow. The merged
    // table is laid out over the classes of bytes that every component treats alike (each
    // component's own classes, refined by the others'), numbered in order of their smallest byte.
    let mut joint_of: FastMap<Vec<u16>, u16> = FastMap::default();
    let mut joint = [0u16; 256];
    let mut joint_rep: Vec<usize> = Vec::new();
    for (b, j) in joint.iter_mut().enumerate() {
        let key: Vec<u16> = parts.iter().map(|p| p.class[b]).collect();
        let next = joint_rep.len() as u16;
        *j = *joint_of.entry(key).or_insert_with(|| {
            joint_rep.push(b);
            next
        });
    }
    let kj = joint_rep.len();
    let mut mtrans: Vec<u32> = Vec::with_capacity(total * kj);
    let mut maccs: Vec<Vec<u32>> = Vec::with_capacity(total);
    let mut bases = Vec::new();
    for part in &parts {
        let base = maccs.len() as u32;
        bases.push(base);
        let cols: Vec<usize> = joint_rep.iter().map(|&b| part.class[b] as usize).collect();
        for row in part.trans.chunks_exact(part.k) {
            mtrans.extend(cols.iter().map(|&c| if row[c] == DEAD { DEAD } else { row[c] + base }));
        }
        maccs.extend(part.accs.iter().cloned());
        debug_assert_eq!(part.trans.len(), part.n * part.k);
    }
    let m = maccs.len();
    let mut fork_lists: Vec<Vec<u32>> = vec![Vec::new(); 256];
    for base in bases.iter().skip(1) {
        for (b, list) in fork_lists.iter_mut().enumerate() {
            let t = mtrans[*base as usize * kj + joint[b] as usize];
            if t != DEAD {
                list.push(t);
            }
        }
    }
    finish(terminals, words, m, (mtrans, &joint, kj), maccs, fork_lists)
}

/// One component's DFA over classes of bytes it treats alike: `n` states (start 0), each
/// byte's class (`class[b]`, of `k`), transitions by class (`trans[q·k+c]`), accept sets.
struct ComponentDfa {
    n: usize,
    class: Vec<u16>,
    k: usize,
    trans: Vec<u32>,
    accs: Vec<Vec<u32>>,
}

/// A text terminal's pattern must match UTF-8 only: then no text spells a token terminal's
/// escape, which no UTF-8 text holds ([`crate::token_terminals`]).
fn check_text_pattern(t: &Terminal, pattern: &str) -> Result<(), CompileError> {
    syntax::parse_with(pattern, &syntax::Config::new().unicode(true).utf8(true))
        .map(|_| ())
        .map_err(|e| CompileError::Regex { terminal: t.name.clone(), message: e.to_string() })
}

/// Whether `pattern` is a regex a text terminal named `terminal` may have, as the lexer build
/// checks it (the same error, without building anything).
pub fn check_pattern(terminal: &str, pattern: &str) -> Result<(), CompileError> {
    syntax::parse_with(pattern, &syntax::Config::new().unicode(true).utf8(true))
        .map(|_| ())
        .map_err(|e| CompileError::Regex { terminal: terminal.into(), message: e.to_string() })
}

/// Build one component's DFA.
fn build_component(terminals: &[Terminal], active: &[bool]) -> Result<ComponentDfa, CompileError> {
    // One length-bounded terminal: its patterns' DFA times the character counter.
    let mut act = (0..terminals.len()).filter(|&i| active.get(i).copied().unwrap_or(true));
    if let (Some(i), None) = (act.next(), act.next()) {
        if let Some(part) = counted::counted_component(terminals, i, active)? {
            return Ok(part);
        }
    }
    subset::subset_component(terminals, active)
}

/// A component's DFA of `n` states over `k` classes (`class`: each byte's), minimized and
/// renumbered canonically (the start first, then the blocks in order of their first state):
/// DFAs of one language, numbered in breadth-first order over the classes, give the same.
fn minimized(n: usize, (class, k): (Vec<u16>, usize), mut trans: Vec<u32>, accs: Vec<Vec<u32>>) -> ComponentDfa {
    // States from which no lexeme can be accepted are DEAD before minimizing: Hopcroft keeps
    // the sink apart, so such states would stay as rows of their own.
    let doomed = minimize::doomed_states(n, k, &mut trans, &accs);

    // Minimize (Hopcroft); q0 stays alone in its block.
    let initial: Vec<u32> = {
        let mut ids: HashMap<(bool, &[u32]), u32> = HashMap::new();
        accs.iter()
            .enumerate()
            .map(|(q, a)| {
                let next = ids.len() as u32;
                *ids.entry((q == 0, a.as_slice())).or_insert(next)
            })
            .collect()
    };
    let block = minimize::minimize_classes(n, k, &trans, &initial);
    let num_blocks = block.iter().max().map_or(0, |&m| m + 1);
    // Renumber so that q0's block is 0 and the rest follow in first-seen (BFS) order.
    let mut order: Vec<u32> = vec![DEAD; num_blocks as usize];
    let mut reps: Vec<usize> = Vec::new();
    for (q, &bq) in block.iter().enumerate() {
        let b = bq as usize;
        if order[b] == DEAD && !doomed[q] {
            order[b] = reps.len() as u32;
            reps.push(q);
        }
    }
    let m = reps.len();
    let mut mtrans = Vec::with_capacity(m * k);
    let mut maccs: Vec<Vec<u32>> = Vec::with_capacity(m);
    for &q in &reps {
        let row = &trans[q * k..q * k + k];
        mtrans.extend(row.iter().map(|&t| if t == DEAD { DEAD } else { order[block[t as usize] as usize] }));
        maccs.push(accs[q].clone());
    }
    ComponentDfa { n: m, class, k, trans: mtrans, accs: maccs }
}

/// Each successor of an NFA state, with the bytes the edge reads (1, or 0 for an ε-edge).
fn successors(state: &State, mut f: impl FnMut(StateID, u32)) {
    match state {
        State::ByteRange { trans } => f(trans.next, 1),
        State::Sparse(sp) => sp.transitions.iter().for_each(|t| f(t.next, 1)),
        State::Dense(de) => de.transitions.iter().filter(|&&n| n != StateID::ZERO).for_each(|&n| f(n, 1)),
        State::Union { alternates } => alternates.iter().for_each(|&a| f(a, 0)),
        State::BinaryUnion { alt1, alt2 } => {
            f(*alt1, 0);
            f(*alt2, 0);
        }
        State::Capture { next, .. } | State::Look { next, .. } => f(*next, 0),
        State::Fail | State::Match { .. } => {}
    }
}

/// Next⁺, dead-state pruning and the table layout over the merged components.
///
/// `mtrans` is laid out over `k` classes of bytes (`mtrans[q·k+joint[b]]`) that every state
/// treats alike; the tables' own byte classes are the coarsest such (equal columns), computed
/// after pruning.
fn finish(
    terminals: &[Terminal],
    words: usize,
    m: usize,
    (mut mtrans, joint, k): (Vec<u32>, &[u16; 256], usize),
    maccs: Vec<Vec<u32>>,
    mut fork_lists: Vec<Vec<u32>>,
) -> Result<LexerTables, CompileError> {
    let nt = terminals.len();
    // Next⁺ by fixpoint over successors (each state's distinct successors, listed once).
    let succ: Vec<Vec<u32>> = (0..m)
        .map(|q| {
            let mut v: Vec<u32> = mtrans[q * k..q * k + k].iter().copied().filter(|&t| t != DEAD).collect();
            if q == 0 {
                v.extend(fork_lists.iter().flatten().copied());
            }
            v.sort_unstable();
            v.dedup();
            v
        })
        .collect();
    let mut next_plus = vec![0u64; m * words];
    let mut changed = true;
    while changed {
        changed = false;
        for q in (0..m).rev() {
            {
                for &t in &succ[q] {
                    let t = t as usize;
                    for &a in &maccs[t] {
                        let (w, bit) = (q * words + a as usize / 64, 1u64 << (a % 64));
                        if next_plus[w] & bit == 0 {
                            next_plus[w] |= bit;
                            changed = true;
                        }
                    }
                    if t != q {
                        for k in 0..words {
                            let add = next_plus[t * words + k] & !next_plus[q * words + k];
                            if add != 0 {
                                next_plus[q * words + k] |= add;
                                changed = true;
                            }
                        }
                    }
                }
            }
        }
    }
    // States that can never match again are dead.
    let alive: Vec<bool> =
        (0..m).map(|q| !maccs[q].is_empty() || next_plus[q * words..(q + 1) * words].iter().any(|&w| w != 0)).collect();
    for t in mtrans.iter_mut() {
        if *t != DEAD && !alive[*t as usize] {
            *t = DEAD;
        }
    }
    for list in fork_lists.iter_mut() {
        list.retain(|&t| alive[t as usize]);
    }
    let mut fork_off = vec![0u32];
    let mut fork = Vec::new();
    for list in &fork_lists {
        fork.extend_from_slice(list);
        fork_off.push(fork.len() as u32);
    }

    let mut accept_off = vec![0u32];
    let mut accept = Vec::new();
    for a in &maccs {
        accept.extend_from_slice(a);
        accept_off.push(accept.len() as u32);
    }
    let mut ignored = vec![0u64; words];
    for (i, t) in terminals.iter().enumerate() {
        if t.ignored {
            ignored[i / 64] |= 1 << (i % 64);
        }
    }
    let munch = terminals
        .iter()
        .map(|t| match t.munch {
            Munch::Global => MUNCH_GLOBAL,
            Munch::Own => MUNCH_OWN,
            Munch::None => MUNCH_NONE,
        })
        .collect();
    let priority = terminals.iter().map(|t| t.priority).collect();
    // Stored by byte class: one column per class of bytes every state treats alike (equal
    // columns of `mtrans`, numbered in order of their smallest byte, which is the order of
    // their first column: the columns are numbered by their smallest byte too).
    let (col_class, kc) = minimize::column_classes(m, k, &mtrans);
    let mut reps = vec![0usize; kc];
    for c in (0..k).rev() {
        reps[col_class[c] as usize] = c;
    }
    let trans: Vec<u32> =
        (0..m).flat_map(|q| reps.iter().map(move |&c| (q, c))).map(|(q, c)| mtrans[q * k + c]).collect();
    let byte_class: Vec<u8> = joint.iter().map(|&j| col_class[j as usize] as u8).collect();
    let num_classes = kc as u32;
    // Next⁺ rows interned, numbered in order of first use (deterministic).
    let (mut rows, mut row_of, mut next_plus_row) = (Vec::new(), HashMap::new(), Vec::with_capacity(m));
    for q in 0..m {
        let row = &next_plus[q * words..(q + 1) * words];
        let fresh = row_of.len() as u32;
        let id = *row_of.entry(row).or_insert_with(|| {
            rows.extend_from_slice(row);
            fresh
        });
        next_plus_row.push(id);
    }
    Ok(LexerTables {
        num_states: m as u32,
        num_terminals: nt as u32,
        words: words as u32,
        start: 0,
        trans: trans.into(),
        byte_class: byte_class.into(),
        num_classes,
        accept_off: accept_off.into(),
        accept: accept.into(),
        next_plus: rows.into(),
        next_plus_row: next_plus_row.into(),
        ignored: ignored.into(),
        munch,
        priority,
        fork_off: fork_off.into(),
        fork: fork.into(),
    })
}

/// What a budget error names for a component: its terminals (the first few), with the patterns
/// of a component of one terminal (a schema's constrained string: its `also` patterns say what
/// constrains it).
fn component_terminals(terminals: &[Terminal], active: &[bool]) -> String {
    let ts: Vec<&Terminal> =
        terminals.iter().enumerate().filter(|&(i, _)| active.get(i).copied().unwrap_or(true)).map(|(_, t)| t).collect();
    match ts.as_slice() {
        [t] => {
            let cut = |re: &str| -> String {
                let mut s: String = re.chars().take(100).collect();
                if s.len() < re.len() {
                    s.push('…');
                }
                format!("/{s}/")
            };
            // (A schema's constrained string says what constrains it in `also`.)
            let also: Vec<String> = t.also.iter().map(|a| cut(a)).collect();
            let also = if also.is_empty() { String::new() } else { format!(" and {}", also.join(" and ")) };
            match &t.origin {
                // (A bound multiplies the states of the pattern or format it counts over.)
                Some(o) => format!("terminal {} of {o} ({}{also})", t.name, cut(&t.regex)),
                None => format!("terminal {} {}{also}", t.name, cut(&t.regex)),
            }
        }
        _ => {
            let names: Vec<&str> = ts.iter().take(4).map(|t| t.name.as_str()).collect();
            let more = if ts.len() > 4 { format!(", … ({} terminals)", ts.len()) } else { String::new() };
            format!("terminals {}{more}", names.join(", "))
        }
    }
}

fn name_look_error(e: CompileError, terminals: &[Terminal], pat_term: &[u32], _nfa: &NFA) -> CompileError {
    // Find which terminal uses look-around by compiling each alone.
    if let CompileError::Regex { message, .. } = &e {
        for &t in pat_term {
            let Ok(single) = compile_nfa(&[terminals[t as usize].regex.as_str()]) else { continue };
            let has_look = (0..single.states().len())
                .any(|i| matches!(single.state(StateID::new(i).unwrap_or(StateID::ZERO)), State::Look { .. }));
            if has_look {
                return CompileError::Regex { terminal: terminals[t as usize].name.clone(), message: message.clone() };
            }
        }
    }
    e
}

#[cfg(test)]
mod tests;
