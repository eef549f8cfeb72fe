//! The subset construction of a lexer component: its terminals' patterns (main, `also`,
//! `except`) in one Thompson NFA, the DFA over the NFA's byte classes, length counters beside
//! the subsets ([`super::length`]), then minimized ([`super::minimized`]).

use std::collections::VecDeque;

use dwac_grammar::Terminal;
use dwac_runtime::unstable::DEAD;
use regex_automata::nfa::thompson::{State, NFA};
use regex_automata::util::primitives::StateID;

use super::{
    check_text_pattern, compile_nfa, component_terminals, length, minimized, name_look_error, successors, ComponentDfa,
    Role, MAX_DFA_STATES,
};
use crate::dwa::FastMap;
use crate::CompileError;

/// [`super::build_component`] by the subset construction, length counters beside the subsets.
pub(super) fn subset_component(terminals: &[Terminal], active: &[bool]) -> Result<ComponentDfa, CompileError> {
    check_terminals(terminals, active)?;
    let any_string = dwac_grammar::schema::strings::json_string_any();
    let (pats, pat_role, counters) = patterns(terminals, active, &any_string);
    let pat_term: Vec<u32> = pat_role.iter().map(|r| r.0).collect();
    let nfa = &compile_patterns(&pats, &pat_term, terminals)?;
    let nstates = nfa.states().len();
    let mut cl = Closure::new(nfa, terminals, &pat_role, pats.len());
    let mut lengths = length::Lengths::new(counters, nfa, pats.len());

    let mut acc = Vec::new();
    let mut start_set = Vec::new();
    cl.closure(&[nfa.start_anchored()], &mut acc, &mut start_set)
        .map_err(|e| name_look_error(e, terminals, &pat_term, nfa))?;
    if let Some(&t) = accepted(&pat_role, &acc).first() {
        return Err(CompileError::EmptyMatch { terminal: terminals[t as usize].name.clone() });
    }
    // Beside each subset, the length counters' state (empty without bounded terminals).
    let mut start_aux = lengths.start();
    lengths.settle(&mut start_aux, &mut start_set, &mut acc, &cl.owner, &pat_term);
    let aux_len = start_aux.len();
    let mut auxs: Vec<u32> = start_aux;
    let mut sets: Vec<Vec<StateID>> = vec![start_set];
    let mut accs: Vec<Vec<u32>> = vec![Vec::new()];
    // Keyed by (byte-consuming NFA states, matched terminals): two sets of consuming states can
    // agree while only one of them has just passed a Match state. q0 is never a target.
    // The key: the states' ids, `u32::MAX`, the matched patterns (and counters; one vector).
    let mut index: FastMap<Vec<u32>, u32> = FastMap::default();
    let mut key: Vec<u32> = Vec::new();
    // Bytes of one NFA byte class have the same transitions from every NFA state: the DFA is
    // built, and minimized, over the `k` classes (`trans[q*k+c]`), and widened to bytes at the
    // end (about 8 to 30 times less table to fill, copy and refine than byte rows).
    // (With length counters, refined by the bytes their decoder tells apart.)
    let byte_classes = nfa.byte_classes();
    let (class_of, first_of_class) = lengths.classes(|b| byte_classes.get(b));
    let k = first_of_class.len();
    let mut is_rep = [false; 256];
    for &b in &first_of_class {
        is_rep[b as usize] = true;
    }
    let mut trans: Vec<u32> = Vec::new();
    let mut queue: VecDeque<u32> = VecDeque::from([0]);
    let mut buckets: Vec<Vec<StateID>> = vec![Vec::new(); k];
    // Marks for order-preserving deduplication of buckets.
    let mut seen_mark: Vec<u32> = vec![0; nstates];
    let mut seen_gen = 0u32;
    let mut memo: FastMap<Vec<u32>, u32> = FastMap::default();
    let mut memo_key: Vec<u32> = Vec::new();
    let mut set: Vec<StateID> = Vec::new();
    let mut aux: Vec<u32> = Vec::new();
    while let Some(d) = queue.pop_front() {
        fill_buckets(nfa, &sets[d as usize], (&class_of, &is_rep), &mut buckets);
        let at = trans.len();
        debug_assert_eq!(at, d as usize * k);
        trans.resize(at + k, DEAD);
        memo.clear();
        for (b, bucket) in buckets.iter_mut().enumerate() {
            if bucket.is_empty() {
                continue;
            }
            // Successors in the order of the states they come from (the priority order of lazy
            // patterns), duplicates dropped after their first occurrence.
            seen_gen += 1;
            bucket.retain(|st| std::mem::replace(&mut seen_mark[st.as_usize()], seen_gen) != seen_gen);
            lengths.step(&auxs[d as usize * aux_len..][..aux_len], first_of_class[b] as u8, &mut aux);
            memo_key.clear();
            memo_key.extend(bucket.iter().map(|st| st.as_u32()));
            memo_key.push(u32::MAX);
            memo_key.extend_from_slice(&aux);
            if let Some(&id) = memo.get(memo_key.as_slice()) {
                trans[at + b] = id;
                continue;
            }
            cl.closure(bucket, &mut acc, &mut set).map_err(|e| name_look_error(e, terminals, &pat_term, nfa))?;
            lengths.settle(&mut aux, &mut set, &mut acc, &cl.owner, &pat_term);
            key.clear();
            key.extend(set.iter().map(|st| st.as_u32()));
            key.push(u32::MAX);
            key.extend_from_slice(&acc);
            if aux_len > 0 {
                key.push(u32::MAX);
                key.extend_from_slice(&aux);
            }
            let id = if set.is_empty() && acc.is_empty() {
                DEAD
            } else if let Some(&id) = index.get(key.as_slice()) {
                id
            } else {
                let id = sets.len() as u32;
                if sets.len() % 4096 == 4095 {
                    if let Some(why) = crate::threads::stop_requested() {
                        return Err(CompileError::Stopped(why));
                    }
                }
                if sets.len() >= MAX_DFA_STATES {
                    return Err(CompileError::Budget(format!(
                        "lexer DFA exceeds {MAX_DFA_STATES} states in the lexer component of {}",
                        component_terminals(terminals, active)
                    )));
                }
                index.insert(key.clone(), id);
                sets.push(set.clone());
                let mut accepted = accepted(&pat_role, &acc);
                accepted.retain(|&t| lengths.allows(&aux, t));
                accs.push(accepted);
                auxs.extend_from_slice(&aux);
                queue.push_back(id);
                id
            };
            memo.insert(memo_key.clone(), id);
            trans[at + b] = id;
        }
    }
    let n = sets.len();
    debug_assert_eq!(trans.len(), n * k);
    drop(sets);
    Ok(minimized(n, (class_of.to_vec(), k), trans, accs))
}

