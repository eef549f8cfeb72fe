//! glrmask peer for dwac's mask/commit latency bench (same token ids as dwac).
//!
//! The command line, the job loop and the result's common fields are `dwac-peer-common`'s (see
//! there); a result line holds per-step times of the first replay and the minimum over replays,
//! counters of rejected traces, trace tokens missing from the mask and final masks without an
//! EOS bit, and what is glrmask's own (`save_ms`, `open_us`, `artifact_bytes`; see `run_job`).
//!
//! How glrmask (0.5.x, its public API only, nothing copied) is driven:
//! - vocabulary: glrmask's Rust crate has no tokenizer loader, so the token bytes come from
//!   `toktrie_hf_tokenizers::ByteTokenizer::from_file(tokenizer.json).token_bytes()` (the
//!   byte-level `Ġ` map / byte-fallback `<0xNN>` + `▁` decoder the llguidance peer uses).
//!   Added tokens with `"special": false` in tokenizer.json get their content bytes;
//!   special tokens (`"special": true`, EOS included) are left out of the `Vocab`: in glrmask
//!   0.5 a token without bytes is not a vocabulary entry ("a token ID that isn't in the
//!   vocabulary never matches text, and a token set can still allow it").
//!   `glrmask::Vocab::new(vec![(id, bytes), ...])` is built once for the run.
//! - EOS: `--eos` (the driver's, the same for every engine). glrmask 0.5 has no end-token
//!   option; its documented way (CHANGELOG 0.4 "End tokens") is to put the end token after
//!   the grammar: `Grammar::from_expr(Expr::sequence([Expr::from(grammar),
//!   Expr::from(TokenSet::new(eos))]))`, so the EOS bit is set exactly when the body is complete.
//! - grammar: kind "schema" → `Grammar::from_json_schema(schema_text)`; kind "json" →
//!   `Grammar::from_json_schema("{}")` (glrmask has no separate builtin JSON grammar; its
//!   `{}` schema is its generic JSON value). NOTE: glrmask's JSON-Schema lowering has no
//!   whitespace option: separators are exactly `", "` and `": "` and no other whitespace is
//!   allowed (Python `json.dumps` style), for both kinds.
//! - compile: `grammar.compile(&vocab)` with the default `CompileOptions` (MaskStrategy::Auto:
//!   Parser DWA, or TokenTrie when that would be too large). `compile_ms` times parsing the
//!   schema text + `from_expr` + `compile`, on a thread of its own (as dwac's worker compiles;
//!   it made no difference to glrmask's times). glrmask compiles eagerly, so `ttfm_ms` is null.
//!   glrmask keeps caches across compilations (vocabulary artifacts inside the `Vocab`, terminal
//!   automata in process-wide statics): the first JSON grammar compiled in a process pays a
//!   one-time ~0.3–0.7 s (qwen3) that later ones do not. So that job order does not decide which
//!   job carries it, `{}` is compiled once before the first job (`warmup_ms` in the env line;
//!   `--warmup SCHEMA_JSON` picks another schema, `--warmup none` skips it), as llguidance's
//!   ParserFactory and xgrammar's TokenizerInfo do their per-vocabulary work up front. A job's
//!   `compile_ms` can still profit from terminals cached by earlier jobs of the same run.
//!   `compile_cpu_ms`: the process's CPU time (`getrusage`, every thread) over the same span.
//! - `save_ms`: `constraint.save()` (the bytes `Constraint::load` reads), timed apart from
//!   `compile_ms`, as dwac's worker times making its artifact's bytes.
//! - per trace: `constraint.start()` (untimed), then per token `state.fill_mask(&mut buf)`
//!   (timed; `buf` is a reused `Vec<u32>`, bit `id % 32` of word `id / 32`), check the trace
//!   token's bit, `state.commit_token(id)` (timed; `false` = rejected, trace stopped); after
//!   the last token one more timed `fill_mask` and the EOS bit check. A panic stops the trace
//!   (counted as rejected, its message among `errors`).
//! - `--popcount` adds `mask_popcount` (allowed tokens per mask of the first replay, counted
//!   outside the timed calls), to compare mask sizes across engines.
//! - `peak_rss_mb`: VmHWM of /proc/self/status after the job; the high-water mark is reset
//!   (`5` into /proc/self/clear_refs) before each job, so it is the job's peak process RSS.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use anyhow::{Context, Result};
use dwac_peer_common::{job_traces, panic_message, parse_args, process_cpu_ms, replay, reset_peak_rss, run_jobs, Pass};
use glrmask::{Constraint, Expr, Grammar, TokenSet, Vocab};
use serde_json::{json, Value};

