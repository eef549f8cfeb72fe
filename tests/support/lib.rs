//! Shared support for the end-to-end tests (and the bench's differential run): engines compiled
//! from files and sources, synthetic vocabularies, random grammars, the differential checker and
//! the JSON checker. The corpora and where they live come from `dwac-testdata`.

pub mod differential;
pub mod jsoncheck;

use std::sync::Arc;

use dwac_compile::{compile_engine, parse_source, SourceKind};
use dwac_runtime::{Engine, Vocabulary};
use serde_json::Value;

/// Where the data lives and how its corpora read (`dwac-testdata`, which the bench shares); a
/// missing corpus fails the test that needs it.
pub use dwac_testdata::{
    gguf_vocab, grammars_dir, json_dumps, maskbench_dir, maskbench_files, maskbench_instances, repo_root,
    schema_test_suite, shared_data, shared_path, test_suite_files, test_suite_instances, tokenizer_json, Instance, Rng,
};

/// The `tokenizer.json` of a shared tokenizer by name (the older name of [`tokenizer_json`]).
pub use dwac_testdata::tokenizer_json as tokenizer_path;

/// Compile a grammar file of the repository (e.g. `grammars/json.lark`) for `vocab`.
pub fn engine_from_file(rel: &str, vocab: Vocabulary) -> Arc<Engine> {
    let path = repo_root().join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let kind = SourceKind::from_path(&path).expect("grammar kind");
    let g = parse_source(kind, &text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Arc::new(compile_engine(&g, vocab).unwrap_or_else(|e| panic!("{}: {e}", path.display())).0)
}

/// Compile grammar source text for `vocab`.
pub fn engine_from_lark(src: &str, vocab: Vocabulary) -> Arc<Engine> {
    let g = parse_source(SourceKind::Lark, src).unwrap_or_else(|e| panic!("{e}"));
    Arc::new(compile_engine(&g, vocab).unwrap_or_else(|e| panic!("{e}")).0)
}

/// A synthetic vocabulary: the given byte strings, no specials, plus one end token (last id).
pub fn synthetic_vocab(tokens: &[&[u8]]) -> Vocabulary {
    let mut toks: Vec<Vec<u8>> = tokens.iter().map(|t| t.to_vec()).collect();
    toks.push(Vec::new());
    let mut special = vec![false; toks.len()];
    let eos = (toks.len() - 1) as u32;
    special[eos as usize] = true;
    Vocabulary::from_tokens(&toks, special, vec![eos])
}

/// The first `n` valid instances of a MaskBench file (`{"schema", "tests"}`), serialized in the
/// schema's property order and encoded with `tok`.
pub fn valid_traces(tok: &dwac_vocab::Tokenizer, file: &Value, n: usize) -> Vec<Vec<u32>> {
    use dwac_grammar::schema::order_instance;
    file["tests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["valid"] == true)
        .take(n)
        .map(|t| tok.encode(&json_dumps(&order_instance(&file["schema"], &t["data"]))).unwrap())
        .collect()
}

/// Every string over `alphabet` of length 1..=`max_len`, plus `extra`.
pub fn vocab_over(alphabet: &[u8], max_len: usize, extra: &[&str]) -> Vocabulary {
    let mut toks: Vec<Vec<u8>> = Vec::new();
    let mut layer: Vec<Vec<u8>> = vec![Vec::new()];
    for _ in 0..max_len {
        let mut next = Vec::new();
        for s in &layer {
            for &c in alphabet {
                let mut t = s.clone();
                t.push(c);
                next.push(t);
            }
        }
        toks.extend(next.iter().cloned());
        layer = next;
    }
    toks.extend(extra.iter().map(|s| s.as_bytes().to_vec()));
    toks.sort();
    toks.dedup();
    let refs: Vec<&[u8]> = toks.iter().map(|t| t.as_slice()).collect();
    synthetic_vocab(&refs)
}

/// The terminal patterns of generated test grammars ([`random_grammar`] and the proptest
/// grammars of `dwa_mask/`): regexes and literals over `abc ` that overlap in many ways.
pub const GRAMMAR_PATTERNS: [&str; 12] = [
    "/[ab]+/",
    "/a[bc]*/",
    "/c+/",
    "/[a-c]{1,3}/",
    "\"ab\"",
    "\"a\"",
    "\"b c\"",
    "/b?a/",
    "\"abc\"",
    "/[abc]+ ?/",
    "\"ca\"",
    "/(ab)+/",
];

/// A random small Lark grammar over the alphabet `abc (),` and space: overlapping regex and
/// literal terminals, some with priorities, sometimes `%ignore`d spaces, 2–4 rules with
/// alternatives, recursion, `?` and `*`.
pub fn random_grammar(rng: &mut Rng) -> String {
    let n_terms = 2 + rng.below(4);
    let mut src = String::new();
    let mut terms = Vec::new();
    for i in 0..n_terms {
        let prio = if rng.below(4) == 0 { format!(".{}", 1 + rng.below(3)) } else { String::new() };
        src += &format!("T{i}{prio}: {}\n", GRAMMAR_PATTERNS[rng.below(GRAMMAR_PATTERNS.len())]);
        terms.push(format!("T{i}"));
    }
    let n_rules = 2 + rng.below(3);
    let rule = |i: usize| if i == 0 { "start".to_string() } else { format!("r{i}") };
    for i in 0..n_rules {
        let n_alts = 1 + rng.below(3);
        let mut alts = Vec::new();
        for a in 0..n_alts {
            let len = 1 + rng.below(3);
            let mut syms = Vec::new();
            for _ in 0..len {
                let s = match rng.below(6) {
                    0 if i + 1 < n_rules => rule(i + 1 + rng.below(n_rules - i - 1)),
                    1 if a > 0 => rule(i),
                    2 => ["\"(\"", "\")\"", "\",\""][rng.below(3)].to_string(),
                    _ => terms[rng.below(terms.len())].clone(),
                };
                let q = ["", "", "", "?", "*"][rng.below(5)];
                syms.push(format!("{s}{q}"));
            }
            alts.push(syms.join(" "));
        }
        src += &format!("{}: {}\n", rule(i), alts.join(" | "));
    }
    if rng.below(2) == 0 {
        src += "%ignore \" \"\n";
    }
    src
}

/// Shift `t` (or accept `$`) on an explicit stack with the LR tables: every stack reached by
/// reductions on lookahead `t` followed by shifting `t` (every conflict path followed), and
/// whether some reduction sequence reaches an accept action (for `t = $`).
pub fn lr_shift(
    lr: &dwac_runtime::unstable::LrTables,
    stack: &[u32],
    t: u32,
) -> (std::collections::BTreeSet<Vec<u32>>, bool) {
    use dwac_runtime::unstable::{Action, DEAD};
    let mut out = std::collections::BTreeSet::new();
    let mut accepted = false;
    let mut seen = std::collections::BTreeSet::new();
    let mut work = vec![stack.to_vec()];
    while let Some(s) = work.pop() {
        let Some(&top) = s.last() else { continue };
        for &a in lr.actions(top, t) {
            match Action::unpack(a) {
                Action::Shift(p) => {
                    let mut n = s.clone();
                    n.push(p);
                    out.insert(n);
                }
                Action::Accept => accepted = true,
                Action::Reduce(r) => {
                    let m = lr.rule_len[r as usize] as usize;
                    if s.len() <= m {
                        continue;
                    }
                    let mut n = s[..s.len() - m].to_vec();
                    let g = lr.goto(*n.last().unwrap_or(&0), lr.rule_lhs[r as usize]);
                    if g == DEAD {
                        continue;
                    }
                    n.push(g);
                    if seen.insert(n.clone()) {
                        work.push(n);
                    }
                }
            }
        }
    }
    (out, accepted)
}

/// Two grammars meant to have one language, compiled over one synthetic vocabulary: every byte
/// of `bytes` a token, and the `extra` pieces. Returns both engines and the vocabulary's tokens
/// (for [`same_masks_bytewise`]).
pub fn twin_engines(
    a: &dwac_grammar::Grammar,
    b: &dwac_grammar::Grammar,
    bytes: &[u8],
    extra: &[&str],
) -> (Arc<Engine>, Arc<Engine>, Vec<Vec<u8>>) {
    let mut tokens: Vec<Vec<u8>> = bytes.iter().map(|&b| vec![b]).collect();
    tokens.extend(extra.iter().map(|s| s.as_bytes().to_vec()));
    tokens.sort();
    tokens.dedup();
    let refs: Vec<&[u8]> = tokens.iter().map(|t| t.as_slice()).collect();
    let compile = |g| Arc::new(compile_engine(g, synthetic_vocab(&refs)).expect("compiles").0);
    (compile(a), compile(b), tokens)
}

/// Walk `text` byte by byte in two engines over the vocabulary `tokens` ([`twin_engines`]):
/// the masks are equal before every byte and each byte is taken by both or by neither, up to
/// the first one refused. Whether both accept at the end (they must agree).
pub fn same_masks_bytewise(a: &Arc<Engine>, b: &Arc<Engine>, tokens: &[Vec<u8>], text: &str) -> bool {
    let (mut ma, mut mb) = (dwac_runtime::Matcher::new(Arc::clone(a)), dwac_runtime::Matcher::new(Arc::clone(b)));
    for (i, byte) in text.bytes().enumerate() {
        assert_eq!(ma.allowed(), mb.allowed(), "{text:?}: masks after {i} bytes");
        let t = tokens.iter().position(|t| t.as_slice() == [byte]).expect("every byte a token") as u32;
        let (x, y) = (ma.commit(t).is_ok(), mb.commit(t).is_ok());
        assert_eq!(x, y, "{text:?}: byte {i} ({:?})", byte as char);
        if !x {
            break;
        }
    }
    assert_eq!(ma.is_accepting(), mb.is_accepting(), "{text:?}: accepted by one only");
    ma.is_accepting()
}
