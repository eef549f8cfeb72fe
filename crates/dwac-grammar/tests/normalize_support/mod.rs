//! Test support for normalization and LR tables: a tiny BNF notation, a bounded-language
//! enumerator, a seeded random-grammar generator and independent structural checks.
//! Shared with `dwac-lr`'s tests through `#[path]`.
#![allow(dead_code, reason = "each test binary that includes these helpers uses only some of them")]

use dwac_grammar::{Grammar, Symbol, Terminal};
use std::collections::{BTreeSet, HashMap};

/// A terminal whose regex matches its name literally.
pub fn terminal(name: &str) -> Terminal {
    let mut regex = String::new();
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            regex.push('\\');
        }
        regex.push(c);
    }
    Terminal::new(name, regex)
}

/// Parse `"S -> a S b | ; A -> x"`: rules separated by `;` or newlines, alternatives by
/// `|`, an empty alternative (or `ε`) is an ε-rule. Words starting with an uppercase
/// letter are nonterminals, everything else is a terminal. The first left-hand side is
/// the start symbol. A nonterminal used but never defined has no rules.
pub fn bnf(src: &str) -> Grammar {
    let mut g = Grammar::default();
    let mut nts: HashMap<String, u32> = HashMap::new();
    let mut ts: HashMap<String, u32> = HashMap::new();
    let mut nt = |g: &mut Grammar, name: &str| -> u32 {
        *nts.entry(name.to_string()).or_insert_with(|| g.add_nonterminal(name, None))
    };
    let mut first = true;
    for line in src.split([';', '\n']) {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (lhs, rhs) = line.split_once("->").unwrap_or_else(|| panic!("no `->` in {line:?}"));
        let lhs = nt(&mut g, lhs.trim());
        if first {
            g.start = lhs;
            first = false;
        }
        for alt in rhs.split('|') {
            let mut syms = Vec::new();
            for w in alt.split_whitespace() {
                if w == "ε" {
                    continue;
                }
                if w.starts_with(|c: char| c.is_ascii_uppercase()) {
                    syms.push(Symbol::N(nt(&mut g, w)));
                } else {
                    let id = *ts.entry(w.to_string()).or_insert_with(|| g.add_terminal(terminal(w)));
                    syms.push(Symbol::T(id));
                }
            }
            g.add_rule(lhs, syms, None);
        }
    }
    g
}

/// All terminal strings of length ≤ `k` derivable from the start symbol. A plain fixpoint
/// over nonterminals, so ε-rules, cycles and useless symbols are all fine.
pub fn lang(g: &Grammar, k: usize) -> BTreeSet<Vec<u32>> {
    lang_of(g, k).swap_remove(g.start as usize)
}

/// [`lang`] for every nonterminal.
pub fn lang_of(g: &Grammar, k: usize) -> Vec<BTreeSet<Vec<u32>>> {
    let n = g.nonterminals.len();
    let mut sets: Vec<BTreeSet<Vec<u32>>> = vec![BTreeSet::new(); n];
    // The same strings, bucketed by length, so concatenation only visits pairs that fit.
    let mut by_len: Vec<Vec<Vec<Vec<u32>>>> = vec![vec![Vec::new(); k + 1]; n];
    loop {
        let mut changed = false;
        for r in &g.rules {
            let mut acc: Vec<Vec<u32>> = vec![Vec::new()];
            for s in &r.rhs {
                let mut next = Vec::new();
                for a in &acc {
                    match *s {
                        Symbol::T(t) if a.len() < k => {
                            let mut x = a.clone();
                            x.push(t);
                            next.push(x);
                        }
                        Symbol::T(_) => {}
                        Symbol::N(b) => {
                            for bucket in &by_len[b as usize][..=k - a.len()] {
                                for w in bucket {
                                    let mut x = a.clone();
                                    x.extend_from_slice(w);
                                    next.push(x);
                                }
                            }
                        }
                    }
                }
                next.sort_unstable();
                next.dedup();
                acc = next;
                if acc.is_empty() {
                    break;
                }
            }
            for w in acc {
                if sets[r.lhs as usize].insert(w.clone()) {
                    by_len[r.lhs as usize][w.len()].push(w);
                    changed = true;
                }
            }
        }
        if !changed {
            return sets;
        }
    }
}

/// Whether the start symbol derives any terminal string at all (ε included).
pub fn generates_something(g: &Grammar) -> bool {
    generating_set(g)[g.start as usize]
}

fn generating_set(g: &Grammar) -> Vec<bool> {
    let mut gen = vec![false; g.nonterminals.len()];
    loop {
        let mut changed = false;
        for r in &g.rules {
            if !gen[r.lhs as usize]
                && r.rhs.iter().all(|s| match *s {
                    Symbol::T(_) => true,
                    Symbol::N(b) => gen[b as usize],
                })
            {
                gen[r.lhs as usize] = true;
                changed = true;
            }
        }
        if !changed {
            return gen;
        }
    }
}

