//! dwac's side of the bench (`dwac-bench bench-worker`): the same job and result lines as the peers
//! (`bench/peers/*`), so that every engine runs as its own process on the same token ids.
//!
//! - compile: kind "json" → the grammar file (default `grammars/json.lark`); kind "schema" →
//!   `compile_schema` with default `SchemaOptions`, then `compile_engine` (lexer, LR tables and the
//!   Parser DWA). `compile_ms` times all of it, up to the engine in memory; `ttfm_ms` is null
//!   (dwac compiles ahead of time); `compile_cpu_ms` is the process's CPU time over the same
//!   span (the compile's two threads, the trie walk and the determinizer, both counted). Each
//!   job compiles on a thread of its own, as `dwac compile` compiles each input (the glrmask
//!   peer does the same), away from the main thread's allocator arena that the tokenizer's load
//!   leaves fragmented; the worker, like the `dwac` binary and the Rust peers, allocates
//!   through mimalloc (`main.rs`). (The measurements behind both choices are in their commit
//!   messages.)
//! - the engine's artifact bytes are made (`artifact_bytes`; timed apart as `save_ms`, as the
//!   glrmask peer times `save()`: neither is in `compile_ms`), written to a file
//!   (`target/bench/artifact-<id>.dwa`), opened 20
//!   times with `Artifact::open` (mmap + full validation; `open_us`) and 20 times with
//!   `OpenOptions::verify(false)` (`open_unchecked_us`), and the timed passes run on the opened artifact's
//!   zero-copy views, as a server would; `artifact_bytes` is its size.
//! - per trace: `Matcher::new` (untimed), then per token `fill_mask(&mut buf)` (timed; `buf` is one
//!   reused `Vec<u32>`), the trace token's bit is checked, `commit(id)` (timed; `Err` = rejected,
//!   trace stopped); after the last token one more timed `fill_mask` and the EOS bit check.
//! - from the counters `fill_mask_with` returns (first replay): `undecided` counts tokens that
//!   `fill_mask` settled by committing them, `masks_with_undecided` the masks that had any,
//!   `mask_fallbacks` the masks computed by the reference mask because the Parser DWA did not
//!   cover a thread. Each of these masks is timed like any other: the report names them.
//! - `peak_rss_mb`: VmHWM after the job, reset before it (as the peers do).
//! - before the first job, `{}` is compiled once (`warmup_ms` in the env line), as the glrmask
//!   peer does: the vocabulary trie and the process-wide caches (closure walks, kill sets,
//!   lexer components) a first JSON grammar fills are per-vocabulary work, not any one job's.
//! - `DWAC_MASK_TRACE=1` prints the five slowest masks (min over replays) of each job to stderr.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use dwac_compile::artifact::{artifact_bytes, write_atomically, SourceInfo, TokenizerInfo};
use dwac_compile::{compile_engine, CompileError, CompileStats, EngineOptions};
use dwac_grammar::schema::{compile_schema, SchemaOptions, Whitespace};
use dwac_runtime::Artifact;
use dwac_runtime::{Engine, MaskCounters, MaskError, MaskScratch, Matcher};
use dwac_vocab::Tokenizer;
use serde_json::{json, Value};

use super::min_into;
use crate::util::catch;

// The process's CPU time (every thread's, so a compile on several threads shows its total CPU
// next to its wall time) and a job's peak RSS, read as the Rust peers read them.
use dwac_measure::{peak_rss_mb, process_cpu_ms, reset_peak_rss};

pub struct WorkerArgs {
    pub tokenizer: PathBuf,
    pub jobs: PathBuf,
    pub out: PathBuf,
    pub replays: usize,
    pub eos: Vec<u32>,
    pub grammar: String,
    /// glrmask's language: schemas with `, ` / `: ` separators and no other whitespace, and the
    /// `{}` schema (so laid out) for "json" jobs.
    pub python_separators: bool,
}

