//! `cargo xtask differential`: the Parser DWA mask against the reference mask at every step of
//! every MaskBench valid instance (and the end-of-text mask), for several tokenizers.
//!
//! The reference mask is a function of the matcher's configuration alone (per thread: lexer
//! state, carried inhibitors and stacks as LR-state sequences; `Matcher::configuration_key`), so
//! it is computed once per distinct configuration and remembered as a 128-bit hash; every step's
//! DWA mask is compared with it. A step whose hash differs is recomputed in full and reported.

use std::time::Instant;

use anyhow::{Context, Result};
use dwac_tests::differential::differential;
use dwac_tests::{engine_from_file, json_dumps, maskbench_instances};
use serde_json::json;

pub struct Args {
    pub grammar: String,
    pub tokenizers: Vec<String>,
    pub limit: Option<usize>,
    pub json: bool,
}

pub fn run(args: Args) -> Result<()> {
    let mut reports = Vec::new();
    let mut failed = false;
    for name in &args.tokenizers {
        let tok = crate::tokenizer(name)?;
        let t0 = Instant::now();
        let engine = engine_from_file(&args.grammar, tok.vocab().clone());
        let compile_ms = t0.elapsed().as_secs_f64() * 1e3;
        let mut texts: Vec<String> =
            maskbench_instances().into_iter().filter(|i| i.valid).map(|i| json_dumps(&i.data)).collect();
        if let Some(n) = args.limit {
            texts.truncate(n);
        }
        let bar = indicatif::ProgressBar::new(texts.len() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{prefix} {bar:40} {pos}/{len} {elapsed} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar.set_prefix(tok.name().to_string());
        if args.json {
            bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let traces: Vec<Vec<u32>> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| tok.encode(t).with_context(|| format!("encoding instance {i}")))
            .collect::<Result<_>>()?;
        let t1 = Instant::now();
        let r = differential(&engine, &traces, threads, &mut |r| {
            bar.inc(1);
            bar.set_message(format!(
                "{} steps, {} references, {} mismatches",
                r.steps_compared, r.reference_masks_computed, r.mismatches
            ));
        });
        bar.finish_and_clear();
        failed |= r.mismatches > 0 || r.fallbacks > 0 || r.rejected_traces > 0;
        let examples: Vec<_> =
            r.examples.iter().map(|(i, k, d)| json!({"instance": i, "step": k, "tokens": d})).collect();
        let report = json!({
            "tokenizer": tok.name(),
            "vocab_size": engine.vocab().len(),
            "grammar": args.grammar,
            "instances": texts.len(),
            "steps_compared": r.steps_compared,
            "reference_masks_computed": r.reference_masks_computed,
            "uncached_configurations": r.uncached,
            "mask_mismatches": r.mismatches,
            "rejected_traces": r.rejected_traces,
            "fallbacks": r.fallbacks,
            "examples": examples,
            "compile_ms": (compile_ms * 10.0).round() / 10.0,
            "elapsed_s": (t1.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        });
        if !args.json {
            println!(
                "{}: {} instances, {} steps compared, {} reference masks computed, {} mismatches ({:.0} s)",
                tok.name(),
                texts.len(),
                r.steps_compared,
                r.reference_masks_computed,
                r.mismatches,
                t1.elapsed().as_secs_f64()
            );
            for e in &examples {
                println!("  mismatch {e}");
            }
        }
        reports.push(report);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&json!({ "runs": reports }))?);
    }
    anyhow::ensure!(!failed, "the DWA mask differs from the reference mask (or a trace was rejected or fell back)");
    Ok(())
}
