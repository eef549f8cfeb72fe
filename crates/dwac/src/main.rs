//! `dwac`: the command-line tool (DESIGN.md §9). Exit codes: 0 success, 1 a check failed,
//! 2 bad input or usage.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use dwac_compile::artifact::{artifact_bytes, write_atomically, SourceInfo, TokenizerInfo};
use dwac_compile::{
    compile_engine_with_progress, parse_source_with, regex_grammar, CompileStats, EngineOptions, SourceKind,
};
use dwac_grammar::schema::{Draft, SchemaOptions, Whitespace};
use dwac_runtime::artifact::{hex, kind_info, Artifact};
use dwac_runtime::{CommitError, Engine, MaskScratch, Matcher};

/// The compiler allocates many small, short-lived values (configurations, class lists, memo
/// keys) and the tokenizer load many small strings: mimalloc takes markedly fewer instructions
/// per allocation than glibc's malloc and does not slow down as the main arena fragments.
/// (The libraries leave the allocator to the program that links them.)
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
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
    /// Compile grammars or JSON Schemas with a tokenizer into artifacts (one or many inputs).
    Compile(CompileArgs),
    /// Show an artifact's header, fingerprints, sections and grammar summary (verifies it).
    Inspect(InspectArgs),
    /// Judge texts against a grammar: every token must be in the mask, and the end token at the end.
    Check(CheckArgs),
    /// Time every mask and commit on texts.
    Bench(BenchArgs),
    /// Print the mask (allowed tokens) after a prefix.
    Mask(MaskArgs),
}

/// Options of every command that may compile a source.
#[derive(Args, Clone)]
struct CompileOpts {
    /// HF `tokenizer.json` or a GGUF model file (only its vocabulary is read); default: the embedded GPT-2 tokenizer. With an artifact INPUT it is
    /// only used to encode text, and must be the artifact's tokenizer.
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
    #[arg(long, value_parser = Draft::NAMES)]
    draft: Option<String>,
    /// Give up compiling an input after this many seconds (a clear error naming it).
    #[arg(long, default_value_t = 600.0)]
    max_seconds: f64,
    /// Give up when the process's resident memory exceeds this many MiB (exit 2).
    #[arg(long, default_value_t = 8192)]
    max_memory_mb: u64,
}

#[derive(Args)]
struct SourceArgs {
    /// An artifact (`.dwa`, `.dwa.zst`), or a grammar source compiled in memory first: `.lark`
    /// or `.gbnf` grammar, or a `.json` JSON Schema.
    input: Option<PathBuf>,
    /// Use a single regular expression as the grammar instead of INPUT.
    #[arg(long, conflicts_with = "input")]
    regex: Option<String>,
    #[command(flatten)]
    opts: CompileOpts,
}

#[derive(Args)]
struct CompileArgs {
    /// Grammar sources: `.lark`, `.gbnf` or `.json` (JSON Schema). Several are compiled in
    /// parallel.
    inputs: Vec<PathBuf>,
    /// Compile a single regular expression instead of INPUT files.
    #[arg(long, conflicts_with = "inputs")]
    regex: Option<String>,
    /// Output file (one input) or directory (several inputs, or an existing directory).
    /// Default: `artifacts/<stem>.dwa`.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Write the zstd transport form (`.dwa.zst`) instead of the plain artifact.
    #[arg(long)]
    zstd: bool,
    /// zstd level of `--zstd` (1–22; higher is smaller and slower).
    #[arg(long, default_value_t = dwac_compile::artifact::ZSTD_LEVEL, value_parser = clap::value_parser!(i32).range(1..=22))]
    zstd_level: i32,
    /// Inputs compiled at once (default: the number of CPUs).
    #[arg(long)]
    jobs: Option<usize>,
    /// One JSON object per input on stdout.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    opts: CompileOpts,
}

#[derive(Args)]
struct InspectArgs {
    /// The artifact (`.dwa` or `.dwa.zst`).
    artifact: PathBuf,
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
    /// The tokenizer to encode text with (for an artifact: checked against its fingerprint).
    tokenizer: Option<Tokenizer>,
    /// Compile statistics (a source compiled in memory).
    stats: Option<CompileStats>,
    /// Microseconds `Artifact::open` took (an artifact input).
    open_us: Option<f64>,
}

