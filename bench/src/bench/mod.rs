//! `cargo dwac-bench bench` (or `cargo xtask bench`): dwac's `fill_mask`/`commit` next to llguidance, glrmask and XGrammar on
//! the same token ids, each engine in its own process, single thread.
//!
//! Workloads (one jobs file each, `target/bench/jobs-*.jsonl`, lines
//! `{"id", "kind": "json" | "schema" | "grammar" | "tags", "schema"?, "grammar"?, "format"?, "lark"?, "traces": [[ids]]}`):
//! - `json-<tokenizer>`: the generic JSON grammar (dwac: `grammars/json.lark`; peers: their own
//!   "any JSON" grammar) over the MaskBench valid instances, for every `--tokenizer`;
//! - `json-deep-<tokenizer>`: the JSON grammar on nested arrays and objects, depth 1 to 5,000
//!   (one job per depth: latency against stack depth), for the first `--tokenizer`;
//! - `schemas-<tokenizer>`: every MaskBench schema of Glaiveai2K + Github_easy compiled on its
//!   own, then run over its valid instances (`--schema-tokenizer`, `--schemas N` per split).
//! - `large-<tokenizer>`: the large assembled schemas of `--large` (`schemas/large`: N tools,
//!   Kubernetes-shaped graphs), for every `--tokenizer`, over their valid instances if any.
//! - `gbnf-<tokenizer>`: grammars without a lexer (llama.cpp's GBNF grammars, GBNF from
//!   llama.cpp's JSON-Schema converter, our own), for every `--gbnf-tokenizer`, next to XGrammar
//!   alone (the Rust peers read no GBNF: [`runs_workload`] leaves them out).
//! - `tags-<tokenizer>`: tool calling, XGrammar structural tags over 10, 100 and 500 real tools,
//!   for every `--tags-tokenizer`, next to XGrammar's `compile_structural_tag` and llguidance
//!   (the job's `lark`: the same language in its Lark, [`llguidance_tags_lark`]); glrmask
//!   compiles JSON Schemas only and is left out.
//!
//! Engines: `dwac-bench bench-worker` (dwac, `worker.rs`), `bench/peers/{llguidance,glrmask}` (Rust
//! bench crates outside the workspace, built here with cargo into `target/peers/<name>`) and
//! `bench/peers/xgrammar/bench.py` (in the venv `setup.sh` makes from the Python package
//! registry). All get the same jobs file, replays and EOS ids (dwac's), and write one result line
//! per job with every step's time (first replay, and the minimum over the replays).
//!
//! Latency is compared on the traces that every engine ran to the end (a trace rejected by one
//! engine, e.g. a top-level scalar for XGrammar's builtin JSON grammar, is left out for all);
//! compile time, peak memory and coverage are per engine over all jobs. `report.rs` writes
//! `target/bench/report.{md,json}` and one latency CDF per workload (`cdf-<workload>.svg`).

mod report;
mod worker;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use dwac_testdata::{json_dumps, maskbench_instances, repo_root};
use serde_json::{json, Value};

use crate::util::tokenizer_file;

pub use worker::{run as worker, WorkerArgs};

pub const PEERS: [&str; 3] = ["llguidance", "glrmask", "xgrammar"];

/// dwac compiling glrmask's language (`bench-worker --python-separators`).
pub const SAME_LANGUAGE_AS_GLRMASK: &str = "dwac-sep";

