//! `dwac`: the command-line tool (DESIGN.md §9). Exit codes: 0 success, 1 a check failed,
//! 2 bad input or usage.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use dwac_compile::{
    compile_engine_with_progress, parse_source_with, regex_grammar, CompileError, CompileStats, EngineOptions,
    SourceKind,
};
use dwac_grammar::schema::{Draft, SchemaOptions, Whitespace};
use dwac_grammar::GrammarError;
use dwac_runtime::{CommitError, Engine, Matcher};
use dwac_vocab::Tokenizer;
use serde_json::json;

#[derive(Parser)]
#[command(name = "dwac", version, about = "Ahead-of-time compiled grammar-constrained decoding masks")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Compile a grammar or JSON Schema with a tokenizer and report the Parser DWA (no artifact
    /// is written yet).
    Compile(CompileArgs),
    /// Judge texts against a grammar: every token must be in the mask, and the end token at the end.
    Check(CheckArgs),
    /// Time every mask and commit on texts.
    Bench(BenchArgs),
    /// Print the mask (allowed tokens) after a prefix.
    Mask(MaskArgs),
}

#[derive(Args)]
struct SourceArgs {
    /// Grammar source: `.lark` or `.gbnf` grammar, or a `.json` JSON Schema (compiled in memory).
    input: Option<PathBuf>,
    /// Use a single regular expression as the grammar instead of INPUT.
    #[arg(long, conflicts_with = "input")]
    regex: Option<String>,
    /// HF `tokenizer.json`; default: the embedded GPT-2 tokenizer.
    #[arg(long)]
    tokenizer: Option<PathBuf>,
    /// JSON Schema: drop keywords that cannot be honoured exactly (each one is listed as a
    /// warning) instead of refusing the schema. The mask is then looser than the schema.
    #[arg(long)]
    lenient: bool,
    /// JSON Schema: no whitespace between tokens (default: any RFC 8259 whitespace).
    #[arg(long)]
    compact: bool,
    /// JSON Schema: the dialect when `$schema` names none (default 2020-12).
    #[arg(long, value_parser = ["draft4", "draft6", "draft7", "2019-09", "2020-12"])]
    draft: Option<String>,
    /// Give up compiling after this many seconds (a clear error, exit 2).
    #[arg(long, default_value_t = 600.0)]
    max_seconds: f64,
    /// Give up compiling when the process's resident memory exceeds this many MiB (exit 2).
    #[arg(long, default_value_t = 8192)]
    max_memory_mb: u64,
}

#[derive(Args)]
struct CompileArgs {
    #[command(flatten)]
    source: SourceArgs,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct CheckArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// One text to check (the whole file).
    #[arg(long, conflicts_with = "jsonl")]
    text: Option<PathBuf>,
    /// JSON lines `{"text": "...", "valid": true|false}` (`valid` optional).
    #[arg(long)]
    jsonl: Option<PathBuf>,
    /// Also compute the reference mask at every step and compare it with the mask (slow).
    #[arg(long)]
    reference: bool,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct BenchArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// JSON lines `{"text": "..."}`: the texts whose tokens are replayed.
    #[arg(long)]
    jsonl: PathBuf,
    /// Replays of every text; per step, the minimum over them is reported next to the first pass.
    #[arg(long, default_value_t = 3)]
    replays: usize,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct MaskArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// Raw text committed before the mask is computed.
    #[arg(long, default_value = "")]
    prefix: String,
    /// How many allowed tokens to list (human output).
    #[arg(long, default_value_t = 40)]
    limit: usize,
    #[arg(long)]
    json: bool,
}

struct Loaded {
    engine: Arc<Engine>,
    tokenizer: Tokenizer,
    stats: CompileStats,
}

/// `file:line:col: message` and the source snippet, for a located diagnostic.
fn at(file: &dyn std::fmt::Display, e: &GrammarError) -> String {
    if e.line == 0 {
        format!("{file}: {}", e.message)
    } else {
        format!("{file}:{}:{}: {}\n{}", e.line, e.column, e.message, e.snippet)
    }
}

