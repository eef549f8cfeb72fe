//! Loading what a command works on: the tokenizer (a path, GGUF or the embedded default), and a
//! grammar or schema source compiled in memory, or a verified artifact.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use dwac_compile::artifact::SourceInfo;
use dwac_compile::{regex_grammar, CompileStats, Compiler, SourceKind};
use dwac_grammar::schema::{Draft, SchemaOptions, Whitespace};
use dwac_runtime::Engine;
use dwac_runtime::{Artifact, OpenOptions};
use dwac_vocab::Tokenizer;

use crate::args::{CompileOpts, SourceArgs};
use crate::report::lexer_state_bar;
use crate::watchdog::Watchdog;

pub(crate) struct Loaded {
    pub(crate) engine: Arc<Engine>,
    /// The tokenizer to encode text with (for an artifact: checked against its fingerprint).
    pub(crate) tokenizer: Option<Tokenizer>,
    /// Compile statistics (a source compiled in memory).
    pub(crate) stats: Option<CompileStats>,
    /// Microseconds `Artifact::open` took (an artifact input).
    pub(crate) open_us: Option<f64>,
}

impl Loaded {
    pub(crate) fn tokenizer(&self) -> Result<&Tokenizer> {
        self.tokenizer.as_ref().context(
            "this artifact was not compiled with the embedded default tokenizer: give --tokenizer FILE (the artifact's tokenizer) to encode text",
        )
    }

    pub(crate) fn tokenizer_name(&self) -> Option<&str> {
        self.tokenizer.as_ref().map(|t| t.name())
    }

    pub(crate) fn compile_ms(&self) -> Option<f64> {
        self.stats.as_ref().map(|s| (s.compile_ms * 10.0).round() / 10.0)
    }
}

/// An artifact error, naming the file once.
pub(crate) fn artifact_error(path: &Path, e: dwac_runtime::ArtifactError) -> anyhow::Error {
    match e {
        dwac_runtime::ArtifactError::Io { .. } => anyhow::anyhow!("{e}"),
        _ => anyhow::anyhow!("{}: {e}", path.display()),
    }
}

/// Is `path` an artifact (`.dwa` or `.dwa.zst`) rather than a grammar source?
pub(crate) fn is_artifact(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    name.ends_with(".dwa") || name.ends_with(".dwa.zst")
}

pub(crate) fn load_tokenizer(path: Option<&Path>) -> Result<Tokenizer> {
    match path {
        Some(p) => Tokenizer::from_file(p).map_err(|e| anyhow::anyhow!("tokenizer: {e}")),
        None => Tokenizer::default_embedded().context("loading the embedded default tokenizer"),
    }
}

pub(crate) fn schema_options(o: &CompileOpts) -> SchemaOptions {
    SchemaOptions {
        whitespace: match (&o.separators, o.compact, o.max_whitespace) {
            // (clap takes exactly two values.)
            (Some(s), _, _) if s.len() == 2 => Whitespace::Separators { item: s[0].clone(), key: s[1].clone() },
            (_, true, _) => Whitespace::Compact,
            (_, _, Some(n)) => Whitespace::Around { max: Some(n) },
            _ => Whitespace::Flexible,
        },
        lenient: o.lenient,
        // (clap allows only `Draft::NAMES`.)
        default_draft: o.draft.as_deref().and_then(Draft::from_name),
        strict: o.strict,
    }
}

/// The tool-calling options of `--tools` and of `dwac tools`.
pub(crate) struct ToolsSpec<'a> {
    pub(crate) format: &'a str,
    pub(crate) tool_choice: Option<&'a str>,
    pub(crate) parallel_tool_calls: Option<bool>,
    pub(crate) reasoning: bool,
    pub(crate) max_whitespace: Option<u32>,
}

/// The structural tag of a turn with the tools of `text` (a tools list or a request); options
/// given here win over the request's.
pub(crate) fn tools_tag(text: &str, o: &ToolsSpec<'_>) -> Result<serde_json::Value> {
    use dwac_grammar::tools::{request, structural_tag, ToolCalling, ToolChoice, ToolFormat};
    let v: serde_json::Value = serde_json::from_str(text).context("not JSON")?;
    let r = request(&v)?;
    // (clap allows only `ToolFormat::NAMES`.)
    let format = ToolFormat::from_name(o.format).context("unknown tool format")?;
    let tool_choice = match o.tool_choice {
        Some(c) => ToolChoice::from_json(&serde_json::Value::from(c))?,
        None => r.tool_choice.unwrap_or(ToolChoice::Auto),
    };
    let c = ToolCalling {
        format,
        tool_choice,
        parallel_tool_calls: o.parallel_tool_calls.or(r.parallel_tool_calls).unwrap_or(true),
        reasoning: o.reasoning,
        max_whitespace: o.max_whitespace,
    };
    Ok(structural_tag(&r.tools, &c)?)
}

