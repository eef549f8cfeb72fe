//! `dwac bench`: time every mask and commit on texts.

use std::time::Instant;

use anyhow::{Context, Result};
use dwac_runtime::Matcher;
use serde_json::json;

use crate::args::BenchArgs;
use crate::cmd::check::read_jsonl;
use crate::load::load;
use crate::report::percentiles;

pub(crate) fn bench(args: BenchArgs) -> Result<u8> {
    let items = read_jsonl(&args.jsonl)?;
    let l = load(&args.source, args.json)?;
    let traces: Vec<Vec<u32>> = items
        .iter()
        .enumerate()
        .map(|(i, it)| l.tokenizer()?.encode(&it.text).with_context(|| format!("encoding input {i}")))
        .collect::<Result<_>>()?;
    let steps: usize = traces.iter().map(Vec::len).sum();
    let masks = steps + traces.len();
    let (mut mask_first, mut mask_best) = (vec![f64::INFINITY; masks], vec![f64::INFINITY; masks]);
    let (mut commit_first, mut commit_best) = (vec![f64::INFINITY; steps], vec![f64::INFINITY; steps]);
    let mut buf = vec![0u32; l.engine.vocab().len().div_ceil(32)];
    let mut rejected = 0;
    // Slow paths of the first pass (from the counters each fill returns).
    let (mut fallbacks, mut masks_with_undecided, mut undecided) = (0u64, 0u64, 0u64);
    let bar = indicatif::ProgressBar::new((traces.len() * args.replays.max(1)) as u64);
    if args.json {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    for r in 0..args.replays.max(1) {
        let (mut k, mut km) = (0, 0);
        for tr in &traces {
            bar.inc(1);
            let mut m = Matcher::new(l.engine.clone());
            let mut alive = true;
            for t in tr.iter().map(Some).chain(std::iter::once(None)) {
                if alive {
                    let s = Instant::now();
                    let c = m.fill_mask(&mut buf)?;
                    let us = s.elapsed().as_secs_f64() * 1e6;
                    if r == 0 {
                        mask_first[km] = us;
                        fallbacks += u64::from(c.fallbacks);
                        masks_with_undecided += u64::from(c.undecided > 0);
                        undecided += u64::from(c.undecided);
                    }
                    mask_best[km] = mask_best[km].min(us);
                }
                km += 1;
                let Some(&t) = t else { break };
                if alive {
                    let s = Instant::now();
                    let ok = m.commit(t).is_ok();
                    let us = s.elapsed().as_secs_f64() * 1e6;
                    if r == 0 {
                        commit_first[k] = us;
                        rejected += usize::from(!ok);
                    }
                    commit_best[k] = commit_best[k].min(us);
                    alive = ok;
                }
                k += 1;
            }
        }
    }
    bar.finish_and_clear();
    let timed = |v: Vec<f64>| percentiles(v.into_iter().filter(|x| x.is_finite()).collect());
    let out = json!({
        "inputs": traces.len(),
        "rejected_inputs": rejected,
        "masks": masks,
        "replays": args.replays.max(1),
        "tokenizer": l.tokenizer_name(),
        "compile_ms": l.compile_ms(),
        "open_us": l.open_us.map(|u| u.round()),
        "mask_us": timed(mask_first),
        "mask_us_min_of_replays": timed(mask_best),
        "commit_us": timed(commit_first),
        "commit_us_min_of_replays": timed(commit_best),
        "mask_fallbacks": fallbacks,
        "masks_with_undecided": masks_with_undecided,
        "undecided_tokens_committed": undecided,
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "{} inputs, {} masks, {} replays, tokenizer {}",
            traces.len(),
            masks,
            out["replays"],
            out["tokenizer"]
        );
        for key in ["mask_us", "mask_us_min_of_replays", "commit_us", "commit_us_min_of_replays"] {
            let p = &out[key];
            println!(
                "  {key:<26} p50 {:>7} p90 {:>7} p99 {:>7} p99.9 {:>8} max {:>9} mean {:>7}",
                p["p50"], p["p90"], p["p99"], p["p999"], p["max"], p["mean"]
            );
        }
        if fallbacks > 0 || masks_with_undecided > 0 {
            println!(
                "  slow paths: {fallbacks} masks by the reference mask, {masks_with_undecided} masks with UNDECIDED \
                 tokens ({undecided} tokens decided by committing them)"
            );
        }
    }
    Ok(0)
}
