//! Lexer inference for scannerless grammars (GBNF): the parts of a grammar whose language is
//! regular become lexer terminals, so that a token inside a string, a number or a word is one
//! lexer step instead of a parser step per character (docs/CONSTRUCTION.md, "Lexer inference").
//!
//! A GBNF grammar has no lexer: every literal and character class is a terminal with
//! [`Munch::None`] (every segmentation allowed, the parser decides). Such terminals are
//! *liftable*. A nonterminal is **regular** when everything it derives through is liftable
//! terminals and regular nonterminals, and its recursion (within its strongly connected
//! component) is all right-linear or all left-linear: no self-embedding. Its language is then
//! a regular expression, solved from the component's equations (Arden's rule, eliminating one
//! nonterminal after another).
//!
//! The grammar is rewritten by **substitution**: in each rule of a nonterminal that is not
//! regular, every maximal run of consecutive regular symbols (liftable terminals and regular
//! nonterminals) is replaced by one terminal whose pattern is the run's language, with
//! [`Munch::None`]. A run that derives the empty string becomes a nonterminal `T | ε` (no
//! terminal matches the empty string). If the start symbol is regular, the whole grammar is
//! one terminal. Substituting a symbol by a terminal of exactly its language, lexed with every
//! segmentation allowed, leaves the language of the grammar unchanged: this is the exactness
//! argument. (The splits no parser can take are dropped later, as the compiler walks the
//! vocabulary: `dwac-compile`'s follow-byte filter.)
//!
//! Bounded repetitions (`x{0,15}`, lowered to chains of helper rules) come back as counted
//! repetitions of the pattern, so the lexer counts them in states. A nonterminal whose pattern
//! would exceed [`LiftOptions::max_pattern_len`] (or that the caller excludes, e.g. because its
//! automaton would exceed the lexer's budget) is treated as not regular: its parts are lifted
//! instead.

use std::collections::HashMap;

mod pattern;

use pattern::{Re, MAX_WEIGHT};

use crate::{Grammar, Munch, Span, Symbol, Terminal};

/// Lexer inference options.
#[derive(Clone, Debug)]
pub struct LiftOptions {
    /// The longest pattern a lifted terminal may have (characters of its regex).
    pub max_pattern_len: usize,
    /// Nonterminals (by name) never lifted as a whole; their parts still may be.
    pub keep: Vec<String>,
}

impl Default for LiftOptions {
    fn default() -> Self {
        LiftOptions { max_pattern_len: 200_000, keep: Vec::new() }
    }
}

/// A terminal lexer inference made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiftedTerminal {
    /// Its id in the rewritten grammar.
    pub terminal: u32,
    /// The symbols it stands for, as written (`"," ws string ":" ws`).
    pub name: String,
    /// The nonterminals whose whole language it includes.
    pub rules: Vec<String>,
}

/// What lexer inference did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiftReport {
    /// Nonterminals found regular (source rules only, not helpers of `*`, `+`, `?`, `{m,n}`).
    pub regular: Vec<String>,
    /// Terminals made, in id order.
    pub terminals: Vec<LiftedTerminal>,
    /// The whole grammar became one terminal.
    pub whole: bool,
}

