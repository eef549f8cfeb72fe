//! A component of one length-bounded terminal, built as the product of its patterns' minimal
//! DFA with the character counter.
//!
//! The subset construction with counters ([`super::length`]) carries a count beside every
//! subset of NFA states, and a pattern's subsets are many more than its minimal DFA's states (a
//! `uri` under `maxLength: 500`: 282,852 subsets for 87,789 states in the end, most of the time
//! spent on closures and on minimizing). With one terminal in the component, the language is
//! simply the lexemes of its patterns (without the bound) whose JSON characters number between
//! `min` and `max`: the product of the patterns' minimal DFA `D` with the character decoder and
//! a count accepts exactly those (the count saturates, as the subset construction's does, once
//! `D`'s longest path to acceptance can no longer take it past `max`). Minimized
//! and numbered canonically ([`super::minimized`]) it is the DFA the subset construction gives,
//! state for state: a minimal DFA is unique, and both are numbered breadth first over the same
//! byte classes (`D`'s own, which are its patterns' NFA's, refined by the decoder's).

use super::length::{self, BAD, CLOSED, PRE};
use super::{build_component, component_terminals, minimized, ComponentDfa, MAX_DFA_STATES};
use crate::dwa::FastMap;
use crate::CompileError;
use dwac_grammar::Terminal;
use dwac_runtime::unstable::DEAD;

/// A count that can no longer fail.
const SAT: u64 = u64::MAX;

/// The component of terminal `i` alone (`active`: the component's terminals, for messages), if
/// it has a length bound; `None` otherwise.
pub(super) fn counted_component(
    terminals: &[Terminal],
    i: usize,
    active: &[bool],
) -> Result<Option<ComponentDfa>, CompileError> {
    let t = &terminals[i];
    let any_string = dwac_grammar::schema::strings::json_string_any();
    let (musts, counter) = length::split_bounds(t, i as u32, &any_string, 0);
    let Some(counter) = counter else { return Ok(None) };
    // The terminal without its bound, alone: `D`, accepting terminal 0.
    let unbounded =
        Terminal { regex: musts[0].to_string(), also: musts[1..].iter().map(|p| p.to_string()).collect(), ..t.clone() };
    let d = build_component(std::slice::from_ref(&unbounded), &[true])?;
    let (class_of, first) = length::classes(|b| d.class[b as usize] as u8, true);
    let k = first.len();
    let (min, max) = (counter.min, counter.max);
    let longest = longest_to_accept(&d);
    // States (D's state, decoder, count). Saturation, as the subset construction does it: once
    // the count is at least `min` and no lexeme `D` can still complete is long enough to pass
    // `max` (the longest path to acceptance, in bytes, bounds the characters still to come,
    // less the closing quote; after it, none come), the bound can no longer fail and the count
    // is forgotten ([`SAT`]); without `max`, at `min`.
    let mut index: FastMap<(u32, u8, u64), u32> = FastMap::default();
    let mut states: Vec<(u32, u8, u64)> = vec![(0, PRE, 0)];
    index.insert(states[0], 0);
    let mut accs: Vec<Vec<u32>> = vec![Vec::new()];
    let mut trans: Vec<u32> = Vec::new();
    let mut at = 0;
    while at < states.len() {
        let (q, dec, count) = states[at];
        at += 1;
        for &b in &first {
            let b = b as u8;
            let q2 = d.trans[q as usize * d.k + d.class[b as usize] as usize];
            let (dec2, done) = length::decode(dec, b);
            let count2 = if count == SAT { SAT } else { count + u64::from(done) };
            if q2 == DEAD || dec2 == BAD || count2 != SAT && max.is_some_and(|m| count2 > m) {
                trans.push(DEAD);
                continue;
            }
            let fits = |m: u64| {
                dec2 == CLOSED
                    || longest[q2 as usize] != u32::MAX
                        && count2 + u64::from(longest[q2 as usize].saturating_sub(1)) <= m
            };
            let count2 = if count2 != SAT && count2 >= min && max.is_none_or(fits) { SAT } else { count2 };
            let key = (q2, dec2, count2);
            let id = match index.get(&key) {
                Some(&id) => id,
                None => {
                    let id = states.len() as u32;
                    if states.len() % 4096 == 4095 {
                        if let Some(why) = crate::threads::stop_requested() {
                            return Err(CompileError::Stopped(why));
                        }
                    }
                    if states.len() >= MAX_DFA_STATES {
                        return Err(CompileError::Budget(format!(
                            "lexer DFA exceeds {MAX_DFA_STATES} states in the lexer component of {}",
                            component_terminals(terminals, active)
                        )));
                    }
                    index.insert(key, id);
                    states.push(key);
                    let accepts = !d.accs[q2 as usize].is_empty() && dec2 == CLOSED && (count2 == SAT || count2 >= min);
                    accs.push(if accepts { vec![i as u32] } else { Vec::new() });
                    id
                }
            };
            trans.push(id);
        }
    }
    Ok(Some(minimized(states.len(), (class_of.to_vec(), k), trans, accs)))
}

/// Per state of `d`, the most bytes a path from it to an accepting state reads
/// ([`length::longest_to_final`]).
fn longest_to_accept(d: &ComponentDfa) -> Vec<u32> {
    let row = |q: usize| &d.trans[q * d.k..(q + 1) * d.k];
    length::longest_to_final(
        d.n,
        |q, out| out.extend(row(q).iter().filter(|&&t| t != DEAD).map(|&t| (t as usize, 1))),
        |q| !d.accs[q].is_empty(),
    )
}
