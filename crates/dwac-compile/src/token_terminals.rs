//! Token terminals: grammar symbols that match vocabulary tokens (special tokens such as
//! `<|tool_call|>`, `<[128010]>`, llama.cpp's `<think>` and `!<[id]>*`) rather than text.
//!
//! A token has no text the grammar could spell, so each token a grammar names gets one: its
//! *escape* `E(v)`, the byte `0xFF` and six bytes `0xF8 + digit` spelling `v` in octal (most
//! significant digit first). No UTF-8 text holds a byte from `0xF8` up, and every text terminal
//! is UTF-8 (the lexer checks), so no text spells an escape and no escape spells text. The
//! escapes all have the same length, so none is a prefix of another.
//!
//! The compiler then works on the *grammar's vocabulary*, which differs from the tokenizer's in
//! two ways: a named token's bytes are its escape (and it is no longer special, so masks and
//! commits treat it like any token), and a text token holding a byte from `0xF8` up (a
//! byte-level vocabulary's raw byte tokens) is made special, since no UTF-8 text can hold it.
//! The artifact stores this vocabulary (docs/FORMAT.md); the runtime needs nothing else.
//!
//! A token terminal's regex is the alternation of its tokens' escapes (and any one character of
//! text for a negated set under a repetition, `!<[id]>*`: any tokens but these), written here
//! once the vocabulary is known.

use std::collections::{BTreeSet, HashMap};

use dwac_grammar::{Grammar, GrammarError, Terminal, TokenItem, TokenSet};
use dwac_runtime::Vocabulary;

use crate::CompileError;

/// The first byte of every escape.
pub const ESCAPE_LEAD: u8 = 0xFF;
/// The first byte no UTF-8 text holds; escape digits are `DIGIT_BASE + 0..8`.
pub const DIGIT_BASE: u8 = 0xF8;
/// Octal digits after the lead byte.
pub const DIGITS: usize = 6;
/// Escapes name token ids below this (8⁶).
pub const MAX_TOKENS: usize = 1 << (3 * DIGITS);

/// The escape of token `id` (`id < MAX_TOKENS`).
pub fn escape(id: u32) -> [u8; DIGITS + 1] {
    let mut e = [ESCAPE_LEAD; DIGITS + 1];
    for (k, b) in e[1..].iter_mut().enumerate() {
        let shift = 3 * (DIGITS - 1 - k);
        *b = DIGIT_BASE + ((id >> shift) & 7) as u8;
    }
    e
}

/// Does the grammar name tokens?
pub fn has_token_terminals(g: &Grammar) -> bool {
    g.terminals.iter().any(|t| t.tokens.is_some())
}

/// What [`resolve`] made of a grammar's token terminals.
#[derive(Clone, Debug, Default)]
pub struct TokenTerminals {
    /// The tokens given escapes (sorted): every token a terminal names, and for a negated set
    /// every special token it may match.
    pub escaped: Vec<u32>,
    /// Per token terminal: its name and how many tokens it matches.
    pub terminals: Vec<(String, usize)>,
}

