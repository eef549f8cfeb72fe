//! What the Rust peers of `dwac-bench bench` share (`peers/glrmask`, `peers/llguidance`): the
//! command line, the job file's loop, one replay's record of timed steps, the replays' minimum
//! and the result line's common fields. How each engine is driven (compiled, stepped, timed)
//! stays in its peer, next to the documentation of its API.
//!
//! Usage of a peer's bench mode: `dwac-peer-<engine> bench --tokenizer tokenizer.json --jobs
//! JOBS.jsonl --replays N --out OUT.jsonl --eos ID[,ID...] [--popcount] [--warmup SCHEMA|none]`.
//! The end tokens are the driver's (`dwac-bench bench` passes the ones dwac's tokenizer loader
//! finds), so every engine checks the same ones.
//!
//! JOBS.jsonl has one job a line, `{"id", "kind", "schema"?, "lark"?, "traces": [[ids]]}`;
//! OUT.jsonl gets a first `{"event": "env", ...}` line, then one result line per job.

use std::io::{BufRead, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};

pub use dwac_measure::{peak_rss_mb, process_cpu_ms, reset_peak_rss};

/// A peer's bench-mode arguments.
pub struct Args {
    /// The tokenizer.json.
    pub tokenizer: PathBuf,
    /// The jobs file.
    pub jobs: PathBuf,
    /// The results file.
    pub out: PathBuf,
    /// Replays of every trace.
    pub replays: usize,
    /// The end tokens whose bit a finished trace's last mask must have.
    pub eos: Vec<u32>,
    /// Count the allowed tokens of every mask of the first replay (outside the timed calls).
    pub popcount: bool,
    /// The schema compiled once before the first job (`--warmup none`: no warm-up).
    pub warmup: Option<String>,
}

/// The arguments after `bench`; `default_warmup` is the peer's warm-up schema when `--warmup` is
/// not given.
pub fn parse_args(args: &[String], peer: &str, default_warmup: Option<&str>) -> Result<Args> {
    let usage = format!(
        "usage: dwac-peer-{peer} bench --tokenizer tokenizer.json --jobs JOBS.jsonl --replays N --out OUT.jsonl \
         --eos ID[,ID...] [--popcount] [--warmup SCHEMA_JSON|none]"
    );
    if args.is_empty() {
        bail!("{usage}");
    }
    let get = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned());
    let need = |name: &str| get(name).with_context(|| format!("missing {name}\n{usage}"));
    let eos_text = need("--eos")?;
    let eos = eos_text
        .split(',')
        .map(|x| x.trim().parse::<u32>().with_context(|| format!("bad --eos {eos_text}")))
        .collect::<Result<Vec<_>>>()?;
    Ok(Args {
        tokenizer: need("--tokenizer")?.into(),
        jobs: need("--jobs")?.into(),
        out: need("--out")?.into(),
        replays: need("--replays")?.parse().context("bad --replays")?,
        eos,
        popcount: args.iter().any(|a| a == "--popcount"),
        warmup: match get("--warmup").as_deref() {
            None => default_warmup.map(str::to_string),
            Some("none") => None,
            Some(s) => Some(s.to_string()),
        },
    })
}

/// The message of a caught panic.
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}