/// Every active terminal can be lexed: a token reference has been resolved against the
/// vocabulary, and every text pattern matches UTF-8 only.
fn check_terminals(terminals: &[Terminal], active: &[bool]) -> Result<(), CompileError> {
    for (i, t) in terminals.iter().enumerate() {
        if !active.get(i).copied().unwrap_or(true) {
            continue;
        }
        if t.tokens.is_some() {
            if t.regex.is_empty() {
                return Err(CompileError::Regex {
                    terminal: t.name.clone(),
                    message: "a token reference needs the vocabulary: compile the grammar with a tokenizer".into(),
                });
            }
            continue;
        }
        for p in std::iter::once(&t.regex).chain(&t.also).chain(&t.except) {
            check_text_pattern(t, p)?;
        }
    }
    Ok(())
}

/// The patterns of the active terminals, each with its terminal and role, and the length
/// counters among them.
#[allow(clippy::type_complexity, reason = "three parallel lists the caller takes apart")]
fn patterns<'t>(
    terminals: &'t [Terminal],
    active: &[bool],
    any_string: &'t str,
) -> (Vec<&'t str>, Vec<(u32, Role)>, Vec<length::Counter>) {
    // Patterns: each active terminal's main regex, plus its `also` (must match too) and
    // `except` (must not match) regexes as hidden patterns. A JSON string length bound among
    // them is a counter instead ([`length`]); when it is all the terminal has, its main
    // pattern is any JSON string (the bound's own pattern without its count).
    let mut pats: Vec<&str> = Vec::new();
    let mut pat_role: Vec<(u32, Role)> = Vec::new();
    let mut counters: Vec<length::Counter> = Vec::new();
    for (i, t) in terminals.iter().enumerate() {
        if active.get(i).copied().unwrap_or(true) {
            let (musts, counter) = length::split_bounds(t, i as u32, any_string, pats.len() as u32);
            counters.extend(counter);
            pats.push(musts[0]);
            pat_role.push((i as u32, Role::Main));
            for a in &musts[1..] {
                pats.push(a);
                pat_role.push((i as u32, Role::Also));
            }
            for e in &t.except {
                pats.push(e);
                pat_role.push((i as u32, Role::Except));
            }
        }
    }
    (pats, pat_role, counters)
}