/// `bench`'s options (its command line).
#[derive(clap::Args)]
pub struct Args {
    /// Grammar dwac uses for the generic JSON workloads (repository-relative).
    #[arg(long, default_value = "grammars/json.lark")]
    pub grammar: String,
    /// Tokenizers of the JSON-grammar workloads (names under ../shared/data/tokenizers or
    /// paths); repeat the flag; `none` skips them (and the large-schema workloads).
    #[arg(long = "tokenizer", default_values_t = ["qwen3".to_string(), "deepseek-r1".to_string()])]
    pub tokenizers: Vec<String>,
    /// Tokenizer of the MaskBench-schema workload (`none` skips it).
    #[arg(long, default_value = "qwen3")]
    pub schema_tokenizer: String,
    /// Only the first N schemas of each split (Glaiveai2K, Github_easy).
    #[arg(long)]
    pub schemas: Option<usize>,
    /// Replays of every trace (per-step minimum is reported next to the first pass).
    #[arg(long, default_value_t = 3)]
    pub replays: usize,
    /// Peers to run, comma-separated (`none` for dwac alone; [`crate::util::peer_list`]).
    #[arg(long, default_value = "llguidance,glrmask,xgrammar")]
    pub peers: String,
    /// Use only the first N traces of the JSON workloads.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Where the jobs, raw results and the report go.
    #[arg(long, default_value = "target/bench")]
    pub out_dir: PathBuf,
    /// Wall-clock limit for one engine on one workload, seconds.
    #[arg(long, default_value_t = 3600)]
    pub timeout_s: u64,
    /// Wall-clock limit for one job (one grammar or schema with its traces), seconds: past it
    /// the engine's worker is stopped, the job reported as timed out, and a new worker goes
    /// on with the next job (an engine that stalls on one grammar still runs the others).
    /// Workloads of a single job have only `--timeout-s`.
    #[arg(long, default_value_t = 180)]
    pub job_timeout_s: u64,
    /// Folder of large schemas (`cargo xtask large-schemas`), one workload per
    /// `--tokenizer`; `none` skips them.
    #[arg(long, default_value = "schemas/large")]
    pub large: String,
    /// Also measure the Python packages (dwac, llguidance, XGrammar; `py-bench`)
    /// on the schema workload's tokenizer and schemas, in this run; its tables are appended
    /// to report.md. `--python false` skips it.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub python: bool,
    /// Tokenizers of the GBNF workloads (grammars without a lexer, next to XGrammar) and of
    /// the character-level Lark workloads (the collection's ligurio grammars, dwac alone);
    /// repeat the flag; `none` skips them.
    #[arg(long = "gbnf-tokenizer", default_values_t = ["qwen3".to_string()])]
    pub gbnf_tokenizers: Vec<String>,
    /// Tokenizers of the structural-tag workloads (tool calling over 10, 100 and 500 real
    /// tools, next to XGrammar); repeat the flag; `none` skips them.
    #[arg(long = "tags-tokenizer", default_values_t = ["qwen3".to_string(), "deepseek-r1".to_string()])]
    pub tags_tokenizers: Vec<String>,
    /// Run the compile-cost gate against this revision at the end (`compile-gate --base`;
    /// `none` skips it); its table is appended to report.md.
    #[arg(long, default_value = "HEAD~1")]
    pub gate: String,
}

/// One workload: a jobs file for one tokenizer.
pub struct Workload {
    pub name: String,
    pub tokenizer: String,
    pub jobs_path: PathBuf,
    /// Per job: its id and the length of each trace.
    pub jobs: Vec<(String, Vec<usize>)>,
}

/// How to start one engine on a jobs file.
struct EngineSpec {
    name: String,
    program: PathBuf,
    args: Vec<String>,
}

pub(crate) fn min_into(acc: &mut [f64], xs: &[f64]) {
    for (a, x) in acc.iter_mut().zip(xs) {
        if *x < *a {
            *a = *x;
        }
    }
}

fn setup_peer(name: &str) -> Result<EngineSpec> {
    let root = repo_root();
    match name {
        "llguidance" | "glrmask" => Ok(EngineSpec {
            name: name.to_string(),
            program: crate::util::build_rust_peer(name)?,
            args: vec!["bench".into()],
        }),
        "xgrammar" => {
            eprintln!("preparing the xgrammar venv (bash bench/peers/xgrammar/setup.sh)");
            let st = Command::new("bash")
                .arg(root.join("bench/peers/xgrammar/setup.sh"))
                .status()
                .context("running bench/peers/xgrammar/setup.sh")?;
            anyhow::ensure!(st.success(), "bench/peers/xgrammar/setup.sh failed ({st})");
            let venv = std::env::var_os("DWAC_XGRAMMAR_VENV")
                .map(PathBuf::from)
                .unwrap_or_else(|| root.join("target/peers/xgrammar-venv"));
            Ok(EngineSpec {
                name: name.to_string(),
                program: venv.join("bin/python"),
                args: vec![root.join("bench/peers/xgrammar/bench.py").display().to_string(), "bench".into()],
            })
        }
        _ => bail!("unknown peer {name:?} (known: {})", PEERS.join(", ")),
    }
}

fn write_jobs(path: &Path, jobs: &[Value]) -> Result<Vec<(String, Vec<usize>)>> {
    let mut f =
        std::io::BufWriter::new(std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?);
    let mut shape = Vec::new();
    for j in jobs {
        writeln!(f, "{j}")?;
        let lens = j["traces"].as_array().map(|ts| ts.iter().map(|t| t.as_array().map_or(0, Vec::len)).collect());
        shape.push((j["id"].as_str().unwrap_or("").to_string(), lens.unwrap_or_default()));
    }
    f.flush()?;
    Ok(shape)
}

fn load_tokenizer(name: &str) -> Result<dwac_vocab::Tokenizer> {
    dwac_vocab::Tokenizer::from_file(&tokenizer_file(name)).with_context(|| format!("loading tokenizer {name}"))
}

