//! `cargo xtask large-schemas`: large JSON Schemas assembled from real parts of
//! `../shared/data/jsonschemabench`, the compiler's scaling workloads (issue 22):
//!
//! - `tools-N.json`: an `anyOf` of N Glaive-style function calls
//!   (`{"name": <const>, "arguments": <the function's parameter schema>}`), the first N
//!   Glaiveai2K schemas by file name that are distinct, have no `$ref` and are accepted by the
//!   schema compiler on their own (Glaive has 95 function names; the k-th variant of a name is
//!   called `name_k`). Tool calling with hundreds of tools is the heaviest
//!   request a server sees.
//! - `k8s-N.json`: a deep `$defs` graph of the Kubernetes shape: N object definitions taken
//!   from Github_easy schemas, in file order: the object schemas among a file's `definitions`
//!   (their own properties, formats, enums and references kept, references renamed into the one
//!   `$defs`), or the file's root if it has no definitions and is a self-contained object;
//!   linked into one graph: every
//!   definition refers to the two after it in a binary tree (`2i+1`, `2i+2`, so all are reachable
//!   from the root) and every fifth back to an earlier one (recursion), every third has a
//!   `labels` map (`additionalProperties: {"type": "string"}`); the root is a resource object
//!   (`apiVersion` enum, `kind` const, `metadata` and `spec` references).
//!
//! `tools-N.instances.jsonl` holds valid calls: the valid MaskBench instances of the first 20
//! functions as arguments. The output is deterministic (sorted inputs, no randomness), so the files in `schemas/large`
//! can be regenerated and compared.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use dwac_grammar::schema::{compile_schema, SchemaOptions};
use dwac_testdata::shared_data;
use serde_json::{json, Map, Value};

pub struct Args {
    pub out: PathBuf,
    pub tools: Vec<usize>,
    pub k8s: Vec<usize>,
}

fn split_files(split: &str) -> Result<Vec<PathBuf>> {
    let dir = shared_data().join("jsonschemabench/data").join(split);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    Ok(files)
}

fn read(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// Does the schema compiler accept `schema` on its own (front-end only)?
fn accepted(schema: &Value) -> bool {
    std::panic::catch_unwind(|| compile_schema(schema, &SchemaOptions::default()).is_ok()).unwrap_or(false)
}

fn mentions_ref(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, v)| k == "$ref" || mentions_ref(v)),
        Value::Array(a) => a.iter().any(mentions_ref),
        _ => false,
    }
}

/// The function name of a Glaive file (`get_weather_1a2b3c4d.json` → `get_weather`).
fn function_name(path: &Path) -> String {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    match stem.rsplit_once('_') {
        Some((name, hash)) if hash.len() == 8 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => name.to_string(),
        _ => stem,
    }
}

/// Valid instances of tool calls: for the first tools, `{"name", "arguments"}` with each valid
/// MaskBench instance of the function's schema.
const TOOLS_WITH_INSTANCES: usize = 20;

/// `anyOf` of the first `n` usable Glaive functions, and valid instances of calls.
fn tools(n: usize) -> Result<(Value, Vec<Value>)> {
    let mut names: std::collections::BTreeMap<String, usize> = Default::default();
    let mut seen = BTreeSet::new();
    let mut calls = Vec::new();
    let mut instances = Vec::new();
    for path in split_files("Glaiveai2K")? {
        if calls.len() == n {
            break;
        }
        let mut schema = read(&path)?;
        if mentions_ref(&schema) || !schema.is_object() {
            continue;
        }
        if let Some(m) = schema.as_object_mut() {
            m.remove("$schema");
        }
        if !seen.insert(schema.to_string()) || !accepted(&schema) {
            continue;
        }
        // Variants of one function (Glaive has 95 names) are told apart as a server's tool list
        // would: `book_flight`, `book_flight_2`, ...
        let base = function_name(&path);
        let k = names.entry(base.clone()).or_default();
        *k += 1;
        let name = if *k == 1 { base } else { format!("{base}_{k}") };
        if calls.len() < TOOLS_WITH_INSTANCES {
            let stem = path.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let mb = shared_data().join("jsonschemabench/maskbench/data").join(format!("Glaiveai2K---{stem}"));
            if let Ok(v) = read(&mb) {
                for t in v["tests"].as_array().into_iter().flatten().filter(|t| t["valid"] == json!(true)) {
                    instances.push(json!({"name": name, "arguments": t["data"]}));
                }
            }
        }
        calls.push(json!({
            "type": "object",
            "properties": {"name": {"const": name}, "arguments": schema},
            "required": ["name", "arguments"],
            "additionalProperties": false
        }));
    }
    anyhow::ensure!(calls.len() == n, "only {} usable Glaive functions", calls.len());
    Ok((json!({"anyOf": calls}), instances))
}

/// Rewrite `#/definitions/X` and `#/$defs/X` (and `#`) references of a part of file `stem`
/// into references to `#/$defs/<stem>.X` (`#/$defs/<stem>`); false if some other reference
/// (remote, or into other parts of the document) occurs.
fn rename_refs(v: &mut Value, stem: &str, defs: &BTreeSet<String>, root_kept: bool) -> bool {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref") {
                let target =
                    r.strip_prefix("#/definitions/").or_else(|| r.strip_prefix("#/$defs/")).map(str::to_string);
                match target {
                    Some(t) if defs.contains(&t) => *r = format!("#/$defs/{stem}.{t}"),
                    None if r == "#" && root_kept => *r = format!("#/$defs/{stem}"),
                    _ => return false,
                }
            }
            m.iter_mut().all(|(_, v)| rename_refs(v, stem, defs, root_kept))
        }
        Value::Array(a) => a.iter_mut().all(|v| rename_refs(v, stem, defs, root_kept)),
        _ => true,
    }
}

