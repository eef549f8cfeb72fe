//! Length bounds of JSON string terminals, kept as counters beside the subset construction.
//!
//! A schema's `minLength`/`maxLength` reaches the lexer as a pattern `"C{min,max}"` in a
//! terminal's `also` list, C being one JSON string character in any of its encodings
//! ([`dwac_grammar::schema::strings::length_bounds`] recognizes it). Built as an automaton of its
//! own, that pattern multiplies every state of the terminal's other patterns by the number of
//! characters read so far: an email address under `maxLength: 1024` is about 160 × 1,025
//! subsets before minimization, past the determinizer's budget, although most of those products
//! are equivalent (the email's bounded parts, an IPv6 literal say, can never reach the bound).
//!
//! Instead, [`build_component`](super::build_component) carries beside each subset of NFA
//! states the state of a small decoder of JSON string characters and one counter per bounded
//! terminal ([`Lengths`]):
//! * the decoder reads the opening quote, characters (raw UTF-8, the short escapes, `\uXXXX`
//!   outside the surrogates, surrogate pairs: exactly the encodings C admits) and the closing
//!   quote; a byte C does not admit at that place kills every bounded terminal;
//! * a counter counts the characters completed; past `max` its terminal dies;
//! * a bounded terminal is accepted where its patterns match, the decoder has read the closing
//!   quote and `min ≤ count ≤ max`: exactly where `"C{min,max}"` would match beside them;
//! * **saturation**: once `count ≥ min` and no lexeme the terminal's patterns can still complete
//!   is long enough to pass `max` (the longest path to a match from the pattern's NFA states in
//!   the subset, in bytes, bounds the characters still to come, less the closing quote), the
//!   bound can no longer fail: the counter becomes [`SAT`] and stops counting, so subsets that
//!   differ only in counts past that point are one state.
//!
//! The state (subset, decoder, counters) decides which continuations are accepted exactly as the
//! subset of the product automaton did, and a count is replaced by `SAT` only where both accept
//! the same continuations. So the language of every state is unchanged, and since a minimal DFA
//! is unique (and renumbered canonically), the tables are the ones the pattern would have given.

use dwac_grammar::schema::strings::length_bounds;
use dwac_grammar::Terminal;
use regex_automata::nfa::thompson::{State, NFA};
use regex_automata::util::primitives::StateID;

/// A counter that can no longer fail.
pub(super) const SAT: u32 = u32::MAX - 1;
/// A counter whose terminal is dead (or that no state needs).
pub(super) const OFF: u32 = u32::MAX;

/// The decoder's states.
pub(super) const PRE: u8 = 0;
const BODY: u8 = 1;
pub(super) const CLOSED: u8 = 2;
pub(super) const BAD: u8 = 3;
const ESC: u8 = 4;
/// UTF-8: continuation bytes still to read (any of 0x80–0xBF), and the lead bytes whose first
/// continuation is narrower (E0, ED, F0, F4).
const C1: u8 = 5;
const C2: u8 = 6;
const C3: u8 = 7;
const E0: u8 = 8;
const ED: u8 = 9;
const F0: u8 = 10;
const F4: u8 = 11;
/// `\u` escapes: the first digit; after a first `D`; digits left of an ordinary escape (3, 2,
/// 1); of a high surrogate (2, 1); the high surrogate read, then its `\`, `u`, `D`, second
/// digit (`C`–`F`), and the low surrogate's last two digits.
const X0: u8 = 12;
const XD: u8 = 13;
const N3: u8 = 14;
const N2: u8 = 15;
const N1: u8 = 16;
const H2: u8 = 17;
const H1: u8 = 18;
const HI: u8 = 19;
const HB: u8 = 20;
const L0: u8 = 21;
const L1: u8 = 22;
const L2: u8 = 23;
const L3: u8 = 24;
const DECODER_STATES: u8 = 25;

