//! Lark and GBNF front-ends: snapshots of valid grammars and of diagnostics, terminal semantics,
//! and robustness (no panic on any prefix of any grammar).

use dwac_grammar::{gbnf, lark, Grammar, GrammarError, LarkOptions, Munch, Symbol};
use std::path::{Path, PathBuf};

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(rel)
}

fn parse_file(path: &Path) -> Result<Grammar, GrammarError> {
    let src = std::fs::read_to_string(path).expect("readable test grammar");
    if path.extension().and_then(|e| e.to_str()) == Some("gbnf") {
        gbnf::parse(&src)
    } else {
        lark::parse(&src)
    }
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("test data directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

fn lark_ok(src: &str) -> Grammar {
    lark::parse(src).unwrap_or_else(|e| panic!("{e}"))
}

fn lark_err(src: &str) -> GrammarError {
    match lark::parse(src) {
        Ok(g) => panic!("expected an error, got:\n{g}"),
        Err(e) => e,
    }
}

fn term<'g>(g: &'g Grammar, name: &str) -> &'g dwac_grammar::Terminal {
    g.terminals.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("no terminal {name} in\n{g}"))
}

/// A regex matching a whole lexeme.
fn whole(re: &str) -> regex::Regex {
    regex::Regex::new(&format!("^(?:{re})$")).expect("valid regex")
}

// --- snapshots -------------------------------------------------------------------------------

#[test]
fn snapshot_valid_grammars() {
    for path in files_in(&data("valid")) {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().replace('.', "_");
        let g = parse_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        insta::assert_snapshot!(format!("valid__{name}"), g.to_string());
    }
}

#[test]
fn snapshot_broken_grammars() {
    let files = files_in(&data("broken"));
    assert!(files.len() >= 15);
    for path in files {
        let src = std::fs::read_to_string(&path).expect("readable");
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().replace('.', "_");
        let e = match parse_file(&path) {
            Ok(g) => panic!("{} should fail, got:\n{g}", path.display()),
            Err(e) => e,
        };
        insta::with_settings!({ description => src, omit_expression => true }, {
            insta::assert_snapshot!(format!("broken__{name}"), e.to_string());
        });
    }
}

// --- Lark --------------------------------------------------------------------------------------

#[test]
fn lark_basic_lowering_is_left_recursive() {
    let g = lark_ok("start: a* b+ c?\na: \"a\"\nb: \"b\"\nc: \"c\"\n");
    let text = g.to_string();
    assert!(text.contains("start__star1 ::= ε\nstart__star1 ::= start__star1 a\n"), "{text}");
    assert!(text.contains("start__plus2 ::= b\nstart__plus2 ::= start__plus2 b\n"), "{text}");
    assert!(text.contains("start__opt3 ::= ε\nstart__opt3 ::= c\n"), "{text}");
    assert!(text.contains("start ::= start__star1 start__plus2 start__opt3\n"), "{text}");
    assert_eq!(g.nonterminals[g.start as usize].name, "start");
    // Spans point at the source.
    let star = g.nonterminals.iter().find(|n| n.name == "start__star1").expect("helper");
    let span = star.span.expect("helper span");
    assert_eq!(&"start: a* b+ c?"[span.start as usize..span.end as usize], "a*");
}

#[test]
fn lark_anonymous_terminals_are_deduplicated_and_reuse_named_ones() {
    let g = lark_ok("start: \"(\" x \")\" \"(\" COMMA \",\" /[0-9]+/ /[0-9]+/ /[0-9]+/i\nx: \"x\"\nCOMMA: \",\"\n");
    let names: Vec<&str> = g.terminals.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["\"(\"", "\")\"", "COMMA", "/[0-9]+/", "/[0-9]+/i", "\"x\""]);
    assert!(g.terminals.iter().all(|t| t.munch == Munch::Global && !t.ignored));
    assert_eq!(term(&g, "/[0-9]+/i").regex, "(?i:[0-9]+)");
    // Same pattern, different spelling: one terminal.
    let g = lark_ok("start: \"a\" /a/ \"*\"i \"*\"\n");
    assert_eq!(g.terminals.len(), 2, "{g}");
}

