//! The command line: clap's types for every subcommand and its options.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use dwac_grammar::schema::Draft;

#[derive(Parser)]
#[command(name = "dwac", version, about = "Ahead-of-time compiled grammar-constrained decoding masks")]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) cmd: Cmd,
}

#[derive(Subcommand)]
pub(crate) enum Cmd {
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
    /// Print the structural tag of an assistant turn with tools (what `--tools` compiles).
    Tools(ToolsArgs),
}

#[derive(Args)]
pub(crate) struct ToolsArgs {
    /// An OpenAI-style `tools` list, or a chat request with `tools` (JSON).
    pub(crate) input: PathBuf,
    /// The model family's tool-call format.
    #[arg(long, value_name = "FORMAT", value_parser = dwac_grammar::tools::ToolFormat::NAMES.to_vec())]
    pub(crate) format: String,
    /// `auto`, `none`, `required`, or a function's name (default: the request's, else `auto`).
    #[arg(long)]
    pub(crate) tool_choice: Option<String>,
    /// Allow more than one call in a turn (default: the request's, else true).
    #[arg(long)]
    pub(crate) parallel_tool_calls: Option<bool>,
    /// The turn begins with a reasoning block `<think>…</think>`.
    #[arg(long)]
    pub(crate) reasoning: bool,
    /// Whitespace in the arguments only around punctuation, at most this many characters.
    #[arg(long)]
    pub(crate) max_whitespace: Option<u32>,
}

/// Options of every command that may compile a source.
#[derive(Args, Clone)]
pub(crate) struct CompileOpts {
    /// HF `tokenizer.json` or a GGUF model file (only its vocabulary is read); default: the embedded GPT-2 tokenizer. With an artifact INPUT it is
    /// only used to encode text, and must be the artifact's tokenizer.
    #[arg(long)]
    pub(crate) tokenizer: Option<PathBuf>,
    /// Read `.json` inputs as XGrammar structural tags (`{"type": "structural_tag", "format":
    /// ...}`: tool calls, reasoning blocks), not as JSON Schemas.
    #[arg(long)]
    pub(crate) structural_tag: bool,
    /// Read `.json` inputs as OpenAI-style tool lists (or chat requests with `tools`,
    /// `tool_choice`, `parallel_tool_calls`) and compile an assistant turn in this model
    /// family's tool-call format: hermes (qwen, qwen2.5, qwen3), deepseek (deepseek-r1,
    /// deepseek-v3), llama3, smollm2.
    #[arg(long, value_name = "FORMAT", value_parser = dwac_grammar::tools::ToolFormat::NAMES.to_vec(), conflicts_with = "structural_tag")]
    pub(crate) tools: Option<String>,
    /// With --tools: `auto`, `none`, `required`, or a function's name (default: the request's,
    /// else `auto`).
    #[arg(long, requires = "tools")]
    pub(crate) tool_choice: Option<String>,
    /// With --tools: allow more than one call in a turn (default: the request's, else true).
    #[arg(long, requires = "tools")]
    pub(crate) parallel_tool_calls: Option<bool>,
    /// With --tools: the turn begins with a reasoning block `<think>…</think>`.
    #[arg(long, requires = "tools")]
    pub(crate) reasoning: bool,
    /// JSON Schema: drop keywords that cannot be honoured exactly (each one is listed as a
    /// warning) instead of refusing the schema. The mask is then looser than the schema.
    #[arg(long)]
    pub(crate) lenient: bool,
    /// JSON Schema: no whitespace between tokens (default: any RFC 8259 whitespace).
    #[arg(long, conflicts_with = "separators")]
    pub(crate) compact: bool,
    /// JSON Schema: whitespace only around punctuation, at most this many characters on each
    /// side of a `{ } [ ] , :`, none before or after the value (whitespace that cannot run away).
    #[arg(long, conflicts_with_all = ["separators", "compact"])]
    pub(crate) max_whitespace: Option<u32>,
    /// JSON Schema: exactly these separators between items and between a key and its value,
    /// and no other whitespace, e.g. `--separators ', ' ': '` (Python `json.dumps`'s layout).
    #[arg(long, num_args = 2, value_names = ["ITEM", "KEY"])]
    pub(crate) separators: Option<Vec<String>>,
    /// JSON Schema (and the schemas of structural tags, tools and Lark's `%json`): keys and items a schema does
    /// not name are not allowed (an object with `properties` and no `additionalProperties`
    /// takes `additionalProperties: false`), as XGrammar's `strict_mode` and OpenAI's strict
    /// function calling.
    #[arg(long)]
    pub(crate) strict: bool,
    /// JSON Schema: the dialect when `$schema` names none (default 2020-12).
    #[arg(long, value_parser = Draft::NAMES)]
    pub(crate) draft: Option<String>,
    /// Give up compiling an input after this many seconds (a clear error naming it).
    #[arg(long, default_value_t = 600.0)]
    pub(crate) max_seconds: f64,
    /// Give up when the process's resident memory exceeds this many MiB (exit 2).
    #[arg(long, default_value_t = 8192)]
    pub(crate) max_memory_mb: u64,
}