/// A splitmix64 generator: seeded, deterministic, good enough for test grammars.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True with probability `p` percent.
    pub fn chance(&mut self, p: u64) -> bool {
        self.below(100) < p
    }
}

/// A small random CFG: 1–3 terminals (`a`, `b`, `c`), 1–5 nonterminals with 1–4 rules of
/// length 0–4 each; ε-rules, unit rules, cycles, useless symbols and left, right and
/// hidden recursion all occur.
pub fn random_grammar(seed: u64) -> Grammar {
    let mut rng = Rng(seed);
    let mut g = Grammar::default();
    let nt = 1 + rng.below(3) as u32;
    let nn = 1 + rng.below(5) as u32;
    for t in 0..nt {
        g.add_terminal(terminal(&((b'a' + t as u8) as char).to_string()));
    }
    for a in 0..nn {
        g.add_nonterminal(format!("N{a}"), None);
    }
    for a in 0..nn {
        let rules = 1 + rng.below(4);
        for _ in 0..rules {
            let len = match rng.below(10) {
                0 => 0,
                1 | 2 => 1,
                3..=5 => 2,
                6 | 7 => 3,
                _ => 4,
            };
            let rhs = (0..len)
                .map(|_| {
                    if rng.chance(45) {
                        Symbol::T(rng.below(nt as u64) as u32)
                    } else {
                        Symbol::N(rng.below(nn as u64) as u32)
                    }
                })
                .collect();
            g.add_rule(a, rhs, None);
        }
    }
    g
}

/// Every terminal sequence of length ≤ `k` over `0..nt`.
pub fn all_strings(nt: u32, k: usize) -> Vec<Vec<u32>> {
    let mut out = vec![Vec::new()];
    let mut layer = vec![Vec::new()];
    for _ in 0..k {
        let mut next = Vec::new();
        for w in &layer {
            for t in 0..nt {
                let mut x: Vec<u32> = w.clone();
                x.push(t);
                next.push(x);
            }
        }
        out.extend(next.iter().cloned());
        layer = next;
    }
    out
}

// ---------------------------------------------------------------------------------------
// Structural checks, written independently of the passes.

pub fn assert_epsilon_free(g: &Grammar) {
    for r in &g.rules {
        assert!(!r.rhs.is_empty(), "ε-rule for {}\n{g}", g.nonterminals[r.lhs as usize].name);
    }
}

/// `reach[a][b]`: `a ⇒+ b` along the edges `edges(rule)` (each rule gives lhs → targets).
fn closure(g: &Grammar, edges: impl Fn(&dwac_grammar::Rule) -> Vec<u32>) -> Vec<Vec<bool>> {
    let n = g.nonterminals.len();
    let mut reach = vec![vec![false; n]; n];
    for r in &g.rules {
        for b in edges(r) {
            reach[r.lhs as usize][b as usize] = true;
        }
    }
    for k in 0..n {
        let via = reach[k].clone();
        for row in &mut reach {
            if row[k] {
                for (r, &v) in row.iter_mut().zip(&via) {
                    *r |= v;
                }
            }
        }
    }
    reach
}

pub fn assert_no_unit_cycles(g: &Grammar) {
    let reach = closure(g, |r| match r.rhs[..] {
        [Symbol::N(b)] => vec![b],
        _ => vec![],
    });
    for (a, row) in reach.iter().enumerate() {
        assert!(!row[a], "unit cycle through {}\n{g}", g.nonterminals[a].name);
    }
}

/// Right-recursive nonterminals: `A ⇒+ …A` along right ends (unit rules included).
pub fn right_recursive(g: &Grammar) -> Vec<u32> {
    let reach = closure(g, |r| match r.rhs.last() {
        Some(&Symbol::N(b)) => vec![b],
        _ => vec![],
    });
    (0..g.nonterminals.len() as u32).filter(|&a| reach[a as usize][a as usize]).collect()
}

pub fn assert_no_right_recursion(g: &Grammar) {
    let rr = right_recursive(g);
    assert!(rr.is_empty(), "right recursion through {:?}\n{g}", rr);
}

/// Every nonterminal reachable from the start symbol and generating.
pub fn assert_reduced(g: &Grammar) {
    let gen = generating_set(g);
    let n = g.nonterminals.len();
    let mut reach = vec![false; n];
    reach[g.start as usize] = true;
    let mut stack = vec![g.start];
    while let Some(a) = stack.pop() {
        for r in g.rules.iter().filter(|r| r.lhs == a) {
            for s in &r.rhs {
                if let Symbol::N(b) = *s {
                    if !reach[b as usize] {
                        reach[b as usize] = true;
                        stack.push(b);
                    }
                }
            }
        }
    }
    for a in 0..n {
        assert!(gen[a] && reach[a], "useless nonterminal {}\n{g}", g.nonterminals[a].name);
    }
}

pub fn assert_no_duplicate_rules(g: &Grammar) {
    let mut seen = BTreeSet::new();
    for r in &g.rules {
        assert!(seen.insert((r.lhs, r.rhs.clone())), "duplicate rule\n{g}");
    }
}
