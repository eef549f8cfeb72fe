//! `cargo xtask differential`: the Parser DWA mask against the reference mask at every step of
//! every MaskBench valid instance (and the end-of-text mask), for several tokenizers.
//!
//! The reference mask is a function of the matcher's configuration alone (per thread: lexer
//! state, carried inhibitors and stacks as LR-state sequences; `Matcher::configuration_key`), so
//! it is computed once per distinct configuration and remembered as a 128-bit hash; every step's
//! DWA mask is compared with it. A step whose hash differs is recomputed in full and reported.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use dwac_runtime::Matcher;
use dwac_tests::{engine_from_file, json_dumps, maskbench_instances};
use serde_json::json;

fn hash128(mask: &[u32]) -> (u64, u64) {
    let mut a = std::collections::hash_map::DefaultHasher::new();
    mask.hash(&mut a);
    let mut b = std::collections::hash_map::DefaultHasher::new();
    (0x9e37_79b9_7f4a_7c15u64, mask).hash(&mut b);
    (a.finish(), b.finish())
}

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
        let mut cache: HashMap<Vec<u32>, (u64, u64)> = HashMap::new();
        let (mut steps, mut computed, mut uncached, mut mismatches) = (0u64, 0u64, 0u64, 0u64);
        let mut examples = Vec::new();
        let t1 = Instant::now();
        let mut dwa = vec![0u32; engine.vocab().len().div_ceil(32)];
        let mut reference = dwa.clone();
        for (i, text) in texts.iter().enumerate() {
            bar.inc(1);
            let ids = tok.encode(text).with_context(|| format!("encoding instance {i}"))?;
            let mut m = Matcher::new(Arc::clone(&engine));
            for (k, id) in ids.iter().map(Some).chain(std::iter::once(None)).enumerate() {
                m.fill_mask(&mut dwa).map_err(|e| anyhow::anyhow!("{e}"))?;
                let got = hash128(&dwa);
                let key = m.configuration_key(64);
                let want = match key.as_ref().and_then(|k| cache.get(k)) {
                    Some(&h) => h,
                    None => {
                        m.fill_reference_mask_shared(&mut reference, threads).map_err(|e| anyhow::anyhow!("{e}"))?;
                        computed += 1;
                        let h = hash128(&reference);
                        match key {
                            Some(k) => {
                                cache.insert(k, h);
                            }
                            None => uncached += 1,
                        }
                        h
                    }
                };
                steps += 1;
                if got != want {
                    mismatches += 1;
                    if examples.len() < 10 {
                        m.fill_reference_mask(&mut reference).map_err(|e| anyhow::anyhow!("{e}"))?;
                        let bit = |mask: &[u32], v: u32| mask[(v / 32) as usize] >> (v % 32) & 1 == 1;
                        let diff: Vec<String> = (0..engine.vocab().len() as u32)
                            .filter(|&v| bit(&dwa, v) != bit(&reference, v))
                            .take(8)
                            .map(|v| {
                                let b = engine.vocab().token_bytes(v).unwrap_or_default();
                                format!("{v} {:?} dwa={}", String::from_utf8_lossy(b), bit(&dwa, v))
                            })
                            .collect();
                        examples.push(json!({"instance": i, "step": k, "tokens": diff}));
                    }
                }
                let Some(&id) = id else { break };
                m.commit(id).map_err(|e| anyhow::anyhow!("instance {i} step {k}: {e}"))?;
            }
            if m.mask_fallbacks() > 0 {
                anyhow::bail!("instance {i}: fill_mask fell back to the reference mask");
            }
            bar.set_message(format!("{steps} steps, {computed} references, {mismatches} mismatches"));
        }
        bar.finish_and_clear();
        failed |= mismatches > 0;
        let report = json!({
            "tokenizer": tok.name(),
            "vocab_size": engine.vocab().len(),
            "grammar": args.grammar,
            "instances": texts.len(),
            "steps_compared": steps,
            "reference_masks_computed": computed,
            "uncached_configurations": uncached,
            "mask_mismatches": mismatches,
            "examples": examples,
            "compile_ms": (compile_ms * 10.0).round() / 10.0,
            "elapsed_s": (t1.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        });
        if !args.json {
            println!(
                "{}: {} instances, {} steps compared, {} reference masks computed, {} mismatches ({:.0} s)",
                tok.name(),
                texts.len(),
                steps,
                computed,
                mismatches,
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
    anyhow::ensure!(!failed, "the DWA mask differs from the reference mask");
    Ok(())
}
