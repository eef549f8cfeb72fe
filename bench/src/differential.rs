//! `cargo dwac-bench differential`: the Parser DWA mask against the reference mask at every step of
//! every MaskBench valid instance (and the end-of-text mask), for several tokenizers.
//!
//! The reference mask is a function of the matcher's configuration alone (per thread: lexer
//! state, carried inhibitors and stacks as LR-state sequences; `Matcher::configuration_key`), so
//! it is computed once per distinct configuration and remembered as a 128-bit hash; every step's
//! DWA mask is compared with it. A step whose hash differs is recomputed in full and reported.
//!
//! Every engine is served from its artifact (written with the artifact writer, opened with
//! `Artifact::from_bytes`), so the masks compared are the ones a server reads from the
//! artifact's zero-copy tables.
//!
//! With `--large DIR` it runs the large schemas of DIR that have valid instances
//! (`schemas/large`: the tool-calling ones) the same way. With `--schemas N` it runs the
//! MaskBench schemas instead (each compiled on its own, over its
//! valid instances; `--schemas 0` for all of them), and with `--schema-list FILE` only those
//! it names.

use std::time::Instant;

use std::sync::Arc;

use anyhow::{Context, Result};
use dwac_compile::artifact::{artifact_bytes, SourceInfo, TokenizerInfo};
use dwac_compile::CompileStats;
use dwac_runtime::{Artifact, Engine};
use dwac_testdata::{json_dumps, maskbench_instances};
use dwac_tests::differential::differential;
use dwac_tests::engine_from_file;
use serde_json::json;

#[derive(clap::Args)]
pub struct Args {
    /// Grammar (repository-relative).
    #[arg(long, default_value = "grammars/json.lark")]
    pub grammar: String,
    /// Tokenizers (names under ../shared/data/tokenizers or paths); repeat the flag.
    #[arg(long = "tokenizer", default_values_t = ["gpt2".to_string(), "qwen3".to_string(), "deepseek-r1".to_string(), "phi-3.5-mini".to_string()])]
    pub tokenizers: Vec<String>,
    /// Use only the first N instances.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Run the MaskBench schemas (first N of each of Glaiveai2K and Github_easy; 0: all)
    /// over their valid instances instead of the grammar.
    #[arg(long)]
    pub schemas: Option<usize>,
    /// With `--schemas`: only the schemas named in this file (one name per line, e.g.
    /// `o21456` or `Github_easy---o21456`; `#` starts a comment).
    #[arg(long)]
    pub schema_list: Option<String>,
    /// Run the large schemas of this folder that have valid instances (e.g. `schemas/large`).
    #[arg(long)]
    pub large: Option<String>,
    /// Run the grammars without a lexer of the GBNF bench workload (llama.cpp's, GBNF from
    /// its JSON-Schema converter, ours) over their texts instead.
    #[arg(long)]
    pub gbnf: bool,
    /// Run the character-level Lark grammars of the shared collection over their texts
    /// (`tests/data/lark-chars`) instead.
    #[arg(long)]
    pub lark_chars: bool,
    /// Build every lexer state's automaton by backward saturation alone (work budget 0).
    #[arg(long)]
    pub saturate_only: bool,
}

/// The engine options of a run (`--saturate-only`: see [`Args::saturate_only`]).
fn compiler(args: &Args) -> dwac_compile::Compiler {
    let mut c = dwac_compile::Compiler::default();
    if args.saturate_only {
        c.engine.mask_options.work_per_lexer_state = 0;
    }
    c
}

/// The engine a server would get: `engine` written as an artifact and opened again.
fn via_artifact(engine: &Engine, tok: &dwac_vocab::Tokenizer) -> Result<Arc<Engine>> {
    let src = SourceInfo { name: "differential".into(), kind: "lark", text: String::new() };
    let info = TokenizerInfo { name: tok.name().into(), fingerprint: tok.fingerprint() };
    let bytes = artifact_bytes(engine, &src, &info, &CompileStats::default(), &Default::default(), &Default::default());
    let art = Artifact::from_bytes(&bytes).context("opening the artifact")?;
    Ok(art.engine().clone())
}