/// The allocator of dwac's bench worker (see `bench/src/main.rs`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Compiled once before the first job (see the header).
const DEFAULT_WARMUP: &str = "{}";

#[inline]
fn bit(mask: &[u32], id: u32) -> bool {
    mask.get(id as usize / 32).is_some_and(|w| w >> (id % 32) & 1 == 1)
}

fn compile(vocab: &Vocab, schema_text: &str, eos: &[u32]) -> glrmask::Result<Constraint> {
    let body = Grammar::from_json_schema(schema_text)?;
    let g = Grammar::from_expr(Expr::sequence([Expr::from(body), Expr::from(TokenSet::new(eos.iter().copied()))]))?;
    g.compile(vocab)
}

fn run_pass(constraint: &Constraint, traces: &[Vec<u32>], eos: &[u32], buf: &mut [u32], popcount: bool) -> Pass {
    let mut p = Pass::default();
    for trace in traces {
        p.trace(|p| {
            let mut state = constraint.start();
            for &tok in trace {
                let t0 = Instant::now();
                state.fill_mask(buf);
                let dt = t0.elapsed();
                p.mask_us.push(dt.as_secs_f64() * 1e6);
                if popcount {
                    p.popcount.push(buf.iter().map(|w| w.count_ones() as usize).sum());
                }
                if !bit(buf, tok) {
                    p.not_in_mask += 1;
                }
                let t1 = Instant::now();
                let ok = state.commit_token(tok);
                let dt = t1.elapsed();
                p.commit_us.push(dt.as_secs_f64() * 1e6);
                if !ok {
                    p.rejected += 1;
                    return;
                }
            }
            let t0 = Instant::now();
            state.fill_mask(buf);
            let dt = t0.elapsed();
            p.mask_us.push(dt.as_secs_f64() * 1e6);
            if popcount {
                p.popcount.push(buf.iter().map(|w| w.count_ones() as usize).sum());
            }
            if !eos.iter().any(|&e| bit(buf, e)) {
                p.eos_missing += 1;
            }
        });
    }
    p
}

fn run_job(vocab: &Vocab, vocab_size: usize, eos: &[u32], replays: usize, popcount: bool, job: &Value) -> Value {
    let id = job["id"].clone();
    let kind = job["kind"].as_str().unwrap_or("schema");
    let schema_text = match kind {
        "json" => "{}".to_string(),
        "grammar" | "tags" => {
            return json!({"id": job["id"], "compiled": false, "compile_ms": 0.0,
                          "error": "glrmask compiles JSON Schemas only: grammar and structural-tag jobs are not run"})
        }
        _ => job["schema"].to_string(),
    };
    let traces = job_traces(job);
    reset_peak_rss();
    let cpu0 = process_cpu_ms();
    let t0 = Instant::now();
    // On a thread of its own, as dwac's worker compiles (see there; with glibc's malloc a fresh
    // thread's arena was faster than the main thread's, which the tokenizer's load fragments).
    let compiled = std::thread::scope(|s| {
        s.spawn(|| catch_unwind(AssertUnwindSafe(|| compile(vocab, &schema_text, eos)))).join().unwrap_or_else(Err)
    });
    let compile_ms = t0.elapsed().as_secs_f64() * 1e3;
    let compile_cpu_ms = process_cpu_ms() - cpu0;
    let constraint = match compiled {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return json!({"id": id, "compiled": false, "compile_ms": compile_ms, "error": e.to_string()}),
        Err(p) => {
            return json!({"id": id, "compiled": false, "compile_ms": compile_ms, "error": format!("panic: {}", panic_message(&*p))})
        }
    };
    // Save and load (glrmask's artifact round trip), timed like dwac's `Artifact::open`.
    let t_save = Instant::now();
    let saved = constraint.save();
    let save_ms = t_save.elapsed().as_secs_f64() * 1e3;
    let mut load_us = Vec::new();
    let mut load_error = None;
    for _ in 0..20 {
        let t = Instant::now();
        match Constraint::load(&saved[..], vocab) {
            Ok(c) => {
                load_us.push(t.elapsed().as_secs_f64() * 1e6);
                drop(c);
            }
            Err(e) => {
                load_error = Some(e.to_string());
                break;
            }
        }
    }
    let words = constraint.mask_len().max(vocab_size.div_ceil(32));
    let mut buf = vec![0u32; words];
    let runs = replay(replays, popcount, |popcount| run_pass(&constraint, &traces, eos, &mut buf, popcount));
    let mut r = json!({
        "id": id, "compiled": true, "compile_ms": compile_ms, "compile_cpu_ms": compile_cpu_ms, "ttfm_ms": null, "save_ms": save_ms,
        "mask_len_words": constraint.mask_len(),
        "artifact_bytes": saved.len(), "open_us": load_us, "load_error": load_error,
    });
    r.as_object_mut().expect("an object").extend(runs.fields(popcount));
    r
}

