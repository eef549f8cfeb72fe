//! The bench report: statistics per workload and engine (`report.json`), a markdown summary
//! (`report.md`) and a latency CDF per workload (`cdf-<workload>.svg`, log-scale x, percentile
//! on a "nines" scale so that p99.9 and the max are as visible as the median).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{json, Map, Value};

use super::{Workload, SAME_LANGUAGE_AS_GLRMASK};
use crate::util::round;
use dwac_measure::pct;

mod markdown;
pub use markdown::markdown;

/// One engine's env line and one result per job, or why it did not run.
pub type EngineRun = Result<(Value, Vec<Value>), String>;

/// Per engine: its name, sorted mask latencies (min of replays) and sorted first-pass ones.
pub type Series = (String, Vec<f64>, Vec<f64>);

pub struct WorkloadRun<'a> {
    pub workload: &'a Workload,
    pub eos: Vec<u32>,
    /// Per engine: its env line and one result per job, or why it did not run.
    pub engines: Vec<(String, EngineRun)>,
}

/// Per-step latencies of one engine on the compared traces.
#[derive(Default)]
struct Lat {
    mask: Vec<f64>,
    mask_min: Vec<f64>,
    commit: Vec<f64>,
    commit_min: Vec<f64>,
    both: Vec<f64>,
    both_min: Vec<f64>,
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array().map(|a| a.iter().map(|x| x.as_f64().unwrap_or(f64::NAN)).collect()).unwrap_or_default()
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array().map(|a| a.iter().map(|x| x.as_u64().unwrap_or(0) as usize).collect()).unwrap_or_default()
}

/// Did this job result run trace `t` (of `n` tokens) to its end?
fn ran_to_end(r: &Value, t: usize, n: usize) -> bool {
    r["compiled"] == true
        && usizes(&r["trace_masks"]).get(t) == Some(&(n + 1))
        && usizes(&r["trace_commits"]).get(t) == Some(&n)
}

/// The job kind of a workload's jobs (the key of an engine's `language` in its env line).
fn job_kind(workload: &str) -> &'static str {
    if workload.starts_with("json") {
        "json"
    } else if workload.starts_with("gbnf") || workload.starts_with("lark-chars") {
        "grammar"
    } else if workload.starts_with("tags") {
        "tags"
    } else {
        "schema"
    }
}

/// Workloads whose report has a row per grammar (each engine over its own traces).
fn per_grammar(workload: &str) -> bool {
    ["gbnf", "tags", "lark-chars"].iter().any(|p| workload.starts_with(p))
}