/// Lift the regular parts of `g` into lexer terminals (see the module docs). Terminals keep
/// their ids; new terminals are appended; rules of non-regular nonterminals are rewritten, and
/// the regular nonterminals' own rules stay (unreachable once nothing refers to them;
/// normalization drops them).
pub fn lift(g: &Grammar, opts: &LiftOptions) -> (Grammar, LiftReport) {
    let mut res = Resolver::new(g, opts).solve();
    // (A start symbol whose pattern the regex parser refuses, too deep say, is lifted in parts.)
    if res[g.start as usize].as_ref().and_then(Re::nonempty).is_some_and(|r| !valid(&r)) {
        res[g.start as usize] = None;
    }
    let mut out = g.clone();
    let mut report = LiftReport::default();
    for (n, re) in res.iter().enumerate() {
        if re.is_some() && !is_helper(&g.nonterminals[n].name) {
            report.regular.push(g.nonterminals[n].name.clone());
        }
    }
    let mut made: HashMap<String, u32> = HashMap::new();
    let mut opt_of: HashMap<u32, u32> = HashMap::new();
    // (Once: a run's name and its report read the rules of the symbols it includes.)
    let by_lhs = g.rules_by_lhs();
    let src = (g, &res[..], &by_lhs[..]);
    let mut rules = Vec::with_capacity(g.rules.len());
    // The start symbol regular: the grammar is one terminal (or none, if it derives only ε).
    if let Some(re) = &res[g.start as usize] {
        let start = out.add_nonterminal(format!("{}'", g.nonterminals[g.start as usize].name), None);
        let span = g.nonterminals[g.start as usize].span;
        let name = g.nonterminals[g.start as usize].name.clone();
        let run = Run { syms: vec![Symbol::N(g.start)], re: re.clone(), span };
        for rhs in lifted_rhs(&mut out, &mut made, &mut opt_of, &mut report, src, &run, &name) {
            rules.push(crate::Rule { lhs: start, rhs, span });
        }
        out.start = start;
        out.rules.extend(rules);
        report.whole = true;
        return (out, report);
    }
    for r in &g.rules {
        if res[r.lhs as usize].is_some() {
            rules.push(r.clone());
            continue;
        }
        let mut rhs = Vec::new();
        let mut i = 0;
        while i < r.rhs.len() {
            let regular = |s: &Symbol| symbol_re(g, &res, *s).is_some();
            if !regular(&r.rhs[i]) {
                rhs.push(r.rhs[i]);
                i += 1;
                continue;
            }
            let mut j = i;
            while j < r.rhs.len() && regular(&r.rhs[j]) {
                j += 1;
            }
            let syms = r.rhs[i..j].to_vec();
            i = j;
            let re = Re::cat(syms.iter().map(|&s| symbol_re(g, &res, s).unwrap_or_else(Re::never)).collect());
            // A run that would count a large unit (`row row{0,3}`) is lifted symbol by symbol.
            let runs: Vec<(Vec<Symbol>, Re)> = if re.big() {
                syms.iter().map(|&s| (vec![s], symbol_re(g, &res, s).unwrap_or_else(Re::never))).collect()
            } else {
                vec![(syms, re)]
            };
            for (syms, re) in runs {
                // A lone terminal stays itself; so does a run the regex parser refuses.
                if matches!(syms[..], [Symbol::T(_)]) || re.nonempty().is_some_and(|r| !valid(&r)) {
                    rhs.extend(syms);
                    continue;
                }
                let run = Run { syms, re, span: r.span };
                let name = run_name(g, &by_lhs, &run.syms);
                match lifted_rhs(&mut out, &mut made, &mut opt_of, &mut report, src, &run, &name)[..] {
                    // (Only ε: the run disappears.)
                    [] => {}
                    ref one => rhs.extend_from_slice(&one[0]),
                }
            }
        }
        rules.push(crate::Rule { lhs: r.lhs, rhs, span: r.span });
    }
    // Keep the rules `lifted_rhs` added (each `T | ε` nonterminal's), after the rewritten ones.
    rules.extend(out.rules.drain(g.rules.len()..));
    out.rules = rules;
    (out, report)
}

/// A run of regular symbols and its language.
struct Run {
    syms: Vec<Symbol>,
    re: Re,
    span: Option<Span>,
}

/// The replacement of a run: the alternatives (right-hand sides) it becomes. One symbol: the
/// new terminal, or a nonterminal `T | ε` when the run derives the empty string; none when it
/// derives only that. For the whole grammar, the alternatives of the new start symbol.
fn lifted_rhs(
    out: &mut Grammar,
    made: &mut HashMap<String, u32>,
    opt_of: &mut HashMap<u32, u32>,
    report: &mut LiftReport,
    (g, res, by_lhs): (&Grammar, &[Option<Re>], &[Vec<usize>]),
    run: &Run,
    name: &str,
) -> Vec<Vec<Symbol>> {
    let nullable = run.re.nullable();
    let Some(nonempty) = run.re.nonempty() else { return vec![Vec::new()] };
    let pattern = nonempty.print().to_string();
    let t = *made.entry(pattern.clone()).or_insert_with(|| {
        let mut term = Terminal::new(name.to_string(), pattern);
        term.munch = Munch::None;
        term.span = run.span;
        let id = out.add_terminal(term);
        let mut rules = Vec::new();
        inlined(g, res, by_lhs, &run.syms, &mut rules);
        report.terminals.push(LiftedTerminal { terminal: id, name: name.to_string(), rules });
        id
    });
    if !nullable {
        return vec![vec![Symbol::T(t)]];
    }
    if run.syms.len() == 1 && run.syms[0] == Symbol::N(g.start) {
        return vec![vec![Symbol::T(t)], Vec::new()];
    }
    let n = *opt_of.entry(t).or_insert_with(|| {
        let n = out.add_nonterminal(format!("{name}?"), run.span);
        out.add_rule(n, vec![Symbol::T(t)], run.span);
        out.add_rule(n, Vec::new(), run.span);
        n
    });
    vec![vec![Symbol::N(n)]]
}