fn main() -> Result<()> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    anyhow::ensure!(
        argv.first().map(String::as_str) == Some("bench"),
        "usage: dwac-peer-glrmask bench ... (see dwac-peer-common)"
    );
    let args = parse_args(&argv[1..], "glrmask", Some(DEFAULT_WARMUP))?;
    let tok_text = std::fs::read(&args.tokenizer).with_context(|| format!("reading {}", args.tokenizer.display()))?;
    let tok_json: Value = serde_json::from_slice(&tok_text).context("tokenizer.json is not JSON")?;
    let eos = args.eos.clone();

    let t_setup = Instant::now();
    let bt = toktrie_hf_tokenizers::ByteTokenizer::from_file(&args.tokenizer)
        .with_context(|| format!("loading {}", args.tokenizer.display()))?;
    let mut bytes = bt.token_bytes();
    let vocab_size = bytes.len();
    // Added tokens: non-special ones are text (their content), special ones have no bytes.
    let mut special = vec![false; vocab_size];
    if let Some(added) = tok_json["added_tokens"].as_array() {
        for t in added {
            let Some(i) = t["id"].as_u64().map(|x| x as usize).filter(|&i| i < vocab_size) else { continue };
            if t["special"].as_bool().unwrap_or(false) {
                special[i] = true;
            } else if let Some(c) = t["content"].as_str() {
                bytes[i] = c.as_bytes().to_vec();
            }
        }
    }
    for &e in &eos {
        if let Some(s) = special.get_mut(e as usize) {
            *s = true;
        }
    }
    let entries: Vec<(u32, Vec<u8>)> = bytes
        .into_iter()
        .enumerate()
        .filter(|(i, b)| !special[*i] && !b.is_empty() && b[0] != 0xff)
        .map(|(i, b)| (i as u32, b))
        .collect();
    let n_byte_tokens = entries.len();
    let vocab = Vocab::new(entries);
    let setup_ms = t_setup.elapsed().as_secs_f64() * 1e3;
    let t_warm = Instant::now();
    let warm = match &args.warmup {
        Some(w) => compile(&vocab, w, &eos).map(|_| ()).map_err(|e| e.to_string()),
        None => Ok(()),
    };
    let warmup_ms = args.warmup.as_ref().map(|_| t_warm.elapsed().as_secs_f64() * 1e3);

    let env = json!({"event": "env", "peer": "glrmask", "version": env!("DWAC_PEER_VERSION"), "vocab_size": vocab_size,
               "vocab_byte_tokens": n_byte_tokens, "eos": eos, "python_overhead_ns": null,
               "setup_ms": setup_ms, "warmup_ms": warmup_ms, "warmup_error": warm.err(), "warmup_schema": args.warmup,
               "replays": args.replays,
               "language": {"json": "the `{}` schema, `, ` and `: ` separators, no other whitespace",
                            "schema": "the schema, `, ` and `: ` separators, no other whitespace"}});
    run_jobs(&args, &env, |job| run_job(&vocab, vocab_size, &eos, args.replays, args.popcount, job))
}
