//! `cargo dwac-bench schema-bench`: JSONSchemaBench / MaskBench (Glaiveai2K + Github_easy) through the
//! JSON Schema compiler, optionally next to llguidance (`--peer`).
//!
//! Every schema is compiled in a worker subprocess (`dwac-bench schema-worker`, or the llguidance peer
//! binary, which speaks the same protocol) whose address space is capped with `RLIMIT_AS`
//! (set with `setrlimit` between fork and exec). The parent gives each compilation a wall-clock
//! limit; a worker that overruns is killed, the schema is marked `timeout`, and a fresh worker
//! is started. A worker that dies (allocation failure under the cap, abort, signal) marks the
//! schema `error`.
//!
//! Protocol (one JSON object per line): the worker prints `{"event":"ready"}` once initialized;
//! each job `{"id","schema","instances":[text,...]}` on stdin is answered by
//! `{"id","event":"compiled"}` as soon as compilation ends (the wall limit covers only that
//! part), then by `{"id","compiled","error":{"keyword","pointer","message"}|null,"panic",
//! "compile_ms","tables_bytes","accepted":[bool,...]}`.
//!
//! The instance texts are made once, by the parent: `json_dumps(order_instance(schema, data))`,
//! so both engines judge exactly the same bytes.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use dwac_grammar::schema::order_instance;
use dwac_testdata::{json_dumps, maskbench_files};
use serde_json::{json, Value};

use crate::util::{catch, round, tokenizer_file};
use dwac_measure::pct;

pub const SPLITS: [&str; 2] = ["Glaiveai2K", "Github_easy"];

mod worker;

pub use worker::worker;

// ---------------------------------------------------------------------------------------------
// The parent: worker processes with limits.

struct Proc {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

struct Worker {
    name: &'static str,
    program: PathBuf,
    args: Vec<String>,
    mem_bytes: u64,
    proc: Option<Proc>,
    restarts: usize,
}

#[derive(Clone, Debug)]
enum Status {
    Compiled,
    Refused { keyword: String, message: String },
    Timeout,
    Error(String),
}

#[derive(Clone, Debug)]
struct Outcome {
    status: Status,
    compile_ms: Option<f64>,
    ttfm_ms: Option<f64>,
    tables_bytes: Option<u64>,
    /// Verdicts per instance, when compiled and judged.
    accepted: Option<Vec<bool>>,
    note: Option<String>,
}

impl Outcome {
    fn failed(status: Status) -> Outcome {
        Outcome { status, compile_ms: None, ttfm_ms: None, tables_bytes: None, accepted: None, note: None }
    }
}

const READY_LIMIT: Duration = Duration::from_secs(300);
const JUDGE_LIMIT: Duration = Duration::from_secs(120);

impl Worker {
    fn new(name: &'static str, program: PathBuf, args: Vec<String>, mem_bytes: u64) -> Worker {
        Worker { name, program, args, mem_bytes, proc: None, restarts: 0 }
    }

