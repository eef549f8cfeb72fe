//! Token bytes, special flags, EOS ids and fingerprints of the shipped tokenizers, and the typed
//! errors on synthetic ones.

use crate::common;

use std::collections::HashSet;
use std::path::Path;

use common::{data_dir, load, spell, TOKENIZERS};
use dwac_vocab::{Family, SideFiles, Tokenizer, VocabError};
use serde_json::{json, Value};

/// Id of a model-vocabulary token string, read straight from the file.
fn model_id(data: &Path, name: &str, token: &str) -> u32 {
    let path = data.join("tokenizers").join(name).join("tokenizer.json");
    let v: Value = serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json");
    v["model"]["vocab"][token].as_u64().unwrap_or_else(|| panic!("{name}: no token {token:?}")) as u32
}

fn bytes(tok: &Tokenizer, id: u32) -> &[u8] {
    tok.vocab().token_bytes(id).expect("id in range")
}

/// Every byte value is some non-special token's exact spelling.
fn assert_all_single_bytes(tok: &Tokenizer) {
    let v = tok.vocab();
    let mut seen = [false; 256];
    for id in 0..v.len() as u32 {
        let b = bytes(tok, id);
        if b.len() == 1 && !v.is_special(id) {
            seen[b[0] as usize] = true;
        }
    }
    let missing: Vec<usize> = (0..256).filter(|&b| !seen[b]).collect();
    assert!(missing.is_empty(), "{}: no single-byte token for {missing:?}", tok.name());
}

#[test]
fn gpt2_tables() {
    let data = data_dir();
    let tok = load(&data, "gpt2");
    let v = tok.vocab();
    assert_eq!(tok.name(), "gpt2");
    assert_eq!(tok.family(), Family::ByteLevel);
    assert_eq!(v.len(), 50257);
    assert_eq!(v.eos(), [50256]);
    assert_eq!(bytes(&tok, 50256), b""); // special: no bytes
    assert!(v.is_special(50256));
    assert_eq!(bytes(&tok, model_id(&data, "gpt2", "Ġthe")), b" the");
    assert_eq!(bytes(&tok, 262), b" the");
    assert_eq!(bytes(&tok, model_id(&data, "gpt2", "Ċ")), b"\n");
    assert_eq!(bytes(&tok, model_id(&data, "gpt2", "ĉ")), b"\t");
    assert_eq!(bytes(&tok, model_id(&data, "gpt2", "Ā")), b"\x00");
    assert_eq!(bytes(&tok, 0), b"!");
    assert_eq!((0..50256).filter(|&i| v.is_special(i)).count(), 0);
    assert_all_single_bytes(&tok);
    // The special token's text is spelled with ordinary tokens.
    let ids = tok.encode("<|endoftext|>").expect("encode");
    assert!(ids.len() > 1 && !ids.contains(&50256));
    assert_eq!(spell(&tok, &ids), b"<|endoftext|>");
    assert_eq!(tok.encode(" the").expect("encode"), vec![262]);
    assert_eq!(tok.encode("").expect("encode"), Vec::<u32>::new());
}

#[test]
fn qwen_tables() {
    let data = data_dir();
    let q2 = load(&data, "qwen2");
    let q3 = load(&data, "qwen3");
    assert_eq!(q2.vocab().len(), 151646);
    assert_eq!(q3.vocab().len(), 151669);
    // qwen2's tokenizer_config/special_tokens_map name <|endoftext|>; qwen3's names <|im_end|>.
    assert_eq!(q2.vocab().eos(), [151643]);
    assert_eq!(q3.vocab().eos(), [151645]);
    for t in [&q2, &q3] {
        assert_eq!(t.family(), Family::ByteLevel);
        // Special tokens have no bytes.
        assert_eq!(bytes(t, 151643), b"");
        assert_eq!(bytes(t, 151644), b"");
        assert_eq!(bytes(t, 151645), b"");
        for id in 151643..=151645 {
            assert!(t.vocab().is_special(id));
        }
        assert_eq!(bytes(t, 220), b" ");
        assert_eq!(bytes(t, 198), b"\n");
        assert_all_single_bytes(t);
        let ids = t.encode("<|im_end|>").expect("encode");
        assert!(!ids.contains(&151645));
        // Same BPE: identical bytes over the model vocabulary.
    }
    for id in 0..151643 {
        assert_eq!(bytes(&q2, id), bytes(&q3, id), "id {id}");
    }
    // Qwen3's non-special added tokens are literal text tokens.
    assert_eq!(bytes(&q3, 151667), b"<think>");
    assert_eq!(bytes(&q3, 151668), b"</think>");
    assert_eq!(bytes(&q3, 151657), b"<tool_call>");
    assert!(!q3.vocab().is_special(151667));
    assert!(q3.vocab().is_special(151653)); // <|vision_end|>
    assert_eq!(q3.encode("<think>\nhi\n</think>").expect("encode").first(), Some(&151667));
    assert_eq!(q3.encode("<think>").expect("encode"), vec![151667]);
    // NFC is not applied: a decomposed é stays decomposed.
    let ids = q3.encode("e\u{301}").expect("encode");
    assert_eq!(spell(&q3, &ids), "e\u{301}".as_bytes());
}

