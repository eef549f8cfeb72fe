//! Lexer inference (docs/CONSTRUCTION.md, "Lexer inference") keeps the language and the masks:
//! - the lifted grammar and the character-level one accept the same strings: random
//!   derivations of the character-level grammar, random mutations of them, and the texts of
//!   `tests/data/gbnf`;
//! - every text of `tests/data/gbnf` is accepted, and along it the Parser DWA's mask equals the
//!   reference mask at every step (GPT-2);
//! - the llama.cpp grammars and our own compile with no UNDECIDED pair.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dwac_compile::{compile_engine, CompileStats, Compiler};
use dwac_grammar::normalize::NormalizeOptions;
use dwac_grammar::{gbnf, Grammar, Symbol};
use dwac_runtime::{Engine, Matcher};
use dwac_tests::differential::differential;
use dwac_tests::{grammars_dir, repo_root, synthetic_vocab, tokenizer_path, Rng};
use regex_syntax::hir::{Class, Hir, HirKind};

/// The grammars and their texts: llama.cpp's eight, a few from its JSON-Schema converter, ours.
fn cases() -> Vec<(String, String, Vec<String>)> {
    let data = repo_root().join("tests/data/gbnf");
    let mut out = Vec::new();
    let texts = |p: &Path| -> Vec<String> {
        std::fs::read_to_string(p)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).expect("json line")["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            })
            .collect()
    };
    for name in ["arithmetic", "c", "chess", "english", "japanese", "json", "json_arr", "list"] {
        let g = grammars_dir().join(format!("llama.cpp/{name}.gbnf"));
        let src = std::fs::read_to_string(&g).unwrap_or_else(|e| panic!("{}: {e}", g.display()));
        out.push((format!("llama.cpp/{name}"), src, texts(&data.join(format!("llama.cpp/{name}.jsonl")))));
    }
    let mut converted: Vec<PathBuf> = std::fs::read_dir(data.join("converted"))
        .expect("tests/data/gbnf/converted")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    converted.sort();
    assert!(converted.len() >= 50, "{} converted grammars with texts", converted.len());
    // Runs that derive the empty string inside rules that are not regular (a regression: their
    // `T | ε` rules were dropped, and the grammar lost those alternatives).
    let own: [(&str, &str, &[&str]); 2] = [
        ("nullable run", "root ::= [a-z ]* | \"(\" root \")\"\n", &["", "ab c", "(ab)", "(())", "((x y))"]),
        (
            "nullable runs around a recursion",
            "root ::= x \"[\" root? \"]\" x | x\nx ::= [a-z]*\n",
            &["", "a", "a[]b", "[[]]", "ab[c[d]e]f"],
        ),
    ];
    for (name, src, texts) in own {
        out.push((name.to_string(), src.to_string(), texts.iter().map(|t| t.to_string()).collect()));
    }
    for t in converted.iter().step_by(10).chain([&data.join("own/csv.jsonl")]) {
        let src = std::fs::read_to_string(t.with_extension("gbnf")).expect("grammar beside its texts");
        let name = t.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
        out.push((name, src, texts(t)));
    }
    out
}

/// An engine without a Parser DWA (commit only), with or without lexer inference.
fn engine(g: &Grammar, lift: bool) -> Arc<Engine> {
    let normalize = NormalizeOptions { skip_lexer_inference: !lift, ..Default::default() };
    let c = Compiler { normalize, ..Default::default() }.compile_grammar(g).unwrap_or_else(|e| panic!("{e}"));
    let bytes: Vec<[u8; 1]> = (0..=255u8).map(|b| [b]).collect();
    let vocab = synthetic_vocab(&bytes.iter().map(|b| &b[..]).collect::<Vec<_>>());
    Arc::new(Engine::new(c.tables, vocab).expect("engine"))
}

fn accepts(e: &Arc<Engine>, text: &[u8]) -> bool {
    let mut m = Matcher::new(Arc::clone(e));
    m.commit_bytes(text).is_ok() && m.is_accepting()
}

/// A random string of a terminal's pattern.
fn sample_hir(h: &Hir, rng: &mut Rng, out: &mut Vec<u8>) {
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(l) => out.extend_from_slice(&l.0),
        HirKind::Class(Class::Unicode(c)) => {
            let r = c.ranges()[rng.below(c.ranges().len())];
            let span = (r.end() as u32 - r.start() as u32 + 1) as usize;
            // (Mostly near the range's start: printable and short.)
            let off = rng.below(span.min(64)) as u32;
            let ch = char::from_u32(r.start() as u32 + off).unwrap_or(r.start());
            let mut buf = [0; 4];
            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
        }
        HirKind::Class(Class::Bytes(c)) => {
            let r = c.ranges()[rng.below(c.ranges().len())];
            out.push(r.start() + rng.below((r.end() - r.start()) as usize + 1) as u8);
        }
        HirKind::Repetition(r) => {
            let max = r.max.unwrap_or(r.min + 3).min(r.min + 3);
            for _ in 0..r.min + rng.below((max - r.min) as usize + 1) as u32 {
                sample_hir(&r.sub, rng, out);
            }
        }
        HirKind::Capture(c) => sample_hir(&c.sub, rng, out),
        HirKind::Concat(v) => v.iter().for_each(|x| sample_hir(x, rng, out)),
        HirKind::Alternation(v) => sample_hir(&v[rng.below(v.len())], rng, out),
    }
}

