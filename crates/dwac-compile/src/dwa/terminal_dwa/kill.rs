//! `KILL` sets (docs/CONSTRUCTION.md "The Parser DWA", step 1): the tokens whose bytes fire an inhibitor carried across a
//! token boundary, computed once per inhibitor behaviour and shared between grammars.

use super::{FastMap, Inhibitor, LexerTables, Trie, TrieIndex};
use std::sync::Arc;

/// Inhibitor states a kill set's canonical table may have (past it, the set is computed
/// without the cache).
pub(super) const MAX_KILL_TABLE: usize = 256;

/// Words the kill cache may hold in all (a memory bound).
pub(super) const KILL_CACHE_WORDS: usize = 8 << 20;

/// [`kill_set_shared`]'s table: the byte fires the inhibitor (a longer match appeared).
pub(super) const KILL_FIRES: u32 = u32::MAX;

/// [`kill_set_shared`]'s table: the byte drops the inhibitor (no longer match can appear).
pub(super) const KILL_DROPS: u32 = u32::MAX - 1;

/// Every carried inhibitor `(s, k)` that can exist at a token boundary: the inhibitors tokens
/// create, advanced over any bytes that neither fire nor drop them. Sorted.
pub fn carried_inhibitors(lex: &LexerTables) -> Vec<Inhibitor> {
    let mut seen: std::collections::BTreeSet<Inhibitor> = Default::default();
    let mut stack = Vec::new();
    for q in 0..lex.num_states {
        for &t in lex.accepts(q) {
            if let Some(i) = lex.inhibitor_for(t, q) {
                if seen.insert(i) {
                    stack.push(i);
                }
            }
        }
    }
    let mut out = Vec::new();
    while let Some(i) = stack.pop() {
        for b in 0..=255u8 {
            if lex.step_inhibitors(&[i], b, &mut out).is_some() {
                for &j in &out {
                    if seen.insert(j) {
                        stack.push(j);
                    }
                }
            }
        }
    }
    seen.into_iter().collect()
}

/// [`kill_set`], shared between grammars: the set depends only on how the inhibitor moves
/// over bytes, which its canonical table records (the states it can reach, numbered
/// breadth-first from `i.s` over bytes in order, and per state and byte: fires, dropped, or the
/// state it moves to). Grammars whose inhibitor has an equal table (in JSON-Schema grammars:
/// the number and whitespace terminals') have the same kill set, computed once per process.
pub fn kill_set_shared(lex: &LexerTables, trie: &Trie, index: &TrieIndex, i: Inhibitor) -> Arc<[u32]> {
    let mut states = vec![i.s];
    let mut number: FastMap<u32, u32> = FastMap::from_iter([(i.s, 0)]);
    let mut table = Vec::new();
    let mut out = Vec::new();
    let mut at = 0;
    while at < states.len() {
        let x = states[at];
        for b in 0..=255u8 {
            let code = match lex.step_inhibitors(&[Inhibitor { s: x, k: i.k }], b, &mut out) {
                None => KILL_FIRES,
                Some(()) => match out.first() {
                    None => KILL_DROPS,
                    Some(j) => {
                        let next = states.len() as u32;
                        *number.entry(j.s).or_insert_with(|| {
                            states.push(j.s);
                            next
                        })
                    }
                },
            };
            table.push(code);
        }
        if states.len() > MAX_KILL_TABLE {
            return kill_set(lex, trie, i).into();
        }
        at += 1;
    }
    let table: Arc<[u32]> = table.into();
    {
        let mut cache = index.kills.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(set) = cache.sets.get(&table).map(Arc::clone) {
            cache.hits += 1;
            return set;
        }
    }
    let set: Arc<[u32]> = kill_set(lex, trie, i).into();
    let mut cache = index.kills.lock().unwrap_or_else(|p| p.into_inner());
    if cache.words + table.len() + set.len() <= KILL_CACHE_WORDS {
        cache.words += table.len() + set.len();
        cache.sets.insert(table, Arc::clone(&set));
    }
    set
}

/// The tokens whose bytes fire inhibitor `i` (`KILL`, docs/CONSTRUCTION.md "The Parser DWA", step 5).
pub fn kill_set(lex: &LexerTables, trie: &Trie, i: Inhibitor) -> Vec<u32> {
    let mut out = Vec::new();
    let mut stack = vec![(0u32, i)];
    let mut next = Vec::new();
    while let Some((node, inh)) = stack.pop() {
        for &(b, child) in trie.children(node) {
            match lex.step_inhibitors(&[inh], b, &mut next) {
                None => trie.subtree_tokens(child, &mut out),
                Some(()) => {
                    if let Some(&j) = next.first() {
                        stack.push((child, j));
                    }
                }
            }
        }
    }
    out.sort_unstable();
    out
}