/// One decoder step: the next state and whether `b` completes a character.
pub(super) fn decode(s: u8, b: u8) -> (u8, bool) {
    let hex = b.is_ascii_hexdigit();
    match (s, b) {
        (PRE, b'"') => (BODY, false),
        (BODY, b'"') => (CLOSED, false),
        (BODY, b'\\') => (ESC, false),
        (BODY, 0x20..=0x7F) => (BODY, true),
        (BODY, 0xC2..=0xDF) | (C2, 0x80..=0xBF) | (E0, 0xA0..=0xBF) | (ED, 0x80..=0x9F) => (C1, false),
        (BODY, 0xE0) => (E0, false),
        (BODY, 0xE1..=0xEC | 0xEE..=0xEF) | (C3, 0x80..=0xBF) | (F0, 0x90..=0xBF) | (F4, 0x80..=0x8F) => (C2, false),
        (BODY, 0xED) => (ED, false),
        (BODY, 0xF0) => (F0, false),
        (BODY, 0xF1..=0xF3) => (C3, false),
        (BODY, 0xF4) => (F4, false),
        (C1, 0x80..=0xBF) => (BODY, true),
        (ESC, b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => (BODY, true),
        (ESC, b'u') => (X0, false),
        (X0, b'D' | b'd') => (XD, false),
        (X0, _) if hex => (N3, false),
        (XD, b'0'..=b'7') => (N2, false),
        (XD, b'8'..=b'9' | b'A'..=b'B' | b'a'..=b'b') => (H2, false),
        (N3, _) if hex => (N2, false),
        (N2, _) if hex => (N1, false),
        (N1, _) if hex => (BODY, true),
        (H2, _) if hex => (H1, false),
        (H1, _) if hex => (HI, false),
        (HI, b'\\') => (HB, false),
        (HB, b'u') => (L0, false),
        (L0, b'D' | b'd') => (L1, false),
        (L1, b'C'..=b'F' | b'c'..=b'f') => (L2, false),
        (L2, _) if hex => (L3, false),
        (L3, _) if hex => (BODY, true),
        _ => (BAD, false),
    }
}

/// A bounded terminal: its id, its bounds, and its patterns every lexeme must match (its main
/// pattern and the rest of its `also` list, as indices into the component's pattern list).
pub(super) struct Counter {
    pub terminal: u32,
    pub min: u64,
    pub max: Option<u64>,
    pub patterns: Vec<u32>,
    /// The bound was the terminal's only pattern: its main pattern is then any JSON string,
    /// whose matches a dead counter removes (the bound's pattern would not have matched).
    pub bound_only: bool,
}

/// The counters of one component and what their saturation needs.
pub(super) struct Lengths {
    counters: Vec<Counter>,
    /// Per NFA state: the longest path to a match, in bytes (`u32::MAX`: unbounded).
    longest: Vec<u32>,
    /// Per pattern: the largest `longest` among its states in the subset being settled (valid
    /// where `seen` holds the current generation `gen`).
    most: Vec<u32>,
    seen: Vec<u32>,
    gen: u32,
}

impl Lengths {
    pub fn new(counters: Vec<Counter>, nfa: &NFA, patterns: usize) -> Lengths {
        let longest = if counters.is_empty() { Vec::new() } else { longest_to_match(nfa) };
        Lengths { counters, longest, most: vec![0; patterns], seen: vec![0; patterns], gen: 0 }
    }

    pub fn is_empty(&self) -> bool {
        self.counters.is_empty()
    }

    /// The auxiliary state of the start subset: the decoder before the opening quote, every
    /// count zero (settled with the start subset by [`Lengths::settle`]).
    pub fn start(&self) -> Vec<u32> {
        if self.is_empty() {
            return Vec::new();
        }
        let mut aux = vec![0u32; 1 + self.counters.len()];
        aux[0] = u32::from(PRE);
        aux
    }

    /// The auxiliary state after byte `b` (decoder step, counts of the characters completed).
    pub fn step(&self, aux: &[u32], b: u8, out: &mut Vec<u32>) {
        out.clear();
        if self.is_empty() {
            return;
        }
        let (d, done) = decode(aux[0] as u8, b);
        out.push(u32::from(d));
        for (c, &v) in self.counters.iter().zip(&aux[1..]) {
            out.push(match v {
                OFF => OFF,
                _ if d == BAD => OFF,
                SAT => SAT,
                _ if done && c.max.is_some_and(|m| u64::from(v) + 1 > m) => OFF,
                _ if done => v + 1,
                _ => v,
            });
        }
    }

    /// Bring a new subset and its auxiliary state to their canonical form: a dead counter's
    /// terminal loses its NFA states (`owner`: each NFA state's pattern, `term`: each
    /// pattern's terminal) but keeps its matches in `acc`, as the construction keeps those of
    /// a terminal whose `also` part died ([`Counter::bound_only`] aside); a counter that can
    /// no longer fail saturates; the decoder is forgotten once no counter needs it.
    pub fn settle(&mut self, aux: &mut [u32], set: &mut Vec<StateID>, acc: &mut Vec<u32>, owner: &[u32], term: &[u32]) {
        if self.is_empty() {
            return;
        }
        let decoder = aux[0] as u8;
        self.gen += 1;
        let (seen, most, gen) = (&mut self.seen, &mut self.most, self.gen);
        for st in set.iter() {
            let p = owner[st.as_usize()] as usize;
            let l = self.longest[st.as_usize()];
            if seen[p] != gen {
                seen[p] = gen;
                most[p] = l;
            } else {
                most[p] = most[p].max(l);
            }
        }
        let mut dead: Vec<u32> = Vec::new();
        for (c, v) in self.counters.iter().zip(aux[1..].iter_mut()) {
            if *v == OFF || *v == SAT {
                if *v == OFF {
                    dead.push(c.terminal);
                }
                continue;
            }
            let count = u64::from(*v);
            // A character begun at the bound cannot end within it, and a closed lexeme short
            // of `min` never grows: the terminal is dead (as its pattern's automaton would be,
            // whose matches stay in `acc`; `allows` refuses them).
            let mid_char = !matches!(decoder, PRE | BODY | CLOSED);
            if mid_char && c.max == Some(count) || decoder == CLOSED && count < c.min {
                *v = OFF;
                dead.push(c.terminal);
                continue;
            }
            if count < c.min {
                continue;
            }
            // The characters still to come: at most the bytes of the longest path to a match
            // of the pattern that bounds them best, less the closing quote (none after it).
            let left = c
                .patterns
                .iter()
                .map(|&p| if seen[p as usize] == gen { most[p as usize] } else { 0 })
                .min()
                .unwrap_or(u32::MAX);
            let fits = match c.max {
                None => true,
                Some(_) if decoder == CLOSED => true,
                Some(_) if left == u32::MAX => false,
                Some(m) => count + u64::from(left.saturating_sub(1)) <= m,
            };
            if fits {
                *v = SAT;
            }
        }
        if !dead.is_empty() {
            set.retain(|st| !dead.contains(&term[owner[st.as_usize()] as usize]));
            let bound_only = |t: u32| self.counters.iter().any(|c| c.terminal == t && c.bound_only);
            acc.retain(|&p| !(dead.contains(&term[p as usize]) && bound_only(term[p as usize])));
        }
        if aux[1..].iter().all(|&v| v == OFF) {
            aux[0] = u32::from(BAD);
        }
    }

    /// Whether bounded terminal `t` may be accepted in a state with this auxiliary state (its
    /// patterns' matches are checked by the caller); true for terminals without a counter.
    pub fn allows(&self, aux: &[u32], t: u32) -> bool {
        match self.counters.iter().position(|c| c.terminal == t) {
            None => true,
            Some(i) => {
                let v = aux[1 + i];
                let c = &self.counters[i];
                aux[0] as u8 == CLOSED
                    && (v == SAT || v != OFF && u64::from(v) >= c.min && c.max.is_none_or(|m| u64::from(v) <= m))
            }
        }
    }

    /// The classes of bytes of the subset construction: `nfa_class`'s (bytes the NFA treats
    /// alike), refined by the decoder's when there are counters; each byte's class and each
    /// class's first byte, numbered in order of their first byte.
    pub fn classes(&self, nfa_class: impl Fn(u8) -> u8) -> ([u16; 256], Vec<u16>) {
        classes(nfa_class, !self.is_empty())
    }
}

/// Classes of bytes: `nfa_class`'s, refined by the decoder's when `decoding`; each byte's class
/// and each class's first byte, numbered in order of their first byte.
pub(super) fn classes(nfa_class: impl Fn(u8) -> u8, decoding: bool) -> ([u16; 256], Vec<u16>) {
    let mut columns: Vec<Vec<(u8, bool)>> = Vec::new();
    let mut pairs: Vec<(u8, usize)> = Vec::new();
    let (mut class_of, mut first) = ([0u16; 256], Vec::new());
    for b in 0..=255u8 {
        let mut decoder = 0;
        if decoding {
            let col: Vec<(u8, bool)> = (0..DECODER_STATES).map(|s| decode(s, b)).collect();
            decoder = columns.iter().position(|c| *c == col).unwrap_or(columns.len());
            if decoder == columns.len() {
                columns.push(col);
            }
        }
        let pair = (nfa_class(b), decoder);
        let c = pairs.iter().position(|&p| p == pair).unwrap_or(pairs.len());
        if c == pairs.len() {
            pairs.push(pair);
            first.push(u16::from(b));
        }
        class_of[b as usize] = c as u16;
    }
    (class_of, first)
}

/// A terminal's patterns that every lexeme must match (its main pattern, then its `also`
/// patterns) with any JSON string length bound among them taken out as a [`Counter`] (the
/// patterns to be numbered from `first`); any JSON string (`any_string`) stands for the main
/// pattern when the bound was all there was. Lazy and token terminals keep theirs.
pub(super) fn split_bounds<'a>(
    t: &'a Terminal,
    terminal: u32,
    any_string: &'a str,
    first: u32,
) -> (Vec<&'a str>, Option<Counter>) {
    let mut musts: Vec<&str> = std::iter::once(&t.regex).chain(&t.also).map(String::as_str).collect();
    if t.lazy || t.tokens.is_some() {
        return (musts, None);
    }
    let bounds: Vec<(u64, Option<u64>)> = musts.iter().filter_map(|p| length_bounds(p)).collect();
    if bounds.is_empty() {
        return (musts, None);
    }
    musts.retain(|p| length_bounds(p).is_none());
    let bound_only = musts.is_empty();
    if bound_only {
        musts.push(any_string);
    }
    let counter = Counter {
        terminal,
        min: bounds.iter().map(|b| b.0).max().unwrap_or(0),
        max: bounds.iter().filter_map(|b| b.1).min(),
        patterns: (first..first + musts.len() as u32).collect(),
        bound_only,
    };
    (musts, Some(counter))
}

