//! `cargo dwac-bench compile-gate` (and the last part of `bench`): the compile-cost gate. A fixed
//! corpus of compiles (the large schemas, the slowest MaskBench schemas under every tokenizer,
//! tool calling with 100 and 500 real tools strict and open, the GBNF grammars and the
//! character-level Lark grammars) is compiled by this tree's `dwac` and by the base revision's
//! (`--base`, by default the commit before `HEAD`), alternately, in the same run, each compile in
//! a process of its own; their compile times (the least of `--runs`) and peak memory are put
//! side by side, and every input more than `--threshold` times slower or heavier than before
//! (and by more than [`SLACK_MS`] / [`SLACK_MB`], below which one process start differs from the
//! next) is named. Whether the two artifacts are byte for byte the same is reported too.
//!
//! The base is built from a worktree of the repository (`target/gate/base-src`, built into
//! `target/gate/base-target`; both kept, so the next run builds only what changed).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use dwac_testdata::{grammars_dir, repo_root};
use serde_json::{json, Value};

/// Below this many milliseconds of difference, a slower compile is noise, not a regression.
pub const SLACK_MS: f64 = 25.0;
/// Below this many MiB of difference, a heavier compile is noise (allocator arenas).
pub const SLACK_MB: f64 = 32.0;

/// `compile-gate`'s options.
#[derive(clap::Args, Clone)]
pub struct Args {
    /// The revision compared with this tree (any `git rev-parse` name); `HEAD` compares
    /// uncommitted work with the last commit.
    #[arg(long, default_value = "HEAD~1")]
    pub base: String,
    /// Tokenizers of the MaskBench schemas (every one by default); the large inputs, tool
    /// calling, the MaskBench schemas under vLLM's whitespace bound and the grammars take the
    /// first two.
    #[arg(long = "tokenizer", default_values_t = default_tokenizers())]
    pub tokenizers: Vec<String>,
    /// Compiles of each input by each binary (the least time is kept).
    #[arg(long, default_value_t = 2)]
    pub runs: usize,
    /// Slower or heavier by more than this factor is a regression.
    #[arg(long, default_value_t = 1.5)]
    pub threshold: f64,
    /// A compile's time limit (`dwac compile --max-seconds`).
    #[arg(long, default_value_t = 120.0)]
    pub max_seconds: f64,
    /// Exit 1 if an input regressed.
    #[arg(long)]
    pub fail: bool,
    /// Only inputs whose id contains this.
    #[arg(long)]
    pub only: Option<String>,
    /// Where `gate.md` and `gate.json` go.
    #[arg(long, default_value = "target/bench")]
    pub out_dir: PathBuf,
}

/// Every tokenizer of the shared data, the 128k and 151k vocabularies first.
pub fn default_tokenizers() -> Vec<String> {
    ["qwen3", "deepseek-r1", "gpt2", "qwen2", "phi-3.5-mini"].map(String::from).to_vec()
}

/// The slowest MaskBench schemas (file names), as `dwac compile` timed them under qwen3 on the
/// whole of Glaiveai2K and Github_easy (`bench/gate/maskbench-slowest.txt` says when).
const SLOWEST: &str = include_str!("../gate/maskbench-slowest.txt");

/// One compile of the corpus: its id, the `dwac compile` arguments before `--tokenizer`, the
/// tokenizer's name.
struct Input {
    id: String,
    args: Vec<String>,
    tokenizer: String,
}

/// A tool list (`[{"type": "function", "function": {name, parameters}}]`) made of the calls of
/// a `tools-N.json` schema (its `anyOf` of `{"name": const, "arguments": schema}`).
fn tool_list(schema_file: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(schema_file).with_context(|| format!("reading {}", schema_file.display()))?;
    let v: Value = serde_json::from_str(&text)?;
    let calls = v["anyOf"].as_array().context("a tools schema is an anyOf")?;
    Ok(Value::Array(
        calls
            .iter()
            .map(|c| {
                json!({"type": "function", "function": {
                    "name": c["properties"]["name"]["const"],
                    "parameters": c["properties"]["arguments"],
                }})
            })
            .collect(),
    ))
}

