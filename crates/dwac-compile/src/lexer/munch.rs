//! What longest-match lexing does to the grammar's language (ARCHITECTURE.md, "The contract"): parser states it
//! turns into dead ends, and whether any text is left at all.
//!
//! Maximal munch with inhibitors is a finite-state transducer from bytes to terminal
//! sequences, so the terminal sequences it can produce form a regular language `R`. Its states
//! at lexeme boundaries are the sets `H` of carried inhibitors (`Boundaries`): from `H`, a
//! lexeme of terminal `t` is realizable when running its bytes through `H` fires no inhibitor,
//! and it leads to the boundary state made of the surviving inhibitors plus the one `t` creates.
//! Ignored terminals are ε-moves. The text language is empty exactly when `L(G) ∩ R` is, which
//! is decided on the determinized `R` by the usual context-free × finite-automaton fixpoint.
//!
//! Priorities are left out (every terminal matching a lexeme counts as usable): they only remove
//! lexings, so a pair reported impossible, or a language reported empty, is so with priorities
//! too. The analysis has a work budget; past it, it reports nothing rather than guess.

use std::collections::{HashMap, HashSet};

use dwac_grammar::{Grammar, Symbol, Warning};
use dwac_lr::Item;
use dwac_runtime::unstable::{Inhibitor, K_ALL};
use dwac_runtime::unstable::{LexerTables, LrTables, DEAD};

/// Lexer steps the boundary exploration may take before the analysis gives up.
const STEP_BUDGET: u64 = 40_000_000;
/// Boundary states (inhibitor sets) and determinized states the analysis may build.
const STATE_BUDGET: usize = 4_096;
/// Bits of the context-free × automaton relation (|nonterminals| × |states|²).
const RELATION_BUDGET: u64 = 400_000_000;

/// The outcome of the analysis.
#[derive(Debug, Default)]
pub struct MunchReport {
    /// One warning per dead end: a terminal `t` after which, at some point of some rule, nothing
    /// the grammar allows next can follow under longest match (see [`analyse`]).
    pub warnings: Vec<Warning>,
    /// `Some(msg)` when no text at all is in the language; `msg` says why.
    pub empty: Option<Warning>,
    /// The analysis ran out of budget and decided nothing.
    pub skipped: bool,
}

/// The boundary automaton: states are inhibitor sets, edges emit one terminal.
struct Boundaries {
    /// Boundary state by its inhibitors' kill classes ([`KillClasses::key`]).
    ids: HashMap<Vec<(u32, u32)>, u32>,
    /// A representative inhibitor set per boundary state.
    sets: Vec<Vec<Inhibitor>>,
    /// Per boundary state: (terminal, target state), deduplicated.
    edges: Vec<Vec<(u32, u32)>>,
}

/// Inhibitors that kill exactly the same continuations are interchangeable: per inhibition set
/// `K`, lexer states are partitioned (Hopcroft) by the language of byte strings that reach a
/// match of some terminal of `K` from them, and an inhibitor set is known by its (block, `K`)
/// pairs. Bounded-range number terminals otherwise give thousands of distinct boundary states.
struct KillClasses<'a> {
    lex: &'a LexerTables,
    blocks: HashMap<u32, Vec<u32>>,
}

impl KillClasses<'_> {
    fn block(&mut self, s: u32, k: u32) -> u32 {
        let lex = self.lex;
        let blocks = self.blocks.entry(k).or_insert_with(|| {
            let n = lex.num_states as usize;
            let killed = n as u32;
            let hits = |t: u32| {
                let acc = lex.accepts(t);
                if k == K_ALL {
                    !acc.is_empty()
                } else {
                    acc.binary_search(&k).is_ok()
                }
            };
            // One column per group of bytes that step every state alike
            // ([`byte_representatives`]), so the partition is the one over all 256 bytes.
            let reps = byte_representatives(lex);
            let w = reps.len();
            let mut trans = vec![DEAD; (n + 1) * w];
            for q in 0..n {
                for (c, &(b, _)) in reps.iter().enumerate() {
                    let t = lex.step(q as u32, b);
                    trans[q * w + c] = if t == DEAD {
                        DEAD
                    } else if hits(t) {
                        killed
                    } else {
                        t
                    };
                }
            }
            trans[n * w..].iter_mut().for_each(|t| *t = killed);
            let mut initial = vec![0u32; n + 1];
            initial[n] = 1;
            super::minimize::minimize_classes(n + 1, w, &trans, &initial)
        });
        blocks.get(s as usize).copied().unwrap_or(u32::MAX)
    }

    fn key(&mut self, h: &[Inhibitor]) -> Vec<(u32, u32)> {
        let mut key: Vec<(u32, u32)> = h.iter().map(|i| (self.block(i.s, i.k), i.k)).collect();
        key.sort_unstable();
        key.dedup();
        key
    }
}

