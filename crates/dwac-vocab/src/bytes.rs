//! Family detection and exact token bytes (crate docs, "Families and byte derivation rules").

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::{Family, VocabError, MAX_VOCAB_SIZE};

/// The default metaspace character.
pub(crate) const METASPACE: char = '\u{2581}';

/// SentencePiece control tokens, flagged special in the SentencePiece family.
pub(crate) const SP_CONTROL: [&str; 3] = ["<unk>", "<s>", "</s>"];

/// One `added_tokens` entry.
pub(crate) struct Added {
    pub id: u32,
    pub content: String,
    pub special: bool,
    /// Matched on the normalized text (`"normalized": true`) rather than the raw text.
    pub normalized: bool,
}

/// Everything derived from `tokenizer.json` alone.
pub(crate) struct Table {
    pub family: Family,
    /// Per id: exact bytes.
    pub bytes: Vec<Vec<u8>>,
    /// Per id: special flag (before EOS ids are added).
    pub special: Vec<bool>,
    /// SentencePiece family: the metaspace character.
    pub metaspace: char,
    /// SentencePiece family with byte fallback: the id of `<0xNN>` for every byte `NN`.
    pub byte_fallback_ids: [Option<u32>; 256],
    pub added: Vec<Added>,
    /// Model vocabulary: token string → id.
    pub model: HashMap<String, u32>,
}

impl Table {
    /// Id of the token named `content`: an added token's content first, then a model token string.
    pub fn lookup(&self, content: &str) -> Option<u32> {
        self.added.iter().find(|a| a.content == content).map(|a| a.id).or_else(|| self.model.get(content).copied())
    }
}

/// GPT-2's `bytes_to_unicode`, inverted: `table[c] = byte` for the 256 characters `c < 0x144`
/// that the byte-level alphabet uses.
pub(crate) fn byte_level_inverse() -> [Option<u8>; 0x144] {
    let mut table = [None; 0x144];
    let mut n = 0usize;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        if printable {
            table[b as usize] = Some(b);
        } else {
            table[256 + n] = Some(b);
            n += 1;
        }
    }
    table
}

fn malformed(detail: impl Into<String>) -> VocabError {
    VocabError::Malformed { what: "tokenizer.json".into(), detail: detail.into() }
}

/// The components of a (possibly `Sequence`) normalizer / pre-tokenizer / decoder, flattened.
fn components<'a>(node: Option<&'a Value>, out: &mut Vec<&'a Map<String, Value>>) {
    let Some(Value::Object(obj)) = node else {
        return;
    };
    if obj.get("type").and_then(Value::as_str) == Some("Sequence") {
        for key in ["normalizers", "pretokenizers", "decoders", "processors"] {
            if let Some(Value::Array(list)) = obj.get(key) {
                for item in list {
                    components(Some(item), out);
                }
            }
        }
    } else {
        out.push(obj);
    }
}

fn ty(c: &Map<String, Value>) -> &str {
    c.get("type").and_then(Value::as_str).unwrap_or("")
}

/// `{"String": s}` patterns only (a regex pattern is not a plain metaspace substitution).
fn string_pattern(c: &Map<String, Value>) -> Option<&str> {
    c.get("pattern")?.get("String")?.as_str()
}

fn single_char(s: &str) -> Option<char> {
    let mut it = s.chars();
    let c = it.next()?;
    it.next().is_none().then_some(c)
}

