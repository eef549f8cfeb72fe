//! Added tokens on small hand-made tokenizers (`tests/data/added_tokens`, see its README.md).
//!
//! A non-special added token's bytes are what the tokenizer's own decoder renders for it (the
//! Gemma-style `▁▁▁▁` is four spaces, the byte-level `ĠĠ` two), a special one has no bytes, and
//! encoding spells whitespace runs exactly or refuses the text, naming the character it cannot
//! spell. `expected.json` holds every id's bytes and special flag, cross-checked against the
//! Python `tokenizers` decoder by `check.py`.

use std::path::{Path, PathBuf};

use dwac_vocab::Tokenizer;
use serde_json::Value;

/// SentencePiece-style BPE with byte fallback; `▁▁`, `▁▁▁▁` (and `▁` × 8) are added tokens.
const SP_METASPACE_RUNS: &str = "sp_metaspace_runs.json";
/// Byte-level BPE with added whitespace runs: `ĠĠ`, raw `"    "`, `"\n\n"`, `"\t\t"`.
const BYTELEVEL_WS_RUNS: &str = "bytelevel_ws_runs.json";
/// Byte-level BPE whose added tokens `ĠĠĠ`, `<tag>` and `<|endoftext|>` sit at ids 5, 6 and 7.
const ADDED_MID_RANGE: &str = "added_mid_range.json";
/// SentencePiece-style BPE without byte fallback and without `{`.
const NO_BRACE: &str = "no_brace.json";

const ALL_FIXTURES: [&str; 4] = [SP_METASPACE_RUNS, BYTELEVEL_WS_RUNS, ADDED_MID_RANGE, NO_BRACE];
const ROUND_TRIP_FIXTURES: [&str; 3] = [SP_METASPACE_RUNS, BYTELEVEL_WS_RUNS, ADDED_MID_RANGE];

/// Whitespace runs, tabs, newlines, leading/trailing spaces and non-ASCII text (check.py has the
/// same list).
const ROUND_TRIP_TEXTS: [&str; 42] = [
    " ",
    "  ",
    "   ",
    "    ",
    "     ",
    "      ",
    "       ",
    "        ",
    "         ",
    "a b",
    "a  b",
    "a   b",
    "a    b",
    "a     b",
    "a        b",
    "a         b",
    "\t",
    "\t\t",
    "\t\t\t",
    "\n",
    "\n\n",
    "\n\n\n",
    "\t \n",
    " \t\n \t\n",
    "\n \t \n\t\t  ",
    "mixed \t \n \t\t\n\n    end",
    " leading",
    "   leading three",
    "trailing ",
    "trailing    ",
    "  both  ",
    "hello world",
    "hello    world",
    "tab\tthen\t\tmore",
    "line\nbreak\n\n para",
    "café",
    "naïve résumé",
    "日本",
    "日本語  テキスト",
    "emoji 🦀 🎉",
    "👍🏽  two spaces",
    "\u{a0}nbsp\u{3000}ideographic space",
];

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/added_tokens")
}

fn load(fixture: &str) -> Tokenizer {
    let path = fixture_dir().join(fixture);
    Tokenizer::from_file(&path).unwrap_or_else(|e| panic!("loading {}: {e}", path.display()))
}

/// One id of `expected.json`.
struct Expected {
    token: String,
    bytes: Vec<u8>,
    special: bool,
}

/// The expected tokens of `fixture`, indexed by id.
fn expected(fixture: &str) -> Vec<Expected> {
    let path = fixture_dir().join("expected.json");
    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let root: Value = serde_json::from_slice(&text).expect("expected.json is JSON");
    let tokens = root[fixture].as_array().unwrap_or_else(|| panic!("expected.json has no {fixture}"));
    tokens
        .iter()
        .enumerate()
        .map(|(i, t)| {
            assert_eq!(t["id"].as_u64(), Some(i as u64), "{fixture}: expected.json ids are 0, 1, 2, ...");
            let bytes = t["bytes"].as_array().expect("bytes is a list");
            Expected {
                token: t["token"].as_str().expect("token is a string").to_string(),
                bytes: bytes.iter().map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()).expect("a byte")).collect(),
                special: t["special"].as_bool().expect("special is a bool"),
            }
        })
        .collect()
}

