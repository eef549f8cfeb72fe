//! Open objects' extra keys, shared by every object (ARCHITECTURE.md, "Open objects").
//!
//! A JSON object without `additionalProperties` takes any key it does not name, with any value.
//! The schema front end writes that as a member `m → KEY_ADDITIONAL_O ":" v`, where
//! `KEY_ADDITIONAL_O` is a terminal of its own: any string but the object's names `N_O`
//! ([`crate::Terminal::key_complement`]). With hundreds of such objects (a tool list), every key
//! is lexed as hundreds of terminals, and after each one the parser is in a state of that object
//! alone, so every token that completes a key goes on in one way per object.
//!
//! This pass, run on the whole grammar before normalization, gives a group of such objects (their
//! terminals of one lexer component and priority, packed first-fit into groups of at most
//! [`MAX_GROUP_NAMES`] names) one terminal and one continuation:
//!
//! * `KEY_OTHER`: any string but `K`, the union of the group's names;
//! * for each `k ∈ K`, the literal key terminal `k` (a named member's own, from whichever
//!   component it is in, or a new one);
//! * members shared by every object: `X_other → KEY_OTHER ":" v` and `X_k → k ":" v`;
//! * each object's member: `m → X_other | X_k` for every `k ∈ K ∖ N_O`.
//!
//! Exact: `L(m) = (S ∖ K) ∪ (K ∖ N_O) = S ∖ N_O`, each key with the same value as before; the
//! lexemes are the same strings (every one a JSON string, ending at its first unescaped quote, so
//! none extends another's and no inhibition changes). After a key, the LR state holds only the
//! shared member's item, the same for every object of the group: the object is read from the
//! stack only when the member is reduced, as for any member. What that costs instead is the key:
//! the member reduced is `X_k`, one per name, so where it is reduced the parser reads which of
//! the group's names it was (hence groups of few names).
//!
//! The objects' `v` are the same only once equal subgrammars are one nonterminal: each tool's
//! schema has its own "any value". The pass therefore also merges nonterminals that derive the
//! same way ([`merge_equivalent`]): the coarsest partition in which the nonterminals of a block
//! have the same rules, their nonterminals read as blocks. Each block derives one language.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::ir::{Grammar, Munch, Rule, Symbol, Terminal};
use crate::schema::strings::{json_string_any, json_string_literal};

/// Most rules the rewrite may make (a member per key an object does not name); past it, the
/// grammar is left as it is.
pub const MAX_NEW_RULES: usize = 200_000;

/// Most names a group of objects shares one `KEY_OTHER` over. Each object takes every other name
/// of its group as an extra key, so the parser tells apart, where a member is reduced, which of
/// those keys it was: a few hundred names cost several times what per-object key terminals do
/// (`k8s-100`: 262 names, about 4×), while groups of 8 to 20 names cost least on the tool lists
/// measured (100 tools: 0.3–0.4× the time of a terminal per object). (Chosen on the gate's tool
/// lists, `k8s-100` and the 100-tool list with its names made 2, 4 and 8 times as many.)
pub const MAX_GROUP_NAMES: usize = 16;

