//! Grammar normalization (ARCHITECTURE.md "Invariants", normalized grammar): the passes that make reduction chains
//! between two shifts bounded, so the Parser DWA can be acyclic.
//!
//! Every pass is a separate function from [`Grammar`] to [`Grammar`] (plus a flag or a
//! list where the pass needs to say more), and every pass preserves the language: the set
//! of terminal strings derivable from the start symbol. The only exception is
//! [`eliminate_epsilon`], which moves the empty string out of the grammar and into the
//! `accepts_empty` flag.
//!
//! | pass | removes | postcondition |
//! |---|---|---|
//! | [`remove_useless`] | non-generating, then unreachable nonterminals; duplicate rules | reduced |
//! | [`eliminate_epsilon`] | ε-rules (nullable runs binarized first) | ε-free |
//! | [`remove_unit_cycles`] | `A → A`; SCCs of the unit-rule graph merged into one nonterminal | cycle-free (given ε-free) |
//! | [`eliminate_right_recursion`] | right recursion, rewritten to left recursion within a budget | no right recursion (given ε-free and cycle-free) |
//!
//! [`normalize`] runs them all, to a fixed point. Its output ([`Normalized`]) satisfies:
//!
//! * **Terminals are untouched.** The terminal table (ignored terminals included) is
//!   copied verbatim, so terminal ids are the front-end's ids.
//! * **Reduced.** Every nonterminal is reachable from the start symbol and generates a
//!   terminal string. The one exception is a language that is exactly `{ε}`: then the
//!   grammar is the start symbol alone, with no rules, and `accepts_empty` is set.
//! * **ε-free.** No rule has an empty right-hand side. `ε ∈ L` is the `accepts_empty` flag.
//! * **Cycle-free.** No `A ⇒+ A`. (ε-free, so a cycle could only be made of unit rules.)
//! * **No right recursion**, except for the nonterminals listed in
//!   `right_recursive_left`, whose rewrite did not fit the rule budget. The right-end
//!   graph (`A → B` iff some rule `A → αB`, `α` possibly empty) is acyclic outside them.
//!   The leftovers are still correct for GLR; only the DWA needs a fallback for them.
//! * **No duplicate rules** (same left- and right-hand side).
//! * **Deterministic.** The same input gives the same output, rule order included.
//!
//! Helper nonterminals made by the passes get names derived from the nonterminal they
//! serve (`expr'rr`, `list'seq1`), made unique against the existing names, and the span
//! of the rule they came from.

use crate::diag::GrammarError;
use crate::ir::{Grammar, Nonterminal, Rule, Span, Symbol};
use std::collections::{HashMap, HashSet};

mod right_recursion;

pub use right_recursion::eliminate_right_recursion;

/// The output of [`normalize`]. See the module documentation for its invariants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Normalized {
    /// Reduced, ε-free, cycle-free; right-recursion-free outside `right_recursive_left`.
    pub grammar: Grammar,
    /// The empty string is in the language (the grammar itself never derives it).
    pub accepts_empty: bool,
    /// Nonterminals of `grammar` that are still right-recursive because their rewrite
    /// exceeded the rule budget (sorted). Empty in the common case.
    pub right_recursive_left: Vec<u32>,
}

/// Options for [`normalize_with`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NormalizeOptions {
    /// How many rules right-recursion elimination may add in total before it gives up on
    /// the remaining recursive components. `None` means [`default_rule_budget`].
    pub rule_budget: Option<usize>,
    /// Compile character-level grammars as they are, without lifting their regular parts into
    /// lexer terminals first ([`crate::lift`], which the compiler runs by default). For tests
    /// that compare the two.
    pub skip_lexer_inference: bool,
}

/// The output of [`eliminate_epsilon`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EpsilonFree {
    /// ε-free; the language is the input's minus `ε`.
    pub grammar: Grammar,
    /// The input's start symbol derives ε.
    pub accepts_empty: bool,
}

/// The output of [`eliminate_right_recursion`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RightRecursionFree {
    /// The input with its right recursion rewritten into left recursion, except in the
    /// components of `right_recursive_left`; the language is the input's.
    pub grammar: Grammar,
    /// Nonterminals (ids valid in both input and output) whose strongly connected
    /// component of the right-end graph was left alone because rewriting it would have
    /// exceeded the budget (sorted).
    pub right_recursive_left: Vec<u32>,
}

/// How many rules the right-recursion rewrite may add: ten times the input, at least 10 000.
pub fn default_rule_budget(g: &Grammar) -> usize {
    (10 * g.rules.len()).max(10_000)
}