struct Explorer<'a> {
    lex: &'a LexerTables,
    kill: KillClasses<'a>,
    b: Boundaries,
    /// Emissions from `(q, ∅)` on one or more further bytes, per lexer state (memoized).
    free: HashMap<u32, Vec<(u32, u32)>>,
    /// Lexer steps taken, each byte counted (the work budget's unit).
    steps: u64,
    /// One byte per group of bytes every step treats alike, with the group's size
    /// ([`byte_representatives`]).
    reps: std::rc::Rc<[(u8, u64)]>,
}

impl<'a> Explorer<'a> {
    fn boundary(&mut self, h: Vec<Inhibitor>) -> u32 {
        let key = self.kill.key(&h);
        if let Some(&id) = self.b.ids.get(&key) {
            return id;
        }
        let id = self.b.sets.len() as u32;
        self.b.ids.insert(key, id);
        self.b.sets.push(h);
        self.b.edges.push(Vec::new());
        id
    }

    /// The boundary reached by emitting `t` at lexer state `q2` with surviving inhibitors `h`.
    fn after(&mut self, t: u32, q2: u32, h: &[Inhibitor]) -> u32 {
        let mut h2 = h.to_vec();
        if let Some(i) = self.lex.inhibitor_for(t, q2) {
            h2.push(i);
            h2.sort_unstable();
            h2.dedup();
        }
        self.boundary(h2)
    }

    /// Emissions from `(q, ∅)` after one or more bytes: a plain walk of the lexer DFA.
    fn free_from(&mut self, q: u32) -> Option<Vec<(u32, u32)>> {
        if let Some(e) = self.free.get(&q) {
            return Some(e.clone());
        }
        let (lex, reps) = (self.lex, std::rc::Rc::clone(&self.reps));
        let mut seen: HashSet<u32> = HashSet::new();
        let mut stack = vec![q];
        let mut out: HashSet<(u32, u32)> = HashSet::new();
        while let Some(x) = stack.pop() {
            for &(b, bytes) in reps.iter() {
                self.steps += bytes;
                for q2 in lex.successors(x, b) {
                    for &t in lex.accepts(q2) {
                        let to = self.after(t, q2, &[]);
                        out.insert((t, to));
                    }
                    if lex.can_continue(q2) && seen.insert(q2) {
                        stack.push(q2);
                    }
                }
            }
            if self.steps > STEP_BUDGET || self.b.sets.len() > STATE_BUDGET {
                return None;
            }
        }
        let mut v: Vec<(u32, u32)> = out.into_iter().collect();
        v.sort_unstable();
        self.free.insert(q, v.clone());
        Some(v)
    }

    /// Every emission from boundary state `id`.
    fn explore(&mut self, id: u32) -> Option<Vec<(u32, u32)>> {
        let (lex, reps) = (self.lex, std::rc::Rc::clone(&self.reps));
        let h = self.b.sets[id as usize].clone();
        if h.is_empty() {
            return self.free_from(lex.start);
        }
        let mut out: HashSet<(u32, u32)> = HashSet::new();
        let mut seen: HashSet<(u32, Vec<Inhibitor>)> = HashSet::new();
        let mut stack = vec![(lex.start, h)];
        let mut h1 = Vec::new();
        while let Some((q, hs)) = stack.pop() {
            for &(b, bytes) in reps.iter() {
                self.steps += bytes;
                if lex.step_inhibitors(&hs, b, &mut h1).is_none() {
                    continue;
                }
                for q2 in lex.successors(q, b) {
                    for &t in lex.accepts(q2) {
                        let to = self.after(t, q2, &h1);
                        out.insert((t, to));
                    }
                    if !lex.can_continue(q2) {
                        continue;
                    }
                    if h1.is_empty() {
                        out.extend(self.free_from(q2)?);
                    } else if seen.insert((q2, h1.clone())) {
                        stack.push((q2, h1.clone()));
                    }
                }
            }
            if self.steps > STEP_BUDGET || self.b.sets.len() > STATE_BUDGET {
                return None;
            }
        }
        let mut v: Vec<(u32, u32)> = out.into_iter().collect();
        v.sort_unstable();
        Some(v)
    }
}