impl WorkerArgs {
    fn schema_options(&self) -> SchemaOptions {
        let whitespace = if self.python_separators { Whitespace::python_separators() } else { Whitespace::Flexible };
        SchemaOptions { whitespace, ..SchemaOptions::default() }
    }

    /// What this worker compiles for each job kind (the report says which language each engine
    /// compiled).
    fn language(&self) -> Value {
        if self.python_separators {
            json!({"json": "the `{}` schema, `, ` and `: ` separators, no other whitespace",
                   "schema": "the schema, `, ` and `: ` separators, no other whitespace"})
        } else {
            json!({"json": format!("`{}`, RFC 8259 whitespace", self.grammar),
                   "schema": "the schema, RFC 8259 whitespace",
                   "grammar": "the grammar as written (GBNF, Lark)",
                   "tags": "the structural tag as written, its JSON Schemas strict (XGrammar's language for it: no key or item a schema does not name)"})
        }
    }
}

#[derive(Default)]
struct Pass {
    mask_us: Vec<f64>,
    commit_us: Vec<f64>,
    trace_masks: Vec<usize>,
    trace_commits: Vec<usize>,
    rejected: usize,
    not_in_mask: usize,
    eos_missing: usize,
    undecided: u64,
    masks_with_undecided: u64,
    fallbacks: u64,
    errors: Vec<String>,
}

fn bit(buf: &[u32], t: u32) -> bool {
    buf.get((t / 32) as usize).is_some_and(|w| w >> (t % 32) & 1 == 1)
}

impl Pass {
    /// Count what one fill did (its counters, or its error).
    fn fill(&mut self, r: Result<MaskCounters, MaskError>, what: &str) {
        match r {
            Ok(c) => {
                self.undecided += u64::from(c.undecided);
                self.masks_with_undecided += u64::from(c.undecided > 0);
                self.fallbacks += u64::from(c.fallbacks);
            }
            Err(e) => self.errors.push(format!("{what}: {e}")),
        }
    }
}

fn run_pass(engine: &Arc<Engine>, traces: &[Vec<u32>], eos: &[u32], buf: &mut [u32]) -> Pass {
    let mut p = Pass::default();
    // (One scratch for the pass, as a server thread keeps one.)
    let mut sc = MaskScratch::default();
    'traces: for trace in traces {
        let (m0, c0) = (p.mask_us.len(), p.commit_us.len());
        let mut m = Matcher::new(Arc::clone(engine));
        for &tok in trace {
            let t0 = Instant::now();
            let r = m.fill_mask_with(&mut sc, buf);
            p.mask_us.push(t0.elapsed().as_secs_f64() * 1e6);
            p.fill(r, "mask");
            if !bit(buf, tok) {
                p.not_in_mask += 1;
            }
            let t1 = Instant::now();
            let r = m.commit(tok);
            p.commit_us.push(t1.elapsed().as_secs_f64() * 1e6);
            if let Err(e) = r {
                p.rejected += 1;
                p.errors.push(format!("commit: {e}"));
                p.trace_masks.push(p.mask_us.len() - m0);
                p.trace_commits.push(p.commit_us.len() - c0);
                continue 'traces;
            }
        }
        let t0 = Instant::now();
        let r = m.fill_mask_with(&mut sc, buf);
        p.mask_us.push(t0.elapsed().as_secs_f64() * 1e6);
        p.fill(r, "final mask");
        if !eos.iter().any(|&e| bit(buf, e)) {
            p.eos_missing += 1;
        }
        p.trace_masks.push(p.mask_us.len() - m0);
        p.trace_commits.push(p.commit_us.len() - c0);
    }
    p
}

