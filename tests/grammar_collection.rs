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
use dwac_tests::{shared_data, synthetic_vocab};

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

const NO_START: &str = "no `start` rule";
const LOOK_AROUND: &str = "look-around assertions";
const RELATIVE_IMPORT: &str = "relative imports (other grammar files) are not supported";

/// Every grammar file of the collection, sorted by path.
const EXPECTED: &[Case] = &[
    // --- Lark's own examples and tests -------------------------------------------------------
    fails("lark/examples/advanced/template_lark.lark", LOOK_AROUND),
    Case {
        valid: &[
            "# file lines author\ndata.json 12 Robin\ndata.csv  30 erezsh\ncompiler.py 123123 Megalng\n",
            "#name\tqty\tprice\napples\t3\t1.25\npears,12,-0.5\n",
        ],
        ..loads(
            "lark/examples/composition/csv.lark",
            &[],
            &[
                // no header line
                "data.json 12 Robin\n",
                // header only: `row+` needs a row
                "# file lines author\n",
                // a row must end with a newline
                "# a b\nx 1",
            ],
        )
    },
    Case {
        valid: &[
            // the JSON lines of lark/examples/composition/combined_csv_and_json.txt
            r#"{"header": ["this", "is", "json", 1111]}"#,
            r#"{"footer": "done"}"#,
            "[\n  {\"a\": -1.5e3},\n  [], {}, true, false, null]",
        ],
        ..loads(
            "lark/examples/composition/json.lark",
            &[],
            &[
                // this grammar needs whitespace after `:` (`pair: string ":" _WS value`)
                r#"{"a":1}"#,
                r#"{"a": 1,}"#,
                r#"["a" "b"]"#,
            ],
        )
    },
    fails("lark/examples/composition/storage.lark", RELATIVE_IMPORT),
    loads("lark/examples/relative-imports/multiple2.lark", &["0", "10", "1110", "0100"], &["", "1", "11", "0101", "2"]),
    loads(
        "lark/examples/relative-imports/multiple3.lark",
        // binary multiples of 3 (and concatenations of them)
        &["0", "11", "110", "1001", "1111", "10010"],
        &["", "1", "10", "100", "111", "1011"],
    ),
    fails("lark/examples/relative-imports/multiples.lark", RELATIVE_IMPORT),
    loads(
        "lark/examples/standalone/json.lark",
        &[
            "@llguidance/sample_parser/data/blog.sample.json",
            r#"{"name": "dwac", "tags": ["a", "b\"c"], "n": -1.5e3, "ok": true, "nil": null}"#,
            "[1, 2, {\"x\": []},\n  {}]",
            "\"just a string\"",
            " 42 ",
        ],
        &[r#"{"a" 1}"#, "[1, 2,]", "{'a': 1}", "[1, 2", "tru"],
    ),
    Case {
        few_valid: Some("its language is the single sentence `a`"),
        ..loads("lark/examples/tests/negative_priority.lark", &["a"], &["", "aa", "b"])
    },
    Case {
        few_valid: Some("its language is the single sentence `a`"),
        ..loads("lark/examples/tests/no_newline_at_end.lark", &["a"], &["", "a\n", "aa"])
    },
    fails("lark/lark/grammars/common.lark", LOOK_AROUND),
    fails("lark/lark/grammars/lark.lark", LOOK_AROUND),
    fails("lark/lark/grammars/python.lark", "%declare"),
    fails("lark/lark/grammars/unicode.lark", NO_START),
    Case {
        start: Some("startab"),
        ..loads(
            "lark/tests/grammars/ab.lark",
            &["ab", "aabb", "a a b\n b", "aaabbb"],
            &["", "aab", "abb", "ba", "abab"],
        )
    },
    Case {
        start: Some("_a"),
        few_valid: Some("start `_a` (the first rule): its language is the single sentence `A`"),
        ..loads("lark/tests/grammars/leading_underscore_grammar.lark", &["A"], &["", "Ax", "AA", "a"])
    },
    Case { start: Some("sep"), ..fails("lark/tests/grammars/templates.lark", "cannot be a template") },
    fails("lark/tests/grammars/test.lark", NO_START),
    fails("lark/tests/grammars/test_relative_import_of_nested_grammar.lark", RELATIVE_IMPORT),
    fails("lark/tests/grammars/test_relative_import_of_nested_grammar__grammar_to_import.lark", RELATIVE_IMPORT),
    fails("lark/tests/grammars/test_relative_import_of_nested_grammar__nested_grammar.lark", NO_START),
    fails("lark/tests/grammars/test_unicode.lark", NO_START),
    Case {
        start: Some("a"),
        few_valid: Some("start `a` (the first rule): its language is the single sentence `A`"),
        ..loads("lark/tests/grammars/three_rules_using_same_token.lark", &["A"], &["", "AA", "1"])
    },
    // --- ligurio/lark-grammars ---------------------------------------------------------------
    Case {
        munch: &[(
            "12-3",
            "`-3` is one SIGN_NUMBER under longest match (LEFT_OP `-` is shorter), so the input \
             lexes as SIGN_NUMBER SIGN_NUMBER; write `12--3`",
        )],
        ..loads(
            "ligurio-lark-grammars/lark_grammars/grammars/bc.lark",
            &["12+-3", "100*4", "12--3", "3&&1", "7||0", "-5^", "2+=", "scale = 20", "length = 5", "s(1)", "j(1,2)"],
            &["", "12+", "s(-1)", "sqrt(4)", "1 + 2", "scale=20"],
        )
    },
    Case {
        munch: &[
            (
                "1960-06-01T12:00:00Z",
                "the literal `\"60\"` (leap second) is a two-byte terminal, so `60` inside the year \
                 lexes as that one terminal instead of two digits",
            ),
            ("20190601T123045", "month `06` then day `01`: the `60` between them lexes as the literal `\"60\"`"),
        ],
        ..loads(
            "ligurio-lark-grammars/lark_grammars/grammars/iso-8601.lark",
            &[
                "2019-06-01T12:30:45Z",
                "20191231T235959",
                "2019-W05-3T08:00:00+01:00",
                "2019-123T00:00:00.5Z",
                "--12-24T23:59:59.999-05:30",
                "2016-12-31T23:59:60Z",
            ],
            &[
                "",
                "2019-06-01",
                "2019-13-01T00:00:00Z",
                "2019-06-01T25:00:00Z",
                "2019-06-01 12:30:45",
                "2019-06-01T12:30:45+01",
            ],
        )
    },
    Case {
        munch: &[
            (
                "local x=1 ",
                "STRING is `WORD [WS WORD+]` (an unquoted two-word string), so `local x` is one \
                 STRING lexeme, longer than the keyword `local`",
            ),
            ("return x ", "`return x` lexes as one STRING (see above)"),
        ],
        ..loads(
            "ligurio-lark-grammars/lark_grammars/grammars/lua.lark",
            &["x=1 ", "x=1 print(x) ", "t.a=f(1,2) y=t.a*2+1 ", "a, b=1,2 return 1 ", "f(g(x),y) "],
            &["", "x=1", "x = 1 ", "=1 ", "x=1 return 1"],
        )
    },
    // `.Dt PROGNAME SECTION`: two adjacent ALPHANUM+ terminals, always lexed as one under longest
    // match (Lark's default dynamic lexer fails the same way; only `lexer="dynamic_complete"`
    // accepts a sentence), so no text is in the language: an error naming the dead end.
    fails("ligurio-lark-grammars/lark_grammars/grammars/mdoc.lark", "no text is in this grammar's language"),
    loads(
        "ligurio-lark-grammars/lark_grammars/grammars/palindrome.lark",
        &["racecar", "level", "x", "1a1", "12x21", "abcdcba"],
        &["", "abba", "ab", "abc", "oxo", "aXa"],
    ),
    Case {
        munch: &[("a12", "INT (used by `{m,n}`) munches `12` where two LETTERs were meant")],
        ..loads(
            "ligurio-lark-grammars/lark_grammars/grammars/regex.lark",
            &["", "a(b|c)*d", "[a-z0-9]+x", "ab{2,5}", "[^[:digit:]]?", "\\wa", "(abc)+[[:alpha:]z]", "x{3,}y{,4}"],
            &["(ab", "*a", "a{,}", "abcdefghijklmnopqrstu", "[a-]", "a||"],
        )
    },
    Case {
        munch: &[(
            "Allow: http://httpbin.org/a-b/ ",
            "the literal `http` (protocol) is longer than the one-letter terminals, so the domain \
             `httpbin` starts with a `http` lexeme",
        )],
        ..loads(
            "ligurio-lark-grammars/lark_grammars/grammars/robotstxt.lark",
            &[
                "User-Agent: * ",
                "User-Agent: googlebot # crawler",
                "User-Agent: googlebot-news ",
                "Disallow: /private-data/ ",
                "disallow: * # everything",
                "Allow: https://example.com:8080/foo-bar/baz-qux/?a-b=c-d&e-f=g-h#top-x # ok",
            ],
            &["", "User-Agent: bingbot ", "Disallow: /private/ ", "Disallow: /a-b/", "Allow: ftp://example.com/a-b/ "],
        )
    },
    Case {
        munch: &[
            (
                "TAP version 13\n1..2\nok - looks ok\nok - second test",
                "the literal `ok` (status) is longer than the one-letter terminals, so the word `ok` \
                 in a description is a status lexeme",
            ),
            (
                "TAP version 13\n1..2\nok - test 12 passed\nok - second test",
                "NUMBER (plan) munches `12` where two DIGITs were meant",
            ),
        ],
        ..loads(
            "ligurio-lark-grammars/lark_grammars/grammars/tap13.lark",
            &[
                "TAP version 13\n1..2\nok - first test\nnot ok - second test",
                "TAP version 13\n1..3\nok - parse input\n# - some note here\nnot ok # TODO write the code\n",
                "TAP version 13\n1..10\nok # Skipped no network\n\nok - last one",
            ],
            &[
                "",
                "TAP version 13\n1..1\nok - only one",
                "TAP version 12\n1..2\nok - a b\nok - c d",
                "TAP version 13\n1..2\nok - single\nok - c d",
            ],
        )
    },
    // --- llama.cpp ---------------------------------------------------------------------------
    loads(
        "llama.cpp/arithmetic.gbnf",
        &["1 +2 = 3\n", "(x+1)*y = z\n2*3 = 6\n", "a_1 /( b -7 ) =\tc\n"],
        // `expr ::= term ([-+*/] term)*`: no whitespace after an operator
        &["", "1 + 2 = 3\n", "1 + = 2\n", "1 +2 = 3", "X = 1\n", "1 = 2 + 3\n"],
    ),
    loads(
        "llama.cpp/c.gbnf",
        &[
            "int main(){int x = 1;x = x+2;return x;}",
            "int square(int n){return n*n;}int main(){// entry point\nint s = 0;\
             for(int i = 0; i<10; i = i+1){s = s+square(i);}while(s>100){s = s-100;}\
             if(s==0){return 1;}else{/* odd * case */return s;}}",
            "float half(float v){print (v/2);return -v;}char c(){}",
        ],
        &["int main(){return 1}", "int main(){x = ;}", "main(){}", "int main(){int x = 1;", "int f(int a, int b){}"],
    ),
    loads(
        "llama.cpp/chess.gbnf",
        &[
            "1. e4 e5\n2. Nf3 Nc6\n3. Bb5 a6\n",
            "1. d4 d5\n2. c4 dxc4\n3. Qa4+ Bd7\n4. Qxc4 O-O-O\n12. e8=Q# Kb8\n",
            "1. Nbd2 R1e7\n2. O-O exd5\n",
            // Morphy vs Duke Karl / Count Isouard, Paris 1858 (the "Opera game"), up to 16... Nxb8
            "1. e4 e5\n2. Nf3 d6\n3. d4 Bg4\n4. dxe5 Bxf3\n5. Qxf3 dxe5\n6. Bc4 Nf6\n7. Qb3 Qe7\n\
             8. Nc3 c6\n9. Bg5 b5\n10. Nxb5 cxb5\n11. Bxb5+ Nbd7\n12. O-O-O Rd8\n13. Rxd7 Rxd7\n\
             14. Rd1 Qe6\n15. Bxd7+ Nxd7\n16. Qb8+ Nxb8\n",
        ],
        &["", "1. e4 e5\n", "1. e9 e5\n2. Nf3 Nc6\n", "1. Ze4 e5\n2. Nf3 Nc6\n", "1.e4 e5\n2. Nf3 Nc6\n"],
    ),
    loads(
        "llama.cpp/english.gbnf",
        &["The quick brown fox jumps over the lazy dog.", "Hello, world! It's 2024.\nNew line\there."],
        &["", "double  space", "trailing space ", "caf\u{e9}", " leading"],
    ),
    loads(
        "llama.cpp/japanese.gbnf",
        &["こんにちは、世界。", "私はカタカナを書きます", "日本語 テスト\nです"],
        &["", "Hello", "日本語  テスト", "\u{ff71}", "日本語 "],
    ),
    loads(
        "llama.cpp/json.gbnf",
        &[
            "@llguidance/sample_parser/data/blog.sample.json",
            r#"{"name": "dwac", "version": 1, "tags": ["grammar", "decoding"], "ratio": -0.25, "ok": true, "none": null}"#,
            "{\n  \"a\": {\n    \"b\": [1, 2.5e3]\n  },\n  \"c\": \"\\u00e9\\n\"\n}",
            "{}",
        ],
        &[
            "",
            r#"{"a": 01}"#,
            "[1, 2]",
            r#"{"a": 1,}"#,
            r#"{"a":  1}"#,
            r#"{"a": "\x"}"#,
            // a quirk of this grammar: exponent digits after the first are `[1-9]`
            r#"{"a": 1e10}"#,
        ],
    ),
    loads(
        "llama.cpp/json_arr.gbnf",
        &["[\n{\"a\": 1},\n{\"b\": [true, false]}]", "[\n]", "[\n \"x\",\n 2\n]"],
        &["", "[1, 2]", "[\n1,\n2]\n", "[\n1, 2]"],
    ),
    loads(
        "llama.cpp/list.gbnf",
        &["- milk\n- eggs\n- bread\n", "- caf\u{e9} au lait\n", "- 日本\n"],
        &["", "- \n", "- milk", "* milk\n", "- a\u{2028}b\n", "- a\u{85}b\n"],
    ),
    // --- llguidance --------------------------------------------------------------------------
    loads(
        "llguidance/sample_parser/data/from-llama.cpp/vllm-sql.gbnf",
        // the grammar has no whitespace anywhere
        &["SELECTcol_1fromtable_1wherecol_1=1", "SELECTcol_2fromtable_2wherecol_1=2"],
        &[
            "",
            "SELECT col_1 from table_1 where col_1 = 1",
            "SELECTcol_3fromtable_1wherecol_1=1",
            "SELECTcol_1fromtable_1",
        ],
    ),
    Case {
        // Lark's grammar of Lark (llguidance's copy): the collection's own `.lark` files are its
        // sample sentences. Its STRING (`"\"" /.*?/ "\"" "i"?`) and REGEXP (`/\/(...)+?\/[imslux]*/`)
        // are lazy, read leftmost-first as Python reads them, so a string ends at its first quote.
        ..loads(
            "llguidance/sample_parser/data/lark.lark",
            &[
                "start: \"a\"\n",
                "start: a b\na: \"x\" | /y+/i\n%import common.WS\n%ignore WS\n",
                "@lark/examples/composition/csv.lark",
                "@lark/examples/composition/json.lark",
                "@lark/examples/composition/storage.lark",
                "@lark/examples/relative-imports/multiple3.lark",
                "@lark/examples/relative-imports/multiples.lark",
                "@lark/examples/standalone/json.lark",
                "@lark/examples/tests/negative_priority.lark",
                "@lark/examples/tests/no_newline_at_end.lark",
                "@lark/lark/grammars/unicode.lark",
                "@lark/tests/grammars/ab.lark",
                "@lark/tests/grammars/leading_underscore_grammar.lark",
                "@lark/tests/grammars/templates.lark",
                "@lark/tests/grammars/test.lark",
                "@lark/tests/grammars/test_relative_import_of_nested_grammar.lark",
                "@lark/tests/grammars/test_relative_import_of_nested_grammar__grammar_to_import.lark",
                "@lark/tests/grammars/test_relative_import_of_nested_grammar__nested_grammar.lark",
                "@lark/tests/grammars/test_unicode.lark",
                "@lark/tests/grammars/three_rules_using_same_token.lark",
                "@ligurio-lark-grammars/lark_grammars/grammars/bc.lark",
                "@ligurio-lark-grammars/lark_grammars/grammars/iso-8601.lark",
                "@ligurio-lark-grammars/lark_grammars/grammars/palindrome.lark",
                "@ligurio-lark-grammars/lark_grammars/grammars/tap13.lark",
                "@outlines/pr587/csv.lark",
                "@outlines/pr587/lisp.lark",
                "@outlines/src/outlines/grammars/arithmetic.lark",
                "@outlines/src/outlines/grammars/json.lark",
                // lazy strings and regexps end at their first closing delimiter
                "start: \"a\" [\"b\"]\n",
                "@lark/examples/relative-imports/multiple2.lark",
                "@lark/examples/advanced/template_lark.lark",
                "@lark/lark/grammars/lark.lark",
                "@lark/lark/grammars/python.lark",
                "@ligurio-lark-grammars/lark_grammars/grammars/lua.lark",
                "@ligurio-lark-grammars/lark_grammars/grammars/regex.lark",
                "@ligurio-lark-grammars/lark_grammars/grammars/robotstxt.lark",
                "@outlines/src/outlines/grammars/common.lark",
            ],
            &[
                "start \"a\"\n",
                "start: (a\n",
                "%include x\n",
                // itself: its STRING has no escapes, and line 59 has `\"`; Lark rejects it too
                "@llguidance/sample_parser/data/lark.lark",
                // this dialect's STRING has no escapes: the string ends at `\"`, as in Lark
                "start: \"a\\\"b\"\n",
                "@lark/lark/grammars/common.lark",
                "@ligurio-lark-grammars/lark_grammars/grammars/mdoc.lark",
                "@llguidance/sample_parser/data/rfc.lark",
            ],
        )
    },
    fails("llguidance/sample_parser/data/rfc.lark", "matches the empty string"),
    // --- Outlines ----------------------------------------------------------------------------
    Case {
        valid: &[
            "# file lines author\ndata.json 12 Robin\ndata.csv  30 erezsh\ncompiler.py 123123 Megalng",
            "#name,qty\napples,3\npears,12.5\n",
        ],
        ..loads("outlines/pr587/csv.lark", &[], &["", "# a b\n", "apples,3\n"])
    },
    loads(
        "outlines/pr587/lisp.lark",
        &["(define (square x) (mul x x))", "(a . b)", "(car (cons a1 b2))", "atom"],
        &["", "(a  b)", "(A b)", "()", "1a", "(a b"],
    ),
    loads(
        "outlines/src/outlines/grammars/arithmetic.lark",
        &["1 + 2 * (3 - 4) / 5", "-(2.5 * 4)", "1e3-2", "10"],
        &["", "1 +", "(1 + 2", "1 2", "* 3"],
    ),
    fails("outlines/src/outlines/grammars/common.lark", NO_START),
    loads(
        "outlines/src/outlines/grammars/json.lark",
        &[
            "@llguidance/sample_parser/data/blog.sample.json",
            r#"{"key": [1, 2.5, -3e-2], "nested": {"t": true}}"#,
            "[\"x\", null]",
            "\"s\"",
        ],
        &["", "{\"a\": }", "[1,,2]", "nul"],
    ),
];

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
        let opts = LarkOptions { start: start.map(str::to_string) };
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

/// The Parser DWA for the embedded GPT-2 vocabulary against the reference mask at every step of
/// the grammar's samples (valid ones to their end, the others until the grammar rejects them).
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
        let opts = LarkOptions { start: case.start.map(str::to_string) };
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
    let r = dwac_tests::differential::differential(&engine, &traces, 2, &mut |_| {});
    if r.mismatches > 0 || r.fallbacks > 0 {
        problems
            .push(format!("{f}: DWA mask differs from the reference: {:?} ({} fallbacks)", r.examples, r.fallbacks));
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
    let root = shared_data().join("grammars");
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
                "{f}: new grammar file, not in EXPECTED: add it to tests/grammar_collection.rs \
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
