//! dwac-lr: LALR(1) tables for a normalized grammar, with every conflict kept for GLR
//! (ARCHITECTURE.md "Invariants", normalized grammar).
//!
//! [`build`] takes a [`Normalized`] grammar (ε-free; reduced and cycle-free in practice)
//! and produces [`dwac_runtime::unstable::LrTables`]:
//!
//! 1. **LR(0) canonical collection** over the grammar augmented with `S' → S`. States are
//!    identified by their kernels (sorted item lists). State 0 is the start state, and
//!    states are numbered breadth-first, so the output is deterministic.
//! 2. **LALR(1) lookaheads** by DeRemer & Pennello (1982): `Read` sets are the direct
//!    reads (the grammar is ε-free, so the `reads` relation is empty), `Follow` is their
//!    closure along `includes`, computed with the SCC-based digraph algorithm on bitsets,
//!    and `LA(q, A→ω)` is the union of `Follow(p, A)` over the `lookback` transitions.
//!    This is exactly LALR(1), not SLR.
//! 3. **ACTION / GOTO.** Shifts on terminal transitions; `Reduce(r)` on `LA`; `Accept` on
//!    `$` in the state holding `S' → S•`, and also in state 0 if `accepts_empty`. Cells may
//!    hold several actions (shift/reduce and reduce/reduce conflicts): GLR explores them all.
//!
//! There is no row-merging pass: in this automaton no two states have identical rows.
//! A kernel item `A → α•β` with `α ≠ ε` can only come from a kernel item of the same rule,
//! so following `β` from a state holding it reaches a state that reduces `A → αβ` (on a
//! non-empty LALR lookahead: the grammar is reduced), while following `β` from a state
//! without it does not. Distinct kernels therefore differ in behaviour. (LR(1) or IELR
//! tables would need merging; LALR(1) already is the merge.)
//!
//! Table conventions:
//!
//! * Terminals are the grammar's terminal ids; `$` is `num_terminals`.
//! * Rule `r` in `Reduce(r)`, `rule_lhs` and `rule_len` is rule `r` of the normalized
//!   grammar. The augmented rule `S' → S` is never reduced (it is the `Accept` action), so
//!   it has no index and `S'` has no id: `num_nonterminals` is the grammar's.
//! * Ignored terminals never appear in rules, so they never appear in ACTION rows.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

use dwac_grammar::normalize::Normalized;
use dwac_grammar::{Grammar, Symbol};
use dwac_runtime::unstable::{Action, LrTables};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::hash::{BuildHasherDefault, Hasher};

/// Limits for [`build_with`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LrConfig {
    /// Fail with [`LrError::TooManyStates`] once the LR(0) automaton has more states.
    pub max_states: usize,
}

impl Default for LrConfig {
    fn default() -> LrConfig {
        LrConfig { max_states: 4_000_000 }
    }
}

/// An LR(0) item: `dot` symbols of rule `rule` have been read. `rule == num_rules` is the
/// augmented rule `S' → S`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Item {
    /// The rule's index in the normalized grammar (`num_rules`: the augmented rule).
    pub rule: u32,
    /// How many symbols of the rule's right-hand side are before the dot.
    pub dot: u32,
}

/// The tables and some facts about them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LrBuild {
    /// The ACTION and GOTO tables, with the rules' left-hand sides and lengths.
    pub tables: LrTables,
    /// States in `tables` (those of the LR(0) automaton).
    pub states: usize,
    /// ACTION cells (state, terminal) holding more than one action.
    pub conflicts: usize,
    /// Conflict cells holding a shift and at least one reduce.
    pub shift_reduce: usize,
    /// Conflict cells holding at least two reduces.
    pub reduce_reduce: usize,
    /// Kernel items of every state, sorted (the augmented item last).
    pub kernels: Vec<Vec<Item>>,
}