    fn spawn(&mut self) -> Result<()> {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let lim = self.mem_bytes;
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: the closure runs in the forked child before exec and only calls
            // `setrlimit`, which is async-signal-safe; it allocates nothing.
            unsafe {
                cmd.pre_exec(move || {
                    let r = libc::rlimit { rlim_cur: lim as libc::rlim_t, rlim_max: lim as libc::rlim_t };
                    if libc::setrlimit(libc::RLIMIT_AS, &r) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let mut child =
            cmd.spawn().with_context(|| format!("starting {} worker {}", self.name, self.program.display()))?;
        let stdin = child.stdin.take().context("worker stdin")?;
        let stdout = child.stdout.take().context("worker stdout")?;
        let stderr_pipe = child.stderr.take().context("worker stderr")?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let tail = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut r = BufReader::new(stderr_pipe);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match r.by_ref().take(1 << 16).read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let mut q = tail.lock().unwrap_or_else(|e| e.into_inner());
                        q.push_back(String::from_utf8_lossy(&buf).trim_end().to_string());
                        if q.len() > 200 {
                            q.pop_front();
                        }
                    }
                }
            }
        });
        let mut p = Proc { child, stdin, lines: rx, stderr };
        match p.lines.recv_timeout(READY_LIMIT) {
            Ok(l) if l.contains("\"ready\"") => {
                self.proc = Some(p);
                Ok(())
            }
            other => {
                let _ = p.child.kill();
                let status = p.child.wait().ok();
                let tail: Vec<String> = p.stderr.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect();
                anyhow::bail!(
                    "{} worker did not start ({:?}, exit {:?}): {}",
                    self.name,
                    other.map_err(|e| e.to_string()),
                    status,
                    tail.join("\n")
                )
            }
        }
    }

    /// Kill the current process (if any) and describe how it ended.
    fn reap(&mut self, kill: bool) -> String {
        let Some(mut p) = self.proc.take() else { return String::new() };
        if kill {
            let _ = p.child.kill();
        }
        let status = p.child.wait().map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
        self.restarts += 1;
        // Give the stderr reader a moment to drain the last lines.
        std::thread::sleep(Duration::from_millis(20));
        let tail: Vec<String> = p.stderr.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect();
        // The line that says what happened (a backtrace may follow it), and its kind.
        let kinds = [
            ("memory allocation of", "oom"),
            ("out of memory", "oom"),
            ("Cannot allocate memory", "oom"),
            ("capacity overflow", "oom"),
            ("overflowed its stack", "stack overflow"),
            ("panicked", "panic"),
        ];
        let found = tail.iter().rev().find_map(|l| kinds.iter().find(|(n, _)| l.contains(n)).map(|(_, k)| (l, *k)));
        let (mut line, kind) = match found {
            Some((l, k)) => (l.clone(), k),
            None => (tail.last().cloned().unwrap_or_default(), "crash"),
        };
        if line.len() > 200 {
            let mut cut = 200;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
        }
        format!("{kind} ({status}): {line}")
    }

    fn run(&mut self, id: &str, job_line: &str, limit: Duration) -> Result<Outcome> {
        if self.proc.is_none() {
            self.spawn()?;
        }
        let p = self.proc.as_mut().context("no worker")?;
        if writeln!(p.stdin, "{job_line}").and_then(|_| p.stdin.flush()).is_err() {
            let why = self.reap(true);
            return Ok(Outcome::failed(Status::Error(format!("worker gone before the job: {why}"))));
        }
        match p.lines.recv_timeout(limit) {
            Ok(l) => {
                let v: Value = serde_json::from_str(&l).unwrap_or(Value::Null);
                if v["event"] != "compiled" || v["id"] != id {
                    let why = self.reap(true);
                    return Ok(Outcome::failed(Status::Error(format!("protocol error: {l:.200} ({why})"))));
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                self.reap(true);
                return Ok(Outcome::failed(Status::Timeout));
            }
            Err(RecvTimeoutError::Disconnected) => {
                let why = self.reap(false);
                return Ok(Outcome::failed(Status::Error(why)));
            }
        }
        let p = self.proc.as_mut().context("no worker")?;
        let line = match p.lines.recv_timeout(JUDGE_LIMIT) {
            Ok(l) => l,
            Err(RecvTimeoutError::Timeout) => {
                self.reap(true);
                let mut o = Outcome::failed(Status::Compiled);
                o.note = Some(format!("judging exceeded {} s", JUDGE_LIMIT.as_secs()));
                return Ok(o);
            }
            Err(RecvTimeoutError::Disconnected) => {
                let why = self.reap(false);
                let mut o = Outcome::failed(Status::Compiled);
                o.note = Some(format!("worker died while judging: {why}"));
                return Ok(o);
            }
        };
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        if v["id"] != id {
            let why = self.reap(true);
            return Ok(Outcome::failed(Status::Error(format!("protocol error: {line:.200} ({why})"))));
        }
        let compile_ms = v["compile_ms"].as_f64();
        let status = if v["compiled"] == true {
            Status::Compiled
        } else if let Some(p) = v["panic"].as_str() {
            Status::Error(format!("panic: {p}"))
        } else {
            let message = v["error"]["message"].as_str().unwrap_or("").to_string();
            let keyword = match v["error"]["keyword"].as_str() {
                Some(k) if !k.is_empty() => k.to_string(),
                _ => peer_keyword(&message),
            };
            Status::Refused { keyword, message }
        };
        let accepted = v["accepted"].as_array().map(|a| a.iter().map(|x| x == true).collect());
        Ok(Outcome {
            status,
            compile_ms,
            ttfm_ms: v["ttfm_ms"].as_f64(),
            tables_bytes: v["tables_bytes"].as_u64(),
            accepted: if v["compiled"] == true { accepted } else { None },
            note: v["panic"].as_str().filter(|_| v["compiled"] == true).map(str::to_string),
        })
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some(mut p) = self.proc.take() {
            let _ = p.child.kill();
            let _ = p.child.wait();
        }
    }
}

