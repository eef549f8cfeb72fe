//! The grammar collection (`../shared/data/grammars`): every `.lark` and `.gbnf` file either
//! loads, compiles and parses hand-written sample sentences, or fails with a clear diagnostic
//! that names the unsupported feature. `EXPECTED` lists which is which; a file whose status
//! changes in either direction, or a file missing from the table, fails the test.
//!
//! Run with `--nocapture` to see the table.
//!
//! Sample kinds per grammar (a sample `@path` is the file at `path` in the grammars folder):
//! * `valid`: sentences of the grammar's language that dwac must accept (commit all bytes, then
//!   `is_accepting`).
//! * `invalid`: sentences outside the language; dwac must reject them (commit error or not
//!   accepting).
//! * `munch`: sentences Lark accepts (Earley parser, its default `dynamic` lexer) that dwac
//!   rejects because its lexing is maximal munch over all terminals with inhibitors (ARCHITECTURE.md
//!   §2), whereas Lark's dynamic lexer lets the parser pick, at each position, among the
//!   terminals it expects (each matched greedily on its own). A real semantic difference,
//!   documented here, not a bug.
//! * `munch_looser`: sentences Lark rejects that dwac accepts, for the same reason (a lazy
//!   regex `.*?` is a set of lexemes to dwac, so longest match takes the longest one).
//! * `known_bugs`: sentences that should be accepted but are not because of an engine bug.
//!   Reported, not failed (none at the time of writing).
//!
//! Every sample's outcome is asserted, so a change in either direction fails the test and says
//! which table entry to move. The `.lark` samples (`valid`, `invalid`, `munch`, `munch_looser`)
//! were cross-checked against Python Lark 1.3.1 (`Lark(src, parser="earley", lexer="dynamic")`,
//! same start rule); the `.gbnf` ones were written from the grammar text.
//!
//! Lark files without a `start` rule are loaded with `LarkOptions { start: <first rule> }` (the
//! convention the collection's SOURCES.md uses for "loads in Lark": ab.lark,
//! leading_underscore_grammar.lark, three_rules_using_same_token.lark, templates.lark). The test
//! checks that plain `lark::parse` fails on them naming the missing `start` rule, that the
//! table's start rule is the file's first rule, and that files which have rules but no `start`
//! are not left without one. Files with no rule at all (terminal libraries) fail with "no
//! `start` rule".

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use dwac_compile::{compile_engine, CompileError};
use dwac_grammar::lark::LarkOptions;
use dwac_grammar::GrammarError;
use dwac_runtime::{Engine, Matcher};
use dwac_tests::{grammars_dir, synthetic_vocab};

mod expected;

use expected::{EXPECTED, NO_START};

#[derive(Clone, Copy, Debug)]
enum Status {
    /// Loads and compiles.
    Loads,
    /// Fails to load or compile with an error whose message contains this text.
    Fails(&'static str),
}

struct Case {
    file: &'static str,
    status: Status,
    /// The start rule of a Lark file that has no `start` rule: its first rule.
    start: Option<&'static str>,
    valid: &'static [&'static str],
    invalid: &'static [&'static str],
    /// (sentence Lark accepts, why dwac's maximal-munch lexing rejects it)
    munch: &'static [(&'static str, &'static str)],
    /// (sentence Lark rejects, why dwac's maximal-munch lexing accepts it)
    munch_looser: &'static [(&'static str, &'static str)],
    /// (sentence that should be accepted, the bug)
    known_bugs: &'static [(&'static str, &'static str)],
    /// Why this grammar has fewer than two valid samples (a one-sentence language, ...).
    few_valid: Option<&'static str>,
    /// The compiler's longest-match warnings, as (terminal, terminal that can never follow it).
    warns: &'static [(&'static str, &'static str)],
}