pub fn run(args: Args) -> Result<()> {
    if args.gbnf {
        return run_grammars(&args, dwac_compile::SourceKind::Gbnf, crate::bench::gbnf_sources()?);
    }
    if args.lark_chars {
        return run_grammars(&args, dwac_compile::SourceKind::Lark, crate::bench::lark_chars_sources()?);
    }
    if args.large.is_some() || args.schemas.is_some() {
        let n = args.schemas.unwrap_or(0);
        return run_schemas(&args, (n > 0).then_some(n));
    }
    let mut reports = Vec::new();
    let mut failed = false;
    for name in &args.tokenizers {
        let tok = crate::util::tokenizer(name)?;
        let t0 = Instant::now();
        let engine = via_artifact(&engine_from_file(&args.grammar, tok.vocab().clone()), &tok)?;
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
            "undecided_tokens_committed": r.undecided,
            "masks_with_undecided": r.undecided_masks,
            "reference_bits_at_most": r.reference_bits_at_most,
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
            println!("  {}", r.slow_path_summary());
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

/// Every MaskBench schema (Glaiveai2K + Github_easy) compiled for each tokenizer, over its valid
/// instances (keys in schema order, `json.dumps` spacing, as `schema-bench` judges them).
/// Schemas the compiler refuses are counted, not compared.
/// The large schemas of `dir` with valid instances, as MaskBench-like entries (texts in the
/// schema's property order).
fn large_schemas(dir: &str) -> Result<Vec<crate::schema_bench::Schema>> {
    let dir = dwac_testdata::repo_root().join(dir);
    let mut out = Vec::new();
    for (name, schema, instances) in dwac_testdata::large_schemas(&dir)? {
        if instances.is_empty() {
            continue;
        }
        let texts: Vec<String> =
            instances.iter().map(|i| json_dumps(&dwac_grammar::schema::order_instance(&schema, i))).collect();
        let valid = vec![true; texts.len()];
        out.push(crate::schema_bench::Schema { name, split: "large", schema, texts, valid });
    }
    Ok(out)
}

fn run_schemas(args: &Args, per_split: Option<usize>) -> Result<()> {
    use dwac_grammar::schema::{compile_schema, SchemaOptions};
    let (mut schemas, _) = match &args.large {
        Some(dir) => (large_schemas(dir)?, 0),
        None => crate::schema_bench::load(per_split, None)?,
    };
    if let Some(file) = &args.schema_list {
        let text = std::fs::read_to_string(file).with_context(|| format!("reading {file}"))?;
        let names: Vec<&str> =
            text.lines().map(|l| l.split('#').next().unwrap_or("").trim()).filter(|l| !l.is_empty()).collect();
        let known = |n: &str| schemas.iter().any(|s| s.name == n || s.name.ends_with(&format!("---{n}")));
        if let Some(missing) = names.iter().find(|n| !known(n)) {
            anyhow::bail!("{file}: no MaskBench schema named {missing}");
        }
        schemas.retain(|s| names.iter().any(|n| s.name == *n || s.name.ends_with(&format!("---{n}"))));
    }
    let mut reports = Vec::new();
    let mut failed = false;
    for name in &args.tokenizers {
        let tok = crate::util::tokenizer(name)?;
        let bar = crate::util::bar(schemas.len() as u64, args.json);
        bar.set_message(tok.name().to_string());
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let t0 = Instant::now();
        let (mut compiled, mut refused, mut steps, mut mismatches, mut fallbacks, mut rejected) =
            (0, 0, 0u64, 0u64, 0u64, 0);
        let (mut undecided, mut undecided_masks, mut reference_bits) = (0u64, 0u64, 0u64);
        let mut examples = Vec::new();
        for s in &schemas {
            bar.inc(1);
            let engine =
                compile_schema(&s.schema, &SchemaOptions::default()).map_err(|e| e.to_string()).and_then(|sg| {
                    compiler(args).compile_engine(&sg.grammar, tok.vocab().clone()).map_err(|e| e.to_string())
                });
            let Ok((engine, _)) = engine else {
                refused += 1;
                continue;
            };
            compiled += 1;
            let engine = via_artifact(&engine, &tok)?;
            let traces: Vec<Vec<u32>> = s
                .texts
                .iter()
                .zip(&s.valid)
                .filter(|(_, v)| **v)
                .map(|(t, _)| tok.encode(t))
                .collect::<Result<_, _>>()?;
            let r = differential(&engine, &traces, threads, &mut |_| {});
            steps += r.steps_compared;
            mismatches += r.mismatches;
            fallbacks += r.fallbacks;
            rejected += r.rejected_traces;
            undecided += r.undecided;
            undecided_masks += r.undecided_masks;
            reference_bits += r.reference_bits_at_most;
            for (t, k, tok) in r.rejected.iter().take(2) {
                if examples.len() < 20 {
                    examples.push(json!({"schema": s.name, "rejected_instance": t, "step": k, "token": tok}));
                }
            }
            for (i, k, d) in r.examples.iter().take(2) {
                if examples.len() < 20 {
                    examples.push(json!({"schema": s.name, "instance": i, "step": k, "tokens": d}));
                }
            }
        }
        bar.finish_and_clear();
        failed |= mismatches > 0 || fallbacks > 0 || rejected > 0;
        let report = json!({
            "tokenizer": tok.name(),
            "schemas": schemas.len(),
            "compiled": compiled,
            "refused": refused,
            "steps_compared": steps,
            "mask_mismatches": mismatches,
            "fallbacks": fallbacks,
            "rejected_traces": rejected,
            "undecided_tokens_committed": undecided,
            "masks_with_undecided": undecided_masks,
            "reference_bits_at_most": reference_bits,
            "examples": examples,
            "elapsed_s": (t0.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        });
        if !args.json {
            println!(
                "{}: {} schemas ({} compiled, {} refused), {} steps compared, {} mismatches, {} rejected traces ({:.0} s)",
                tok.name(),
                schemas.len(),
                compiled,
                refused,
                steps,
                mismatches,
                rejected,
                t0.elapsed().as_secs_f64()
            );
            println!(
                "  {undecided} UNDECIDED tokens decided by commit in {undecided_masks} masks, {fallbacks} masks fell \
                 back to the reference; at most {reference_bits} bits compared reference against reference"
            );
            for e in &examples {
                println!("  mismatch {e}");
            }
        }
        reports.push(report);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&json!({ "schema_runs": reports }))?);
    }
    anyhow::ensure!(
        !failed,
        "the DWA mask differs from the reference mask on a schema (or a valid instance was rejected, or a mask fell back)"
    );
    Ok(())
}

/// Grammars without a lexer (the GBNF workload's, lexer inference on, or the collection's
/// character-level Lark ones) over their texts, per tokenizer: masks compared at every step,
/// rejected texts, UNDECIDED pairs at compile time and tokens decided at run time.
fn run_grammars(
    args: &Args,
    kind: dwac_compile::SourceKind,
    sources: Vec<(String, String, Vec<String>)>,
) -> Result<()> {
    let what = if kind == dwac_compile::SourceKind::Gbnf { "GBNF" } else { "character-level Lark" };
    let mut failed = false;
    let mut reports = Vec::new();
    for name in &args.tokenizers {
        let tok = crate::util::tokenizer(name)?;
        let bar = crate::util::bar(sources.len() as u64, args.json);
        bar.set_message(tok.name().to_string());
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let t0 = Instant::now();
        let (mut grammars, mut steps, mut mismatches, mut rejected, mut undecided_pairs) = (0, 0u64, 0u64, 0, 0usize);
        let (mut undecided_run, mut fallbacks) = (0u64, 0u64);
        let mut problems = Vec::new();
        for (id, text, texts) in &sources {
            bar.inc(1);
            let compiled = dwac_compile::parse_source(kind, text)
                .and_then(|g| compiler(args).compile_engine(&g, tok.vocab().clone()));
            let (engine, stats) = match compiled {
                Ok(x) => x,
                Err(e) => {
                    problems.push(json!({"grammar": id, "error": e.to_string()}));
                    continue;
                }
            };
            grammars += 1;
            undecided_pairs += stats.mask.as_ref().map_or(0, |m| m.undecided_tokens);
            let engine = via_artifact(&engine, &tok)?;
            let traces: Vec<Vec<u32>> = texts.iter().map(|t| tok.encode(t)).collect::<Result<_, _>>()?;
            let r = differential(&engine, &traces, threads, &mut |_| {});
            steps += r.steps_compared;
            mismatches += r.mismatches;
            rejected += r.rejected_traces;
            undecided_run += r.undecided;
            fallbacks += r.fallbacks;
            if r.mismatches > 0 || r.rejected_traces > 0 || r.fallbacks > 0 {
                problems.push(json!({"grammar": id, "mismatches": r.mismatches, "rejected": r.rejected,
                                     "examples": r.examples.iter().take(2).map(|(i, k, d)| json!({"text": i, "step": k, "tokens": d})).collect::<Vec<_>>()}));
            }
        }
        bar.finish_and_clear();
        failed |= mismatches > 0 || rejected > 0 || fallbacks > 0;
        let report = json!({
            "tokenizer": tok.name(), "grammars": sources.len(), "compiled": grammars, "steps_compared": steps,
            "mask_mismatches": mismatches, "rejected_traces": rejected, "fallbacks": fallbacks,
            "undecided_pairs_at_compile": undecided_pairs, "undecided_tokens_committed": undecided_run,
            "problems": problems, "elapsed_s": (t0.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        });
        if !args.json {
            println!(
                "{}: {} {what} grammars ({} compiled), {} steps compared, {} mismatches, {} rejected texts, {} UNDECIDED \
                 pairs at compile time, {} tokens decided at run time ({:.0} s)",
                tok.name(), sources.len(), grammars, steps, mismatches, rejected, undecided_pairs, undecided_run,
                t0.elapsed().as_secs_f64()
            );
            for p in report["problems"].as_array().into_iter().flatten() {
                println!("  {p}");
            }
        }
        reports.push(report);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&json!({ "gbnf_runs": reports }))?);
    }
    anyhow::ensure!(
        !failed,
        "the DWA mask differs from the reference mask on a {what} grammar (or a text was rejected)"
    );
    Ok(())
}