/// A refusal keyword for an error message that carries none (llguidance's messages).
fn peer_keyword(msg: &str) -> String {
    if let Some(i) = msg.find("Unimplemented keys: [") {
        let rest = &msg[i + "Unimplemented keys: [".len()..];
        let end = rest.find(']').unwrap_or(rest.len());
        return rest[..end].replace('"', "").replace(", ", ",");
    }
    for (needle, kw) in [
        ("oneOf constraints are not supported", "oneOf"),
        ("Unknown format", "format"),
        ("min/maxProperties", "minProperties/maxProperties"),
        ("circular references", "$ref (circular)"),
        ("lookaround", "pattern (lookaround)"),
        ("regex", "pattern"),
        ("Unsatisfiable", "unsatisfiable"),
        ("too many", "limits"),
        ("$ref", "$ref"),
    ] {
        if msg.contains(needle) {
            return kw.to_string();
        }
    }
    let head: String = msg.chars().take(40).collect();
    head.split(':').next().unwrap_or("").trim().to_string()
}

// ---------------------------------------------------------------------------------------------
// The run.

pub(crate) struct Schema {
    pub(crate) name: String,
    pub(crate) split: &'static str,
    pub(crate) schema: Value,
    pub(crate) texts: Vec<String>,
    pub(crate) valid: Vec<bool>,
}

pub(crate) fn load(limit: Option<usize>, filter: Option<&str>) -> Result<(Vec<Schema>, usize)> {
    let mut out = Vec::new();
    let mut per_split: BTreeMap<&str, usize> = BTreeMap::new();
    let mut order_panics = 0;
    for f in maskbench_files() {
        let name = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let Some(split) = SPLITS.iter().find(|s| name.starts_with(&format!("{s}---"))) else { continue };
        if filter.is_some_and(|s| !name.contains(s)) {
            continue;
        }
        let n = per_split.entry(split).or_default();
        if limit.is_some_and(|l| *n >= l) {
            continue;
        }
        *n += 1;
        let text = std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
        let v: Value = serde_json::from_str(&text).with_context(|| format!("parsing {}", f.display()))?;
        let schema = v["schema"].clone();
        let (mut texts, mut valid) = (Vec::new(), Vec::new());
        for t in v["tests"].as_array().into_iter().flatten() {
            let data = &t["data"];
            let s = match catch(|| json_dumps(&order_instance(&schema, data))) {
                Ok(s) => s,
                Err(_) => {
                    order_panics += 1;
                    json_dumps(data)
                }
            };
            texts.push(s);
            valid.push(t["valid"].as_bool().unwrap_or(false));
        }
        out.push(Schema { name: name.trim_end_matches(".json").to_string(), split, schema, texts, valid });
    }
    Ok((out, order_panics))
}

#[derive(Default)]
struct Agg {
    schemas: usize,
    with_valid: usize,
    compiled: usize,
    compiled_with_valid: usize,
    refused: usize,
    timeout: usize,
    error: usize,
    keywords: BTreeMap<String, usize>,
    valid_on_compiled: usize,
    valid_accepted: usize,
    invalid_on_compiled: usize,
    invalid_rejected: usize,
    /// Compiled schemas (with ≥ 1 valid instance) whose valid instances were all accepted.
    all_valid_accepted: usize,
    unjudged: usize,
    compile_ms: Vec<f64>,
    ttfm_ms: Vec<f64>,
    tables_bytes: Vec<f64>,
}

