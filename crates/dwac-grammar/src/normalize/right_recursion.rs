//! Pass 4 of [`super::normalize`]: right recursion rewritten to left recursion.

use super::{
    dedup_rules, right_end_graph, sccs, Grammar, HashMap, HashSet, Names, Nonterminal, RightRecursionFree, Rule, Span,
    Symbol,
};

/// Rewrite right recursion into left recursion (ARCHITECTURE.md "Invariants", normalized grammar).
///
/// For every strongly connected component of the right-end graph that has a cycle, order
/// its members `A1 … Am` (reverse postorder of a DFS inside the component, so only the
/// DFS back edges need work) and run Paull's algorithm mirrored:
///
/// * for `i = 1 … m`, for `j < i`: replace each rule `Ai → α Aj` by `Ai → α γ` for every
///   rule `Aj → γ`. The `γ` that end outside the component are shared through one helper
///   `Aj'tail → γ…` instead of being copied (when there are two or more);
/// * then make the direct recursion `Ai → α_k Ai | β_l` left-recursive:
///   `Ai → β_l | N β_l`, `N → α_k | N α_k` (so `L(N) = (∪α)⁺` and `L(Ai) = (∪α)* (∪β)`).
///
/// Afterwards every right-end edge inside the component goes from a lower to a higher
/// member, helpers `N` never stand at a right end and `tail` helpers only end outside the
/// component, so the right-end graph is acyclic.
///
/// `rule_budget` bounds how many rules may be added in total (and `16 ×` that many
/// right-hand-side symbols). A component whose rewrite would exceed what is left is left
/// unchanged and reported in `right_recursive_left`; later components still get their turn.
///
/// Language-preserving on any grammar. The postcondition (no right recursion outside
/// `right_recursive_left`) needs an ε-free input without unit cycles. Rules `A → A` are
/// dropped from rewritten components. New rules are appended after the untouched ones.
pub fn eliminate_right_recursion(g: &Grammar, rule_budget: usize) -> RightRecursionFree {
    let adj = right_end_graph(g);
    let comps: Vec<Vec<u32>> = sccs(&adj)
        .into_iter()
        .rev() // sources first: the order the grammar is usually read in
        .filter(|c| c.len() > 1 || adj[c[0] as usize].binary_search(&c[0]).is_ok())
        .collect();
    if comps.is_empty() {
        return RightRecursionFree { grammar: g.clone(), right_recursive_left: Vec::new() };
    }
    let by_lhs = g.rules_by_lhs();
    let mut nts = g.nonterminals.clone();
    let mut names = Names::new(&nts);
    let mut rewritten = vec![false; g.nonterminals.len()];
    let mut new_rules: Vec<Rule> = Vec::new();
    let mut left: Vec<u32> = Vec::new();
    let mut rules_left = rule_budget;
    let mut syms_left = rule_budget.saturating_mul(16);
    for comp in &comps {
        let budget = (rules_left, syms_left);
        match rewrite_component(g, &by_lhs, &adj, comp, &mut nts, &mut names, budget) {
            Some((rules, added_rules, added_syms)) => {
                rules_left -= added_rules;
                syms_left -= added_syms;
                for &a in comp {
                    rewritten[a as usize] = true;
                }
                new_rules.extend(rules);
            }
            None => left.extend_from_slice(comp),
        }
    }
    let mut rules: Vec<Rule> = g.rules.iter().filter(|r| !rewritten[r.lhs as usize]).cloned().collect();
    rules.extend(new_rules);
    left.sort_unstable();
    RightRecursionFree {
        grammar: Grammar {
            terminals: g.terminals.clone(),
            nonterminals: nts,
            rules: dedup_rules(rules),
            start: g.start,
            ..Grammar::default()
        },
        right_recursive_left: left,
    }
}

type Rhs = Vec<Symbol>;
/// A right-hand side with the span of the source rule it came from.
type SpannedRhs = (Rhs, Option<Span>);

