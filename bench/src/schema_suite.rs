//! `cargo dwac-bench schema-suite`: the JSON-Schema-Test-Suite through the JSON Schema compiler.
//!
//! Every group schema is compiled (`compile_schema` + `compile_engine`, inside `catch_unwind`:
//! a panic is a bug and is counted on its own), then every test instance is serialized with
//! its object keys in schema order (`order_instance` + `json_dumps`) and committed byte by byte;
//! the instance is accepted when `commit_bytes` succeeds and the matcher is accepting.
//!
//! Outcomes: `pass` (compiled, verdict == valid), `failed_valid` (valid, rejected),
//! `false_positive` (invalid, accepted — must be 0), `unsupported` (the compiler refused the
//! schema: its `SchemaError` keyword is recorded), `panic`.
//! Draft-07 and draft-04 groups carry no `$schema`; the harness adds the draft's URI (the suite
//! runs each folder under that draft), draft 2020-12 groups already name theirs.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use dwac_grammar::schema::{compile_schema, order_instance, SchemaOptions};
use dwac_runtime::{Engine, Matcher, Vocabulary};
use dwac_testdata::{json_dumps, shared_data, test_suite_files};
use dwac_tests::synthetic_vocab;
use serde_json::{json, Value};

use crate::util::{catch, Silenced};

const DRAFTS: [&str; 3] = ["draft2020-12", "draft7", "draft4"];

fn draft_uri(draft: &str) -> Option<&'static str> {
    match draft {
        "draft7" => Some("http://json-schema.org/draft-07/schema#"),
        "draft4" => Some("http://json-schema.org/draft-04/schema#"),
        "draft6" => Some("http://json-schema.org/draft-06/schema#"),
        "draft2019-09" => Some("https://json-schema.org/draft/2019-09/schema"),
        _ => None,
    }
}

/// One byte per token plus an end token: the suite judges bytes, the vocabulary is irrelevant.
pub fn byte_vocab() -> Vocabulary {
    let bytes: Vec<[u8; 1]> = (0..=255u8).map(|b| [b]).collect();
    let refs: Vec<&[u8]> = bytes.iter().map(|b| &b[..]).collect();
    synthetic_vocab(&refs)
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Outcome {
    Pass,
    FailedValid,
    FalsePositive,
    Unsupported,
    Panic,
}

impl Outcome {
    fn name(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::FailedValid => "failed_valid",
            Outcome::FalsePositive => "false_positive",
            Outcome::Unsupported => "unsupported",
            Outcome::Panic => "panic",
        }
    }
}

#[derive(Default, Clone)]
struct Counts {
    pass: usize,
    failed_valid: usize,
    false_positive: usize,
    unsupported: usize,
    panic: usize,
    total: usize,
    /// llguidance's recorded `pass` results for this file (draft 2020-12 only).
    llg_pass: Option<usize>,
    /// Our passes on the tests llguidance has a recorded result for.
    pass_on_llg_entries: usize,
    llg_entries: usize,
}

impl Counts {
    fn add(&mut self, o: Outcome) {
        self.total += 1;
        match o {
            Outcome::Pass => self.pass += 1,
            Outcome::FailedValid => self.failed_valid += 1,
            Outcome::FalsePositive => self.false_positive += 1,
            Outcome::Unsupported => self.unsupported += 1,
            Outcome::Panic => self.panic += 1,
        }
    }

    fn merge(&mut self, o: &Counts) {
        self.pass += o.pass;
        self.failed_valid += o.failed_valid;
        self.false_positive += o.false_positive;
        self.unsupported += o.unsupported;
        self.panic += o.panic;
        self.total += o.total;
        if let Some(n) = o.llg_pass {
            *self.llg_pass.get_or_insert(0) += n;
        }
        self.pass_on_llg_entries += o.pass_on_llg_entries;
        self.llg_entries += o.llg_entries;
    }

    fn to_json(&self) -> Value {
        json!({
            "pass": self.pass, "failed_valid": self.failed_valid, "false_positive": self.false_positive,
            "unsupported": self.unsupported, "panic": self.panic, "total": self.total,
            "llguidance_pass": self.llg_pass,
            "pass_on_llguidance_entries": self.pass_on_llg_entries, "llguidance_entries": self.llg_entries,
        })
    }
}

struct TestRecord {
    file: String,
    group: String,
    test: String,
    valid: bool,
    outcome: Outcome,
    detail: String,
}

