//! `cargo dwac-bench servers`: dwac inside the inference servers' own code, next to their
//! built-in backends.
//!
//! SGLang (0.5.23) at the grammar-backend level on CPU (its server needs a CUDA kernel package
//! the registry does not carry): the environment (`bench/servers/setup-sglang.sh`, cached in
//! `target/peers/sglang-venv`), dwac built into it from the workspace (`maturin develop`, which
//! registers its `sglang.srt.plugins` entry point), then
//! - the backend's tests against the real package (`crates/dwac-py/tests/test_sglang.py`: the
//!   registry, every dispatch kind and its refusals, the batched fill, speculative
//!   accept/rollback, cache-hit copies, reasoning, jump-forward);
//! - `bench/python/sglang_bench.py`: the batch step SGLang runs (`fill_vocab_mask_batched`) at
//!   several batch sizes and the time to first mask (compile, artifact-directory hit), dwac next
//!   to SGLang's xgrammar and llguidance backends on the same requests and traces.
//!
//! Report: `<out-dir>/servers.md` (and `sglang.json`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::pyenv::run_ok;

/// `servers`' options.
#[derive(clap::Args)]
pub struct Args {
    /// MaskBench schemas per split among the requests of the batch and first-mask runs.
    #[arg(long, default_value_t = 40)]
    pub schemas: usize,
    /// Batch sizes of the batch step.
    #[arg(long, default_value = "1,64,256,1024")]
    pub batches: String,
    /// Timed steps per batch size.
    #[arg(long, default_value_t = 20)]
    pub steps: usize,
    #[arg(long, default_value = "target/servers")]
    pub out_dir: PathBuf,
}

/// A model folder SGLang's `ServerArgs` accepts without weights: qwen3's tokenizer files and a
/// small config of its architecture (the grammar path reads the tokenizer and the vocabulary
/// size, never the weights).
fn model_dir(out: &Path) -> Result<PathBuf> {
    let d = out.join("qwen3-config-only");
    std::fs::create_dir_all(&d)?;
    let tok = dwac_testdata::tokenizer_json("qwen3");
    let src = tok.parent().context("the tokenizer's folder")?;
    for f in ["tokenizer.json", "tokenizer_config.json"] {
        std::fs::copy(src.join(f), d.join(f)).with_context(|| format!("copying {f}"))?;
    }
    let config = serde_json::json!({
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 151936, "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
        "head_dim": 32, "max_position_embeddings": 1024, "rms_norm_eps": 1e-6, "rope_theta": 10000,
        "torch_dtype": "float32", "bos_token_id": 151643, "eos_token_id": 151645, "tie_word_embeddings": true,
    });
    std::fs::write(d.join("config.json"), serde_json::to_string_pretty(&config)?)?;
    Ok(d)
}

pub fn run(a: &Args) -> Result<()> {
    let root = dwac_testdata::repo_root();
    std::fs::create_dir_all(&a.out_dir)?;
    eprintln!("preparing the SGLang environment (bash bench/servers/setup-sglang.sh)");
    run_ok(
        Command::new("bash").arg(root.join("bench/servers/setup-sglang.sh")).stdout(std::io::stderr()),
        "bench/servers/setup-sglang.sh",
    )?;
    let venv = std::env::var_os("DWAC_SGLANG_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/peers/sglang-venv"));
    let py = crate::pyenv::prepare(&venv, &["maturin>=1.5,<2", "pytest"])?;
    let model = model_dir(&a.out_dir)?;
    eprintln!("the SGLang backend's tests (crates/dwac-py/tests/test_sglang.py)");
    let tests = Command::new(&py)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(root.join("crates/dwac-py/tests/test_sglang.py"))
        .output()
        .context("running pytest")?;
    let tests_out = String::from_utf8_lossy(&tests.stdout).to_string();
    let summary = tests_out.lines().rev().find(|l| l.contains("passed") || l.contains("failed")).unwrap_or("no result");
    eprintln!("  {summary}");
    let json = a.out_dir.join("sglang.json");
    eprintln!("SGLang's grammar path, dwac next to xgrammar and llguidance (bench/python/sglang_bench.py)");
    run_ok(
        Command::new(&py)
            .arg(root.join("bench/python/sglang_bench.py"))
            .arg("--model-dir")
            .arg(&model)
            .args(["--schemas", &a.schemas.to_string(), "--batches", &a.batches, "--steps", &a.steps.to_string()])
            .arg("--out")
            .arg(&json)
            .stdout(std::process::Stdio::null()),
        "sglang_bench.py",
    )?;
    let md = report(&json, summary, tests.status.success())?;
    std::fs::write(a.out_dir.join("servers.md"), &md)?;
    print!("{md}");
    anyhow::ensure!(tests.status.success(), "the SGLang backend's tests failed:\n{tests_out}");
    Ok(())
}

fn report(json: &Path, tests: &str, ok: bool) -> Result<String> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(json)?)?;
    let mut md = format!(
        "# dwac in SGLang 0.5.23 (grammar-backend level, CPU)\n\nBackend tests against the real package \
         (`test_sglang.py`): {tests}{}.\n\n\
         Batch step (`fill_vocab_mask_batched`, what SGLang calls once per decoding step), ms per step over \
         {} requests ({}) every backend compiles and whose trace every backend accepts; rows cycle over them, \
         each accepting its next trace token between steps:\n\n\
         | batch | backend | p50 | p90 | p99 | max | steps |\n|---:|---|---:|---:|---:|---:|---:|\n",
        if ok { "" } else { " — FAILED" },
        v["requests"],
        v["kinds"]
            .as_array()
            .map(|k| k.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "))
            .unwrap_or_default()
    );
    for (b, rows) in v["batch"].as_object().into_iter().flatten() {
        for (e, r) in rows.as_object().into_iter().flatten() {
            let x = &r["ms_per_step"];
            md += &format!(
                "| {} | {e} | {} | {} | {} | {} | {} |\n",
                b.trim_start_matches("B="),
                x["p50"],
                x["p90"],
                x["p99"],
                x["max"],
                r["steps"]
            );
        }
    }
    md += "\nTime to first mask, ms per request (dispatch, a fresh copy, its first fill; each backend fresh, \
           nothing in memory): compiled, and for dwac from an artifact directory (`DWAC_CACHE_DIR`) holding \
           every request's artifact under its key:\n\n| backend | p50 | p90 | p99 | max |\n|---|---:|---:|---:|---:|\n";
    for (e, x) in v["ttfm_ms"].as_object().into_iter().flatten() {
        md += &format!("| {e} | {} | {} | {} | {} |\n", x["p50"], x["p90"], x["p99"], x["max"]);
    }
    Ok(md)
}