fn stats(mut v: Vec<f64>) -> Value {
    if v.is_empty() {
        return Value::Null;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let q = |p: f64| pct(&v, p).map(|x| round(x, 2));
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    json!({"p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "p999": q(0.999), "max": q(1.0),
           "mean": round(mean, 2), "n": v.len()})
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

/// The report and, per workload, the sorted mask latencies per engine for the plots.
pub struct Report {
    pub json: Value,
    pub cdf: Vec<(String, Vec<Series>)>,
}

pub fn build(runs: &[WorkloadRun], unavailable: &[(String, String)], replays: usize, secs: f64) -> Report {
    let mut workloads = Vec::new();
    let mut cdf = Vec::new();
    for run in runs {
        let w = run.workload;
        let ok: Vec<(&String, &Value, &Vec<Value>)> =
            run.engines.iter().filter_map(|(n, r)| r.as_ref().ok().map(|(env, res)| (n, env, res))).collect();
        let (common, n_traces, n_common, steps_common) = common_traces(w, &ok);
        // The jobs every engine that ran compiled: compile times are compared over these
        // (coverage, each engine's own count, is reported apart).
        let compiled_by_all: Vec<bool> = (0..w.jobs.len())
            .map(|j| ok.iter().all(|(_, _, res)| res.get(j).is_some_and(|r| r["compiled"] == true)))
            .collect();
        let n_compiled_by_all = compiled_by_all.iter().filter(|c| **c).count();
        let mut engines = Map::new();
        let mut plot = Vec::new();
        let mut lat_p: Vec<(String, Value)> = Vec::new();
        for (name, r) in &run.engines {
            let (env, res) = match r {
                Ok(x) => x,
                Err(e) => {
                    engines.insert(name.clone(), json!({"error": e}));
                    continue;
                }
            };
            let (e, mask_min, mask) = engine_summary(w, env, res, &common, &compiled_by_all);
            lat_p.push((name.clone(), e.clone()));
            engines.insert(name.clone(), e);
            plot.push((name.clone(), mask_min, mask));
        }
        let ratios = ratios(&lat_p);
        workloads.push(json!({
            "name": w.name,
            "tokenizer": w.tokenizer,
            "eos": run.eos,
            "jobs": w.jobs.len(),
            "traces": n_traces,
            "steps": w.jobs.iter().flat_map(|(_, l)| l).sum::<usize>(),
            "compared_traces": n_common,
            "compared_steps": steps_common,
            "compiled_by_all": n_compiled_by_all,
            "job_ids": if w.jobs.len() <= 20 { json!(w.jobs.iter().map(|(id, _)| id).collect::<Vec<_>>()) } else { Value::Null },
            "engines": engines,
            "ratios_peer_over_dwac": ratios,
        }));
        cdf.push((w.name.clone(), plot));
    }
    let unavailable: Map<String, Value> = unavailable.iter().map(|(n, e)| (n.clone(), json!(e))).collect();
    Report {
        json: json!({
            "replays": replays,
            "seconds": round(secs, 1),
            "machine": machine(),
            "unavailable_peers": unavailable,
            "workloads": workloads,
        }),
        cdf,
    }
}

/// Per job, which traces every engine that ran completed; and the counts of traces, compared
/// traces and compared steps.
fn common_traces(w: &Workload, ok: &[(&String, &Value, &Vec<Value>)]) -> (Vec<Vec<bool>>, usize, usize, usize) {
    let mut common: Vec<Vec<bool>> = Vec::new();
    let (mut n_traces, mut n_common, mut steps_common) = (0usize, 0usize, 0usize);
    for (j, (_, lens)) in w.jobs.iter().enumerate() {
        let keep: Vec<bool> = lens
            .iter()
            .enumerate()
            .map(|(t, &n)| ok.iter().all(|(_, _, res)| res.get(j).is_some_and(|r| ran_to_end(r, t, n))))
            .collect();
        n_traces += lens.len();
        n_common += keep.iter().filter(|k| **k).count();
        steps_common += lens.iter().zip(&keep).filter(|(_, k)| **k).map(|(n, _)| n).sum::<usize>();
        common.push(keep);
    }
    (common, n_traces, n_common, steps_common)
}

/// One engine's summary over a workload's jobs (`res`, one result per job): coverage, compile
/// times, memory, artifacts, counters and the latency of the compared steps; with the sorted
/// compared mask latencies (min of replays, first pass) for the plot.
fn engine_summary(
    w: &Workload,
    env: &Value,
    res: &[Value],
    common: &[Vec<bool>],
    compiled_by_all: &[bool],
) -> (Value, Vec<f64>, Vec<f64>) {
    let mut lat = Lat::default();
    let (mut compile_ms, mut ttfm_ms, mut rss) = (Vec::new(), Vec::new(), Vec::new());
    let mut compile_cpu_ms = Vec::new();
    let (mut compile_ms_own, mut compile_cpu_ms_own) = (Vec::new(), Vec::new());
    // Slow-path counters, from engines that report them (dwac's `MaskCounters`).
    let (mut fallbacks, mut masks_undecided): (Option<u64>, Option<u64>) = (None, None);
    let (mut open_us, mut open_unchecked_us, mut artifact_bytes) = (Vec::new(), Vec::new(), Vec::new());
    let mut save_ms = Vec::new();
    let (mut zstd_bytes, mut beyond_vocab, mut compile_jobs) = (Vec::new(), Vec::new(), Vec::new());
    let mut zstd_without_vocab = Vec::new();
    let (mut compiled, mut rejected, mut not_in_mask, mut eos_missing) = (0, 0, 0, 0);
    let mut undecided: Option<u64> = None;
    let (mut failures, mut errors, mut job_notes) = (Vec::new(), Vec::new(), Vec::<String>::new());
    let (mut per_job, mut own_jobs) = (Vec::new(), Vec::new());
    for (j, r) in res.iter().enumerate() {
        let before = lat.mask_min.len();
        if let Some(x) = r["peak_rss_mb"].as_f64() {
            rss.push(x);
        }
        if r["compiled"] != true {
            if failures.len() < 10 {
                failures.push(json!({"id": r["id"], "error": r["error"]}));
            }
            continue;
        }
        compiled += 1;
        if let Some(note) = r["note"].as_str() {
            job_notes.push(format!("{}: {note}", r["id"].as_str().unwrap_or("")));
        }
        let ms = r["compile_ms"].as_f64().unwrap_or(f64::NAN);
        compile_ms_own.push(ms);
        if compiled_by_all[j] {
            compile_ms.push(ms);
        }
        if let Some(x) = r["compile_cpu_ms"].as_f64() {
            compile_cpu_ms_own.push(x);
            if compiled_by_all[j] {
                compile_cpu_ms.push(x);
            }
        }
        let add = |acc: &mut Option<u64>, v: &Value| {
            if let Some(x) = v.as_u64() {
                *acc = Some(acc.unwrap_or(0) + x);
            }
        };
        add(&mut fallbacks, &r["mask_fallbacks"]);
        add(&mut masks_undecided, &r["masks_with_undecided"]);
        open_us.extend(floats(&r["open_us"]));
        open_unchecked_us.extend(floats(&r["open_unchecked_us"]));
        if let Some(x) = r["save_ms"].as_f64() {
            save_ms.push(x);
        }
        if let Some(b) = r["artifact_bytes"].as_f64() {
            artifact_bytes.push(b);
            if let Some(v) = r["artifact_vocab_bytes"].as_f64() {
                beyond_vocab.push(b - v);
            }
        }
        if let Some(z) = r["artifact_zstd_bytes"].as_f64() {
            zstd_bytes.push(z);
        }
        if let Some(z) = r["artifact_zstd_without_vocab_bytes"].as_f64() {
            zstd_without_vocab.push(z);
        }
        compile_jobs.push(compile_job(r));
        if let Some(x) = r["ttfm_ms"].as_f64() {
            ttfm_ms.push(x);
        }
        rejected += r["rejected_traces"].as_u64().unwrap_or(0);
        not_in_mask += r["token_not_in_mask"].as_u64().unwrap_or(0);
        eos_missing += r["eos_not_in_mask"].as_u64().unwrap_or(0);
        add(&mut undecided, &r["undecided"]);
        for e in r["errors"].as_array().into_iter().flatten().take(2) {
            if errors.len() < 6 {
                errors.push(json!({"id": r["id"], "error": e}));
            }
        }
        compared_steps(&mut lat, r, common.get(j));
        let mm = floats(&r["mask_us_min"]);
        // Per job over all of its own traces (a grammar another engine refused included):
        // the per-grammar table of the GBNF workloads.
        own_jobs.push(own_job(r, mm));
        let mine = sorted(lat.mask_min[before..].to_vec());
        if !mine.is_empty() {
            per_job.push(json!({"id": r["id"], "masks": mine.len(),
                                "mask_us_min_p50": pct(&mine, 0.5).map(|x| round(x, 2)),
                                "mask_us_min_max": pct(&mine, 1.0).map(|x| round(x, 2))}));
        }
    }
    let e = json!({
        "version": env["version"],
        "python_overhead_ns": env["python_overhead_ns"],
        "setup_ms": env["setup_ms"],
        "warmup_ms": env["warmup_ms"],
        "jobs": res.len(),
        "compiled": compiled,
        "language": env["language"][job_kind(&w.name)],
        "compile_ms": stats(compile_ms),
        "compile_cpu_ms": stats(compile_cpu_ms),
        "compile_ms_own": stats(compile_ms_own),
        "compile_cpu_ms_own": stats(compile_cpu_ms_own),
        "mask_fallbacks": fallbacks,
        "masks_with_undecided": masks_undecided,
        "ttfm_ms": stats(ttfm_ms),
        "peak_rss_mb": stats(rss),
        "rejected_traces": rejected,
        "token_not_in_mask": not_in_mask,
        "eos_not_in_mask": eos_missing,
        "undecided_tokens_committed": undecided,
        "compile_failures": failures,
        "notes": job_notes,
        "errors": errors,
        "mask_us": stats(lat.mask.clone()),
        "mask_us_min": stats(lat.mask_min.clone()),
        "commit_us": stats(lat.commit),
        "commit_us_min": stats(lat.commit_min),
        "mask_commit_us": stats(lat.both),
        "mask_commit_us_min": stats(lat.both_min),
        "open_us": stats(open_us),
        "open_unchecked_us": stats(open_unchecked_us),
        "artifact_bytes": stats(artifact_bytes),
        "artifact_zstd_bytes": stats(zstd_bytes),
        "artifact_zstd_without_vocab_bytes": stats(zstd_without_vocab),
        "artifact_beyond_vocab_bytes": stats(beyond_vocab),
        "compile_jobs": compile_jobs,
        "save_ms": stats(save_ms),
    });
    let mut e = e;
    if w.name.starts_with("json-deep") {
        e["per_job"] = json!(per_job);
    }
    if per_grammar(&w.name) {
        // (The refused ones too, with the reason.)
        for r in res.iter().filter(|r| r["compiled"] != true) {
            own_jobs.push(json!({"id": r["id"], "error": r["error"]}));
        }
        e["own_jobs"] = json!(own_jobs);
    }
    (e, sorted(lat.mask_min), sorted(lat.mask))
}

/// A compiled job's line of the per-schema table: compile time, memory, artifact size, open time.
fn compile_job(r: &Value) -> Value {
    json!({"id": r["id"], "compile_ms": r["compile_ms"], "compile_cpu_ms": r["compile_cpu_ms"],
        "peak_rss_mb": r["peak_rss_mb"], "artifact_bytes": r["artifact_bytes"],
        "artifact_zstd_bytes": r["artifact_zstd_bytes"], "open_us_p50": pct(&sorted(floats(&r["open_us"])), 0.5)})
}

/// A compiled job's line of the per-grammar table, over all of its own traces (`mask_us_min`:
/// their per-step minimum mask times).
fn own_job(r: &Value, mask_us_min: Vec<f64>) -> Value {
    let own = sorted(mask_us_min);
    json!({"id": r["id"], "compile_ms": r["compile_ms"], "masks": own.len(),
        "mask_us_min_p50": pct(&own, 0.5).map(|x| round(x, 2)),
        "mask_us_min_p99": pct(&own, 0.99).map(|x| round(x, 2)),
        "mask_us_min_p999": pct(&own, 0.999).map(|x| round(x, 2)),
        "mask_us_min_max": pct(&own, 1.0).map(|x| round(x, 2)),
        "rejected_traces": r["rejected_traces"], "undecided": r["undecided"],
        "undecided_tokens": r["tables"]["undecided_tokens"]})
}

/// The steps of job `r`'s traces that every engine ran to the end (`keep`), into `lat`.
fn compared_steps(lat: &mut Lat, r: &Value, keep: Option<&Vec<bool>>) {
    let (m, mm, c, cm) =
        (floats(&r["mask_us"]), floats(&r["mask_us_min"]), floats(&r["commit_us"]), floats(&r["commit_us_min"]));
    let (tm, tc) = (usizes(&r["trace_masks"]), usizes(&r["trace_commits"]));
    let (mut mo, mut co) = (0, 0);
    for (t, keep) in keep.into_iter().flatten().enumerate() {
        let (nm, nc) = (tm.get(t).copied().unwrap_or(0), tc.get(t).copied().unwrap_or(0));
        if *keep && mo + nm <= m.len() && co + nc <= c.len() {
            lat.mask.extend_from_slice(&m[mo..mo + nm]);
            lat.mask_min.extend_from_slice(&mm[mo..mo + nm]);
            lat.commit.extend_from_slice(&c[co..co + nc]);
            lat.commit_min.extend_from_slice(&cm[co..co + nc]);
            for i in 0..nc {
                lat.both.push(m[mo + i] + c[co + i]);
                lat.both_min.push(mm[mo + i] + cm[co + i]);
            }
        }
        mo += nm;
        co += nc;
    }
}

/// Ratios peer / dwac (> 1: dwac is faster) of each engine's summary; glrmask also over
/// `dwac-sep`, dwac compiling glrmask's language.
fn ratios(lat_p: &[(String, Value)]) -> Map<String, Value> {
    let mut ratios = Map::new();
    let pairs = lat_p
        .iter()
        .filter(|(n, _)| n != "dwac" && n != SAME_LANGUAGE_AS_GLRMASK)
        .filter_map(|(n, p)| lat_p.iter().find(|(d, _)| d == "dwac").map(|(_, d)| (n.clone(), p, d)))
        .chain(lat_p.iter().filter(|(n, _)| n == "glrmask").filter_map(|(n, p)| {
            lat_p
                .iter()
                .find(|(d, _)| d == SAME_LANGUAGE_AS_GLRMASK)
                .map(|(d, dv)| (format!("{n} / {d} (same language)"), p, dv))
        }));
    {
        for (n, p, d) in pairs {
            let mut r = Map::new();
            for key in ["mask_us_min", "mask_us", "commit_us_min", "mask_commit_us_min", "compile_ms", "compile_cpu_ms"]
            {
                let mut q = Map::new();
                for s in ["p50", "p99", "p999", "max"] {
                    if let (Some(a), Some(b)) = (p[key][s].as_f64(), d[key][s].as_f64()) {
                        if b > 0.0 {
                            q.insert(s.to_string(), json!(round(a / b, 5)));
                        }
                    }
                }
                r.insert(key.to_string(), Value::Object(q));
            }
            ratios.insert(n, Value::Object(r));
        }
    }
    ratios
}

fn machine() -> Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| {
        s.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
    });
    json!({"cpu": cpu, "threads": std::thread::available_parallelism().map(|n| n.get()).ok()})
}