/// A job's traces (token ids).
pub fn job_traces(job: &Value) -> Vec<Vec<u32>> {
    job["traces"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| {
                    t.as_array()
                        .map(|x| x.iter().filter_map(|v| v.as_u64().map(|v| v as u32)).collect())
                        .unwrap_or_default()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Write the env line, then run every job of `args.jobs` and write its result line (each line
/// flushed, so a worker stopped mid-run leaves the jobs it finished).
pub fn run_jobs(args: &Args, env: &Value, mut run_job: impl FnMut(&Value) -> Value) -> Result<()> {
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(&args.out).with_context(|| format!("creating {}", args.out.display()))?,
    );
    writeln!(out, "{env}")?;
    out.flush()?;
    let jobs = std::io::BufReader::new(
        std::fs::File::open(&args.jobs).with_context(|| format!("opening {}", args.jobs.display()))?,
    );
    for line in jobs.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let job: Value = serde_json::from_str(&line).context("bad job line")?;
        let r = run_job(&job);
        writeln!(out, "{r}")?;
        out.flush()?;
    }
    Ok(())
}

/// Per-step times of one replay over all traces, in trace order, and what went wrong.
#[derive(Default)]
pub struct Pass {
    /// Each mask's time, µs.
    pub mask_us: Vec<f64>,
    /// Each commit's time, µs.
    pub commit_us: Vec<f64>,
    /// Traces stopped by a refused commit or a panic.
    pub rejected: usize,
    /// Steps whose trace token was not in the mask.
    pub not_in_mask: usize,
    /// Finished traces whose last mask had no end token.
    pub eos_missing: usize,
    /// Masks timed per trace (a rejected trace stops after its failed commit).
    pub trace_masks: Vec<usize>,
    /// Commits timed per trace.
    pub trace_commits: Vec<usize>,
    /// Errors and panics, in order.
    pub errors: Vec<String>,
    /// Allowed tokens per mask (with `--popcount`).
    pub popcount: Vec<usize>,
}

impl Pass {
    /// Run one trace: `drive` steps it and records into the pass. A panic counts the trace as
    /// rejected, with its message among the errors.
    pub fn trace(&mut self, drive: impl FnOnce(&mut Pass)) {
        let (m0, c0) = (self.mask_us.len(), self.commit_us.len());
        if let Err(e) = catch_unwind(AssertUnwindSafe(|| drive(self))) {
            self.rejected += 1;
            self.errors.push(format!("panic: {}", panic_message(&*e)));
        }
        self.trace_masks.push(self.mask_us.len() - m0);
        self.trace_commits.push(self.commit_us.len() - c0);
    }
}

/// The first replay and the per-step minimum over all replays.
pub struct Replays {
    /// The first replay (its counters and errors are the result's).
    pub first: Pass,
    /// Per-step minimum of the mask times.
    pub mask_min: Vec<f64>,
    /// Per-step minimum of the commit times.
    pub commit_min: Vec<f64>,
}

/// Run `pass` `replays` times (at least once); only the first counts popcounts.
pub fn replay(replays: usize, popcount: bool, mut pass: impl FnMut(bool) -> Pass) -> Replays {
    let first = pass(popcount);
    let mut mask_min = first.mask_us.clone();
    let mut commit_min = first.commit_us.clone();
    for _ in 1..replays.max(1) {
        let p = pass(false);
        min_into(&mut mask_min, &p.mask_us);
        min_into(&mut commit_min, &p.commit_us);
    }
    Replays { first, mask_min, commit_min }
}

fn min_into(acc: &mut [f64], xs: &[f64]) {
    for (a, x) in acc.iter_mut().zip(xs) {
        if *x < *a {
            *a = *x;
        }
    }
}

impl Replays {
    /// The result line's fields every engine has: times, counters, the first 20 errors (300
    /// characters each), the job's peak RSS (read now), and the popcounts if counted.
    pub fn fields(&self, popcount: bool) -> Map<String, Value> {
        let f = &self.first;
        let errors: Vec<String> = f.errors.iter().take(20).map(|e| e.chars().take(300).collect()).collect();
        let mut r = json!({
            "mask_us": f.mask_us, "mask_us_min": self.mask_min,
            "commit_us": f.commit_us, "commit_us_min": self.commit_min,
            "trace_masks": f.trace_masks, "trace_commits": f.trace_commits,
            "masks": f.mask_us.len(), "commits": f.commit_us.len(),
            "rejected_traces": f.rejected, "token_not_in_mask": f.not_in_mask,
            "eos_not_in_mask": f.eos_missing, "errors": errors,
            "peak_rss_mb": peak_rss_mb(),
        });
        if popcount {
            r["mask_popcount"] = json!(f.popcount);
        }
        match r {
            Value::Object(m) => m,
            _ => unreachable!("a json! object"),
        }
    }
}
