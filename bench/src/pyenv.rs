//! The Python side of the bench runs (`py-bench`, `e2e`): a virtual environment of their own, the
//! pinned packages from the registry, and `dwac` built from the workspace into it.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// Run `cmd` to completion; an error names `what` if it cannot start or fails.
pub fn run_ok(cmd: &mut Command, what: &str) -> Result<()> {
    let st = cmd.status().with_context(|| format!("cannot start {what}"))?;
    if !st.success() {
        bail!("{what} failed ({st})");
    }
    Ok(())
}

/// Create `venv` if it is missing, install `packages` (maturin among them) into it, and build
/// and install `dwac` from `crates/dwac-py` (`maturin develop --release --features bench`: with
/// the benchmark hook `_time_trace`). Returns its Python.
pub fn prepare(venv: &Path, packages: &[&str]) -> Result<PathBuf> {
    let root = dwac_testdata::repo_root();
    let py = venv.join("bin/python");
    if !py.exists() {
        run_ok(Command::new("python3").args(["-m", "venv"]).arg(venv), "python3 -m venv")?;
    }
    // (Their chatter goes to stderr: `cargo xtask bench --json` keeps stdout for its JSON.)
    run_ok(
        Command::new(&py).args(["-m", "pip", "install", "--quiet"]).args(packages).stdout(std::io::stderr()),
        "pip install",
    )?;
    let bin = venv.join("bin");
    if !bin.join("maturin").exists() {
        // (A package the venv sees through a .pth file counts as installed, but its command is
        // not in this venv's bin: the SGLang venv reads the xgrammar venv's packages so.)
        run_ok(
            Command::new(&py)
                .args(["-m", "pip", "install", "--quiet", "--ignore-installed", "--no-deps", "maturin>=1.5,<2"])
                .stdout(std::io::stderr()),
            "pip install maturin",
        )?;
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    run_ok(
        Command::new(bin.join("maturin"))
            .args(["develop", "--release", "--quiet", "--features", "bench"])
            .current_dir(root.join("crates/dwac-py"))
            .env("VIRTUAL_ENV", venv)
            .env("PATH", path)
            .stdout(std::io::stderr()),
        "maturin develop",
    )?;
    Ok(py)
}
