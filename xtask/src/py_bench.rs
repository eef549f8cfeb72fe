//! `cargo xtask py-bench`: the Python package's call overhead and batch fill next to
//! llguidance's Python package, on the same MaskBench traces (`crates/dwac-py/bench/overhead.py`).
//!
//! Uses XGrammar's bench venv (`target/peers/xgrammar-venv`, from `xtask/peers/xgrammar/setup.sh`)
//! when it exists, so XGrammar is measured too, else a virtual environment of its own
//! (`target/peers/py-bench-venv`); installs maturin, numpy
//! and the pinned llguidance from the package registry, builds and installs `dwac` from the
//! workspace (`maturin develop --release`), runs the script, and writes
//! `<out-dir>/python.json` and `python.md`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Result;

use crate::pyenv::run_ok;

/// The llguidance Python package the numbers are taken with.
const LLGUIDANCE: &str = "llguidance==1.9.1";

pub struct Args {
    pub tokenizer: String,
    pub schemas: usize,
    pub out_dir: PathBuf,
}

/// Run the measurement; writes `python.json` and `python.md` and returns the markdown.
pub fn run(args: Args) -> Result<String> {
    let root = dwac_tests::repo_root();
    // (XGrammar's pinned venv, made by `xtask/peers/xgrammar/setup.sh` for `cargo xtask bench`,
    // when it is there: then XGrammar is measured too; else a venv of our own.)
    let xgr = root.join("target/peers/xgrammar-venv");
    let venv = if xgr.join("bin/python").exists() { xgr } else { root.join("target/peers/py-bench-venv") };
    let py = crate::pyenv::prepare(&venv, &["maturin>=1.5,<2", "numpy", LLGUIDANCE])?;
    let tok = crate::util::tokenizer_file(&args.tokenizer);
    std::fs::create_dir_all(&args.out_dir)?;
    let json = args.out_dir.join("python.json");
    run_ok(
        Command::new(&py)
            .arg(root.join("crates/dwac-py/bench/overhead.py"))
            .arg("--tokenizer")
            .arg(&tok)
            .args(["--schemas", &args.schemas.to_string(), "--out"])
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
         `dwac-rust` is dwac on the same traces timed inside Rust (fill, then commit), without Python:\n\n\
         | engine | steps | call | p50 | p90 | p99 | p99.9 | max |\n|---|---:|---|---:|---:|---:|---:|---:|\n",
        s["schemas"]
    );
    for e in ["dwac-rust", "dwac", "llguidance", "xgrammar"] {
        if s[e].is_null() {
            continue;
        }
        for (call, key) in [("fill", "fill_us"), ("accept", "accept_us"), ("step", "step_us")] {
            let x = &s[e][key];
            md += &format!(
                "| {e} | {} | {call} | {} | {} | {} | {} | {} |\n",
                s[e]["steps"], x["p50"], x["p90"], x["p99"], x["p99.9"], x["max"]
            );
        }
    }
    md +=
        "\nBatch fill, ms per batch step (one call fills every row; then each matcher commits its token, untimed):\n\n\
           | threads | batch | engine | p50 | p99 | max | steps |\n|---:|---:|---|---:|---:|---:|---:|\n";
    if let Some(b) = v["batch"].as_object() {
        for (th, rows) in b {
            for (bs, engines) in rows.as_object().into_iter().flatten() {
                for (e, r) in engines.as_object().into_iter().flatten() {
                    let x = &r["ms_per_batch_step"];
                    md += &format!(
                        "| {} | {} | {e} | {} | {} | {} | {} |\n",
                        th.trim_start_matches("threads="),
                        bs.trim_start_matches("B="),
                        x["p50"],
                        x["p99"],
                        x["max"],
                        r["steps"]
                    );
                }
            }
        }
    }
    Ok(md)
}
