//! `cargo xtask`: corpus runs and benchmarks (never timed tests).
//!
//! - `cargo xtask bench`: commit latency per token on the MaskBench traces (single thread),
//!   p50/p90/p99/p99.9/max/mean, raw single pass and per-step minimum over R replays.
//! - `cargo xtask maskbench-jsonl --out FILE`: the MaskBench instances as `{"text","valid"}`
//!   lines for `dwac check` (valid instances, plus broken variants marked invalid with `--broken`).
//! - `cargo xtask schema-suite [--draft D|all] [--json] [--out FILE]`: the JSON-Schema-Test-Suite
//!   through the JSON Schema compiler, next to llguidance's recorded results (`schema_suite.rs`).
//! - `cargo xtask schema-bench [--limit N] [--peer] [--json] [--out FILE]`: MaskBench schemas
//!   (Glaiveai2K + Github_easy) compiled in a limited worker subprocess, instances judged, compile
//!   times and table sizes; `--peer` runs llguidance on the same jobs (`schema_bench.rs`).

mod differential;
mod schema_bench;
mod schema_suite;
mod util;

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use dwac_runtime::Matcher;
use dwac_tests::{engine_from_file, json_dumps, maskbench_instances, shared_data};
use dwac_vocab::Tokenizer;
use serde_json::json;

#[derive(Parser)]
#[command(name = "xtask")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Commit latency on MaskBench traces.
    Bench {
        /// Grammar (repository-relative).
        #[arg(long, default_value = "grammars/json.lark")]
        grammar: String,
        /// Tokenizer name under ../shared/data/tokenizers, or a path to a tokenizer.json.
        #[arg(long, default_value = "qwen3")]
        tokenizer: String,
        /// Replays of every trace (per-step minimum is reported next to the raw first pass).
        #[arg(long, default_value_t = 3)]
        replays: usize,
        /// Use only the first N traces.
        #[arg(long)]
        limit: Option<usize>,
        #[arg(long)]
        json: bool,
    },
    /// Write MaskBench instances as JSON lines for `dwac check`.
    MaskbenchJsonl {
        #[arg(long)]
        out: PathBuf,
        /// Also write broken variants (truncated, stray punctuation), marked `"valid": false`.
        #[arg(long)]
        broken: bool,
    },
    /// JSON-Schema-Test-Suite through the JSON Schema compiler.
    SchemaSuite {
        /// Draft folder under tests/ (draft2020-12, draft7, draft4) or `all`.
        #[arg(long, default_value = "draft2020-12")]
        draft: String,
        #[arg(long)]
        json: bool,
        /// Also write the JSON report (with every test's outcome) to FILE.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// MaskBench (Glaiveai2K + Github_easy): compile every schema under limits, judge its instances.
    SchemaBench {
        /// Only the first N schemas of each split.
        #[arg(long)]
        limit: Option<usize>,
        /// Only schemas whose file name contains this.
        #[arg(long)]
        filter: Option<String>,
        #[arg(long)]
        json: bool,
        /// Also write the JSON report (with every schema's outcome) to FILE.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Also run llguidance (xtask/peers/llguidance) on the same jobs.
        #[arg(long)]
        peer: bool,
        /// Tokenizer name under ../shared/data/tokenizers, or a path to a tokenizer.json.
        #[arg(long, default_value = "qwen3")]
        tokenizer: String,
        /// Wall-clock limit per compilation, seconds.
        #[arg(long, default_value_t = 10.0)]
        timeout_s: f64,
        /// Address-space limit of a worker process, GiB.
        #[arg(long, default_value_t = 2.0)]
        mem_gib: f64,
    },
    /// The Parser DWA mask against the reference mask at every step of the MaskBench valid
    /// instances (reference masks cached by configuration).
    Differential {
        /// Grammar (repository-relative).
        #[arg(long, default_value = "grammars/json.lark")]
        grammar: String,
        /// Tokenizers (names under ../shared/data/tokenizers or paths); repeat the flag.
        #[arg(long = "tokenizer", default_values_t = ["gpt2".to_string(), "qwen3".to_string(), "deepseek-r1".to_string(), "phi-3.5-mini".to_string()])]
        tokenizers: Vec<String>,
        /// Use only the first N instances.
        #[arg(long)]
        limit: Option<usize>,
        #[arg(long)]
        json: bool,
    },
    /// Internal: compile jobs read from stdin (used by schema-bench).
    #[command(hide = true)]
    SchemaWorker {
        #[arg(long, default_value = "qwen3")]
        tokenizer: String,
    },
}

