//! Token terminals (`dwac_compile::token_terminals`): grammar symbols that match vocabulary tokens,
//! special tokens above all, exactly.
//! - a token symbol matches that token and no text: text tokens spelling the same bytes are
//!   not in the mask, and a text terminal never lets a special token through;
//! - llama.cpp's `!<[id]>*` is any tokens but those (text, and special tokens that do not end
//!   the output);
//! - the Parser DWA's mask equals the reference mask at every step, on a ten-token vocabulary
//!   and on a tool call with qwen3's own special tokens;
//! - bad references are compile errors at line:column.

use std::sync::Arc;

use dwac_compile::{compile_engine, parse_source, SourceKind};
use dwac_runtime::{Engine, Matcher, Vocabulary};
use dwac_tests::differential::differential;
use dwac_tests::{tokenizer_json, Rng};

/// Ten tokens: text tokens that spell the special tokens' text too, a raw byte no UTF-8 text
/// holds, two special tokens and the end token.
fn vocab() -> Vocabulary {
    let toks: Vec<Vec<u8>> = [
        &b"a"[..],
        b"b",
        b"<",
        b"|t|",
        b">",
        b"<|t|>",
        b"\xff",
        b"<|t|>", // 7: special
        b"<|u|>", // 8: special
        b"",      // 9: end
    ]
    .iter()
    .map(|t| t.to_vec())
    .collect();
    let special = (0..toks.len()).map(|i| i >= 7).collect();
    Vocabulary::from_tokens(&toks, special, vec![9])
}

const A: u32 = 0;
const B: u32 = 1;
const LT: u32 = 2;
const TEXT_T: u32 = 5;
const RAW_FF: u32 = 6;
const SPECIAL_T: u32 = 7;
const SPECIAL_U: u32 = 8;
const END: u32 = 9;

fn engine(kind: SourceKind, src: &str, vocab: Vocabulary) -> Arc<Engine> {
    let g = parse_source(kind, src).unwrap_or_else(|e| panic!("{e}"));
    Arc::new(compile_engine(&g, vocab).unwrap_or_else(|e| panic!("{e}")).0)
}

fn compile_error(kind: SourceKind, src: &str, vocab: Vocabulary) -> String {
    let g = match parse_source(kind, src) {
        Ok(g) => g,
        Err(e) => return e.to_string(),
    };
    match compile_engine(&g, vocab) {
        Ok(_) => panic!("compiled: {src}"),
        Err(e) => e.to_string(),
    }
}

fn allowed(m: &Matcher) -> Vec<u32> {
    let n = m.engine().vocab().len();
    let mut mask = vec![0u32; n.div_ceil(32)];
    m.fill_mask(&mut mask).expect("mask");
    (0..n as u32).filter(|&v| mask[(v / 32) as usize] >> (v % 32) & 1 == 1).collect()
}

fn commit_all(m: &mut Matcher, ids: &[u32]) {
    for &t in ids {
        m.commit(t).unwrap_or_else(|e| panic!("commit {t}: {e}"));
    }
}

#[test]
fn a_token_symbol_matches_that_token_and_no_text() {
    let e = engine(SourceKind::Lark, "start: \"a\" <|t|> \"b\"\n", vocab());
    let mut m = Matcher::new(Arc::clone(&e));
    assert_eq!(allowed(&m), vec![A]);
    commit_all(&mut m, &[A]);
    assert_eq!(allowed(&m), vec![SPECIAL_T], "the special token, not the text tokens that spell `<|t|>`");
    for t in [LT, TEXT_T, SPECIAL_U, END, RAW_FF] {
        let before = allowed(&m);
        assert!(m.commit(t).is_err(), "token {t} is refused");
        assert_eq!(allowed(&m), before, "a refused commit leaves the state as it was");
    }
    commit_all(&mut m, &[SPECIAL_T]);
    assert_eq!(allowed(&m), vec![B]);
    commit_all(&mut m, &[B]);
    assert_eq!(allowed(&m), vec![END]);

    // The same text as a string literal: the text tokens, never the special token.
    let e = engine(SourceKind::Lark, "start: \"a\" \"<|t|>\" \"b\"\n", vocab());
    let mut m = Matcher::new(Arc::clone(&e));
    commit_all(&mut m, &[A]);
    assert_eq!(allowed(&m), vec![LT, TEXT_T]);
    assert!(m.commit(SPECIAL_T).is_err());
}