#[test]
fn deepseek_tables() {
    let data = data_dir();
    let t = load(&data, "deepseek-r1");
    let v = t.vocab();
    assert_eq!(t.family(), Family::ByteLevel);
    assert_eq!(v.len(), 128815);
    assert_eq!(v.eos(), [1]);
    assert_eq!(bytes(&t, 0), b""); // special: no bytes
    assert_eq!(bytes(&t, 1), b"");
    // A non-special added token outside the byte-level alphabet: its raw UTF-8 (HF's ByteLevel decoder).
    assert_eq!(bytes(&t, 128800), "<｜fim▁hole｜>".as_bytes());
    assert!(v.is_special(0) && v.is_special(1) && v.is_special(2));
    assert!(v.is_special(128000)); // placeholder
    assert!(v.is_special(128805)); // <|EOT|>
    assert_eq!(bytes(&t, 128798), b"<think>");
    assert!(!v.is_special(128798));
    assert_eq!(bytes(&t, 128803), "<｜User｜>".as_bytes());
    assert!(!v.is_special(128803));
    assert_all_single_bytes(&t);
    assert_eq!(t.encode("<think>").expect("encode"), vec![128798]);
    let ids = t.encode("<｜end▁of▁sentence｜>").expect("encode");
    assert!(!ids.contains(&1));
}

#[test]
fn phi_tables() {
    let data = data_dir();
    let t = load(&data, "phi-3.5-mini");
    let v = t.vocab();
    assert_eq!(t.family(), Family::SentencePiece);
    assert_eq!(v.len(), 32011);
    // tokenizer_config.json: eos_token "<|endoftext|>".
    assert_eq!(v.eos(), [32000]);
    assert_eq!(bytes(&t, 13), b"\n");
    assert_eq!(bytes(&t, model_id(&data, "phi-3.5-mini", "<0x0A>")), b"\n");
    assert_eq!(bytes(&t, 3), b"\x00");
    assert_eq!(bytes(&t, 258), b"\xff");
    assert_eq!(bytes(&t, model_id(&data, "phi-3.5-mini", "▁the")), b" the");
    assert_eq!(bytes(&t, 278), b" the");
    assert_eq!(bytes(&t, 29871), b" ");
    assert_eq!(bytes(&t, 259), b"  ");
    // Control tokens, including </s> (non-special in the file).
    for id in [0, 1, 2, 32000, 32001, 32007, 32010] {
        assert!(v.is_special(id), "id {id}");
    }
    assert_eq!(bytes(&t, 2), b""); // special: no bytes
    assert_eq!((3..32000).filter(|&i| v.is_special(i)).count(), 0);
    assert_all_single_bytes(&t);
    // No prepended ▁: "the" is not " the".
    let ids = t.encode("the").expect("encode");
    assert_eq!(spell(&t, &ids), b"the");
    assert_eq!(t.encode(" the").expect("encode"), vec![278]);
    // A literal ▁ is spelled with its byte-fallback tokens (E2 96 81).
    assert_eq!(t.encode("\u{2581}").expect("encode"), vec![3 + 0xE2, 3 + 0x96, 3 + 0x81]);
    let ids = t.encode("</s>").expect("encode");
    assert!(!ids.contains(&2));
    assert_eq!(spell(&t, &ids), b"</s>");
    // rstrip added tokens do not swallow spaces.
    let text = "<|end|>  x";
    assert_eq!(spell(&t, &t.encode(text).expect("encode")), text.as_bytes());
}