/// Why the tables could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LrError {
    /// A rule derives the empty string (the grammar was not normalized).
    #[error("rule {rule} has an empty right-hand side; LR tables need an ε-free (normalized) grammar")]
    EpsilonRule {
        /// The rule's index.
        rule: usize,
    },
    /// A rule names a terminal or nonterminal the grammar does not have.
    #[error("rule {rule} refers to a symbol that does not exist")]
    BadSymbol {
        /// The rule's index.
        rule: usize,
    },
    /// The start symbol is not a nonterminal of the grammar.
    #[error("the start symbol {start} does not exist")]
    BadStart {
        /// The start symbol's id.
        start: u32,
    },
    /// More rules than an [`Action`] can name.
    #[error("the grammar has {rules} rules, more than the table encoding allows ({limit})")]
    TooManyRules {
        /// The grammar's rules.
        rules: usize,
        /// The most an [`Action`] can name.
        limit: usize,
    },
    /// The LR(0) automaton grew past [`LrConfig::max_states`].
    #[error("the LR automaton has more than {limit} states")]
    TooManyStates {
        /// The limit it passed.
        limit: usize,
    },
}

/// Largest state or rule index an [`Action`] can hold.
const PACK_LIMIT: usize = (1 << 30) - 1;
const NONE: u32 = u32::MAX;

/// Build LALR(1) tables with default limits.
///
/// # Errors
///
/// See [`LrError`]: an ε-rule, a dangling symbol id, or a grammar too large.
pub fn build(n: &Normalized) -> Result<LrBuild, LrError> {
    build_with(n, &LrConfig::default())
}

/// Build LALR(1) tables.
///
/// # Errors
///
/// As [`build`], with `config.max_states` as the state limit.
pub fn build_with(n: &Normalized, config: &LrConfig) -> Result<LrBuild, LrError> {
    let g = &n.grammar;
    let prep = Prep::new(g)?;
    let max_states = config.max_states.min(PACK_LIMIT);
    let lr0 = Lr0::build(&prep, max_states)?;
    let la = lookaheads(&prep, &lr0);
    let rows = actions(&prep, &lr0, &la, n.accepts_empty);
    let kernels: Vec<Vec<Item>> = lr0.kernels.iter().map(|k| k.iter().map(|&it| prep.item(it)).collect()).collect();

    let (mut conflicts, mut shift_reduce, mut reduce_reduce) = (0, 0, 0);
    for row in &rows.actions {
        for (_, acts) in row {
            if acts.len() > 1 {
                conflicts += 1;
                let reduces = acts.iter().filter(|a| matches!(a, Action::Reduce(_))).count();
                if acts.iter().any(|a| matches!(a, Action::Shift(_))) && reduces > 0 {
                    shift_reduce += 1;
                }
                if reduces > 1 {
                    reduce_reduce += 1;
                }
            }
        }
    }
    let rule_lhs = g.rules.iter().map(|r| r.lhs).collect();
    let rule_len = g.rules.iter().map(|r| r.rhs.len() as u32).collect();
    let tables = LrTables::from_rows(
        g.terminals.len() as u32,
        g.nonterminals.len() as u32,
        &rows.actions,
        &rows.gotos,
        rule_lhs,
        rule_len,
    );
    Ok(LrBuild { tables, states: rows.actions.len(), conflicts, shift_reduce, reduce_reduce, kernels })
}

