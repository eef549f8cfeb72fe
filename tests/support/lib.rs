//! Shared support for the end-to-end tests and for xtask: where the shared data lives,
//! a `json.dumps`-style serializer, MaskBench / JSON-Schema-Test-Suite loaders.

pub mod differential;
pub mod jsoncheck;

use std::path::PathBuf;
use std::sync::Arc;

use dwac_compile::{compile_engine, parse_source, SourceKind};
use dwac_runtime::{Engine, Vocabulary};
use serde_json::Value;

/// Where the data lives: one policy for every test suite (`dwac-testdata`); a missing corpus
/// fails the test that needs it.
pub use dwac_testdata::{
    gguf_vocab, grammars_dir, maskbench_dir, repo_root, schema_test_suite, shared_data, shared_path, tokenizer_json,
};

/// The `tokenizer.json` of a shared tokenizer by name (the older name of [`tokenizer_json`]).
pub use dwac_testdata::tokenizer_json as tokenizer_path;

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
    pub file: String,
    pub valid: bool,
    pub data: Value,
}

/// A JSON file of the data (a file that cannot be read or parsed fails the test, loudly).
fn read_json(f: &std::path::Path) -> Value {
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

/// Compile a grammar file of the repository (e.g. `grammars/json.lark`) for `vocab`.
pub fn engine_from_file(rel: &str, vocab: Vocabulary) -> Arc<Engine> {
    let path = repo_root().join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let kind = SourceKind::from_path(&path).expect("grammar kind");
    let g = parse_source(kind, &text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Arc::new(compile_engine(&g, vocab).unwrap_or_else(|e| panic!("{}: {e}", path.display())).0)
}

/// Compile grammar source text for `vocab`.
pub fn engine_from_lark(src: &str, vocab: Vocabulary) -> Arc<Engine> {
    let g = parse_source(SourceKind::Lark, src).unwrap_or_else(|e| panic!("{e}"));
    Arc::new(compile_engine(&g, vocab).unwrap_or_else(|e| panic!("{e}")).0)
}

/// A synthetic vocabulary: the given byte strings, no specials, plus one end token (last id).
pub fn synthetic_vocab(tokens: &[&[u8]]) -> Vocabulary {
    let mut toks: Vec<Vec<u8>> = tokens.iter().map(|t| t.to_vec()).collect();
    toks.push(Vec::new());
    let mut special = vec![false; toks.len()];
    let eos = (toks.len() - 1) as u32;
    special[eos as usize] = true;
    Vocabulary::from_tokens(&toks, special, vec![eos])
}

/// A small deterministic generator (xorshift64; no dependency needed) for seeded random tests
/// and the fuzzer.
pub struct Rng(pub u64);

impl Rng {
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

/// The first `n` valid instances of a MaskBench file (`{"schema", "tests"}`), serialized in the
/// schema's property order and encoded with `tok`.
pub fn valid_traces(tok: &dwac_vocab::Tokenizer, file: &Value, n: usize) -> Vec<Vec<u32>> {
    use dwac_grammar::schema::order_instance;
    file["tests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["valid"] == true)
        .take(n)
        .map(|t| tok.encode(&json_dumps(&order_instance(&file["schema"], &t["data"]))).unwrap())
        .collect()
}

/// Every string over `alphabet` of length 1..=`max_len`, plus `extra`.
pub fn vocab_over(alphabet: &[u8], max_len: usize, extra: &[&str]) -> Vocabulary {
    let mut toks: Vec<Vec<u8>> = Vec::new();
    let mut layer: Vec<Vec<u8>> = vec![Vec::new()];
    for _ in 0..max_len {
        let mut next = Vec::new();
        for s in &layer {
            for &c in alphabet {
                let mut t = s.clone();
                t.push(c);
                next.push(t);
            }
        }
        toks.extend(next.iter().cloned());
        layer = next;
    }
    toks.extend(extra.iter().map(|s| s.as_bytes().to_vec()));
    toks.sort();
    toks.dedup();
    let refs: Vec<&[u8]> = toks.iter().map(|t| t.as_slice()).collect();
    synthetic_vocab(&refs)
}

/// The terminal patterns of generated test grammars ([`random_grammar`] and the proptest
/// grammars of `dwa_mask.rs`): regexes and literals over `abc ` that overlap in many ways.
pub const GRAMMAR_PATTERNS: [&str; 12] = [
    "/[ab]+/",
    "/a[bc]*/",
    "/c+/",
    "/[a-c]{1,3}/",
    "\"ab\"",
    "\"a\"",
    "\"b c\"",
    "/b?a/",
    "\"abc\"",
    "/[abc]+ ?/",
    "\"ca\"",
    "/(ab)+/",
];

/// A random small Lark grammar over the alphabet `abc (),` and space: overlapping regex and
/// literal terminals, some with priorities, sometimes `%ignore`d spaces, 2–4 rules with
/// alternatives, recursion, `?` and `*`.
pub fn random_grammar(rng: &mut Rng) -> String {
    let n_terms = 2 + rng.below(4);
    let mut src = String::new();
    let mut terms = Vec::new();
    for i in 0..n_terms {
        let prio = if rng.below(4) == 0 { format!(".{}", 1 + rng.below(3)) } else { String::new() };
        src += &format!("T{i}{prio}: {}\n", GRAMMAR_PATTERNS[rng.below(GRAMMAR_PATTERNS.len())]);
        terms.push(format!("T{i}"));
    }
    let n_rules = 2 + rng.below(3);
    let rule = |i: usize| if i == 0 { "start".to_string() } else { format!("r{i}") };
    for i in 0..n_rules {
        let n_alts = 1 + rng.below(3);
        let mut alts = Vec::new();
        for a in 0..n_alts {
            let len = 1 + rng.below(3);
            let mut syms = Vec::new();
            for _ in 0..len {
                let s = match rng.below(6) {
                    0 if i + 1 < n_rules => rule(i + 1 + rng.below(n_rules - i - 1)),
                    1 if a > 0 => rule(i),
                    2 => ["\"(\"", "\")\"", "\",\""][rng.below(3)].to_string(),
                    _ => terms[rng.below(terms.len())].clone(),
                };
                let q = ["", "", "", "?", "*"][rng.below(5)];
                syms.push(format!("{s}{q}"));
            }
            alts.push(syms.join(" "));
        }
        src += &format!("{}: {}\n", rule(i), alts.join(" | "));
    }
    if rng.below(2) == 0 {
        src += "%ignore \" \"\n";
    }
    src
}

/// Shift `t` (or accept `$`) on an explicit stack with the LR tables: every stack reached by
/// reductions on lookahead `t` followed by shifting `t` (every conflict path followed), and
/// whether some reduction sequence reaches an accept action (for `t = $`).
pub fn lr_shift(
    lr: &dwac_runtime::unstable::LrTables,
    stack: &[u32],
    t: u32,
) -> (std::collections::BTreeSet<Vec<u32>>, bool) {
    use dwac_runtime::unstable::{Action, DEAD};
    let mut out = std::collections::BTreeSet::new();
    let mut accepted = false;
    let mut seen = std::collections::BTreeSet::new();
    let mut work = vec![stack.to_vec()];
    while let Some(s) = work.pop() {
        let Some(&top) = s.last() else { continue };
        for &a in lr.actions(top, t) {
            match Action::unpack(a) {
                Action::Shift(p) => {
                    let mut n = s.clone();
                    n.push(p);
                    out.insert(n);
                }
                Action::Accept => accepted = true,
                Action::Reduce(r) => {
                    let m = lr.rule_len[r as usize] as usize;
                    if s.len() <= m {
                        continue;
                    }
                    let mut n = s[..s.len() - m].to_vec();
                    let g = lr.goto(*n.last().unwrap_or(&0), lr.rule_lhs[r as usize]);
                    if g == DEAD {
                        continue;
                    }
                    n.push(g);
                    if seen.insert(n.clone()) {
                        work.push(n);
                    }
                }
            }
        }
    }
    (out, accepted)
}