/// The grammar with its token terminals' regexes written, the grammar's vocabulary, and what
/// was done; `None` when the grammar names no token.
pub fn resolve(g: &Grammar, vocab: &Vocabulary) -> Result<Option<(Grammar, Vocabulary, TokenTerminals)>, CompileError> {
    if !has_token_terminals(g) {
        return Ok(None);
    }
    let n = vocab.len();
    let error = |t: &Terminal, msg: String| -> CompileError {
        match (&g.source, t.span) {
            (Some(src), Some(span)) => CompileError::Grammar(GrammarError::at(src, span, msg)),
            _ => CompileError::Grammar(GrammarError::global(format!("token terminal {}: {msg}", t.name))),
        }
    };
    if n > MAX_TOKENS {
        let t = g.terminals.iter().find(|t| t.tokens.is_some()).expect("a token terminal");
        return Err(error(
            t,
            format!("token references need a vocabulary of at most {MAX_TOKENS} tokens; this one has {n}"),
        ));
    }
    let eos: BTreeSet<u32> = vocab.eos().iter().copied().collect();
    // Tokens by their bytes, for `<text>` items (built only for the lengths named).
    let lens: BTreeSet<usize> = g
        .terminals
        .iter()
        .filter_map(|t| t.tokens.as_ref())
        .flat_map(|s| s.items.iter())
        .filter_map(|i| if let TokenItem::Text(x) = i { Some(x.len()) } else { None })
        .collect();
    let mut by_bytes: HashMap<&[u8], Vec<u32>> = HashMap::new();
    for v in 0..n as u32 {
        if let Some(b) = vocab.token_bytes(v).filter(|b| lens.contains(&b.len())) {
            by_bytes.entry(b).or_default().push(v);
        }
    }
    let items_ids = |t: &Terminal, set: &TokenSet| -> Result<BTreeSet<u32>, CompileError> {
        let mut ids = BTreeSet::new();
        for item in &set.items {
            match item {
                TokenItem::Text(x) => {
                    let all = by_bytes.get(x.as_bytes()).map(Vec::as_slice).unwrap_or_default();
                    // A special token spelled so wins over a text token spelled the same.
                    let mut special: Vec<u32> = all.iter().copied().filter(|&v| vocab.is_special(v)).collect();
                    // Special tokens have no bytes in a tokenizer's vocabulary: by their name.
                    special.extend(vocab.special_named(x));
                    let found = if special.is_empty() { all.to_vec() } else { special };
                    if found.is_empty() {
                        return Err(error(t, format!("unknown token `{x}`: no token of the vocabulary is spelled so")));
                    }
                    ids.extend(found);
                }
                &TokenItem::Ids(lo, hi) => {
                    if hi as usize >= n {
                        let bad = if lo as usize >= n { lo } else { hi };
                        return Err(error(t, format!("token id {bad} is outside the vocabulary ({n} tokens)")));
                    }
                    ids.extend(lo..=hi);
                }
            }
        }
        Ok(ids)
    };
    // Every token a terminal names (positively or as an exception) gets an escape.
    let mut named: BTreeSet<u32> = BTreeSet::new();
    for t in &g.terminals {
        let Some(set) = &t.tokens else { continue };
        let ids = items_ids(t, set)?;
        if !set.negated {
            if let Some(&e) = ids.iter().find(|v| eos.contains(v)) {
                let shown = vocab.token_bytes(e).unwrap_or_default().escape_ascii().to_string();
                return Err(error(
                    t,
                    format!(
                        "token {e} (`{shown}`) ends the output (an end-of-sequence token): a grammar cannot name it; \
                         the output may end with it wherever the grammar is complete"
                    ),
                ));
            }
        }
        named.extend(ids.into_iter().filter(|v| !eos.contains(v)));
    }
    // A negated set matches any special token (and any named one) but its own items, never an
    // end token, never a raw byte token no UTF-8 text holds.
    let others: BTreeSet<u32> = (0..n as u32)
        .filter(|&v| !eos.contains(&v) && (named.contains(&v) || (vocab.is_special(v) && !unmatchable(vocab, v))))
        .collect();
    let mut out = g.clone();
    let mut escaped = named.clone();
    let mut report = Vec::new();
    for t in out.terminals.iter_mut() {
        let Some(set) = t.tokens.clone() else { continue };
        let ids = items_ids(t, &set)?;
        let ids: BTreeSet<u32> = if set.negated { others.difference(&ids).copied().collect() } else { ids };
        escaped.extend(ids.iter().copied());
        let mut alts = Vec::new();
        if !ids.is_empty() {
            alts.push(escapes_regex(&ids.iter().copied().collect::<Vec<_>>()));
        }
        if set.text {
            alts.push("(?s:.)".to_string());
        }
        if alts.is_empty() {
            return Err(error(t, "this token reference matches no token".into()));
        }
        let one = format!("(?:{})", alts.join("|"));
        t.regex = if set.repeat { format!("{one}+") } else { one };
        report.push((t.name.clone(), ids.len()));
    }
    let gvocab = grammar_vocabulary(vocab, &escaped);
    Ok(Some((out, gvocab, TokenTerminals { escaped: escaped.into_iter().collect(), terminals: report })))
}

/// A text token no UTF-8 text holds (a byte from `DIGIT_BASE` up).
fn unmatchable(vocab: &Vocabulary, v: u32) -> bool {
    vocab.token_bytes(v).is_some_and(|b| b.iter().any(|&x| x >= DIGIT_BASE))
}