/// A grammar to compile: a file or a `--regex` pattern.
#[derive(Clone)]
pub(crate) enum Source {
    File(PathBuf),
    Regex(String),
}

impl Source {
    pub(crate) fn display(&self) -> String {
        match self {
            Source::File(p) => p.display().to_string(),
            Source::Regex(_) => "--regex".to_string(),
        }
    }
}

/// One compiled source.
pub(crate) struct Built {
    pub(crate) engine: Engine,
    pub(crate) stats: CompileStats,
    pub(crate) info: SourceInfo,
    /// Schema compiler and longest-match warnings, located.
    pub(crate) warnings: Vec<String>,
}

/// Compile `source` with `vocab`. Errors are one located message.
pub(crate) fn build(
    source: &Source,
    opts: &CompileOpts,
    vocab: &dwac_runtime::Vocabulary,
    progress: &mut dyn FnMut(u64, u64) -> ControlFlow<String>,
) -> Result<Built> {
    let what = source.display();
    let compiler = Compiler { schema: schema_options(opts), ..Compiler::default() };
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
            let kind = if (opts.structural_tag || opts.tools.is_some()) && kind == SourceKind::JsonSchema {
                SourceKind::StructuralTag
            } else {
                kind
            };
            let mut text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
            if let Some(format) = &opts.tools {
                let tools = ToolsSpec {
                    format,
                    tool_choice: opts.tool_choice.as_deref(),
                    parallel_tool_calls: opts.parallel_tool_calls,
                    reasoning: opts.reasoning,
                    max_whitespace: opts.max_whitespace,
                };
                text = tools_tag(&text, &tools).map_err(|e| anyhow::anyhow!("{what}: {e}"))?.to_string();
            }
            let t0 = Instant::now();
            let (g, w) = compiler.parse(kind, &text).map_err(|e| anyhow::anyhow!(e.located(&what, false)))?;
            front_end_ms = t0.elapsed().as_secs_f64() * 1e3;
            warnings.extend(w.into_iter().map(|w| format!("{what}: {w}")));
            let name = path.file_name().map_or_else(|| what.clone(), |n| n.to_string_lossy().to_string());
            (g, SourceInfo { name, kind: SourceInfo::kind_name(kind), text }, kind == SourceKind::JsonSchema)
        }
    };
    let (engine, mut stats) = compiler
        .compile_engine_with_progress(&grammar, vocab.clone(), progress)
        .map_err(|e| anyhow::anyhow!(e.located(&what, is_schema)))?;
    // The front end (source text → grammar IR) is part of the compile.
    stats.compile_ms += front_end_ms;
    stats.stages_ms.insert(0, ("front_end", front_end_ms));
    warnings.extend(stats.warnings.iter().map(|w| w.0.located(&what)));
    Ok(Built { engine, stats, info, warnings })
}

/// Open an artifact; one written `--without-vocabulary` takes the vocabulary of `tokenizer`,
/// which it needs.
pub(crate) fn open_artifact(path: &Path, tokenizer: Option<&Path>) -> Result<Artifact> {
    match Artifact::open(path) {
        Err(dwac_runtime::ArtifactError::VocabularyNeeded) => match tokenizer {
            Some(t) => {
                let t = load_tokenizer(Some(t))?;
                OpenOptions::new().vocabulary(t.vocab()).open(path).map_err(|e| artifact_error(path, e))
            }
            None => Err(artifact_error(path, dwac_runtime::ArtifactError::VocabularyNeeded)),
        },
        r => r.map_err(|e| artifact_error(path, e)),
    }
}

pub(crate) fn load(src: &SourceArgs, quiet: bool) -> Result<Loaded> {
    if let Some(path) = src.input.as_deref().filter(|p| is_artifact(p)) {
        let t0 = Instant::now();
        let art = open_artifact(path, src.opts.tokenizer.as_deref())?;
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
