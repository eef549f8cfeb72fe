//! `dwac-bench` (`cargo dwac-bench <command>`): dwac measured and checked on the corpora, next
//! to the peers. Each command's options are in its `--help`.
//!
//! - `bench`: get_mask / commit latency, compile time and peak memory next to llguidance,
//!   glrmask and XGrammar on the same token ids (the JSON grammar over MaskBench with qwen3 and
//!   deepseek-r1, the MaskBench schemas, the large schemas, GBNF and character-level Lark,
//!   structural tags); report and CDF plots under `target/bench` (`bench/`). `cargo xtask
//!   bench` forwards here.
//! - `py-bench`: the Python packages' call overhead next to llguidance's and XGrammar's
//!   (`py_bench.rs`, `bench/python/overhead.py`).
//! - `e2e`: a real model generating under dwac's masks (`e2e.rs`, `bench/python/e2e.py`).
//! - `schema-bench [--limit N] [--peer]`: MaskBench schemas compiled in a limited worker
//!   subprocess, instances judged, compile times and table sizes; `--peer` runs llguidance on
//!   the same jobs (`schema_bench/`).
//! - `schema-suite [--draft D|all]`: the JSON-Schema-Test-Suite through the JSON Schema
//!   compiler, next to llguidance's recorded results (`schema_suite.rs`).
//! - `differential [--tokenizer T]... [--schemas N | --gbnf | --lark-chars] [--saturate-only]`:
//!   the Parser DWA mask against the reference mask at every step, over the MaskBench instances
//!   with the JSON grammar, the MaskBench schemas, or the grammars without a lexer over their
//!   texts; `--saturate-only` builds every automaton by backward saturation (`differential.rs`).
//! - `fuzz-artifact`: `Artifact::from_bytes` and random commits and masks on mutated artifacts
//!   (`fuzz.rs`).
//! - `servers`: dwac in SGLang's grammar-backend code next to its xgrammar and llguidance
//!   backends (`servers.rs`).
//! - `compile-gate [--base REV]`: the compile-cost gate, this tree's compile time and peak
//!   memory against the base revision's on a fixed corpus, in one run (`gate.rs`); also the
//!   last part of `bench`.
//!
//! The Rust peers (`peers/glrmask`, `peers/llguidance`) are workspaces of their own (their
//! dependencies pin different versions of one crate); XGrammar's side is `peers/xgrammar`, a
//! Python script in a venv of its own.

mod bench;
mod differential;
mod e2e;
mod fuzz;
mod gate;
mod py_bench;
mod pyenv;
mod schema_bench;
mod schema_suite;
mod servers;
mod util;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// The allocator of `dwac compile` (the `dwac` binary), so the bench worker times what the CLI
/// does; the Rust peers use the same one (`peers/*/src/main.rs`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "dwac-bench")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// The Python package's call overhead and batch fill next to llguidance's Python package on
    /// the same MaskBench traces (own venv; report `<out-dir>/python.md`).
    PyBench {
        /// Tokenizer (a name under ../shared/data/tokenizers or a path).
        #[arg(long, default_value = "qwen3")]
        tokenizer: String,
        /// The first N schemas of each split (Glaiveai2K, Github_easy).
        #[arg(long, default_value_t = 25)]
        schemas: usize,
        /// Peers next to dwac, comma-separated (`none` for dwac alone); a peer named that cannot
        /// be prepared is an error.
        #[arg(long, default_value = "llguidance,xgrammar")]
        peers: String,
        #[arg(long, default_value = "target/bench")]
        out_dir: PathBuf,
    },
    /// Constrained generation with a real model (SmolLM2-135M GGUF in llama-cpp-python, own
    /// venv): MaskBench schemas and Lark grammars, every ended output validated independently;
    /// writes <out-dir>/report.md.
    E2e {
        /// MaskBench schemas (round-robin over the splits; schemas dwac refuses are skipped).
        #[arg(long, default_value_t = 50)]
        schemas: usize,
        /// Token limit per output.
        #[arg(long, default_value_t = 256)]
        max_tokens: usize,
        /// llama.cpp threads.
        #[arg(long, default_value_t = 2)]
        threads: usize,
        #[arg(long, default_value = "target/e2e")]
        out_dir: PathBuf,
    },
    /// Fuzz `Artifact::from_bytes` + random commits and masks (stable Rust, libFuzzer-style
    /// mutations); crash inputs go to tests/data/fuzz-crashes/.
    FuzzArtifact {
        #[arg(long, default_value_t = 600)]
        seconds: u64,
        #[arg(long, default_value_t = 0x5eed)]
        seed: u64,
    },
    /// get_mask / commit latency next to llguidance, glrmask and XGrammar on the same token ids
    /// (report under target/bench/).
    Bench(bench::Args),
    /// Internal: dwac's side of `bench` (the same job and result lines as the peers).
    #[command(hide = true)]
    BenchWorker {
        #[arg(long)]
        tokenizer: PathBuf,
        #[arg(long)]
        jobs: PathBuf,
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 3)]
        replays: usize,
        /// EOS ids, comma-separated (default: the tokenizer's).
        #[arg(long)]
        eos: Option<String>,
        #[arg(long, default_value = "grammars/json.lark")]
        grammar: String,
        /// Compile glrmask's language instead: JSON Schemas with exactly `, ` and `: ` between
        /// tokens and no other whitespace, and the `{}` schema for the "json" jobs.
        #[arg(long)]
        python_separators: bool,
    },
    /// JSON-Schema-Test-Suite through the JSON Schema compiler.
    SchemaSuite {
        /// Draft folder under tests/ (draft2020-12, draft7, draft4) or `all`.
        #[arg(long, default_value = "draft2020-12")]
        draft: String,
        #[arg(long)]
        json: bool,
        /// Also write the JSON report (with every test's outcome) to FILE.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// MaskBench (Glaiveai2K + Github_easy): compile every schema under limits, judge its instances.
    SchemaBench {
        /// Only the first N schemas of each split.
        #[arg(long)]
        limit: Option<usize>,
        /// Only schemas whose file name contains this.
        #[arg(long)]
        filter: Option<String>,
        #[arg(long)]
        json: bool,
        /// Also write the JSON report (with every schema's outcome) to FILE.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Also run llguidance (bench/peers/llguidance) on the same jobs.
        #[arg(long)]
        peer: bool,
        /// Tokenizer name under ../shared/data/tokenizers, or a path to a tokenizer.json.
        #[arg(long, default_value = "qwen3")]
        tokenizer: String,
        /// Wall-clock limit per compilation, seconds.
        #[arg(long, default_value_t = 10.0)]
        timeout_s: f64,
        /// Address-space limit of a worker process, GiB.
        #[arg(long, default_value_t = 2.0)]
        mem_gib: f64,
    },
    /// The Parser DWA mask against the reference mask at every step of the MaskBench valid
    /// instances (reference masks cached by configuration).
    Differential(differential::Args),
    /// The compile-cost gate: a fixed corpus compiled by this tree and by the base revision,
    /// alternately, in one run; inputs more than 1.5× slower or heavier are named (report
    /// `<out-dir>/gate.md`, `gate.json`).
    CompileGate(gate::Args),
    /// dwac inside the inference servers' own code next to their built-in backends: vLLM's
    /// manager and its OpenAI server on SmolLM2-135M, SGLang's grammar backends on CPU (their
    /// environments built and cached in target/peers); the backends' tests against the real
    /// packages, every request kind and bad input, the batch step, time to first mask, end-to-end
    /// validity and tokens per second (report `<out-dir>/servers.md`).
    Servers(servers::Args),
    /// Internal: compile jobs read from stdin (used by schema-bench).
    #[command(hide = true)]
    SchemaWorker {
        #[arg(long, default_value = "qwen3")]
        tokenizer: String,
    },
}