/// The source nonterminals (not helpers) a run includes, in first-use order.
fn inlined(g: &Grammar, res: &[Option<Re>], by_lhs: &[Vec<usize>], syms: &[Symbol], out: &mut Vec<String>) {
    // (A set, not a flag per nonterminal: a grammar of many tools makes thousands of runs.)
    let mut seen = std::collections::HashSet::new();
    let mut stack: Vec<u32> =
        syms.iter().rev().filter_map(|s| if let Symbol::N(n) = s { Some(*n) } else { None }).collect();
    while let Some(n) = stack.pop() {
        if !seen.insert(n) || res[n as usize].is_none() {
            continue;
        }
        let name = &g.nonterminals[n as usize].name;
        if !is_helper(name) {
            out.push(name.clone());
        }
        for &ri in by_lhs[n as usize].iter().rev() {
            for s in g.rules[ri].rhs.iter().rev() {
                if let Symbol::N(m) = s {
                    stack.push(*m);
                }
            }
        }
    }
}

/// Does the regex parser take this pattern (nesting depth, repetition sizes)?
fn valid(r: &Re) -> bool {
    crate::ebnf::check_terminal_regex(&r.print(), "lifted").is_ok()
}

/// Helper nonterminals the EBNF lowering makes (`name__star1`, …) are not source rules.
fn is_helper(name: &str) -> bool {
    name.contains("__")
}

/// A readable name for a run: its symbols as written (a helper of the EBNF lowering as the group
/// it stands for), shortened to about 60 characters.
fn run_name(g: &Grammar, by_lhs: &[Vec<usize>], syms: &[Symbol]) -> String {
    let mut s = String::new();
    write_syms(g, by_lhs, syms, 2, &mut s);
    if s.chars().count() > 60 {
        s = s.chars().take(59).collect();
        s.push('…');
    }
    s
}

fn write_syms(g: &Grammar, by_lhs: &[Vec<usize>], syms: &[Symbol], depth: usize, s: &mut String) {
    for (i, &sym) in syms.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        if s.len() > 80 {
            s.push('…');
            return;
        }
        let name = g.symbol_name(sym);
        let Symbol::N(n) = sym else {
            s.push_str(name);
            continue;
        };
        if !is_helper(name) {
            s.push_str(name);
            continue;
        }
        if depth == 0 {
            s.push_str("(…)");
            continue;
        }
        // A helper of the EBNF lowering, shown as what it was written as: its alternatives
        // without the empty one and the helper itself, and the operator its kind names.
        let (mut chain, mut at) = (0, n);
        let kind = name.rsplit("__").next().unwrap_or("").trim_end_matches(|c: char| c.is_ascii_digit());
        if kind == "rep" {
            // `O_k → ε | O_(k-1) u`: k copies at most of `u`.
            loop {
                chain += 1;
                let inner = by_lhs[at as usize].iter().find_map(|&r| match g.rules[r].rhs.first() {
                    Some(&Symbol::N(m)) if is_helper(g.symbol_name(Symbol::N(m))) && g.rules[r].rhs.len() > 1 => {
                        Some(m)
                    }
                    _ => None,
                });
                match inner {
                    Some(m) => at = m,
                    None => break,
                }
            }
        }
        let own = Symbol::N(at);
        let alts: Vec<&[Symbol]> = by_lhs[at as usize]
            .iter()
            .map(|&r| g.rules[r].rhs.as_slice())
            .filter(|rhs| !rhs.is_empty())
            .map(|rhs| if rhs[0] == own { &rhs[1..] } else { rhs })
            .collect();
        s.push('(');
        let mut seen: Vec<&[Symbol]> = Vec::new();
        for alt in alts {
            if seen.contains(&alt) {
                continue;
            }
            if !seen.is_empty() {
                s.push_str(" | ");
            }
            seen.push(alt);
            write_syms(g, by_lhs, alt, depth - 1, s);
        }
        s.push(')');
        match kind {
            "star" => s.push('*'),
            "plus" => s.push('+'),
            "opt" => s.push('?'),
            "rep" => s.push_str(&format!("{{0,{chain}}}")),
            _ => {}
        }
    }
}