#[test]
fn fingerprints() {
    let embedded = Tokenizer::default_embedded().expect("embedded");
    let again = Tokenizer::default_embedded().expect("embedded");
    assert_eq!(embedded.fingerprint(), again.fingerprint());
    // Golden value: a change here changes every artifact's tokenizer check; bump the
    // fingerprint layout's version string (FINGERPRINT_MAGIC) if it is intended.
    assert_eq!(embedded.fingerprint_hex(), GPT2_FINGERPRINT);
    let hex = embedded.fingerprint_hex();
    assert_eq!(hex.len(), 64);
    let from_bytes: String = embedded.fingerprint().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, from_bytes);

    let data = data_dir();
    let mut seen = HashSet::new();
    for name in TOKENIZERS {
        let a = load(&data, name);
        let b = load(&data, name);
        assert_eq!(a.fingerprint(), b.fingerprint(), "{name}: fingerprint not stable");
        assert!(seen.insert(a.fingerprint()), "{name}: fingerprint collides with another tokenizer");
        // Golden values, cross-checked against an independent Python implementation of the
        // byte rules and of the layout.
        let golden = GOLDEN.iter().find(|g| g.0 == name).expect("golden").1;
        assert_eq!(a.fingerprint_hex(), golden, "{name}");
        if name == "gpt2" {
            // Same content (the embedded copy is re-serialized JSON), same fingerprint.
            assert_eq!(a.fingerprint(), embedded.fingerprint());
        }
        eprintln!("{name}: {}", a.fingerprint_hex());
    }
}

const GPT2_FINGERPRINT: &str = "7eec47b1a63b4e2dd95083fa869917ff2de2e55224305a5f07fc2cd467c81ace";
const GOLDEN: [(&str, &str); 5] = [
    ("gpt2", GPT2_FINGERPRINT),
    ("deepseek-r1", "1ca1901db6bcf470e8b56efb05e278331625d6dbbd62d8d88d37c248bea66bc6"),
    ("qwen2", "99c8bf20c3ae402f45188f21798dc880f42bb79aa832a00d0d19d506d197bdd0"),
    ("qwen3", "000cc123922a051755fd2bb41276c0f058852a6b943c2119f85830d2d57d9882"),
    ("phi-3.5-mini", "63714be52e3b3673b2007c03364018d59f3089168a9a6ed14e760b917f72b8ff"),
];

#[test]
fn eos_override_changes_fingerprint() {
    let t = Tokenizer::default_embedded().expect("embedded");
    let fp = t.fingerprint();
    let t2 = t.clone().with_eos(&[50256]).expect("same eos");
    assert_eq!(t2.fingerprint(), fp);
    let t3 = t.clone().with_eos(&[50256, 13]).expect("eos override");
    assert_eq!(t3.vocab().eos(), [13, 50256]);
    assert!(t3.vocab().is_special(13));
    assert_ne!(t3.fingerprint(), fp);
    assert!(matches!(t.clone().with_eos(&[]), Err(VocabError::NoEos)));
    assert!(matches!(t.with_eos(&[50257]), Err(VocabError::EosOutOfRange { .. })));
}

#[test]
fn debug_is_short_and_types_are_thread_safe() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Tokenizer>();
    assert_send_sync::<VocabError>();
    let t = Tokenizer::default_embedded().expect("embedded");
    let d = format!("{t:?}");
    assert!(d.len() < 400, "{d}");
    assert!(d.contains("gpt2") && d.contains("50257"));
}

// ---------------------------------------------------------------------------------------------
// Synthetic tokenizers.

/// GPT-2's byte-level alphabet: the character standing for byte `b`.
fn byte_char(b: u8) -> char {
    let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    if printable {
        return b as char;
    }
    let n = (0..b).filter(|&x| !matches!(x, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF)).count() as u32;
    char::from_u32(256 + n).expect("char")
}