impl Loaded {
    fn tokenizer(&self) -> Result<&Tokenizer> {
        self.tokenizer.as_ref().context(
            "this artifact was not compiled with the embedded default tokenizer: give --tokenizer FILE (the artifact's tokenizer) to encode text",
        )
    }

    fn tokenizer_name(&self) -> Option<&str> {
        self.tokenizer.as_ref().map(|t| t.name())
    }

    fn compile_ms(&self) -> Option<f64> {
        self.stats.as_ref().map(|s| (s.compile_ms * 10.0).round() / 10.0)
    }
}

/// An artifact error, naming the file once.
fn artifact_error(path: &Path, e: dwac_runtime::ArtifactError) -> anyhow::Error {
    match e {
        dwac_runtime::ArtifactError::Io { .. } => anyhow::anyhow!("{e}"),
        _ => anyhow::anyhow!("{}: {e}", path.display()),
    }
}

/// Is `path` an artifact (`.dwa` or `.dwa.zst`) rather than a grammar source?
fn is_artifact(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    name.ends_with(".dwa") || name.ends_with(".dwa.zst")
}

fn load_tokenizer(path: Option<&Path>) -> Result<Tokenizer> {
    match path {
        Some(p) => Tokenizer::from_file(p).map_err(|e| anyhow::anyhow!("tokenizer: {e}")),
        None => Tokenizer::default_embedded().context("loading the embedded default tokenizer"),
    }
}

fn schema_options(o: &CompileOpts) -> SchemaOptions {
    SchemaOptions {
        whitespace: if o.compact { Whitespace::Compact } else { Whitespace::Flexible },
        lenient: o.lenient,
        // (clap allows only `Draft::NAMES`.)
        default_draft: o.draft.as_deref().and_then(Draft::from_name),
    }
}

/// A grammar to compile: a file or a `--regex` pattern.
#[derive(Clone)]
enum Source {
    File(PathBuf),
    Regex(String),
}

impl Source {
    fn display(&self) -> String {
        match self {
            Source::File(p) => p.display().to_string(),
            Source::Regex(_) => "--regex".to_string(),
        }
    }
}

/// One compiled source.
struct Built {
    engine: Engine,
    stats: CompileStats,
    info: SourceInfo,
    /// Schema compiler and longest-match warnings, located.
    warnings: Vec<String>,
}