/// Detect the family, and the metaspace character for the SentencePiece family.
fn detect(root: &Value) -> Result<(Family, char, bool), VocabError> {
    let (mut norm, mut pre, mut dec) = (Vec::new(), Vec::new(), Vec::new());
    components(root.get("normalizer"), &mut norm);
    components(root.get("pre_tokenizer"), &mut pre);
    components(root.get("decoder"), &mut dec);

    let byte_level = pre.iter().chain(&dec).any(|c| ty(c) == "ByteLevel");

    let mut metas: Vec<char> = Vec::new();
    for c in pre.iter().chain(&dec) {
        if ty(c) == "Metaspace" {
            let r = match c.get("replacement") {
                Some(Value::String(s)) => single_char(s)
                    .ok_or_else(|| malformed(format!("Metaspace replacement {s:?} is not one character")))?,
                _ => METASPACE,
            };
            metas.push(r);
        }
    }
    for c in &norm {
        if ty(c) == "Replace" && string_pattern(c) == Some(" ") {
            if let Some(r) = c.get("content").and_then(Value::as_str).and_then(single_char) {
                metas.push(r);
            }
        }
    }
    for c in &dec {
        if ty(c) == "Replace" && c.get("content").and_then(Value::as_str) == Some(" ") {
            if let Some(r) = string_pattern(c).and_then(single_char) {
                metas.push(r);
            }
        }
    }
    metas.sort_unstable();
    metas.dedup();
    let byte_fallback_decoder = dec.iter().any(|c| ty(c) == "ByteFallback");
    check_decoder(&dec, root, &metas)?;

    match (byte_level, metas.as_slice()) {
        (true, []) => Ok((Family::ByteLevel, METASPACE, false)),
        (false, [m]) => Ok((Family::SentencePiece, *m, byte_fallback_decoder)),
        (false, []) => Err(VocabError::UnsupportedTokenizer(
            "neither a ByteLevel pre-tokenizer/decoder nor a SentencePiece-style metaspace \
             (Metaspace, or Replace between ' ' and a metaspace character) was found"
                .into(),
        )),
        (true, _) => Err(VocabError::UnsupportedTokenizer(
            "both ByteLevel and metaspace components are present; token bytes are ambiguous".into(),
        )),
        (false, _) => {
            Err(VocabError::UnsupportedTokenizer(format!("several different metaspace characters {metas:?}")))
        }
    }
}

/// Every decoder component must be one whose effect on a token's bytes we reproduce exactly
/// (the family rules), or one that only acts on the whole decoded text. Anything else would give
/// some tokens bytes other than the decoder's: refuse, naming the component and a token it changes.
fn check_decoder(dec: &[&Map<String, Value>], root: &Value, metas: &[char]) -> Result<(), VocabError> {
    for c in dec {
        let ok = match ty(c) {
            // Per-token rules of the two families, and byte fallback.
            "ByteLevel" | "Metaspace" | "ByteFallback" => true,
            // Joins tokens' strings: no effect on any token's bytes.
            "Fuse" => true,
            // Removes leading/trailing characters of the whole decoded text (Llama-2's `Strip(' ', 1, 0)`
            // drops the space of the first `▁`): not a property of any token, and our encoder never
            // prepends that space.
            "Strip" => true,
            "Replace" => {
                c.get("content").and_then(Value::as_str) == Some(" ")
                    && string_pattern(c).and_then(single_char).is_some_and(|p| metas.contains(&p))
            }
            _ => false,
        };
        if !ok {
            let desc = serde_json::to_string(c).unwrap_or_default();
            let token = match (ty(c), string_pattern(c)) {
                ("Replace", Some(p)) => first_token_containing(root, p),
                _ => None,
            };
            return Err(VocabError::UnsupportedTokenizer(match token {
                Some(t) => format!("decoder component {desc} would change token {t:?}; its rendering is not supported"),
                None => format!("decoder component {desc} is not supported: token bytes would not be exact"),
            }));
        }
    }
    Ok(())
}

/// A token (added or model) whose string contains `pat`, for error messages.
fn first_token_containing(root: &Value, pat: &str) -> Option<String> {
    let added = root.get("added_tokens").and_then(Value::as_array).into_iter().flatten();
    let added = added.filter_map(|t| t.get("content").and_then(Value::as_str));
    let model = root.get("model").and_then(|m| m.get("vocab"));
    let model: Box<dyn Iterator<Item = &str>> = match model {
        Some(Value::Object(o)) => Box::new(o.keys().map(String::as_str)),
        Some(Value::Array(a)) => Box::new(a.iter().filter_map(|p| p.get(0).and_then(Value::as_str))),
        _ => Box::new(std::iter::empty()),
    };
    added.chain(model).find(|t| t.contains(pat)).map(str::to_string)
}