/// Write the jobs file of workload `<kind>-<tokenizer>`; with dwac's EOS ids for every engine.
fn workload(
    a: &Args,
    kind: &str,
    tok: &dwac_vocab::Tokenizer,
    tok_name: &str,
    jobs: &[Value],
) -> Result<(Workload, Vec<u32>)> {
    let name = format!("{kind}-{}", tok.name());
    let jobs_path = a.out_dir.join(format!("jobs-{name}.jsonl"));
    let jobs = write_jobs(&jobs_path, jobs)?;
    Ok((Workload { name, tokenizer: tok_name.to_string(), jobs_path, jobs }, tok.vocab().eos().to_vec()))
}

fn json_workload(a: &Args, tok_name: &str) -> Result<(Workload, Vec<u32>)> {
    let tok = load_tokenizer(tok_name)?;
    let mut traces = Vec::new();
    for inst in maskbench_instances().into_iter().filter(|i| i.valid) {
        traces.push(tok.encode(&json_dumps(&inst.data))?);
    }
    if let Some(n) = a.limit {
        traces.truncate(n);
    }
    workload(a, "json", &tok, tok_name, &[json!({"id": "json", "kind": "json", "traces": traces})])
}

/// Deep nesting: `[`×d `1` `]`×d and `{"a": `×d `1` `}`×d for d from 1 to 5,000, one job per
/// text, so the report can show mask latency against stack depth (and long runs of brackets,
/// which BPE vocabularies merge into tokens that lex to many terminals).
fn deep_workload(a: &Args, tok_name: &str) -> Result<(Workload, Vec<u32>)> {
    let tok = load_tokenizer(tok_name)?;
    let mut jobs = Vec::new();
    for d in [1usize, 10, 100, 1000, 5000] {
        for (kind, open, close) in [("array", "[", "]"), ("object", "{\"a\": ", "}")] {
            let text = format!("{}1{}", open.repeat(d), close.repeat(d));
            jobs.push(json!({"id": format!("{kind}-depth-{d}"), "kind": "json", "traces": [tok.encode(&text)?]}));
        }
    }
    workload(a, "json-deep", &tok, tok_name, &jobs)
}

fn schema_workload(a: &Args, tok_name: &str) -> Result<(Workload, Vec<u32>)> {
    let tok = load_tokenizer(tok_name)?;
    let (schemas, _) = crate::schema_bench::load(a.schemas, None)?;
    let mut jobs = Vec::new();
    for s in &schemas {
        let mut traces = Vec::new();
        for (text, ok) in s.texts.iter().zip(&s.valid) {
            if *ok {
                traces.push(tok.encode(text)?);
            }
        }
        jobs.push(json!({"id": s.name, "kind": "schema", "schema": s.schema, "traces": traces}));
    }
    workload(a, "schemas", &tok, tok_name, &jobs)
}

/// The grammars without a lexer the GBNF workloads and `dwac-bench differential --gbnf` run, with
/// their texts: llama.cpp's eight GBNF grammars (`../shared/data/grammars/llama.cpp`) over the
/// texts of `tests/data/gbnf/llama.cpp`, GBNF written by llama.cpp's JSON-Schema converter for
/// MaskBench schemas over their valid instances (`tests/data/gbnf/converted`,
/// `make_converted.py`; a grammar XGrammar refuses has none), and grammars of our own
/// (`tests/data/gbnf/own`). (id, GBNF text, texts).
pub(crate) fn gbnf_sources() -> Result<Vec<(String, String, Vec<String>)>> {
    let root = repo_root().join("tests/data/gbnf");
    let mut sources: Vec<(String, PathBuf, Option<PathBuf>)> = Vec::new();
    let llama = dwac_testdata::grammars_dir().join("llama.cpp");
    for name in ["arithmetic", "c", "chess", "english", "japanese", "json", "json_arr", "list"] {
        let texts = root.join(format!("llama.cpp/{name}.jsonl"));
        sources.push((format!("llama.cpp/{name}"), llama.join(format!("{name}.gbnf")), Some(texts)));
    }
    for dir in ["own", "converted"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .with_context(|| format!("reading {}", root.join(dir).display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "gbnf"))
            .collect();
        files.sort();
        for f in files {
            let stem = f.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
            let texts = f.with_extension("jsonl");
            sources.push((format!("{dir}/{stem}"), f, texts.exists().then_some(texts)));
        }
    }
    let mut out = Vec::new();
    for (id, grammar, texts) in sources {
        let text = std::fs::read_to_string(&grammar).with_context(|| format!("reading {}", grammar.display()))?;
        let lines = match texts {
            Some(t) => read_texts(&t)?,
            None => Vec::new(),
        };
        out.push((id, text, lines));
    }
    Ok(out)
}

/// The `text` of each line of a JSON-lines file of texts (`{"text": …, "valid": …}`).
fn read_texts(path: &Path) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    for line in std::fs::read_to_string(path)?.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).with_context(|| format!("{}: bad line", path.display()))?;
        lines.push(v["text"].as_str().unwrap_or_default().to_string());
    }
    Ok(lines)
}