#[test]
fn a_token_by_id_by_range_and_by_negation() {
    let e = engine(SourceKind::Lark, "start: <[8]> | <[0-1]> \"<\"\n", vocab());
    assert_eq!(allowed(&Matcher::new(Arc::clone(&e))), vec![A, B, SPECIAL_U]);
    // The ids name tokens; `a` as a token by id is not text: the text "a" is not there.
    let e = engine(SourceKind::Lark, "start: <[0]> \"a\"\n", vocab());
    let mut m = Matcher::new(Arc::clone(&e));
    assert_eq!(allowed(&m), vec![A]);
    commit_all(&mut m, &[A]);
    assert!(allowed(&m).is_empty(), "token 0 is the grammar's token, so it spells no text: nothing can follow");

    // Any tokens but `<|t|>` and `<|u|>`: text, and every other special token that does not
    // end the output (none here). (In Lark the repetition is one terminal, matched longest:
    // a text literal before it would be swallowed, so a token opens it.)
    let e = engine(SourceKind::Lark, "start: <[8]> <[^7,8]>* <[7]>\n", vocab());
    let mut m = Matcher::new(Arc::clone(&e));
    commit_all(&mut m, &[SPECIAL_U]);
    assert_eq!(allowed(&m), vec![A, B, LT, 3, 4, TEXT_T, SPECIAL_T]);
    commit_all(&mut m, &[B, LT, TEXT_T]);
    assert!(allowed(&m).contains(&SPECIAL_T) && !allowed(&m).contains(&SPECIAL_U));
    commit_all(&mut m, &[SPECIAL_T]);
    assert_eq!(allowed(&m), vec![END]);
}

#[test]
fn llama_cpp_token_references() {
    // llama.cpp's README example: a thinking block between two tokens, by text and by id.
    let by_text = "root ::= <|t|> thinking <|u|> \"b\"\nthinking ::= !<|u|>*\n";
    let by_id = "root ::= <[7]> thinking <[8]> \"b\"\nthinking ::= !<[8]>*\n";
    for src in [by_text, by_id] {
        let e = engine(SourceKind::Gbnf, src, vocab());
        let mut m = Matcher::new(Arc::clone(&e));
        assert_eq!(allowed(&m), vec![SPECIAL_T], "{src}");
        commit_all(&mut m, &[SPECIAL_T]);
        assert_eq!(allowed(&m), vec![A, B, LT, 3, 4, TEXT_T, SPECIAL_T, SPECIAL_U], "{src}");
        commit_all(&mut m, &[A, SPECIAL_T, TEXT_T]);
        commit_all(&mut m, &[SPECIAL_U]);
        assert_eq!(allowed(&m), vec![B]);
        commit_all(&mut m, &[B]);
        assert_eq!(allowed(&m), vec![END]);
    }
}

#[test]
fn masks_equal_the_reference_on_random_traces() {
    // Text and tokens interleaved; random walks along the mask, compared at every step.
    let grammars = [
        (SourceKind::Lark, "start: (WORD | <|t|> | <[0]>)+ <|u|>?\nWORD: /[ab<>|]+/\n"),
        (SourceKind::Lark, "start: <[8]> <[^8]>* <[8]> \"b\"?\n"),
        (SourceKind::Gbnf, "root ::= ( [ab]+ <|t|> | !<[7]>+ <[7]> )+ \"a\"\n"),
    ];
    let mut rng = Rng(0x5eed);
    for (kind, src) in grammars {
        let e = engine(kind, src, vocab());
        let mut traces = Vec::new();
        for _ in 0..40 {
            let mut m = Matcher::new(Arc::clone(&e));
            let mut ids = Vec::new();
            for _ in 0..12 {
                let ok: Vec<u32> = allowed(&m).into_iter().filter(|&v| v != END).collect();
                if ok.is_empty() {
                    break;
                }
                let t = ok[rng.below(ok.len())];
                m.commit(t).unwrap_or_else(|err| panic!("{src}: a token of the mask is refused: {err}"));
                ids.push(t);
            }
            traces.push(ids);
        }
        let r = differential(&e, &traces, 1, &mut |_| {});
        assert_eq!(r.mismatches, 0, "{src}: {:?}", r.examples);
        assert_eq!((r.rejected_traces, r.errors.len()), (0, 0), "{src}");
        assert!(r.steps_compared > 200, "{src}: {} steps", r.steps_compared);
    }
}

