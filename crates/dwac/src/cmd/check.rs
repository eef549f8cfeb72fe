//! `dwac check`: judge texts against a grammar (every token in the mask, the end token at the end).

use std::path::Path;

use anyhow::{bail, Context, Result};
use dwac_runtime::{CommitError, Matcher};
use serde_json::json;

use crate::args::CheckArgs;
use crate::load::load;
use crate::report::bit;

pub(crate) struct Item {
    pub(crate) text: String,
    pub(crate) valid: Option<bool>,
}

pub(crate) fn read_jsonl(p: &Path) -> Result<Vec<Item>> {
    let body = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    let mut items = Vec::new();
    for (i, line) in body.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(line).with_context(|| format!("{}:{}: not JSON", p.display(), i + 1))?;
        let Some(text) = v.get("text").and_then(|t| t.as_str()) else {
            bail!("{}:{}: missing string field \"text\"", p.display(), i + 1)
        };
        let valid = match v.get("valid") {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::Bool(b)) => Some(*b),
            Some(_) => bail!("{}:{}: \"valid\" must be true or false", p.display(), i + 1),
        };
        items.push(Item { text: text.to_string(), valid });
    }
    Ok(items)
}

pub(crate) fn read_items(args: &CheckArgs) -> Result<Vec<Item>> {
    if let Some(p) = &args.text {
        let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
        return Ok(vec![Item { text, valid: None }]);
    }
    let Some(p) = &args.jsonl else { bail!("give --text FILE or --jsonl FILE") };
    read_jsonl(p)
}

pub(crate) fn check(args: CheckArgs) -> Result<u8> {
    let items = read_items(&args)?;
    let l = load(&args.source, args.json)?;
    let eos = l.engine.vocab().eos().first().copied();
    let bar = indicatif::ProgressBar::new(items.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    if args.json {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let (mut accepted, mut rejected, mut wrong, mut steps, mut mismatches) = (0u64, 0u64, 0u64, 0u64, 0u64);
    // Steps where the mask and `commit` disagree on the sampled token (an engine bug).
    let mut disagreements = 0u64;
    let mut failures = Vec::new();
    let words = l.engine.vocab().len().div_ceil(32);
    let (mut mask, mut reference) = (vec![0u32; words], vec![0u32; words]);
    for (idx, item) in items.iter().enumerate() {
        bar.inc(1);
        let tokens = l.tokenizer()?.encode(&item.text).with_context(|| format!("encoding input {idx}"))?;
        let mut m = Matcher::new(l.engine.clone());
        let mut error: Option<CommitError> = None;
        for &tok in tokens.iter() {
            steps += 1;
            m.fill_mask(&mut mask)?;
            if args.reference {
                m.fill_reference_mask(&mut reference)?;
                if reference != mask {
                    mismatches += 1;
                }
            }
            let in_mask = bit(&mask, tok);
            let res = m.commit(tok);
            if in_mask != res.is_ok() {
                disagreements += 1;
            }
            match res {
                Ok(()) if in_mask => {}
                Ok(()) => {
                    error = Some(CommitError::Rejected { token: Some(tok), offset: m.position(), byte: None });
                    break;
                }
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        let mut ok = error.is_none();
        if ok {
            steps += 1;
            m.fill_mask(&mut mask)?;
            if args.reference {
                m.fill_reference_mask(&mut reference)?;
                if reference != mask {
                    mismatches += 1;
                }
            }
            let acc = eos.is_some_and(|e| bit(&mask, e));
            if acc != m.is_accepting() {
                disagreements += 1;
            }
            if !acc {
                error = Some(CommitError::Rejected { token: eos, offset: m.position(), byte: None });
                ok = false;
            }
        }
        if ok {
            accepted += 1;
        } else {
            rejected += 1;
        }
        let is_wrong = match item.valid {
            Some(v) => v != ok,
            None => !ok,
        };
        if is_wrong {
            wrong += 1;
            if failures.len() < 20 {
                failures.push(json!({
                    "index": idx,
                    "valid": item.valid,
                    "accepted": ok,
                    "error": error.as_ref().map(|e| e.to_string()),
                }));
            }
        }
    }
    bar.finish_and_clear();
    let mut out = json!({
        "inputs": items.len(),
        "accepted": accepted,
        "rejected": rejected,
        "wrong": wrong,
        "steps": steps,
        "mask_commit_disagreements": disagreements,
        "failures": failures,
        "compile_ms": l.compile_ms(),
        "open_us": l.open_us.map(|u| u.round()),
        "tokenizer": l.tokenizer_name(),
    });
    if args.reference {
        out["mask_mismatches"] = json!(mismatches);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "{} inputs: {accepted} accepted, {rejected} rejected, {wrong} wrong, {steps} steps{}",
            items.len(),
            if args.reference { format!(", {mismatches} mask mismatches") } else { String::new() }
        );
        for f in &failures {
            println!("  wrong: {f}");
        }
        if disagreements > 0 {
            println!("  ENGINE BUG: the mask and commit disagreed at {disagreements} steps");
        }
    }
    Ok(if wrong > 0 || mismatches > 0 || disagreements > 0 { 1 } else { 0 })
}