/// Rewrite one recursive component. On success returns its new rules (members' and
/// helpers'; helpers are appended to `nts`) and how many rules and symbols were added;
/// `None` (with `nts` and `names` untouched) if that exceeds `budget`.
fn rewrite_component(
    g: &Grammar,
    by_lhs: &[Vec<usize>],
    adj: &[Vec<u32>],
    comp: &[u32],
    nts: &mut Vec<Nonterminal>,
    names: &mut Names,
    budget: (usize, usize),
) -> Option<(Vec<Rule>, usize, usize)> {
    let order = component_order(adj, comp);
    let m = order.len();
    let mut pos: HashMap<u32, usize> = HashMap::with_capacity(m);
    for (i, &a) in order.iter().enumerate() {
        pos.insert(a, i);
    }
    let in_comp = |s: Option<&Symbol>| matches!(s, Some(Symbol::N(b)) if pos.contains_key(b));

    // Rules per member (in `order`), each with the span of the source rule it came from.
    let mut rules: Vec<Vec<SpannedRhs>> = order
        .iter()
        .map(|&a| {
            by_lhs[a as usize]
                .iter()
                .map(|&i| &g.rules[i])
                .filter(|r| r.rhs != [Symbol::N(a)])
                .map(|r| (r.rhs.clone(), r.span))
                .collect()
        })
        .collect();
    let count = |rs: &[SpannedRhs]| (rs.len(), rs.iter().map(|r| r.0.len()).sum::<usize>());
    let (orig_rules, orig_syms) = rules.iter().fold((0, 0), |acc, rs| {
        let c = count(rs);
        (acc.0 + c.0, acc.1 + c.1)
    });
    let (max_rules, max_syms) = (orig_rules.saturating_add(budget.0), orig_syms.saturating_add(budget.1));

    // Helpers: (name base, tag, rules). Ids are nts.len() + index once committed.
    let first_helper = nts.len() as u32;
    let mut helpers: Vec<(u32, &'static str, Vec<SpannedRhs>)> = Vec::new();
    let mut tails: HashMap<Vec<Rhs>, u32> = HashMap::new();
    let (mut total_rules, mut total_syms) = (orig_rules, orig_syms);

    for i in 0..m {
        let ai = order[i];
        let mut cur = std::mem::take(&mut rules[i]);
        // Substitute the lowest member below `i` that some rule ends in, until none is
        // left. The rules this adds end in higher members, so `j` only increases.
        loop {
            let back = cur.iter().filter_map(|r| match r.0.last() {
                Some(Symbol::N(b)) => pos.get(b).copied().filter(|&p| p < i),
                _ => None,
            });
            let Some(j) = back.min() else { break };
            let aj = Symbol::N(order[j]);
            // Aj's rules are final. Those ending outside the component are dead ends for
            // the recursion and can be shared through a tail helper.
            let (inline, dead): (Vec<&SpannedRhs>, Vec<&SpannedRhs>) =
                rules[j].iter().partition(|r| in_comp(r.0.last()));
            let mut copy: Vec<&Rhs> = inline.iter().map(|r| &r.0).collect();
            let mut tail = None;
            match dead.len() {
                0 => {}
                1 => copy.push(&dead[0].0),
                _ => {
                    let key: Vec<Rhs> = dead.iter().map(|r| r.0.clone()).collect();
                    let id = match tails.get(&key) {
                        Some(&id) => id,
                        None => {
                            let id = first_helper + helpers.len() as u32;
                            total_rules += key.len();
                            total_syms += key.iter().map(Vec::len).sum::<usize>();
                            let hr = dead.iter().map(|r| (*r).clone()).collect();
                            helpers.push((order[j], "tail", hr));
                            tails.insert(key, id);
                            id
                        }
                    };
                    tail = Some(Symbol::N(id));
                }
            }
            let mut next = Vec::with_capacity(cur.len());
            for (rhs, span) in cur {
                if rhs.last() != Some(&aj) {
                    next.push((rhs, span));
                    continue;
                }
                let prefix = &rhs[..rhs.len() - 1];
                total_rules -= 1;
                total_syms -= rhs.len();
                for gamma in copy.iter().map(|r| r.as_slice()).chain(tail.as_ref().map(std::slice::from_ref)) {
                    let mut r = prefix.to_vec();
                    r.extend_from_slice(gamma);
                    total_rules += 1;
                    total_syms += r.len();
                    next.push((r, span));
                }
                if total_rules > max_rules || total_syms > max_syms {
                    return None;
                }
            }
            cur = next;
        }
        // Direct recursion.
        let me = Symbol::N(ai);
        let (mut alphas, betas): (Vec<_>, Vec<_>) = cur.into_iter().partition(|r| r.0.last() == Some(&me));
        alphas.retain(|r| r.0.len() > 1); // `Ai → Ai` adds nothing to the language
        if alphas.is_empty() {
            rules[i] = betas;
            continue;
        }
        let nn = Symbol::N(first_helper + helpers.len() as u32);
        let mut mine = Vec::with_capacity(2 * betas.len());
        let mut theirs = Vec::with_capacity(2 * alphas.len());
        for (rhs, span) in &betas {
            mine.push((rhs.clone(), *span));
            let mut r = vec![nn];
            r.extend_from_slice(rhs);
            mine.push((r, *span));
        }
        for (rhs, span) in &alphas {
            let alpha = &rhs[..rhs.len() - 1];
            theirs.push((alpha.to_vec(), *span));
            let mut r = vec![nn];
            r.extend_from_slice(alpha);
            theirs.push((r, *span));
        }
        total_rules += betas.len() + alphas.len();
        total_syms += betas.len() + alphas.len();
        if total_rules > max_rules || total_syms > max_syms {
            return None;
        }
        rules[i] = mine;
        helpers.push((ai, "rr", theirs));
    }

    // Commit.
    let mut out = Vec::with_capacity(total_rules);
    for (i, rs) in rules.into_iter().enumerate() {
        out.extend(rs.into_iter().map(|(rhs, span)| Rule { lhs: order[i], rhs, span }));
    }
    for (k, (base, tag, rs)) in helpers.into_iter().enumerate() {
        let id = first_helper + k as u32;
        let src = &g.nonterminals[base as usize];
        nts.push(Nonterminal { name: names.fresh(&src.name, tag), span: src.span });
        out.extend(rs.into_iter().map(|(rhs, span)| Rule { lhs: id, rhs, span }));
    }
    Some((out, total_rules.saturating_sub(orig_rules), total_syms.saturating_sub(orig_syms)))
}

/// The members of `comp` in reverse postorder of a DFS (from the smallest member) that
/// stays inside the component: every right-end edge inside the component then goes forward
/// except the DFS back edges.
fn component_order(adj: &[Vec<u32>], comp: &[u32]) -> Vec<u32> {
    let members: HashSet<u32> = comp.iter().copied().collect();
    let root = *comp.iter().min().expect("non-empty component");
    let mut seen: HashSet<u32> = HashSet::with_capacity(comp.len());
    let mut post = Vec::with_capacity(comp.len());
    let mut call: Vec<(u32, usize)> = vec![(root, 0)];
    seen.insert(root);
    while let Some(&mut (v, ref mut ei)) = call.last_mut() {
        if let Some(&w) = adj[v as usize].get(*ei) {
            *ei += 1;
            if members.contains(&w) && seen.insert(w) {
                call.push((w, 0));
            }
            continue;
        }
        post.push(v);
        call.pop();
    }
    post.reverse();
    post
}