impl LrBuild {
    /// A readable dump of every state: kernel items, ACTION and GOTO rows.
    pub fn describe(&self, g: &Grammar) -> String {
        let nt = g.terminals.len() as u32;
        let term = |t: u32| if t == nt { "$".to_string() } else { g.terminals[t as usize].name.clone() };
        let mut out = String::new();
        let t = &self.tables;
        let augmented = [Symbol::N(g.start)];
        for p in 0..t.num_states {
            let _ = writeln!(out, "state {p}");
            for it in &self.kernels[p as usize] {
                let (lhs, rhs): (&str, &[Symbol]) = match g.rules.get(it.rule as usize) {
                    Some(r) => (&g.nonterminals[r.lhs as usize].name, &r.rhs),
                    None => ("S'", &augmented),
                };
                let _ = write!(out, "  {lhs} →");
                for (i, s) in rhs.iter().enumerate() {
                    if i == it.dot as usize {
                        out.push_str(" •");
                    }
                    let _ = write!(out, " {}", g.symbol_name(*s));
                }
                if it.dot as usize == rhs.len() {
                    out.push_str(" •");
                }
                out.push('\n');
            }
            let (a, b) = (t.action_row[p as usize] as usize, t.action_row[p as usize + 1] as usize);
            for e in a..b {
                let acts = &t.actions[t.action_off[e] as usize..t.action_off[e + 1] as usize];
                let _ = write!(out, "  on {}:", term(t.action_term[e]));
                for &x in acts {
                    match Action::unpack(x) {
                        Action::Shift(s) => write!(out, " shift {s}"),
                        Action::Reduce(r) => write!(out, " reduce {r}"),
                        Action::Accept => write!(out, " accept"),
                    }
                    .expect("writing to a String");
                }
                out.push('\n');
            }
            let (a, b) = (t.goto_row[p as usize] as usize, t.goto_row[p as usize + 1] as usize);
            for e in a..b {
                let name = &g.nonterminals[t.goto_nt[e] as usize].name;
                let _ = writeln!(out, "  goto {name}: {}", t.goto_target[e]);
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------------------
// Grammar in flat form.

/// Symbols are `0..nt` (terminals) and `nt..nt+nn` (nonterminals). Items are numbered
/// `base[r] + dot`; the augmented rule `S' → S` is rule `num_rules`.
struct Prep {
    nt: u32,
    num_rules: u32,
    rules_of: Vec<Vec<u32>>,
    /// Per item: the symbol after the dot, or [`NONE`] when the item is complete.
    item_next: Vec<u32>,
    item_rule: Vec<u32>,
    base: Vec<u32>,
    rhs: Vec<Vec<u32>>,
}

impl Prep {
    fn new(g: &Grammar) -> Result<Prep, LrError> {
        let nt = g.terminals.len() as u32;
        let nn = g.nonterminals.len() as u32;
        if g.start >= nn {
            return Err(LrError::BadStart { start: g.start });
        }
        if g.rules.len() > PACK_LIMIT {
            return Err(LrError::TooManyRules { rules: g.rules.len(), limit: PACK_LIMIT });
        }
        let mut rules_of = vec![Vec::new(); nn as usize];
        let mut rhs = Vec::with_capacity(g.rules.len() + 1);
        for (i, r) in g.rules.iter().enumerate() {
            if r.rhs.is_empty() {
                return Err(LrError::EpsilonRule { rule: i });
            }
            if r.lhs >= nn {
                return Err(LrError::BadSymbol { rule: i });
            }
            let mut syms = Vec::with_capacity(r.rhs.len());
            for s in &r.rhs {
                syms.push(match *s {
                    Symbol::T(t) if t < nt => t,
                    Symbol::N(a) if a < nn => nt + a,
                    _ => return Err(LrError::BadSymbol { rule: i }),
                });
            }
            rules_of[r.lhs as usize].push(i as u32);
            rhs.push(syms);
        }
        rhs.push(vec![nt + g.start]);
        let mut base = Vec::with_capacity(rhs.len());
        let (mut item_next, mut item_rule) = (Vec::new(), Vec::new());
        for (r, syms) in rhs.iter().enumerate() {
            base.push(item_next.len() as u32);
            for dot in 0..=syms.len() {
                item_next.push(syms.get(dot).copied().unwrap_or(NONE));
                item_rule.push(r as u32);
            }
        }
        Ok(Prep { nt, num_rules: g.rules.len() as u32, rules_of, item_next, item_rule, base, rhs })
    }

    fn item(&self, it: u32) -> Item {
        let rule = self.item_rule[it as usize];
        Item { rule, dot: it - self.base[rule as usize] }
    }

    /// The item `S' → S•`.
    fn accept_item(&self) -> u32 {
        self.base[self.num_rules as usize] + 1
    }
}

// ---------------------------------------------------------------------------------------
// LR(0).

/// A fast hasher for kernels (FxHash); only lookups depend on it, never the output order.
#[derive(Default)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(w));
        }
    }

    fn write_u32(&mut self, x: u32) {
        self.write_u64(x as u64);
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

struct Lr0 {
    kernels: Vec<Box<[u32]>>,
    /// Transitions in CSR form, sorted by symbol within a state.
    trans_off: Vec<u32>,
    trans_sym: Vec<u32>,
    trans_tgt: Vec<u32>,
}

impl Lr0 {
    fn build(p: &Prep, max_states: usize) -> Result<Lr0, LrError> {
        let nsym = p.nt as usize + p.rules_of.len();
        let start: Box<[u32]> = vec![p.base[p.num_rules as usize]].into();
        let mut kernels: Vec<Box<[u32]>> = vec![start.clone()];
        let mut index: FxMap<Box<[u32]>, u32> = FxMap::default();
        index.insert(start, 0);
        let mut lr0 = Lr0 { kernels: Vec::new(), trans_off: vec![0], trans_sym: Vec::new(), trans_tgt: Vec::new() };
        let mut stamp = vec![NONE; p.rules_of.len()];
        let mut bucket: Vec<Vec<u32>> = vec![Vec::new(); nsym];
        let mut touched: Vec<u32> = Vec::new();
        let mut items: Vec<u32> = Vec::new();
        let mut s = 0usize;
        while s < kernels.len() {
            items.clear();
            items.extend_from_slice(&kernels[s]);
            let mut i = 0;
            while i < items.len() {
                let x = p.item_next[items[i] as usize];
                if x != NONE && x >= p.nt {
                    let a = (x - p.nt) as usize;
                    if stamp[a] != s as u32 {
                        stamp[a] = s as u32;
                        items.extend(p.rules_of[a].iter().map(|&r| p.base[r as usize]));
                    }
                }
                i += 1;
            }
            for &it in &items {
                let x = p.item_next[it as usize];
                if x != NONE {
                    if bucket[x as usize].is_empty() {
                        touched.push(x);
                    }
                    bucket[x as usize].push(it + 1);
                }
            }
            touched.sort_unstable();
            for &x in &touched {
                let mut k = std::mem::take(&mut bucket[x as usize]);
                k.sort_unstable();
                let k: Box<[u32]> = k.into();
                let target = match index.get(&k) {
                    Some(&t) => t,
                    None => {
                        let t = kernels.len() as u32;
                        if kernels.len() >= max_states {
                            return Err(LrError::TooManyStates { limit: max_states });
                        }
                        kernels.push(k.clone());
                        index.insert(k, t);
                        t
                    }
                };
                lr0.trans_sym.push(x);
                lr0.trans_tgt.push(target);
            }
            touched.clear();
            lr0.trans_off.push(lr0.trans_sym.len() as u32);
            s += 1;
        }
        lr0.kernels = kernels;
        Ok(lr0)
    }

    fn num_states(&self) -> usize {
        self.kernels.len()
    }

    fn range(&self, s: u32) -> std::ops::Range<usize> {
        self.trans_off[s as usize] as usize..self.trans_off[s as usize + 1] as usize
    }

    /// Index of the transition of `s` on `x` in the CSR arrays.
    fn find(&self, s: u32, x: u32) -> Option<usize> {
        let r = self.range(s);
        let start = r.start;
        self.trans_sym[r].binary_search(&x).ok().map(|i| start + i)
    }
}

// ---------------------------------------------------------------------------------------
// LALR(1) lookaheads (DeRemer & Pennello).

/// Lookahead sets: for every state, its complete items' rules with their `LA` bitsets
/// (`words` u64 per set, bit `t` for terminal `t`, bit `nt` for `$`).
struct Lookaheads {
    words: usize,
    /// Per state: entries `state_off[s]..state_off[s+1]` of (`rule`, offset into `bits`).
    state_off: Vec<u32>,
    rules: Vec<u32>,
    bits: Vec<u64>,
}

fn lookaheads(p: &Prep, lr0: &Lr0) -> Lookaheads {
    let words = (p.nt as usize + 1).div_ceil(64);
    let ns = lr0.num_states();

    // Nonterminal transitions (p, A), numbered in CSR order; `ntid[e]` for CSR entry e.
    let mut ntid = vec![NONE; lr0.trans_sym.len()];
    let mut nts: Vec<(u32, u32, u32)> = Vec::new(); // (state, A, target)
    for s in 0..ns as u32 {
        for e in lr0.range(s) {
            let x = lr0.trans_sym[e];
            if x >= p.nt {
                ntid[e] = nts.len() as u32;
                nts.push((s, x - p.nt, lr0.trans_tgt[e]));
            }
        }
    }

    // Direct reads: the terminals the target state shifts, and `$` after `S' → S•`.
    let mut follow = vec![0u64; nts.len() * words];
    let accept = p.accept_item();
    for (x, &(_, _, g)) in nts.iter().enumerate() {
        let f = &mut follow[x * words..(x + 1) * words];
        for e in lr0.range(g) {
            let t = lr0.trans_sym[e];
            if t < p.nt {
                f[t as usize / 64] |= 1 << (t % 64);
            }
        }
        if lr0.kernels[g as usize].binary_search(&accept).is_ok() {
            f[p.nt as usize / 64] |= 1 << (p.nt % 64);
        }
    }

    // includes: (q, C) includes (p, B) iff B → βC and p --β--> q (ε-free: C must be last).
    // lookback: (q, B → ω) looks back to (p, B) iff p --ω--> q.
    let mut includes: Vec<(u32, u32)> = Vec::new();
    let mut lookback: Vec<(u32, u32, u32)> = Vec::new(); // (state, rule, ntrans)
    for (x, &(s, a, _)) in nts.iter().enumerate() {
        for &r in &p.rules_of[a as usize] {
            let rhs = &p.rhs[r as usize];
            let mut q = s;
            for (i, &y) in rhs.iter().enumerate() {
                let e = lr0.find(q, y).expect("the closure of q holds this item");
                if i + 1 == rhs.len() && y >= p.nt {
                    includes.push((ntid[e], x as u32));
                }
                q = lr0.trans_tgt[e];
            }
            lookback.push((q, r, x as u32));
        }
    }
    digraph(nts.len(), &includes, &mut follow, words);

    // LA(q, r) = ∪ Follow over lookback, grouped per state.
    lookback.sort_unstable();
    let mut la = Lookaheads { words, state_off: Vec::with_capacity(ns + 1), rules: Vec::new(), bits: Vec::new() };
    let mut i = 0;
    for s in 0..ns as u32 {
        la.state_off.push(la.rules.len() as u32);
        while i < lookback.len() && lookback[i].0 == s {
            let r = lookback[i].1;
            let off = la.bits.len();
            la.bits.resize(off + words, 0);
            while i < lookback.len() && lookback[i].0 == s && lookback[i].1 == r {
                let x = lookback[i].2 as usize;
                for w in 0..words {
                    la.bits[off + w] |= follow[x * words + w];
                }
                i += 1;
            }
            la.rules.push(r);
        }
    }
    la.state_off.push(la.rules.len() as u32);
    la
}

/// DeRemer & Pennello's digraph algorithm: `F(x) := F(x) ∪ ⋃ { F(y) : x R y }` to the
/// least fixed point, one SCC at a time (iterative, so deep relations cannot overflow the
/// call stack). `edges` are the pairs `(x, y)` with `x R y`.
fn digraph(n: usize, edges: &[(u32, u32)], f: &mut [u64], words: usize) {
    // Adjacency in CSR form.
    let mut off = vec![0u32; n + 1];
    for &(x, _) in edges {
        off[x as usize + 1] += 1;
    }
    for i in 0..n {
        off[i + 1] += off[i];
    }
    let mut fill = off.clone();
    let mut adj = vec![0u32; edges.len()];
    for &(x, y) in edges {
        adj[fill[x as usize] as usize] = y;
        fill[x as usize] += 1;
    }

    const DONE: u32 = u32::MAX;
    let union = |f: &mut [u64], dst: usize, src: usize| {
        if dst != src {
            for w in 0..words {
                let v = f[src * words + w];
                f[dst * words + w] |= v;
            }
        }
    };
    let copy = |f: &mut [u64], dst: usize, src: usize| {
        f.copy_within(src * words..(src + 1) * words, dst * words);
    };
    let mut depth = vec![0u32; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut call: Vec<(u32, u32, u32)> = Vec::new(); // (x, next edge, depth at entry)
    for root in 0..n as u32 {
        if depth[root as usize] != 0 {
            continue;
        }
        stack.push(root);
        let d = stack.len() as u32;
        depth[root as usize] = d;
        call.push((root, off[root as usize], d));
        while let Some(&mut (x, ref mut e, d)) = call.last_mut() {
            let xu = x as usize;
            if *e < off[xu + 1] {
                let y = adj[*e as usize];
                *e += 1;
                let yu = y as usize;
                if depth[yu] == 0 {
                    stack.push(y);
                    let dy = stack.len() as u32;
                    depth[yu] = dy;
                    call.push((y, off[yu], dy));
                } else {
                    depth[xu] = depth[xu].min(depth[yu]);
                    union(f, xu, yu);
                }
                continue;
            }
            call.pop();
            if depth[xu] == d {
                loop {
                    let top = stack.pop().expect("x is on the stack") as usize;
                    depth[top] = DONE;
                    if top == xu {
                        break;
                    }
                    copy(f, top, xu);
                }
            }
            if let Some(&(parent, _, _)) = call.last() {
                let pu = parent as usize;
                depth[pu] = depth[pu].min(depth[xu]);
                union(f, pu, xu);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// ACTION / GOTO rows.

struct Rows {
    actions: Vec<Vec<(u32, Vec<Action>)>>,
    gotos: Vec<Vec<(u32, u32)>>,
}

fn actions(p: &Prep, lr0: &Lr0, la: &Lookaheads, accepts_empty: bool) -> Rows {
    let ns = lr0.num_states();
    let eof = p.nt;
    let accept = p.accept_item();
    let mut cells: Vec<Vec<Action>> = vec![Vec::new(); p.nt as usize + 1];
    let mut touched: Vec<u32> = Vec::new();
    let mut rows = Rows { actions: Vec::with_capacity(ns), gotos: Vec::with_capacity(ns) };
    let add = |cells: &mut Vec<Vec<Action>>, touched: &mut Vec<u32>, t: u32, a: Action| {
        if cells[t as usize].is_empty() {
            touched.push(t);
        }
        cells[t as usize].push(a);
    };
    for s in 0..ns {
        let mut gotos = Vec::new();
        for e in lr0.range(s as u32) {
            let (x, tgt) = (lr0.trans_sym[e], lr0.trans_tgt[e]);
            if x < p.nt {
                add(&mut cells, &mut touched, x, Action::Shift(tgt));
            } else {
                gotos.push((x - p.nt, tgt));
            }
        }
        for k in la.state_off[s] as usize..la.state_off[s + 1] as usize {
            let r = la.rules[k];
            let bits = &la.bits[k * la.words..(k + 1) * la.words];
            for (w, &word) in bits.iter().enumerate() {
                let mut word = word;
                while word != 0 {
                    let t = (w * 64) as u32 + word.trailing_zeros();
                    word &= word - 1;
                    add(&mut cells, &mut touched, t, Action::Reduce(r));
                }
            }
        }
        if lr0.kernels[s].binary_search(&accept).is_ok() || (s == 0 && accepts_empty) {
            add(&mut cells, &mut touched, eof, Action::Accept);
        }
        touched.sort_unstable();
        let mut row = Vec::with_capacity(touched.len());
        for &t in &touched {
            let mut acts = std::mem::take(&mut cells[t as usize]);
            acts.sort_unstable();
            acts.dedup();
            row.push((t, acts));
        }
        touched.clear();
        rows.actions.push(row);
        rows.gotos.push(gotos);
    }
    rows
}
