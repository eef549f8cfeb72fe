//! The report's Markdown: per workload, what each engine compiled, latency, compile time and
//! coverage, artifacts, and the tables of the workloads that have them (large schemas, nesting
//! depth, per grammar), with the ratios to dwac.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::{per_grammar, Report};

fn cell(v: &Value) -> String {
    match v {
        Value::Null => "–".into(),
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            if x >= 100.0 {
                format!("{x:.0}")
            } else if x >= 10.0 {
                format!("{x:.1}")
            } else if x >= 0.1 || x == 0.0 {
                format!("{x:.2}")
            } else {
                format!("{x:.1e}")
            }
        }
        other => other.to_string(),
    }
}

/// A count: the integer, or "–" where the engine does not report it.
fn count(v: &Value) -> String {
    v.as_u64().map_or_else(|| "–".into(), |n| n.to_string())
}

pub fn markdown(rep: &Report) -> String {
    let r = &rep.json;
    let mut s = String::new();
    let _ = writeln!(s, "# dwac bench: get_mask / commit next to the peers\n");
    let _ = writeln!(
        s,
        "Single thread, same token ids for every engine, {} replays (\"min\": per-step minimum over the replays; \
         \"first\": the first pass). Machine: {} ({} threads), shared and noisy: compare ratios, not absolute numbers. \
         Run time {} s.\n",
        r["replays"],
        r["machine"]["cpu"].as_str().unwrap_or("?"),
        r["machine"]["threads"],
        r["seconds"]
    );
    if let Some(u) = r["unavailable_peers"].as_object().filter(|u| !u.is_empty()) {
        for (n, e) in u {
            let _ = writeln!(s, "- **{n} unavailable**: {}", e.as_str().unwrap_or(""));
        }
        s.push('\n');
    }
    for w in r["workloads"].as_array().into_iter().flatten() {
        let engines = w["engines"].as_object().cloned().unwrap_or_default();
        workload_header(&mut s, w, &engines);
        compile_table(&mut s, w, &engines);
        open_table(&mut s, &engines);
        large_table(&mut s, w, &engines);
        ratios_table(&mut s, w);
        depth_table(&mut s, w, &engines);
        per_grammar_table(&mut s, w, &engines);
        compile_failures(&mut s, &engines);
        s.push('\n');
    }
    s
}

/// The workload's heading, what each engine compiled, and the latency table.
fn workload_header(s: &mut String, w: &Value, engines: &Map<String, Value>) {
    let _ = writeln!(
        s,
        "## {}\n\n{} jobs, {} traces, {} steps; latency compared on the {} traces ({} steps) every engine ran to the end. \
         Plot: `cdf-{}.svg`.\n",
        w["name"].as_str().unwrap_or(""),
        w["jobs"],
        w["traces"],
        w["steps"],
        w["compared_traces"],
        w["compared_steps"],
        w["name"].as_str().unwrap_or("")
    );
    let _ = writeln!(
        s,
        "What each engine compiled (engines that compiled different languages are not timed on equal terms):\n"
    );
    for (n, e) in engines {
        if let Some(l) = e["language"].as_str() {
            let _ = writeln!(s, "- {n}: {l}");
        }
    }
    s.push('\n');
    let _ = writeln!(s, "| engine | latency (µs) | p50 | p90 | p99 | p99.9 | max | mean |");
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|");
    for (n, e) in engines {
        if let Some(err) = e["error"].as_str() {
            let _ = writeln!(s, "| {n} | **did not run**: {err} | | | | | | |");
            continue;
        }
        for (key, label) in [
            ("mask_us_min", "mask, min"),
            ("mask_us", "mask, first"),
            ("commit_us_min", "commit, min"),
            ("mask_commit_us_min", "mask+commit, min"),
        ] {
            let v = &e[key];
            let _ = writeln!(
                s,
                "| {n} | {label} | {} | {} | {} | {} | {} | {} |",
                cell(&v["p50"]),
                cell(&v["p90"]),
                cell(&v["p99"]),
                cell(&v["p999"]),
                cell(&v["max"]),
                cell(&v["mean"])
            );
        }
    }
}

