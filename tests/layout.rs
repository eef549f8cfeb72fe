//! The code's layout, as ARCHITECTURE.md's code map promises it:
//!
//! * no Rust source file of the workspace (crates, bench, xtask, tests) is longer than [`MAX_LINES`];
//! * no modules of a crate import each other in a cycle, of any length. A module and its own
//!   ancestors and descendants are the exception: a submodule's `use super::*` is how the
//!   mechanisms of one module share its items, and a parent names (and may re-export) its
//!   submodules. So an import from a module to its ancestor or descendant is not an edge of the
//!   check; a cycle is a strongly connected component of two or more modules over the other
//!   imports (Tarjan's algorithm).
//!
//! The import graph of a crate has one node per source file's module, the crate root
//! (`lib.rs`/`main.rs`) included. A module's imports are what its code names, comments and
//! string literals left out: `use` declarations, grouped and nested (`use crate::{a::X, b::{Y,
//! Z}}`, `use super::{…}`), and paths in code (`crate::a::f()`, `super::x::Y`, `self::…`,
//! `$crate::…`), resolved against the module (an inline `mod tests { … }` included) and taken
//! to the longest module path of the crate they start with. A path that ends at a module's
//! item which that module itself imports by name (a re-export such as `crate::Matcher` where
//! `lib.rs` has `pub use matcher::Matcher`) is an import of the module the item comes from too:
//! otherwise every import through the crate root would be an import of an ancestor, exempt.
//! Glob re-exports (`pub use a::*`) are not followed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use dwac_tests::repo_root;

/// Lines a source file may have.
const MAX_LINES: usize = 800;

/// A module's path in its crate (`[]` is the crate root).
type Module = Vec<String>;

/// The import graph: (importer, imported) → where ("file:line: code"), the importer never the
/// imported.
type Edges = BTreeMap<(Module, Module), BTreeSet<String>>;

/// Every `.rs` file below `dir`, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
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