/// The grammar with its open objects' extra keys shared, or `None` where there is nothing to
/// share (no group of two or more marked terminals) or too much ([`MAX_NEW_RULES`]).
pub fn share_open_keys(g: &Grammar) -> Option<Grammar> {
    let nt = g.terminals.len();
    // How many rules each terminal is in.
    let mut uses = vec![0usize; nt];
    for r in &g.rules {
        for s in &r.rhs {
            if let Symbol::T(t) = *s {
                uses[t as usize] += 1;
            }
        }
    }
    let groups = groups(g, &uses);
    if groups.is_empty() {
        return None;
    }
    let mut group_of: Vec<Option<usize>> = vec![None; nt];
    for (gi, (_, ts)) in groups.iter().enumerate() {
        for &t in ts {
            group_of[t as usize] = Some(gi);
        }
    }
    // A rule holding two of them is left to the general construction.
    let marked = |s: &Symbol| matches!(s, Symbol::T(t) if group_of[*t as usize].is_some());
    if g.rules.iter().any(|r| r.rhs.iter().filter(|s| marked(s)).count() > 1) {
        return None;
    }

    let mut out = g.clone();
    // Named keys' literal terminals, by regex (the first of equal ones).
    let mut literals: HashMap<(String, i32), u32> = HashMap::new();
    let mut key_component = None;
    for (i, t) in g.terminals.iter().enumerate() {
        let literal = t.name == "KEY"
            && t.also.is_empty()
            && t.except.is_empty()
            && t.munch == Munch::Global
            && !t.ignored
            && !t.lazy
            && t.tokens.is_none();
        if literal {
            literals.entry((t.regex.clone(), t.priority)).or_insert(i as u32);
            key_component.get_or_insert(t.component);
        }
    }
    // Per group: `KEY_OTHER`, and each name's literal.
    struct Shared {
        other: u32,
        keys: Vec<(String, u32)>,
    }
    let mut shared: Vec<Shared> = Vec::new();
    let mut new_rules = 0usize;
    for (gk, ts) in groups {
        let names: BTreeSet<&String> =
            ts.iter().flat_map(|&t| g.terminals[t as usize].key_complement.iter().flatten()).collect();
        let mut keys = Vec::new();
        for name in &names {
            let re = json_string_literal(name);
            let id = match literals.get(&(re.clone(), gk.1)) {
                Some(&id) => id,
                None => {
                    let mut t = Terminal::new("KEY", re.clone());
                    t.munch = Munch::Global;
                    t.priority = gk.1;
                    t.component = key_component.unwrap_or(gk.0);
                    let id = out.add_terminal(t);
                    literals.insert((re, gk.1), id);
                    id
                }
            };
            keys.push(((*name).clone(), id));
        }
        let mut other = g.terminals[ts[0] as usize].clone();
        other.except = names.iter().map(|k| json_string_literal(k)).collect();
        other.key_complement = Some(names.iter().map(|k| (*k).clone()).collect());
        other.origin = None;
        let other = out.add_terminal(other);
        for &t in &ts {
            let own = g.terminals[t as usize].key_complement.as_ref().map_or(0, |n| n.len());
            new_rules += uses[t as usize] * (keys.len() + 1 - own.min(keys.len()));
        }
        shared.push(Shared { other, keys });
    }
    if new_rules > MAX_NEW_RULES {
        return None;
    }

    // Each rule `A → P t R` becomes `A → P X` for each key the object takes, `X → key R`
    // shared by every rule with the same key and `R`.
    let mut members: HashMap<(Symbol, Vec<Symbol>), u32> = HashMap::new();
    let mut rules = Vec::with_capacity(g.rules.len() + new_rules);
    let mut made = Vec::new();
    for r in &g.rules {
        let at = r.rhs.iter().position(marked);
        let Some(i) = at else {
            rules.push(r.clone());
            continue;
        };
        let Symbol::T(t) = r.rhs[i] else { unreachable!() };
        let sh = &shared[group_of[t as usize].expect("marked")];
        let own: HashSet<&String> = g.terminals[t as usize].key_complement.iter().flatten().collect();
        let keys = std::iter::once(sh.other)
            .chain(sh.keys.iter().filter(|(k, _)| !own.contains(k)).map(|&(_, id)| id))
            .map(Symbol::T);
        let rest = r.rhs[i + 1..].to_vec();
        for key in keys {
            let sym = if rest.is_empty() {
                key
            } else {
                let x = *members.entry((key, rest.clone())).or_insert_with(|| {
                    let x = out.add_nonterminal("member additional key", r.span);
                    made.push(Rule { lhs: x, rhs: [vec![key], rest.clone()].concat(), span: r.span });
                    x
                });
                Symbol::N(x)
            };
            let mut rhs = r.rhs[..i].to_vec();
            rhs.push(sym);
            rules.push(Rule { lhs: r.lhs, rhs, span: r.span });
        }
    }
    rules.extend(made);
    out.rules = rules;
    merge_equivalent(&mut out);
    Some(out)
}

/// The marked terminals in use, by (lexer component, priority), packed first-fit into groups of
/// at most [`MAX_GROUP_NAMES`] names: the groups of two or more, each with its kind.
fn groups(g: &Grammar, uses: &[usize]) -> Vec<((u32, i32), Vec<u32>)> {
    let plain = |t: &Terminal| {
        t.key_complement.is_some()
            && t.regex == json_string_any()
            && t.also.is_empty()
            && t.munch == Munch::Global
            && !t.ignored
            && !t.lazy
            && t.tokens.is_none()
    };
    let mut by_kind: HashMap<(u32, i32), Vec<u32>> = HashMap::new();
    for (i, t) in g.terminals.iter().enumerate() {
        if uses[i] > 0 && plain(t) {
            by_kind.entry((t.component, t.priority)).or_default().push(i as u32);
        }
    }
    let mut kinds: Vec<_> = by_kind.into_iter().collect();
    kinds.sort();
    let mut groups = Vec::new();
    for (kind, ts) in kinds {
        let mut packs: Vec<(BTreeSet<&String>, Vec<u32>)> = Vec::new();
        for t in ts {
            let own: Vec<&String> = g.terminals[t as usize].key_complement.iter().flatten().collect();
            let fits = |names: &BTreeSet<&String>| {
                names.len() + own.iter().filter(|k| !names.contains(*k)).count() <= MAX_GROUP_NAMES
            };
            match packs.iter_mut().find(|(names, _)| fits(names)) {
                Some((names, members)) => {
                    names.extend(own);
                    members.push(t);
                }
                None => packs.push((own.into_iter().collect(), vec![t])),
            }
        }
        groups.extend(packs.into_iter().filter(|(_, ts)| ts.len() >= 2).map(|(_, ts)| (kind, ts)));
    }
    groups
}

