//! The generic JSON grammar (`grammars/json.lark`) through `commit`, on real corpora:
//! every MaskBench instance and every JSON-Schema-Test-Suite instance is accepted token by
//! token, and corrupted documents are rejected at exactly the byte an independent JSON
//! checker names.

use std::sync::Arc;

use dwac_runtime::{CommitError, Engine, Matcher};
use dwac_tests::jsoncheck::{first_bad_byte, JsonCheck};
use dwac_tests::*;
use dwac_vocab::Tokenizer;

fn json_engine(tok: &Tokenizer) -> Arc<Engine> {
    engine_from_file("grammars/json.lark", tok.vocab().clone())
}

/// Commit `tokens` one by one; `Ok(accepting at the end)` or the first error.
fn run_tokens(engine: &Arc<Engine>, tokens: &[u32]) -> Result<bool, (usize, CommitError)> {
    let mut m = Matcher::new(engine.clone());
    for (i, &t) in tokens.iter().enumerate() {
        m.commit(t).map_err(|e| (i, e))?;
    }
    Ok(m.is_accepting())
}

#[test]
fn maskbench_instances_accepted_token_by_token_qwen3() {
    let tok = Tokenizer::from_file(&tokenizer_json("qwen3")).unwrap();
    let engine = json_engine(&tok);
    let instances = maskbench_instances();
    assert!(instances.len() > 9_000, "only {} instances", instances.len());
    let (mut n, mut tokens_total, mut valid) = (0usize, 0usize, 0usize);
    for inst in &instances {
        let text = json_dumps(&inst.data);
        let ids = tok.encode(&text).unwrap();
        tokens_total += ids.len();
        match run_tokens(&engine, &ids) {
            Ok(true) => {}
            Ok(false) => panic!("{}: not accepted at the end: {text}", inst.file),
            Err((i, e)) => panic!("{}: token {i} rejected: {e}\n{text}", inst.file),
        }
        n += 1;
        valid += inst.valid as usize;
    }
    println!("{n} MaskBench instances ({valid} valid) accepted, {tokens_total} tokens");
    assert!(valid >= 4_000);
}

#[test]
fn test_suite_instances_accepted_gpt2_and_bytes() {
    let tok = Tokenizer::from_file(&tokenizer_json("gpt2")).unwrap();
    let engine = json_engine(&tok);
    let mut n = 0;
    for draft in ["draft2020-12", "draft7"] {
        for (file, data) in test_suite_instances(draft) {
            let text = json_dumps(&data);
            let ids = tok.encode(&text).unwrap();
            match run_tokens(&engine, &ids) {
                Ok(true) => {}
                Ok(false) => panic!("{file}: not accepted at the end: {text}"),
                Err((i, e)) => panic!("{file}: token {i} rejected: {e}\n{text}"),
            }
            // Pretty-printed and raw-byte commits too.
            let pretty = serde_json::to_string_pretty(&data).unwrap();
            let mut m = Matcher::new(engine.clone());
            m.commit_bytes(pretty.as_bytes()).unwrap_or_else(|e| panic!("{file}: {e}\n{pretty}"));
            assert!(m.is_accepting(), "{file}: {pretty}");
            n += 1;
        }
    }
    println!("{n} test-suite instances accepted");
    assert!(n > 3_000, "only {n}");
}

/// A small deterministic PRNG (xorshift64*), so corruptions are reproducible.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Judge `text` with commit_bytes: `Err(offset)` of rejection, or `Ok(accepting)`.
fn judge_bytes(engine: &Arc<Engine>, text: &[u8]) -> Result<bool, usize> {
    let mut m = Matcher::new(engine.clone());
    match m.commit_bytes(text) {
        Ok(()) => Ok(m.is_accepting()),
        Err(CommitError::Rejected { offset, .. }) => Err(offset as usize),
        Err(e) => panic!("unexpected error {e}"),
    }
}

fn judge_checker(text: &[u8]) -> Result<bool, usize> {
    match first_bad_byte(text) {
        Some(i) => Err(i),
        None => {
            let mut c = JsonCheck::default();
            c.push_all(text);
            Ok(c.complete())
        }
    }
}

#[test]
fn corrupted_documents_rejected_at_the_right_byte() {
    let tok = Tokenizer::from_file(&tokenizer_json("gpt2")).unwrap();
    let engine = json_engine(&tok);
    // Hand-picked cases with known answers.
    let cases: &[(&str, Result<bool, usize>)] = &[
        ("{\"a\": 1}", Ok(true)),
        ("{\"a\": 1", Ok(false)),
        ("{\"a\"; 1}", Err(4)),
        ("[1, 2, ]", Err(7)),
        ("[01]", Err(2)),
        ("trux", Err(3)),
        ("{\"a\": \"x\ny\"}", Err(8)),
        ("[1.]", Err(3)),
        ("\"\\q\"", Err(2)),
        ("{\"a\": 1}}", Err(8)),
        ("1 2", Err(2)),
        ("[1e+]", Err(4)),
        ("-", Ok(false)),
        ("  [ ]  ", Ok(true)),
        ("\"\u{e9}\"", Ok(true)),
        ("\"\\ud834\\udd1e\"", Ok(true)),
    ];
    for (text, want) in cases {
        assert_eq!(judge_checker(text.as_bytes()), *want, "checker on {text:?}");
        assert_eq!(judge_bytes(&engine, text.as_bytes()), *want, "engine on {text:?}");
    }
    // Invalid UTF-8 inside a string is rejected at the offending byte.
    assert_eq!(judge_bytes(&engine, b"\"a\xff\""), Err(2));
    assert_eq!(judge_bytes(&engine, b"\"\xe4\xb8\""), Err(3));

    // Random corruptions of real documents: the engine agrees with the checker exactly.
    let noise: &[u8] = b"{}[],:\" \\\n\t0123456789-+.eEtrufalsn\x01\xc3\xa9\xff";
    let mut rng = Rng(0x9E3779B97F4A7C15);
    let instances = maskbench_instances();
    let (mut rejected, mut total) = (0, 0);
    for inst in instances.iter().step_by(7).take(1500) {
        let text = json_dumps(&inst.data).into_bytes();
        for _ in 0..4 {
            let mut t = text.clone();
            let i = rng.below(t.len());
            match rng.below(3) {
                0 => t[i] = noise[rng.below(noise.len())],
                1 => t.insert(i, noise[rng.below(noise.len())]),
                _ => {
                    t.remove(i);
                }
            }
            let want = judge_checker(&t);
            let got = judge_bytes(&engine, &t);
            assert_eq!(got, want, "{}: {:?}", inst.file, String::from_utf8_lossy(&t));
            rejected += want.is_err() as usize;
            total += 1;
            // Token by token: the rejected token is the one holding the bad byte.
            if let (Err(bad), Ok(ids)) = (want, std::str::from_utf8(&t).map(|s| tok.encode(s))) {
                let ids = ids.unwrap();
                let err = run_tokens(&engine, &ids).expect_err("token path must reject too");
                let start: usize = ids[..err.0].iter().map(|&v| tok.vocab().token_bytes(v).unwrap().len()).sum();
                let len = tok.vocab().token_bytes(ids[err.0]).unwrap().len();
                assert!(start <= bad && bad < start + len, "bad byte {bad} not in token {start}..{}", start + len);
                match err.1 {
                    CommitError::Rejected { offset, .. } => assert_eq!(offset as usize, bad),
                    e => panic!("{e}"),
                }
            }
        }
    }
    println!("{total} corrupted documents ({rejected} rejected mid-way) judged exactly as the checker");
    assert!(rejected > total / 3, "{rejected} of {total}");
}