fn corpus(a: &Args, work: &Path) -> Result<Vec<Input>> {
    let root = repo_root();
    let path = |p: PathBuf| p.display().to_string();
    let two: Vec<&String> = a.tokenizers.iter().take(2).collect();
    let mut out = Vec::new();
    let mut add = |id: String, args: Vec<String>, tokenizer: &str| {
        out.push(Input { id: format!("{id} [{tokenizer}]"), args, tokenizer: tokenizer.to_string() });
    };
    for t in &two {
        for name in ["tools-10", "tools-100", "tools-500", "k8s-100", "k8s-300"] {
            add(format!("large/{name}"), vec![path(root.join(format!("schemas/large/{name}.json")))], t);
        }
    }
    // Tool calling (structural tags), each tool's parameters as Glaive wrote them: open objects.
    for n in [100, 500] {
        let file = work.join(format!("tools-{n}.list.json"));
        let list = tool_list(&root.join(format!("schemas/large/tools-{n}.json")))?;
        std::fs::write(&file, serde_json::to_string(&list)?)?;
        for t in &two {
            for strict in [false, true] {
                let mut args = vec![path(file.clone()), "--tools".into(), "hermes".into()];
                if strict {
                    args.push("--strict".into());
                }
                add(format!("tags/{n}-tools-{}", if strict { "strict" } else { "open" }), args, t);
            }
        }
    }
    let mb = dwac_testdata::maskbench_dir();
    for name in SLOWEST.lines().map(|l| l.split('#').next().unwrap_or("").trim()).filter(|l| !l.is_empty()) {
        let (split, file) = name.split_once("---").context("maskbench-slowest.txt: `<split>---<file>` lines")?;
        let schema_file = work.join("maskbench").join(name);
        if !schema_file.exists() {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(mb.join(name))?)?;
            std::fs::create_dir_all(schema_file.parent().context("a folder")?)?;
            std::fs::write(&schema_file, serde_json::to_string(&v["schema"])?)?;
        }
        for t in &a.tokenizers {
            add(format!("maskbench/{split}/{file}"), vec![path(schema_file.clone())], t);
        }
        // The vLLM backend's default: whitespace bounded to 16 characters around punctuation
        // (`DWAC_MAX_WHITESPACE`), each position of the run a lexer state.
        for t in &two {
            let args = vec![path(schema_file.clone()), "--max-whitespace".into(), "16".into()];
            add(format!("maskbench-ws16/{split}/{file}"), args, t);
        }
    }
    let gbnf = root.join("tests/data/gbnf");
    let mut grammars: Vec<(String, PathBuf)> =
        ["arithmetic", "c", "chess", "english", "japanese", "json", "json_arr", "list"]
            .iter()
            .map(|n| (format!("gbnf/llama.cpp/{n}"), grammars_dir().join(format!("llama.cpp/{n}.gbnf"))))
            .collect();
    grammars.push(("gbnf/own/csv".into(), gbnf.join("own/csv.gbnf")));
    let lark = grammars_dir().join("ligurio-lark-grammars/lark_grammars/grammars");
    for n in ["bc", "iso-8601", "lua", "palindrome", "regex", "robotstxt", "tap13"] {
        grammars.push((format!("lark-chars/{n}"), lark.join(format!("{n}.lark"))));
    }
    grammars.push(("lark/json".into(), root.join("grammars/json.lark")));
    for t in &two {
        for (id, file) in &grammars {
            add(id.clone(), vec![path(file.clone())], t);
        }
    }
    if let Some(only) = &a.only {
        out.retain(|i| i.id.contains(only.as_str()));
    }
    Ok(out)
}