const fn loads(file: &'static str, valid: &'static [&'static str], invalid: &'static [&'static str]) -> Case {
    Case {
        file,
        status: Status::Loads,
        start: None,
        valid,
        invalid,
        munch: &[],
        munch_looser: &[],
        known_bugs: &[],
        few_valid: None,
        warns: &[],
    }
}

const fn fails(file: &'static str, reason: &'static str) -> Case {
    Case {
        file,
        status: Status::Fails(reason),
        start: None,
        valid: &[],
        invalid: &[],
        munch: &[],
        munch_looser: &[],
        known_bugs: &[],
        few_valid: None,
        warns: &[],
    }
}

/// Words a diagnostic without a location must contain to name what is unsupported.
const CLEAR_WORDS: &[&str] =
    &["not supported", "unsupported", "%declare", "import", "empty string", "look", "no `start` rule"];

/// A load failure: the first line of the message and the location (0 if none).
struct LoadError {
    line: usize,
    message: String,
}

impl From<GrammarError> for LoadError {
    fn from(e: GrammarError) -> LoadError {
        LoadError { line: e.line, message: e.message }
    }
}

impl From<CompileError> for LoadError {
    fn from(e: CompileError) -> LoadError {
        match e {
            CompileError::Grammar(g) | CompileError::EmptyLanguage(g) => g.into(),
            other => LoadError { line: 0, message: other.to_string() },
        }
    }
}

fn grammar_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            grammar_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "lark" || x == "gbnf") {
            out.push(p);
        }
    }
}

/// The name of the first rule of a Lark file (`?name`, `!name`, `name.2`, `name{...}` allowed).
fn first_lark_rule(src: &str) -> Option<&str> {
    src.lines().find_map(|line| {
        let rest = line.trim_start_matches(['?', '!']);
        let len = rest.find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))?;
        let (name, after) = rest.split_at(len);
        let first = name.chars().next()?;
        let after = after.trim_start();
        let ok = (first.is_ascii_lowercase() || first == '_')
            && (after.starts_with(':') || after.starts_with('.') || after.starts_with('{'));
        ok.then_some(name)
    })
}

/// A loaded grammar and the compiler's warnings about it.
fn load(rel: &str, src: &str, start: Option<&str>) -> Result<(Arc<Engine>, Vec<String>), LoadError> {
    let g = if rel.ends_with(".gbnf") {
        dwac_grammar::gbnf::parse(src)?
    } else {
        let opts = LarkOptions { start: start.map(str::to_string), ..Default::default() };
        dwac_grammar::lark::parse_with_options(src, &opts)?
    };
    let (engine, stats) = compile_engine(&g, synthetic_vocab(&[b"x"]))?;
    assert!(!stats.munch_analysis_skipped, "{rel}: the longest-match analysis ran out of budget");
    let warnings = stats.warnings.iter().map(|w| format!("{}:{}: {}", w.0.line, w.0.column, w.0.message)).collect();
    Ok((Arc::new(engine), warnings))
}

/// `Ok(())` if the matcher accepts `text` committed in pieces of `chunk` bytes, else why not.
fn run_chunked(engine: &Arc<Engine>, text: &[u8], chunk: usize) -> Result<(), String> {
    let mut m = Matcher::new(engine.clone());
    for (i, piece) in text.chunks(chunk).enumerate() {
        m.commit_bytes(piece).map_err(|e| {
            if chunk < text.len() {
                format!("commit error: {e:?} in the piece at byte {}", i * chunk)
            } else {
                format!("commit error: {e:?}")
            }
        })?;
    }
    if m.is_accepting() {
        Ok(())
    } else {
        Err(format!("all {} bytes committed, not accepting", text.len()))
    }
}

/// `Ok(())` if the matcher accepts `text`, else why not. The text is committed at once and
/// also byte by byte (streaming lexing across commit boundaries); the outcomes must agree.
fn run(engine: &Arc<Engine>, text: &[u8], inconsistent: &mut Vec<String>, label: &str) -> Result<(), String> {
    let whole = run_chunked(engine, text, text.len().max(1));
    let bytewise = run_chunked(engine, text, 1);
    if whole.is_ok() != bytewise.is_ok() {
        inconsistent.push(format!("{label}: at once {whole:?}, byte by byte {bytewise:?}"));
    }
    whole
}