/// One job per grammar of `sources` (`kind: "grammar"`, in `format`), every text a trace.
fn grammar_workload(
    a: &Args,
    tok_name: &str,
    name: &str,
    format: &str,
    sources: Vec<(String, String, Vec<String>)>,
) -> Result<(Workload, Vec<u32>)> {
    let tok = load_tokenizer(tok_name)?;
    let mut jobs = Vec::new();
    for (id, text, texts) in sources {
        let traces = texts.iter().map(|t| tok.encode(t)).collect::<Result<Vec<_>, _>>()?;
        jobs.push(json!({"id": id, "kind": "grammar", "format": format, "grammar": text, "traces": traces}));
    }
    workload(a, name, &tok, tok_name, &jobs)
}

/// Grammars without a lexer (`gbnf-<tokenizer>`, [`gbnf_sources`]): each job carries its
/// grammar's text (`kind: "grammar"`), and every text of every grammar is a trace (`--limit`
/// is for the JSON workloads).
fn gbnf_workload(a: &Args, tok_name: &str) -> Result<(Workload, Vec<u32>)> {
    grammar_workload(a, tok_name, "gbnf", "gbnf", gbnf_sources()?)
}

/// The Lark grammars of `../shared/data/grammars/ligurio-lark-grammars` (character-level ones:
/// one-character terminals under longest match, `word: alphanum+`, ambiguous at character level)
/// over the texts of `tests/data/lark-chars` (checked valid with `dwac check`). (id, grammar
/// text, texts).
pub(crate) fn lark_chars_sources() -> Result<Vec<(String, String, Vec<String>)>> {
    let dir = dwac_testdata::grammars_dir().join("ligurio-lark-grammars/lark_grammars/grammars");
    let texts = repo_root().join("tests/data/lark-chars");
    let mut out = Vec::new();
    for name in ["bc", "iso-8601", "lua", "palindrome", "regex", "robotstxt", "tap13"] {
        let g = dir.join(format!("{name}.lark"));
        let text = std::fs::read_to_string(&g).with_context(|| format!("reading {}", g.display()))?;
        out.push((format!("ligurio/{name}"), text, read_texts(&texts.join(format!("{name}.jsonl")))?));
    }
    Ok(out)
}

/// Character-level Lark grammars (`lark-chars-<tokenizer>`, [`lark_chars_sources`]): dwac
/// alone (the peers that read grammars read no Lark of this dialect: XGrammar takes EBNF,
/// llguidance's driver here takes JSON Schemas).
fn lark_chars_workload(a: &Args, tok_name: &str) -> Result<(Workload, Vec<u32>)> {
    grammar_workload(a, tok_name, "lark-chars", "lark", lark_chars_sources()?)
}

/// Tool calling as vLLM sends it (`tags-<tokenizer>`): XGrammar structural tags over the Glaive
/// tools of `schemas/large/tools-{10,100,500}.json`, a Hermes/Qwen `triggered_tags` (one tag per
/// tool: `<tool_call>\n{"name": "<tool>", "arguments": `, its argument schema, `}\n</tool_call>`,
/// free text around), each over up to 20 texts (a valid call of a tool between free text).
/// XGrammar compiles them with `compile_structural_tag`; `bench/peers/xgrammar/structural_tags.py`
/// makes the same tags and texts.
fn tags_workload(a: &Args, tok_name: &str) -> Result<(Workload, Vec<u32>)> {
    let tok = load_tokenizer(tok_name)?;
    let dir = repo_root().join("schemas/large");
    let added = added_tokens(tok_name)?;
    let mut jobs = Vec::new();
    for n in [10, 100, 500] {
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(dir.join(format!("tools-{n}.json")))?)?;
        let mut tags = Vec::new();
        let mut args_schema = std::collections::HashMap::new();
        for b in schema["anyOf"].as_array().context("tools-N.json: anyOf")? {
            let name = b["properties"]["name"]["const"].as_str().context("a tool's name")?;
            let args = b["properties"].get("arguments").cloned().unwrap_or(json!({"type": "object"}));
            tags.push(json!({"type": "tag", "begin": format!("<tool_call>\n{{\"name\": \"{name}\", \"arguments\": "),
                             "content": {"type": "json_schema", "json_schema": args}, "end": "}\n</tool_call>"}));
            args_schema.insert(name.to_string(), args);
        }
        let tag = json!({"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": tags}});
        let lark = llguidance_tags_lark("<tool_call>", &tags, &added, false)?;
        let lark_lenient = llguidance_tags_lark("<tool_call>", &tags, &added, true)?;
        let mut traces = Vec::new();
        for line in std::fs::read_to_string(dir.join(format!("tools-{n}.instances.jsonl")))?
            .lines()
            .filter(|l| !l.trim().is_empty())
        {
            let d: Value = serde_json::from_str(line)?;
            let d = d.get("instance").unwrap_or(&d);
            let Some(name) = d["name"].as_str().filter(|x| args_schema.contains_key(*x)) else { continue };
            let args = json_dumps(&dwac_grammar::schema::order_instance(&args_schema[name], &d["arguments"]));
            let text = format!(
                "Let me look that up for you.\n<tool_call>\n{{\"name\": \"{name}\", \"arguments\": {args}}}\n</tool_call>\nI called the tool."
            );
            traces.push(tok.encode(&text)?);
            if traces.len() == 20 {
                break;
            }
        }
        jobs.push(json!({"id": format!("tools-{n}"), "kind": "tags", "format": "structural_tag",
                         "grammar": tag.to_string(), "lark": lark, "lark_lenient": lark_lenient,
                         "traces": traces}));
    }
    workload(a, "tags", &tok, tok_name, &jobs)
}