/// A byte-level BPE with the 256 byte tokens, the merge "Ġ a", and `<|endoftext|>` = 257.
fn tiny_byte_level() -> Value {
    let mut vocab = serde_json::Map::new();
    for b in 0..=255u8 {
        vocab.insert(byte_char(b).to_string(), json!(b as u32));
    }
    vocab.insert("Ġa".into(), json!(256));
    json!({
        "version": "1.0",
        "truncation": {"direction": "Right", "max_length": 2, "strategy": "LongestFirst", "stride": 0},
        "padding": null,
        "added_tokens": [
            {"id": 257, "content": "<|endoftext|>", "single_word": false, "lstrip": false,
             "rstrip": false, "normalized": false, "special": true},
            {"id": 258, "content": "<tag>", "single_word": false, "lstrip": true,
             "rstrip": true, "normalized": false, "special": false}
        ],
        "normalizer": {"type": "NFKC"},
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
        "post_processor": null,
        "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
        "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                  "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
                  "vocab": vocab, "merges": ["Ġ a"]}
    })
}

/// A SentencePiece-style BPE with a Metaspace pre-tokenizer (prepend_scheme "first") and byte fallback.
fn tiny_metaspace() -> Value {
    let mut vocab = serde_json::Map::new();
    vocab.insert("<unk>".into(), json!(0));
    vocab.insert("<s>".into(), json!(1));
    vocab.insert("</s>".into(), json!(2));
    for b in 0..=255u32 {
        vocab.insert(format!("<0x{b:02X}>"), json!(3 + b));
    }
    vocab.insert("▁".into(), json!(259));
    vocab.insert("a".into(), json!(260));
    vocab.insert("b".into(), json!(261));
    vocab.insert("▁a".into(), json!(262));
    json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [
            {"id": 0, "content": "<unk>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
            {"id": 1, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
            {"id": 2, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
        ],
        "normalizer": null,
        "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false},
        "post_processor": null,
        "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false},
        "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "continuing_subword_prefix": null,
                  "end_of_word_suffix": null, "fuse_unk": true, "byte_fallback": true,
                  "vocab": vocab, "merges": ["▁ a"]}
    })
}

fn from_value(v: &Value, config: Option<&Value>) -> Result<Tokenizer, VocabError> {
    let cfg = config.map(|c| serde_json::to_vec(c).expect("json"));
    Tokenizer::from_json_bytes(&serde_json::to_vec(v).expect("json"), cfg.as_deref(), "tiny")
}

#[test]
fn tiny_byte_level_tokenizer() {
    let t = from_value(&tiny_byte_level(), None).expect("load");
    assert_eq!(t.family(), Family::ByteLevel);
    assert_eq!(t.vocab().len(), 259);
    assert_eq!(t.vocab().eos(), [257]); // well-known fallback
    assert_eq!(t.vocab().token_bytes(256), Some(&b" a"[..]));
    assert_eq!(t.vocab().token_bytes(258), Some(&b"<tag>"[..]));
    // Truncation (max_length 2), NFKC, add_prefix_space and rstrip/lstrip are all ignored.
    let text = "a a a a ﬁ <tag> x";
    let ids = t.encode(text).expect("encode");
    assert_eq!(spell(&t, &ids), text.as_bytes());
    assert_eq!(&ids[..4], &[b'a' as u32, 256, 256, 256]);
    assert!(ids.contains(&258));
}

#[test]
fn tiny_metaspace_tokenizer() {
    let t = from_value(&tiny_metaspace(), None).expect("load");
    assert_eq!(t.family(), Family::SentencePiece);
    assert_eq!(t.vocab().eos(), [2]);
    assert_eq!(t.vocab().token_bytes(262), Some(&b" a"[..]));
    assert_eq!(t.vocab().token_bytes(3 + 10), Some(&b"\n"[..]));
    assert_eq!(t.encode("a a").expect("encode"), vec![260, 262]);
    assert_eq!(t.encode("ab").expect("encode"), vec![260, 261]);
    // "c" is not in the vocabulary: byte fallback.
    assert_eq!(t.encode("c").expect("encode"), vec![3 + b'c' as u32]);
    assert_eq!(t.encode("▁a").expect("encode"), vec![3 + 0xE2, 3 + 0x96, 3 + 0x81, 260]);
    let text = "  a\n▁ é🦀";
    assert_eq!(spell(&t, &t.encode(text).expect("encode")), text.as_bytes());
}