fn is_object_schema(v: &Value) -> bool {
    v.get("type") == Some(&json!("object"))
        && v.get("properties").is_some_and(|p| p.as_object().is_some_and(|p| !p.is_empty()))
}

/// The lowerCamel property name for a reference to definition `name` (`o123.PodSpec` →
/// `podSpec`).
fn property_for(name: &str) -> String {
    let last = name.rsplit('.').next().unwrap_or(name);
    let word: String = last.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    let mut chars = word.chars();
    match chars.next() {
        Some(c) => c.to_ascii_lowercase().to_string() + chars.as_str(),
        None => "ref".to_string(),
    }
}

/// A Kubernetes-shaped schema with `n` object definitions.
fn k8s(n: usize) -> Result<Value> {
    let mut parts: Vec<(String, Value)> = Vec::new();
    let mut defs = Map::new();
    for path in split_files("Github_easy")? {
        if parts.len() >= n {
            break;
        }
        let schema = read(&path)?;
        let mut root = schema.clone();
        if let Some(m) = root.as_object_mut() {
            m.remove("$schema");
            m.remove("$id");
            m.remove("id");
        }
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let Some(d) = schema.get("definitions").or_else(|| schema.get("$defs")).and_then(Value::as_object) else {
            // A schema without definitions is a part itself if it is a self-contained object.
            if is_object_schema(&root) && !mentions_ref(&root) && accepted(&root) {
                parts.push((stem, root));
            }
            continue;
        };
        if !accepted(&root) {
            continue;
        }
        let names: BTreeSet<String> = d.keys().cloned().collect();
        // Every definition of the file (they may refer to each other), renamed; the objects
        // among them are the graph's parts.
        let mut file_defs = Vec::new();
        let mut ok = true;
        for (k, v) in d {
            let mut v = v.clone();
            ok &= rename_refs(&mut v, &stem, &names, false);
            file_defs.push((format!("{stem}.{k}"), v));
        }
        if !ok {
            continue;
        }
        for (k, v) in file_defs {
            if is_object_schema(&v) && parts.len() < n && !mentions_ref_to_root(&v) {
                parts.push((k.clone(), v.clone()));
            }
            defs.insert(k, v);
        }
    }
    anyhow::ensure!(parts.len() == n, "only {} object definitions found", parts.len());
    // Link the parts into one graph.
    let linked: Vec<(String, Value)> = parts
        .iter()
        .enumerate()
        .map(|(i, (name, v))| {
            let mut v = v.clone();
            let props = v.get_mut("properties").and_then(Value::as_object_mut).expect("object schema");
            let mut targets = vec![2 * i + 1, 2 * i + 2];
            if i % 5 == 4 {
                targets.push(i * 37 % (i + 1));
            }
            for t in targets.into_iter().filter(|&t| t < n) {
                let target = &parts[t].0;
                let mut key = property_for(target);
                while props.contains_key(&key) {
                    key.push('X');
                }
                props.insert(key, json!({"$ref": format!("#/$defs/{target}")}));
            }
            if i % 3 == 0 && !props.contains_key("labels") {
                props.insert(
                    "labels".into(),
                    json!({"type": "object", "description": "Map of string keys and values.", "additionalProperties": {"type": "string"}}),
                );
            }
            (name.clone(), v)
        })
        .collect();
    for (k, v) in linked {
        defs.insert(k, v);
    }
    let meta = &parts[0].0;
    let spec = &parts[1.min(n - 1)].0;
    Ok(json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string", "enum": ["apps/v1", "apps/v1beta2", "extensions/v1beta1"]},
            "kind": {"const": "Deployment"},
            "metadata": {"$ref": format!("#/$defs/{meta}")},
            "spec": {"$ref": format!("#/$defs/{spec}")}
        },
        "required": ["apiVersion", "kind", "spec"],
        "$defs": defs
    }))
}

fn mentions_ref_to_root(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, v)| (k == "$ref" && v == "#") || mentions_ref_to_root(v)),
        Value::Array(a) => a.iter().any(mentions_ref_to_root),
        _ => false,
    }
}

pub fn run(args: Args) -> Result<()> {
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let mut made: Vec<(String, Value, Vec<Value>)> = Vec::new();
    for &n in &args.tools {
        let (schema, instances) = tools(n)?;
        made.push((format!("tools-{n}"), schema, instances));
    }
    for &n in &args.k8s {
        made.push((format!("k8s-{n}"), k8s(n)?, Vec::new()));
    }
    for (name, schema, instances) in made {
        let path = args.out.join(format!("{name}.json"));
        let text = serde_json::to_string_pretty(&schema)? + "\n";
        let ok = accepted(&schema);
        std::fs::write(&path, &text).with_context(|| format!("writing {}", path.display()))?;
        eprintln!(
            "{}: {} bytes{}",
            path.display(),
            text.len(),
            if ok { "" } else { " (refused by the schema compiler!)" }
        );
        if !instances.is_empty() {
            let path = args.out.join(format!("{name}.instances.jsonl"));
            let lines: Vec<String> = instances.iter().map(|v| v.to_string() + "\n").collect();
            std::fs::write(&path, lines.concat()).with_context(|| format!("writing {}", path.display()))?;
            eprintln!("{}: {} valid instances", path.display(), instances.len());
        }
    }
    Ok(())
}