/// The source roots of the workspace's crates and the bench's peers: `crates/*/src`,
/// `bench/src`, `bench/peers/*/src`, `xtask/src`, `tests/support`.
fn crate_roots() -> Vec<PathBuf> {
    let root = repo_root();
    let mut out = Vec::new();
    let mut crates: Vec<PathBuf> =
        std::fs::read_dir(root.join("crates")).unwrap().filter_map(|e| e.ok().map(|e| e.path())).collect();
    crates.extend(std::fs::read_dir(root.join("bench/peers")).unwrap().filter_map(|e| e.ok().map(|e| e.path())));
    crates.push(root.join("bench"));
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
fn module_path(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Module = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("lib" | "main" | "mod")) {
        parts.pop();
    }
    parts
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The code of a Rust file with its comments (line, nested block) and the contents of its
/// string and character literals (raw and byte ones too) blanked: same length, same lines.
fn code_of(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for x in &mut out[from..to.min(b.len())] {
            if *x != b'\n' {
                *x = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let prev_ident = i > 0 && is_ident(b[i - 1]);
        if b[i..].starts_with(b"//") {
            let end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let (mut j, mut depth) = (i + 2, 1);
            while j < b.len() && depth > 0 {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j);
            i = j + 1;
        } else if !prev_ident && (b[i..].starts_with(b"r#") || b[i..].starts_with(b"r\"") || b[i..].starts_with(b"br"))
        {
            // A raw string `r#"…"#` (or a raw identifier `r#type`, left alone).
            let start = if b[i] == b'b' { i + 2 } else { i + 1 };
            let hashes = b[start..].iter().take_while(|&&c| c == b'#').count();
            if b.get(start + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            let body = start + hashes + 1;
            let end = b[body..].windows(close.len()).position(|w| w == close).map_or(b.len(), |n| body + n);
            blank(&mut out, body, end);
            i = end + close.len();
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', '\u{..}', 'é'), or a lifetime (left alone).
            let end = if b.get(i + 1) == Some(&b'\\') {
                b.get(i + 3..).and_then(|r| r.iter().position(|&c| c == b'\'')).map(|n| i + 3 + n)
            } else {
                let c = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + c) == Some(&b'\'')).then_some(i + 1 + c)
            };
            match end {
                Some(end) => {
                    blank(&mut out, i + 1, end);
                    i = end + 1;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8")
}

/// A token of a `use` tree, with its byte offset.
#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Colons,
    Open,
    Close,
    Comma,
    Star,
}

fn use_tokens(code: &str, from: usize, to: usize) -> Vec<(Tok, usize)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = from;
    while i < to {
        let c = b[i];
        let (t, n) = match c {
            b':' if b.get(i + 1) == Some(&b':') => (Tok::Colons, 2),
            b'{' => (Tok::Open, 1),
            b'}' => (Tok::Close, 1),
            b',' => (Tok::Comma, 1),
            b'*' => (Tok::Star, 1),
            c if is_ident(c) || c == b'$' => {
                let n = 1 + b[i + 1..to].iter().take_while(|&&c| is_ident(c)).count();
                (Tok::Ident(code[i..i + n].trim_start_matches('$').to_string()), n)
            }
            _ => {
                i += 1;
                continue;
            }
        };
        out.push((t, i));
        i += n;
    }
    out
}

/// One leaf of a `use` tree: its full path as written, the name it binds (`None` for a glob
/// or `as _`), and the byte offset of its last token.
#[derive(Clone, Debug, PartialEq)]
struct UseLeaf {
    path: Vec<String>,
    name: Option<String>,
    at: usize,
}

/// Parse the use tree at `toks[*i..]` below `prefix` (grouped and nested groups, `self`,
/// `as`, globs, a leading `::`).
fn parse_tree(toks: &[(Tok, usize)], i: &mut usize, prefix: &[String], out: &mut Vec<UseLeaf>) {
    let mut path = prefix.to_vec();
    while let Some((t, at)) = toks.get(*i) {
        *i += 1;
        match t {
            Tok::Colons => path.push("::".into()),
            Tok::Ident(s) => {
                path.push(s.clone());
                if toks.get(*i).map(|t| &t.0) == Some(&Tok::Colons) {
                    *i += 1;
                    continue;
                }
                if s == "self" && path.len() > 1 {
                    path.pop();
                }
                let mut name = path.last().cloned();
                if matches!(toks.get(*i), Some((Tok::Ident(a), _)) if a == "as") {
                    name = match toks.get(*i + 1) {
                        Some((Tok::Ident(n), _)) if n != "_" => Some(n.clone()),
                        _ => None,
                    };
                    *i += 2;
                }
                out.push(UseLeaf { path, name, at: *at });
                return;
            }
            Tok::Star => {
                out.push(UseLeaf { path, name: None, at: *at });
                return;
            }
            Tok::Open => {
                while let Some((t, _)) = toks.get(*i) {
                    match t {
                        Tok::Close => {
                            *i += 1;
                            return;
                        }
                        Tok::Comma => *i += 1,
                        _ => parse_tree(toks, i, &path, out),
                    }
                }
                return;
            }
            Tok::Close | Tok::Comma => {
                *i -= 1;
                return;
            }
        }
    }
}

/// Whole-word occurrences of `word` in `code`, not preceded by `::`.
fn words<'a>(code: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    let b = code.as_bytes();
    code.match_indices(word).map(|(i, _)| i).filter(move |&i| {
        // (`crate` after a `$` is `$crate`, a word of its own.)
        let before = i == 0 || word.starts_with('$') || !(is_ident(b[i - 1]) || b[i - 1] == b'$');
        let after = !matches!(b.get(i + word.len()), Some(&c) if is_ident(c));
        before && after && !code[..i].ends_with("::")
    })
}

/// One file's module, as the scan sees it.
struct Scan {
    /// Paths it names (absolute, below the crate root), each with the byte offset naming it.
    paths: Vec<(Vec<String>, usize)>,
    /// Names its top-level `use` declarations bind, to the absolute path they bind.
    bindings: BTreeMap<String, Vec<String>>,
}

/// The path of identifiers joined by `::` starting at byte `i`.
fn path_at(code: &str, mut i: usize) -> Vec<String> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    loop {
        let n = b[i..].iter().take_while(|&&c| is_ident(c)).count();
        if n == 0 {
            break;
        }
        out.push(code[i..i + n].to_string());
        i += n;
        if !code[i..].starts_with("::") {
            break;
        }
        i += 2;
    }
    out
}

/// `path` as written in module `here` (an inline module's path included) made absolute, if it
/// is a path of this crate: `crate::`/`$crate::`, `super::`, `self::`, or a child module of
/// `here` that `modules` has.
fn absolute(path: &[String], here: &[String], modules: &BTreeSet<Module>) -> Option<Vec<String>> {
    let first = path.first()?;
    match first.as_str() {
        "crate" => Some(path[1..].to_vec()),
        "super" => {
            let up = path.iter().take_while(|s| *s == "super").count();
            let keep = here.len().checked_sub(up)?;
            Some(here[..keep].iter().chain(&path[up..]).cloned().collect())
        }
        "self" => Some(here.iter().chain(&path[1..]).cloned().collect()),
        "::" => None,
        _ => {
            let child: Module = here.iter().chain(std::iter::once(first)).cloned().collect();
            modules.contains(&child).then(|| here.iter().chain(path).cloned().collect())
        }
    }
}

fn scan(text: &str, module: &Module, modules: &BTreeSet<Module>) -> Scan {
    let code = code_of(text);
    let b = code.as_bytes();
    // Brace depth before each byte, and the inline modules (`mod name { … }`) as byte spans.
    let mut depth = vec![0u32; b.len() + 1];
    for (i, &c) in b.iter().enumerate() {
        depth[i + 1] = match c {
            b'{' => depth[i] + 1,
            b'}' => depth[i].saturating_sub(1),
            _ => depth[i],
        };
    }
    let mut inline: Vec<(usize, usize, String)> = Vec::new();
    for i in words(&code, "mod") {
        let rest = &code[i + 3..];
        let name_at = rest.len() - rest.trim_start().len();
        let name = path_at(rest, name_at);
        let after = rest[name_at..].trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_').trim_start();
        if name.len() == 1 && after.starts_with('{') {
            let open = i + 3 + (rest.len() - after.len());
            let d = depth[open];
            let close = (open + 1..b.len()).find(|&j| b[j] == b'}' && depth[j + 1] == d).unwrap_or(b.len());
            inline.push((open, close, name[0].clone()));
        }
    }
    let here = |at: usize| -> Module {
        let mut m = module.clone();
        m.extend(inline.iter().filter(|(o, c, _)| *o < at && at < *c).map(|(_, _, n)| n.clone()));
        m
    };
    let mut s = Scan { paths: Vec::new(), bindings: BTreeMap::new() };
    // `use` declarations; blanked from `rest` once read, for the scan of paths in code below.
    let mut rest = code.clone().into_bytes();
    for i in words(&code, "use") {
        if !b.get(i + 3).is_some_and(|c| c.is_ascii_whitespace() || *c == b'{' || *c == b':') {
            continue;
        }
        let end = code[i..].find(';').map_or(b.len(), |n| i + n);
        let toks = use_tokens(&code, i + 3, end);
        let mut leaves = Vec::new();
        let mut k = 0;
        while k < toks.len() {
            let before = k;
            parse_tree(&toks, &mut k, &[], &mut leaves);
            k = k.max(before + 1);
        }
        let top = inline.iter().all(|(o, c, _)| !(*o < i && i < *c)) && depth[i] == 0;
        for leaf in leaves {
            if let Some(p) = absolute(&leaf.path, &here(i), modules) {
                if let (true, Some(n)) = (top, &leaf.name) {
                    s.bindings.insert(n.clone(), p.clone());
                }
                s.paths.push((p, leaf.at));
            }
        }
        rest[i..end].iter_mut().for_each(|c| *c = b' ');
    }
    let rest = String::from_utf8(rest).expect("ASCII blanks");
    for kw in ["crate", "$crate", "super", "self"] {
        for i in words(&rest, kw) {
            if !rest[i + kw.len()..].starts_with("::") {
                continue;
            }
            let mut p: Vec<String> = vec![kw.trim_start_matches('$').to_string()];
            let mut j = i + kw.len() + 2;
            while kw == "super" && rest[j..].starts_with("super::") {
                p.push("super".into());
                j += "super::".len();
            }
            p.extend(path_at(&rest, j));
            if let Some(p) = absolute(&p, &here(i), modules) {
                s.paths.push((p, i));
            }
        }
    }
    s
}

/// A module's source: its file (for messages) and text.
struct Source {
    file: String,
    text: String,
}

/// The longest module of `modules` that `p` starts with (the crate root at least).
fn module_of(p: &[String], modules: &BTreeSet<Module>) -> Option<usize> {
    (0..=p.len()).rev().find(|&k| modules.contains(&p[..k].to_vec()))
}

/// The import graph of one crate's modules.
fn import_graph(sources: &BTreeMap<Module, Source>) -> Edges {
    let modules: BTreeSet<Module> = sources.keys().cloned().collect();
    let scans: BTreeMap<&Module, Scan> = sources.iter().map(|(m, s)| (m, scan(&s.text, m, &modules))).collect();
    let mut edges = Edges::new();
    for (m, s) in &scans {
        let src = &sources[*m];
        let lines: Vec<&str> = src.text.lines().collect();
        for (p, at) in &s.paths {
            let line = src.text[..*at].matches('\n').count();
            let evidence = format!("{}:{}: {}", src.file, line + 1, lines.get(line).map_or("", |l| l.trim()));
            // Follow re-exports: the module `p` ends in, then the module of the name it imports.
            let mut p = p.clone();
            let mut via = String::new();
            for _ in 0..8 {
                let Some(k) = module_of(&p, &modules) else { break };
                let t = p[..k].to_vec();
                if &t != *m {
                    edges.entry(((*m).clone(), t.clone())).or_default().insert(format!("{evidence}{via}"));
                }
                let next = p.get(k).and_then(|name| scans[&t].bindings.get(name).map(|q| (name, q)));
                let Some((name, q)) = next else { break };
                via = format!(" (`{name}` through `crate::{}`)", t.join("::"));
                let q: Vec<String> = q.iter().chain(&p[k + 1..]).cloned().collect();
                if q == p {
                    break;
                }
                p = q;
            }
        }
    }
    edges
}

/// Is `a` an ancestor or descendant of `b` (or `b` itself)?
fn nested(a: &[String], b: &[String]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// The strongly connected components of a graph of `adj.len()` nodes (Tarjan).
fn sccs(adj: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct Tarjan<'a> {
        adj: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(t: &mut Tarjan, v: usize) {
        t.index[v] = Some(t.next);
        t.low[v] = t.next;
        t.next += 1;
        t.stack.push(v);
        t.on_stack[v] = true;
        let adj = t.adj;
        for &w in &adj[v] {
            match t.index[w] {
                None => {
                    visit(t, w);
                    t.low[v] = t.low[v].min(t.low[w]);
                }
                Some(iw) if t.on_stack[w] => t.low[v] = t.low[v].min(iw),
                Some(_) => {}
            }
        }
        if t.index[v] == Some(t.low[v]) {
            let mut c = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on_stack[w] = false;
                c.push(w);
                if w == v {
                    break;
                }
            }
            t.out.push(c);
        }
    }
    let n = adj.len();
    let mut t = Tarjan {
        adj,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if t.index[v].is_none() {
            visit(&mut t, v);
        }
    }
    t.out
}

/// The import cycles: strongly connected components of two or more modules over the edges
/// between modules neither of which is the other's ancestor; each sorted, and sorted.
fn cycles(edges: &Edges) -> Vec<Vec<Module>> {
    let kept: Vec<&(Module, Module)> = edges.keys().filter(|(a, b)| !nested(a, b)).collect();
    let nodes: Vec<&Module> = kept.iter().flat_map(|(a, b)| [a, b]).collect::<BTreeSet<_>>().into_iter().collect();
    let id = |m: &Module| nodes.binary_search(&m).unwrap();
    let mut adj = vec![Vec::new(); nodes.len()];
    for (a, b) in &kept {
        adj[id(a)].push(id(b));
    }
    let mut out: Vec<Vec<Module>> = sccs(&adj)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let mut c: Vec<Module> = c.into_iter().map(|v| nodes[v].clone()).collect();
            c.sort();
            c
        })
        .collect();
    out.sort();
    out
}