/// Merge the nonterminals that derive the same way: the coarsest partition in which every
/// nonterminal of a block has the same set of rules, each rule's nonterminals read as their
/// blocks (a bisimulation; each block derives one language, by induction on derivations). A
/// block's first nonterminal stands for it; the others are left without rules and unused.
pub fn merge_equivalent(g: &mut Grammar) {
    let n = g.nonterminals.len();
    let mut by_lhs: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, r) in g.rules.iter().enumerate() {
        by_lhs[r.lhs as usize].push(i);
    }
    let code = |s: Symbol, block: &[u32]| -> u64 {
        match s {
            Symbol::T(t) => u64::from(t) << 1,
            Symbol::N(a) => u64::from(block[a as usize]) << 1 | 1,
        }
    };
    let mut block = vec![0u32; n];
    let mut count = 1usize;
    loop {
        let mut ids: HashMap<(u32, Vec<Vec<u64>>), u32> = HashMap::new();
        let mut next = vec![0u32; n];
        for a in 0..n {
            let mut sig: Vec<Vec<u64>> =
                by_lhs[a].iter().map(|&ri| g.rules[ri].rhs.iter().map(|&s| code(s, &block)).collect()).collect();
            sig.sort_unstable();
            sig.dedup();
            let fresh = ids.len() as u32;
            next[a] = *ids.entry((block[a], sig)).or_insert(fresh);
        }
        block = next;
        if ids.len() == count {
            break;
        }
        count = ids.len();
    }
    if count == n {
        return;
    }
    let mut rep = vec![u32::MAX; count];
    for a in 0..n {
        if rep[block[a] as usize] == u32::MAX {
            rep[block[a] as usize] = a as u32;
        }
    }
    let canon = |a: u32| rep[block[a as usize] as usize];
    let mut seen: HashSet<(u32, Vec<Symbol>)> = HashSet::new();
    let mut rules = Vec::with_capacity(g.rules.len());
    for r in &g.rules {
        if canon(r.lhs) != r.lhs {
            continue;
        }
        let rhs: Vec<Symbol> = r
            .rhs
            .iter()
            .map(|&s| match s {
                Symbol::N(a) => Symbol::N(canon(a)),
                t => t,
            })
            .collect();
        if seen.insert((r.lhs, rhs.clone())) {
            rules.push(Rule { lhs: r.lhs, rhs, span: r.span });
        }
    }
    g.rules = rules;
    g.start = canon(g.start);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `A → x A | x` and `B → x B | x` derive alike and become one; `C → x C | y` does not.
    #[test]
    fn nonterminals_that_derive_alike_are_merged() {
        let mut g = Grammar::default();
        let (x, y) = (g.add_terminal(Terminal::new("x", "x")), g.add_terminal(Terminal::new("y", "y")));
        let s = g.add_nonterminal("s", None);
        let [a, b, c] = ["a", "b", "c"].map(|n| g.add_nonterminal(n, None));
        g.start = s;
        for n in [a, b, c] {
            g.add_rule(s, vec![Symbol::N(n)], None);
            g.add_rule(n, vec![Symbol::T(x), Symbol::N(n)], None);
        }
        g.add_rule(a, vec![Symbol::T(x)], None);
        g.add_rule(b, vec![Symbol::T(x)], None);
        g.add_rule(c, vec![Symbol::T(y)], None);
        merge_equivalent(&mut g);
        let rhs_of = |n: u32| g.rules.iter().filter(|r| r.lhs == n).map(|r| r.rhs.clone()).collect::<Vec<_>>();
        assert_eq!(rhs_of(s), vec![vec![Symbol::N(a)], vec![Symbol::N(c)]]);
        assert_eq!(rhs_of(a), vec![vec![Symbol::T(x), Symbol::N(a)], vec![Symbol::T(x)]]);
        assert!(rhs_of(b).is_empty());
        assert_eq!(rhs_of(c), vec![vec![Symbol::T(x), Symbol::N(c)], vec![Symbol::T(y)]]);
    }
}