/// Id of the token spelled `token` in the file.
fn id_of(expected: &[Expected], token: &str) -> u32 {
    let id = expected.iter().position(|e| e.token == token).unwrap_or_else(|| panic!("no token {token:?}"));
    id as u32
}

fn bytes(tok: &Tokenizer, id: u32) -> &[u8] {
    tok.vocab().token_bytes(id).unwrap_or_else(|| panic!("id {id} out of range"))
}

/// Concatenated bytes of `ids`.
fn spell(tok: &Tokenizer, ids: &[u32]) -> Vec<u8> {
    ids.iter().flat_map(|&id| bytes(tok, id).to_vec()).collect()
}

#[test]
fn every_id_has_the_expected_bytes_and_special_flag() {
    for fixture in ALL_FIXTURES {
        let tok = load(fixture);
        let vocab = tok.vocab();
        let expected = expected(fixture);
        assert_eq!(vocab.len(), expected.len(), "{fixture}: vocabulary size");
        let mut wrong = Vec::new();
        for (id, e) in (0u32..).zip(&expected) {
            let got = bytes(&tok, id);
            if got != e.bytes || vocab.is_special(id) != e.special {
                wrong.push(format!(
                    "id {id} {:?}: got \"{}\" special {}, expected \"{}\" special {}",
                    e.token,
                    got.escape_ascii(),
                    vocab.is_special(id),
                    e.bytes.escape_ascii(),
                    e.special
                ));
            }
        }
        assert!(wrong.is_empty(), "{fixture}: {} wrong ids:\n{}", wrong.len(), wrong.join("\n"));
    }
}

#[test]
fn whitespace_runs_and_non_ascii_round_trip() {
    let mut checked = 0;
    for fixture in ROUND_TRIP_FIXTURES {
        let tok = load(fixture);
        for text in ROUND_TRIP_TEXTS {
            let ids = tok.encode(text).unwrap_or_else(|e| panic!("{fixture}: encoding {text:?}: {e}"));
            let got = spell(&tok, &ids);
            assert_eq!(got, text.as_bytes(), "{fixture}: {text:?} → {ids:?} spells \"{}\"", got.escape_ascii());
            checked += 1;
        }
    }
    assert_eq!(checked, 126);
}

#[test]
fn four_spaces_use_the_metaspace_run_token() {
    let tok = load(SP_METASPACE_RUNS);
    let expected = expected(SP_METASPACE_RUNS);
    let [a, b] = ["a", "b"].map(|t| id_of(&expected, t));
    let run2 = id_of(&expected, "▁▁");
    let run4 = id_of(&expected, "▁▁▁▁");
    let run8 = id_of(&expected, "▁▁▁▁▁▁▁▁");
    assert_eq!(bytes(&tok, run2), b"  ");
    assert_eq!(bytes(&tok, run4), b"    ");
    assert_eq!(bytes(&tok, run8), b"        ");
    assert_eq!(run8 as usize, tok.vocab().len() - 1, "the added token outside model.vocab is the last id");

    // The model's merges produce `▁▁▁▁` (the same id as the added token); the added `▁` × 8 is
    // outside model.vocab, so only a literal `▁▁▁▁▁▁▁▁` in the text could match it.
    let ids = tok.encode("a    b").expect("encode");
    assert_eq!(ids, [a, run4, b]);
    assert_eq!(spell(&tok, &ids), b"a    b");
    let ids = tok.encode("a        b").expect("encode");
    assert_eq!(ids, [a, run4, run4, b]);
}

