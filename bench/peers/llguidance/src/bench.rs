//! Bench mode (`dwac-peer-llguidance bench ...`): mask/commit latency on dwac's token ids.
//!
//! The command line, the job loop and the result's common fields are `dwac-peer-common`'s (see
//! there; no warm-up here, `--warmup` is ignored); a result line holds per-step times of the
//! first replay and the minimum over replays, counters of rejected traces, trace tokens missing
//! from the mask and final masks without an EOS bit. Job kinds: "json", "schema", "tags".
//!
//! How llguidance (1.x public API, nothing copied) is driven here:
//! - token environment: `ByteTokenizer::from_file(tokenizer.json)`, EOS set with
//!   `set_eos_tokens(eos)` (`--eos`, the driver's, the same for every engine),
//!   `.into_tok_env(None)` (mask size = the tokenizer's id count); one
//!   `ParserFactory::new(&env, InferenceCapabilities::default(), &SlicedBiasComputer::json_slices())`
//!   for the run (as in the schema-bench worker), default `ParserLimits`, logging off.
//! - grammar: kind "schema" → `TopLevelGrammar::from_json_schema(schema)`; kind "json" →
//!   `TopLevelGrammar::from_json_schema(json!({}))` (llguidance's "any JSON value"); default
//!   `JsonCompileOptions` (flexible whitespace, `,`/`:` separators, not lenient). Kind "tags" →
//!   `TopLevelGrammar::from_lark(job.lark)` (the structural tag in llguidance's Lark, made by
//!   dwac-bench); if refused, a tool whose schema it calls unsatisfiable is left out and it is compiled
//!   again, and a keyword it does not implement switches to `job.lark_lenient` (both reported:
//!   `unsatisfiable_rules_dropped`, `lenient` + `exact_form_refused`, and in words in `note`,
//!   which the report lists). Kind "grammar" is not run.
//! - compile: `factory.create_parser(grammar)`, timed as `compile_ms` (`compile_cpu_ms`: the
//!   process's CPU time over it, `getrusage`, every thread). The lexer is built
//!   lazily, so `ttfm_ms` = `compile_ms` + the first `compute_mask` on a throwaway
//!   `deep_clone` (the template parser stays untouched).
//! - per trace: `Matcher::new(Ok(parser.clone()))` (untimed; a plain clone shares the lazily
//!   built lexer state with the template, as matchers of one compiled grammar do), then per
//!   token `matcher.compute_mask_or_eos()` (timed; the Rust `Matcher` has no `_into` variant,
//!   so the timed call includes allocating the returned `SimpleVob`; `_or_eos` is
//!   `compute_mask` plus returning the EOS set once the parser stopped itself), the trace
//!   token's bit is checked, `matcher.consume_token(id)` (timed; `Err` = rejected, trace
//!   stopped); after the last token one more timed mask and the EOS bit check.
//!   llguidance forces bytes by default: where the grammar forces bytes its mask is the
//!   single canonical token of those bytes, so a trace that tokenizes forced text differently
//!   shows up in `token_not_in_mask` (the commit itself is still checked by the grammar).
//! - `--popcount` adds `mask_popcount` (allowed tokens per mask of the first replay, counted
//!   outside the timed calls), to compare mask sizes across engines.
//! - `peak_rss_mb`: VmHWM of /proc/self/status after the job; the high-water mark is reset
//!   (`5` into /proc/self/clear_refs) before each job.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use anyhow::{Context, Result};
use dwac_peer_common::{job_traces, panic_message, parse_args, process_cpu_ms, replay, reset_peak_rss, run_jobs, Pass};
use llguidance::api::TopLevelGrammar;
use llguidance::earley::SlicedBiasComputer;
use llguidance::toktrie::InferenceCapabilities;
use llguidance::{Matcher, ParserFactory, TokenParser};
use serde_json::{json, Value};