#[test]
fn lark_priorities_ignore_and_munch() {
    let g = lark_ok(
        "start: KW | NAME\nKW.3: \"if\"\nNAME.-1: /[a-z]+/\nr.2: \"x\"\n%ignore \" \"\n%ignore /\\t+/\n%munch own NAME\n%munch none \"x\"\n",
    );
    assert_eq!(term(&g, "KW").priority, 3);
    assert_eq!(term(&g, "NAME").priority, -1);
    assert_eq!(term(&g, "NAME").munch, Munch::Own);
    assert_eq!(term(&g, "\"x\"").munch, Munch::None);
    assert!(term(&g, "__IGNORE_0").ignored);
    assert_eq!(term(&g, "__IGNORE_1").regex, "\\t+");
}

#[test]
fn lark_case_insensitive_strings_and_flags() {
    let g = lark_ok("start: \"select\"i \"*\"i /a.b/s /a b # comment\n/x\n");
    assert_eq!(term(&g, "\"select\"i").regex, "(?i:select)");
    assert_eq!(term(&g, "\"*\"i").regex, "\\*");
    assert_eq!(term(&g, "/a.b/s").regex, "(?s:a.b)");
    let x = g.terminals.iter().find(|t| t.name.ends_with("/x")).expect("x-flag terminal");
    assert!(whole(&x.regex).is_match("ab"));
    assert!(whole(&term(&g, "\"select\"i").regex).is_match("SeLeCt"));
}

