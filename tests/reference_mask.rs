//! The reference mask: hand-computed expectations on small synthetic vocabularies, and on
//! real tokenizers (gpt2, qwen3) at chosen JSON positions, where every token's verdict is
//! compared with an independent JSON prefix checker.

use dwac_runtime::Matcher;
use dwac_tests::jsoncheck::{viable_prefix, JsonCheck};
use dwac_tests::*;
use dwac_vocab::Tokenizer;

const EXPR: &str = r#"
start: expr
expr: expr "+" term | term
term: NUM | "(" expr ")"
NUM: /[0-9]+/
%ignore " "
"#;

const TOKENS: &[&[u8]] = &[b"1", b"12", b"+", b"+1", b"(", b")", b" ", b"1 ", b"+(", b"a", b"1+", b")+", b"))"];

fn allowed_names(prefix: &str) -> Vec<String> {
    let engine = engine_from_lark(EXPR, synthetic_vocab(TOKENS));
    let mut m = Matcher::new(engine);
    m.commit_bytes(prefix.as_bytes()).unwrap();
    m.reference_allowed()
        .into_iter()
        .map(|v| TOKENS.get(v as usize).map_or("<eos>".to_string(), |t| String::from_utf8_lossy(t).into_owned()))
        .collect()
}

#[test]
fn synthetic_vocabulary_hand_computed() {
    assert_eq!(allowed_names(""), ["1", "12", "(", " ", "1 ", "1+"]);
    assert_eq!(allowed_names("1"), ["1", "12", "+", "+1", " ", "1 ", "+(", "1+", "<eos>"]);
    assert_eq!(allowed_names("(1"), ["1", "12", "+", "+1", ")", " ", "1 ", "+(", "1+", ")+"]);
    assert_eq!(allowed_names("(1 "), ["+", "+1", ")", " ", "+(", ")+"]);
    assert_eq!(allowed_names("((1)"), ["+", "+1", ")", " ", "+(", ")+"]);
    assert_eq!(allowed_names("1+"), ["1", "12", "(", " ", "1 ", "1+"]);
}

/// Every token's reference verdict after `prefix` equals the independent checker's.
fn compare_with_checker(tok: &Tokenizer, prefix: &str) -> usize {
    let engine = engine_from_file("grammars/json.lark", tok.vocab().clone());
    let mut m = Matcher::new(engine);
    m.commit_bytes(prefix.as_bytes()).unwrap();
    let allowed = m.reference_allowed();
    let vocab = tok.vocab();
    let mut want = Vec::new();
    for v in 0..vocab.len() as u32 {
        let ok = if vocab.is_eos(v) {
            let mut c = JsonCheck::default();
            c.push_all(prefix.as_bytes());
            c.complete()
        } else if vocab.is_special(v) || vocab.token_bytes(v).unwrap().is_empty() {
            false
        } else {
            let mut t = prefix.as_bytes().to_vec();
            t.extend_from_slice(vocab.token_bytes(v).unwrap());
            viable_prefix(&t)
        };
        if ok {
            want.push(v);
        }
    }
    if allowed != want {
        let extra: Vec<_> = allowed.iter().filter(|v| !want.contains(v)).take(10).collect();
        let missing: Vec<_> = want.iter().filter(|v| !allowed.contains(v)).take(10).collect();
        let show = |v: &&u32| vocab.token_bytes(**v).unwrap().escape_ascii().to_string();
        panic!(
            "after {prefix:?}: extra {:?} missing {:?}",
            extra.iter().map(show).collect::<Vec<_>>(),
            missing.iter().map(show).collect::<Vec<_>>()
        );
    }
    allowed.len()
}

const POSITIONS: &[&str] = &[
    "",
    "{\"a\": ",
    "{\"a\": \"b",
    "{\"a\": \"b\\",
    "{\"a\": \"\\u00",
    "[1",
    "[1.",
    "[-",
    "[1e",
    "{\"a\": tr",
    "{\"",
    "{\"a\"",
    "{\"a\": [1, 2], ",
    "{\"a\": {\"b\": [null, ",
    "{\"a\": \"x\"}",
    "{\"a\": \"\u{4e2d}",
    "[0",
];

#[test]
fn gpt2_json_positions_match_independent_checker() {
    let tok = Tokenizer::from_file(&tokenizer_json("gpt2")).unwrap();
    for p in POSITIONS {
        let n = compare_with_checker(&tok, p);
        println!("gpt2 {p:?}: {n} allowed");
    }
}

#[test]
fn qwen3_json_positions_match_independent_checker() {
    let tok = Tokenizer::from_file(&tokenizer_json("qwen3")).unwrap();
    for p in ["{\"a\": ", "{\"a\": \"b", "[1", "{\"a\": \"x\"}"] {
        let n = compare_with_checker(&tok, p);
        println!("qwen3 {p:?}: {n} allowed");
    }
}

#[test]
fn value_start_and_string_body_spot_checks() {
    let tok = Tokenizer::from_file(&tokenizer_json("qwen3")).unwrap();
    let engine = engine_from_file("grammars/json.lark", tok.vocab().clone());
    let vocab = tok.vocab();
    let id = |s: &str| {
        (0..vocab.len() as u32).find(|&v| vocab.token_bytes(v) == Some(s.as_bytes()) && !vocab.is_special(v)).unwrap()
    };
    let mut m = Matcher::new(engine.clone());
    m.commit_bytes(b"{\"a\": ").unwrap();
    for s in ["\"", " \"", "{", "[", "true", "1", "-", " [", "null"] {
        assert!(m.is_allowed(id(s)), "{s:?} must be allowed after {{\"a\": ");
    }
    for s in ["}", ",", ":", "]", "a", "."] {
        assert!(!m.is_allowed(id(s)), "{s:?} must not be allowed after {{\"a\": ");
    }
    let mut m = Matcher::new(engine);
    m.commit_bytes(b"{\"a\": \"b").unwrap();
    // Tokens that close the string and go on with valid punctuation.
    for s in ["\",", "\"}", "hello", " world", "\\n", "\""] {
        assert!(m.is_allowed(id(s)), "{s:?} must be allowed inside a string");
    }
    for s in ["\"]", "\n", "\":"] {
        assert!(!m.is_allowed(id(s)), "{s:?} must not be allowed inside a string");
    }
}