#[test]
fn text_never_matches_a_special_token_and_back() {
    // A grammar of any text: no special token is ever allowed, nor the raw byte no UTF-8 holds.
    let e = engine(SourceKind::Lark, "start: /(?s:.)+/\n", vocab());
    let mut m = Matcher::new(Arc::clone(&e));
    let mut rng = Rng(7);
    for _ in 0..30 {
        let ok = allowed(&m);
        assert!(!ok.contains(&SPECIAL_T) && !ok.contains(&SPECIAL_U) && !ok.contains(&RAW_FF));
        let text: Vec<u32> = ok.into_iter().filter(|&v| v != END).collect();
        commit_all(&mut m, &[text[rng.below(text.len())]]);
    }
    // A grammar of tokens only: no text token is ever allowed.
    let e = engine(SourceKind::Lark, "start: (<|t|> | <|u|>)+\n", vocab());
    let mut m = Matcher::new(Arc::clone(&e));
    for k in 0..30 {
        let ok: Vec<u32> = allowed(&m).into_iter().filter(|&v| v != END).collect();
        assert_eq!(ok, vec![SPECIAL_T, SPECIAL_U]);
        commit_all(&mut m, &[ok[k % 2]]);
    }
}

#[test]
fn bad_token_references_are_errors_at_their_place() {
    let cases: [(SourceKind, &str, &str); 9] = [
        (SourceKind::Lark, "start: \"a\"\n  | <|nope|>\n", "--> 2:5 && unknown token `<|nope|>`"),
        (SourceKind::Lark, "start: <[10]>\n", "--> 1:8 && token id 10 is outside the vocabulary (10 tokens)"),
        (SourceKind::Lark, "start: <[9]>\n", "ends the output"),
        (SourceKind::Lark, "start: <[^8]> \"a\"\n", "use it under `*` or `+`"),
        (SourceKind::Lark, "start: T\nT: \"a\" <|t|>\n", "terminals cannot use token references"),
        (SourceKind::Lark, "start: <|t|\n", "unclosed token reference"),
        (SourceKind::Gbnf, "root ::= \"a\" !<[8]>\n", "use it under `*` or `+`"),
        (SourceKind::Gbnf, "root ::= <|x|>\n", "--> 1:10 && unknown token `<|x|>`"),
        (SourceKind::Gbnf, "root ::= <[^8]>*\n", "`^` is not allowed"),
    ];
    for (kind, src, want) in cases {
        let msg = compile_error(kind, src, vocab());
        for w in want.split(" && ") {
            assert!(msg.contains(w), "{src:?}: {msg:?} does not say {w:?}");
        }
    }
    // Without a vocabulary (the tables alone), a token reference cannot be compiled.
    let g = parse_source(SourceKind::Lark, "start: <|t|>\n").expect("parses");
    let e = dwac_compile::compile_grammar(&g).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("needs the vocabulary"), "{e}");
}