#[test]
fn lark_string_escapes_follow_lark() {
    let g = lark_ok(r#"start: "\"" "\\" "\n\t" "\x41\u00e9\U0001F600" "\d""#);
    let re: Vec<&str> = g.terminals.iter().map(|t| t.regex.as_str()).collect();
    assert_eq!(re, ["\"", "\\\\", "\\n\\t", "Aé😀", "\\\\d"]);
}

#[test]
fn lark_python_regex_isms_are_translated() {
    let g = lark_ok(r#"start: /a\/b/ /[[a]/ /x{/ /y{,2}z/ /\<\>/ /[&&]/"#);
    for (t, yes, no) in
        [(0, "a/b", "ab"), (1, "[", "]"), (2, "x{", "x"), (3, "yyz", "yyyz"), (4, "<>", "x"), (5, "&", "&&")]
    {
        let re = whole(&g.terminals[t].regex);
        assert!(re.is_match(yes), "{} should match {yes:?}", g.terminals[t].regex);
        assert!(!re.is_match(no), "{} should not match {no:?}", g.terminals[t].regex);
    }
}

#[test]
fn lark_terminal_composition() {
    let g = lark_ok(
        "start: NUMBER WORD\nNUMBER: INT (\".\" INT)? | \".\" INT\nINT: (\"0\"..\"9\")+\nWORD: (\"a\"..\"z\" | \"_\") ~ 2..3 \"!\"?\n",
    );
    let num = whole(&term(&g, "NUMBER").regex);
    for ok in ["1", "12.5", ".5"] {
        assert!(num.is_match(ok), "{ok}");
    }
    for bad in ["1.", "", "a"] {
        assert!(!num.is_match(bad), "{bad}");
    }
    let word = whole(&term(&g, "WORD").regex);
    assert!(word.is_match("ab") && word.is_match("a_c!") && !word.is_match("a") && !word.is_match("abcd"));
    // INT is only a fragment: not a terminal of the grammar.
    assert!(g.terminals.iter().all(|t| t.name != "INT"));
}

#[test]
fn lark_common_terminals_have_exact_languages() {
    let g = lark_ok(
        "start: ESCAPED_STRING SIGNED_NUMBER COMMENT CNAME NEWLINE WS\n\
         %import common (ESCAPED_STRING, SIGNED_NUMBER, CNAME, NEWLINE, WS)\n\
         %import common.C_COMMENT -> COMMENT\n",
    );
    let s = whole(&term(&g, "ESCAPED_STRING").regex);
    for ok in [r#""""#, r#""a\"b""#, r#""a\\""#, r#""é\q""#] {
        assert!(s.is_match(ok), "ESCAPED_STRING should match {ok}");
    }
    for bad in [r#""a" "b""#, r#""a\""#, "\"a\nb\"", r#""a"b""#] {
        assert!(!s.is_match(bad), "ESCAPED_STRING should reject {bad}");
    }
    let c = whole(&term(&g, "COMMENT").regex);
    for ok in ["/**/", "/* a * b */", "/***/", "/* x\n y **/"] {
        assert!(c.is_match(ok), "C_COMMENT should match {ok}");
    }
    for bad in ["/* a */ b */", "/*/", "/* a"] {
        assert!(!c.is_match(bad), "C_COMMENT should reject {bad}");
    }
    let n = whole(&term(&g, "SIGNED_NUMBER").regex);
    for ok in ["1", "-1.5", "+.5e-3", "2.", "1E10"] {
        assert!(n.is_match(ok), "SIGNED_NUMBER should match {ok}");
    }
    for bad in ["1e", "-", ".", "1.2.3"] {
        assert!(!n.is_match(bad), "SIGNED_NUMBER should reject {bad}");
    }
    let cname = whole(&term(&g, "CNAME").regex);
    assert!(cname.is_match("_a1") && !cname.is_match("1a"));
    assert!(whole(&term(&g, "NEWLINE").regex).is_match("\r\n\n"));
}

#[test]
fn lark_imports_resolve_in_common_namespace() {
    // A local INT must not change what common's NUMBER means.
    let g = lark_ok("start: NUMBER INT\nINT: \"x\"\n%import common.NUMBER\n");
    assert!(whole(&term(&g, "NUMBER").regex).is_match("12.5"));
    assert_eq!(term(&g, "INT").regex, "x");
}

#[test]
fn lark_templates_instantiate_once_per_argument_list() {
    let g = lark_ok(
        "start: sep{item, \",\"} sep{item, \",\"} sep{ID, \";\"}\nsep{x, d}: x (d x)*\nitem: \"i\"\nID: /[a-z]+/\n",
    );
    let inst: Vec<&str> =
        g.nonterminals.iter().map(|n| n.name.as_str()).filter(|n| n.starts_with("sep{") && !n.contains("__")).collect();
    assert_eq!(inst, ["sep{item,\",\"}", "sep{ID,\";\"}"]);
    let e = lark_err("start: sep\nsep{x}: x\n");
    assert!(e.message.contains("template `sep` used without arguments"), "{e}");
}

#[test]
fn lark_override_and_extend() {
    let g = lark_ok(
        "start: a\na: \"x\"\n%override a: \"y\"\n%extend a: \"z\"\nT: \"t\"\n%extend T: \"u\"\n%extend start: T\n",
    );
    let text = g.to_string();
    assert!(text.contains("a ::= \"y\"\na ::= \"z\"\n"), "{text}");
    assert!(!text.contains("\"x\""), "{text}");
    assert!(whole(&term(&g, "T").regex).is_match("u"));
    let g = lark_ok("start: NUMBER\n%import common.NUMBER\n%extend NUMBER: \"inf\"\n");
    let n = whole(&term(&g, "NUMBER").regex);
    assert!(n.is_match("inf") && n.is_match("1.5"));
}

#[test]
fn lark_bounded_repetition_and_empty_literals() {
    let g = lark_ok("start: \"a\" ~ 2 (\"b\" | \"\") ~ 1..3 \"\"\n");
    let text = g.to_string();
    assert!(
        text.contains("start ::= \"a\" \"a\" start__rep1\n") || text.contains("start ::= \"a\" \"a\" start__rep3\n"),
        "{text}"
    );
    // (ε | "b") ~ 1..3 is "b" ~ 0..3: no empty alternative is repeated.
    assert!(!text.contains("::= start__rep1 \n"), "{text}");
    assert_eq!(g.terminals.len(), 2);
}

#[test]
fn lark_start_option_and_missing_start() {
    let src = "expr: \"1\" | expr \"+\" \"1\"\n";
    let e = lark_err(src);
    assert_eq!(e.line, 0);
    assert!(e.message.contains("no `start` rule"));
    let g = lark::parse_with_options(src, &LarkOptions { start: Some("expr".into()), ..Default::default() })
        .expect("loads");
    assert_eq!(g.nonterminals[g.start as usize].name, "expr");
}

#[test]
fn lark_multiline_alternatives_and_comments() {
    let g = lark_ok(
        "start: a\n  // a comment between alternatives\n  | b # another\n\n| c\na: \"a\"\nb: \"b\"\nc: \"c\" \\\n  \"d\"\n",
    );
    let starts = g.rules.iter().filter(|r| r.lhs == g.start).count();
    assert_eq!(starts, 3);
    assert!(g.to_string().contains("c ::= \"c\" \"d\"\n"));
}

#[test]
fn lark_error_locations() {
    let e = lark_err("start: \"a\"\n  | \"b\" /a(b/\n");
    assert_eq!((e.line, e.column), (2, 11));
    let e = lark_err("start: \"é\" undefined_rule\n");
    assert_eq!((e.line, e.column), (1, 12));
    assert!(e.message.contains("undefined rule `undefined_rule`"));
}

// --- GBNF --------------------------------------------------------------------------------------

#[test]
fn gbnf_terminals_are_character_level_and_deduplicated() {
    let g = gbnf::parse("root ::= \"a\" [a] \"\\x61\" [b-c] . [^\\n]\n").expect("loads");
    let names: Vec<&str> = g.terminals.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["\"a\"", "[b-c]", ".", "[^\\n]"]);
    assert!(g.terminals.iter().all(|t| t.munch == Munch::None));
    assert_eq!(g.rules.len(), 1);
    assert_eq!(
        g.rules[0].rhs,
        vec![Symbol::T(0), Symbol::T(0), Symbol::T(0), Symbol::T(1), Symbol::T(2), Symbol::T(3)]
    );
    assert!(whole(&term(&g, ".").regex).is_match("\n"));
    assert!(!whole(&term(&g, "[^\\n]").regex).is_match("\n"));
}

#[test]
fn gbnf_rules_span_lines_until_the_next_definition() {
    let g = gbnf::parse("root ::= a\n  b # comment\n  | c\na ::= \"a\"\nb ::=\n  \"b\"\nc ::= \"c\"").expect("loads");
    let text = g.to_string();
    assert!(text.contains("root ::= a b\nroot ::= c\n"), "{text}");
    assert!(text.contains("b ::= \"b\"\n"), "{text}");
}

#[test]
fn gbnf_counted_repetitions() {
    let g = gbnf::parse("root ::= \"a\"{2} \"b\"{1,} \"c\"{0,2} \"d\"{ 1 , 2 }\n").expect("loads");
    let text = g.to_string();
    assert!(text.contains("root ::= \"a\" \"a\" root__plus1 root__rep3 \"d\" root__rep4\n"), "{text}");
    assert!(text.contains("root__rep3 ::= root__rep2 \"c\"\n"), "{text}");
}

/// Where llama.cpp's parser accepts a grammar and gives it a meaning of its own, so does dwac,
/// with a warning at the place.
#[test]
fn gbnf_means_what_llama_cpp_makes_of_it() {
    // A rule defined twice: the last definition wins.
    let (g, w) = gbnf::parse_with_warnings("root ::= a\na ::= \"x\"\na ::= \"y\"\n").expect("loads");
    assert!(g.to_string().contains("a ::= \"y\"") && !g.to_string().contains("\"x\""), "{g}");
    assert_eq!((w.len(), w[0].0.line), (1, 2), "{w:?}");
    assert!(w[0].0.message.contains("defined again at line 3"), "{w:?}");
    // `[]` and `[^]` match the empty string.
    let (g, w) = gbnf::parse_with_warnings("root ::= \"a\" [] [^] \"b\"\n").expect("loads");
    assert!(g.to_string().contains("root ::= \"a\" \"b\""), "{g}");
    assert_eq!(w.len(), 2, "{w:?}");
    // A maximum over 2,000 is no maximum; up to 2,000 it is kept, and `{m}` is exact.
    let (g, w) =
        gbnf::parse_with_warnings("root ::= [a-z]{0,5000} \"-\" [0-9]{2500} \"-\" [x]{1,2000}\n").expect("loads");
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].0.message.contains("`{0,}`") && w[0].0.column == 15, "{w:?}");
    let text = g.to_string();
    assert!(text.contains("__star"), "{{0,5000}} is a star: {text}");
    // A raw newline inside a literal is a character; a lone `\r` ends a comment.
    let g = gbnf::parse("root ::= \"a\nb\" # comment\r  \"c\"\n").expect("loads");
    assert!(g.terminals.iter().any(|t| t.regex == "a\\nb"), "{g}");
    assert!(g.to_string().contains("\"c\""), "{g}");
}