/// Compile `source` with `vocab`. Errors are one located message.
fn build(
    source: &Source,
    opts: &CompileOpts,
    vocab: &dwac_runtime::Vocabulary,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Built> {
    let what = source.display();
    let schema_opts = schema_options(opts);
    let mut warnings = Vec::new();
    let mut front_end_ms = 0.0;
    let (grammar, info, is_schema) = match source {
        Source::Regex(re) => {
            (regex_grammar(re), SourceInfo { name: "--regex".into(), kind: "regex", text: re.clone() }, false)
        }
        Source::File(path) => {
            if is_artifact(path) {
                bail!("{what}: is an artifact; compile takes grammar sources (.lark, .gbnf, .json)");
            }
            let kind = SourceKind::from_path(path)
                .with_context(|| format!("{what}: unknown input kind (expected .lark, .gbnf or a .json schema)"))?;
            let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
            let t0 = Instant::now();
            let (g, w) =
                parse_source_with(kind, &text, &schema_opts).map_err(|e| anyhow::anyhow!(e.located(&what, false)))?;
            front_end_ms = t0.elapsed().as_secs_f64() * 1e3;
            warnings.extend(w.into_iter().map(|w| format!("{what}: {w}")));
            let name = path.file_name().map_or_else(|| what.clone(), |n| n.to_string_lossy().to_string());
            (g, SourceInfo { name, kind: SourceInfo::kind_name(kind), text }, kind == SourceKind::JsonSchema)
        }
    };
    let (engine, mut stats) =
        compile_engine_with_progress(&grammar, vocab.clone(), &EngineOptions::default(), progress)
            .map_err(|e| anyhow::anyhow!(e.located(&what, is_schema)))?;
    // The front end (source text → grammar IR) is part of the compile.
    stats.compile_ms += front_end_ms;
    stats.stages_ms.insert(0, ("front_end", front_end_ms));
    warnings.extend(stats.warnings.iter().map(|w| w.0.located(&what)));
    Ok(Built { engine, stats, info, warnings })
}

/// A progress bar over the Parser DWA's lexer states, shown once the build has run a second.
fn lexer_state_bar(quiet: bool) -> (indicatif::ProgressBar, impl FnMut(u64, u64)) {
    let bar = indicatif::ProgressBar::hidden();
    bar.set_style(
        indicatif::ProgressStyle::with_template("compiling {bar:40} {pos}/{len} lexer states {elapsed}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let t0 = Instant::now();
    let mut shown = false;
    let b = bar.clone();
    let progress = move |done: u64, total: u64| {
        if !quiet && !shown && t0.elapsed() > Duration::from_secs(1) {
            b.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            shown = true;
        }
        b.set_length(total);
        b.set_position(done);
    };
    (bar, progress)
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
    /// `bar`, if given, is the lexer-state progress of the Parser DWA build: the error then says
    /// how far the build got and how many lexer states it has, what grows with the grammar.
    fn start(what: String, max_seconds: f64, max_memory_mb: u64, bar: Option<indicatif::ProgressBar>) -> Watchdog {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let t0 = Instant::now();
        let whence = move || match bar.as_ref().and_then(|b| b.length().map(|n| (b.position(), n))) {
            Some((at, n)) if n > 0 => format!(
                " while building the Parser DWA, at lexer state {at} of {n} (the DWA is built per \
                 lexer state: a schema with many keys, enums or long strings has many)"
            ),
            _ => String::new(),
        };
        std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                if flag.load(Ordering::Relaxed) {
                    return;
                }
                if t0.elapsed().as_secs_f64() > max_seconds {
                    eprintln!(
                        "error: {what}: compilation exceeded its time budget of {max_seconds} s (--max-seconds){}",
                        whence()
                    );
                    std::process::exit(2);
                }
                if current_rss_mb().is_some_and(|m| m > max_memory_mb as f64) {
                    eprintln!(
                        "error: {what}: compilation exceeded its memory budget of {max_memory_mb} MiB (--max-memory-mb){}",
                        whence()
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
    if let Some(path) = src.input.as_deref().filter(|p| is_artifact(p)) {
        let t0 = Instant::now();
        let art = Artifact::open(path).map_err(|e| artifact_error(path, e))?;
        let open_us = t0.elapsed().as_secs_f64() * 1e6;
        // The artifact carries its vocabulary; a tokenizer only encodes text, and must match.
        let tokenizer = match &src.opts.tokenizer {
            Some(p) => {
                let t = load_tokenizer(Some(p))?;
                art.check_tokenizer(&t.fingerprint(), t.vocab())
                    .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
                Some(t)
            }
            None => {
                let t = load_tokenizer(None)?;
                art.check_tokenizer(&t.fingerprint(), t.vocab()).is_ok().then_some(t)
            }
        };
        return Ok(Loaded { engine: art.engine().clone(), tokenizer, stats: None, open_us: Some(open_us) });
    }
    let source = match (&src.input, &src.regex) {
        (_, Some(re)) => Source::Regex(re.clone()),
        (Some(path), None) => Source::File(path.clone()),
        (None, None) => bail!("give a grammar file, an artifact or --regex PATTERN"),
    };
    let tokenizer = load_tokenizer(src.opts.tokenizer.as_deref())?;
    let (bar, mut progress) = lexer_state_bar(quiet);
    let _watchdog = Watchdog::start(source.display(), src.opts.max_seconds, src.opts.max_memory_mb, Some(bar.clone()));
    let built = build(&source, &src.opts, tokenizer.vocab(), &mut progress);
    bar.finish_and_clear();
    let built = built?;
    for w in &built.warnings {
        eprintln!("warning: {w}");
    }
    Ok(Loaded { engine: Arc::new(built.engine), tokenizer: Some(tokenizer), stats: Some(built.stats), open_us: None })
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
            "dwa_states_assembled": m.dwa_states_assembled,
            "dwa_states_linked": m.dwa_states_linked,
            "max_lookback": if m.max_lookback == u32::MAX { json!("unbounded") } else { json!(m.max_lookback) },
            "undecided_tokens": m.undecided_tokens,
            "token_classes": m.token_classes,
            "token_sets": m.token_sets,
            "lexer_states_with_dwa": m.lexer_states_with_dwa,
            "lexer_states_over_budget": m.lexer_states_over_budget,
            "lexer_states_shared": m.lexer_states_shared,
            "slowest_lexer_state_ms": (m.slowest_lexer_state_ms * 10.0).round() / 10.0,
            "carried_inhibitors": m.carried_inhibitors,
            "dwa_build_ms": (m.build_ms * 10.0).round() / 10.0,
            "stages_ms": stats.stages_ms.iter().map(|(n, t)| (n.to_string(), json!((t * 10.0).round() / 10.0))).collect::<serde_json::Map<_, _>>(),
        }),
        None => json!(null),
    }
}

/// Where each input's artifact goes: `-o FILE` for one input; `-o DIR/<stem>.dwa` for several
/// (or an existing directory); `artifacts/<stem>.dwa` by default (`.dwa.zst` with `--zstd`).
fn output_paths(args: &CompileArgs, sources: &[Source]) -> Result<Vec<PathBuf>> {
    let ext = if args.zstd { "dwa.zst" } else { "dwa" };
    let stem = |s: &Source| match s {
        Source::File(p) => p.file_stem().map_or_else(|| "out".to_string(), |x| x.to_string_lossy().to_string()),
        Source::Regex(_) => "regex".to_string(),
    };
    let dir_mode = |o: &Path| sources.len() > 1 || o.is_dir() || o.as_os_str().to_string_lossy().ends_with('/');
    let paths: Vec<PathBuf> = sources
        .iter()
        .map(|s| match &args.output {
            Some(o) if dir_mode(o) => o.join(format!("{}.{ext}", stem(s))),
            Some(o) => o.clone(),
            None => PathBuf::from("artifacts").join(format!("{}.{ext}", stem(s))),
        })
        .collect();
    let mut seen = std::collections::HashMap::new();
    for (p, s) in paths.iter().zip(sources) {
        if let Some(prev) = seen.insert(p.clone(), s.display()) {
            bail!("{} and {} would both be written to {}", prev, s.display(), p.display());
        }
    }
    Ok(paths)
}

/// Compile one source and write its artifact; the JSON record of the result.
fn compile_one(
    source: &Source,
    out: &Path,
    args_zstd: Option<i32>,
    opts: &CompileOpts,
    tokenizer: &Tokenizer,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<serde_json::Value> {
    let what = source.display();
    let built = build(source, opts, tokenizer.vocab(), progress)?;
    for w in &built.warnings {
        eprintln!("warning: {w}");
    }
    let t0 = Instant::now();
    let tok = TokenizerInfo { name: tokenizer.name().to_string(), fingerprint: tokenizer.fingerprint() };
    let raw = artifact_bytes(
        &built.engine,
        &built.info,
        &tok,
        &built.stats,
        &schema_options(opts),
        &EngineOptions::default(),
    );
    let bytes = if let Some(level) = args_zstd {
        dwac_compile::artifact::compress(&raw, level).map_err(|e| anyhow::anyhow!("{what}: compressing: {e}"))?
    } else {
        raw.clone()
    };
    write_atomically(out, &bytes).map_err(|e| anyhow::anyhow!("{what}: writing {}: {e}", out.display()))?;
    let write_ms = t0.elapsed().as_secs_f64() * 1e3;
    let s = &built.stats;
    let mut rec = json!({
        "input": what,
        "ok": true,
        "artifact": out.display().to_string(),
        "bytes": bytes.len(),
        "raw_bytes": raw.len(),
        "zstd": args_zstd.is_some(),
        "compile_ms": (s.compile_ms * 10.0).round() / 10.0,
        "write_ms": (write_ms * 10.0).round() / 10.0,
        "peak_rss_mb": peak_rss_mb().map(|m| (m * 10.0).round() / 10.0),
        "tokenizer": tokenizer.name(),
        "vocab_size": built.engine.vocab().len(),
        "terminals": s.terminals,
        "lexer_states": s.lexer_states,
        "lr_states": s.lr_states,
        "lr_conflicts": s.lr_conflicts,
        "warnings": built.warnings.len(),
    });
    if let (Some(o), serde_json::Value::Object(m)) = (rec.as_object_mut(), mask_stats_json(s)) {
        o.extend(m);
    }
    Ok(rec)
}

fn print_compiled(rec: &serde_json::Value, json_out: bool) {
    if json_out {
        println!("{rec}");
        return;
    }
    let zstd = if rec["zstd"] == true { format!(", zstd of {} raw", rec["raw_bytes"]) } else { String::new() };
    println!(
        "{} -> {} ({} bytes{zstd}): {} tokens ({}), {} lexer states, {} LR states; Parser DWA {} states, max lookback {}; {} ms",
        rec["input"].as_str().unwrap_or(""),
        rec["artifact"].as_str().unwrap_or(""),
        rec["bytes"],
        rec["vocab_size"],
        rec["tokenizer"].as_str().unwrap_or(""),
        rec["lexer_states"],
        rec["lr_states"],
        rec["dwa_states"],
        rec["max_lookback"],
        rec["compile_ms"],
    );
    if rec["undecided_tokens"].as_u64().is_some_and(|u| u > 0) {
        println!(
            "note: {} (lexer state, token) pairs are decided at run time by committing the token (exact, slower); {} lexer states ran over the automaton budget",
            rec["undecided_tokens"], rec["lexer_states_over_budget"]
        );
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

fn compile(args: CompileArgs) -> Result<u8> {
    let sources: Vec<Source> = match &args.regex {
        Some(re) => vec![Source::Regex(re.clone())],
        None => args.inputs.iter().cloned().map(Source::File).collect(),
    };
    if sources.is_empty() {
        bail!("give one or more grammar files, or --regex PATTERN");
    }
    let outputs = output_paths(&args, &sources)?;
    let tokenizer = Arc::new(load_tokenizer(args.opts.tokenizer.as_deref())?);
    if sources.len() == 1 {
        let (bar, mut progress) = lexer_state_bar(args.json);
        let _watchdog =
            Watchdog::start(sources[0].display(), args.opts.max_seconds, args.opts.max_memory_mb, Some(bar.clone()));
        let zstd = args.zstd.then_some(args.zstd_level);
        let rec = compile_one(&sources[0], &outputs[0], zstd, &args.opts, &tokenizer, &mut progress);
        bar.finish_and_clear();
        print_compiled(&rec?, args.json);
        return Ok(0);
    }
    compile_batch(&args, sources, outputs, tokenizer)
}

/// Many inputs: `--jobs` workers take inputs from a queue; one progress bar; an input over its
/// time budget is reported as failed and a fresh worker takes its place (the stuck one is left
/// behind and ends with the process). Exit 1 if any input failed.
fn compile_batch(
    args: &CompileArgs,
    sources: Vec<Source>,
    outputs: Vec<PathBuf>,
    tokenizer: Arc<Tokenizer>,
) -> Result<u8> {
    use std::sync::mpsc;
    use std::sync::Mutex;
    enum Event {
        Started(usize),
        Done(usize, Result<serde_json::Value, String>),
    }
    let n = sources.len();
    let _watchdog = Watchdog::start("batch compile".into(), f64::INFINITY, args.opts.max_memory_mb, None);
    let queue = Arc::new(Mutex::new((0..n).collect::<std::collections::VecDeque<usize>>()));
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |x| x.get())).max(1);
    let (tx, rx) = mpsc::channel::<Event>();
    let shared = Arc::new((sources, outputs, args.opts.clone(), args.zstd.then_some(args.zstd_level)));
    let spawn_worker = || {
        let (queue, tx, shared, tokenizer) = (queue.clone(), tx.clone(), shared.clone(), tokenizer.clone());
        std::thread::spawn(move || loop {
            let Some(i) = queue.lock().ok().and_then(|mut q| q.pop_front()) else { return };
            if tx.send(Event::Started(i)).is_err() {
                return;
            }
            let (sources, outputs, opts, zstd) = &*shared;
            let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                compile_one(&sources[i], &outputs[i], *zstd, opts, &tokenizer, &mut |_, _| {})
            }));
            let res = match res {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(format!("{e:#}")),
                Err(p) => Err(format!("{}: internal error: {}", sources[i].display(), panic_message(&*p))),
            };
            if tx.send(Event::Done(i, res)).is_err() {
                return;
            }
        });
    };
    for _ in 0..jobs.min(n) {
        spawn_worker();
    }
    let bar = indicatif::ProgressBar::new(n as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("compiling {bar:40} {pos}/{len} inputs {elapsed} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    if args.json {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let t0 = Instant::now();
    let mut results: Vec<Option<Result<serde_json::Value, String>>> = (0..n).map(|_| None).collect();
    let mut running: std::collections::HashMap<usize, Instant> = std::collections::HashMap::new();
    let mut done = 0;
    while done < n {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Event::Started(i)) => {
                running.insert(i, Instant::now());
            }
            Ok(Event::Done(i, r)) => {
                running.remove(&i);
                if results[i].is_none() {
                    results[i] = Some(r);
                    done += 1;
                    bar.inc(1);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        let late: Vec<usize> = running
            .iter()
            .filter(|(_, t)| t.elapsed().as_secs_f64() > args.opts.max_seconds)
            .map(|(&i, _)| i)
            .collect();
        for i in late {
            running.remove(&i);
            if results[i].is_none() {
                results[i] = Some(Err(format!(
                    "{}: compilation exceeded its time budget of {} s (--max-seconds)",
                    shared.0[i].display(),
                    args.opts.max_seconds
                )));
                done += 1;
                bar.inc(1);
                spawn_worker();
            }
        }
    }
    bar.finish_and_clear();
    let mut failed = 0;
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Some(Ok(rec)) => print_compiled(&rec, args.json),
            Some(Err(e)) => {
                failed += 1;
                if args.json {
                    println!("{}", json!({"input": shared.0[i].display(), "ok": false, "error": e}));
                }
                eprintln!("error: {e}");
            }
            None => {
                failed += 1;
                eprintln!("error: {}: not compiled (a worker stopped)", shared.0[i].display());
            }
        }
    }
    eprintln!(
        "compiled {} of {n} inputs in {:.1} s with {jobs} jobs{}",
        n - failed,
        t0.elapsed().as_secs_f64(),
        if failed > 0 { format!("; {failed} failed") } else { String::new() }
    );
    Ok(if failed > 0 { 1 } else { 0 })
}

/// `dwac inspect`: header, fingerprints, sections and the metadata's summary.
fn inspect(args: InspectArgs) -> Result<u8> {
    let path = &args.artifact;
    let t0 = Instant::now();
    let art = Artifact::open(path).map_err(|e| artifact_error(path, e))?;
    let open_us = t0.elapsed().as_secs_f64() * 1e6;
    let h = art.header();
    let meta: serde_json::Value = serde_json::from_str(art.metadata()).unwrap_or(serde_json::Value::Null);
    let file_bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let sections: Vec<serde_json::Value> = art
        .sections()
        .iter()
        .map(|e| {
            json!({
                "kind": format!("{:#06x}", e.kind),
                "name": kind_info(e.kind).map_or("unknown (optional)", |i| i.0),
                "offset": e.offset,
                "bytes": e.len,
                "narrow": e.flags & dwac_runtime::artifact::SECTION_NARROW != 0,
            })
        })
        .collect();
    let v = art.engine().vocab();
    let out = json!({
        "artifact": path.display().to_string(),
        "format": format!("{}.{}", h.major, h.minor),
        "file_bytes": file_bytes,
        "bytes": art.len(),
        "compressed": file_bytes as usize != art.len(),
        "verified": true,
        "compiler": meta["compiler"],
        "source": meta["source"],
        "options": meta["options"],
        "tokenizer": meta["tokenizer"]["name"],
        "tokenizer_fingerprint": hex(&h.tokenizer_fingerprint),
        "grammar_fingerprint": hex(&h.grammar_fingerprint),
        "vocab_size": h.vocab_size,
        "eos": &v.eos[..],
        "mask_words": h.mask_words,
        "terminals": h.num_terminals,
        "lexer_states": h.lexer_states,
        "lr_states": h.lr_states,
        "nonterminals": h.num_nonterminals,
        "dwa_states": h.dwa_states,
        "token_sets": h.token_sets,
        "max_lookback": meta["mask"]["max_lookback"],
        "undecided_tokens": meta["mask"]["undecided_tokens"],
        "grammar": meta["grammar"],
        "sections": sections,
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        eprintln!("opened and verified in {open_us:.0} µs");
        return Ok(0);
    }
    let src = &meta["source"];
    let g = &meta["grammar"];
    let s = |x: &serde_json::Value| x.as_str().map_or_else(|| x.to_string(), str::to_string);
    println!(
        "artifact     {} ({} bytes{})",
        out["artifact"].as_str().unwrap_or(""),
        art.len(),
        if out["compressed"] == true { format!(", {file_bytes} as zstd") } else { String::new() }
    );
    println!("format       {} (verified: checksums and every table index)", s(&out["format"]));
    println!("compiler     {}", s(&meta["compiler"]));
    println!("source       {} ({}, sha256 {})", s(&src["name"]), s(&src["kind"]), s(&src["sha256"]));
    println!("tokenizer    {} ({} tokens, EOS {:?})", s(&out["tokenizer"]), h.vocab_size, &v.eos[..]);
    println!("  fingerprint {}", hex(&h.tokenizer_fingerprint));
    println!("grammar fp   {}", hex(&h.grammar_fingerprint));
    println!(
        "grammar      {} terminals, {} rules ({} normalized), {} lexer states, {} LR states, {} LR conflicts",
        h.num_terminals,
        s(&g["rules"]),
        s(&g["rules_normalized"]),
        h.lexer_states,
        h.lr_states,
        s(&g["lr_conflicts"])
    );
    if h.flags & dwac_runtime::artifact::FLAG_MASK != 0 {
        println!(
            "parser DWA   {} states, {} token sets, max lookback {}, {} undecided (lexer state, token) pairs",
            h.dwa_states,
            h.token_sets,
            s(&out["max_lookback"]),
            s(&out["undecided_tokens"])
        );
    } else {
        println!("parser DWA   none (masks are computed by the reference oracle)");
    }
    println!("options      {}", meta["options"]);
    println!("sections     {}", art.sections().len());
    for e in art.sections() {
        println!(
            "  {:#06x} {:<20} offset {:>10} {:>10} bytes{}",
            e.kind,
            kind_info(e.kind).map_or("unknown (optional)", |i| i.0),
            e.offset,
            e.len,
            if e.flags & dwac_runtime::artifact::SECTION_NARROW != 0 { " (u16)" } else { "" }
        );
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
        .map(|(i, it)| l.tokenizer()?.encode(&it.text).with_context(|| format!("encoding input {i}")))
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
        "tokenizer": l.tokenizer_name(),
        "compile_ms": l.compile_ms(),
        "open_us": l.open_us.map(|u| u.round()),
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
    let mut sc = MaskScratch::default();
    let mut bits = vec![0u32; m.mask_words()];
    m.fill_mask_with(&mut sc, &mut bits)?;
    let allowed: Vec<u32> =
        (0..l.engine.vocab().len() as u32).filter(|&v| bits[(v / 32) as usize] >> (v % 32) & 1 == 1).collect();
    let source = if sc.fallbacks() > 0 { "reference" } else { "dwa" };
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
        Cmd::Inspect(a) => inspect(a),
        Cmd::Check(a) => check(a),
        Cmd::Bench(a) => bench(a),
        Cmd::Mask(a) => mask(a),
    }
}

fn main() -> ExitCode {
    // Like any Unix filter: when the reader of our output goes away (`dwac inspect x | head`),
    // end quietly on SIGPIPE instead of panicking in `println!` on the broken pipe.
    #[cfg(unix)]
    // SAFETY: called first thing in `main`, before any other thread exists; SIG_DFL is a valid
    // disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    match run() {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