/// qwen3's tool call: `<tool_call>`, `</tool_call>`, `<think>` and `</think>` are its added
/// tokens (named here by their text); the JSON between them is text.
#[test]
fn a_qwen3_tool_call_with_its_own_tokens() {
    let tok = dwac_vocab::Tokenizer::from_file(&tokenizer_json("qwen3")).expect("qwen3");
    let id = |s: &str| -> u32 {
        (0..tok.vocab().len() as u32).find(|&v| tok.vocab().token_bytes(v) == Some(s.as_bytes())).expect(s)
    };
    let (think, think_end, call, call_end) = (id("<think>"), id("</think>"), id("<tool_call>"), id("</tool_call>"));
    let src = r#"start: <think> THOUGHT? </think> "\n\n" (TEXT | call)+
call: <tool_call> "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": " ESCAPED_STRING "}}\n" </tool_call>
THOUGHT: /[^<"{]+/
TEXT: /[^<"{]+/
%import common.ESCAPED_STRING
"#;
    let e = engine(SourceKind::Lark, src, tok.vocab().clone());
    let enc = |s: &str| tok.encode(s).expect("encode");
    let mut traces = Vec::new();
    for (thought, city, tail) in [("Let me check.", "Paris", "Done."), ("", "São Paulo", "")] {
        let mut t = vec![think];
        t.extend(enc(thought));
        t.push(think_end);
        t.extend(enc("\n\n"));
        t.push(call);
        t.extend(enc(&format!("\n{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"{city}\"}}}}\n")));
        t.push(call_end);
        t.extend(enc(tail));
        traces.push(t);
    }
    let r = differential(&e, &traces, 2, &mut |_| {});
    assert_eq!(r.mismatches, 0, "{:?}", r.examples);
    assert_eq!((r.rejected_traces, r.errors.len()), (0, 0), "{:?} {:?}", r.rejected, r.errors);
    assert_eq!(r.undecided + r.fallbacks, 0);

    let mut m = Matcher::new(Arc::clone(&e));
    assert_eq!(allowed(&m), vec![think], "only the token starts the output, not text spelling `<think>`");
    commit_all(&mut m, &[think]);
    commit_all(&mut m, &enc("Let me check."));
    let ok = allowed(&m);
    assert!(ok.contains(&think_end) && !ok.contains(&call) && !ok.contains(&think));
    commit_all(&mut m, &[think_end]);
    commit_all(&mut m, &enc("\n\n"));
    let ok = allowed(&m);
    assert!(ok.contains(&call) && !ok.contains(&call_end));
    assert!(!ok.contains(&enc("<")[0]), "no text `<` where only the token may come");
    let eos = tok.vocab().eos()[0];
    assert!(!ok.contains(&eos), "nothing said yet after the thought");
}

/// `%json { ... }` in a Lark rule is the schema compiled as on its own: between qwen3's
/// `<tool_call>` tokens, every valid instance is accepted and every invalid one refused, the
/// text around the calls does not swallow the JSON, and masks equal the reference.
#[test]
fn an_embedded_json_schema_between_tool_call_tokens() {
    let tok = dwac_vocab::Tokenizer::from_file(&tokenizer_json("qwen3")).expect("qwen3");
    let id = |s: &str| -> u32 {
        (0..tok.vocab().len() as u32).find(|&v| tok.vocab().token_bytes(v) == Some(s.as_bytes())).expect(s)
    };
    let (call, call_end) = (id("<tool_call>"), id("</tool_call>"));
    let schema = r#"{"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
        "days": {"type": "integer", "minimum": 1}}, "required": ["city"], "additionalProperties": false}"#;
    let src = format!("start: TEXT? (call TEXT?)+\ncall: <tool_call> %json {schema} </tool_call>\nTEXT: /[^<]+/\n");
    let e = engine(SourceKind::Lark, &src, tok.vocab().clone());
    let enc = |s: &str| tok.encode(s).expect("encode");
    let trace = |before: &str, json: &str, after: &str| -> Vec<u32> {
        let mut t = enc(before);
        t.push(call);
        t.extend(enc(json));
        t.push(call_end);
        t.extend(enc(after));
        t
    };
    let accepts = |ids: &[u32]| -> bool {
        let mut m = Matcher::new(Arc::clone(&e));
        ids.iter().all(|&t| m.commit(t).is_ok()) && allowed(&m).contains(&tok.vocab().eos()[0])
    };
    let valid = [r#"{"city": "Paris"}"#, r#"{"city": "São Paulo", "days": 3}"#, r#"{ "city" : "Oslo" , "days":1 }"#];
    let invalid = [
        r#"{"days": 3}"#,
        r#"{"days": 3, "city": "Rome"}"#,
        r#"{"city": "Paris", "x": 1}"#,
        r#"{"city": "Paris", "days": 0}"#,
        r#"{"city": "Llanfairpwllgwyngyll"}"#,
        r#"["Paris"]"#,
    ];
    let mut traces = Vec::new();
    for j in valid {
        let t = trace("Let me look that up.\n", j, "\nChecking.");
        assert!(accepts(&t), "{j} is valid");
        traces.push(t);
    }
    for j in invalid {
        assert!(!accepts(&trace("", j, "")), "{j} is invalid");
    }
    let r = differential(&e, &traces, 2, &mut |_| {});
    assert_eq!(r.mismatches, 0, "{:?}", r.examples);
    assert_eq!((r.rejected_traces, r.errors.len(), r.undecided + r.fallbacks), (0, 0, 0));

    // (Properties in definition order, as `dwac compile schema.json` fixes them.) A broken
    // schema is an error at the directive, naming the keyword.
    let bad = "start: %json {\"type\": \"object\", \"patternProperties\": {\"(?<=a)b\": {}}}\n";
    let msg = compile_error(SourceKind::Lark, bad, tok.vocab().clone());
    assert!(msg.contains("--> 1:8") && msg.contains("%json"), "{msg}");
    let msg = compile_error(SourceKind::Lark, "start: %json {\"type\": }\n", tok.vocab().clone());
    assert!(msg.contains("not valid JSON") && msg.contains("--> 1:"), "{msg}");
}