/// Compile one group schema into an engine, or `Err((keyword, message))` for a refusal (an engine
/// build failure is keyword `<engine>`). Panics are left to the caller's [`catch`].
fn compile_group(schema: &Value, vocab: &Vocabulary) -> Result<Arc<Engine>, (String, String)> {
    let sg = compile_schema(schema, &SchemaOptions::default())
        .map_err(|e| (e.keyword.clone(), format!("{} at {}: {}", e.keyword, e.pointer, e.message)))?;
    let (engine, _stats) = dwac_compile::compile_engine(&sg.grammar, vocab.clone())
        .map_err(|e| ("<engine>".to_string(), e.to_string()))?;
    Ok(Arc::new(engine))
}

fn judge(engine: &Arc<Engine>, text: &str) -> bool {
    let mut m = Matcher::new(Arc::clone(engine));
    m.commit_bytes(text.as_bytes()).is_ok() && m.is_accepting()
}

pub fn run(draft: &str, as_json: bool, out: Option<PathBuf>) -> Result<()> {
    let drafts: Vec<&str> = if draft == "all" { DRAFTS.to_vec() } else { vec![draft] };
    let reference: Value = {
        let p = shared_data().join("json-schema-test-suite/llguidance-reference/expected_json_schema_test_suite.json");
        let text = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", p.display()))?
    };
    let t_all = Instant::now();
    let mut r = judge_all(&drafts, &reference, as_json)?;
    r.elapsed_s = t_all.elapsed().as_secs_f64();
    r.slow.sort_by(|a, b| b.0.total_cmp(&a.0));
    let llg_total: usize = if drafts.contains(&"draft2020-12") {
        reference["draft2020-12"]
            .as_object()
            .into_iter()
            .flatten()
            .flat_map(|(_, f)| f.as_object().into_iter().flatten())
            .flat_map(|(_, g)| g.as_object().into_iter().flatten())
            .count()
    } else {
        0
    };
    let report = report_json(&drafts, &r, llg_total);
    if let Some(p) = &out {
        std::fs::write(p, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", p.display()))?;
    }
    if as_json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    print_text(&r, llg_total);
    Ok(())
}

/// Every group of the drafts' files compiled and every test judged.
struct SuiteRun {
    per_file: BTreeMap<String, Counts>,
    records: Vec<TestRecord>,
    /// keyword -> (groups, tests)
    refusals: BTreeMap<String, (usize, usize)>,
    /// Compile time per group (ms, label), slowest first once sorted.
    slow: Vec<(f64, String)>,
    groups: usize,
    groups_compiled: usize,
    group_panics: usize,
    elapsed_s: f64,
}

impl SuiteRun {
    /// Every file's counts summed.
    fn total(&self) -> Counts {
        let mut total = Counts::default();
        for c in self.per_file.values() {
            total.merge(c);
        }
        total
    }

    /// The refusal keywords, by tests then name.
    fn keywords(&self) -> Vec<(String, (usize, usize))> {
        let mut kw: Vec<(String, (usize, usize))> = self.refusals.iter().map(|(k, v)| (k.clone(), *v)).collect();
        kw.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(a.0.cmp(&b.0)));
        kw
    }
}