/// A compile error, located in `file` where it has a location.
fn located(file: &dyn std::fmt::Display, e: &CompileError) -> String {
    match e {
        CompileError::Grammar(g) | CompileError::EmptyLanguage(g) => at(file, g),
        other => format!("{file}: {other}"),
    }
}

/// Peak resident memory of this process (MiB), from `/proc/self/status` where there is one.
fn peak_rss_mb() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn current_rss_mb() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Ends the process with a clear error when the compilation overruns its time or memory budget
/// (instead of an OOM kill), until dropped.
struct Watchdog {
    done: Arc<AtomicBool>,
}

impl Watchdog {
    fn start(what: String, max_seconds: f64, max_memory_mb: u64) -> Watchdog {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let t0 = Instant::now();
        std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                if flag.load(Ordering::Relaxed) {
                    return;
                }
                if t0.elapsed().as_secs_f64() > max_seconds {
                    eprintln!("error: {what}: compilation exceeded its time budget of {max_seconds} s (--max-seconds)");
                    std::process::exit(2);
                }
                if current_rss_mb().is_some_and(|m| m > max_memory_mb as f64) {
                    eprintln!(
                        "error: {what}: compilation exceeded its memory budget of {max_memory_mb} MiB (--max-memory-mb)"
                    );
                    std::process::exit(2);
                }
            }
        });
        Watchdog { done }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