/// Compile a job: the engine, its table statistics and the artifact's bytes.
fn compile(job: &Value, tok: &Tokenizer, a: &WorkerArgs) -> Result<(Arc<Engine>, Value, Vec<u8>, f64), String> {
    let vocab = tok.vocab().clone();
    let grammar = &a.grammar;
    let opts = a.schema_options();
    let kind = job["kind"].as_str().unwrap_or("schema");
    let (r, source) = match kind {
        "json" if !a.python_separators => {
            let path = dwac_testdata::repo_root().join(grammar);
            let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let kind = dwac_compile::SourceKind::from_path(&path)
                .ok_or_else(|| format!("{}: unknown grammar kind", path.display()))?;
            let g = dwac_compile::parse_source(kind, &text).map_err(|e| e.to_string())?;
            (compile_engine(&g, vocab), SourceInfo { name: grammar.into(), kind: SourceInfo::kind_name(kind), text })
        }
        // A grammar given in the job (GBNF or Lark text, a structural tag), compiled as `dwac
        // compile` would.
        "grammar" | "tags" => {
            let text = job["grammar"].as_str().ok_or("grammar job without \"grammar\"")?.to_string();
            let kind = match job["format"].as_str() {
                Some("gbnf") => dwac_compile::SourceKind::Gbnf,
                Some("lark") => dwac_compile::SourceKind::Lark,
                Some("structural_tag") => dwac_compile::SourceKind::StructuralTag,
                other => {
                    return Err(format!("grammar format {other:?}: expected \"gbnf\", \"lark\" or \"structural_tag\""))
                }
            };
            // XGrammar compiles a structural tag's schemas in its strict mode (keys and items a
            // schema does not name are refused): the same language.
            let tag_opts = SchemaOptions { strict: kind == dwac_compile::SourceKind::StructuralTag, ..opts.clone() };
            let compiler = dwac_compile::Compiler { schema: tag_opts, ..Default::default() };
            let (g, _) = compiler.parse(kind, &text).map_err(|e| e.to_string())?;
            let name = job["id"].as_str().unwrap_or("grammar").to_string();
            (compile_engine(&g, vocab), SourceInfo { name, kind: SourceInfo::kind_name(kind), text })
        }
        _ => {
            let schema = if kind == "json" { json!({}) } else { job["schema"].clone() };
            let sg =
                compile_schema(&schema, &opts).map_err(|e| format!("{} at {}: {}", e.keyword, e.pointer, e.message))?;
            let text = schema.to_string();
            (compile_engine(&sg.grammar, vocab), SourceInfo { name: job["id"].to_string(), kind: "json-schema", text })
        }
    };
    engine(r, &source, tok, &opts)
}

/// The compiled engine, its table stats, its artifact's bytes and the time making them took
/// (ms; the caller leaves it out of `compile_ms`, as glrmask's peer leaves out `save()`).
fn engine(
    r: Result<(Engine, CompileStats), CompileError>,
    source: &SourceInfo,
    tok: &Tokenizer,
    opts: &SchemaOptions,
) -> Result<(Arc<Engine>, Value, Vec<u8>, f64), String> {
    let (e, st) = r.map_err(|e| e.to_string())?;
    let info = TokenizerInfo { name: tok.name().into(), fingerprint: tok.fingerprint() };
    let t_save = Instant::now();
    let bytes = artifact_bytes(&e, source, &info, &st, opts, &EngineOptions::default());
    let save_ms = t_save.elapsed().as_secs_f64() * 1e3;
    let stats = st.mask.map(|m| {
        json!({"dwa_states": m.dwa_states, "undecided_tokens": m.undecided_tokens,
               "lexer_states_over_budget": m.lexer_states_over_budget, "max_lookback": m.max_lookback,
               "dwa_build_ms": m.build_ms})
    });
    Ok((Arc::new(e), stats.unwrap_or(Value::Null), bytes, save_ms))
}