/// All patterns in one NFA; if that fails, the error names the first terminal whose pattern
/// fails alone.
fn compile_patterns(pats: &[&str], pat_term: &[u32], terminals: &[Terminal]) -> Result<NFA, CompileError> {
    match compile_nfa(pats) {
        Ok(n) => Ok(n),
        Err(e) => {
            // Name the offending terminal.
            for (p, &t) in pats.iter().zip(pat_term) {
                if let Err(e) = compile_nfa(&[p]) {
                    return Err(CompileError::Regex {
                        terminal: terminals[t as usize].name.clone(),
                        message: e.to_string(),
                    });
                }
            }
            Err(CompileError::Regex { terminal: "<all>".into(), message: e.to_string() })
        }
    }
}

/// Which pattern owns each NFA state (patterns never share states in an anchored NFA).
fn pattern_owners(nfa: &NFA) -> Vec<u32> {
    let mut owner: Vec<u32> = vec![u32::MAX; nfa.states().len()];
    for pid in 0..nfa.pattern_len() {
        let Some(start) = regex_automata::util::primitives::PatternID::new(pid).ok().and_then(|p| nfa.start_pattern(p))
        else {
            continue;
        };
        let mut stack = vec![start];
        while let Some(st) = stack.pop() {
            if owner[st.as_usize()] != u32::MAX {
                continue;
            }
            owner[st.as_usize()] = pid as u32;
            successors(nfa.state(st), |next, _| stack.push(next));
        }
    }
    owner
}

/// Terminals made of several patterns: (main pattern, other patterns with their roles).
fn pattern_groups(pat_role: &[(u32, Role)]) -> Vec<(u32, Vec<(u32, Role)>)> {
    let mut groups: Vec<(u32, Vec<(u32, Role)>)> = Vec::new();
    for (i, &(t, role)) in pat_role.iter().enumerate() {
        if role == Role::Main {
            groups.push((i as u32, Vec::new()));
        } else if let Some(g) = groups.last_mut() {
            debug_assert_eq!(pat_role[g.0 as usize].0, t);
            g.1.push((i as u32, role));
        }
    }
    groups.retain(|g| !g.1.is_empty());
    groups
}

/// Matched patterns → accepted terminals: main matched, every `also` matched, no `except`
/// matched. Every such terminal stays in the accept set whatever its priority: priorities
/// are contextual (ARCHITECTURE.md, "The contract") and resolved against the parser stack at run time.
fn accepted(pat_role: &[(u32, Role)], raw: &[u32]) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    let mut i = 0;
    while i < pat_role.len() {
        let t = pat_role[i].0;
        let mut j = i;
        let mut ok = true;
        while j < pat_role.len() && pat_role[j].0 == t {
            let hit = raw.binary_search(&(j as u32)).is_ok();
            ok &= match pat_role[j].1 {
                Role::Main | Role::Also => hit,
                Role::Except => !hit,
            };
            j += 1;
        }
        if ok {
            out.push(t);
        }
        i = j;
    }
    out
}