/// A sample's label and bytes: the text itself, or the file `@path` of the grammars folder.
fn sample(root: &Path, s: &str) -> (String, Vec<u8>) {
    match s.strip_prefix('@') {
        Some(p) => (format!("file {p}"), std::fs::read(root.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"))),
        None => (format!("{s:?}"), s.as_bytes().to_vec()),
    }
}

/// Steps of the samples a grammar's DWA differential covers, about (see [`dwa_differential`]).
const DIFF_STEPS: usize = 3000;

/// The Parser DWA for the embedded GPT-2 vocabulary against the reference mask at every step of
/// the grammar's samples (valid ones to their end, the others until the grammar rejects them;
/// each at most its share of [`DIFF_STEPS`]).
fn dwa_differential(
    case: &Case,
    src: &str,
    root: &Path,
    tok: &dwac_vocab::Tokenizer,
    problems: &mut Vec<String>,
) -> String {
    let f = case.file;
    let g = if f.ends_with(".gbnf") {
        dwac_grammar::gbnf::parse(src).map_err(|e| e.to_string())
    } else {
        let opts = LarkOptions { start: case.start.map(str::to_string), ..Default::default() };
        dwac_grammar::lark::parse_with_options(src, &opts).map_err(|e| e.to_string())
    };
    let engine = match g.and_then(|g| compile_engine(&g, tok.vocab().clone()).map_err(|e| e.to_string())) {
        Ok((e, _)) => Arc::new(e),
        Err(e) => {
            problems.push(format!("{f}: no Parser DWA for gpt2: {e}"));
            return String::new();
        }
    };
    let mut traces = Vec::new();
    let samples = case.valid.iter().chain(case.invalid).chain(case.munch.iter().map(|m| &m.0));
    for s in samples.chain(case.munch_looser.iter().map(|m| &m.0)) {
        let (_, text) = sample(root, s);
        match std::str::from_utf8(&text).ok().map(|t| tok.encode(t)) {
            Some(Ok(ids)) => traces.push(ids),
            _ => problems.push(format!("{f}: sample {s:?} cannot be encoded with gpt2")),
        }
    }
    // Every sample, each up to its share of `DIFF_STEPS` tokens (at least 64): the reference
    // mask commits the whole vocabulary at each step, and one grammar of the collection has 45
    // samples of whole Lark files (14,680 steps, 94 s in full). Each sample is still committed
    // whole by `check_samples`.
    let cap = (DIFF_STEPS / traces.len().max(1)).max(64);
    for t in &mut traces {
        t.truncate(cap);
    }
    let r = dwac_tests::differential::differential(&engine, &traces, 2, &mut |_| {});
    eprintln!("{f}: {}", r.slow_path_summary());
    if r.mismatches > 0 || r.fallbacks > 0 || !r.errors.is_empty() {
        problems.push(format!(
            "{f}: DWA mask differs from the reference: {:?} ({} fallbacks, errors {:?})",
            r.examples, r.fallbacks, r.errors
        ));
    }
    format!(", DWA = reference on {} steps", r.steps_compared)
}

/// Check one loaded grammar's samples; returns the summary for the table.
fn check_samples(case: &Case, engine: &Arc<Engine>, root: &Path, problems: &mut Vec<String>) -> String {
    let f = case.file;
    if case.valid.len() < 2 && case.few_valid.is_none() {
        problems.push(format!("{f}: write at least 2 valid samples"));
    }
    if case.invalid.is_empty() {
        problems.push(format!("{f}: write at least 1 invalid sample"));
    }
    let mut inconsistent = Vec::new();
    let mut run = |text: &[u8], name: &str| run(engine, text, &mut inconsistent, &format!("{f}: {name}"));
    let mut valid_ok = 0;
    for s in case.valid {
        let (name, text) = sample(root, s);
        match run(&text, &name) {
            Ok(()) => valid_ok += 1,
            Err(why) => problems.push(format!("{f}: valid sample {name} rejected: {why}")),
        }
    }
    let mut invalid_ok = 0;
    for s in case.invalid {
        let (name, text) = sample(root, s);
        match run(&text, &name) {
            Ok(()) => problems.push(format!("{f}: invalid sample {name} accepted")),
            Err(_) => invalid_ok += 1,
        }
    }
    for (s, why) in case.munch {
        let (name, text) = sample(root, s);
        match run(&text, &name) {
            Ok(()) => problems.push(format!(
                "{f}: munch-difference sample {name} is now accepted: did lexing semantics change? \
                 (if intended, move it to `valid`)"
            )),
            Err(e) => println!("  munch: {f}: Lark accepts, dwac rejects {name} ({e}): {why}"),
        }
    }
    for (s, why) in case.munch_looser {
        let (name, text) = sample(root, s);
        match run(&text, &name) {
            Ok(()) => println!("  munch: {f}: Lark rejects, dwac accepts {name}: {why}"),
            Err(e) => problems.push(format!(
                "{f}: munch-looser sample {name} is now rejected ({e}): did lexing semantics change? \
                 (if intended, move it to `invalid`)"
            )),
        }
    }
    for (s, bug) in case.known_bugs {
        let (name, text) = sample(root, s);
        match run(&text, &name) {
            Ok(()) => problems.push(format!("{f}: known-bug sample {name} is now accepted: move it to `valid`")),
            Err(e) => println!("  KNOWN BUG: {f}: {name} rejected ({e}): {bug}"),
        }
    }
    for i in inconsistent {
        problems.push(format!("ENGINE BUG (commit at once vs byte by byte disagree): {i}"));
    }
    let mut summary =
        format!("valid {valid_ok}/{}, invalid rejected {invalid_ok}/{}", case.valid.len(), case.invalid.len());
    let munch = case.munch.len() + case.munch_looser.len();
    if munch > 0 {
        summary += &format!(", munch differences {munch}");
    }
    if !case.known_bugs.is_empty() {
        summary += &format!(", KNOWN BUGS {}", case.known_bugs.len());
    }
    summary
}

/// One case of the table, checked: its row, the problems found and the notes to print.
struct Checked {
    status: String,
    detail: String,
    problems: Vec<String>,
    notes: Vec<String>,
}

fn check_case(case: &Case, root: &Path, gpt2: &dwac_vocab::Tokenizer) -> Checked {
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    let f = case.file;
    let src = std::fs::read_to_string(root.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    if f.ends_with(".lark") {
        // A Lark file gets another start rule only if it has no `start` rule; then it is the
        // first rule, and a file without rules keeps the "no `start` rule" diagnostic.
        let no_start = matches!(dwac_grammar::lark::parse(&src), Err(e) if e.message.contains(NO_START));
        let first = first_lark_rule(&src);
        match case.start {
            Some(start) if !no_start => {
                problems.push(format!("{f}: has a `start` rule, drop the start override {start:?}"));
            }
            Some(start) if first != Some(start) => {
                problems.push(format!("{f}: start override {start:?} is not the first rule {first:?}"));
            }
            None if no_start && first.is_some() => {
                problems.push(format!("{f}: no `start` rule: set `start: {first:?}` (the first rule)"));
            }
            _ => {}
        }
    }
    let (status, detail) = match (load(f, &src, case.start), case.status) {
        (Ok((engine, warnings)), Status::Loads) => {
            for w in &warnings {
                notes.push(format!("  warning: {f}:{w}"));
            }
            let mut want: Vec<String> =
                case.warns.iter().map(|(t, u)| format!("`{t}` can never be directly followed by `{u}`")).collect();
            let mut got: Vec<String> = warnings
                .iter()
                .filter_map(|w| w.split(": ").nth(1).map(|m| m.split(" here").next().unwrap_or(m).to_string()))
                .collect();
            want.sort();
            got.sort();
            if got != want {
                problems.push(format!("{f}: longest-match warnings {got:?}, expected {want:?}"));
            }
            let mut summary = check_samples(case, &engine, root, &mut problems);
            summary += &dwa_differential(case, &src, root, gpt2, &mut problems);
            let status = match case.start {
                Some(s) => format!("loads (start {s})"),
                None => "loads".to_string(),
            };
            (status, summary)
        }
        (Ok(_), Status::Fails(reason)) => {
            problems.push(format!("{f}: expected to fail ({reason}) but loads: add samples and mark it Loads"));
            ("LOADS (expected failure)".to_string(), String::new())
        }
        (Err(e), status) => {
            let first = e.message.lines().next().unwrap_or("").to_string();
            let clear = e.line > 0 || CLEAR_WORDS.iter().any(|w| e.message.contains(w));
            if !clear {
                problems.push(format!("{f}: unclear diagnostic (no line:column, names no feature): {first}"));
            }
            match status {
                Status::Fails(reason) if e.message.contains(reason) => {}
                Status::Fails(reason) => {
                    problems.push(format!("{f}: fails, but not with {reason:?}: {first}"));
                }
                Status::Loads => problems.push(format!("{f}: expected to load, fails: {first}")),
            }
            let at = if e.line > 0 { format!("line {}: ", e.line) } else { String::new() };
            let status = match case.start {
                Some(s) => format!("fails (start {s})"),
                None => "fails".to_string(),
            };
            (status, format!("{at}{first}"))
        }
    };
    Checked { status, detail, problems, notes }
}

#[test]
fn every_grammar_loads_and_parses_samples_or_fails_clearly() {
    let t0 = Instant::now();
    let root = grammars_dir();
    let mut files = Vec::new();
    grammar_files(&root, &mut files);
    files.sort();
    let on_disk: Vec<String> =
        files.iter().map(|p| p.strip_prefix(&root).unwrap_or(p).to_string_lossy().replace('\\', "/")).collect();

    let mut problems = Vec::new();
    let listed: BTreeSet<&str> = EXPECTED.iter().map(|c| c.file).collect();
    if listed.len() != EXPECTED.len() {
        problems.push("EXPECTED lists a file twice".to_string());
    }
    for f in &on_disk {
        if !listed.contains(f.as_str()) {
            problems.push(format!(
                "{f}: new grammar file, not in EXPECTED: add it to tests/grammar_collection/expected.rs \
                 (Loads with samples, or Fails with the error it gives)"
            ));
        }
    }
    for f in &listed {
        if !on_disk.iter().any(|d| d == f) {
            problems.push(format!("{f}: listed in EXPECTED but not found under {}", root.display()));
        }
    }

    // The cases are independent: checked on every core, then reported in table order.
    let cases: Vec<&Case> = EXPECTED.iter().filter(|c| on_disk.iter().any(|d| d == c.file)).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done: std::sync::Mutex<Vec<Option<Checked>>> = std::sync::Mutex::new((0..cases.len()).map(|_| None).collect());
    let gpt2 = dwac_vocab::Tokenizer::default_embedded().unwrap();
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(cases.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(case) = cases.get(i) else { break };
                let t = Instant::now();
                let mut c = check_case(case, &root, &gpt2);
                c.detail = format!("{} [{:.1} s]", c.detail, t.elapsed().as_secs_f64());
                done.lock().unwrap()[i] = Some(c);
            });
        }
    });
    let mut table = Vec::new();
    let (mut n_loads, mut n_fails) = (0, 0);
    for (case, out) in cases.iter().zip(done.into_inner().unwrap()) {
        let Checked { status, detail, problems: found, notes } = out.expect("every case is checked");
        if status.starts_with("loads") {
            n_loads += 1;
        } else if status.starts_with("fails") {
            n_fails += 1;
        }
        for n in notes {
            println!("{n}");
        }
        problems.extend(found);
        table.push((case.file, status, detail));
    }

    let w = table.iter().map(|r| r.0.len()).max().unwrap_or(0);
    println!("\n{:w$}  {:21}  samples / error", "grammar", "status");
    for (f, status, detail) in &table {
        println!("{f:w$}  {status:21}  {detail}");
    }
    println!("{n_loads} load, {n_fails} fail, {} files, {:.2?}", table.len(), t0.elapsed());
    assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
}
