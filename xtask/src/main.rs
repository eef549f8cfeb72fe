//! `cargo xtask`: the repository's own chores. What measures or checks dwac on the corpora is
//! `dwac-bench` (`bench/`, `cargo dwac-bench <command>`).
//!
//! - `cargo xtask large-schemas`: the large JSON Schemas of `schemas/large`, assembled from real
//!   parts of the shared data (`large_schemas.rs`); deterministic, so they can be made again and
//!   compared.
//! - `cargo xtask maskbench-jsonl --out FILE [--broken]`: the MaskBench instances as
//!   `{"text","valid"}` lines for `dwac check`.
//! - `cargo xtask bench [ARGS]`: `cargo dwac-bench bench [ARGS]` (the benchmark's name in the
//!   developers' guide), forwarded as it is.

mod large_schemas;

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use dwac_testdata::{json_dumps, maskbench_instances};
use serde_json::json;

#[derive(Parser)]
#[command(name = "xtask")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Write MaskBench instances as JSON lines for `dwac check`.
    MaskbenchJsonl {
        #[arg(long)]
        out: PathBuf,
        /// Also write broken variants (truncated, stray punctuation), marked `"valid": false`.
        #[arg(long)]
        broken: bool,
    },
    /// Large JSON Schemas assembled from real parts (`tools-N.json`: an `anyOf` of N Glaive
    /// function calls; `k8s-N.json`: a `$defs` graph of N object definitions of the Kubernetes
    /// shape), written to `--out` (`large_schemas.rs`).
    LargeSchemas {
        #[arg(long, default_value = "schemas/large")]
        out: PathBuf,
        /// Tool counts, comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = [10usize, 100, 500])]
        tools: Vec<usize>,
        /// Definition counts of the Kubernetes-shaped schemas, comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = [100usize, 300])]
        k8s: Vec<usize>,
    },
    /// `cargo dwac-bench bench`: dwac next to the peers (`cargo dwac-bench bench --help` lists
    /// the options).
    #[command(disable_help_flag = true)]
    Bench {
        /// Passed to `dwac-bench bench` as they are.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

fn maskbench_jsonl(out: PathBuf, broken: bool) -> Result<()> {
    let mut f =
        std::io::BufWriter::new(std::fs::File::create(&out).with_context(|| format!("creating {}", out.display()))?);
    let (mut nv, mut nb) = (0, 0);
    for inst in maskbench_instances().into_iter().filter(|i| i.valid) {
        let text = json_dumps(&inst.data);
        writeln!(f, "{}", json!({"text": text, "valid": true}))?;
        nv += 1;
        if broken {
            // Three syntactic breaks per document: cut short, a stray closer, a doubled comma or colon.
            let mut half = text.len() / 2;
            while !text.is_char_boundary(half) {
                half -= 1;
            }
            let variants = [
                text[..half].to_string(),
                format!("{text}]"),
                text.replacen(", ", ",, ", 1).replacen(": ", ":: ", if text.contains(", ") { 0 } else { 1 }),
            ];
            for v in variants {
                if v != text && serde_json::from_str::<serde_json::Value>(&v).is_err() {
                    writeln!(f, "{}", json!({"text": v, "valid": false}))?;
                    nb += 1;
                }
            }
        }
    }
    f.flush()?;
    eprintln!("wrote {nv} valid and {nb} broken lines to {}", out.display());
    Ok(())
}

/// Run `dwac-bench bench` with `args`, built as `cargo dwac-bench` builds it; its exit status is
/// this one's.
fn forward_bench(args: &[String]) -> Result<()> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let st = Command::new(cargo)
        .args(["run", "--release", "--quiet", "--package", "dwac-bench", "--", "bench"])
        .args(args)
        .current_dir(dwac_testdata::repo_root())
        .status()
        .context("running cargo for dwac-bench")?;
    if !st.success() {
        std::process::exit(st.code().unwrap_or(1));
    }
    Ok(())
}

fn main() -> Result<()> {
    match Cli::parse().cmd {
        Cmd::MaskbenchJsonl { out, broken } => maskbench_jsonl(out, broken),
        Cmd::LargeSchemas { out, tools, k8s } => {
            let out = if out.is_absolute() { out } else { dwac_testdata::repo_root().join(out) };
            large_schemas::run(large_schemas::Args { out, tools, k8s })
        }
        Cmd::Bench { args } => forward_bench(&args),
    }
}
