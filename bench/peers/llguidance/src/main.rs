//! llguidance peer for `cargo dwac-bench schema-bench --peer`.
//!
//! Speaks the same line protocol as `dwac-bench schema-worker`: `{"event": "ready"}` once the
//! tokenizer and factory are built, then one job per stdin line,
//! `{"id": "...", "schema": {...}, "instances": ["text", ...]}`, answered on stdout by
//! `{"id": "...", "event": "compiled"}` as soon as compilation ends (the parent's 10 s limit
//! covers only that part) and then one result line
//! `{"id", "compiled", "error", "compile_ms", "ttfm_ms", "accepted": [bool, ...]}`.
//!
//! How llguidance is driven (its 1.x public API, nothing copied):
//! - token environment: `toktrie_hf_tokenizers::ByteTokenizer::from_file(tokenizer.json)`
//!   `.into_tok_env(None)`; one `ParserFactory::new(&env, InferenceCapabilities::default(),
//!   &SlicedBiasComputer::json_slices())` for the whole run (what llguidance's own
//!   MaskBench runner does), default `ParserLimits`, logging off.
//! - compile: `TopLevelGrammar::from_json_schema(schema)` + `factory.create_parser(..)`
//!   with the default `JsonCompileOptions` (flexible whitespace, not lenient). `compile_ms`
//!   times exactly that. llguidance builds its lexer lazily, so `ttfm_ms` additionally times
//!   the first `compute_mask` on a clone (time to first mask).
//! - acceptance: llguidance judges tokens, not bytes, so each instance text is tokenized with
//!   the same tokenizer (`tok_env.tokenize_bytes`, no special tokens) and fed with
//!   `Matcher::try_consume_tokens` (validate each token, then consume it); the instance is
//!   accepted when every token was consumed and `Matcher::is_accepting()` holds.
//!
//! With `bench` as the first argument it runs the mask/commit latency bench instead (see
//! `bench.rs`); without it (as `cargo dwac-bench schema-bench --peer` calls it) it is the worker above.

use std::io::{BufRead, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use anyhow::{Context, Result};
use dwac_peer_common::panic_message;
use llguidance::api::TopLevelGrammar;
use llguidance::earley::SlicedBiasComputer;
use llguidance::toktrie::{InferenceCapabilities, TokEnv};
use llguidance::{Matcher, ParserFactory, TokenParser};
use serde_json::{json, Value};

/// The global allocator of dwac's CLI and bench worker, so every Rust engine in the benchmark
/// allocates through the same one.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod bench;

fn judge(env: &TokEnv, parser: &TokenParser, text: &str) -> bool {
    let tokens = env.tokenize_bytes(text.as_bytes());
    let r = catch_unwind(AssertUnwindSafe(|| {
        let mut m = Matcher::new(Ok(parser.deep_clone()));
        match m.try_consume_tokens(&tokens) {
            Ok(n) if n == tokens.len() => m.is_accepting().unwrap_or(false),
            _ => false,
        }
    }));
    r.unwrap_or(false)
}

fn run_job(env: &TokEnv, factory: &ParserFactory, job: &Value, out: &mut impl Write) -> Result<()> {
    let id = job["id"].clone();
    let schema = job["schema"].clone();
    let t0 = Instant::now();
    let created = catch_unwind(AssertUnwindSafe(|| factory.create_parser(TopLevelGrammar::from_json_schema(schema))));
    let compile_ms = t0.elapsed().as_secs_f64() * 1e3;
    writeln!(out, "{}", json!({"id": id, "event": "compiled"}))?;
    out.flush()?;
    let parser = match created {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            let r = json!({"id": id, "compiled": false, "compile_ms": compile_ms,
                           "error": {"keyword": "", "pointer": "", "message": e.to_string()}, "accepted": []});
            writeln!(out, "{r}")?;
            return Ok(out.flush()?);
        }
        Err(p) => {
            let r = json!({"id": id, "compiled": false, "compile_ms": compile_ms, "panic": panic_message(&*p),
                           "error": {"keyword": "panic", "pointer": "", "message": panic_message(&*p)}, "accepted": []});
            writeln!(out, "{r}")?;
            return Ok(out.flush()?);
        }
    };
    // Time to first mask: the lazily built lexer's first state, on a throwaway clone.
    let t1 = Instant::now();
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let mut m = Matcher::new(Ok(parser.deep_clone()));
        let _ = m.compute_mask();
    }));
    let ttfm_ms = compile_ms + t1.elapsed().as_secs_f64() * 1e3;
    let t2 = Instant::now();
    let accepted: Vec<bool> = job["instances"]
        .as_array()
        .map(|a| a.iter().map(|t| judge(env, &parser, t.as_str().unwrap_or(""))).collect())
        .unwrap_or_default();
    let judge_ms = t2.elapsed().as_secs_f64() * 1e3;
    let r = json!({"id": id, "compiled": true, "compile_ms": compile_ms, "ttfm_ms": ttfm_ms,
                   "judge_ms": judge_ms, "error": null, "accepted": accepted});
    writeln!(out, "{r}")?;
    Ok(out.flush()?)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("bench") {
        return bench::main(&args[2..]);
    }
    let tok_path = match args.iter().position(|a| a == "--tokenizer") {
        Some(i) if i + 1 < args.len() => args[i + 1].clone(),
        _ => anyhow::bail!("usage: dwac-peer-llguidance --tokenizer tokenizer.json < jobs.jsonl"),
    };
    let env = toktrie_hf_tokenizers::ByteTokenizer::from_file(&tok_path)
        .with_context(|| format!("loading {tok_path}"))?
        .into_tok_env(None)?;
    let mut factory = ParserFactory::new(&env, InferenceCapabilities::default(), &SlicedBiasComputer::json_slices())?;
    factory.quiet();
    let stdin = std::io::stdin();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    writeln!(out, "{}", json!({"event": "ready"}))?;
    out.flush()?;
    for line in stdin.lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let job: Value = serde_json::from_str(&line).context("bad job line")?;
        run_job(&env, &factory, &job, &mut out)?;
    }
    Ok(())
}