/// Run every pass to a fixed point with default options.
///
/// # Errors
///
/// If the grammar refers to nonterminals or terminals that do not exist, or generates
/// no sentence at all (not even ε).
pub fn normalize(g: &Grammar) -> Result<Normalized, GrammarError> {
    normalize_with(g, &NormalizeOptions::default())
}

/// Run every pass to a fixed point: useless symbols, ε-rules, unit cycles, right
/// recursion, and useless symbols again, until nothing changes.
///
/// # Errors
///
/// As [`normalize`].
pub fn normalize_with(g: &Grammar, opts: &NormalizeOptions) -> Result<Normalized, GrammarError> {
    const MAX_ROUNDS: usize = 4;
    let budget = opts.rule_budget.unwrap_or_else(|| default_rule_budget(g));
    let mut cur = remove_useless(g)?;
    let mut accepts_empty = false;
    for _ in 0..MAX_ROUNDS {
        let eps = eliminate_epsilon(&cur);
        accepts_empty |= eps.accepts_empty;
        if !generating(&eps.grammar)[eps.grammar.start as usize] {
            // Nothing but ε is left: the language is exactly {ε} (it is not empty, since
            // `cur` is reduced and so generates something).
            return Ok(Normalized {
                grammar: Grammar {
                    terminals: g.terminals.clone(),
                    nonterminals: vec![cur.nonterminals[cur.start as usize].clone()],
                    rules: Vec::new(),
                    start: 0,
                    ..Grammar::default()
                },
                accepts_empty: true,
                right_recursive_left: Vec::new(),
            });
        }
        let next = remove_useless(&eps.grammar)?;
        let next = remove_useless(&remove_unit_cycles(&next))?;
        let next = remove_useless(&eliminate_right_recursion(&next, budget).grammar)?;
        if next == cur {
            break;
        }
        cur = next;
    }
    let right_recursive_left = right_recursive_nonterminals(&cur);
    Ok(Normalized { grammar: cur, accepts_empty, right_recursive_left })
}

// ---------------------------------------------------------------------------------------
// Analyses.

/// Check that every symbol id in `g` is in range.
///
/// # Errors
///
/// A global [`GrammarError`] naming the first bad reference.
pub fn check_ids(g: &Grammar) -> Result<(), GrammarError> {
    let (nt, nn) = (g.terminals.len(), g.nonterminals.len());
    if g.start as usize >= nn {
        return Err(GrammarError::global(format!("start symbol {} does not exist", g.start)));
    }
    for (i, r) in g.rules.iter().enumerate() {
        if r.lhs as usize >= nn {
            return Err(GrammarError::global(format!("rule {i}: no nonterminal {}", r.lhs)));
        }
        for s in &r.rhs {
            let ok = match *s {
                Symbol::T(t) => (t as usize) < nt,
                Symbol::N(n) => (n as usize) < nn,
            };
            if !ok {
                return Err(GrammarError::global(format!("rule {i}: no symbol {s:?}")));
            }
        }
    }
    Ok(())
}

/// Nonterminals that derive at least one terminal string (ε included).
pub fn generating(g: &Grammar) -> Vec<bool> {
    // A rule fires once all of its nonterminal occurrences are known to generate.
    fixpoint_by_counts(g, |r| r.rhs.iter().filter(|s| matches!(s, Symbol::N(_))).count(), |_| true)
}

/// Nonterminals that derive ε.
pub fn nullable(g: &Grammar) -> Vec<bool> {
    // Only rules made of nonterminals alone can be nullable.
    fixpoint_by_counts(g, |r| r.rhs.len(), |r| r.rhs.iter().all(|s| matches!(s, Symbol::N(_))))
}

/// Marks `lhs` of every rule whose `need(rule)` nonterminal occurrences are all marked
/// (rules failing `eligible` never fire). Linear in the grammar size.
fn fixpoint_by_counts(g: &Grammar, need: impl Fn(&Rule) -> usize, eligible: impl Fn(&Rule) -> bool) -> Vec<bool> {
    let n = g.nonterminals.len();
    let mut marked = vec![false; n];
    let mut remaining: Vec<usize> = g.rules.iter().map(&need).collect();
    let mut occurs: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut queue = Vec::new();
    for (i, r) in g.rules.iter().enumerate() {
        if !eligible(r) {
            remaining[i] = usize::MAX;
            continue;
        }
        for s in &r.rhs {
            if let Symbol::N(b) = *s {
                occurs[b as usize].push(i as u32);
            }
        }
        if remaining[i] == 0 && !marked[r.lhs as usize] {
            marked[r.lhs as usize] = true;
            queue.push(r.lhs);
        }
    }
    while let Some(a) = queue.pop() {
        for &i in &occurs[a as usize] {
            let i = i as usize;
            remaining[i] -= 1;
            let lhs = g.rules[i].lhs as usize;
            if remaining[i] == 0 && !marked[lhs] {
                marked[lhs] = true;
                queue.push(lhs as u32);
            }
        }
    }
    marked
}