/// The base revision's `dwac`, built in a worktree of its own.
fn build_base(rev: &str) -> Result<(PathBuf, String)> {
    let root = repo_root();
    let git = |args: &[&str], dir: &Path| -> Result<String> {
        let o = Command::new("git").args(args).current_dir(dir).output().context("running git")?;
        if !o.status.success() {
            bail!("git {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr).trim());
        }
        Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--verify", &format!("{rev}^{{commit}}")], &root)?;
    let src = root.join("target/gate/base-src");
    if src.join(".git").exists() {
        git(&["checkout", "--quiet", "--detach", &commit], &src)?;
    } else {
        std::fs::create_dir_all(root.join("target/gate"))?;
        let _ = git(&["worktree", "prune"], &root);
        git(&["worktree", "add", "--force", "--detach", &src.display().to_string(), &commit], &root)?;
    }
    let short = git(&["log", "-1", "--format=%h %s"], &src)?;
    eprintln!("compile gate: building the base, {short} (target/gate/base-target)");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let st = Command::new(cargo)
        .args(["build", "--release", "--quiet", "-p", "dwac"])
        .env("CARGO_TARGET_DIR", root.join("target/gate/base-target"))
        .current_dir(&src)
        .status()
        .context("running cargo for the base")?;
    if !st.success() {
        bail!("building the base revision {commit} failed ({st})");
    }
    Ok((root.join("target/gate/base-target/release/dwac"), short))
}

/// This tree's `dwac`, built now.
fn build_head() -> Result<PathBuf> {
    let root = repo_root();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let st = Command::new(cargo)
        .args(["build", "--release", "--quiet", "-p", "dwac"])
        .current_dir(&root)
        .status()
        .context("running cargo")?;
    if !st.success() {
        bail!("building dwac failed ({st})");
    }
    Ok(root.join("target/release/dwac"))
}

/// One compile by `bin` in a process of its own: (compile ms, peak MiB) or the error.
fn compile(bin: &Path, input: &Input, out: &Path, max_seconds: f64) -> Result<(f64, f64), String> {
    let tok = crate::util::tokenizer_file(&input.tokenizer);
    let o = Command::new(bin)
        .arg("compile")
        .args(&input.args)
        .arg("--tokenizer")
        .arg(&tok)
        .arg("-o")
        .arg(out)
        .args(["--json", "--max-seconds", &max_seconds.to_string()])
        .output()
        .map_err(|e| format!("running {}: {e}", bin.display()))?;
    let stdout = String::from_utf8_lossy(&o.stdout);
    let line = stdout.lines().find(|l| l.starts_with('{'));
    let v: Value = match line.map(serde_json::from_str) {
        Some(Ok(v)) => v,
        _ => {
            let err = String::from_utf8_lossy(&o.stderr);
            let msg = err.lines().rev().find(|l| l.starts_with("error")).unwrap_or("no result");
            return Err(msg.to_string());
        }
    };
    if v["ok"] != json!(true) {
        return Err(v["error"].as_str().unwrap_or("failed").to_string());
    }
    Ok((v["compile_ms"].as_f64().unwrap_or(f64::NAN), v["peak_rss_mb"].as_f64().unwrap_or(f64::NAN)))
}

/// One side's result over the runs: least time, least peak memory, or the error.
#[derive(Clone, Default)]
struct Side {
    ms: Option<f64>,
    mb: Option<f64>,
    error: Option<String>,
}

impl Side {
    fn add(&mut self, r: Result<(f64, f64), String>) {
        match r {
            Ok((ms, mb)) => {
                self.ms = Some(self.ms.map_or(ms, |m| m.min(ms)));
                self.mb = Some(self.mb.map_or(mb, |m| m.min(mb)));
            }
            Err(e) => self.error = Some(e),
        }
    }

    fn json(&self) -> Value {
        json!({"compile_ms": self.ms, "peak_rss_mb": self.mb, "error": self.error})
    }
}

/// What the gate says of one input.
fn verdict(a: &Args, base: &Side, new: &Side) -> &'static str {
    match (base.error.is_some(), new.error.is_some()) {
        (false, true) => return "REGRESSED (now fails)",
        (true, false) => return "fixed (failed before)",
        (true, true) => return "fails in both",
        _ => {}
    }
    let over = |b: Option<f64>, n: Option<f64>, slack: f64| match (b, n) {
        (Some(b), Some(n)) => n > b * a.threshold && n - b > slack,
        _ => false,
    };
    if over(base.ms, new.ms, SLACK_MS) || over(base.mb, new.mb, SLACK_MB) {
        "REGRESSED"
    } else {
        ""
    }
}

/// Run the gate; returns its report (markdown) and whether an input regressed.
pub fn run(a: &Args) -> Result<(String, bool)> {
    let work = a.out_dir.join("gate");
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let inputs = corpus(a, &work)?;
    let (base_bin, base_name) = build_base(&a.base)?;
    let head_bin = build_head()?;
    let (mut bases, mut news) = (vec![Side::default(); inputs.len()], vec![Side::default(); inputs.len()]);
    let mut same = vec![None::<bool>; inputs.len()];
    let bar = crate::util::bar((inputs.len() * a.runs) as u64, false);
    bar.set_message("compile gate");
    let (pa, pb) = (work.join("base.dwa"), work.join("new.dwa"));
    let t0 = std::time::Instant::now();
    for run in 0..a.runs {
        for (i, input) in inputs.iter().enumerate() {
            // (Alternately, so that the machine's drift falls on both sides alike.)
            let base_first = (run + i) % 2 == 0;
            for side in [base_first, !base_first] {
                if side {
                    bases[i].add(compile(&base_bin, input, &pa, a.max_seconds));
                } else {
                    news[i].add(compile(&head_bin, input, &pb, a.max_seconds));
                }
            }
            if run == 0 && bases[i].error.is_none() && news[i].error.is_none() {
                same[i] = Some(std::fs::read(&pa).ok() == std::fs::read(&pb).ok());
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let mut rows = Vec::new();
    let mut regressed = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let v = verdict(a, &bases[i], &news[i]);
        if v.starts_with("REGRESSED") {
            regressed.push(input.id.clone());
        }
        rows.push((input, &bases[i], &news[i], same[i], v));
    }
    let ratio = |b: Option<f64>, n: Option<f64>| match (b, n) {
        (Some(b), Some(n)) if b > 0.0 => Some(n / b),
        _ => None,
    };
    let fmt = |x: Option<f64>, d: usize| x.map_or("–".to_string(), |x| format!("{x:.d$}"));
    let mut md = format!(
        "# Compile-cost gate\n\nThis tree against `{base_name}` (`--base {}`), {} inputs, each compiled {} times by \
         each `dwac` in a process of its own, alternately, in {:.0} s. Time: least `compile_ms`; memory: peak RSS \
         (`peak_rss_mb`). An input is named REGRESSED when it is more than {}× slower (and {SLACK_MS} ms) or heavier \
         (and {SLACK_MB} MiB) than before, or fails where it compiled.\n\n",
        a.base,
        inputs.len(),
        a.runs,
        t0.elapsed().as_secs_f64(),
        a.threshold,
    );
    if regressed.is_empty() {
        md += &format!("**No input regressed** (threshold {}×).\n\n", a.threshold);
    } else {
        md += &format!("**{} inputs REGRESSED**: {}.\n\n", regressed.len(), regressed.join(", "));
    }
    let (mut t_base, mut t_new) = (0.0, 0.0);
    for (_, b, n, _, _) in &rows {
        if let (Some(x), Some(y)) = (b.ms, n.ms) {
            t_base += x;
            t_new += y;
        }
    }
    md += &format!(
        "Total compile time of the inputs both compiled: {:.1} s before, {:.1} s now ({:.2}×).\n\n",
        t_base / 1e3,
        t_new / 1e3,
        t_new / t_base.max(1e-9)
    );
    md += "| input | base ms | new ms | × | base MiB | new MiB | × | same bytes | verdict |\n|---|---:|---:|---:|---:|---:|---:|---|---|\n";
    for (input, b, n, s, v) in &rows {
        let err = |x: &Side| x.error.as_ref().map(|e| format!(" ({})", e.chars().take(80).collect::<String>()));
        md += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {}{}{} |\n",
            input.id,
            fmt(b.ms, 1),
            fmt(n.ms, 1),
            fmt(ratio(b.ms, n.ms), 2),
            fmt(b.mb, 0),
            fmt(n.mb, 0),
            fmt(ratio(b.mb, n.mb), 2),
            match s {
                Some(true) => "yes",
                Some(false) => "no",
                None => "–",
            },
            v,
            err(b).map(|e| format!(" base{e}")).unwrap_or_default(),
            err(n).map(|e| format!(" new{e}")).unwrap_or_default(),
        );
    }
    let j = json!({
        "base": a.base, "base_commit": base_name, "threshold": a.threshold, "runs": a.runs,
        "slack_ms": SLACK_MS, "slack_mb": SLACK_MB, "regressed": regressed,
        "inputs": rows.iter().map(|(input, b, n, s, v)| json!({
            "id": input.id, "base": b.json(), "new": n.json(), "same_bytes": s, "verdict": v,
        })).collect::<Vec<_>>(),
    });
    std::fs::write(a.out_dir.join("gate.md"), &md)?;
    std::fs::write(a.out_dir.join("gate.json"), serde_json::to_string_pretty(&j)?)?;
    Ok((md, !regressed.is_empty()))
}