#[test]
fn raw_space_added_token_is_used_in_byte_level() {
    let tok = load(BYTELEVEL_WS_RUNS);
    let expected = expected(BYTELEVEL_WS_RUNS);
    let [a, b, spaces, newlines] = ["a", "b", "    ", "\n\n"].map(|t| id_of(&expected, t));
    assert_eq!(bytes(&tok, spaces), b"    ");
    assert_eq!(bytes(&tok, id_of(&expected, "ĠĠ")), b"  ");
    assert_eq!(tok.encode("a    b").expect("encode"), [a, spaces, b]);
    assert_eq!(tok.encode("a\n\nb").expect("encode"), [a, newlines, b]);
}

#[test]
fn special_added_tokens_have_no_bytes() {
    for (fixture, special) in [
        (SP_METASPACE_RUNS, ["<unk>", "<s>", "</s>"].as_slice()),
        (BYTELEVEL_WS_RUNS, ["<|endoftext|>"].as_slice()),
        (ADDED_MID_RANGE, ["<|endoftext|>"].as_slice()),
        (NO_BRACE, ["<unk>", "<s>", "</s>"].as_slice()),
    ] {
        let tok = load(fixture);
        let expected = expected(fixture);
        for token in special {
            let id = id_of(&expected, token);
            assert!(tok.vocab().is_special(id), "{fixture}: {token} is special");
            assert_eq!(bytes(&tok, id), b"", "{fixture}: {token} has no bytes");
        }
    }
}

/// Token spellings written literally in the text (`▁▁`, `ĠĠ`, `<tag>`) are text like any other: the
/// encoding spells them exactly, never as the whitespace the same-looking added token stands for
/// (the encoder does not match an added token on text other than its bytes).
#[test]
fn literal_token_spellings_are_spelled_exactly() {
    const TEXTS: [&str; 6] = ["x▁▁y", "▁▁▁▁▁▁▁▁", "ĠĠ", "xĠĠĠy", "a<tag>b", "<0x0A>"];
    for fixture in ROUND_TRIP_FIXTURES {
        let tok = load(fixture);
        for text in TEXTS {
            let ids = tok.encode(text).unwrap_or_else(|e| panic!("{fixture}: encoding {text:?}: {e}"));
            assert_eq!(spell(&tok, &ids), text.as_bytes(), "{fixture}: {text:?} → {ids:?}");
        }
    }
}

#[test]
fn a_character_without_a_token_is_refused_with_its_offset() {
    let tok = load(NO_BRACE);
    let ids = tok.encode("abc}").expect("'}' has a token");
    assert_eq!(spell(&tok, &ids), b"abc}");

    // The tokenizer spells '{' as <unk>.
    let err = tok.encode("abc{").expect_err("'{' has no token").to_string();
    assert!(err.contains("'{'"), "the message names the character: {err}");
    assert!(err.contains("byte 3"), "the message gives its byte offset: {err}");
}

/// A decoder rule whose effect on tokens we do not reproduce (here a `Replace` of `a` by `b`)
/// would give some tokens other bytes than the decoder renders: the tokenizer is refused, and
/// the message names the component and a token it changes.
#[test]
fn unsupported_decoder_rule_is_refused_naming_a_token() {
    let path = fixture_dir().join(BYTELEVEL_WS_RUNS);
    let mut root: Value = serde_json::from_slice(&std::fs::read(&path).expect("fixture")).expect("JSON");
    root["decoder"] = serde_json::json!({"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "a"}, "content": "b"},
        {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}
    ]});
    let json = serde_json::to_vec(&root).expect("JSON");
    let err = Tokenizer::from_json_bytes(&json, None, "replace").expect_err("refused").to_string();
    assert!(err.contains("Replace") && err.contains("would change token"), "{err}");
    assert!(err.contains("\"a"), "names a token containing `a`: {err}");

    root["decoder"] = serde_json::json!({"type": "WordPiece", "prefix": "##", "cleanup": true});
    let json = serde_json::to_vec(&root).expect("JSON");
    let err = Tokenizer::from_json_bytes(&json, None, "wordpiece").expect_err("refused").to_string();
    assert!(err.contains("WordPiece") && err.contains("not supported"), "{err}");
}