/// Compile every group of the drafts' files and judge each of its tests.
fn judge_all(drafts: &[&str], reference: &Value, quiet: bool) -> Result<SuiteRun> {
    let vocab = byte_vocab();
    let _silence = Silenced::install();
    let mut files: Vec<(String, String, PathBuf)> = Vec::new();
    for d in drafts {
        let fs = test_suite_files(d);
        anyhow::ensure!(!fs.is_empty(), "no test files for draft {d}");
        files.extend(fs.into_iter().map(|(k, p)| (d.to_string(), k, p)));
    }
    let bar = crate::util::bar(files.len() as u64, quiet);
    let mut per_file: BTreeMap<String, Counts> = BTreeMap::new();
    let mut records: Vec<TestRecord> = Vec::new();
    // keyword -> (groups, tests)
    let mut refusals: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut slow: Vec<(f64, String)> = Vec::new();
    let (mut groups, mut groups_compiled, mut group_panics) = (0usize, 0usize, 0usize);

    for (d, key, path) in &files {
        bar.inc(1);
        bar.set_message(key.clone());
        let label = if drafts.len() > 1 { format!("{d}/{key}") } else { key.clone() };
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let Value::Array(gs) = serde_json::from_str::<Value>(&text).with_context(|| path.display().to_string())? else {
            anyhow::bail!("{}: not an array of groups", path.display());
        };
        let refs = if *d == "draft2020-12" { reference[d][key.as_str()].as_object() } else { None };
        let counts = per_file.entry(label.clone()).or_default();
        if let Some(r) = refs {
            counts.llg_pass = Some(
                r.values().flat_map(|g| g.as_object().into_iter().flatten()).filter(|(_, v)| *v == "pass").count(),
            );
        }
        for g in gs {
            groups += 1;
            let gdesc = g["description"].as_str().unwrap_or("").to_string();
            let mut schema = g["schema"].clone();
            if let (Some(uri), Some(o)) = (draft_uri(d), schema.as_object_mut()) {
                if !o.contains_key("$schema") {
                    o.insert("$schema".into(), json!(uri));
                }
            }
            let t0 = Instant::now();
            let compiled = catch(|| compile_group(&schema, &vocab));
            slow.push((t0.elapsed().as_secs_f64() * 1e3, format!("{label} / {gdesc}")));
            let engine = match compiled {
                Ok(Ok(e)) => {
                    groups_compiled += 1;
                    Ok(e)
                }
                Ok(Err((kw, msg))) => {
                    refusals.entry(kw.clone()).or_default().0 += 1;
                    Err((Outcome::Unsupported, kw, msg))
                }
                Err(p) => {
                    group_panics += 1;
                    Err((Outcome::Panic, String::new(), format!("compile panicked: {p}")))
                }
            };
            for t in g["tests"].as_array().into_iter().flatten() {
                let tdesc = t["description"].as_str().unwrap_or("").to_string();
                let valid = t["valid"].as_bool().unwrap_or(false);
                let (outcome, detail) = match &engine {
                    Err((o, kw, msg)) => {
                        if *o == Outcome::Unsupported {
                            refusals.entry(kw.clone()).or_default().1 += 1;
                        }
                        (*o, msg.clone())
                    }
                    Ok(e) => match catch(|| {
                        let text = json_dumps(&order_instance(&schema, &t["data"]));
                        let acc = judge(e, &text);
                        (acc, text)
                    }) {
                        Ok((acc, text)) => {
                            let o = match (valid, acc) {
                                (v, a) if v == a => Outcome::Pass,
                                (true, false) => Outcome::FailedValid,
                                _ => Outcome::FalsePositive,
                            };
                            (o, text)
                        }
                        Err(p) => (Outcome::Panic, format!("judging panicked: {p}")),
                    },
                };
                counts.add(outcome);
                if refs.is_some_and(|r| r.get(&gdesc).and_then(|x| x.get(&tdesc)).is_some()) {
                    counts.llg_entries += 1;
                    if outcome == Outcome::Pass {
                        counts.pass_on_llg_entries += 1;
                    }
                }
                records.push(TestRecord {
                    file: label.clone(),
                    group: gdesc.clone(),
                    test: tdesc,
                    valid,
                    outcome,
                    detail,
                });
            }
        }
    }
    bar.finish_and_clear();
    Ok(SuiteRun { per_file, records, refusals, slow, groups, groups_compiled, group_panics, elapsed_s: 0.0 })
}

/// The JSON report (`--json`, `--out`): totals, per file, refusals, the failures, every test.
fn report_json(drafts: &[&str], r: &SuiteRun, llg_total: usize) -> Value {
    let (total, kw, records) = (r.total(), r.keywords(), &r.records);
    let (per_file, slow, elapsed_s) = (&r.per_file, &r.slow, r.elapsed_s);
    let (groups, groups_compiled, group_panics) = (r.groups, r.groups_compiled, r.group_panics);
    let listed = |o: Outcome| -> Vec<Value> {
        records
            .iter()
            .filter(|r| r.outcome == o)
            .map(|r| json!({"file": r.file, "group": r.group, "test": r.test, "valid": r.valid, "detail": r.detail}))
            .collect()
    };
    json!({
        "drafts": drafts,
        "elapsed_s": (elapsed_s * 100.0).round() / 100.0,
        "groups": groups, "groups_compiled": groups_compiled, "group_panics": group_panics,
        "total": total.to_json(),
        "llguidance_reference_entries": llg_total,
        "files": per_file.iter().map(|(k, c)| (k.clone(), c.to_json())).collect::<serde_json::Map<_, _>>(),
        "refusal_keywords": kw.iter().map(|(k, (g, t))| json!({"keyword": k, "groups": g, "tests": t})).collect::<Vec<_>>(),
        "false_positives": listed(Outcome::FalsePositive),
        "failed_valid": listed(Outcome::FailedValid),
        "panics": listed(Outcome::Panic),
        "slowest_groups_ms": slow.iter().take(5).map(|(ms, g)| json!({"group": g, "ms": (ms * 10.0).round() / 10.0})).collect::<Vec<_>>(),
        "tests": records.iter().map(|r| json!({"file": r.file, "group": r.group, "test": r.test, "outcome": r.outcome.name()})).collect::<Vec<_>>(),
    })
}

