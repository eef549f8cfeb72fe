//! glrmask peer for dwac's mask/commit latency bench (same token ids as dwac).
//!
//! Usage: `dwac-peer-glrmask bench --tokenizer tokenizer.json --jobs JOBS.jsonl --replays N
//! --out OUT.jsonl [--eos ID[,ID...]] [--popcount] [--warmup SCHEMA_JSON|none]`.
//!
//! JOBS.jsonl has one job a line, `{"id", "kind": "json" | "schema", "schema"?, "traces": [[ids]]}`;
//! OUT.jsonl gets a first `{"event": "env", ...}` line, then one result line per job (see
//! `run_job`): per-step times of the first replay and the minimum over replays, counters of
//! rejected traces, trace tokens missing from the mask and final masks without an EOS bit.
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
//! - EOS: `--eos` if given, else `eos_token` of `tokenizer_config.json` then
//!   `special_tokens_map.json` beside tokenizer.json, else the first well-known end token
//!   (`<|endoftext|>`, `</s>`, ...) among the added tokens. glrmask 0.5 has no end-token
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
//!   the last token one more timed `fill_mask` and the EOS bit check.
//! - `--popcount` adds `mask_popcount` (allowed tokens per mask of the first replay, counted
//!   outside the timed calls), to compare mask sizes across engines.
//! - `peak_rss_mb`: VmHWM of /proc/self/status after the job; the high-water mark is reset
//!   (`5` into /proc/self/clear_refs) before each job, so it is the job's peak process RSS.

use std::io::{BufRead, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use glrmask::{Constraint, Expr, Grammar, TokenSet, Vocab};
use serde_json::{json, Value};

// (Measured as dwac's bench worker measures: the same functions.)
use dwac_measure::{peak_rss_mb, process_cpu_ms, reset_peak_rss};

/// The global allocator of dwac's CLI and bench worker, so every Rust engine in the benchmark
/// allocates through the same one.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Compiled once before the first job (see the header).
const DEFAULT_WARMUP: &str = "{}";

const WELL_KNOWN_EOS: &[&str] = &[
    "<|endoftext|>",
    "</s>",
    "<|im_end|>",
    "<｜end▁of▁sentence｜>",
    "<|end|>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "<eos>",
];

struct Args {
    tokenizer: PathBuf,
    jobs: PathBuf,
    out: PathBuf,
    replays: usize,
    eos: Option<Vec<u32>>,
    popcount: bool,
    warmup: Option<String>,
}

fn parse_args() -> Result<Args> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: dwac-peer-glrmask bench --tokenizer tokenizer.json --jobs JOBS.jsonl --replays N --out OUT.jsonl [--eos ID[,ID...]] [--popcount] [--warmup SCHEMA_JSON|none]";
    if args.first().map(String::as_str) != Some("bench") {
        bail!("{usage}");
    }
    let get = |name: &str| -> Option<String> {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
    };
    let need = |name: &str| get(name).with_context(|| format!("missing {name}\n{usage}"));
    let eos = match get("--eos") {
        None => None,
        Some(s) => Some(
            s.split(',')
                .map(|x| x.trim().parse::<u32>().with_context(|| format!("bad --eos {s}")))
                .collect::<Result<Vec<_>>>()?,
        ),
    };
    Ok(Args {
        tokenizer: need("--tokenizer")?.into(),
        jobs: need("--jobs")?.into(),
        out: need("--out")?.into(),
        replays: need("--replays")?.parse().context("bad --replays")?,
        eos,
        popcount: args.iter().any(|a| a == "--popcount"),
        warmup: match get("--warmup").as_deref() {
            None => Some(DEFAULT_WARMUP.to_string()),
            Some("none") => None,
            Some(s) => Some(s.to_string()),
        },
    })
}