#[derive(Args)]
pub(crate) struct SourceArgs {
    /// An artifact (`.dwa`, `.dwa.zst`), or a grammar source compiled in memory first: `.lark`
    /// or `.gbnf` grammar, or a `.json` JSON Schema.
    pub(crate) input: Option<PathBuf>,
    /// Use a single regular expression as the grammar instead of INPUT.
    #[arg(long, conflicts_with = "input")]
    pub(crate) regex: Option<String>,
    #[command(flatten)]
    pub(crate) opts: CompileOpts,
}

#[derive(Args)]
pub(crate) struct CompileArgs {
    /// Grammar sources: `.lark`, `.gbnf` or `.json` (JSON Schema). Several are compiled in
    /// parallel.
    pub(crate) inputs: Vec<PathBuf>,
    /// Compile a single regular expression instead of INPUT files.
    #[arg(long, conflicts_with = "inputs")]
    pub(crate) regex: Option<String>,
    /// Output file (one input) or directory (several inputs, or an existing directory).
    /// Default: `artifacts/<stem>.dwa`.
    #[arg(short, long)]
    pub(crate) output: Option<PathBuf>,
    /// Write each artifact into this directory under its cache key, `DIR/<key>.dwa`: the key of
    /// the request's constraint (its kind, its source in a canonical form, the options, the
    /// tokenizer's fingerprint, the compiler version), where a server's dwac backend, or the
    /// Python `dwac.Compiler(cache_dir=DIR)`, finds it for the same request and maps it instead
    /// of compiling. `--json` prints the key (`cache_key`).
    #[arg(long, conflicts_with_all = ["output", "zstd"])]
    pub(crate) cache_dir: Option<PathBuf>,
    /// Write the zstd transport form (`.dwa.zst`) instead of the plain artifact.
    #[arg(long)]
    pub(crate) zstd: bool,
    /// zstd level of `--zstd` (1–22; higher is smaller and slower).
    #[arg(long, default_value_t = dwac_compile::artifact::ZSTD_LEVEL, value_parser = clap::value_parser!(i32).range(1..=22))]
    pub(crate) zstd_level: i32,
    /// With `--zstd`: leave the vocabulary out of the transport form. It is the same in every
    /// artifact of a tokenizer, and most of a small grammar's transport form (Qwen3's: about
    /// 0.6 MB). The file then opens only with its tokenizer (`--tokenizer` for `dwac inspect`,
    /// `check`, `bench`, `mask`; `Artifact::open_with_vocabulary`).
    #[arg(long, requires = "zstd")]
    pub(crate) without_vocabulary: bool,
    /// Inputs compiled at once (default: the number of CPUs).
    #[arg(long)]
    pub(crate) jobs: Option<usize>,
    /// One JSON object per input on stdout.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) opts: CompileOpts,
}

#[derive(Args)]
pub(crate) struct InspectArgs {
    /// The artifact (`.dwa` or `.dwa.zst`).
    pub(crate) artifact: PathBuf,
    /// The tokenizer (`tokenizer.json` or GGUF) of a `.dwa.zst` written `--without-vocabulary`:
    /// its vocabulary fills the sections the file leaves out.
    #[arg(long)]
    pub(crate) tokenizer: Option<PathBuf>,
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Args)]
pub(crate) struct CheckArgs {
    #[command(flatten)]
    pub(crate) source: SourceArgs,
    /// One text to check (the whole file).
    #[arg(long, conflicts_with = "jsonl")]
    pub(crate) text: Option<PathBuf>,
    /// JSON lines `{"text": "...", "valid": true|false}` (`valid` optional).
    #[arg(long)]
    pub(crate) jsonl: Option<PathBuf>,
    /// Also compute the reference mask at every step and compare it with the mask (slow).
    #[arg(long)]
    pub(crate) reference: bool,
    /// Machine-readable output.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Args)]
pub(crate) struct BenchArgs {
    #[command(flatten)]
    pub(crate) source: SourceArgs,
    /// JSON lines `{"text": "..."}`: the texts whose tokens are replayed.
    #[arg(long)]
    pub(crate) jsonl: PathBuf,
    /// Replays of every text; per step, the minimum over them is reported next to the first pass.
    #[arg(long, default_value_t = 3)]
    pub(crate) replays: usize,
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Args)]
pub(crate) struct MaskArgs {
    #[command(flatten)]
    pub(crate) source: SourceArgs,
    /// Raw text committed before the mask is computed.
    #[arg(long, default_value = "")]
    pub(crate) prefix: String,
    /// How many allowed tokens to list (human output).
    #[arg(long, default_value_t = 40)]
    pub(crate) limit: usize,
    #[arg(long)]
    pub(crate) json: bool,
}