/// Has `g` terminals lexer inference may fold into others (a character-level grammar)?
pub fn has_liftable(g: &Grammar) -> bool {
    g.terminals.iter().any(liftable)
}

/// Is `t` a terminal lexer inference may fold into others? Only character-level ones: every
/// segmentation allowed, nothing ignored, no priority, intersection or component of its own,
/// no token terminal (its tokens are not text).
fn liftable(t: &Terminal) -> bool {
    t.munch == Munch::None
        && !t.ignored
        && t.priority == 0
        && t.also.is_empty()
        && t.except.is_empty()
        && t.component == 0
        && !t.lazy
        && t.tokens.is_none()
}

fn symbol_re(g: &Grammar, res: &[Option<Re>], s: Symbol) -> Option<Re> {
    match s {
        Symbol::T(t) => liftable(&g.terminals[t as usize]).then(|| Re::atom(&g.terminals[t as usize].regex)),
        Symbol::N(n) => res[n as usize].clone(),
    }
}

/// Finds the regular nonterminals and their patterns, component by component, callees first.
struct Resolver<'g> {
    g: &'g Grammar,
    opts: &'g LiftOptions,
    by_lhs: Vec<Vec<usize>>,
    res: Vec<Option<Re>>,
}

impl<'g> Resolver<'g> {
    fn new(g: &'g Grammar, opts: &'g LiftOptions) -> Resolver<'g> {
        Resolver { g, opts, by_lhs: g.rules_by_lhs(), res: vec![None; g.nonterminals.len()] }
    }

    fn solve(mut self) -> Vec<Option<Re>> {
        for comp in sccs(self.g, &self.by_lhs) {
            if let Some(sol) = self.component(&comp) {
                for (n, re) in comp.iter().zip(sol) {
                    self.res[*n as usize] = Some(re);
                }
            }
        }
        self.res
    }

    /// The patterns of one strongly connected component, or `None` if it is not regular (or
    /// excluded, or too large).
    fn component(&self, comp: &[u32]) -> Option<Vec<Re>> {
        if comp.iter().any(|&n| self.opts.keep.iter().any(|k| *k == self.g.nonterminals[n as usize].name)) {
            return None;
        }
        let index: HashMap<u32, usize> = comp.iter().enumerate().map(|(i, &n)| (n, i)).collect();
        let k = comp.len();
        // Equations X_i = Σ_j X_j·C_ij + B_i (left-linear) or Σ_j C_ij·X_j + B_i (right-linear).
        let mut coef = vec![vec![Re::never(); k]; k];
        let mut base = vec![Re::never(); k];
        let mut side: Option<bool> = None; // Some(true): left-linear.
        for (i, &n) in comp.iter().enumerate() {
            for &ri in &self.by_lhs[n as usize] {
                let rhs = &self.g.rules[ri].rhs;
                let inner: Vec<usize> =
                    (0..rhs.len()).filter(|&p| matches!(rhs[p], Symbol::N(m) if index.contains_key(&m))).collect();
                let rest = |range: std::ops::Range<usize>| -> Option<Re> {
                    let parts: Option<Vec<Re>> = rhs[range].iter().map(|&s| symbol_re(self.g, &self.res, s)).collect();
                    Some(Re::cat(parts?))
                };
                match inner[..] {
                    [] => base[i] = Re::alt(vec![base[i].clone(), rest(0..rhs.len())?]),
                    [p] => {
                        let Symbol::N(m) = rhs[p] else { return None };
                        let j = index[&m];
                        // A unit rule `X_i → X_j` is left- and right-linear at once.
                        let this_side = match (p == 0, p + 1 == rhs.len()) {
                            (true, true) => None,
                            (true, false) => Some(true),
                            (false, true) => Some(false),
                            (false, false) => return None,
                        };
                        if let Some(l) = this_side {
                            if *side.get_or_insert(l) != l {
                                return None;
                            }
                        }
                        let c = if p == 0 { rest(1..rhs.len())? } else { rest(0..p)? };
                        coef[i][j] = Re::alt(vec![coef[i][j].clone(), c]);
                    }
                    _ => return None,
                }
            }
        }
        let left = side.unwrap_or(true);
        // `a` then `b` in the order the equations' side reads: C·X for right-linear, X·C for left.
        let seq = |a: &Re, b: &Re| {
            if left {
                Re::cat(vec![b.clone(), a.clone()])
            } else {
                Re::cat(vec![a.clone(), b.clone()])
            }
        };
        for i in (0..k).rev() {
            let lp = Re::star(std::mem::replace(&mut coef[i][i], Re::never()));
            // X_i = lp·(Σ_(j≠i) C_ij·X_j + B_i) (or the mirror image, left-linear).
            let row: Vec<Re> = coef[i].iter().map(|c| seq(&lp, c)).collect();
            base[i] = seq(&lp, &base[i]);
            coef[i] = row;
            // Substituted into the equations not yet solved.
            let (earlier, rest) = coef.split_at_mut(i);
            let row_i = &rest[0];
            for (l, row_l) in earlier.iter_mut().enumerate() {
                let c = std::mem::replace(&mut row_l[i], Re::never());
                if c.is_never() {
                    continue;
                }
                for (j, (cl, ci)) in row_l.iter_mut().zip(row_i).enumerate() {
                    if j != i {
                        *cl = Re::alt(vec![cl.clone(), seq(&c, ci)]);
                    }
                }
                base[l] = Re::alt(vec![base[l].clone(), seq(&c, &base[i])]);
            }
        }
        let mut sol: Vec<Re> = Vec::with_capacity(k);
        for i in 0..k {
            let mut alts = vec![base[i].clone()];
            for (j, s) in sol.iter().enumerate() {
                if !coef[i][j].is_never() {
                    alts.push(seq(&coef[i][j], s));
                }
            }
            let re = Re::alt(alts);
            if re.is_never() || re.len() > self.opts.max_pattern_len || re.big() || re.weight() > MAX_WEIGHT {
                return None;
            }
            if re.nonempty().is_some_and(|r| !valid(&r)) {
                return None;
            }
            sol.push(re);
        }
        Some(sol)
    }
}