/// One byte per group of bytes in one byte class with the same forks from the start state
/// (`LexerTables::successors`), with the group's size: the exploration steps a group's bytes
/// alike (their successors, the inhibitors they fire and keep), so one stands for all, and the
/// work budget still counts every byte.
fn byte_representatives(lex: &LexerTables) -> Vec<(u8, u64)> {
    let mut groups: Vec<(u8, u64)> = Vec::new();
    let mut index: HashMap<(u8, &[u32]), usize> = HashMap::new();
    for b in 0..=255u8 {
        let forks = &lex.fork[lex.fork_off[b as usize] as usize..lex.fork_off[b as usize + 1] as usize];
        let i = *index.entry((lex.byte_class[b as usize], forks)).or_insert_with(|| {
            groups.push((b, 0));
            groups.len() - 1
        });
        groups[i].1 += 1;
    }
    groups
}

/// Build the boundary automaton reachable from the empty inhibitor set (state 0).
fn boundaries(lex: &LexerTables) -> Option<Boundaries> {
    let mut ex = Explorer {
        lex,
        kill: KillClasses { lex, blocks: HashMap::new() },
        b: Boundaries { ids: HashMap::new(), sets: Vec::new(), edges: Vec::new() },
        free: HashMap::new(),
        steps: 0,
        reps: byte_representatives(lex).into(),
    };
    ex.boundary(Vec::new());
    let mut next = 0;
    while next < ex.b.sets.len() {
        // (A compile asked to stop skips the analysis: `threads::Stop`.)
        if next % 256 == 255 && crate::threads::stopping() {
            return None;
        }
        let e = ex.explore(next as u32)?;
        ex.b.edges[next] = e;
        next += 1;
    }
    Some(ex.b)
}

/// Per boundary state: the boundary states reachable from it by ignored terminals (itself
/// included), sorted.
fn ignored_closures(b: &Boundaries, lex: &LexerTables) -> Vec<Vec<u32>> {
    (0..b.sets.len() as u32)
        .map(|from| {
            let mut seen: HashSet<u32> = HashSet::from([from]);
            let mut stack = vec![from];
            while let Some(x) = stack.pop() {
                for &(t, to) in &b.edges[x as usize] {
                    if lex.is_ignored(t) && seen.insert(to) {
                        stack.push(to);
                    }
                }
            }
            let mut v: Vec<u32> = seen.into_iter().collect();
            v.sort_unstable();
            v
        })
        .collect()
}

