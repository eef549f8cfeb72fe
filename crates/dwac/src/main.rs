//! `dwac`: the command-line tool (DESIGN.md §9). Exit codes: 0 success, 1 a check failed,
//! 2 bad input or usage.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use dwac_compile::{compile_engine, parse_source_with, regex_grammar, CompileError, CompileStats, SourceKind};
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
    /// Judge texts against a grammar: every token must be allowed, and the end token at the end.
    Check(CheckArgs),
    /// Print the mask (allowed tokens) after a prefix.
    Mask(MaskArgs),
}

#[derive(Args)]
struct SourceArgs {
    /// Grammar source: `.lark` or `.gbnf` (compiled in memory).
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
    /// Also compute the reference mask at every step and compare it with commit (slow).
    #[arg(long)]
    reference: bool,
    /// Machine-readable output.
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

fn load(src: &SourceArgs) -> Result<Loaded> {
    let tokenizer = match &src.tokenizer {
        Some(p) => Tokenizer::from_file(p).with_context(|| format!("loading tokenizer {}", p.display()))?,
        None => Tokenizer::default_embedded().context("loading the embedded default tokenizer")?,
    };
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
    let what = src.input.as_ref().map_or_else(|| "--regex".to_string(), |p| p.display().to_string());
    let is_schema = src.input.as_deref().and_then(SourceKind::from_path) == Some(SourceKind::JsonSchema);
    let (engine, stats) = compile_engine(&grammar, tokenizer.vocab().clone()).map_err(|e| match &e {
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

struct Item {
    text: String,
    valid: Option<bool>,
}

fn read_items(args: &CheckArgs) -> Result<Vec<Item>> {
    if let Some(p) = &args.text {
        let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
        return Ok(vec![Item { text, valid: None }]);
    }
    let Some(p) = &args.jsonl else { bail!("give --text FILE or --jsonl FILE") };
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

fn bits(mask: &[u32], v: u32) -> bool {
    mask[(v / 32) as usize] >> (v % 32) & 1 == 1
}

fn check(args: CheckArgs) -> Result<u8> {
    let items = read_items(&args)?;
    let l = load(&args.source)?;
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
    let mut failures = Vec::new();
    let mut mask = Vec::new();
    for (idx, item) in items.iter().enumerate() {
        bar.inc(1);
        let tokens = l.tokenizer.encode(&item.text).with_context(|| format!("encoding input {idx}"))?;
        let mut m = Matcher::new(l.engine.clone());
        let mut error: Option<CommitError> = None;
        for &tok in &tokens {
            steps += 1;
            let in_mask = if args.reference {
                mask.resize(m.mask_words(), 0);
                m.fill_reference_mask(&mut mask)?;
                Some(bits(&mask, tok))
            } else {
                None
            };
            let res = m.commit(tok);
            if in_mask.is_some_and(|b| b != res.is_ok()) {
                mismatches += 1;
            }
            if let Err(e) = res {
                error = Some(e);
                break;
            }
        }
        let mut ok = error.is_none();
        if ok {
            steps += 1;
            let acc = m.is_accepting();
            if args.reference {
                if let Some(e) = eos {
                    mask.resize(m.mask_words(), 0);
                    m.fill_reference_mask(&mut mask)?;
                    if bits(&mask, e) != acc {
                        mismatches += 1;
                    }
                }
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
    }
    Ok(if wrong > 0 || mismatches > 0 { 1 } else { 0 })
}

fn escape(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

fn mask(args: MaskArgs) -> Result<u8> {
    let l = load(&args.source)?;
    let mut m = Matcher::new(l.engine.clone());
    if let Err(e) = m.commit_bytes(args.prefix.as_bytes()) {
        bail!("the prefix is rejected by the grammar: {e}");
    }
    let allowed = m.reference_allowed();
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
                "source": "reference",
            }))?
        );
    } else {
        println!(
            "after {:?}: {} of {} tokens allowed (end token {}), reference mask",
            args.prefix,
            allowed.len(),
            vocab.len(),
            if eos_allowed { "allowed" } else { "not allowed" }
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
        Cmd::Check(a) => check(a),
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