/// Write the artifact, open it `n` times verified (mmap + full validation) and `n` times
/// unchecked; the engine of the last verified open (its tables are views of the mapping).
fn open_artifact(bytes: &[u8], dir: &std::path::Path, id: &Value, n: usize) -> Result<(Arc<Engine>, Value), String> {
    let name: String = id.to_string().chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
    let path = dir.join(format!("artifact-{name}.dwa"));
    write_atomically(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let (mut verified, mut unchecked) = (Vec::new(), Vec::new());
    let mut last = None;
    for _ in 0..n.max(1) {
        let t = Instant::now();
        let a = Artifact::open(&path).map_err(|e| e.to_string())?;
        verified.push(t.elapsed().as_secs_f64() * 1e6);
        last = Some(a);
        let t = Instant::now();
        // (The file was just verified by `open` above.)
        let b = dwac_runtime::OpenOptions::new().verify(false).open(&path).map_err(|e| e.to_string())?;
        unchecked.push(t.elapsed().as_secs_f64() * 1e6);
        drop(b);
    }
    let _ = std::fs::remove_file(&path);
    let a = last.ok_or("no open")?;
    // The transport form (zstd, the CLI's default level), with and without the vocabulary
    // (`--without-vocabulary`: it opens with the tokenizer's vocabulary, as glrmask's saved
    // constraint loads with it), and the vocabulary's share of the raw bytes (the same for
    // every grammar of a tokenizer).
    use dwac_compile::artifact::{compress, compress_without_vocabulary, ZSTD_LEVEL};
    let zstd = compress(bytes, ZSTD_LEVEL).map(|z| z.len()).ok();
    let zstd_without_vocab = compress_without_vocabulary(bytes, ZSTD_LEVEL).map(|z| z.len()).ok();
    let v = a.engine().vocab();
    let token_bytes: usize = (0..v.len() as u32).map(|i| v.token_bytes(i).map_or(0, <[u8]>::len)).sum();
    let vocab_bytes = (v.len() + 1) * 4 + token_bytes + v.len() + v.eos().len() * 4;
    Ok((
        a.engine().clone(),
        json!({"artifact_bytes": bytes.len(), "artifact_zstd_bytes": zstd,
               "artifact_zstd_without_vocab_bytes": zstd_without_vocab, "artifact_vocab_bytes": vocab_bytes,
               "open_us": verified, "open_unchecked_us": unchecked}),
    ))
}

fn run_job(tok: &Tokenizer, a: &WorkerArgs, job: &Value) -> Value {
    let id = job["id"].clone();
    let traces: Vec<Vec<u32>> = serde_json::from_value(job["traces"].clone()).unwrap_or_default();
    reset_peak_rss();
    let cpu0 = process_cpu_ms();
    let t0 = Instant::now();
    let compiled = std::thread::scope(|s| s.spawn(|| catch(|| compile(job, tok, a))).join());
    let (compiled, stats, bytes, save_ms) = match compiled.unwrap_or_else(|_| Err("compile thread panicked".into())) {
        Ok(Ok(e)) => e,
        Ok(Err(e)) => {
            return json!({"id": id, "compiled": false, "compile_ms": t0.elapsed().as_secs_f64() * 1e3, "error": e})
        }
        Err(p) => {
            return json!({"id": id, "compiled": false, "compile_ms": t0.elapsed().as_secs_f64() * 1e3,
                          "error": format!("panic: {p}")})
        }
    };
    let compile_ms = t0.elapsed().as_secs_f64() * 1e3 - save_ms;
    // (Making the artifact's bytes runs on one thread: its CPU time is its wall time.)
    let compile_cpu_ms = process_cpu_ms() - cpu0 - save_ms;
    drop(compiled);
    // Serve from the artifact, as a server would: the timed passes run on the mapped views.
    let dir = a.out.parent().map(std::path::Path::to_path_buf).unwrap_or_else(std::env::temp_dir);
    let (engine, open) = match open_artifact(&bytes, &dir, &id, 20) {
        Ok(x) => x,
        Err(e) => {
            return json!({"id": id, "compiled": false, "compile_ms": compile_ms, "error": format!("artifact: {e}")})
        }
    };
    drop(bytes);
    let mut buf = vec![0u32; engine.vocab().len().div_ceil(32)];
    let first = run_pass(&engine, &traces, &a.eos, &mut buf);
    let (mut mask_min, mut commit_min) = (first.mask_us.clone(), first.commit_us.clone());
    for _ in 1..a.replays.max(1) {
        let p = run_pass(&engine, &traces, &a.eos, &mut buf);
        min_into(&mut mask_min, &p.mask_us);
        min_into(&mut commit_min, &p.commit_us);
    }
    if std::env::var_os("DWAC_MASK_TRACE").is_some() {
        let mut idx: Vec<usize> = (0..mask_min.len()).collect();
        idx.sort_by(|&x, &y| mask_min[y].total_cmp(&mask_min[x]));
        for &i in idx.iter().take(5) {
            eprintln!("SLOW job {id} mask #{i}: {:.1} us", mask_min[i]);
        }
    }
    json!({
        "id": id, "compiled": true, "compile_ms": compile_ms, "compile_cpu_ms": compile_cpu_ms, "ttfm_ms": null,
        "mask_us": first.mask_us, "mask_us_min": mask_min,
        "commit_us": first.commit_us, "commit_us_min": commit_min,
        "trace_masks": first.trace_masks, "trace_commits": first.trace_commits,
        "masks": first.mask_us.len(), "commits": first.commit_us.len(),
        "rejected_traces": first.rejected, "token_not_in_mask": first.not_in_mask,
        "eos_not_in_mask": first.eos_missing, "errors": first.errors.iter().take(20).collect::<Vec<_>>(),
        "undecided": first.undecided, "masks_with_undecided": first.masks_with_undecided,
        "mask_fallbacks": first.fallbacks,
        "tables": stats,
        "artifact_bytes": open["artifact_bytes"], "artifact_zstd_bytes": open["artifact_zstd_bytes"],
        "artifact_zstd_without_vocab_bytes": open["artifact_zstd_without_vocab_bytes"],
        "artifact_vocab_bytes": open["artifact_vocab_bytes"], "save_ms": save_ms, "open_us": open["open_us"], "open_unchecked_us": open["open_unchecked_us"],
        "peak_rss_mb": peak_rss_mb(),
    })
}

pub fn run(a: WorkerArgs) -> Result<()> {
    let t_setup = Instant::now();
    let tok = Tokenizer::from_file(&a.tokenizer).with_context(|| format!("loading {}", a.tokenizer.display()))?;
    let setup_ms = t_setup.elapsed().as_secs_f64() * 1e3;
    // The per-vocabulary work (the vocabulary trie and its index, and the process-wide caches a
    // first JSON grammar fills), done up front as the glrmask peer does it (`{}` compiled once
    // before the first job), so that job order does not decide which job carries it.
    let t_warm = Instant::now();
    let warm = compile_schema(&json!({}), &a.schema_options())
        .map_err(|e| e.message)
        .and_then(|sg| compile_engine(&sg.grammar, tok.vocab().clone()).map(|_| ()).map_err(|e| e.to_string()));
    let warmup_ms = t_warm.elapsed().as_secs_f64() * 1e3;
    let jobs = std::fs::File::open(&a.jobs).with_context(|| format!("opening {}", a.jobs.display()))?;
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(&a.out).with_context(|| format!("creating {}", a.out.display()))?,
    );
    let peer = if a.python_separators { "dwac-sep" } else { "dwac" };
    let env = json!({"event": "env", "peer": peer, "version": env!("CARGO_PKG_VERSION"),
                     "vocab_size": tok.vocab().len(), "eos": a.eos, "python_overhead_ns": null,
                     "setup_ms": setup_ms, "warmup_ms": warmup_ms, "warmup_error": warm.err(),
                     "warmup_schema": "{}", "replays": a.replays, "language": a.language()});
    writeln!(out, "{env}")?;
    out.flush()?;
    let _quiet = crate::util::Silenced::install();
    for line in std::io::BufReader::new(jobs).lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let job: Value = serde_json::from_str(&line).context("bad job line")?;
        let r = run_job(&tok, &a, &job);
        writeln!(out, "{r}")?;
        out.flush()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::report;
    use dwac_compile::dwa::MaskOptions;

    /// A grammar whose every lexer state is over the determinizer's work budget leaves all its
    /// tokens UNDECIDED: every mask decides them by committing them. The worker must count that
    /// from the runtime's counters, and the report must show it (not a constant 0).
    #[test]
    fn undecided_tokens_are_counted_and_reported() {
        let vocab = dwac_tests::synthetic_vocab(&[b"a", b"b", b"ab", b"ba", b"aab"]);
        let src = "start: x+\nx: \"a\" | \"b\" | \"ab\"\n";
        let g = dwac_compile::parse_source(dwac_compile::SourceKind::Lark, src).expect("grammar");
        let engine = EngineOptions {
            mask_options: MaskOptions { work_per_lexer_state: 0, saturate: false, ..MaskOptions::default() },
            ..EngineOptions::default()
        };
        let compiler = dwac_compile::Compiler { engine, ..Default::default() };
        let (engine, stats) = compiler.compile_engine(&g, vocab).expect("compile");
        let undecided_at_compile = stats.mask.as_ref().map_or(0, |m| m.undecided_tokens);
        assert!(undecided_at_compile > 0, "the budget of 0 leaves tokens UNDECIDED");
        let engine = Arc::new(engine);
        let eos: Vec<u32> = engine.vocab().eos().to_vec();
        let mut buf = vec![0u32; engine.vocab().len().div_ceil(32)];
        // "a", "b", "ab": three commits, four masks.
        let p = run_pass(&engine, &[vec![0, 1, 2]], &eos, &mut buf);
        assert_eq!((p.rejected, p.not_in_mask, p.eos_missing), (0, 0, 0));
        assert_eq!(p.masks_with_undecided, 4, "every mask had UNDECIDED tokens");
        assert!(p.undecided >= 4, "{} UNDECIDED tokens decided", p.undecided);
        assert_eq!(p.fallbacks, 0);

        // The report from such a job line says so, in its JSON and its markdown.
        let line = json!({"id": "j", "compiled": true, "compile_ms": 1.0, "mask_us": p.mask_us,
            "mask_us_min": p.mask_us, "commit_us": p.commit_us, "commit_us_min": p.commit_us,
            "trace_masks": p.trace_masks, "trace_commits": p.trace_commits, "rejected_traces": 0,
            "token_not_in_mask": 0, "eos_not_in_mask": 0, "undecided": p.undecided,
            "masks_with_undecided": p.masks_with_undecided, "mask_fallbacks": 3});
        let w = crate::bench::Workload {
            name: "schemas-test".into(),
            tokenizer: "test".into(),
            jobs_path: "jobs.jsonl".into(),
            jobs: vec![("j".into(), vec![3])],
        };
        let env = json!({"event": "env", "language": {"schema": "test language"}});
        let runs = [report::WorkloadRun { workload: &w, eos, engines: vec![("dwac".into(), Ok((env, vec![line])))] }];
        let rep = report::build(&runs, &[], 1, 0.0);
        let e = &rep.json["workloads"][0]["engines"]["dwac"];
        assert_eq!(e["masks_with_undecided"], 4);
        assert_eq!(e["undecided_tokens_committed"], p.undecided);
        assert_eq!(e["mask_fallbacks"], 3);
        assert_eq!(e["language"], "test language");
        let md = report::markdown(&rep);
        let row = md.lines().find(|l| l.starts_with("| dwac | 1/1 |")).expect("compile row");
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!(&cells[12..15], &["3", "4", &p.undecided.to_string()], "{row}");
    }
}