/// The bytes the tokenizer's own decoder renders for a non-special added token: in the
/// SentencePiece family the metaspace becomes a space and (with byte fallback) a token spelled
/// exactly `<0xNN>` the byte `NN`; in the byte-level family every character maps through the
/// byte-level alphabet if all of them are in it, else the content's UTF-8 stands (HF's
/// `ByteLevel` decoder).
pub(crate) fn render_added(family: Family, content: &str, metaspace: char, byte_fallback: bool) -> Vec<u8> {
    match family {
        Family::SentencePiece => match byte_token(content).filter(|_| byte_fallback) {
            Some(b) => vec![b],
            None => content.replace(metaspace, " ").into_bytes(),
        },
        Family::ByteLevel => {
            let inverse = byte_level_inverse();
            let mapped: Option<Vec<u8>> = content.chars().map(|c| inverse.get(c as usize).copied().flatten()).collect();
            mapped.unwrap_or_else(|| content.as_bytes().to_vec())
        }
    }
}

fn id_of(v: &Value, what: &str) -> Result<u32, VocabError> {
    let id = v.as_u64().ok_or_else(|| malformed(format!("{what}: id {v} is not a non-negative integer")))?;
    if id >= MAX_VOCAB_SIZE as u64 {
        return Err(VocabError::TooLarge(format!("{what}: token id {id} (limit {MAX_VOCAB_SIZE})")));
    }
    Ok(id as u32)
}