/// The union of the ignored-closures of `from`, sorted.
fn closure_of(closures: &[Vec<u32>], from: &[u32]) -> Vec<u32> {
    let mut v: Vec<u32> = from.iter().flat_map(|&x| closures[x as usize].iter().copied()).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Does the start symbol derive a string of terminals with `ok[t]`?
fn generates(g: &Grammar, ok: &[bool]) -> bool {
    let mut gen = vec![false; g.nonterminals.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for r in &g.rules {
            if !gen[r.lhs as usize]
                && r.rhs.iter().all(|s| match s {
                    Symbol::T(t) => ok.get(*t as usize).copied().unwrap_or(false),
                    Symbol::N(n) => gen[*n as usize],
                })
            {
                gen[r.lhs as usize] = true;
                changed = true;
            }
        }
    }
    gen.get(g.start as usize).copied().unwrap_or(false)
}

/// A set of bytes.
type Bytes = [u64; 4];

fn has(b: &Bytes, x: usize) -> bool {
    b[x / 64] >> (x % 64) & 1 == 1
}

/// Is every adjacency of the grammar immediately separable: wherever `X Y` stand next to each other
/// in a rule, no byte that can start a lexeme of a terminal beginning `Y` continues a lexeme of a
/// terminal ending `X` towards a longer match of its inhibition set? Then every inhibitor expires
/// at the first byte of the next lexeme, longest match removes no sentence, and there is nothing
/// to report (ignored terminals only add lexings). JSON-Schema grammars are always so.
fn immediately_separable(lex: &LexerTables, g: &Grammar) -> bool {
    let nt = lex.num_terminals as usize;
    // first[t]: bytes that can start a lexeme of t. cont[t]: bytes that continue a lexeme of t
    // (from any state where t matches) towards a match of t's inhibition set.
    let mut first: Vec<Bytes> = vec![[0; 4]; nt];
    let mut cont: Vec<Bytes> = vec![[0; 4]; nt];
    let mut memo: HashMap<u32, Vec<u32>> = HashMap::new(); // state → terminals reachable (acc ∪ Next⁺)
    let mut reach = |q: u32| -> Vec<u32> {
        memo.entry(q)
            .or_insert_with(|| {
                let mut v: Vec<u32> = lex.accepts(q).to_vec();
                v.extend((0..nt as u32).filter(|&t| lex.next_plus(q)[(t / 64) as usize] >> (t % 64) & 1 == 1));
                v.sort_unstable();
                v.dedup();
                v
            })
            .clone()
    };
    for b in 0..=255u8 {
        for q in lex.successors(lex.start, b) {
            for t in reach(q) {
                first[t as usize][b as usize / 64] |= 1 << (b % 64);
            }
        }
    }
    for q in 0..lex.num_states {
        for &t in lex.accepts(q) {
            let Some(inh) = lex.inhibitor_for(t, q) else { continue };
            for b in 0..=255u8 {
                let q2 = lex.step(q, b);
                if q2 == DEAD {
                    continue;
                }
                let r = reach(q2);
                let hits = if inh.k == K_ALL { !r.is_empty() } else { r.binary_search(&inh.k).is_ok() };
                if hits {
                    cont[t as usize][b as usize / 64] |= 1 << (b % 64);
                }
            }
        }
    }
    // Per nonterminal: bytes that can start it, bytes that continue the lexeme it can end with.
    let n = g.nonterminals.len();
    let (mut nfirst, mut ncont) = (vec![[0u64; 4]; n], vec![[0u64; 4]; n]);
    let sym_first = |s: &Symbol, nf: &[Bytes]| match s {
        Symbol::T(t) => first[*t as usize],
        Symbol::N(x) => nf[*x as usize],
    };
    let sym_cont = |s: &Symbol, nc: &[Bytes]| match s {
        Symbol::T(t) => cont[*t as usize],
        Symbol::N(x) => nc[*x as usize],
    };
    let mut changed = true;
    while changed {
        changed = false;
        for r in &g.rules {
            let (Some(a), Some(z)) = (r.rhs.first(), r.rhs.last()) else { continue };
            let (f, c) = (sym_first(a, &nfirst), sym_cont(z, &ncont));
            for i in 0..4 {
                let (nf, nc) = (&mut nfirst[r.lhs as usize][i], &mut ncont[r.lhs as usize][i]);
                if f[i] & !*nf != 0 || c[i] & !*nc != 0 {
                    *nf |= f[i];
                    *nc |= c[i];
                    changed = true;
                }
            }
        }
    }
    g.rules.iter().all(|r| {
        r.rhs.windows(2).all(|w| {
            let (c, f) = (sym_cont(&w[0], &ncont), sym_first(&w[1], &nfirst));
            (0..256).all(|x| !(has(&c, x) && has(&f, x)))
        })
    })
}

/// The boundary automaton determinized over the non-ignored terminals (ignored ones are ε):
/// `delta[s][t]` (`u32::MAX`: none); `None` past [`STATE_BUDGET`] states.
fn boundary_dfa(lex: &LexerTables, b: &Boundaries, closures: &[Vec<u32>]) -> Option<Vec<Vec<u32>>> {
    let nt = lex.num_terminals as usize;
    let mut dstates: Vec<Vec<u32>> = vec![closures[0].clone()];
    let mut dindex: HashMap<Vec<u32>, u32> = HashMap::from([(dstates[0].clone(), 0)]);
    let mut delta: Vec<Vec<u32>> = Vec::new(); // delta[s][t], u32::MAX = none
    let mut i = 0;
    while i < dstates.len() {
        if i % 256 == 255 && crate::threads::stopping() {
            return None;
        }
        let mut row = vec![u32::MAX; nt];
        let mut targets: HashMap<u32, Vec<u32>> = HashMap::new();
        for &x in &dstates[i] {
            for &(t, to) in &b.edges[x as usize] {
                if !lex.is_ignored(t) {
                    targets.entry(t).or_default().push(to);
                }
            }
        }
        let mut targets: Vec<(u32, Vec<u32>)> = targets.into_iter().collect();
        targets.sort_unstable();
        for (t, to) in targets {
            let set = closure_of(closures, &to);
            let id = match dindex.get(&set) {
                Some(&id) => id,
                None => {
                    if dstates.len() >= STATE_BUDGET {
                        return None;
                    }
                    let id = dstates.len() as u32;
                    dindex.insert(set.clone(), id);
                    dstates.push(set);
                    id
                }
            };
            row[t as usize] = id;
        }
        delta.push(row);
        i += 1;
    }
    Some(delta)
}

/// Does the grammar have a sentence the boundary automaton `delta` reads from its start (a
/// context-free fixpoint over it)? `None` past [`RELATION_BUDGET`].
fn has_sentence(normalized: &Grammar, delta: &[Vec<u32>]) -> Option<bool> {
    let ns = delta.len();
    let nn = normalized.nonterminals.len();
    if (nn as u64) * (ns as u64) * (ns as u64) > RELATION_BUDGET {
        return None;
    }
    // reach[A][s] = the states reachable from s by reading a sentence of A.
    let words = ns.div_ceil(64);
    let mut reach: Vec<Vec<Vec<u64>>> = vec![vec![vec![0u64; words]; ns]; nn];
    let mut changed = true;
    let mut cur = vec![0u64; words];
    let mut nxt = vec![0u64; words];
    while changed {
        changed = false;
        if crate::threads::stopping() {
            return None;
        }
        for r in &normalized.rules {
            for s in 0..ns {
                cur.iter_mut().for_each(|w| *w = 0);
                cur[s / 64] |= 1 << (s % 64);
                for sym in &r.rhs {
                    nxt.iter_mut().for_each(|w| *w = 0);
                    for (wi, &w) in cur.iter().enumerate() {
                        let mut w = w;
                        while w != 0 {
                            let x = wi * 64 + w.trailing_zeros() as usize;
                            w &= w - 1;
                            match sym {
                                Symbol::T(t) => {
                                    let y = delta[x].get(*t as usize).copied().unwrap_or(u32::MAX);
                                    if y != u32::MAX {
                                        nxt[y as usize / 64] |= 1 << (y % 64);
                                    }
                                }
                                Symbol::N(n) => {
                                    for (a, b) in nxt.iter_mut().zip(&reach[*n as usize][x]) {
                                        *a |= b;
                                    }
                                }
                            }
                        }
                    }
                    std::mem::swap(&mut cur, &mut nxt);
                    if cur.iter().all(|&w| w == 0) {
                        break;
                    }
                }
                let dst = &mut reach[r.lhs as usize][s];
                for (a, b) in dst.iter_mut().zip(&cur) {
                    if *b & !*a != 0 {
                        *a |= b;
                        changed = true;
                    }
                }
            }
        }
    }
    Some(reach[normalized.start as usize][0].iter().any(|&w| w != 0))
}

/// Analyse `normalized` (reduced, ε-free; `accepts_empty` if ε is in the language), its LR
/// tables `lr` with the kernel items of every state, lexed by `lex`. Warnings are located
/// through `source` (the front-end's grammar, which has the text).
///
/// A dead end is an LR state entered by shifting a terminal `t`, where the text may not end,
/// and where no terminal with an ACTION entry (an over-approximation, under LALR, of what can
/// come next) can follow `t` under longest match, even with ignored terminals between: a text
/// that reaches that point has no completion, yet the branch stays live (ARCHITECTURE.md, "The contract").
pub fn analyse(
    lex: &LexerTables,
    lr: &LrTables,
    kernels: &[Vec<Item>],
    normalized: &Grammar,
    accepts_empty: bool,
    source: &Grammar,
) -> MunchReport {
    let name = |t: u32| source.terminals.get(t as usize).map_or("?", |x| x.name.as_str());
    let start_span = source.nonterminals.get(source.start as usize).and_then(|n| n.span);

    // Terminals that match no text at all (a JSON Schema compiles an unsatisfiable branch to one).
    let mut lexable = vec![false; lex.num_terminals as usize];
    for &t in &lex.accept {
        lexable[t as usize] = true;
    }
    if !accepts_empty && !generates(normalized, &lexable) {
        let mut unlexable: Vec<&str> = Vec::new();
        for r in &normalized.rules {
            for sym in &r.rhs {
                if let Symbol::T(t) = sym {
                    if !lexable[*t as usize] && !unlexable.contains(&name(*t)) {
                        unlexable.push(name(*t));
                    }
                }
            }
        }
        let list: Vec<String> = unlexable.iter().map(|n| format!("`{n}`")).collect();
        let msg = format!(
            "no text is in this grammar's language: every sentence needs a terminal that matches no text at all ({})",
            list.join(", ")
        );
        return MunchReport { empty: Some(source.warning_at(start_span, msg)), ..MunchReport::default() };
    }
    if immediately_separable(lex, normalized) {
        return MunchReport::default();
    }

    let Some(b) = boundaries(lex) else {
        return MunchReport { skipped: true, ..MunchReport::default() };
    };
    let closures = ignored_closures(&b, lex);
    // follow[t]: the non-ignored terminals that can come right after a lexeme of t (ignored
    // terminals may stand between), whatever boundary state t leaves.
    let mut post: HashMap<u32, HashSet<u32>> = HashMap::new();
    for edges in &b.edges {
        for &(t, to) in edges {
            post.entry(t).or_default().insert(to);
        }
    }
    let mut starts: HashMap<u32, HashSet<u32>> = HashMap::new();
    let mut follow = |t: u32| -> HashSet<u32> {
        let mut out = HashSet::new();
        for &h in post.get(&t).into_iter().flatten() {
            let s = starts.entry(h).or_insert_with(|| {
                closures[h as usize]
                    .iter()
                    .flat_map(|&y| b.edges[y as usize].iter().map(|e| e.0))
                    .filter(|&t| !lex.is_ignored(t))
                    .collect()
            });
            out.extend(s.iter().copied());
        }
        out
    };

    let mut warnings: Vec<Warning> = Vec::new();
    let mut dead: Vec<u32> = Vec::new();
    let mut seen: HashSet<(u32, Option<dwac_grammar::Span>)> = HashSet::new();
    for (p, kernel) in kernels.iter().enumerate() {
        if p % 1024 == 1023 && crate::threads::stopping() {
            return MunchReport { warnings, empty: None, skipped: true };
        }
        // The terminal shifted into p: the symbol before the dot of its kernel items.
        let Some(&Item { rule, dot }) = kernel.iter().find(|it| (it.rule as usize) < normalized.rules.len()) else {
            continue;
        };
        let Some(r) = normalized.rules.get(rule as usize) else { continue };
        let Some(Symbol::T(t)) = dot.checked_sub(1).and_then(|i| r.rhs.get(i as usize)) else { continue };
        let p = p as u32;
        if !lr.actions(p, lr.eof()).is_empty() || !lexable[*t as usize] {
            continue;
        }
        // (Terminals that match no text are left out: a branch needing one ends there whatever
        // longest match does. A grammar they leave empty is refused above, and a JSON Schema that
        // accepts no value says so itself.)
        let next: Vec<u32> =
            (0..lr.num_terminals).filter(|&u| lexable[u as usize] && !lr.actions(p, u).is_empty()).collect();
        if next.is_empty() {
            continue;
        }
        let f = follow(*t);
        if next.iter().any(|u| f.contains(u)) || !seen.insert((*t, r.span)) {
            continue;
        }
        let list: Vec<String> = next.iter().take(6).map(|&u| format!("`{}`", name(u))).collect();
        let more = if next.len() > 6 { format!(" and {} more", next.len() - 6) } else { String::new() };
        let msg = format!(
            "dead end after `{}`: the grammar needs {}{} next, but longest match never lets {} directly follow \
             `{}` (it takes their bytes into a longer lexeme, and no ignored terminal can separate them), so a \
             text that gets here cannot be completed",
            name(*t),
            list.join(", "),
            more,
            if next.len() == 1 { "it" } else { "any of them" },
            name(*t),
        );
        warnings.push(source.warning_at(r.span, msg));
        dead.push(*t);
    }
    let first_dead = warnings.first().cloned();

    // Emptiness: determinize R (ignored terminals are ε), then the context-free fixpoint.
    if accepts_empty {
        return MunchReport { warnings, empty: None, skipped: false };
    }
    let Some(delta) = boundary_dfa(lex, &b, &closures) else {
        return MunchReport { warnings, empty: None, skipped: true };
    };
    let Some(nonempty) = has_sentence(normalized, &delta) else {
        return MunchReport { warnings, empty: None, skipped: true };
    };
    let empty = (!nonempty).then(|| {
        let mut why = match &first_dead {
            Some(w) => format!("no text is in this grammar's language under longest-match lexing; {}", w.0.message),
            None => "no text is in this grammar's language under longest-match lexing: every sentence needs \
                     terminals next to each other that longest match always lexes differently"
                .to_string(),
        };
        for (w, &t) in warnings.iter().zip(&dead).skip(1) {
            why += &format!("\n  also at {}:{}: dead end after `{}`", w.0.line, w.0.column, name(t));
        }
        match &first_dead {
            Some(w) => Warning(dwac_grammar::GrammarError { message: why, ..w.0.clone() }),
            None => source.warning_at(start_span, why),
        }
    });
    MunchReport { warnings, empty, skipped: false }
}