/// A random sentence of `g` (depth-bounded: past the bound, each nonterminal takes a rule of
/// least height).
fn derive(g: &Grammar, hirs: &[Hir], height: &[u32], rng: &mut Rng, sym: Symbol, depth: u32, out: &mut Vec<u8>) {
    match sym {
        Symbol::T(t) => sample_hir(&hirs[t as usize], rng, out),
        Symbol::N(n) => {
            let rules: Vec<&dwac_grammar::Rule> = g.rules.iter().filter(|r| r.lhs == n).collect();
            let rule_height = |r: &dwac_grammar::Rule| {
                r.rhs.iter().map(|s| if let Symbol::N(m) = s { height[*m as usize] } else { 0 }).max().unwrap_or(0)
            };
            let pick = if depth > 12 {
                *rules.iter().min_by_key(|r| rule_height(r)).expect("a rule")
            } else {
                rules[rng.below(rules.len())]
            };
            for &s in &pick.rhs {
                derive(g, hirs, height, rng, s, depth + 1, out);
            }
        }
    }
}

/// Least derivation height of each nonterminal (a fixpoint; `u32::MAX` for non-generating).
fn heights(g: &Grammar) -> Vec<u32> {
    let mut h = vec![u32::MAX; g.nonterminals.len()];
    loop {
        let mut changed = false;
        for r in &g.rules {
            let m = r.rhs.iter().try_fold(0u32, |acc, s| match s {
                Symbol::T(_) => Some(acc),
                Symbol::N(n) => (h[*n as usize] != u32::MAX).then(|| acc.max(h[*n as usize])),
            });
            if let Some(m) = m {
                if m + 1 < h[r.lhs as usize] {
                    h[r.lhs as usize] = m + 1;
                    changed = true;
                }
            }
        }
        if !changed {
            return h;
        }
    }
}

#[test]
fn lifted_and_character_level_grammars_accept_the_same_strings() {
    let mut rng = Rng(0x11f7_ed00_5eed);
    let (mut checked, mut accepted) = (0usize, 0usize);
    for (name, src, texts) in cases() {
        let g = gbnf::parse(&src).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (lifted, plain) = (engine(&g, true), engine(&g, false));
        let hirs: Vec<Hir> =
            g.terminals.iter().map(|t| regex_syntax::Parser::new().parse(&t.regex).expect("terminal regex")).collect();
        let height = heights(&g);
        let mut inputs: Vec<Vec<u8>> = texts.iter().map(|t| t.as_bytes().to_vec()).collect();
        for _ in 0..60 {
            let mut s = Vec::new();
            derive(&g, &hirs, &height, &mut rng, Symbol::N(g.start), 0, &mut s);
            inputs.push(s);
        }
        // Mutations of everything so far: a byte deleted, inserted (one of the string's own,
        // or a space, newline or quote) or replaced.
        let n = inputs.len();
        for i in 0..n {
            for _ in 0..2 {
                let mut s = inputs[i].clone();
                let pick = |rng: &mut Rng, s: &[u8]| {
                    let pool = [b' ', b'\n', b'"', b',', b'0'];
                    if s.is_empty() || rng.below(3) == 0 {
                        pool[rng.below(pool.len())]
                    } else {
                        s[rng.below(s.len())]
                    }
                };
                match (rng.below(3), s.len()) {
                    (0, l) if l > 0 => {
                        s.remove(rng.below(l));
                    }
                    (1, l) => {
                        let b = pick(&mut rng, &s);
                        s.insert(rng.below(l + 1), b);
                    }
                    (_, l) if l > 0 => {
                        let b = pick(&mut rng, &s);
                        s[rng.below(l)] = b;
                    }
                    _ => {}
                }
                inputs.push(s);
            }
        }
        for (k, s) in inputs.iter().enumerate() {
            let (a, b) = (accepts(&lifted, s), accepts(&plain, s));
            assert_eq!(a, b, "{name}: lifted {a}, character-level {b} on {:?}", String::from_utf8_lossy(s));
            if k < texts.len() {
                assert!(a, "{name}: text {k} is not accepted: {:?}", String::from_utf8_lossy(s));
            }
            if k >= texts.len() && k < n {
                assert!(a, "{name}: a derivation of the grammar is not accepted: {:?}", String::from_utf8_lossy(s));
            }
            checked += 1;
            accepted += usize::from(a);
        }
    }
    eprintln!("{checked} strings, {accepted} accepted by both, the others by neither");
    assert!(accepted * 4 < checked * 3, "the mutations must reach rejected strings too");
}

#[test]
fn gbnf_masks_equal_the_reference_and_nothing_is_undecided() {
    let tok = dwac_vocab::Tokenizer::from_file(&tokenizer_path("gpt2")).expect("gpt2");
    let mut steps = 0;
    for (name, src, texts) in cases() {
        let g = gbnf::parse(&src).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (e, stats): (Engine, CompileStats) =
            compile_engine(&g, tok.vocab().clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let li = stats.lexer_inference.as_ref().expect("lexer inference ran");
        assert!(!li.lifted.terminals.is_empty(), "{name}: nothing lifted");
        assert_eq!(stats.mask.as_ref().map(|m| m.undecided_tokens), Some(0), "{name}: UNDECIDED pairs");
        let e = Arc::new(e);
        let traces: Vec<Vec<u32>> = texts.iter().take(4).map(|t| tok.encode(t).expect("encodes")).collect();
        let r = differential(&e, &traces, 2, &mut |_| {});
        assert_eq!((r.mismatches, r.rejected_traces, r.fallbacks), (0, 0, 0), "{name}: {r:?}");
        steps += r.steps_compared;
    }
    assert!(steps > 1000, "{steps} steps compared");
}