/// The NFA states of each byte class's representative byte (`is_rep`) out of the consuming
/// states `set`, by class.
fn fill_buckets(nfa: &NFA, set: &[StateID], (class_of, is_rep): (&[u16], &[bool; 256]), buckets: &mut [Vec<StateID>]) {
    for b in buckets.iter_mut() {
        b.clear();
    }
    for &s in set {
        match nfa.state(s) {
            State::ByteRange { trans } => {
                for b in trans.start..=trans.end {
                    if is_rep[b as usize] {
                        buckets[class_of[b as usize] as usize].push(trans.next);
                    }
                }
            }
            State::Sparse(sp) => {
                for tr in sp.transitions.iter() {
                    for b in tr.start..=tr.end {
                        if is_rep[b as usize] {
                            buckets[class_of[b as usize] as usize].push(tr.next);
                        }
                    }
                }
            }
            State::Dense(de) => {
                for (b, &n) in de.transitions.iter().enumerate() {
                    if n != StateID::ZERO && is_rep[b] {
                        buckets[class_of[b] as usize].push(n);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The ε-closure of NFA states, with the patterns it matches, lazy patterns' priorities and
/// the pruning of dead intersection parts. Its buffers and marks are reused from call to call.
struct Closure<'n> {
    nfa: &'n NFA,
    owner: Vec<u32>,
    /// Main patterns of lazy terminals, read leftmost-first (as Python's `re` reads them): their
    /// NFA states are kept in priority order, and once the pattern matches, its lower-priority
    /// states are cut. The DFA then accepts exactly the ends a backtracking match can stop at,
    /// and the longest of those on any input is the backtracking match.
    lazy_pat: Vec<bool>,
    any_lazy: bool,
    groups: Vec<(u32, Vec<(u32, Role)>)>,
    scratch: Scratch,
}

struct Scratch {
    marks: Vec<u32>,
    gen: u32,
    stack: Vec<StateID>,
    ordered: Vec<StateID>,
    cut: Vec<u32>,
    /// Per pattern: the generation in which it was seen live / is to be pruned.
    live: Vec<u32>,
    kill: Vec<u32>,
}

impl<'n> Closure<'n> {
    fn new(nfa: &'n NFA, terminals: &[Terminal], pat_role: &[(u32, Role)], n_pats: usize) -> Closure<'n> {
        let lazy_pat: Vec<bool> =
            pat_role.iter().map(|&(t, role)| role == Role::Main && terminals[t as usize].lazy).collect();
        let any_lazy = lazy_pat.contains(&true);
        let mut groups = pattern_groups(pat_role);
        groups.retain(|g| !g.1.is_empty());
        let scratch = Scratch {
            marks: vec![0u32; nfa.states().len()],
            gen: 0,
            stack: Vec::new(),
            ordered: Vec::new(),
            cut: Vec::new(),
            live: vec![0u32; n_pats],
            kill: vec![0u32; n_pats],
        };
        Closure { nfa, owner: pattern_owners(nfa), lazy_pat, any_lazy, groups, scratch }
    }

    /// The closure of `seeds` into `set` (consuming states), the patterns matched into `acc`.
    fn closure(&mut self, seeds: &[StateID], acc: &mut Vec<u32>, set: &mut Vec<StateID>) -> Result<(), CompileError> {
        let sc = &mut self.scratch;
        sc.gen += 1;
        let gen = sc.gen;
        let (marks, stack, ordered, cut) = (&mut sc.marks, &mut sc.stack, &mut sc.ordered, &mut sc.cut);
        stack.clear();
        set.clear();
        // Lazy patterns' consuming states, in priority order.
        ordered.clear();
        // Lazy patterns that matched: their states found after the match have lower priority.
        cut.clear();
        acc.clear();
        // Seeds in priority order, each explored depth-first with alternates in order: the order
        // in which consuming states are found is their priority (as in a backtracking engine).
        for &seed in seeds {
            stack.push(seed);
            while let Some(s) = stack.pop() {
                if marks[s.as_usize()] == gen {
                    continue;
                }
                marks[s.as_usize()] = gen;
                let p = self.owner[s.as_usize()];
                let lazy = self.any_lazy && self.lazy_pat.get(p as usize).copied().unwrap_or(false);
                if lazy && cut.contains(&p) {
                    continue;
                }
                match self.nfa.state(s) {
                    State::ByteRange { .. } | State::Sparse(_) | State::Dense(_) => {
                        if lazy {
                            ordered.push(s)
                        } else {
                            set.push(s)
                        }
                    }
                    State::Union { alternates } => stack.extend(alternates.iter().rev()),
                    State::BinaryUnion { alt1, alt2 } => {
                        stack.push(*alt2);
                        stack.push(*alt1);
                    }
                    State::Capture { next, .. } => stack.push(*next),
                    State::Fail => {}
                    State::Match { pattern_id } => {
                        acc.push(pattern_id.as_usize() as u32);
                        if lazy {
                            cut.push(p);
                        }
                    }
                    State::Look { .. } => {
                        return Err(CompileError::Regex {
                            terminal: String::from("?"),
                            message: "look-around assertions (^, $, \\b) are not supported in terminals".into(),
                        })
                    }
                }
            }
        }
        set.sort_unstable();
        set.dedup();
        acc.sort_unstable();
        acc.dedup();
        // Canonical order: plain states sorted, then each lazy pattern's states in priority order.
        ordered.sort_by_key(|st| self.owner[st.as_usize()]);
        set.extend_from_slice(ordered);
        // Prune terminals that can no longer match any extension: an intersection terminal dies
        // with any of its parts, and `except` parts are only followed while the main part lives.
        // Without this the DFA tracks dead parts in product with every other terminal.
        if !self.groups.is_empty() {
            let (live, kill) = (&mut sc.live, &mut sc.kill);
            for st in set.iter() {
                live[self.owner[st.as_usize()] as usize] = gen;
            }
            let mut any_kill = false;
            for (main, others) in &self.groups {
                let main_live = live[*main as usize] == gen;
                let also_dead = others.iter().any(|(p, r)| *r == Role::Also && live[*p as usize] != gen);
                if !main_live || also_dead {
                    any_kill = true;
                    kill[*main as usize] = gen;
                    for (p, _) in others {
                        kill[*p as usize] = gen;
                    }
                }
            }
            if any_kill {
                set.retain(|st| kill[self.owner[st.as_usize()] as usize] != gen);
            }
        }
        Ok(())
    }
}