/// Parse `<0xNN>` (either hex case).
pub(crate) fn byte_token(s: &str) -> Option<u8> {
    let hex = s.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

/// Derive every token's exact bytes and special flag from a parsed `tokenizer.json`.
pub(crate) fn derive(root: &Value) -> Result<Table, VocabError> {
    let model = root.get("model").and_then(Value::as_object).ok_or_else(|| malformed("no \"model\" object"))?;
    let model_type = match model.get("type").and_then(Value::as_str) {
        Some(t) => t,
        // Old files without a type tag: BPE has merges, Unigram a list vocabulary.
        None if model.contains_key("merges") => "BPE",
        None if model.get("vocab").is_some_and(Value::is_array) => "Unigram",
        None => return Err(malformed("model has no \"type\"")),
    };

    // Model vocabulary: (token string, id).
    let mut entries: Vec<(String, u32)> = Vec::new();
    match model_type {
        "BPE" => {
            for key in ["continuing_subword_prefix", "end_of_word_suffix"] {
                if let Some(Value::String(s)) = model.get(key) {
                    if !s.is_empty() {
                        return Err(VocabError::UnsupportedTokenizer(format!(
                            "BPE {key} {s:?}: token strings do not spell their bytes"
                        )));
                    }
                }
            }
            let vocab = model
                .get("vocab")
                .and_then(Value::as_object)
                .ok_or_else(|| malformed("model.vocab is not an object"))?;
            entries.reserve(vocab.len());
            for (s, id) in vocab {
                entries.push((s.clone(), id_of(id, "model.vocab")?));
            }
        }
        "Unigram" => {
            let vocab =
                model.get("vocab").and_then(Value::as_array).ok_or_else(|| malformed("model.vocab is not a list"))?;
            if vocab.len() > MAX_VOCAB_SIZE {
                return Err(VocabError::TooLarge(format!("{} Unigram pieces", vocab.len())));
            }
            for (i, piece) in vocab.iter().enumerate() {
                let s = piece
                    .get(0)
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed(format!("model.vocab[{i}] is not [piece, score]")))?;
                entries.push((s.to_string(), i as u32));
            }
        }
        other => return Err(VocabError::UnsupportedModel(other.to_string())),
    }

    let mut added = Vec::new();
    match root.get("added_tokens") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for (i, t) in list.iter().enumerate() {
                let what = format!("added_tokens[{i}]");
                let id = id_of(t.get("id").unwrap_or(&Value::Null), &what)?;
                let content = t
                    .get("content")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed(format!("{what} has no string \"content\"")))?;
                let special = t.get("special").and_then(Value::as_bool).unwrap_or(false);
                let normalized = t.get("normalized").and_then(Value::as_bool).unwrap_or(!special);
                added.push(Added { id, content: content.to_string(), special, normalized });
            }
        }
        Some(_) => return Err(malformed("added_tokens is not a list")),
    }

    let (family, metaspace, byte_fallback_decoder) = detect(root)?;
    let byte_fallback = byte_fallback_decoder || model.get("byte_fallback").and_then(Value::as_bool) == Some(true);

    let size = entries.iter().map(|e| e.1).chain(added.iter().map(|a| a.id)).max().map_or(0, |m| m as usize + 1);
    if size == 0 {
        return Err(malformed("the vocabulary is empty"));
    }

    // `None` = no token with this id (yet).
    let mut tokens: Vec<Option<Vec<u8>>> = vec![None; size];
    let mut special = vec![false; size];
    let mut strings: Vec<Option<&str>> = vec![None; size];
    let mut byte_fallback_ids = [None; 256];
    let inverse = byte_level_inverse();
    let added_ids: std::collections::HashSet<u32> = added.iter().map(|a| a.id).collect();

    for (s, id) in &entries {
        let i = *id as usize;
        if let Some(first) = strings[i] {
            return Err(VocabError::DuplicateId { id: *id, first: first.to_string(), second: s.clone() });
        }
        strings[i] = Some(s);
        if added_ids.contains(id) {
            continue; // the added token's content wins (below)
        }
        let b = match family {
            Family::ByteLevel => {
                let mut b = Vec::with_capacity(s.len());
                for c in s.chars() {
                    match inverse.get(c as usize).copied().flatten() {
                        Some(x) => b.push(x),
                        None => return Err(VocabError::NotByteLevel { id: *id, token: s.clone() }),
                    }
                }
                b
            }
            Family::SentencePiece => match byte_token(s).filter(|_| byte_fallback) {
                Some(x) => {
                    byte_fallback_ids[x as usize].get_or_insert(*id);
                    vec![x]
                }
                None => {
                    if SP_CONTROL.contains(&s.as_str()) {
                        special[i] = true;
                    }
                    s.replace(metaspace, " ").into_bytes()
                }
            },
        };
        tokens[i] = Some(b);
    }

    let mut seen_added: HashMap<u32, &str> = HashMap::new();
    for a in &added {
        let i = a.id as usize;
        if let Some(first) = seen_added.insert(a.id, &a.content) {
            if first != a.content {
                return Err(VocabError::DuplicateId { id: a.id, first: first.to_string(), second: a.content.clone() });
            }
        }
        special[i] = a.special || (family == Family::SentencePiece && SP_CONTROL.contains(&a.content.as_str()));
        tokens[i] = Some(render_added(family, &a.content, metaspace, byte_fallback));
    }

    if let Some(unk) = model.get("unk_token").and_then(Value::as_str) {
        if let Some(id) = added.iter().find(|a| a.content == unk).map(|a| a.id) {
            special[id as usize] = true;
        } else if let Some(&(_, id)) = entries.iter().find(|e| e.0 == unk) {
            special[id as usize] = true;
        }
    }
    if model_type == "Unigram" {
        if let Some(id) = model.get("unk_id").and_then(Value::as_u64) {
            if let Some(s) = special.get_mut(id as usize) {
                *s = true;
            }
        }
    }

    let mut bytes = Vec::with_capacity(size);
    for (i, t) in tokens.into_iter().enumerate() {
        match t {
            Some(b) => bytes.push(b),
            None => {
                special[i] = true;
                bytes.push(Vec::new());
            }
        }
    }
    let model_map = entries.into_iter().collect();
    Ok(Table { family, bytes, special, metaspace, byte_fallback_ids, added, model: model_map })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_level_alphabet_is_a_bijection() {
        let inv = byte_level_inverse();
        let mut seen = [false; 256];
        for b in inv.iter().flatten() {
            assert!(!seen[*b as usize]);
            seen[*b as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(inv['Ġ' as usize], Some(b' '));
        assert_eq!(inv['Ċ' as usize], Some(b'\n'));
        assert_eq!(inv['ĉ' as usize], Some(b'\t'));
        assert_eq!(inv['Ā' as usize], Some(0));
        assert_eq!(inv['a' as usize], Some(b'a'));
        assert_eq!(inv[0xA0], None); // NBSP is not in the alphabet (0xA0 maps to 'ł')
        assert_eq!(inv['ł' as usize], Some(0xA0));
        assert_eq!(inv['Ń' as usize], Some(0xAD));
        assert_eq!(inv[0x143], Some(0xAD));
    }

    #[test]
    fn byte_tokens() {
        assert_eq!(byte_token("<0x0A>"), Some(10));
        assert_eq!(byte_token("<0xff>"), Some(255));
        assert_eq!(byte_token("<0x0A"), None);
        assert_eq!(byte_token("<0x0AB>"), None);
        assert_eq!(byte_token("<0xG0>"), None);
    }
}