fn name(m: &[String]) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

/// A cycle and the imports that make it.
fn describe(cycle: &[Module], edges: &Edges) -> String {
    let mut s = format!("{{{}}}", cycle.iter().map(|m| name(m)).collect::<Vec<_>>().join(", "));
    for ((a, b), at) in edges {
        if cycle.contains(a) && cycle.contains(b) && !nested(a, b) {
            s += &format!("\n    {} -> {}:", name(a), name(b));
            for e in at {
                s += &format!("\n        {e}");
            }
        }
    }
    s
}

/// One crate's modules, read from its source root.
fn crate_sources(src: &Path) -> BTreeMap<Module, Source> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let root = repo_root();
    files
        .iter()
        .map(|f| {
            let file = f.strip_prefix(&root).unwrap_or(f).display().to_string();
            (module_path(src, f), Source { file, text: std::fs::read_to_string(f).unwrap() })
        })
        .collect()
}

#[test]
fn no_source_file_is_longer_than_the_limit() {
    let root = repo_root();
    let mut files = Vec::new();
    for dir in ["crates", "bench", "xtask", "tests"] {
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
fn no_modules_import_each_other_in_a_cycle() {
    let (mut found, mut edges_seen, mut to_roots, mut checked) = (Vec::new(), 0, 0, 0);
    for src in crate_roots() {
        let edges = import_graph(&crate_sources(&src));
        edges_seen += edges.len();
        to_roots += edges.keys().filter(|(_, b)| b.is_empty()).count();
        checked += edges.keys().filter(|(a, b)| !nested(a, b)).count();
        for c in cycles(&edges) {
            found.push(format!(
                "{}: {}",
                src.strip_prefix(repo_root()).unwrap_or(&src).display(),
                describe(&c, &edges)
            ));
        }
    }
    eprintln!("{edges_seen} imports between modules ({to_roots} of a crate root, {checked} between modules neither of which is the other's ancestor)");
    assert!(edges_seen > 100 && to_roots >= 5, "found only {edges_seen} imports between modules, {to_roots} of a root");
    assert!(found.is_empty(), "modules that import each other in a cycle:\n{}", found.join("\n"));
}

// --- The check itself: made-up crates ------------------------------------------------------------

/// A made-up crate: (module path as `a::b`, "" for the root; its source).
fn made_up(mods: &[(&str, &str)]) -> BTreeMap<Module, Source> {
    mods.iter()
        .map(|(m, text)| {
            let path: Module = m.split("::").filter(|s| !s.is_empty()).map(String::from).collect();
            (path, Source { file: format!("{m}.rs"), text: text.to_string() })
        })
        .collect()
}

fn m(s: &str) -> Module {
    s.split("::").filter(|s| !s.is_empty()).map(String::from).collect()
}

fn edge_set(edges: &Edges) -> BTreeSet<(String, String)> {
    edges.keys().map(|(a, b)| (name(a), name(b))).collect()
}

fn set(pairs: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

/// a → b → c → a, three sibling modules in a cycle no pair of which imports each other back:
/// found, exactly (and d, which only imports a, is not in it).
#[test]
fn a_three_cycle_is_found() {
    let src = made_up(&[
        ("", "mod a;\nmod b;\nmod c;\nmod d;\n"),
        ("a", "use crate::b::B;\npub struct A;\n"),
        ("b", "pub struct B(crate::c::C);\n"),
        ("c", "pub fn f() -> super::a::A { todo!() }\npub struct C;\n"),
        ("d", "use crate::a::A;\n"),
    ]);
    let edges = import_graph(&src);
    assert_eq!(edge_set(&edges), set(&[("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")]));
    assert_eq!(cycles(&edges), vec![vec![m("a"), m("b"), m("c")]]);
    let text = describe(&cycles(&edges)[0], &edges);
    assert!(text.contains("a.rs:1: use crate::b::B;") && text.contains("c -> a:"), "{text}");
    // Break one link: no cycle.
    let mut src = src;
    src.get_mut(&m("b")).unwrap().text = "pub struct B;\n".into();
    assert_eq!(cycles(&import_graph(&src)), Vec::<Vec<Module>>::new());
}

/// Grouped and nested-group imports (`crate::{…}`, `super::{…}`, `self`, `as`, globs) are
/// imports of every module they name; comments and strings name nothing.
#[test]
fn grouped_imports_are_seen() {
    let src = made_up(&[
        ("", "mod p;\nmod q;\nmod x;\n"),
        ("p", "mod r;\nmod s;\nmod t;\n"),
        (
            "p::r",
            "use super::{\n    s::{S1, S2 as Two},\n    t::{self, *},\n};\n// use crate::x::Hidden;\nconst S: &str = \"crate::x::Y\";\n",
        ),
        ("p::s", "use crate::{q::{Q, self as qq}, p::t::T};\n"),
        ("p::t", "pub struct T;\n"),
        ("q", "pub use crate::{p::{r::R}};\n"),
        ("x", ""),
    ]);
    let edges = import_graph(&src);
    assert_eq!(
        edge_set(&edges),
        set(&[("p::r", "p::s"), ("p::r", "p::t"), ("p::s", "q"), ("p::s", "p::t"), ("q", "p::r")])
    );
    // p::r → p::s → q → p::r, every link of it a grouped import.
    assert_eq!(cycles(&edges), vec![vec![m("p::r"), m("p::s"), m("q")]]);
    let mut leaves = Vec::new();
    let code = "use a::{b::{c, d as e}, f::*, self as g, h::self};";
    let toks = use_tokens(code, 3, code.len() - 1);
    parse_tree(&toks, &mut 0, &[], &mut leaves);
    let got: Vec<(String, Option<String>)> = leaves.into_iter().map(|l| (l.path.join("::"), l.name)).collect();
    let want = [("a::b::c", "c"), ("a::b::d", "e"), ("a::f", ""), ("a", "g"), ("a::h", "h")];
    let want: Vec<(String, Option<String>)> =
        want.iter().map(|(p, n)| (p.to_string(), (!n.is_empty()).then(|| n.to_string()))).collect();
    assert_eq!(got, want);
}

/// An import of the crate root is an edge to it; the root is an ancestor of every module, so
/// such an edge alone makes no cycle, but a name the root re-exports is an import of the module
/// it comes from too: a → (crate::B, that is b::B) → b → a is a cycle.
#[test]
fn crate_root_imports_are_edges() {
    let src = made_up(&[
        ("", "mod a;\nmod b;\npub use b::B;\npub struct Root;\n"),
        ("a", "use crate::{Root, B};\npub struct A;\n"),
        ("b", "pub struct B;\n"),
    ]);
    let edges = import_graph(&src);
    assert_eq!(edge_set(&edges), set(&[("a", "crate"), ("a", "b"), ("crate", "b")]));
    assert!(edges[&(m("a"), m("b"))].iter().any(|e| e.contains("`B` through `crate::`")), "{edges:?}");
    assert_eq!(cycles(&edges), Vec::<Vec<Module>>::new());
    let mut src = src;
    src.get_mut(&m("b")).unwrap().text = "pub struct B(crate::a::A);\n".into();
    let edges = import_graph(&src);
    assert_eq!(cycles(&edges), vec![vec![m("a"), m("b")]]);
    // The root and a module importing each other: parent and child, exempt.
    let src = made_up(&[("", "mod a;\npub use a::A;\npub struct Root;\n"), ("a", "pub struct A(crate::Root);\n")]);
    let edges = import_graph(&src);
    assert_eq!(edge_set(&edges), set(&[("a", "crate"), ("crate", "a")]));
    assert_eq!(cycles(&edges), Vec::<Vec<Module>>::new());
}

/// A module and its own submodules import each other freely (`use super::*`, a parent naming
/// its child, a grandchild naming its grandparent, an inline `mod tests` using `super::*`); a
/// cycle through siblings below one parent is still a cycle.
#[test]
fn ancestors_and_descendants_are_exempt() {
    let src = made_up(&[
        ("", "mod d;\n"),
        ("d", "mod x;\nmod y;\nuse x::X;\npub struct D;\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::d::y::Y;\n}\n"),
        ("d::x", "use super::*;\nmod deep;\npub struct X;\n"),
        ("d::x::deep", "use crate::d::D;\nuse super::super::y::Y;\n"),
        ("d::y", "use super::x::deep;\npub struct Y;\n"),
    ]);
    let edges = import_graph(&src);
    assert_eq!(
        edge_set(&edges),
        set(&[
            ("d", "d::x"),
            ("d", "d::y"),
            ("d::x", "d"),
            ("d::x::deep", "d"),
            ("d::x::deep", "d::y"),
            ("d::y", "d::x::deep")
        ])
    );
    assert_eq!(cycles(&edges), vec![vec![m("d::x::deep"), m("d::y")]]);
}

/// Comments, strings (raw ones too) and character literals are blanked, lengths and lines kept.
#[test]
fn code_of_blanks_comments_and_literals() {
    let text = "a /* crate::x /* nested */ */ b // crate::y\nc \"crate::z \\\" q\" r#\"crate::w\"# '\"' 'x' <'a> d";
    let code = code_of(text);
    assert_eq!(code.len(), text.len());
    assert_eq!(code.lines().count(), text.lines().count());
    assert!(!code.contains("crate::"), "{code}");
    let words: Vec<&str> = code.split_whitespace().collect();
    assert_eq!(words, ["a", "b", "c", "\"", "\"", "r#\"", "\"#", "'", "'", "'", "'", "<'a>", "d"]);
}
