//! The table: every grammar file of the collection, with its samples or the reason it fails.

use super::*;

pub(super) const NO_START: &str = "no `start` rule";
const LOOK_AROUND: &str = "look-around assertions";
const RELATIVE_IMPORT: &str = "relative imports (other grammar files) are not supported";

/// Every grammar file of the collection, sorted by path.
pub(super) const EXPECTED: &[Case] = &[
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