/// Compile time, coverage and slow paths per engine.
fn compile_table(s: &mut String, w: &Value, engines: &Map<String, Value>) {
    let _ = writeln!(
        s,
        "\nCompile: wall time (`compile ms`) and the process's CPU time over the same span (`CPU ms`, every thread \
         counted: dwac compiles on two threads, the vocabulary walk and the determinizer, and one more per lexer \
         state whose long first forward attempt races the saturation of its classes), over the {} jobs every \
         engine compiled; `compiled` is each engine's own coverage. Slow paths (engines that report them): masks \
         computed by the reference path (`fallback masks`), masks with UNDECIDED tokens and the UNDECIDED tokens \
         they decided by committing them at run time; these masks are timed like the others.\n\n\
         | engine | compiled | compile ms p50 | p99 | max | CPU ms p50 | p99 | peak RSS MB max | rejected traces | trace token not in mask | EOS not in final mask | fallback masks | masks with UNDECIDED | UNDECIDED tokens | notes |",
        w["compiled_by_all"]
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for (n, e) in engines {
        if e["error"].is_string() {
            continue;
        }
        let mut notes = Vec::new();
        if let Some(o) = e["python_overhead_ns"].as_object() {
            notes.push(format!(
                "timed from Python: an empty call costs {} ns",
                o.get("lambda_call").map(cell).unwrap_or_default()
            ));
        }
        if e["ttfm_ms"]["max"].is_number() {
            let (p50, max) = (cell(&e["ttfm_ms"]["p50"]), cell(&e["ttfm_ms"]["max"]));
            notes.push(format!("compiles lazily: time to first mask p50 {p50} ms, max {max} ms"));
        }
        notes.extend(e["notes"].as_array().into_iter().flatten().filter_map(Value::as_str).map(String::from));
        let _ = writeln!(
            s,
            "| {n} | {}/{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            e["compiled"],
            e["jobs"],
            cell(&e["compile_ms"]["p50"]),
            cell(&e["compile_ms"]["p99"]),
            cell(&e["compile_ms"]["max"]),
            cell(&e["compile_cpu_ms"]["p50"]),
            cell(&e["compile_cpu_ms"]["p99"]),
            cell(&e["peak_rss_mb"]["max"]),
            e["rejected_traces"],
            e["token_not_in_mask"],
            e["eos_not_in_mask"],
            count(&e["mask_fallbacks"]),
            count(&e["masks_with_undecided"]),
            count(&e["undecided_tokens_committed"]),
            notes.join("; ")
        );
    }
}

/// Artifact open and load times and sizes (engines that write artifacts).
fn open_table(s: &mut String, engines: &Map<String, Value>) {
    if engines.values().any(|e| e["open_us"]["p50"].is_number()) {
        let _ = writeln!(
            s,
            "\nArtifact open (dwac: `Artifact::open`, mmap + full validation; unchecked: `OpenOptions::verify(false)`) and load (glrmask: `Constraint::load` of `save()`), 20 times per job, µs; artifact bytes per job; zstd: dwac's transport form at the CLI's level, with the vocabulary and without it (`--without-vocabulary`: it opens with the tokenizer's vocabulary, as glrmask's `Constraint::load` takes it); save: making the artifact's bytes from the compiled engine (dwac: `artifact_bytes`; glrmask: `save()`), ms per job, not part of `compile ms`:\n"
        );
        let _ = writeln!(
            s,
            "| engine | open p50 | p99 | max | unchecked p50 | p99 | bytes p50 | bytes max | beyond vocab p50 | zstd p50 | zstd max | zstd w/o vocab p50 | max | save ms p50 | save ms max |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (n, e) in engines {
            if !e["open_us"]["p50"].is_number() {
                continue;
            }
            let _ = writeln!(
                s,
                "| {n} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                cell(&e["open_us"]["p50"]),
                cell(&e["open_us"]["p99"]),
                cell(&e["open_us"]["max"]),
                cell(&e["open_unchecked_us"]["p50"]),
                cell(&e["open_unchecked_us"]["p99"]),
                cell(&e["artifact_bytes"]["p50"]),
                cell(&e["artifact_bytes"]["max"]),
                cell(&e["artifact_beyond_vocab_bytes"]["p50"]),
                cell(&e["artifact_zstd_bytes"]["p50"]),
                cell(&e["artifact_zstd_bytes"]["max"]),
                cell(&e["artifact_zstd_without_vocab_bytes"]["p50"]),
                cell(&e["artifact_zstd_without_vocab_bytes"]["max"]),
                cell(&e["save_ms"]["p50"]),
                cell(&e["save_ms"]["max"]),
            );
        }
    }
}

/// Per large schema: compile time, memory, artifact size and open time of every engine.
fn large_table(s: &mut String, w: &Value, engines: &Map<String, Value>) {
    if w["name"].as_str().is_some_and(|n| n.starts_with("large")) {
        // Per schema: compile wall and CPU time, peak memory, artifact bytes (raw, zstd) and
        // open time of every engine.
        let _ =
            writeln!(s, "\nPer schema (compile ms wall / CPU, peak RSS MB, artifact bytes raw / zstd, open µs p50):\n");
        let _ = writeln!(s, "| schema | engine | compile ms | CPU ms | RSS MB | bytes | zstd | open µs |");
        let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|");
        let ids = job_ids(engines, "compile_jobs");
        for id in &ids {
            for (n, e) in engines {
                let Some(j) = e["compile_jobs"].as_array().and_then(|a| a.iter().find(|j| j["id"] == *id)) else {
                    continue;
                };
                let _ = writeln!(
                    s,
                    "| {} | {n} | {} | {} | {} | {} | {} | {} |",
                    id.as_str().unwrap_or(""),
                    cell(&j["compile_ms"]),
                    cell(&j["compile_cpu_ms"]),
                    cell(&j["peak_rss_mb"]),
                    cell(&j["artifact_bytes"]),
                    cell(&j["artifact_zstd_bytes"]),
                    cell(&j["open_us_p50"]),
                );
            }
        }
    }
}

/// Ratios peer / dwac.
fn ratios_table(s: &mut String, w: &Value) {
    if let Some(ratios) = w["ratios_peer_over_dwac"].as_object().filter(|x| !x.is_empty()) {
        let _ = writeln!(
            s,
            "\nRatios peer / dwac (above 1: dwac is faster; compile over the jobs every engine compiled). \
             Rows without \"same language\" compare what each engine compiled, as listed above:\n"
        );
        let _ = writeln!(
            s,
            "| peer | mask min p50 | p99 | p99.9 | max | mask+commit min p99.9 | compile p50 | compile CPU p50 |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|");
        for (n, q) in ratios {
            let _ = writeln!(
                s,
                "| {n} | {} | {} | {} | {} | {} | {} | {} |",
                cell(&q["mask_us_min"]["p50"]),
                cell(&q["mask_us_min"]["p99"]),
                cell(&q["mask_us_min"]["p999"]),
                cell(&q["mask_us_min"]["max"]),
                cell(&q["mask_commit_us_min"]["p999"]),
                cell(&q["compile_ms"]["p50"]),
                cell(&q["compile_cpu_ms"]["p50"])
            );
        }
    }
}

/// Mask latency against nesting depth (the json-deep workloads).
fn depth_table(s: &mut String, w: &Value, engines: &Map<String, Value>) {
    if w["name"].as_str().is_some_and(|n| n.starts_with("json-deep")) {
        let names: Vec<&String> = engines.keys().filter(|n| engines[*n]["per_job"].is_array()).collect();
        let _ = writeln!(s, "\nMask latency (min of replays, µs) against nesting depth, p50 / max per text:\n");
        let _ = writeln!(s, "| text | {} |", names.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(" | "));
        let _ = writeln!(s, "|---|{}|", names.iter().map(|_| "---:").collect::<Vec<_>>().join("|"));
        for id in w["job_ids"].as_array().into_iter().flatten() {
            let cells: Vec<String> = names
                .iter()
                .map(|n| {
                    let pj = engines[*n]["per_job"].as_array().and_then(|a| a.iter().find(|x| x["id"] == *id));
                    pj.map(|x| format!("{} / {}", cell(&x["mask_us_min_p50"]), cell(&x["mask_us_min_max"])))
                        .unwrap_or_else(|| "–".into())
                })
                .collect();
            let _ = writeln!(s, "| {} | {} |", id.as_str().unwrap_or(""), cells.join(" | "));
        }
    }
}

/// Per grammar, each engine over its own traces (the grammar workloads).
fn per_grammar_table(s: &mut String, w: &Value, engines: &Map<String, Value>) {
    if w["name"].as_str().is_some_and(per_grammar) {
        let _ = writeln!(
            s,
            "\nPer grammar, each engine over its own traces (min of replays): compile ms, masks, mask µs p50 / p99 / \
             max, rejected traces, UNDECIDED (lexer state, token) pairs at compile time:\n"
        );
        let _ = writeln!(s, "| grammar | engine | compile ms | masks | p50 | p99 | max | rejected | UNDECIDED |");
        let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|---:|");
        let ids = job_ids(engines, "own_jobs");
        for id in &ids {
            for (n, e) in engines {
                let Some(j) = e["own_jobs"].as_array().and_then(|a| a.iter().find(|j| j["id"] == *id)) else {
                    continue;
                };
                if let Some(err) = j["error"].as_str() {
                    let err: String = err.chars().take(90).collect();
                    let _ = writeln!(s, "| {} | {n} | not compiled: {err} | | | | | | |", id.as_str().unwrap_or(""));
                    continue;
                }
                let _ = writeln!(
                    s,
                    "| {} | {n} | {} | {} | {} | {} | {} | {} | {} |",
                    id.as_str().unwrap_or(""),
                    cell(&j["compile_ms"]),
                    j["masks"],
                    cell(&j["mask_us_min_p50"]),
                    cell(&j["mask_us_min_p99"]),
                    cell(&j["mask_us_min_max"]),
                    count(&j["rejected_traces"]),
                    count(&j["undecided_tokens"]),
                );
            }
        }
    }
}

/// The first compile failures of each engine.
fn compile_failures(s: &mut String, engines: &Map<String, Value>) {
    for (n, e) in engines {
        for f in e["compile_failures"].as_array().into_iter().flatten().take(3) {
            let msg: String = f["error"].as_str().unwrap_or("").chars().take(160).collect();
            let _ = writeln!(s, "\n- {n} did not compile `{}`: {msg}", f["id"].as_str().unwrap_or(""));
        }
    }
}

/// The ids of the jobs listed under `key` in any engine's summary, first seen first.
fn job_ids(engines: &Map<String, Value>, key: &str) -> Vec<Value> {
    let mut ids: Vec<Value> = Vec::new();
    for j in engines.values().flat_map(|e| e[key].as_array().cloned().unwrap_or_default()) {
        if !ids.contains(&j["id"]) {
            ids.push(j["id"].clone());
        }
    }
    ids
}