/// The added tokens of a tokenizer (`added_tokens` of its `tokenizer.json`): (content, id).
fn added_tokens(tok_name: &str) -> Result<Vec<(String, u64)>> {
    let path = tokenizer_file(tok_name);
    let v: Value =
        serde_json::from_slice(&std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?)?;
    Ok(v["added_tokens"]
        .as_array()
        .map(|a| a.iter().filter_map(|t| Some((t["content"].as_str()?.to_string(), t["id"].as_u64()?))).collect())
        .unwrap_or_default())
}

/// A string in llguidance's Lark: its added tokens as `<[id]>` (llguidance's token environment
/// gives every added token, special or not, bytes no text spells, so a text literal would never
/// match the one token the tokenizer makes of it), the text between as string literals.
fn lark_spelling(s: &str, added: &[(String, u64)]) -> String {
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut i = 0;
    while i < s.len() {
        let hit =
            added.iter().filter(|(c, _)| !c.is_empty() && s[i..].starts_with(c.as_str())).max_by_key(|(c, _)| c.len());
        match hit {
            Some((c, id)) => {
                if !text.is_empty() {
                    parts.push(Value::String(std::mem::take(&mut text)).to_string());
                }
                parts.push(format!("<[{id}]>"));
                i += c.len();
            }
            None => {
                let ch = s[i..].chars().next().expect("in bounds");
                text.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    if !text.is_empty() {
        parts.push(Value::String(text).to_string());
    }
    parts.join(" ")
}

/// The tags workload's language in llguidance's Lark (its `%json` and token references): free
/// text without the trigger, and after each trigger one tool's call (`begin`, the argument schema
/// made strict as dwac and XGrammar compile it here, `end`), any number of times. Where the
/// trigger is one added token (Qwen's `<tool_call>`), the free text is any text (it cannot spell
/// the token); else the text up to a call is the shortest one ending in the trigger (a lazy
/// lexeme) and the text after the last call one without it (`&` and `~` of llguidance's regexes).
/// `lenient`: each schema with llguidance's `lenient` option (keywords it does not implement are
/// ignored: a looser mask where they appear), the form its driver falls back to when the exact one
/// is refused.
fn llguidance_tags_lark(trigger: &str, tags: &[Value], added: &[(String, u64)], lenient: bool) -> Result<String> {
    let mut calls = Vec::new();
    let mut rules = Vec::new();
    let special = added.iter().any(|(c, _)| c == trigger);
    for (i, t) in tags.iter().enumerate() {
        let begin = t["begin"].as_str().context("a tag's begin")?;
        let end = t["end"].as_str().context("a tag's end")?;
        let rest = begin.strip_prefix(trigger).context("a tag's begin starts with the trigger")?;
        let mut schema =
            dwac_grammar::schema::strict_schema(&t["content"]["json_schema"], dwac_grammar::schema::Draft::Draft2020);
        if let (true, Some(o)) = (lenient, schema.as_object_mut()) {
            o.insert("x-guidance".into(), json!({"lenient": true}));
        }
        let head = if special { lark_spelling(begin, added) } else { lark_spelling(rest, added) };
        rules.push(format!("call_{i}: {head} %json {schema} {}", lark_spelling(end, added)));
        calls.push(format!("call_{i}"));
    }
    let text = if special {
        "start: TEXT? (call TEXT?)*\nTEXT: /(.|\\n)+/".to_string()
    } else {
        let t: String = trigger
            .chars()
            .map(|c| if "\\.+*?()|[]{}^$#&-~/".contains(c) { format!("\\{c}") } else { c.to_string() })
            .collect();
        format!("start: (pre call)* TAIL\npre[lazy]: /(.|\\n)*{t}/\nTAIL: /(.|\\n)*/ & ~/(.|\\n)*{t}(.|\\n)*/")
    };
    Ok(format!("{text}\ncall: {}\n{}\n", calls.join(" | "), rules.join("\n")))
}

/// The large schemas (`schemas/large`, made by `cargo xtask large-schemas`: hundreds of tools,
/// Kubernetes-shaped `$defs` graphs), each over its valid instances if it has any (compile time,
/// artifact size and open time otherwise).
fn large_workload(a: &Args, dir: &Path, tok_name: &str) -> Result<(Workload, Vec<u32>)> {
    let tok = load_tokenizer(tok_name)?;
    let mut jobs = Vec::new();
    for (name, schema, instances) in dwac_testdata::large_schemas(dir)? {
        let mut traces = Vec::new();
        for inst in &instances {
            traces.push(tok.encode(&json_dumps(&dwac_grammar::schema::order_instance(&schema, inst)))?);
        }
        jobs.push(json!({"id": name, "kind": "schema", "schema": schema, "traces": traces}));
    }
    workload(a, "large", &tok, tok_name, &jobs)
}

/// Run one engine over one workload; returns its env line and result lines (by job order).
///
/// The engine's worker runs the jobs in order, one result line each. If no result comes for
/// `--job-timeout-s`, the worker is stopped, that job gets a result line of its own
/// (`compiled: false`, `timed_out: true`), and a new worker runs the jobs after it. (A workload
/// of one job, all its traces in it, has only `--timeout-s`.)
fn run_engine(
    a: &Args,
    e: &EngineSpec,
    w: &Workload,
    eos: &[u32],
    hidden: bool,
) -> Result<(Value, Vec<Value>), String> {
    let jobs_text =
        std::fs::read_to_string(&w.jobs_path).map_err(|x| format!("reading {}: {x}", w.jobs_path.display()))?;
    let job_lines: Vec<&str> = jobs_text.lines().filter(|l| !l.trim().is_empty()).collect();
    let log_path = a.out_dir.join(format!("log-{}-{}.txt", w.name, e.name));
    let _ = std::fs::remove_file(&log_path);
    let bar = crate::util::bar(w.jobs.len() as u64, hidden);
    bar.set_message(format!("{} / {}", w.name, e.name));
    let t0 = Instant::now();
    let mut env: Option<Value> = None;
    let mut results: Vec<Value> = Vec::new();
    // (`first`: the index of the first job the current worker runs.)
    let mut first = 0;
    let mut segment = 0;
    while first < job_lines.len() {
        let (jobs_path, out) = if first == 0 {
            (w.jobs_path.clone(), a.out_dir.join(format!("out-{}-{}.jsonl", w.name, e.name)))
        } else {
            segment += 1;
            let p = a.out_dir.join(format!("jobs-{}-{}-part{segment}.jsonl", w.name, e.name));
            std::fs::write(&p, job_lines[first..].join("\n") + "\n")
                .map_err(|x| format!("writing {}: {x}", p.display()))?;
            (p, a.out_dir.join(format!("out-{}-{}-part{segment}.jsonl", w.name, e.name)))
        };
        let _ = std::fs::remove_file(&out);
        let (status, stalled) = run_worker(a, e, w, eos, &jobs_path, &out, &log_path, t0, first, &bar)?;
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        let mut lines = text.lines().map(serde_json::from_str::<Value>);
        match lines.next() {
            Some(Ok(v)) if v["event"] == "env" => {
                env.get_or_insert(v);
            }
            _ if !stalled => {
                bar.finish_and_clear();
                let tail = std::fs::read_to_string(&log_path).unwrap_or_default();
                let tail: Vec<&str> = tail.lines().rev().take(5).collect();
                return Err(format!(
                    "{status}, no output; stderr: {}",
                    tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
                ));
            }
            _ => {}
        }
        let got: Vec<Value> = lines.filter_map(Result::ok).collect();
        first += got.len();
        results.extend(got);
        if stalled {
            let id = w.jobs.get(first).map(|j| j.0.clone()).unwrap_or_default();
            results.push(json!({"id": id, "compiled": false, "timed_out": true,
                "error": format!("no result within {} s (--job-timeout-s): stopped", a.job_timeout_s)}));
            first += 1;
        } else if first < job_lines.len() {
            bar.finish_and_clear();
            return Err(format!("{status} after {} of {} jobs (see {})", first, w.jobs.len(), log_path.display()));
        }
    }
    bar.finish_and_clear();
    let env = env.ok_or_else(|| "no worker wrote its env line".to_string())?;
    Ok((env, results))
}

/// Whether engine `engine` runs workload `workload`: no peer reads the character-level Lark
/// grammars ([`lark_chars_workload`]); glrmask (and dwac in glrmask's language) compiles JSON
/// Schemas only, and llguidance has no form of a GBNF grammar. An engine that cannot run any job
/// of a workload is left out of it, so that the traces compared are those of the engines that
/// can (it would otherwise leave none).
fn runs_workload(engine: &str, workload: &str) -> bool {
    if workload.starts_with("lark-chars") {
        engine == "dwac"
    } else if workload.starts_with("gbnf") {
        engine == "dwac" || engine == "xgrammar"
    } else if workload.starts_with("tags") {
        engine != "glrmask" && engine != SAME_LANGUAGE_AS_GLRMASK
    } else {
        true
    }
}

/// One worker over the jobs of `jobs_path` (the workload's jobs from index `first` on), until it
/// ends: its exit status, and whether it was stopped for taking longer than `--job-timeout-s`
/// over one job. Past `--timeout-s` for the whole engine run, an error.
#[allow(clippy::too_many_arguments, reason = "the run's pieces, passed down from run_engine")]
fn run_worker(
    a: &Args,
    e: &EngineSpec,
    w: &Workload,
    eos: &[u32],
    jobs_path: &Path,
    out: &Path,
    log_path: &Path,
    t0: Instant,
    first: usize,
    bar: &indicatif::ProgressBar,
) -> Result<(String, bool), String> {
    let eos_arg = eos.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    let mut cmd = Command::new(&e.program);
    cmd.args(&e.args)
        .arg("--tokenizer")
        .arg(tokenizer_file(&w.tokenizer))
        .arg("--jobs")
        .arg(jobs_path)
        .arg("--replays")
        .arg(a.replays.to_string())
        .arg("--out")
        .arg(out)
        .arg("--eos")
        .arg(&eos_arg)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    if e.name == "dwac" || e.name == SAME_LANGUAGE_AS_GLRMASK {
        cmd.arg("--grammar").arg(&a.grammar);
    }
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path)
        .map_err(|x| format!("opening {}: {x}", log_path.display()))?;
    cmd.stderr(Stdio::from(log));
    let mut child = cmd.spawn().map_err(|x| format!("starting {}: {x}", e.program.display()))?;
    let (mut seen, mut since) = (usize::MAX, Instant::now());
    loop {
        if let Some(st) = child.try_wait().map_err(|x| x.to_string())? {
            return Ok((st.to_string(), false));
        }
        if t0.elapsed() > Duration::from_secs(a.timeout_s) {
            let _ = child.kill();
            let _ = child.wait();
            bar.finish_and_clear();
            return Err(format!("timed out after {} s (--timeout-s)", a.timeout_s));
        }
        // (Result lines so far, the env line not counted.)
        let done = std::fs::read_to_string(out).map_or(0, |t| t.lines().count().saturating_sub(1));
        if done != seen {
            (seen, since) = (done, Instant::now());
            bar.set_position((first + done) as u64);
        } else if w.jobs.len() > 1 && since.elapsed() > Duration::from_secs(a.job_timeout_s) {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(("stopped".into(), true));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

pub fn run(a: Args) -> Result<()> {
    std::fs::create_dir_all(&a.out_dir).with_context(|| format!("creating {}", a.out_dir.display()))?;
    let mut engines =
        vec![EngineSpec { name: "dwac".into(), program: std::env::current_exe()?, args: vec!["bench-worker".into()] }];
    // glrmask compiles another language than dwac's default (its schema lowering allows exactly
    // `, ` and `: ` between tokens, no other whitespace; its "json" is the `{}` schema so laid
    // out): next to it, dwac compiles that same language too (`dwac-sep`), so the two can be
    // compared on equal terms; the flexible-whitespace row stays beside it.
    let peers = crate::util::peer_list(&a.peers);
    if peers.iter().any(|p| p == "glrmask") {
        engines.push(EngineSpec {
            name: SAME_LANGUAGE_AS_GLRMASK.into(),
            program: std::env::current_exe()?,
            args: vec!["bench-worker".into(), "--python-separators".into()],
        });
    }
    let mut unavailable = Vec::new();
    for p in &peers {
        match setup_peer(p) {
            Ok(e) => engines.push(e),
            Err(e) => {
                eprintln!("peer {p} unavailable: {e:#}");
                unavailable.push((p.clone(), format!("{e:#}")));
            }
        }
    }
    let mut workloads = Vec::new();
    // (`--tokenizer none`: no JSON-grammar workloads, e.g. to run only the tags or GBNF ones.)
    let json_tokenizers: Vec<&String> = a.tokenizers.iter().filter(|t| *t != "none").collect();
    for t in &json_tokenizers {
        workloads.push(json_workload(&a, t)?);
    }
    if let Some(t) = json_tokenizers.first() {
        workloads.push(deep_workload(&a, t)?);
    }
    if a.schema_tokenizer != "none" {
        workloads.push(schema_workload(&a, &a.schema_tokenizer)?);
    }
    for t in a.gbnf_tokenizers.iter().filter(|t| *t != "none") {
        workloads.push(gbnf_workload(&a, t)?);
    }
    for t in a.gbnf_tokenizers.iter().filter(|t| *t != "none") {
        workloads.push(lark_chars_workload(&a, t)?);
    }
    for t in a.tags_tokenizers.iter().filter(|t| *t != "none") {
        workloads.push(tags_workload(&a, t)?);
    }
    if a.large != "none" {
        let dir = repo_root().join(&a.large);
        for t in &json_tokenizers {
            workloads.push(large_workload(&a, &dir, t)?);
        }
    }
    let t_run = Instant::now();
    let mut runs = Vec::new();
    for (w, eos) in &workloads {
        let steps: usize = w.jobs.iter().flat_map(|(_, l)| l).sum();
        eprintln!("workload {}: {} jobs, {} steps", w.name, w.jobs.len(), steps);
        let mut per_engine = Vec::new();
        for e in &engines {
            if !runs_workload(&e.name, &w.name) {
                continue;
            }
            let t = Instant::now();
            let r = run_engine(&a, e, w, eos, a.json);
            eprintln!(
                "  {:<11} {:>7.1} s{}",
                e.name,
                t.elapsed().as_secs_f64(),
                r.as_ref().err().map(|x| format!("  FAILED: {x}")).unwrap_or_default()
            );
            per_engine.push((e.name.clone(), r));
        }
        runs.push(report::WorkloadRun { workload: w, eos: eos.clone(), engines: per_engine });
    }
    let rep = report::build(&runs, &unavailable, a.replays, t_run.elapsed().as_secs_f64());
    report::write(&a.out_dir, &rep, &runs)?;
    if a.python {
        // The Python packages on the schema workload's tokenizer and schemas, in this run.
        let tokenizer = if a.schema_tokenizer != "none" { a.schema_tokenizer.clone() } else { "qwen3".into() };
        let py = crate::py_bench::Args { tokenizer, schemas: a.schemas.unwrap_or(25), out_dir: a.out_dir.clone() };
        eprintln!("python packages (cargo dwac-bench py-bench)");
        let section = match crate::py_bench::run(py) {
            Ok(md) => md,
            Err(e) => format!("# Python packages\n\nNot measured: {e:#}\n"),
        };
        append_to_report(&a.out_dir, &section)?;
    }
    if a.gate != "none" {
        eprintln!("compile-cost gate (cargo dwac-bench compile-gate --base {})", a.gate);
        let g = crate::gate::Args {
            base: a.gate.clone(),
            tokenizers: crate::gate::default_tokenizers(),
            runs: 2,
            threshold: 1.5,
            max_seconds: 120.0,
            fail: false,
            only: None,
            out_dir: a.out_dir.clone(),
        };
        let section = match crate::gate::run(&g) {
            Ok((md, _)) => md,
            Err(e) => format!("# Compile-cost gate\n\nNot measured: {e:#}\n"),
        };
        append_to_report(&a.out_dir, &section)?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&rep.json)?);
    } else {
        print!("{}", report::markdown(&rep));
        eprintln!("report: {} (and report.json, cdf-*.svg)", a.out_dir.join("report.md").display());
    }
    Ok(())
}

/// Append a section (markdown) to `<out_dir>/report.md`.
fn append_to_report(out_dir: &Path, section: &str) -> Result<()> {
    let path = out_dir.join("report.md");
    let mut md = std::fs::read_to_string(&path)?;
    md.push('\n');
    md.push_str(section);
    std::fs::write(&path, md)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_tokens_are_spelled_as_token_references() {
        let added = vec![("<tool_call>".to_string(), 151657), ("</tool_call>".to_string(), 151658)];
        assert_eq!(lark_spelling("<tool_call>\n{\"name\": ", &added), r#"<[151657]> "\n{\"name\": ""#);
        assert_eq!(lark_spelling("}\n</tool_call>", &added), r#""}\n" <[151658]>"#);
        assert_eq!(lark_spelling("<tool_call", &added), r#""<tool_call""#);
    }

    #[test]
    fn the_lark_of_a_text_trigger_excludes_it_from_free_text() {
        let tags = vec![json!({"begin": "<call>{\"name\": \"f\", \"arguments\": ", "end": "}</call>",
                               "content": {"json_schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}})];
        let lark = llguidance_tags_lark("<call>", &tags, &[], false).unwrap();
        assert!(lark.contains(r"pre[lazy]: /(.|\n)*<call>/"), "{lark}");
        assert!(lark.contains(r"TAIL: /(.|\n)*/ & ~/(.|\n)*<call>(.|\n)*/"), "{lark}");
        // The schema as strict mode compiles it, and the rest of the begin string after the trigger.
        assert!(lark.contains(r#"call_0: "{\"name\": \"f\", \"arguments\": " %json {"#), "{lark}");
        assert!(lark.contains(r#""additionalProperties":false} "}</call>""#), "{lark}");
        let lenient = llguidance_tags_lark("<call>", &tags, &[], true).unwrap();
        assert!(lenient.contains(r#""x-guidance":{"lenient":true}"#), "{lenient}");
    }
}