fn load(src: &SourceArgs, quiet: bool) -> Result<Loaded> {
    let tokenizer = match &src.tokenizer {
        Some(p) => Tokenizer::from_file(p).with_context(|| format!("loading tokenizer {}", p.display()))?,
        None => Tokenizer::default_embedded().context("loading the embedded default tokenizer")?,
    };
    let what = src.input.as_ref().map_or_else(|| "--regex".to_string(), |p| p.display().to_string());
    let grammar = match (&src.input, &src.regex) {
        (_, Some(re)) => regex_grammar(re),
        (Some(path), None) => {
            let kind = SourceKind::from_path(path).with_context(|| {
                format!("{}: unknown input kind (expected .lark, .gbnf or a .json schema)", path.display())
            })?;
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            let opts = SchemaOptions {
                whitespace: if src.compact { Whitespace::Compact } else { Whitespace::Flexible },
                lenient: src.lenient,
                default_draft: src.draft.as_deref().map(|d| match d {
                    "draft4" => Draft::Draft4,
                    "draft6" => Draft::Draft6,
                    "draft7" => Draft::Draft7,
                    "2019-09" => Draft::Draft2019,
                    _ => Draft::Draft2020,
                }),
            };
            let (g, warnings) =
                parse_source_with(kind, &text, &opts).map_err(|e| anyhow::anyhow!(located(&path.display(), &e)))?;
            for w in warnings {
                eprintln!("warning: {}: {w}", path.display());
            }
            g
        }
        (None, None) => bail!("give a grammar file or --regex PATTERN"),
    };
    let is_schema = src.input.as_deref().and_then(SourceKind::from_path) == Some(SourceKind::JsonSchema);
    let _watchdog = Watchdog::start(what.clone(), src.max_seconds, src.max_memory_mb);
    // A progress bar over the Parser DWA's lexer states, shown once the build has run a second.
    let bar = indicatif::ProgressBar::hidden();
    bar.set_style(
        indicatif::ProgressStyle::with_template("compiling {bar:40} {pos}/{len} lexer states {elapsed}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let t0 = Instant::now();
    let mut shown = false;
    let mut progress = |done: u64, total: u64| {
        if !quiet && !shown && t0.elapsed() > Duration::from_secs(1) {
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            shown = true;
        }
        bar.set_length(total);
        bar.set_position(done);
    };
    let result =
        compile_engine_with_progress(&grammar, tokenizer.vocab().clone(), &EngineOptions::default(), &mut progress);
    bar.finish_and_clear();
    let (engine, stats) = result.map_err(|e| match &e {
        CompileError::EmptyLanguage(g) if is_schema => {
            anyhow::anyhow!("{what}: no JSON value satisfies this schema ({})", g.message)
        }
        _ => anyhow::anyhow!(located(&what, &e)),
    })?;
    for w in &stats.warnings {
        eprintln!("warning: {}", at(&what, &w.0));
    }
    Ok(Loaded { engine: Arc::new(engine), tokenizer, stats })
}

struct Item {
    text: String,
    valid: Option<bool>,
}

fn read_jsonl(p: &Path) -> Result<Vec<Item>> {
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

fn read_items(args: &CheckArgs) -> Result<Vec<Item>> {
    if let Some(p) = &args.text {
        let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
        return Ok(vec![Item { text, valid: None }]);
    }
    let Some(p) = &args.jsonl else { bail!("give --text FILE or --jsonl FILE") };
    read_jsonl(p)
}

fn bit(mask: &[u32], v: u32) -> bool {
    mask[(v / 32) as usize] >> (v % 32) & 1 == 1
}

fn mask_stats_json(stats: &CompileStats) -> serde_json::Value {
    match &stats.mask {
        Some(m) => json!({
            "dwa_states": m.dwa_states,
            "max_lookback": if m.max_lookback == u32::MAX { json!("unbounded") } else { json!(m.max_lookback) },
            "undecided_tokens": m.undecided_tokens,
            "token_classes": m.token_classes,
            "token_sets": m.token_sets,
            "lexer_states_with_dwa": m.lexer_states_with_dwa,
            "lexer_states_over_budget": m.lexer_states_over_budget,
            "slowest_lexer_state_ms": (m.slowest_lexer_state_ms * 10.0).round() / 10.0,
            "carried_inhibitors": m.carried_inhibitors,
            "dwa_build_ms": (m.build_ms * 10.0).round() / 10.0,
        }),
        None => json!(null),
    }
}

fn compile(args: CompileArgs) -> Result<u8> {
    let l = load(&args.source, args.json)?;
    let s = &l.stats;
    let mut out = json!({
        "input": args.source.input.as_ref().map(|p| p.display().to_string()),
        "tokenizer": l.tokenizer.name(),
        "vocab_size": l.engine.vocab().len(),
        "artifact": null,
        "bytes": null,
        "compile_ms": (s.compile_ms * 10.0).round() / 10.0,
        "peak_rss_mb": peak_rss_mb().map(|m| (m * 10.0).round() / 10.0),
        "terminals": s.terminals,
        "lexer_states": s.lexer_states,
        "lr_states": s.lr_states,
        "lr_conflicts": s.lr_conflicts,
        "warnings": s.warnings.len(),
    });
    if let (Some(o), serde_json::Value::Object(m)) = (out.as_object_mut(), mask_stats_json(s)) {
        o.extend(m);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "{}: {} tokens ({}), {} lexer states, {} LR states; Parser DWA: {} states, max lookback {}; {} ms, peak {} MiB (no artifact is written yet)",
            out["input"].as_str().unwrap_or("--regex"),
            out["vocab_size"],
            out["tokenizer"].as_str().unwrap_or(""),
            out["lexer_states"],
            out["lr_states"],
            out["dwa_states"],
            out["max_lookback"],
            out["compile_ms"],
            out["peak_rss_mb"]
        );
        if let Some(m) = &s.mask {
            if m.undecided_tokens > 0 {
                println!(
                    "note: {} (lexer state, token) pairs are decided at run time by committing the token (exact, slower); {} lexer states ran over the automaton budget",
                    m.undecided_tokens, m.lexer_states_over_budget
                );
            }
        }
    }
    Ok(0)
}

fn check(args: CheckArgs) -> Result<u8> {
    let items = read_items(&args)?;
    let l = load(&args.source, args.json)?;
    let eos = l.engine.vocab().eos.first().copied();
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
        let tokens = l.tokenizer.encode(&item.text).with_context(|| format!("encoding input {idx}"))?;
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
        "compile_ms": l.stats.compile_ms,
        "tokenizer": l.tokenizer.name(),
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

/// p50/p90/p99/p99.9/max/mean of microsecond timings.
fn percentiles(mut v: Vec<f64>) -> serde_json::Value {
    if v.is_empty() {
        return json!(null);
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let q = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    let r = |x: f64| (x * 100.0).round() / 100.0;
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    json!({"p50": r(q(0.5)), "p90": r(q(0.9)), "p99": r(q(0.99)), "p999": r(q(0.999)), "max": r(q(1.0)), "mean": r(mean)})
}

fn bench(args: BenchArgs) -> Result<u8> {
    let items = read_jsonl(&args.jsonl)?;
    let l = load(&args.source, args.json)?;
    let traces: Vec<Vec<u32>> = items
        .iter()
        .enumerate()
        .map(|(i, it)| l.tokenizer.encode(&it.text).with_context(|| format!("encoding input {i}")))
        .collect::<Result<_>>()?;
    let steps: usize = traces.iter().map(Vec::len).sum();
    let masks = steps + traces.len();
    let (mut mask_first, mut mask_best) = (vec![f64::INFINITY; masks], vec![f64::INFINITY; masks]);
    let (mut commit_first, mut commit_best) = (vec![f64::INFINITY; steps], vec![f64::INFINITY; steps]);
    let mut buf = vec![0u32; l.engine.vocab().len().div_ceil(32)];
    let mut rejected = 0;
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
                    m.fill_mask(&mut buf)?;
                    let us = s.elapsed().as_secs_f64() * 1e6;
                    if r == 0 {
                        mask_first[km] = us;
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
        "tokenizer": l.tokenizer.name(),
        "compile_ms": (l.stats.compile_ms * 10.0).round() / 10.0,
        "open_us": null,
        "mask_us": timed(mask_first),
        "mask_us_min_of_replays": timed(mask_best),
        "commit_us": timed(commit_first),
        "commit_us_min_of_replays": timed(commit_best),
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
    }
    Ok(0)
}

fn escape(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

fn mask(args: MaskArgs) -> Result<u8> {
    let l = load(&args.source, args.json)?;
    let mut m = Matcher::new(l.engine.clone());
    if let Err(e) = m.commit_bytes(args.prefix.as_bytes()) {
        bail!("the prefix is rejected by the grammar: {e}");
    }
    let allowed = m.allowed();
    let source = if m.mask_fallbacks() > 0 { "reference" } else { "dwa" };
    let vocab = l.engine.vocab();
    let eos_allowed = vocab.eos.iter().any(|e| allowed.binary_search(e).is_ok());
    if args.json {
        let tokens: Vec<_> = allowed
            .iter()
            .map(|&v| json!({"id": v, "bytes": escape(vocab.token_bytes(v).unwrap_or_default())}))
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "prefix": args.prefix,
                "vocab_size": vocab.len(),
                "allowed": allowed.len(),
                "eos_allowed": eos_allowed,
                "tokens": tokens,
                "source": source,
            }))?
        );
    } else {
        println!(
            "after {:?}: {} of {} tokens allowed (end token {}), {} mask",
            args.prefix,
            allowed.len(),
            vocab.len(),
            if eos_allowed { "allowed" } else { "not allowed" },
            if source == "dwa" { "Parser DWA" } else { "reference" }
        );
        for &v in allowed.iter().take(args.limit) {
            println!("  {v:>7}  {}", escape(vocab.token_bytes(v).unwrap_or_default()));
        }
        if allowed.len() > args.limit {
            println!("  ... and {} more (--limit)", allowed.len() - args.limit);
        }
    }
    Ok(0)
}

fn run() -> Result<u8> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Compile(a) => compile(a),
        Cmd::Check(a) => check(a),
        Cmd::Bench(a) => bench(a),
        Cmd::Mask(a) => mask(a),
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