/// A path as given if absolute, else under the repository root.
fn in_repo(path: PathBuf) -> PathBuf {
    if path.is_absolute() {
        path
    } else {
        dwac_testdata::repo_root().join(path)
    }
}

fn main() -> Result<()> {
    // As the `dwac` binary does (`keep_freed_memory` in `crates/dwac/src/main.rs`): mimalloc
    // keeps freed memory (`mi_option_purge_delay`, index 15, set to -1), so the bench worker
    // times what the CLI does.
    // SAFETY: sets an integer option of the allocator before any other thread exists.
    unsafe { libmimalloc_sys::mi_option_set(15, -1) }
    // And, as it does (`no_transparent_huge_pages`), no transparent huge pages.
    #[cfg(target_os = "linux")]
    // SAFETY: `prctl` with constant arguments; it sets one flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
    match Cli::parse().cmd {
        Cmd::Bench(a) => bench::run(bench::Args { out_dir: in_repo(a.out_dir), ..a }),
        Cmd::BenchWorker { tokenizer, jobs, out, replays, eos, grammar, python_separators } => {
            let eos = match eos {
                Some(e) => e.split(',').map(|x| x.trim().parse::<u32>()).collect::<Result<Vec<_>, _>>()?,
                None => util::tokenizer(&tokenizer.display().to_string())?.vocab().eos().to_vec(),
            };
            bench::worker(bench::WorkerArgs { tokenizer, jobs, out, replays, eos, grammar, python_separators })
        }
        Cmd::PyBench { tokenizer, schemas, peers, out_dir } => {
            let (peers, out_dir) = (util::peer_list(&peers), in_repo(out_dir));
            print!("{}", py_bench::run_with(py_bench::Args { tokenizer, schemas, out_dir }, &peers)?);
            Ok(())
        }
        Cmd::E2e { schemas, max_tokens, threads, out_dir } => {
            e2e::run(e2e::Args { schemas, max_tokens, threads, out_dir: in_repo(out_dir) })
        }
        Cmd::FuzzArtifact { seconds, seed } => fuzz::run(seconds, seed),
        Cmd::SchemaSuite { draft, json, out } => schema_suite::run(&draft, json, out),
        Cmd::SchemaBench { limit, filter, json, out, peer, tokenizer, timeout_s, mem_gib } => {
            schema_bench::run(schema_bench::BenchArgs { limit, filter, json, out, peer, tokenizer, timeout_s, mem_gib })
        }
        Cmd::SchemaWorker { tokenizer } => schema_bench::worker(&tokenizer),
        Cmd::Differential(args) => differential::run(args),
        Cmd::Servers(a) => servers::run(&servers::Args { out_dir: in_repo(a.out_dir), ..a }),
        Cmd::CompileGate(a) => {
            let a = gate::Args { out_dir: in_repo(a.out_dir), ..a };
            let (md, regressed) = gate::run(&a)?;
            print!("{md}");
            if regressed && a.fail {
                std::process::exit(1);
            }
            Ok(())
        }
    }
}