#[test]
fn unigram_without_byte_fallback_reports_unencodable_text() {
    let v = json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": [
            {"id": 0, "content": "<unk>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
            {"id": 1, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
        ],
        "normalizer": null,
        "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "add_prefix_space": true},
        "post_processor": null,
        "decoder": {"type": "Metaspace", "replacement": "▁", "add_prefix_space": true},
        "model": {"type": "Unigram", "unk_id": 0, "byte_fallback": false,
                  "vocab": [["<unk>", 0.0], ["</s>", 0.0], ["▁", -2.0], ["a", -1.0], ["b", -1.0], ["▁a", -0.5]]}
    });
    let t = from_value(&v, None).expect("load");
    assert_eq!(t.family(), Family::SentencePiece);
    assert_eq!(t.vocab().eos(), [1]);
    assert_eq!(t.vocab().token_bytes(5), Some(&b" a"[..]));
    let ids = t.encode("a ab").expect("encode");
    assert_eq!(spell(&t, &ids), b"a ab");
    let err = t.encode("ac").unwrap_err();
    assert!(matches!(err, VocabError::Unrepresentable { ch: 'c', offset: 1, id: 0 }), "{err:?}");
    assert!(err.to_string().contains("'c' at byte 1"), "{err}");
    assert!(matches!(t.encode("a▁"), Err(VocabError::NoByteFallback { ch: '▁' })));
}

