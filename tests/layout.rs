//! The code's layout, as ARCHITECTURE.md's code map promises it:
//!
//! * no Rust source file of the workspace (crates, xtask, tests) is longer than [`MAX_LINES`];
//! * no module imports a module that imports it back. A module and its own submodules are
//!   the exception: a submodule's `use super::*` is how the mechanisms of one module share its
//!   items, and the parent names the submodule to declare it.
//!
//! A module's imports are what its code names, comments left out: paths `crate::a::b`,
//! `super::…` (resolved against the module) and `use child::…` of a child module, each taken
//! to the longest module path of its crate it starts with.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use dwac_tests::repo_root;

/// Lines a source file may have.
const MAX_LINES: usize = 800;

/// Every `.rs` file below `dir`, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "target" && n != "data") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The source roots of the workspace's crates: `crates/*/src`, `xtask/src`, `tests/support`.
fn crate_roots() -> Vec<PathBuf> {
    let root = repo_root();
    let mut out = Vec::new();
    let mut crates: Vec<PathBuf> =
        std::fs::read_dir(root.join("crates")).unwrap().filter_map(|e| e.ok().map(|e| e.path())).collect();
    crates.sort();
    for c in crates {
        if c.join("src").is_dir() {
            out.push(c.join("src"));
        }
    }
    out.push(root.join("xtask/src"));
    out.push(root.join("tests/support"));
    out
}

/// A file's module path in its crate (`lib.rs`, `main.rs` and `mod.rs` name their folder).
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("lib" | "main" | "mod")) {
        parts.pop();
    }
    parts
}

/// The code of a Rust file without its comments (`//` to the end of the line; string
/// literals are not parsed, which can only add names, never hide one).
fn code_of(text: &str) -> String {
    text.lines().map(|l| l.find("//").map_or(l, |i| &l[..i])).collect::<Vec<_>>().join("\n")
}

/// The paths `code` names: `crate::…`, `super::…` (resolved against `module`), and `use x::…`
/// for a name `x` (taken as a child of `module`).
fn named_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    // The path of identifiers joined by `::` starting at byte `i`.
    let path_at = |i: usize| -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = &code[i..];
        loop {
            let n = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
            if n == 0 {
                break;
            }
            out.push(rest[..n].to_string());
            rest = &rest[n..];
            match rest.strip_prefix("::") {
                Some(r) => rest = r,
                None => break,
            }
        }
        out
    };
    let starts_word = |i: usize| i == 0 || !code[..i].ends_with(is_ident);
    let mut out = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        if starts_word(i) {
            out.push(path_at(i + "crate::".len()));
        }
    }
    for (i, _) in code.match_indices("super::") {
        if starts_word(i) && !code[..i].ends_with("super::") {
            let mut j = i;
            let mut up = 0;
            while code[j..].starts_with("super::") {
                j += "super::".len();
                up += 1;
            }
            if up <= module.len() {
                let mut p = module[..module.len() - up].to_vec();
                p.extend(path_at(j));
                out.push(p);
            }
        }
    }
    for (i, _) in code.match_indices("use ") {
        if starts_word(i) {
            let mut j = i + "use ".len();
            if code[j..].starts_with("self::") {
                j += "self::".len();
            }
            let p = path_at(j);
            if p.len() >= 2 && p[0] != "crate" && p[0] != "super" {
                let mut q = module.to_vec();
                q.push(p[0].clone());
                out.push(q);
            }
        }
    }
    out
}

#[test]
fn no_source_file_is_longer_than_the_limit() {
    let root = repo_root();
    let mut files = Vec::new();
    for dir in ["crates", "xtask", "tests"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 100, "found only {} source files under {}", files.len(), root.display());
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).unwrap().lines().count();
            (n > MAX_LINES).then(|| format!("{} ({n} lines)", f.strip_prefix(&root).unwrap().display()))
        })
        .collect();
    assert!(long.is_empty(), "source files over {MAX_LINES} lines: {long:#?}");
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let mut cycles = Vec::new();
    let mut edges_seen = 0;
    for src in crate_roots() {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let modules: BTreeMap<Vec<String>, PathBuf> = files.iter().map(|f| (module_path(&src, f), f.clone())).collect();
        let mut edges: BTreeSet<(Vec<String>, Vec<String>)> = BTreeSet::new();
        for (m, f) in &modules {
            let code = code_of(&std::fs::read_to_string(f).unwrap());
            for p in named_paths(&code, m) {
                // The longest module path `p` starts with.
                if let Some(t) = (1..=p.len()).rev().map(|k| p[..k].to_vec()).find(|t| modules.contains_key(t)) {
                    if &t != m {
                        edges.insert((m.clone(), t));
                    }
                }
            }
        }
        edges_seen += edges.len();
        let nested = |a: &[String], b: &[String]| a.starts_with(b) || b.starts_with(a);
        for (a, b) in &edges {
            if a < b && edges.contains(&(b.clone(), a.clone())) && !nested(a, b) {
                cycles.push(format!("{}: {} <-> {}", src.display(), a.join("::"), b.join("::")));
            }
        }
    }
    assert!(edges_seen > 100, "found only {edges_seen} imports between modules");
    assert!(cycles.is_empty(), "modules that import each other: {cycles:#?}");
}

/// The checks above can fail: a made-up pair of sibling modules importing each other, and a
/// child's `use super::*`, are found as such.
#[test]
fn the_import_scan_sees_paths() {
    let m = vec!["a".to_string(), "b".to_string()];
    let code =
        code_of("use crate::x::Y;\nuse super::*; // crate::not_this\nuse child::Z;\nlet v = super::super::w::f();");
    let paths = named_paths(&code, &m);
    let want: Vec<Vec<String>> = vec![
        vec!["x".into(), "Y".into()],
        vec!["a".into()],
        vec!["w".into(), "f".into()],
        vec!["a".into(), "b".into(), "child".into()],
    ];
    for w in &want {
        assert!(paths.contains(w), "{w:?} not in {paths:?}");
    }
    assert!(!paths.iter().any(|p| p.first().is_some_and(|s| s == "not_this")), "{paths:?}");
}
