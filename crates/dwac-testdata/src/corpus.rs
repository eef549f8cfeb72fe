//! The corpora as data: MaskBench's instances, the JSON-Schema-Test-Suite's files, the large
//! schemas of `schemas/large`, and the serializer the instances are written with. A file that
//! cannot be read or parsed panics with its path (the tests' policy); the large schemas, which
//! the bench reads, return the error.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::{maskbench_dir, schema_test_suite};

/// Serialize like Python's `json.dumps(v, ensure_ascii=False)`: `", "` and `": "` separators,
/// object keys in their stored order.
pub fn json_dumps(v: &Value) -> String {
    let mut s = String::new();
    dump(v, &mut s);
    s
}

fn dump(v: &Value, out: &mut String) {
    match v {
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                dump(x, out);
            }
            out.push(']');
        }
        Value::Object(o) => {
            out.push('{');
            for (i, (k, x)) in o.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push_str(": ");
                dump(x, out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// One MaskBench test instance.
#[derive(Clone, Debug)]
pub struct Instance {
    /// The MaskBench file's name (`<split>---<name>.json`).
    pub file: String,
    /// Whether the instance is valid under the file's schema.
    pub valid: bool,
    /// The instance.
    pub data: Value,
}

/// A JSON file of the data (a file that cannot be read or parsed fails the test, loudly).
fn read_json(f: &Path) -> Value {
    let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()))
}

/// All MaskBench files, sorted by name.
pub fn maskbench_files() -> Vec<PathBuf> {
    let dir = maskbench_dir();
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

/// Every MaskBench instance (valid and invalid), in file order.
pub fn maskbench_instances() -> Vec<Instance> {
    let mut out = Vec::new();
    for f in maskbench_files() {
        let v = read_json(&f);
        let name = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        for t in v["tests"].as_array().into_iter().flatten() {
            out.push(Instance {
                file: name.clone(),
                valid: t["valid"].as_bool().unwrap_or(false),
                data: t["data"].clone(),
            });
        }
    }
    out
}

/// Every instance (`data`, `valid`) of the JSON-Schema-Test-Suite under `tests/<draft>`.
pub fn test_suite_instances(draft: &str) -> Vec<(String, Value)> {
    let files: Vec<PathBuf> = test_suite_files(draft).into_iter().map(|(_, p)| p).collect();
    let mut out = Vec::new();
    for f in files {
        let Value::Array(groups) = read_json(&f) else { panic!("{}: not an array of test groups", f.display()) };
        for g in groups {
            for t in g["tests"].as_array().into_iter().flatten() {
                out.push((f.display().to_string(), t["data"].clone()));
            }
        }
    }
    out
}

/// The JSON-Schema-Test-Suite files of `tests/<draft>` (including `optional/` and
/// `optional/format/`), sorted, each with its key: the path below the draft folder without
/// `.json`, e.g. `additionalProperties` or `optional/format/date` (the keys llguidance's
/// reference results use).
pub fn test_suite_files(draft: &str) -> Vec<(String, PathBuf)> {
    let root = schema_test_suite(draft);
    let mut files = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.unwrap_or_else(|e| panic!("{}: {e}", d.display())).path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "json") {
                let rel = p.strip_prefix(&root).unwrap_or(&p).with_extension("");
                let key = rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
                files.push((key, p));
            }
        }
    }
    files.sort();
    files
}

/// A small deterministic generator (xorshift64; no dependency needed) for seeded random tests
/// and the fuzzer.
pub struct Rng(
    /// The state; any value but 0.
    pub u64,
);

impl Rng {
    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform-ish in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// One schema of `schemas/large` (`cargo xtask large-schemas`): its file stem, the schema, and
/// the instances of `<stem>.instances.jsonl` beside it (none if that file is absent).
pub type LargeSchema = (String, Value, Vec<Value>);

/// The large schemas of `dir`, sorted by file name.
///
/// # Errors
/// A folder or file that cannot be read, or JSON that does not parse, with its path.
pub fn large_schemas(dir: &Path) -> std::io::Result<Vec<LargeSchema>> {
    let at = |p: &Path, e: &dyn std::fmt::Display| std::io::Error::other(format!("{}: {e}", p.display()));
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| at(dir, &e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let name = f.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let text = std::fs::read_to_string(&f).map_err(|e| at(&f, &e))?;
        let schema: Value = serde_json::from_str(&text).map_err(|e| at(&f, &e))?;
        let inst = f.with_file_name(format!("{name}.instances.jsonl"));
        let instances = match std::fs::read_to_string(&inst) {
            Ok(text) => text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(serde_json::from_str)
                .collect::<Result<_, _>>()
                .map_err(|e| at(&inst, &e))?,
            Err(_) => Vec::new(),
        };
        out.push((name, schema, instances));
    }
    Ok(out)
}