/// Strongly connected components of the nonterminals' reference graph, callees before callers
/// (Tarjan's algorithm, iterative).
fn sccs(g: &Grammar, by_lhs: &[Vec<usize>]) -> Vec<Vec<u32>> {
    let n = g.nonterminals.len();
    let succ: Vec<Vec<u32>> = (0..n)
        .map(|a| {
            let mut s: Vec<u32> = by_lhs[a]
                .iter()
                .flat_map(|&ri| g.rules[ri].rhs.iter())
                .filter_map(|s| if let Symbol::N(m) = s { Some(*m) } else { None })
                .collect();
            s.sort_unstable();
            s.dedup();
            s
        })
        .collect();
    let (mut index, mut low, mut on) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
    let (mut next, mut stack, mut out) = (0, Vec::new(), Vec::new());
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work: Vec<(usize, usize)> = vec![(root, 0)];
        while let Some(&mut (v, ref mut e)) = work.last_mut() {
            if *e == 0 && index[v] == usize::MAX {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on[v] = true;
            }
            if let Some(&w) = succ[v].get(*e) {
                *e += 1;
                let w = w as usize;
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(u, _)) = work.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == index[v] {
                let mut comp = Vec::new();
                while let Some(w) = stack.pop() {
                    on[w] = false;
                    comp.push(w as u32);
                    if w == v {
                        break;
                    }
                }
                comp.reverse();
                out.push(comp);
            }
        }
    }
    out
}