fn tokenizer(name: &str) -> Result<Tokenizer> {
    let p = PathBuf::from(name);
    let path = if p.exists() { p } else { shared_data().join("tokenizers").join(name).join("tokenizer.json") };
    Tokenizer::from_file(&path).with_context(|| format!("loading {}", path.display()))
}

fn percentiles(mut v: Vec<f64>) -> serde_json::Value {
    if v.is_empty() {
        return json!(null);
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let q = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let r = |x: f64| (x * 100.0).round() / 100.0;
    json!({"p50": r(q(0.5)), "p90": r(q(0.9)), "p99": r(q(0.99)), "p999": r(q(0.999)), "max": r(q(1.0)), "mean": r(mean), "n": v.len()})
}

fn bench(grammar: &str, tok_name: &str, replays: usize, limit: Option<usize>, as_json: bool) -> Result<()> {
    let tok = tokenizer(tok_name)?;
    let t0 = Instant::now();
    let engine = engine_from_file(grammar, tok.vocab().clone());
    let compile_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut traces: Vec<Vec<u32>> = Vec::new();
    for inst in maskbench_instances().into_iter().filter(|i| i.valid) {
        traces.push(tok.encode(&json_dumps(&inst.data))?);
    }
    if let Some(n) = limit {
        traces.truncate(n);
    }
    let steps: usize = traces.iter().map(|t| t.len()).sum();
    let bar = indicatif::ProgressBar::new((traces.len() * replays.max(1)) as u64);
    if as_json {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    // Per step: (mask, commit) times of the first pass and the minimum over the replays. A step is
    // one mask then one commit; each trace ends with one more mask (the end token must be in it).
    let masks = steps + traces.len();
    let (mut mask_first, mut mask_best) = (vec![f64::INFINITY; masks], vec![f64::INFINITY; masks]);
    let (mut commit_first, mut commit_best) = (vec![f64::INFINITY; steps], vec![f64::INFINITY; steps]);
    let mut accept_us = Vec::new();
    let mut buf = vec![0u32; engine.vocab().len().div_ceil(32)];
    let eos = engine.vocab().eos.first().copied();
    for r in 0..replays.max(1) {
        let (mut k, mut km) = (0, 0);
        for tr in &traces {
            bar.inc(1);
            let mut m = Matcher::new(Arc::clone(&engine));
            for t in tr.iter().map(Some).chain(std::iter::once(None)) {
                let s = Instant::now();
                m.fill_mask(&mut buf).map_err(|e| anyhow::anyhow!("{e}"))?;
                let us = s.elapsed().as_secs_f64() * 1e6;
                if r == 0 {
                    mask_first[km] = us;
                    if std::env::var_os("DWAC_MASK_TRACE").is_some() {
                        let c = m.mask_counters();
                        eprintln!(
                            "MASK {us:.2} reads {} dense {} rangesets {} ranges {}",
                            c.reads, c.dense_sets, c.range_sets, c.ranges
                        );
                    }
                }
                mask_best[km] = mask_best[km].min(us);
                km += 1;
                let Some(&t) = t else {
                    if let Some(e) = eos {
                        anyhow::ensure!(buf[(e / 32) as usize] >> (e % 32) & 1 == 1, "end token not in the final mask");
                    }
                    break;
                };
                anyhow::ensure!(buf[(t / 32) as usize] >> (t % 32) & 1 == 1, "trace token {t} not in the mask");
                let s = Instant::now();
                m.commit(t).map_err(|e| anyhow::anyhow!("trace rejected: {e}"))?;
                let us = s.elapsed().as_secs_f64() * 1e6;
                if r == 0 {
                    commit_first[k] = us;
                }
                commit_best[k] = commit_best[k].min(us);
                k += 1;
            }
            anyhow::ensure!(m.mask_fallbacks() == 0, "fill_mask fell back to the reference mask");
            let s = Instant::now();
            let ok = m.is_accepting();
            if r == 0 {
                accept_us.push(s.elapsed().as_secs_f64() * 1e6);
            }
            anyhow::ensure!(ok, "trace not accepted at the end");
        }
    }
    bar.finish_and_clear();
    if std::env::var_os("DWAC_MASK_TRACE").is_some() {
        // The slowest masks (minimum over replays): trace, step, time.
        let mut idx: Vec<usize> = (0..masks).collect();
        idx.sort_by(|&a, &b| mask_best[b].total_cmp(&mask_best[a]));
        let mut starts = Vec::new();
        let mut acc = 0;
        for tr in &traces {
            starts.push(acc);
            acc += tr.len() + 1;
        }
        for &i in idx.iter().take(5) {
            let tr = starts.partition_point(|&s| s <= i) - 1;
            eprintln!("SLOW trace {tr} step {} of {}: {:.1} us", i - starts[tr], traces[tr].len(), mask_best[i]);
        }
    }
    let out = json!({
        "grammar": grammar,
        "tokenizer": tok.name(),
        "traces": traces.len(),
        "steps": steps,
        "replays": replays,
        "compile_ms": (compile_ms * 10.0).round() / 10.0,
        "masks": masks,
        "mask_us": percentiles(mask_first),
        "mask_us_min_of_replays": percentiles(mask_best),
        "commit_us": percentiles(commit_first),
        "commit_us_min_of_replays": percentiles(commit_best),
        "is_accepting_us": percentiles(accept_us),
    });
    if as_json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "{} traces, {} steps, {} replays, grammar {} ({} ms), tokenizer {}",
            traces.len(),
            steps,
            replays,
            grammar,
            out["compile_ms"],
            tok.name()
        );
        for key in ["mask_us", "mask_us_min_of_replays", "commit_us", "commit_us_min_of_replays", "is_accepting_us"] {
            let p = &out[key];
            println!(
                "  {key:<26} p50 {:>7} p90 {:>7} p99 {:>7} p99.9 {:>8} max {:>9} mean {:>7}",
                p["p50"], p["p90"], p["p99"], p["p999"], p["max"], p["mean"]
            );
        }
    }
    Ok(())
}