fn run_pass(parser: &TokenParser, traces: &[Vec<u32>], eos: &[u32], popcount: bool) -> Pass {
    let mut p = Pass::default();
    for trace in traces {
        p.trace(|p| {
            let mut m = Matcher::new(Ok(parser.clone()));
            for &tok in trace {
                let t0 = Instant::now();
                let mask = m.compute_mask_or_eos();
                let dt = t0.elapsed();
                p.mask_us.push(dt.as_secs_f64() * 1e6);
                if popcount {
                    p.popcount.push(mask.as_ref().map_or(0, |v| v.num_set()));
                }
                match &mask {
                    Ok(v) if v.is_allowed(tok) => {}
                    Ok(_) => p.not_in_mask += 1,
                    Err(e) => {
                        p.not_in_mask += 1;
                        p.errors.push(format!("mask: {e}"));
                    }
                }
                drop(mask);
                let t1 = Instant::now();
                let r = m.consume_token(tok);
                let dt = t1.elapsed();
                p.commit_us.push(dt.as_secs_f64() * 1e6);
                if let Err(e) = r {
                    p.rejected += 1;
                    p.errors.push(format!("commit: {e}"));
                    return;
                }
            }
            let t0 = Instant::now();
            let mask = m.compute_mask_or_eos();
            let dt = t0.elapsed();
            p.mask_us.push(dt.as_secs_f64() * 1e6);
            if popcount {
                p.popcount.push(mask.as_ref().map_or(0, |v| v.num_set()));
            }
            match &mask {
                Ok(v) if eos.iter().any(|&e| v.is_allowed(e)) => {}
                Ok(_) => p.eos_missing += 1,
                Err(e) => {
                    p.eos_missing += 1;
                    p.errors.push(format!("final mask: {e}"));
                }
            }
        });
    }
    p
}

fn run_job(factory: &ParserFactory, eos: &[u32], replays: usize, popcount: bool, job: &Value) -> Value {
    let id = job["id"].clone();
    let kind = job["kind"].as_str().unwrap_or("schema");
    let mut lark = job["lark"].as_str().map(str::to_string);
    if kind == "grammar" || (kind == "tags" && lark.is_none()) {
        return json!({"id": id, "compiled": false, "compile_ms": 0.0,
                      "error": "no llguidance form of this grammar job (GBNF is run with dwac and XGrammar only)"});
    }
    let traces = job_traces(job);
    // A tags job llguidance refuses is compiled again, and the result says how: a tool whose
    // argument schema it proves unsatisfiable is left out (it adds nothing to the language), and
    // where it refuses a keyword it does not implement, the job's lenient form is compiled.
    let (mut refused, mut dropped) = (None, Vec::<String>::new());
    let (created, compile_ms, compile_cpu_ms) = loop {
        let grammar = match (kind, &lark) {
            ("json", _) => TopLevelGrammar::from_json_schema(json!({})),
            ("tags", Some(l)) => TopLevelGrammar::from_lark(l.clone()),
            _ => TopLevelGrammar::from_json_schema(job["schema"].clone()),
        };
        reset_peak_rss();
        let cpu0 = process_cpu_ms();
        let t0 = Instant::now();
        let created = catch_unwind(AssertUnwindSafe(|| factory.create_parser(grammar)));
        let (ms, cpu) = (t0.elapsed().as_secs_f64() * 1e3, process_cpu_ms() - cpu0);
        if let (Ok(Err(e)), Some(l)) = (&created, &lark) {
            let msg = e.to_string();
            if let Some(rule) = msg.contains("Unsatisfiable schema").then(|| failing_rule(&msg, l)).flatten() {
                lark = Some(drop_rule(l, &rule));
                dropped.push(rule);
                continue;
            }
            if let (None, Some(lenient)) = (&refused, job["lark_lenient"].as_str()) {
                refused = Some(msg.chars().take(300).collect::<String>());
                lark = Some(dropped.iter().fold(lenient.to_string(), |l, r| drop_rule(&l, r)));
                continue;
            }
        }
        break (created, ms, cpu);
    };
    let parser = match created {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => return json!({"id": id, "compiled": false, "compile_ms": compile_ms, "error": e.to_string()}),
        Err(p) => {
            return json!({"id": id, "compiled": false, "compile_ms": compile_ms, "error": format!("panic: {}", panic_message(&*p))})
        }
    };
    // Time to first mask: the lazily built lexer's first state, on a throwaway deep clone.
    let t1 = Instant::now();
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let mut m = Matcher::new(Ok(parser.deep_clone()));
        let _ = m.compute_mask();
    }));
    let ttfm_ms = compile_ms + t1.elapsed().as_secs_f64() * 1e3;
    let runs = replay(replays, popcount, |popcount| run_pass(&parser, &traces, eos, popcount));
    let mut r = json!({
        "id": id, "compiled": true, "compile_ms": compile_ms, "compile_cpu_ms": compile_cpu_ms, "ttfm_ms": ttfm_ms,
    });
    r.as_object_mut().expect("an object").extend(runs.fields(popcount));
    let mut note = Vec::new();
    if !dropped.is_empty() {
        r["unsatisfiable_rules_dropped"] = json!(dropped);
        note.push(format!("{} tool(s) it calls unsatisfiable left out (the same language)", dropped.len()));
    }
    if let Some(e) = refused {
        r["lenient"] = json!(true);
        r["exact_form_refused"] = json!(e);
        note.push("its exact form refused, run lenient (a keyword it does not implement ignored)".to_string());
    }
    if !note.is_empty() {
        r["note"] = json!(note.join("; "));
    }
    r
}