/// `eos_token` of a side config: a string or `{"content": ...}`.
fn side_eos(dir: &Path, file: &str) -> Option<String> {
    let v: Value = serde_json::from_slice(&std::fs::read(dir.join(file)).ok()?).ok()?;
    match v.get("eos_token")? {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("content")?.as_str().map(str::to_string),
        _ => None,
    }
}

/// Id of a token's content: added tokens first, then the model vocabulary.
fn token_id(tok_json: &Value, content: &str) -> Option<u32> {
    if let Some(added) = tok_json["added_tokens"].as_array() {
        for t in added {
            if t["content"].as_str() == Some(content) {
                return t["id"].as_u64().map(|x| x as u32);
            }
        }
    }
    tok_json["model"]["vocab"].get(content).and_then(Value::as_u64).map(|x| x as u32)
}

fn resolve_eos(tok_path: &Path, tok_json: &Value) -> Result<Vec<u32>> {
    let dir = tok_path.parent().unwrap_or(Path::new("."));
    let mut eos = Vec::new();
    for file in ["tokenizer_config.json", "special_tokens_map.json"] {
        if let Some(content) = side_eos(dir, file) {
            let id = token_id(tok_json, &content)
                .with_context(|| format!("{file}: eos_token {content:?} is not in the tokenizer"))?;
            if !eos.contains(&id) {
                eos.push(id);
            }
        }
    }
    if eos.is_empty() {
        if let Some(added) = tok_json["added_tokens"].as_array() {
            if let Some(id) = WELL_KNOWN_EOS.iter().find_map(|w| {
                added.iter().find(|t| t["content"].as_str() == Some(w)).and_then(|t| t["id"].as_u64())
            }) {
                eos.push(id as u32);
            }
        }
    }
    anyhow::ensure!(!eos.is_empty(), "no EOS token found; pass --eos");
    Ok(eos)
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}


#[inline]
fn bit(mask: &[u32], id: u32) -> bool {
    mask.get(id as usize / 32).is_some_and(|w| w >> (id % 32) & 1 == 1)
}

fn compile(vocab: &Vocab, schema_text: &str, eos: &[u32]) -> glrmask::Result<Constraint> {
    let body = Grammar::from_json_schema(schema_text)?;
    let g = Grammar::from_expr(Expr::sequence([Expr::from(body), Expr::from(TokenSet::new(eos.iter().copied()))]))?;
    g.compile(vocab)
}

/// Per-step times of one replay over all traces, in trace order.
#[derive(Default)]
struct Pass {
    mask_us: Vec<f64>,
    commit_us: Vec<f64>,
    rejected: usize,
    not_in_mask: usize,
    eos_missing: usize,
    /// Masks and commits timed per trace (a rejected trace stops after its failed commit).
    trace_masks: Vec<usize>,
    trace_commits: Vec<usize>,
    panics: Vec<String>,
    popcount: Vec<u32>,
}

