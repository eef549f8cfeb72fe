//! `cargo dwac-bench py-bench`: the Python package's call overhead and batch fill next to
//! llguidance's and XGrammar's Python packages, on the same MaskBench traces
//! (`bench/python/overhead.py`).
//!
//! The peers are llguidance and XGrammar unless `--peers` names fewer; a peer named that cannot
//! be prepared or imported is an error, never a silent omission. With XGrammar, its pinned venv
//! is made (or found ready) by `bench/peers/xgrammar/setup.sh` as `cargo xtask bench` makes it
//! (`target/peers/xgrammar-venv`, or `$DWAC_XGRAMMAR_VENV`) and used; without it, a virtual
//! environment of our own (`target/peers/py-bench-venv`). Installs maturin, numpy and the pinned
//! llguidance from the package registry, builds and installs `dwac` from the workspace
//! (`maturin develop --release`), runs the script, and writes `<out-dir>/python.json` and
//! `python.md`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::pyenv::run_ok;

/// The llguidance Python package the numbers are taken with.
const LLGUIDANCE: &str = "llguidance==1.9.1";

/// The peers measured next to dwac, by default all of them.
pub const PEERS: [&str; 2] = ["llguidance", "xgrammar"];

pub struct Args {
    pub tokenizer: String,
    pub schemas: usize,
    pub out_dir: PathBuf,
}

/// [`run_with`] with every peer.
pub fn run(args: Args) -> Result<String> {
    run_with(args, &PEERS.map(String::from))
}

/// Run the measurement with `peers` next to dwac; writes `python.json` and `python.md` and
/// returns the markdown.
pub fn run_with(args: Args, peers: &[String]) -> Result<String> {
    let root = dwac_testdata::repo_root();
    for p in peers {
        if !PEERS.contains(&p.as_str()) {
            bail!("unknown peer {p:?} (known: {})", PEERS.join(", "));
        }
    }
    let has = |p: &str| peers.iter().any(|x| x == p);
    let venv = if has("xgrammar") {
        eprintln!("preparing the xgrammar venv (bash bench/peers/xgrammar/setup.sh)");
        let st = Command::new("bash")
            .arg(root.join("bench/peers/xgrammar/setup.sh"))
            .stdout(std::io::stderr())
            .status()
            .context("running bench/peers/xgrammar/setup.sh")?;
        anyhow::ensure!(
            st.success(),
            "bench/peers/xgrammar/setup.sh failed ({st}); `--peers llguidance` leaves XGrammar out"
        );
        std::env::var_os("DWAC_XGRAMMAR_VENV")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("target/peers/xgrammar-venv"))
    } else {
        root.join("target/peers/py-bench-venv")
    };
    let mut packages = vec!["maturin>=1.5,<2", "numpy"];
    if has("llguidance") {
        packages.push(LLGUIDANCE);
    }
    let py = crate::pyenv::prepare(&venv, &packages)?;
    let tok = crate::util::tokenizer_file(&args.tokenizer);
    std::fs::create_dir_all(&args.out_dir)?;
    let json = args.out_dir.join("python.json");
    let peer_arg = if peers.is_empty() { "none".to_string() } else { peers.join(",") };
    run_ok(
        Command::new(&py)
            .arg(root.join("bench/python/overhead.py"))
            .arg("--tokenizer")
            .arg(&tok)
            .args(["--schemas", &args.schemas.to_string(), "--peers", &peer_arg, "--out"])
            .arg(&json)
            .stdout(std::process::Stdio::null()),
        "overhead.py",
    )?;
    let md = report(&json, &args.tokenizer)?;
    std::fs::write(args.out_dir.join("python.md"), &md)?;
    Ok(md)
}

fn report(json: &Path, tokenizer: &str) -> Result<String> {
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json)?)?;
    let s = &v["steps"];
    let mut md = format!(
        "# Python call overhead ({tokenizer}, {} MaskBench schemas every engine compiles)\n\n\
         Per step from Python, µs (`fill_next_token_bitmask` then `accept_token`; llguidance: \
         `llguidance.numpy.fill_next_token_bitmask` then `consume_token`), interpreter overhead included. \
         `dwac-rust` is dwac on the same traces timed inside Rust (fill, then commit), without Python. \
         Each engine compiles a schema once (untimed) and starts every trace from it (llguidance: one \
         `LLMatcher` per schema, `deep_copy()` per trace); one untimed warm-up trace per engine before timing. \
         `rejected`: traces stopped at a token the engine refused:\n\n\
         | engine | traces | steps | rejected | call | p50 | p90 | p99 | p99.9 | max |\n\
         |---|---:|---:|---:|---|---:|---:|---:|---:|---:|\n",
        s["schemas"]
    );
    for e in ["dwac-rust", "dwac", "llguidance", "xgrammar"] {
        if s[e].is_null() {
            continue;
        }
        for (call, key) in
            [("fill", "fill_us"), ("accept", "accept_us"), ("step", "step_us"), ("first fill", "first_fill_us")]
        {
            let x = &s[e][key];
            if x.is_null() {
                continue;
            }
            md += &format!(
                "| {e} | {} | {} | {} | {call} | {} | {} | {} | {} | {} |\n",
                s[e]["traces"],
                s[e]["steps"],
                s[e]["rejected_traces"],
                x["p50"],
                x["p90"],
                x["p99"],
                x["p99.9"],
                x["max"]
            );
        }
    }
    md += "\n`first fill`: the first mask of each trace.\n\n";
    let t = &v["ttfm"];
    if !t.is_null() {
        md += &format!(
            "Time to first mask, ms, tokenizer loaded: compile + matcher + first fill, no compile cache; {} MaskBench \
             schemas every engine compiles, and {} llama.cpp GBNF grammars three times each (dwac and XGrammar):\n\n\
             | input | engine | p50 | p90 | p99 | max |\n|---|---|---:|---:|---:|---:|\n",
            t["schemas"], t["grammars"]
        );
        for (what, key) in [("schemas", "schema_ms"), ("GBNF", "gbnf_ms")] {
            for (e, x) in t[key].as_object().into_iter().flatten() {
                md += &format!("| {what} | {e} | {} | {} | {} | {} |\n", x["p50"], x["p90"], x["p99"], x["max"]);
            }
        }
        md += "\n";
    }
    md += "\
           Batch fill, ms per batch step (one call fills every row; then each matcher commits its token, untimed; \
           one untimed batch before the timed steps starts each engine's thread pool). `rejected`: rows whose \
           trace token the engine refused:\n\n\
           | threads | batch | engine | p50 | p99 | max | steps | rejected |\n|---:|---:|---|---:|---:|---:|---:|---:|\n";
    if let Some(b) = v["batch"].as_object() {
        for (th, rows) in b {
            for (bs, engines) in rows.as_object().into_iter().flatten() {
                for (e, r) in engines.as_object().into_iter().flatten() {
                    let x = &r["ms_per_batch_step"];
                    md += &format!(
                        "| {} | {} | {e} | {} | {} | {} | {} | {} |\n",
                        th.trim_start_matches("threads="),
                        bs.trim_start_matches("B="),
                        x["p50"],
                        x["p99"],
                        x["max"],
                        r["steps"],
                        r["rejected_rows"]
                    );
                }
            }
        }
    }
    Ok(md)
}