/// The grammar's vocabulary (module docs): `escaped` tokens spelled by their escapes and not
/// special, text tokens no UTF-8 text holds made special, the rest as in `vocab`.
pub fn grammar_vocabulary(vocab: &Vocabulary, escaped: &BTreeSet<u32>) -> Vocabulary {
    let n = vocab.len() as u32;
    let mut tokens = Vec::with_capacity(n as usize);
    let mut special = Vec::with_capacity(n as usize);
    for v in 0..n {
        if escaped.contains(&v) {
            tokens.push(escape(v).to_vec());
            special.push(false);
        } else {
            tokens.push(vocab.token_bytes(v).unwrap_or_default().to_vec());
            special.push(vocab.is_special(v) || unmatchable(vocab, v));
        }
    }
    Vocabulary::from_tokens(&tokens, special, vocab.eos().to_vec())
}

/// A regex matching exactly the escapes of `ids` (sorted, distinct, nonempty): a trie over the
/// octal digits whose siblings with the same subtree share a byte class, so that an id range is
/// a handful of classes, not one alternative per id.
fn escapes_regex(ids: &[u32]) -> String {
    fn byte(b: u8) -> String {
        format!("\\x{b:02X}")
    }
    fn node(ids: &[u32], level: usize) -> String {
        if level == DIGITS {
            return String::new();
        }
        let shift = 3 * (DIGITS - 1 - level);
        // Children in digit order, each with its subtree's regex; equal subtrees merge.
        let mut groups: Vec<(String, Vec<u8>)> = Vec::new();
        let mut i = 0;
        while i < ids.len() {
            let d = ((ids[i] >> shift) & 7) as u8;
            let mut j = i;
            while j < ids.len() && ((ids[j] >> shift) & 7) as u8 == d {
                j += 1;
            }
            let sub = node(&ids[i..j], level + 1);
            match groups.iter_mut().find(|(s, _)| *s == sub) {
                Some((_, ds)) => ds.push(d),
                None => groups.push((sub, vec![d])),
            }
            i = j;
        }
        let alts: Vec<String> = groups
            .into_iter()
            .map(|(sub, ds)| {
                let class = if ds.len() == 1 {
                    byte(DIGIT_BASE + ds[0])
                } else {
                    format!("[{}]", ds.iter().map(|&d| byte(DIGIT_BASE + d)).collect::<String>())
                };
                format!("{class}{sub}")
            })
            .collect();
        if alts.len() == 1 {
            alts.into_iter().next().unwrap_or_default()
        } else {
            format!("(?:{})", alts.join("|"))
        }
    }
    format!("(?-u:{}{})", byte(ESCAPE_LEAD), node(ids, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_distinct_fixed_length_and_not_utf8() {
        let mut seen = std::collections::HashSet::new();
        for id in [0u32, 1, 7, 8, 63, 64, 151_643, (MAX_TOKENS - 1) as u32] {
            let e = escape(id);
            assert!(e.iter().all(|&b| b >= DIGIT_BASE));
            assert!(std::str::from_utf8(&e).is_err());
            assert!(seen.insert(e));
        }
        assert_eq!(escape(0), [0xFF, 0xF8, 0xF8, 0xF8, 0xF8, 0xF8, 0xF8]);
        assert_eq!(escape(9), [0xFF, 0xF8, 0xF8, 0xF8, 0xF8, 0xF9, 0xF9]);
    }

    #[test]
    fn an_escape_regex_matches_exactly_its_ids() {
        for ids in [vec![5u32], vec![0, 1, 2, 3, 4, 5, 6, 7], (100..=700).collect(), vec![3, 64, 65, 4095, 151_000]] {
            let pat = format!("^(?:{})$", escapes_regex(&ids));
            let re = regex::bytes::Regex::new(&pat).unwrap_or_else(|e| panic!("{pat}: {e}"));
            for v in 0..5000u32 {
                assert_eq!(re.is_match(&escape(v)[..]), ids.contains(&v), "id {v} against {pat}");
            }
            assert!(!re.is_match(&escape(ids[0])[..DIGITS]), "a prefix of an escape is not one");
        }
    }
}