impl Agg {
    fn add(&mut self, s: &Schema, o: &Outcome) {
        let has_valid = s.valid.iter().any(|v| *v);
        self.schemas += 1;
        self.with_valid += has_valid as usize;
        match &o.status {
            Status::Compiled => {
                self.compiled += 1;
                self.compiled_with_valid += has_valid as usize;
                if let Some(ms) = o.compile_ms {
                    self.compile_ms.push(ms);
                }
                if let Some(ms) = o.ttfm_ms {
                    self.ttfm_ms.push(ms);
                }
                if let Some(b) = o.tables_bytes {
                    self.tables_bytes.push(b as f64);
                }
                match &o.accepted {
                    Some(acc) if acc.len() == s.valid.len() => {
                        let mut all = true;
                        for (v, a) in s.valid.iter().zip(acc) {
                            if *v {
                                self.valid_on_compiled += 1;
                                self.valid_accepted += *a as usize;
                                all &= *a;
                            } else {
                                self.invalid_on_compiled += 1;
                                self.invalid_rejected += !*a as usize;
                            }
                        }
                        if has_valid && all {
                            self.all_valid_accepted += 1;
                        }
                    }
                    _ => self.unjudged += 1,
                }
            }
            Status::Refused { keyword, .. } => {
                self.refused += 1;
                *self.keywords.entry(keyword.clone()).or_default() += 1;
            }
            Status::Timeout => self.timeout += 1,
            Status::Error(_) => self.error += 1,
        }
    }

    fn to_json(&self) -> Value {
        let mut c = self.compile_ms.clone();
        c.sort_by(f64::total_cmp);
        let mut t = self.ttfm_ms.clone();
        t.sort_by(f64::total_cmp);
        let mut b = self.tables_bytes.clone();
        b.sort_by(f64::total_cmp);
        let share =
            |a: usize, n: usize| if n == 0 { Value::Null } else { json!(round(a as f64 / n as f64 * 100.0, 2)) };
        let mut kws: Vec<(&String, &usize)> = self.keywords.iter().collect();
        kws.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let p = |v: &[f64], q: f64| pct(v, q).map(|x| round(x, 2));
        json!({
            "schemas": self.schemas,
            "schemas_with_valid": self.with_valid,
            "compiled": self.compiled,
            "compiled_with_valid": self.compiled_with_valid,
            "compiled_share_of_with_valid_pct": share(self.compiled_with_valid, self.with_valid),
            "refused": self.refused, "timeout": self.timeout, "error": self.error,
            "refusal_keywords": kws.iter().map(|(k, n)| json!([k, n])).collect::<Vec<_>>(),
            "valid_on_compiled": self.valid_on_compiled, "valid_accepted": self.valid_accepted,
            "valid_accepted_pct": share(self.valid_accepted, self.valid_on_compiled),
            "invalid_on_compiled": self.invalid_on_compiled, "invalid_rejected": self.invalid_rejected,
            "invalid_rejected_pct": share(self.invalid_rejected, self.invalid_on_compiled),
            "false_positives": self.invalid_on_compiled - self.invalid_rejected,
            "compiled_all_valid_accepted": self.all_valid_accepted,
            "unjudged": self.unjudged,
            "compile_ms": {"p50": p(&c, 0.5), "p90": p(&c, 0.9), "p99": p(&c, 0.99), "max": p(&c, 1.0), "n": c.len()},
            "ttfm_ms": if t.is_empty() { Value::Null } else {
                json!({"p50": p(&t, 0.5), "p90": p(&t, 0.9), "p99": p(&t, 0.99), "max": p(&t, 1.0), "n": t.len()}) },
            "tables_bytes": if b.is_empty() { Value::Null } else {
                json!({"p50": pct(&b, 0.5).map(|x| x as u64), "max": pct(&b, 1.0).map(|x| x as u64)}) },
        })
    }
}

pub struct BenchArgs {
    pub limit: Option<usize>,
    pub filter: Option<String>,
    pub json: bool,
    pub out: Option<PathBuf>,
    pub peer: bool,
    pub tokenizer: String,
    pub timeout_s: f64,
    pub mem_gib: f64,
}