/// The rule of the Lark grammar `lark` at the line an llguidance error names (`at LINE(COL): …`).
fn failing_rule(msg: &str, lark: &str) -> Option<String> {
    let line: usize = msg.split("at ").nth(1)?.split('(').next()?.trim().parse().ok()?;
    let text = lark.lines().nth(line.checked_sub(1)?)?;
    let (name, _) = text.split_once(':')?;
    (name.starts_with("call_") && !name.contains(' ')).then(|| name.to_string())
}

/// `lark` without rule `name` (one line) and without it among the alternatives of `call`.
fn drop_rule(lark: &str, name: &str) -> String {
    let mut out = String::new();
    for line in lark.lines() {
        if line.starts_with(&format!("{name}:")) {
            continue;
        }
        if let Some(alts) = line.strip_prefix("call:") {
            let kept: Vec<&str> = alts.split('|').map(str::trim).filter(|a| *a != name).collect();
            out.push_str(&format!("call: {}\n", kept.join(" | ")));
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// `args` are the command-line arguments after `bench`.
pub fn main(args: &[String]) -> Result<()> {
    let args = parse_args(args, "llguidance", None)?;
    let eos = args.eos.clone();
    let t_setup = Instant::now();
    let mut bt = toktrie_hf_tokenizers::ByteTokenizer::from_file(&args.tokenizer)
        .with_context(|| format!("loading {}", args.tokenizer.display()))?;
    bt.set_eos_tokens(&eos);
    let env = bt.into_tok_env(None)?;
    let mut factory = ParserFactory::new(&env, InferenceCapabilities::default(), &SlicedBiasComputer::json_slices())?;
    factory.quiet();
    let setup_ms = t_setup.elapsed().as_secs_f64() * 1e3;
    let trie = env.tok_trie();
    let env = json!({"event": "env", "peer": "llguidance", "version": env!("DWAC_PEER_VERSION"),
               "vocab_size": trie.vocab_size(), "eos": trie.eos_tokens(), "python_overhead_ns": null,
               "setup_ms": setup_ms, "replays": args.replays,
               "language": {"json": "the `{}` schema, flexible whitespace (default JsonCompileOptions)",
                            "schema": "the schema, flexible whitespace (default JsonCompileOptions)",
                            "tags": "the job's `lark`: the structural tag in llguidance's Lark (`%json` of each tool's strict schema, added tokens as token references), flexible whitespace"}});
    run_jobs(&args, &env, |job| run_job(&factory, &eos, args.replays, args.popcount, job))
}