fn maskbench_jsonl(out: PathBuf, broken: bool) -> Result<()> {
    let mut f =
        std::io::BufWriter::new(std::fs::File::create(&out).with_context(|| format!("creating {}", out.display()))?);
    let (mut nv, mut nb) = (0, 0);
    for inst in maskbench_instances().into_iter().filter(|i| i.valid) {
        let text = json_dumps(&inst.data);
        writeln!(f, "{}", json!({"text": text, "valid": true}))?;
        nv += 1;
        if broken {
            // Three syntactic breaks per document: cut short, a stray closer, a doubled comma or colon.
            let mut half = text.len() / 2;
            while !text.is_char_boundary(half) {
                half -= 1;
            }
            let variants = [
                text[..half].to_string(),
                format!("{text}]"),
                text.replacen(", ", ",, ", 1).replacen(": ", ":: ", if text.contains(", ") { 0 } else { 1 }),
            ];
            for v in variants {
                if v != text && serde_json::from_str::<serde_json::Value>(&v).is_err() {
                    writeln!(f, "{}", json!({"text": v, "valid": false}))?;
                    nb += 1;
                }
            }
        }
    }
    f.flush()?;
    eprintln!("wrote {nv} valid and {nb} broken lines to {}", out.display());
    Ok(())
}

fn main() -> Result<()> {
    match Cli::parse().cmd {
        Cmd::Bench { grammar, tokenizer, replays, limit, json } => bench(&grammar, &tokenizer, replays, limit, json),
        Cmd::MaskbenchJsonl { out, broken } => maskbench_jsonl(out, broken),
        Cmd::SchemaSuite { draft, json, out } => schema_suite::run(&draft, json, out),
        Cmd::SchemaBench { limit, filter, json, out, peer, tokenizer, timeout_s, mem_gib } => {
            schema_bench::run(schema_bench::BenchArgs { limit, filter, json, out, peer, tokenizer, timeout_s, mem_gib })
        }
        Cmd::SchemaWorker { tokenizer } => schema_bench::worker(&tokenizer),
        Cmd::Differential { grammar, tokenizers, limit, json } => {
            differential::run(differential::Args { grammar, tokenizers, limit, json })
        }
    }
}