#[test]
fn eos_from_side_files() {
    let json = serde_json::to_vec(&tiny_byte_level()).expect("json");
    // tokenizer_config.json: string or {"content": ...}.
    let t = from_value(&tiny_byte_level(), Some(&json!({"eos_token": "<tag>"}))).expect("load");
    assert_eq!(t.vocab().eos(), [258]);
    assert!(t.vocab().is_special(258));
    let t = from_value(&tiny_byte_level(), Some(&json!({"eos_token": {"content": "Ġa"}}))).expect("load");
    assert_eq!(t.vocab().eos(), [256]);
    // null contributes nothing: fallback.
    let t = from_value(&tiny_byte_level(), Some(&json!({"eos_token": null}))).expect("load");
    assert_eq!(t.vocab().eos(), [257]);
    // generation_config.json ids add to the config's.
    let side = SideFiles {
        tokenizer_config: Some(br#"{"eos_token": "<|endoftext|>"}"#),
        special_tokens_map: Some(br#"{"eos_token": {"content": "<|endoftext|>"}}"#),
        generation_config: Some(br#"{"eos_token_id": [258, 257]}"#),
    };
    let t = Tokenizer::from_parts(&json, side, "tiny").expect("load");
    assert_eq!(t.vocab().eos(), [257, 258]);
    let side = SideFiles { generation_config: Some(br#"{"eos_token_id": 5}"#), ..SideFiles::default() };
    assert_eq!(Tokenizer::from_parts(&json, side, "tiny").expect("load").vocab().eos(), [5]);
    // Errors.
    let err = from_value(&tiny_byte_level(), Some(&json!({"eos_token": "<nope>"}))).unwrap_err();
    assert!(matches!(&err, VocabError::EosNotFound { content, .. } if content == "<nope>"), "{err}");
    let side = SideFiles { generation_config: Some(br#"{"eos_token_id": 259}"#), ..SideFiles::default() };
    let err = Tokenizer::from_parts(&json, side, "tiny").unwrap_err();
    assert!(matches!(err, VocabError::EosOutOfRange { id: 259, size: 259, .. }), "{err}");
    let err = from_value(&tiny_byte_level(), Some(&json!({"eos_token": 3}))).unwrap_err();
    assert!(matches!(err, VocabError::Malformed { .. }), "{err}");
    let side = SideFiles { tokenizer_config: Some(b"{not json"), ..SideFiles::default() };
    let err = Tokenizer::from_parts(&json, side, "tiny").unwrap_err();
    assert!(matches!(err, VocabError::Json { .. }), "{err}");
}

#[test]
fn typed_errors() {
    // No EOS anywhere.
    let mut v = tiny_byte_level();
    v["added_tokens"].as_array_mut().expect("list").remove(0);
    let err = from_value(&v, None).unwrap_err();
    assert!(matches!(err, VocabError::NoEos), "{err}");
    assert!(err.to_string().contains("<|endoftext|>"));

    // Not JSON / not a tokenizer.
    let err = Tokenizer::from_json_bytes(b"{", None, "x").unwrap_err();
    assert!(matches!(err, VocabError::Json { .. }), "{err}");
    let err = Tokenizer::from_json_bytes(b"{}", None, "x").unwrap_err();
    assert!(matches!(err, VocabError::Malformed { .. }), "{err}");

    // WordPiece: no exact bytes.
    let mut v = tiny_byte_level();
    v["model"]["type"] = json!("WordPiece");
    assert!(matches!(from_value(&v, None), Err(VocabError::UnsupportedModel(m)) if m == "WordPiece"));

    // Neither byte-level nor metaspace.
    let mut v = tiny_byte_level();
    v["pre_tokenizer"] = json!({"type": "Whitespace"});
    v["decoder"] = Value::Null;
    assert!(matches!(from_value(&v, None), Err(VocabError::UnsupportedTokenizer(_))));

    // Both.
    let mut v = tiny_byte_level();
    v["decoder"] = json!({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true});
    assert!(matches!(from_value(&v, None), Err(VocabError::UnsupportedTokenizer(_))));

    // Subword prefixes.
    let mut v = tiny_byte_level();
    v["model"]["continuing_subword_prefix"] = json!("##");
    assert!(matches!(from_value(&v, None), Err(VocabError::UnsupportedTokenizer(_))));

    // A byte-level token outside the alphabet.
    let mut v = tiny_byte_level();
    v["model"]["vocab"]["中"] = json!(259);
    assert!(matches!(from_value(&v, None), Err(VocabError::NotByteLevel { id: 259, .. })));

    // Two strings, one id.
    let mut v = tiny_byte_level();
    v["model"]["vocab"]["zz"] = json!(5);
    assert!(matches!(from_value(&v, None), Err(VocabError::DuplicateId { id: 5, .. })));

    // Absurd ids.
    let mut v = tiny_byte_level();
    v["model"]["vocab"]["zz"] = json!(1u64 << 40);
    assert!(matches!(from_value(&v, None), Err(VocabError::TooLarge(_))));
    let mut v = tiny_byte_level();
    v["model"]["vocab"]["zz"] = json!(-1);
    assert!(matches!(from_value(&v, None), Err(VocabError::Malformed { .. })));

    // Missing file.
    let err = Tokenizer::from_file(Path::new("/nonexistent/dwac/tokenizer.json")).unwrap_err();
    assert!(matches!(err, VocabError::Io { .. }), "{err}");
    assert!(err.to_string().contains("/nonexistent/dwac/tokenizer.json"));
}

#[test]
fn ids_without_tokens_are_empty_and_special() {
    // A gap in the model vocabulary: ids 257..=299 have no token.
    let mut v = tiny_byte_level();
    v["model"]["vocab"]["<|endoftext|>"] = json!(300);
    v["added_tokens"] = json!([
        {"id": 300, "content": "<|endoftext|>", "single_word": false, "lstrip": false,
         "rstrip": false, "normalized": false, "special": true}
    ]);
    let t = from_value(&v, None).expect("load");
    assert_eq!(t.vocab().len(), 301);
    assert_eq!(t.vocab().eos(), [300]);
    for id in 257..300 {
        assert_eq!(t.vocab().token_bytes(id), Some(&b""[..]));
        assert!(t.vocab().is_special(id));
    }
    assert!(!t.vocab().is_special(256));

    // The tokenizers crate numbers added tokens that are not in the model vocabulary after it,
    // ignoring the file's ids; a file whose ids disagree is refused rather than mis-encoded.
    let mut v = tiny_byte_level();
    v["added_tokens"][0]["id"] = json!(300);
    let err = from_value(&v, None).unwrap_err();
    assert!(matches!(err, VocabError::UnsupportedTokenizer(_)), "{err}");
}