#[test]
fn gbnf_error_locations() {
    let e = gbnf::parse("root ::= item\nitem ::= \"a\" | missing-rule\n").unwrap_err();
    assert_eq!((e.line, e.column), (2, 16));
    assert!(e.message.contains("undefined rule `missing-rule`"));
    let e = gbnf::parse("root ::= \"a\"\n").map(|_| ()).and_then(|_| gbnf::parse("x ::= \"a\""));
    assert!(e.unwrap_err().message.contains("no `root` rule"));
}

// --- robustness ----------------------------------------------------------------------------------

fn all_test_grammars() -> Vec<PathBuf> {
    let mut v = files_in(&data("broken"));
    v.extend(files_in(&data("valid")));
    v.push(dwac_testdata::repo_root().join("grammars/json.lark"));
    v.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lark/lark_common.lark"));
    // The shared grammar collection: missing, it fails the test (dwac-testdata's policy).
    let ours = v.len();
    let mut stack = vec![dwac_testdata::grammars_dir()];
    while let Some(d) = stack.pop() {
        let rd = std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if matches!(p.extension().and_then(|e| e.to_str()), Some("lark" | "gbnf")) {
                v.push(p);
            }
        }
    }
    assert!(v.len() >= ours + 40, "only {} grammar files in the shared collection", v.len() - ours);
    v
}