const COLORS: [(&str, &str); 4] =
    [("dwac", "#d62728"), ("glrmask", "#2ca02c"), ("llguidance", "#1f77b4"), ("xgrammar", "#9467bd")];

/// A CDF of mask latency: x log10(µs), y "nines" (-log10(1 - p)); solid min-of-replays, dashed first pass.
pub fn svg(title: &str, series: &[Series]) -> String {
    let (w, h, ml, mr, mt, mb) = (900.0, 520.0, 70.0, 160.0, 40.0, 50.0);
    let all = series.iter().flat_map(|(_, a, b)| a.iter().chain(b)).filter(|x| **x > 0.0);
    let (lo, hi) = all.fold((f64::INFINITY, 0f64), |(l, h), &x| (l.min(x), h.max(x)));
    let (x0, x1) = if lo.is_finite() {
        (lo.log10().floor(), hi.log10().ceil().max(lo.log10().floor() + 1.0))
    } else {
        (-1.0, 3.0)
    };
    let nmax = series.iter().map(|(_, a, _)| a.len()).max().unwrap_or(1).max(2);
    let y1 = ((2 * nmax) as f64).log10().ceil();
    let px = |x: f64| ml + (x.max(1e-9).log10() - x0) / (x1 - x0) * (w - ml - mr);
    let py = |y: f64| h - mb - y / y1 * (h - mt - mb);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"22\" font-size=\"15\">{}</text>\n",
        ml,
        xml(title)
    );
    // Grid and ticks.
    let mut d = x0;
    while d <= x1 + 1e-9 {
        let x = px(10f64.powf(d));
        let label = format!("{}", 10f64.powf(d));
        let _ = writeln!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#ddd\"/><text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{label}</text>",
            mt,
            h - mb,
            h - mb + 16.0
        );
        d += 1.0;
    }
    for k in 0..=(y1 as usize) {
        let y = py(k as f64);
        let label = match k {
            0 => "0%".to_string(),
            k => format!("{}%", 100.0 - 100.0 / 10f64.powi(k as i32)),
        };
        let _ = writeln!(
            s,
            "<line x1=\"{ml}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{label}</text>",
            w - mr,
            ml - 6.0,
            y + 4.0
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">get_mask latency, µs (log scale)</text>\
         <text x=\"16\" y=\"{}\" transform=\"rotate(-90 16 {})\" text-anchor=\"middle\">percentile of masks</text>",
        ml + (w - ml - mr) / 2.0,
        h - 12.0,
        mt + (h - mt - mb) / 2.0,
        mt + (h - mt - mb) / 2.0
    );
    for (i, (name, min, first)) in series.iter().enumerate() {
        let color = COLORS.iter().find(|(n, _)| n == name).map(|c| c.1).unwrap_or("#333");
        for (v, dash) in [(min, ""), (first, " stroke-dasharray=\"5,3\" stroke-opacity=\"0.6\"")] {
            let n = v.len();
            if n == 0 {
                continue;
            }
            let step = (n / 1500).max(1);
            let mut pts = String::new();
            for (j, &x) in v.iter().enumerate() {
                if j % step != 0 && j + 1500 < n {
                    continue;
                }
                let p = (j as f64 + 0.5) / n as f64;
                let _ = write!(pts, "{:.1},{:.1} ", px(x), py(-(1.0 - p).log10()));
            }
            let _ =
                writeln!(s, "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1.6\"{dash} points=\"{pts}\"/>");
        }
        let ly = mt + 20.0 + 20.0 * i as f64;
        let _ = writeln!(
            s,
            "<line x1=\"{}\" y1=\"{ly}\" x2=\"{}\" y2=\"{ly}\" stroke=\"{color}\" stroke-width=\"2\"/><text x=\"{}\" y=\"{}\">{}</text>",
            w - mr + 10.0,
            w - mr + 34.0,
            w - mr + 40.0,
            ly + 4.0,
            xml(name)
        );
    }
    let ly = mt + 20.0 + 20.0 * series.len() as f64 + 10.0;
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{ly}\" font-size=\"11\">solid: min of replays</text><text x=\"{}\" y=\"{}\" font-size=\"11\">dashed: first pass</text>",
        w - mr + 10.0,
        w - mr + 10.0,
        ly + 15.0
    );
    s.push_str("</svg>\n");
    s
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

pub fn write(dir: &Path, rep: &Report, _runs: &[WorkloadRun]) -> Result<()> {
    let put = |name: &str, text: &str| -> Result<()> {
        let p = dir.join(name);
        std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))
    };
    put("report.json", &serde_json::to_string_pretty(&rep.json)?)?;
    put("report.md", &markdown(rep))?;
    for (name, series) in &rep.cdf {
        put(&format!("cdf-{name}.svg"), &svg(&format!("get_mask latency CDF: {name}"), series))?;
    }
    Ok(())
}