/// Per NFA state, the most bytes a path from it to a match state reads (`u32::MAX` when a
/// cycle on such a path makes it unbounded; 0 for states that reach no match, which then
/// bound nothing).
fn longest_to_match(nfa: &NFA) -> Vec<u32> {
    let state = |s: usize| nfa.state(StateID::new_unchecked(s));
    longest_to_final(
        nfa.states().len(),
        |s, out| super::successors(state(s), |t, w| out.push((t.as_usize(), w))),
        |s| matches!(state(s), State::Match { .. }),
    )
}

/// Per state of a graph of `n` states (`edges(s, out)`: its successors, each with the bytes
/// its edge reads; `is_final(s)`: a match or accepting state), the most bytes a path from it
/// to a final state reads (`u32::MAX` when a cycle on such a path makes it unbounded; 0 for
/// states that reach none). Kahn's order from the final states backwards over the states
/// that reach one: a state is done when all its successors are, and the states never done lie
/// on or before a cycle.
pub(super) fn longest_to_final(
    n: usize,
    edges: impl Fn(usize, &mut Vec<(usize, u32)>),
    is_final: impl Fn(usize) -> bool,
) -> Vec<u32> {
    let mut preds: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n];
    let mut out_edges: Vec<Vec<(usize, u32)>> = Vec::with_capacity(n);
    for s in 0..n {
        let mut e = Vec::new();
        edges(s, &mut e);
        for &(t, w) in &e {
            preds[t].push((s as u32, w));
        }
        out_edges.push(e);
    }
    // The states that reach a final state.
    let mut reaches = vec![false; n];
    let mut stack: Vec<usize> = (0..n).filter(|&s| is_final(s)).collect();
    for &s in &stack {
        reaches[s] = true;
    }
    while let Some(s) = stack.pop() {
        for &(p, _) in &preds[s] {
            if !reaches[p as usize] {
                reaches[p as usize] = true;
                stack.push(p as usize);
            }
        }
    }
    let mut pending: Vec<usize> = (0..n).map(|s| out_edges[s].iter().filter(|&&(t, _)| reaches[t]).count()).collect();
    let mut longest = vec![0u32; n];
    let mut done = vec![false; n];
    let mut ready: Vec<usize> = (0..n).filter(|&s| reaches[s] && pending[s] == 0).collect();
    while let Some(s) = ready.pop() {
        done[s] = true;
        for &(p, w) in &preds[s] {
            let p = p as usize;
            if !reaches[p] {
                continue;
            }
            longest[p] = longest[p].max(longest[s].saturating_add(w));
            pending[p] -= 1;
            if pending[p] == 0 {
                ready.push(p);
            }
        }
    }
    for s in 0..n {
        if reaches[s] && !done[s] {
            longest[s] = u32::MAX;
        }
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Count the characters of a JSON string lexeme with the decoder: `None` unless it reads
    /// the whole lexeme and ends after the closing quote.
    fn count(lexeme: &[u8]) -> Option<u64> {
        let (mut s, mut n) = (PRE, 0);
        for &b in lexeme {
            let (t, done) = decode(s, b);
            s = t;
            n += u64::from(done);
        }
        (s == CLOSED).then_some(n)
    }

    #[test]
    fn the_decoder_counts_json_string_characters_in_every_encoding() {
        assert_eq!(count(br#""""#), Some(0));
        assert_eq!(count(br#""ab""#), Some(2));
        assert_eq!(count("\"é€😀\"".as_bytes()), Some(3));
        assert_eq!(count(br#""\n\"\\\/\u0041\u00e9""#), Some(6));
        assert_eq!(count(br#""\uD83D\uDE00x""#), Some(2));
        assert_eq!(count(br#""\ud83d\ude00""#), Some(1));
        for bad in [
            &br#""\uDE00""#[..],
            br#""\uD83D""#,
            br#""\uD83Dx""#,
            br#""\uD83D\u0041""#,
            br#""\x""#,
            b"\"\x01\"",
            b"\"\xC0\x80\"",
            b"\"\xED\xA0\x80\"",
            b"\"\xF4\x90\x80\x80\"",
            br#""ab"c"#,
            br#"ab""#,
        ] {
            assert_eq!(count(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }
}