/// The right-end graph: `A → B` iff some rule `A → αB` (`α` possibly empty). Sorted, deduplicated.
pub fn right_end_graph(g: &Grammar) -> Vec<Vec<u32>> {
    let mut adj = vec![Vec::new(); g.nonterminals.len()];
    for r in &g.rules {
        if let Some(&Symbol::N(b)) = r.rhs.last() {
            adj[r.lhs as usize].push(b);
        }
    }
    for a in &mut adj {
        a.sort_unstable();
        a.dedup();
    }
    adj
}

/// Nonterminals `A` with `A ⇒+ αA` (sorted). In an ε-free, cycle-free grammar `α` is then
/// non-empty: these are exactly the right-recursive nonterminals.
pub fn right_recursive_nonterminals(g: &Grammar) -> Vec<u32> {
    let adj = right_end_graph(g);
    let mut out: Vec<u32> = sccs(&adj)
        .into_iter()
        .filter(|c| c.len() > 1 || adj[c[0] as usize].binary_search(&c[0]).is_ok())
        .flatten()
        .collect();
    out.sort_unstable();
    out
}

/// Strongly connected components of a graph given by adjacency lists (iterative Tarjan).
/// Components come out in reverse topological order (sinks first); members are in
/// discovery order.
fn sccs(adj: &[Vec<u32>]) -> Vec<Vec<u32>> {
    const UNSEEN: u32 = u32::MAX;
    let n = adj.len();
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut out = Vec::new();
    let mut next = 0u32;
    let mut call: Vec<(u32, usize)> = Vec::new();
    for root in 0..n as u32 {
        if index[root as usize] != UNSEEN {
            continue;
        }
        call.push((root, 0));
        index[root as usize] = next;
        low[root as usize] = next;
        next += 1;
        stack.push(root);
        on_stack[root as usize] = true;
        while let Some(&mut (v, ref mut ei)) = call.last_mut() {
            let vu = v as usize;
            if let Some(&w) = adj[vu].get(*ei) {
                *ei += 1;
                let wu = w as usize;
                if index[wu] == UNSEEN {
                    index[wu] = next;
                    low[wu] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[wu] = true;
                    call.push((w, 0));
                } else if on_stack[wu] {
                    low[vu] = low[vu].min(index[wu]);
                }
                continue;
            }
            call.pop();
            if let Some(&(p, _)) = call.last() {
                low[p as usize] = low[p as usize].min(low[vu]);
            }
            if low[vu] == index[vu] {
                let mut comp = Vec::new();
                loop {
                    let w = stack.pop().expect("Tarjan stack holds the component");
                    on_stack[w as usize] = false;
                    comp.push(w);
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

// ---------------------------------------------------------------------------------------
// Shared plumbing.

/// Keep the first of every group of identical rules.
fn dedup_rules(rules: Vec<Rule>) -> Vec<Rule> {
    let mut seen: HashSet<(u32, Vec<Symbol>)> = HashSet::with_capacity(rules.len());
    rules.into_iter().filter(|r| seen.insert((r.lhs, r.rhs.clone()))).collect()
}

/// A grammar with the same terminals as `g`, keeping only the nonterminals marked in
/// `keep` (renumbered in order) and the given rules (which must use kept nonterminals only).
fn rebuild(g: &Grammar, nonterminals: &[Nonterminal], keep: &[bool], rules: Vec<Rule>) -> Grammar {
    let mut map = vec![u32::MAX; nonterminals.len()];
    let mut nts = Vec::new();
    for (i, nt) in nonterminals.iter().enumerate() {
        if keep[i] {
            map[i] = nts.len() as u32;
            nts.push(nt.clone());
        }
    }
    let sym = |s: Symbol| match s {
        Symbol::N(n) => Symbol::N(map[n as usize]),
        t => t,
    };
    let rules = rules
        .into_iter()
        .map(|r| Rule { lhs: map[r.lhs as usize], rhs: r.rhs.into_iter().map(sym).collect(), span: r.span })
        .collect();
    Grammar {
        terminals: g.terminals.clone(),
        nonterminals: nts,
        rules,
        start: map[g.start as usize],
        ..Grammar::default()
    }
}

/// Fresh, unique nonterminal names.
struct Names {
    used: HashSet<String>,
}

impl Names {
    fn new(nts: &[Nonterminal]) -> Names {
        Names { used: nts.iter().map(|n| n.name.clone()).collect() }
    }

    fn fresh(&mut self, base: &str, tag: &str) -> String {
        let mut k = 1usize;
        loop {
            let name = if k == 1 { format!("{base}'{tag}") } else { format!("{base}'{tag}{k}") };
            if self.used.insert(name.clone()) {
                return name;
            }
            k += 1;
        }
    }
}

// ---------------------------------------------------------------------------------------
// Pass 1: useless symbols.

/// Drop non-generating nonterminals and the rules that use them, then unreachable
/// nonterminals, then duplicate rules. Nonterminals are renumbered (order kept);
/// terminals are kept as they are, so terminal ids stay stable.
///
/// # Errors
///
/// If an id is out of range ([`check_ids`]), or the start symbol generates nothing
/// ("grammar generates no sentence").
pub fn remove_useless(g: &Grammar) -> Result<Grammar, GrammarError> {
    check_ids(g)?;
    let gen = generating(g);
    if !gen[g.start as usize] {
        let name = &g.nonterminals[g.start as usize];
        let mut e = GrammarError::global(format!(
            "grammar generates no sentence (start symbol `{}` derives no terminal string)",
            name.name
        ));
        if let Some(span) = name.span {
            e.span = span;
        }
        return Err(e);
    }
    let usable = |r: &Rule| {
        gen[r.lhs as usize]
            && r.rhs.iter().all(|s| match *s {
                Symbol::N(n) => gen[n as usize],
                Symbol::T(_) => true,
            })
    };
    let by_lhs = g.rules_by_lhs();
    let mut reach = vec![false; g.nonterminals.len()];
    reach[g.start as usize] = true;
    let mut queue = vec![g.start];
    while let Some(a) = queue.pop() {
        for &i in &by_lhs[a as usize] {
            let r = &g.rules[i];
            if !usable(r) {
                continue;
            }
            for s in &r.rhs {
                if let Symbol::N(b) = *s {
                    if !reach[b as usize] {
                        reach[b as usize] = true;
                        queue.push(b);
                    }
                }
            }
        }
    }
    let rules = g.rules.iter().filter(|r| reach[r.lhs as usize] && usable(r)).cloned().collect();
    Ok(rebuild(g, &g.nonterminals, &reach, dedup_rules(rules)))
}

// ---------------------------------------------------------------------------------------
// Pass 2: ε-rules.

/// Rules with more nullable symbols than this are binarized before expansion, so each
/// rule expands into at most `2^MAX_DIRECT_NULLABLE` variants.
const MAX_DIRECT_NULLABLE: usize = 3;

/// Remove every ε-rule. A rule `A → X1 … Xn` becomes one rule per way of dropping some of
/// its nullable symbols (never all of them). A rule with more than three nullable symbols
/// is first cut, left to right, into chunks holding one nullable symbol each, and folded
/// into a left-nested chain of helper rules (`H1 → c1 c2`, `H2 → H1 c3`, …, `A → Hm c_{m+1}`),
/// so each rule has at most two nullable symbols: the expansion stays linear.
///
/// The language is the input's minus ε; `accepts_empty` says whether ε was in it.
/// The output may contain useless symbols (nonterminals that only derived ε) and unit
/// cycles (`A → A B` with `B` nullable becomes `A → A`, which is dropped, but longer
/// cycles stay): run [`remove_useless`] and [`remove_unit_cycles`] after it.
pub fn eliminate_epsilon(g: &Grammar) -> EpsilonFree {
    let mut null = nullable(g);
    let accepts_empty = null.get(g.start as usize).copied().unwrap_or(false);
    let mut nts = g.nonterminals.clone();
    let mut names = Names::new(&nts);
    let mut helpers: HashMap<Vec<Symbol>, u32> = HashMap::new();
    let is_null = |null: &[bool], s: Symbol| matches!(s, Symbol::N(n) if null[n as usize]);

    // Binarize rules with many nullable symbols.
    let mut bin: Vec<Rule> = Vec::with_capacity(g.rules.len());
    for r in &g.rules {
        let count = r.rhs.iter().filter(|&&s| is_null(&null, s)).count();
        if count <= MAX_DIRECT_NULLABLE {
            bin.push(r.clone());
            continue;
        }
        let mut chunks: Vec<Vec<Symbol>> = vec![Vec::new()];
        let mut has_null = false;
        for &s in &r.rhs {
            if is_null(&null, s) {
                if has_null {
                    chunks.push(Vec::new());
                }
                has_null = true;
            }
            chunks.last_mut().expect("at least one chunk").push(s);
        }
        // chunks.len() == count >= 4.
        let mut acc: Vec<Symbol> = chunks[0].clone();
        for chunk in &chunks[1..chunks.len() - 1] {
            acc.extend_from_slice(chunk);
            let h = match helpers.get(&acc) {
                Some(&h) => h,
                None => {
                    let base = g.nonterminals[r.lhs as usize].name.clone();
                    let h = nts.len() as u32;
                    nts.push(Nonterminal { name: names.fresh(&base, "seq"), span: r.span });
                    null.push(acc.iter().all(|&s| is_null(&null, s)));
                    bin.push(Rule { lhs: h, rhs: acc.clone(), span: r.span });
                    helpers.insert(acc.clone(), h);
                    h
                }
            };
            acc = vec![Symbol::N(h)];
        }
        acc.extend_from_slice(chunks.last().expect("at least one chunk"));
        bin.push(Rule { lhs: r.lhs, rhs: acc, span: r.span });
    }

    // Expand: every subset of nullable positions may be dropped.
    let mut out: Vec<Rule> = Vec::with_capacity(bin.len() * 2);
    for r in &bin {
        let pos: Vec<usize> = (0..r.rhs.len()).filter(|&i| is_null(&null, r.rhs[i])).collect();
        for mask in 0u32..(1 << pos.len()) {
            let rhs: Vec<Symbol> = r
                .rhs
                .iter()
                .enumerate()
                .filter(|&(i, _)| match pos.iter().position(|&p| p == i) {
                    Some(k) => mask >> k & 1 == 0,
                    None => true,
                })
                .map(|(_, &s)| s)
                .collect();
            if rhs.is_empty() || rhs == [Symbol::N(r.lhs)] {
                continue;
            }
            out.push(Rule { lhs: r.lhs, rhs, span: r.span });
        }
    }
    let grammar = Grammar {
        terminals: g.terminals.clone(),
        nonterminals: nts,
        rules: dedup_rules(out),
        start: g.start,
        ..Grammar::default()
    };
    EpsilonFree { grammar, accepts_empty }
}

// ---------------------------------------------------------------------------------------
// Pass 3: unit cycles.

/// Drop rules `A → A` and merge every strongly connected component of the unit-rule graph
/// (`A → B` iff there is a rule `A → B`) into one nonterminal: the start symbol if it is a
/// member, else the member with the smallest id. All members derive each other, so they
/// have the same language and the merge preserves it. Rules that become duplicates are
/// dropped and nonterminals are renumbered (order kept).
///
/// On an ε-free grammar the result is cycle-free: no `A ⇒+ A`.
pub fn remove_unit_cycles(g: &Grammar) -> Grammar {
    let n = g.nonterminals.len();
    let mut adj = vec![Vec::new(); n];
    for r in &g.rules {
        if let [Symbol::N(b)] = r.rhs[..] {
            if b != r.lhs {
                adj[r.lhs as usize].push(b);
            }
        }
    }
    let mut rep: Vec<u32> = (0..n as u32).collect();
    for comp in sccs(&adj) {
        if comp.len() > 1 {
            let r = if comp.contains(&g.start) { g.start } else { *comp.iter().min().expect("non-empty") };
            for &m in &comp {
                rep[m as usize] = r;
            }
        }
    }
    let sym = |s: Symbol| match s {
        Symbol::N(b) => Symbol::N(rep[b as usize]),
        t => t,
    };
    let rules = g
        .rules
        .iter()
        .map(|r| Rule { lhs: rep[r.lhs as usize], rhs: r.rhs.iter().map(|&s| sym(s)).collect(), span: r.span })
        .filter(|r| r.rhs != [Symbol::N(r.lhs)])
        .collect();
    let keep: Vec<bool> = (0..n).map(|i| rep[i] == i as u32).collect();
    rebuild(g, &g.nonterminals, &keep, dedup_rules(rules))
}