/// The text report: per file, totals, refusals, the failures, the slowest groups.
fn print_text(r: &SuiteRun, llg_total: usize) {
    let (total, kw, records) = (r.total(), r.keywords(), &r.records);
    let (per_file, slow, elapsed_s) = (&r.per_file, &r.slow, r.elapsed_s);
    let (groups, groups_compiled, group_panics) = (r.groups, r.groups_compiled, r.group_panics);
    let has_llg = total.llg_pass.is_some();
    let header = format!(
        "{:<40} {:>6} {:>12} {:>9} {:>11} {:>5} {:>5}{}",
        "file",
        "passed",
        "failed-valid",
        "false-pos",
        "unsupported",
        "panic",
        "total",
        if has_llg { "  llguidance-pass" } else { "" }
    );
    println!("{header}");
    println!("{}", "-".repeat(header.len()));
    let row = |name: &str, c: &Counts| {
        let llg = match c.llg_pass {
            Some(n) if has_llg => format!(" {:>16}", n),
            _ if has_llg => format!(" {:>16}", "-"),
            _ => String::new(),
        };
        println!(
            "{:<40} {:>6} {:>12} {:>9} {:>11} {:>5} {:>5}{}",
            name, c.pass, c.failed_valid, c.false_positive, c.unsupported, c.panic, c.total, llg
        );
    };
    for (k, c) in per_file {
        row(k, c);
    }
    println!("{}", "-".repeat(header.len()));
    row("TOTAL", &total);
    println!();
    println!(
        "{} groups: {} compiled, {} refused, {} panicked; {} tests in {:.2} s",
        groups,
        groups_compiled,
        groups - groups_compiled - group_panics,
        group_panics,
        total.total,
        elapsed_s
    );
    println!(
        "passed {} / {}   failed-valid {}   FALSE POSITIVES {}   unsupported {}   panics {}",
        total.pass, total.total, total.failed_valid, total.false_positive, total.unsupported, total.panic
    );
    if has_llg {
        println!(
            "llguidance (recorded, draft2020-12): {} pass of its {} entries; dwac on those same entries: {} pass \
             (of {} matched)",
            total.llg_pass.unwrap_or(0),
            llg_total,
            total.pass_on_llg_entries,
            total.llg_entries
        );
    }
    if !kw.is_empty() {
        println!("\ntop refusal keywords (tests / groups):");
        for (k, (g, t)) in kw.iter().take(15) {
            println!("  {:<32} {:>5} / {:>4}", k, t, g);
        }
    }
    for (o, title) in [
        (Outcome::FalsePositive, "FALSE POSITIVES (invalid but accepted)"),
        (Outcome::Panic, "PANICS"),
        (Outcome::FailedValid, "failed-valid (valid but rejected), first 25"),
    ] {
        let rs: Vec<&TestRecord> = records.iter().filter(|r| r.outcome == o).collect();
        if rs.is_empty() {
            continue;
        }
        println!("\n{title}:");
        for r in rs.iter().take(if o == Outcome::FailedValid { 25 } else { 100 }) {
            let mut d = r.detail.clone();
            if d.len() > 100 {
                let mut cut = 100;
                while !d.is_char_boundary(cut) {
                    cut -= 1;
                }
                d.truncate(cut);
                d.push('…');
            }
            println!("  {} / {} / {}: {}", r.file, r.group, r.test, d);
        }
    }
    println!("\nslowest group compilations:");
    for (ms, g) in slow.iter().take(5) {
        println!("  {:>9.1} ms  {}", ms, g);
    }
}