fn run_pass(constraint: &Constraint, traces: &[Vec<u32>], eos: &[u32], buf: &mut [u32], popcount: bool) -> Pass {
    let mut p = Pass::default();
    for trace in traces {
        let (m0, c0) = (p.mask_us.len(), p.commit_us.len());
        let r = catch_unwind(AssertUnwindSafe(|| {
            let mut state = constraint.start();
            for &tok in trace {
                let t0 = Instant::now();
                state.fill_mask(buf);
                let dt = t0.elapsed();
                p.mask_us.push(dt.as_secs_f64() * 1e6);
                if popcount {
                    p.popcount.push(buf.iter().map(|w| w.count_ones()).sum());
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
                p.popcount.push(buf.iter().map(|w| w.count_ones()).sum());
            }
            if !eos.iter().any(|&e| bit(buf, e)) {
                p.eos_missing += 1;
            }
        }));
        if let Err(e) = r {
            p.rejected += 1;
            p.panics.push(panic_message(&*e));
        }
        p.trace_masks.push(p.mask_us.len() - m0);
        p.trace_commits.push(p.commit_us.len() - c0);
    }
    p
}

fn min_into(acc: &mut [f64], xs: &[f64]) {
    for (a, x) in acc.iter_mut().zip(xs) {
        if *x < *a {
            *a = *x;
        }
    }
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
    let traces: Vec<Vec<u32>> = job["traces"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t.as_array().map(|x| x.iter().filter_map(|v| v.as_u64().map(|v| v as u32)).collect()).unwrap_or_default())
                .collect()
        })
        .unwrap_or_default();
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
        Err(p) => return json!({"id": id, "compiled": false, "compile_ms": compile_ms, "error": format!("panic: {}", panic_message(&*p))}),
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
    let first = run_pass(&constraint, &traces, eos, &mut buf, popcount);
    let mut mask_min = first.mask_us.clone();
    let mut commit_min = first.commit_us.clone();
    for _ in 1..replays.max(1) {
        let p = run_pass(&constraint, &traces, eos, &mut buf, false);
        min_into(&mut mask_min, &p.mask_us);
        min_into(&mut commit_min, &p.commit_us);
    }
    let mut r = json!({
        "id": id, "compiled": true, "compile_ms": compile_ms, "compile_cpu_ms": compile_cpu_ms, "ttfm_ms": null, "save_ms": save_ms,
        "mask_us": first.mask_us, "mask_us_min": mask_min,
        "commit_us": first.commit_us, "commit_us_min": commit_min,
        "trace_masks": first.trace_masks, "trace_commits": first.trace_commits,
        "masks": first.mask_us.len(), "commits": first.commit_us.len(),
        "rejected_traces": first.rejected, "token_not_in_mask": first.not_in_mask,
        "eos_not_in_mask": first.eos_missing, "panics": first.panics,
        "mask_len_words": constraint.mask_len(),
        "artifact_bytes": saved.len(), "open_us": load_us, "load_error": load_error,
        "peak_rss_mb": peak_rss_mb(),
    });
    if popcount {
        r["mask_popcount"] = json!(first.popcount);
    }
    r
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let tok_text = std::fs::read(&args.tokenizer).with_context(|| format!("reading {}", args.tokenizer.display()))?;
    let tok_json: Value = serde_json::from_slice(&tok_text).context("tokenizer.json is not JSON")?;
    let eos = match &args.eos {
        Some(e) => e.clone(),
        None => resolve_eos(&args.tokenizer, &tok_json)?,
    };

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

    let mut out = std::io::BufWriter::new(
        std::fs::File::create(&args.out).with_context(|| format!("creating {}", args.out.display()))?,
    );
    writeln!(
        out,
        "{}",
        json!({"event": "env", "peer": "glrmask", "version": glrmask_version(), "vocab_size": vocab_size,
               "vocab_byte_tokens": n_byte_tokens, "eos": eos, "python_overhead_ns": null,
               "setup_ms": setup_ms, "warmup_ms": warmup_ms, "warmup_error": warm.err(), "warmup_schema": args.warmup,
               "replays": args.replays,
               "language": {"json": "the `{}` schema, `, ` and `: ` separators, no other whitespace",
                            "schema": "the schema, `, ` and `: ` separators, no other whitespace"}})
    )?;
    out.flush()?;
    let jobs = std::io::BufReader::new(std::fs::File::open(&args.jobs).with_context(|| format!("opening {}", args.jobs.display()))?);
    for line in jobs.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let job: Value = serde_json::from_str(&line).context("bad job line")?;
        let r = run_job(&vocab, vocab_size, &eos, args.replays, args.popcount, &job);
        writeln!(out, "{r}")?;
        out.flush()?;
    }
    Ok(())
}

/// The glrmask version this binary was built against (from Cargo.lock, via build-time env).
fn glrmask_version() -> &'static str {
    env!("DWAC_PEER_GLRMASK_VERSION")
}