#[test]
fn no_panic_on_truncated_grammars() {
    for path in all_test_grammars() {
        let Ok(src) = std::fs::read_to_string(&path) else {
            continue;
        };
        // Every prefix of small files; for big ones about 400 cut points.
        let step = (src.len() / 400).max(1);
        let mut cut = 0;
        while cut <= src.len() {
            if src.is_char_boundary(cut) {
                let prefix = &src[..cut];
                for r in [lark::parse(prefix), gbnf::parse(prefix)] {
                    if let Err(e) = r {
                        let _ = e.to_string();
                    }
                }
            }
            cut += step;
        }
        // And the whole file with its last line cut at every character.
        let last = src.trim_end().rfind('\n').map_or(0, |i| i + 1);
        for (i, _) in src[last..].char_indices() {
            let _ = lark::parse(&src[..last + i]);
            let _ = gbnf::parse(&src[..last + i]);
        }
    }
}

/// llama.cpp's JSON-Schema converter nests a group per character of a `maxLength`: 2,000 levels
/// parse (on a thread with the default 2 MiB stack), 5,000 are refused (`no_panic_on_odd_inputs`).
#[test]
fn gbnf_deep_nesting_of_the_converter_parses() {
    let nested = format!("root ::= {}{}\n", "([0-9] ".repeat(2000), ")?".repeat(2000));
    let g = std::thread::spawn(move || gbnf::parse(&nested).map(|g| g.rules.len())).join().expect("no overflow");
    assert!(g.expect("parses") >= 2000);
}

#[test]
fn no_panic_on_odd_inputs() {
    let deep = format!("start: {}\"a\"{}\n", "(".repeat(5000), ")".repeat(5000));
    let deep_gbnf = format!("root ::= {}\"a\"{}\n", "(".repeat(5000), ")".repeat(5000));
    let chain: String =
        (0..3000).map(|i| format!("T{i}: T{}\n", i + 1)).collect::<String>() + "T3000: \"a\"\nstart: T0\n";
    let inputs = [
        "",
        "\n\n",
        "%",
        "%import",
        "%import common.",
        "start: \"\\",
        "start: /\\",
        "start: \"a\".. ",
        "start: x{",
        "start: \"a\" ~",
        "start: \"a\" ~ 99999999999",
        "start: \"a\" ~ 5000",
        "A.99999999999: \"a\"",
        "start: é",
        "root ::= \"\\U0011FFFF\"",
        "root ::= [\\",
        "root ::= \"a\"{99999999999}",
        "root ::= \"a\"{,",
        "root ::= é",
        "::=",
        "start: A\nA: /[^\\x00-\\x{10FFFF}]/\n",
        "start: T{x}\n",
        "start: t{\"a\"}\nt{x}: x | t{t{x}}\n",
    ];
    for s in inputs.iter().copied().chain([deep.as_str(), deep_gbnf.as_str(), chain.as_str()]) {
        let _ = lark::parse(s).map_err(|e| e.to_string());
        let _ = gbnf::parse(s).map_err(|e| e.to_string());
    }
}