fn outcome_json(o: &Outcome, s: &Schema) -> Value {
    let (status, keyword, message) = match &o.status {
        Status::Compiled => ("compiled", None, None),
        Status::Refused { keyword, message } => ("refused", Some(keyword.clone()), Some(message.clone())),
        Status::Timeout => ("timeout", None, None),
        Status::Error(e) => ("error", None, Some(e.clone())),
    };
    let (mut va, mut vn, mut ir, mut inn) = (0, 0, 0, 0);
    if let Some(acc) = &o.accepted {
        for (v, a) in s.valid.iter().zip(acc) {
            if *v {
                vn += 1;
                va += *a as usize;
            } else {
                inn += 1;
                ir += !*a as usize;
            }
        }
    }
    json!({
        "status": status, "keyword": keyword, "message": message,
        "compile_ms": o.compile_ms.map(|x| round(x, 3)), "ttfm_ms": o.ttfm_ms.map(|x| round(x, 3)),
        "tables_bytes": o.tables_bytes,
        "valid_accepted": o.accepted.as_ref().map(|_| json!([va, vn])),
        "invalid_rejected": o.accepted.as_ref().map(|_| json!([ir, inn])),
        "note": o.note,
    })
}

pub fn run(a: BenchArgs) -> Result<()> {
    let t_all = Instant::now();
    let (schemas, order_panics) = load(a.limit, a.filter.as_deref())?;
    anyhow::ensure!(!schemas.is_empty(), "no MaskBench schemas selected");
    let mem = (a.mem_gib * (1u64 << 30) as f64) as u64;
    let limit = Duration::from_secs_f64(a.timeout_s);
    let tok = if a.tokenizer == "bytes" { PathBuf::from("bytes") } else { tokenizer_file(&a.tokenizer) };
    let exe = std::env::current_exe().context("locating the dwac-bench binary")?;
    let mut dwac =
        Worker::new("dwac", exe, vec!["schema-worker".into(), "--tokenizer".into(), tok.display().to_string()], mem);
    let mut peer = if a.peer {
        anyhow::ensure!(a.tokenizer != "bytes", "--peer needs a real tokenizer.json");
        let bin = crate::util::build_rust_peer("llguidance")?;
        Some(Worker::new("llguidance", bin, vec!["--tokenizer".into(), tok.display().to_string()], mem))
    } else {
        None
    };
    dwac.spawn()?;
    if let Some(p) = peer.as_mut() {
        p.spawn()?;
    }

    let bar = crate::util::bar(schemas.len() as u64, a.json);
    let log_progress = !a.json && !std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut results: Vec<(Outcome, Option<Outcome>)> = Vec::with_capacity(schemas.len());
    for (i, s) in schemas.iter().enumerate() {
        bar.inc(1);
        if log_progress && i % 250 == 0 {
            eprintln!("[{:>6.1} s] {i}/{} {}", t_all.elapsed().as_secs_f64(), schemas.len(), s.name);
        }
        bar.set_message(s.name.chars().take(40).collect::<String>());
        let job = json!({"id": s.name, "schema": s.schema, "instances": s.texts}).to_string();
        let d = dwac.run(&s.name, &job, limit)?;
        let p = match peer.as_mut() {
            Some(w) => Some(w.run(&s.name, &job, limit)?),
            None => None,
        };
        results.push((d, p));
    }
    bar.finish_and_clear();
    let elapsed_s = t_all.elapsed().as_secs_f64();

    // Aggregates per engine, per split and in total.
    let mut aggs: BTreeMap<(&str, &str), Agg> = BTreeMap::new();
    for (s, (d, p)) in schemas.iter().zip(&results) {
        for split in [s.split, "total"] {
            aggs.entry(("dwac", split)).or_default().add(s, d);
            if let Some(p) = p {
                aggs.entry(("llguidance", split)).or_default().add(s, p);
            }
        }
    }
    // Per-schema compile-time ratio where both compiled.
    let mut ratios: Vec<f64> = results
        .iter()
        .filter_map(|(d, p)| {
            let p = p.as_ref()?;
            match (&d.status, &p.status, d.compile_ms, p.compile_ms) {
                (Status::Compiled, Status::Compiled, Some(a), Some(b)) if b > 0.0 => Some(a / b),
                _ => None,
            }
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    let mut ttfm_ratios: Vec<f64> = results
        .iter()
        .filter_map(|(d, p)| {
            let p = p.as_ref()?;
            match (&d.status, &p.status, d.compile_ms, p.ttfm_ms) {
                (Status::Compiled, Status::Compiled, Some(a), Some(b)) if b > 0.0 => Some(a / b),
                _ => None,
            }
        })
        .collect();
    ttfm_ratios.sort_by(f64::total_cmp);

    let engines: Vec<&str> = if a.peer { vec!["dwac", "llguidance"] } else { vec!["dwac"] };
    let mut summary = serde_json::Map::new();
    for e in &engines {
        let mut m = serde_json::Map::new();
        for split in SPLITS.iter().copied().chain(["total"]) {
            if let Some(g) = aggs.get(&(*e, split)) {
                m.insert(split.to_string(), g.to_json());
            }
        }
        summary.insert(e.to_string(), Value::Object(m));
    }
    let report = json!({
        "tokenizer": tok.display().to_string(),
        "timeout_s": a.timeout_s, "mem_gib": a.mem_gib,
        "elapsed_s": round(elapsed_s, 1),
        "order_instance_panics": order_panics,
        "worker_restarts": {"dwac": dwac.restarts, "llguidance": peer.as_ref().map(|p| p.restarts)},
        "summary": summary,
        "compile_ratio_dwac_over_llguidance": if ratios.is_empty() { Value::Null } else { json!({
            "n": ratios.len(), "p50": pct(&ratios, 0.5).map(|x| round(x, 3)),
            "p90": pct(&ratios, 0.9).map(|x| round(x, 3)), "p99": pct(&ratios, 0.99).map(|x| round(x, 3)),
            "vs_ttfm_p50": pct(&ttfm_ratios, 0.5).map(|x| round(x, 3)) }) },
        "schemas": schemas.iter().zip(&results).map(|(s, (d, p))| json!({
            "name": s.name, "split": s.split,
            "valid": s.valid.iter().filter(|v| **v).count(), "invalid": s.valid.iter().filter(|v| !**v).count(),
            "dwac": outcome_json(d, s),
            "llguidance": p.as_ref().map(|p| outcome_json(p, s)),
        })).collect::<Vec<_>>(),
    });
    if let Some(p) = &a.out {
        std::fs::write(p, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", p.display()))?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    print_human(&report, &engines, &schemas, &results, elapsed_s);
    Ok(())
}

fn print_human(
    report: &Value,
    engines: &[&str],
    schemas: &[Schema],
    results: &[(Outcome, Option<Outcome>)],
    elapsed_s: f64,
) {
    let f = |v: &Value| -> String {
        match v {
            Value::Null => "-".into(),
            Value::Number(n) => n.to_string(),
            other => other.to_string(),
        }
    };
    println!(
        "MaskBench Glaiveai2K + Github_easy: {} schemas, tokenizer {}, limits {} s / {} GiB per compilation, {:.1} s",
        schemas.len(),
        Path::new(report["tokenizer"].as_str().unwrap_or(""))
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        report["timeout_s"],
        report["mem_gib"],
        elapsed_s
    );
    let rows: [(&str, &str); 17] = [
        ("schemas", "schemas"),
        ("schemas_with_valid", "schemas with ≥1 valid instance"),
        ("compiled_with_valid", "  compiled (of those)"),
        ("compiled_share_of_with_valid_pct", "  compiled %  (target ≥ 98)"),
        ("compiled", "compiled (all schemas)"),
        ("refused", "refused"),
        ("timeout", "timeout"),
        ("error", "error (oom/crash/panic)"),
        ("valid_accepted", "valid instances accepted"),
        ("valid_on_compiled", "  of valid on compiled"),
        ("valid_accepted_pct", "  valid accepted %"),
        ("invalid_rejected", "invalid instances rejected"),
        ("invalid_on_compiled", "  of invalid on compiled"),
        ("invalid_rejected_pct", "  invalid rejected %"),
        ("false_positives", "  invalid accepted"),
        ("compiled_all_valid_accepted", "compiled w/ all valid accepted"),
        ("unjudged", "compiled but not judged"),
    ];
    for split in SPLITS.iter().copied().chain(["total"]) {
        println!();
        let mut head = format!("{:<34}", format!("[{split}]"));
        for e in engines {
            head.push_str(&format!(" {:>14}", e));
        }
        println!("{head}");
        for (key, label) in rows {
            let mut line = format!("{label:<34}");
            for e in engines {
                line.push_str(&format!(" {:>14}", f(&report["summary"][e][split][key])));
            }
            println!("{line}");
        }
        for (key, label) in [("compile_ms", "compile ms"), ("ttfm_ms", "time to first mask ms")] {
            for q in ["p50", "p90", "p99", "max"] {
                let vals: Vec<String> = engines.iter().map(|e| f(&report["summary"][e][split][key][q])).collect();
                if vals.iter().all(|v| v == "-") {
                    continue;
                }
                let mut line = format!("{:<34}", format!("{label} {q}"));
                for v in vals {
                    line.push_str(&format!(" {:>14}", v));
                }
                println!("{line}");
            }
        }
        for q in ["p50", "max"] {
            let mut line = format!("{:<34}", format!("tables_bytes {q}"));
            for e in engines {
                line.push_str(&format!(" {:>14}", f(&report["summary"][e][split]["tables_bytes"][q])));
            }
            println!("{line}");
        }
    }
    if report["order_instance_panics"] != 0 {
        println!(
            "\norder_instance panicked on {} instances (serialized in stored key order instead)",
            report["order_instance_panics"]
        );
    }
    println!("worker restarts (after a timeout or a crash): {}", report["worker_restarts"]);
    let r = &report["compile_ratio_dwac_over_llguidance"];
    if !r.is_null() {
        println!(
            "\ncompile time dwac / llguidance, per schema where both compiled (n = {}): p50 {}  p90 {}  p99 {}; \
             dwac compile / llguidance time-to-first-mask p50 {}",
            r["n"], r["p50"], r["p90"], r["p99"], r["vs_ttfm_p50"]
        );
    }
    for e in engines {
        let kws = &report["summary"][e]["total"]["refusal_keywords"];
        if let Some(a) = kws.as_array().filter(|a| !a.is_empty()) {
            println!("\n{e}: refusal keywords (schemas)");
            for k in a.iter().take(15) {
                println!("  {:<40} {:>5}", k[0].as_str().unwrap_or(""), k[1]);
            }
        }
    }
    // Problems worth a name: false positives, rejected valid instances, timeouts, errors.
    let mut fp = Vec::new();
    let mut fv = Vec::new();
    let mut bad = Vec::new();
    for (s, (d, _)) in schemas.iter().zip(results) {
        match &d.status {
            Status::Timeout => bad.push(format!("{}: timeout", s.name)),
            Status::Error(e) => bad.push(format!("{}: {e:.160}", s.name)),
            _ => {}
        }
        if let Some(note) = &d.note {
            bad.push(format!("{}: {note:.160}", s.name));
        }
        if let Some(acc) = &d.accepted {
            let nfp = s.valid.iter().zip(acc).filter(|(v, a)| !**v && **a).count();
            let nfv = s.valid.iter().zip(acc).filter(|(v, a)| **v && !**a).count();
            if nfp > 0 {
                fp.push(format!("{} ({nfp})", s.name));
            }
            if nfv > 0 {
                fv.push(format!("{} ({nfv})", s.name));
            }
        }
    }
    for (title, list) in [
        ("dwac: schemas with invalid instances accepted", fp),
        ("dwac: schemas with valid instances rejected", fv),
        ("dwac: timeouts and errors", bad),
    ] {
        if !list.is_empty() {
            println!("\n{title} ({}):", list.len());
            for l in list.iter().take(20) {
                println!("  {l}");
            }
            if list.len() > 20 {
                println!("  … ({} more; see --json)", list.len() - 20);
            }
        }
    }
}
