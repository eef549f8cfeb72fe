//! The vocabulary inside a GGUF model file (llama.cpp's format).
//!
//! A GGUF file starts with a header and a list of typed key/value pairs; the tensors follow.
//! The tokenizer lives in the `tokenizer.ggml.*` keys. [`read`] walks the key/value list of a
//! memory-mapped file and keeps only those keys: strings and arrays it does not need are
//! skipped by their length without being read, and nothing past the key/value list (the
//! tensors, gigabytes of them in a real model) is touched. Every length is checked against the
//! bytes that remain, so a truncated or forged file is a [`GgufError`], never a panic or a
//! huge allocation.
//!
//! [`derive`] turns the tokens into exact bytes by llama.cpp's token types, for the two
//! tokenizer models llama.cpp calls `gpt2` (byte-level BPE) and `llama` (SentencePiece):
//!
//! | type | bytes | special |
//! |---|---|---|
//! | 1 normal | `gpt2`: each character through the inverse byte-level alphabet (`Ġ` → space); `llama`: the UTF-8 with `▁` as a space | no |
//! | 6 byte | `<0xNN>` is the byte `NN` | no |
//! | 4 user-defined | the token text as it is (UTF-8) | no |
//! | 3 control | none | yes |
//! | 2 unknown, 5 unused, 0 undefined | none | yes |
//!
//! As for a `tokenizer.json` of the SentencePiece family, `<unk>`, `<s>` and `</s>` are special
//! whatever their type (Phi-3 marks `</s>` user-defined). The end tokens are
//! `tokenizer.ggml.eos_token_id`, `eot_token_id` and `eom_token_id` (whichever are present);
//! only without any of them, the control tokens named in [`crate::WELL_KNOWN_EOS`]. Trailing
//! ids that can never be text (unknown, unused or undefined, not an end token) are padding of
//! the embedding matrix and are left out of the vocabulary, as a `tokenizer.json` leaves them
//! out: masks wider than the vocabulary disallow them. So the GGUF and the `tokenizer.json` of
//! one model describe the same vocabulary and get the same fingerprint.

use dwac_runtime::Vocabulary;
use serde_json::{json, Value};

use crate::bytes::{byte_level_inverse, byte_token, METASPACE};
use crate::{Family, VocabError, MAX_VOCAB_SIZE, WELL_KNOWN_EOS};

/// `GGUF` in the file's first four bytes.
pub const GGUF_MAGIC: [u8; 4] = *b"GGUF";
/// The GGUF versions read: 2 and 3 (64-bit lengths; version 1 had 32-bit ones).
pub const GGUF_VERSIONS: [u32; 2] = [2, 3];

/// Why a GGUF file's vocabulary could not be read.
#[derive(thiserror::Error, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GgufError {
    /// The file does not start with [`GGUF_MAGIC`]; holds its first four bytes.
    #[error("not a GGUF file (the first bytes are {0:02x?}, not \"GGUF\")")]
    BadMagic([u8; 4]),
    /// The file's GGUF version is not one of [`GGUF_VERSIONS`]; holds it.
    #[error("GGUF version {0} is not supported (supported: 2, 3)")]
    Version(u32),
    /// The file is big-endian (its version reads as a byte-swapped small number).
    #[error("big-endian GGUF files are not supported")]
    BigEndian,
    /// A value runs past the end of the bytes.
    #[error("truncated at byte {at}: {what} needs {need} more bytes, {have} remain")]
    Truncated {
        /// Byte offset in the file where the value starts.
        at: u64,
        /// What is being read (`the magic`, a key's name, ...).
        what: String,
        /// Bytes the value needs (for an array, the least its elements can take).
        need: u64,
        /// Bytes that remain from `at` on.
        have: u64,
    },
    /// A key's value is not of the type read for that key.
    #[error("key {key:?} has type {found}, expected {expected}")]
    WrongType {
        /// The key.
        key: String,
        /// The type expected (`string`, `bool`, `array of string`, ...).
        expected: &'static str,
        /// The type found.
        found: String,
    },
    /// A value type id (of a value or of an array's elements) is not a GGUF type.
    #[error("value type {ty} of key {key:?} is not a GGUF type")]
    UnknownType {
        /// The key whose value has it.
        key: String,
        /// The type id.
        ty: u32,
    },
    /// A key the vocabulary needs is absent; holds its name.
    #[error("key {0:?} is missing")]
    Missing(&'static str),
    /// `tokenizer.ggml.model` is neither `gpt2` nor `llama`; holds it.
    #[error("tokenizer model {0:?} is not supported (supported: \"gpt2\" byte-level BPE, \"llama\" SentencePiece)")]
    UnsupportedModel(String),
    /// Any other inconsistency (a negative or out-of-range id, a token that is not UTF-8, too
    /// many tokens, list lengths that disagree, ...); holds the message.
    #[error("{0}")]
    Invalid(String),
}

/// The `tokenizer.ggml.*` keys of a GGUF file (those dwac uses).
#[derive(Clone, Debug, Default)]
pub struct GgufVocab {
    /// `general.name`, if present.
    pub name: Option<String>,
    /// `tokenizer.ggml.model`: `gpt2` or `llama`.
    pub model: String,
    /// `tokenizer.ggml.pre`: the pre-tokenizer's name (informational).
    pub pre: Option<String>,
    /// `tokenizer.ggml.tokens`, as stored.
    pub tokens: Vec<Vec<u8>>,
    /// `tokenizer.ggml.token_type` (all 1, normal, when absent).
    pub token_type: Vec<i32>,
    /// `tokenizer.ggml.scores` (SentencePiece models).
    pub scores: Option<Vec<f32>>,
    /// `tokenizer.ggml.merges` (`"a b"`, byte-level BPE models).
    pub merges: Option<Vec<Vec<u8>>>,
    /// `tokenizer.ggml.bos_token_id`.
    pub bos: Option<u32>,
    /// `tokenizer.ggml.eos_token_id`: end of sequence.
    pub eos: Option<u32>,
    /// `tokenizer.ggml.eot_token_id`: end of turn.
    pub eot: Option<u32>,
    /// `tokenizer.ggml.eom_token_id`: end of message.
    pub eom: Option<u32>,
    /// `tokenizer.ggml.add_bos_token`.
    pub add_bos: Option<bool>,
    /// Bytes of the file the header and key/value list take (all that was read).
    pub header_bytes: u64,
}

/// llama.cpp's token types.
pub mod token_type {
    /// No type given: no bytes, special.
    pub const UNDEFINED: i32 = 0;
    /// An ordinary token: bytes by the tokenizer model's rule (byte-level alphabet or metaspace).
    pub const NORMAL: i32 = 1;
    /// The unknown token (`<unk>`): no bytes, special.
    pub const UNKNOWN: i32 = 2;
    /// A control token (`<s>`, `<|im_end|>`): no bytes, special.
    pub const CONTROL: i32 = 3;
    /// A user-defined token: its text as it is (UTF-8).
    pub const USER_DEFINED: i32 = 4;
    /// An unused slot: no bytes, special.
    pub const UNUSED: i32 = 5;
    /// A byte-fallback token `<0xNN>`: the single byte `NN`.
    pub const BYTE: i32 = 6;
}

const T_U8: u32 = 0;
const T_I8: u32 = 1;
const T_U16: u32 = 2;
const T_I16: u32 = 3;
const T_U32: u32 = 4;
const T_I32: u32 = 5;
const T_F32: u32 = 6;
const T_BOOL: u32 = 7;
const T_STRING: u32 = 8;
const T_ARRAY: u32 = 9;
const T_U64: u32 = 10;
const T_I64: u32 = 11;
const T_F64: u32 = 12;

fn type_name(t: u32) -> &'static str {
    match t {
        T_U8 => "u8",
        T_I8 => "i8",
        T_U16 => "u16",
        T_I16 => "i16",
        T_U32 => "u32",
        T_I32 => "i32",
        T_F32 => "f32",
        T_BOOL => "bool",
        T_STRING => "string",
        T_ARRAY => "array",
        T_U64 => "u64",
        T_I64 => "i64",
        T_F64 => "f64",
        _ => "unknown",
    }
}

/// Size of a fixed-size value type (`None` for strings and arrays).
fn fixed_size(t: u32) -> Option<u64> {
    Some(match t {
        T_U8 | T_I8 | T_BOOL => 1,
        T_U16 | T_I16 => 2,
        T_U32 | T_I32 | T_F32 => 4,
        T_U64 | T_I64 | T_F64 => 8,
        _ => return None,
    })
}

/// A bounds-checked little-endian cursor.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8], GgufError> {
        let have = (self.b.len() - self.at) as u64;
        if n > have {
            return Err(GgufError::Truncated { at: self.at as u64, what: what.to_string(), need: n, have });
        }
        let s = &self.b[self.at..self.at + n as usize];
        self.at += n as usize;
        Ok(s)
    }
    fn u32(&mut self, what: &str) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self, what: &str) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().expect("8 bytes")))
    }
    fn string(&mut self, what: &str) -> Result<&'a [u8], GgufError> {
        let n = self.u64(what)?;
        self.take(n, what)
    }
    /// Skip a value of type `t` without reading its contents.
    fn skip(&mut self, t: u32, key: &str) -> Result<(), GgufError> {
        if let Some(n) = fixed_size(t) {
            self.take(n, key)?;
        } else if t == T_STRING {
            self.string(key)?;
        } else if t == T_ARRAY {
            let (et, n) = (self.u32(key)?, self.u64(key)?);
            if let Some(size) = fixed_size(et) {
                let total = size.checked_mul(n).ok_or_else(|| GgufError::Invalid(format!("{key}: array too long")))?;
                self.take(total, key)?;
            } else {
                for _ in 0..n {
                    self.skip(et, key)?;
                }
            }
        } else {
            return Err(GgufError::UnknownType { key: key.to_string(), ty: t });
        }
        Ok(())
    }
    /// An integer value of any integer type, as u64 (negative values are refused).
    fn int(&mut self, t: u32, key: &str) -> Result<u64, GgufError> {
        let v: i128 = match t {
            T_U8 => self.take(1, key)?[0] as i128,
            T_I8 => self.take(1, key)?[0] as i8 as i128,
            T_U16 => u16::from_le_bytes(self.take(2, key)?.try_into().expect("2")) as i128,
            T_I16 => i16::from_le_bytes(self.take(2, key)?.try_into().expect("2")) as i128,
            T_U32 => self.u32(key)? as i128,
            T_I32 => self.u32(key)? as i32 as i128,
            T_U64 => self.u64(key)? as i128,
            T_I64 => self.u64(key)? as i64 as i128,
            _ => return Err(wrong(key, "an integer", t, None)),
        };
        u64::try_from(v).map_err(|_| GgufError::Invalid(format!("{key}: negative value {v}")))
    }
    /// An array header whose element type must be `want` (or any integer type with
    /// `want == T_I32`); its length is bounded by the bytes that remain.
    fn array(&mut self, t: u32, key: &str, want: u32) -> Result<(u32, u64), GgufError> {
        if t != T_ARRAY {
            return Err(wrong(key, array_of(want), t, None));
        }
        let (et, n) = (self.u32(key)?, self.u64(key)?);
        let ok = et == want || (want == T_I32 && matches!(et, T_U8 | T_I8 | T_U16 | T_I16 | T_U32 | T_I32));
        if !ok {
            return Err(wrong(key, array_of(want), T_ARRAY, Some(et)));
        }
        // Every element takes at least one byte (a string eight): a forged length cannot make
        // us allocate more than the file holds.
        let min = fixed_size(et).unwrap_or(8);
        let have = (self.b.len() - self.at) as u64;
        if n.saturating_mul(min) > have {
            return Err(GgufError::Truncated {
                at: self.at as u64,
                what: format!("{key} ({n} elements)"),
                need: n.saturating_mul(min),
                have,
            });
        }
        Ok((et, n))
    }
}

fn array_of(t: u32) -> &'static str {
    match t {
        T_STRING => "array of string",
        T_F32 => "array of f32",
        _ => "array of integers",
    }
}

fn wrong(key: &str, expected: &'static str, found: u32, elem: Option<u32>) -> GgufError {
    let found = match elem {
        Some(e) => format!("array of {}", type_name(e)),
        None => type_name(found).to_string(),
    };
    GgufError::WrongType { key: key.to_string(), expected, found }
}

/// Read the header and the `tokenizer.ggml.*` keys of a GGUF file (module docs).
pub fn read(bytes: &[u8]) -> Result<GgufVocab, GgufError> {
    let mut c = Cursor { b: bytes, at: 0 };
    let magic = c.take(4, "the magic")?;
    if magic != GGUF_MAGIC {
        return Err(GgufError::BadMagic(magic.try_into().expect("4 bytes")));
    }
    let version = c.u32("the version")?;
    if version.swap_bytes() <= 3 && version > 3 {
        return Err(GgufError::BigEndian);
    }
    if !GGUF_VERSIONS.contains(&version) {
        return Err(GgufError::Version(version));
    }
    let _tensors = c.u64("the tensor count")?;
    let kv_count = c.u64("the key/value count")?;
    let mut v = GgufVocab::default();
    let mut have_model = false;
    for _ in 0..kv_count {
        let key = std::str::from_utf8(c.string("a key")?)
            .map_err(|_| GgufError::Invalid(format!("key at byte {} is not UTF-8", c.at)))?
            .to_string();
        let t = c.u32(&key)?;
        match key.as_str() {
            "general.name" | "tokenizer.ggml.model" | "tokenizer.ggml.pre" => {
                if t != T_STRING {
                    return Err(wrong(&key, "string", t, None));
                }
                let s = String::from_utf8_lossy(c.string(&key)?).into_owned();
                match key.as_str() {
                    "general.name" => v.name = Some(s),
                    "tokenizer.ggml.model" => {
                        v.model = s;
                        have_model = true;
                    }
                    _ => v.pre = Some(s),
                }
            }
            "tokenizer.ggml.tokens" | "tokenizer.ggml.merges" => {
                let (_, n) = c.array(t, &key, T_STRING)?;
                let mut list = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    list.push(c.string(&key)?.to_vec());
                }
                if key.ends_with("tokens") {
                    v.tokens = list;
                } else {
                    v.merges = Some(list);
                }
            }
            "tokenizer.ggml.token_type" => {
                let (et, n) = c.array(t, &key, T_I32)?;
                let mut list = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    let x = c.int(et, &key).map_err(|_| GgufError::Invalid(format!("{key}: a negative type")))?;
                    list.push(i32::try_from(x).unwrap_or(-1));
                }
                v.token_type = list;
            }
            "tokenizer.ggml.scores" => {
                let (_, n) = c.array(t, &key, T_F32)?;
                let mut list = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    list.push(f32::from_le_bytes(c.take(4, &key)?.try_into().expect("4 bytes")));
                }
                v.scores = Some(list);
            }
            "tokenizer.ggml.bos_token_id"
            | "tokenizer.ggml.eos_token_id"
            | "tokenizer.ggml.eot_token_id"
            | "tokenizer.ggml.eom_token_id" => {
                let id = c.int(t, &key)?;
                let id = u32::try_from(id).map_err(|_| GgufError::Invalid(format!("{key}: id {id} out of range")))?;
                match key.as_str() {
                    "tokenizer.ggml.bos_token_id" => v.bos = Some(id),
                    "tokenizer.ggml.eos_token_id" => v.eos = Some(id),
                    "tokenizer.ggml.eot_token_id" => v.eot = Some(id),
                    _ => v.eom = Some(id),
                }
            }
            "tokenizer.ggml.add_bos_token" => {
                if t != T_BOOL {
                    return Err(wrong(&key, "bool", t, None));
                }
                v.add_bos = Some(c.take(1, &key)?[0] != 0);
            }
            _ => c.skip(t, &key)?,
        }
    }
    v.header_bytes = c.at as u64;
    if !have_model {
        return Err(GgufError::Missing("tokenizer.ggml.model"));
    }
    if v.tokens.is_empty() {
        return Err(GgufError::Missing("tokenizer.ggml.tokens"));
    }
    if v.tokens.len() > MAX_VOCAB_SIZE {
        return Err(GgufError::Invalid(format!("{} tokens (limit {MAX_VOCAB_SIZE})", v.tokens.len())));
    }
    if v.token_type.is_empty() {
        v.token_type = vec![token_type::NORMAL; v.tokens.len()];
    }
    if v.token_type.len() != v.tokens.len() {
        return Err(GgufError::Invalid(format!(
            "tokenizer.ggml.token_type has {} entries for {} tokens",
            v.token_type.len(),
            v.tokens.len()
        )));
    }
    if let Some(s) = &v.scores {
        if s.len() != v.tokens.len() {
            return Err(GgufError::Invalid(format!(
                "tokenizer.ggml.scores has {} entries for {} tokens",
                s.len(),
                v.tokens.len()
            )));
        }
    }
    Ok(v)
}

/// The exact bytes, special flags and end tokens of a GGUF vocabulary (module docs).
pub(crate) struct Derived {
    pub family: Family,
    pub bytes: Vec<Vec<u8>>,
    pub special: Vec<bool>,
    pub eos: Vec<u32>,
    pub byte_fallback_ids: [Option<u32>; 256],
    /// The text of the special tokens (control tokens and the like), by id.
    pub names: Vec<(String, u32)>,
}

pub(crate) fn derive(g: &GgufVocab) -> Result<Derived, GgufError> {
    use token_type::{BYTE, CONTROL, NORMAL, UNDEFINED, UNKNOWN, UNUSED, USER_DEFINED};
    let family = match g.model.as_str() {
        "gpt2" => Family::ByteLevel,
        "llama" => Family::SentencePiece,
        other => return Err(GgufError::UnsupportedModel(other.to_string())),
    };
    let inverse = byte_level_inverse();
    let n = g.tokens.len();
    let (mut bytes, mut special) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut byte_fallback_ids = [None; 256];
    for (id, (tok, &ty)) in g.tokens.iter().zip(&g.token_type).enumerate() {
        let text = || {
            std::str::from_utf8(tok)
                .map_err(|_| GgufError::Invalid(format!("token {id} ({tok:?}) of type {ty} is not UTF-8")))
        };
        let (b, sp) = match ty {
            NORMAL => match family {
                Family::ByteLevel => {
                    let mut out = Vec::with_capacity(tok.len());
                    for ch in text()?.chars() {
                        let b = inverse.get(ch as usize).copied().flatten().ok_or_else(|| {
                            GgufError::Invalid(format!(
                                "token {id} ({:?}) has a character outside the byte-level alphabet",
                                String::from_utf8_lossy(tok)
                            ))
                        })?;
                        out.push(b);
                    }
                    (out, false)
                }
                Family::SentencePiece => (text()?.replace(METASPACE, " ").into_bytes(), false),
            },
            BYTE => {
                let b = std::str::from_utf8(tok).ok().and_then(byte_token).ok_or_else(|| {
                    GgufError::Invalid(format!("byte token {id} is {:?}, not <0xNN>", String::from_utf8_lossy(tok)))
                })?;
                byte_fallback_ids[b as usize].get_or_insert(id as u32);
                (vec![b], false)
            }
            USER_DEFINED => (text()?.as_bytes().to_vec(), false),
            CONTROL | UNKNOWN | UNUSED | UNDEFINED => (Vec::new(), true),
            other => return Err(GgufError::Invalid(format!("token {id} has unknown token type {other}"))),
        };
        let sp = sp
            || (family == Family::SentencePiece && crate::bytes::SP_CONTROL.contains(&&*String::from_utf8_lossy(tok)));
        bytes.push(if sp { Vec::new() } else { b });
        special.push(sp);
    }
    let mut eos: Vec<u32> = [g.eos, g.eot, g.eom].into_iter().flatten().collect();
    if eos.is_empty() {
        eos = (0..n)
            .filter(|&i| {
                g.token_type[i] == CONTROL && WELL_KNOWN_EOS.contains(&&*String::from_utf8_lossy(&g.tokens[i]))
            })
            .map(|i| i as u32)
            .collect();
    }
    eos.sort_unstable();
    eos.dedup();
    for &e in &eos {
        if e as usize >= n {
            return Err(GgufError::Invalid(format!("end token id {e} is out of range ({n} tokens)")));
        }
        special[e as usize] = true;
        bytes[e as usize].clear();
    }
    // Trailing padding of the embedding matrix: ids that can never be text.
    let mut keep = n;
    while keep > 1
        && matches!(g.token_type[keep - 1], UNKNOWN | UNUSED | UNDEFINED)
        && !eos.contains(&(keep as u32 - 1))
    {
        keep -= 1;
    }
    bytes.truncate(keep);
    special.truncate(keep);
    let names = (0..keep)
        .filter(|&i| special[i])
        .filter_map(|i| std::str::from_utf8(&g.tokens[i]).ok().map(|s| (s.to_string(), i as u32)))
        .collect();
    Ok(Derived { family, bytes, special, eos, byte_fallback_ids, names })
}

/// An exact encoder for a GGUF vocabulary, as a `tokenizers` pipeline built from the file's
/// tokens: byte-level BPE over the normal tokens and the merges (`gpt2`), or a Unigram model
/// over the tokens and scores with byte fallback (`llama`). It need not split text the way
/// llama.cpp does; [`crate::Tokenizer::encode`] checks that the tokens spell the text.
pub(crate) fn encoder(g: &GgufVocab, d: &Derived) -> Result<tokenizers::Tokenizer, VocabError> {
    use token_type::{BYTE, NORMAL, UNKNOWN};
    let text = |t: &[u8]| String::from_utf8_lossy(t).into_owned();
    let root: Value = match d.family {
        Family::ByteLevel => {
            let mut vocab = serde_json::Map::new();
            for (id, (tok, &ty)) in g.tokens.iter().zip(&g.token_type).enumerate() {
                if ty == NORMAL {
                    vocab.insert(text(tok), json!(id));
                }
            }
            let merges: Vec<Value> = g
                .merges
                .iter()
                .flatten()
                .filter_map(|m| {
                    let m = text(m);
                    let (a, b) = m.split_once(' ')?;
                    (vocab.contains_key(a) && vocab.contains_key(b) && vocab.contains_key(&format!("{a}{b}")))
                        .then(|| json!([a, b]))
                })
                .collect();
            json!({
                "version": "1.0",
                "added_tokens": [],
                "normalizer": null,
                "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
                "post_processor": null,
                "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
                "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                          "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
                          "ignore_merges": false, "vocab": vocab, "merges": merges}
            })
        }
        Family::SentencePiece => {
            // Only normal and byte tokens may be chosen: every other piece gets a score no
            // segmentation would pick while another exists.
            let scores = g.scores.clone().unwrap_or_else(|| vec![0.0; g.tokens.len()]);
            let unk = g.token_type.iter().position(|&t| t == UNKNOWN).unwrap_or(0);
            let vocab: Vec<Value> = g
                .tokens
                .iter()
                .zip(&g.token_type)
                .zip(&scores)
                .map(|((tok, &ty), &s)| {
                    let s = if matches!(ty, NORMAL | BYTE) && s.is_finite() { s as f64 } else { -1e9 };
                    json!([text(tok), s])
                })
                .collect();
            json!({
                "version": "1.0",
                "added_tokens": [],
                "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": METASPACE.to_string()},
                "pre_tokenizer": null,
                "post_processor": null,
                "decoder": null,
                "model": {"type": "Unigram", "unk_id": unk, "vocab": vocab, "byte_fallback": true}
            })
        }
    };
    crate::guard("loading the GGUF vocabulary's encoder", || {
        serde_json::from_value(root).map_err(|e| VocabError::Tokenizers(Box::new(e)))
    })
}

/// The vocabulary of `d`.
pub(crate) fn vocabulary(d: &Derived) -> Result<Vocabulary, VocabError> {
    crate::vocabulary(&d.bytes, d.special.clone(), d.eos.clone(), d.names.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GGUF v3 file with the given key/value pairs (already encoded).
    fn file(kvs: &[Vec<u8>]) -> Vec<u8> {
        let mut b = b"GGUF".to_vec();
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&(kvs.len() as u64).to_le_bytes());
        for kv in kvs {
            b.extend_from_slice(kv);
        }
        b
    }
    fn s(x: &str) -> Vec<u8> {
        let mut b = (x.len() as u64).to_le_bytes().to_vec();
        b.extend_from_slice(x.as_bytes());
        b
    }
    fn kv_str(k: &str, v: &str) -> Vec<u8> {
        [s(k), T_STRING.to_le_bytes().to_vec(), s(v)].concat()
    }
    fn kv_strs(k: &str, v: &[&str]) -> Vec<u8> {
        let mut b = [s(k), T_ARRAY.to_le_bytes().to_vec(), T_STRING.to_le_bytes().to_vec()].concat();
        b.extend_from_slice(&(v.len() as u64).to_le_bytes());
        for x in v {
            b.extend_from_slice(&s(x));
        }
        b
    }
    fn kv_i32s(k: &str, v: &[i32]) -> Vec<u8> {
        let mut b = [s(k), T_ARRAY.to_le_bytes().to_vec(), T_I32.to_le_bytes().to_vec()].concat();
        b.extend_from_slice(&(v.len() as u64).to_le_bytes());
        for x in v {
            b.extend_from_slice(&x.to_le_bytes());
        }
        b
    }
    fn kv_u32(k: &str, v: u32) -> Vec<u8> {
        [s(k), T_U32.to_le_bytes().to_vec(), v.to_le_bytes().to_vec()].concat()
    }

    fn tiny() -> Vec<u8> {
        file(&[
            kv_str("general.architecture", "gpt2"),
            kv_str("tokenizer.ggml.model", "gpt2"),
            kv_strs("tokenizer.ggml.tokens", &["a", "b", "Ġa", "ab", "<|end|>", "<x>", "[PAD6]"]),
            kv_i32s("tokenizer.ggml.token_type", &[1, 1, 1, 1, 3, 4, 5]),
            kv_strs("tokenizer.ggml.merges", &["a b", "Ġ a"]),
            kv_u32("tokenizer.ggml.eos_token_id", 4),
        ])
    }

    #[test]
    fn a_small_byte_level_vocabulary_by_token_type() {
        let g = read(&tiny()).unwrap();
        let d = derive(&g).unwrap();
        // The trailing unused token is padding; the end token is special without bytes;
        // the user-defined token is its raw text; `Ġ` is a space.
        assert_eq!(
            d.bytes,
            vec![b"a".to_vec(), b"b".to_vec(), b" a".to_vec(), b"ab".to_vec(), vec![], b"<x>".to_vec()]
        );
        assert_eq!(d.special, vec![false, false, false, false, true, false]);
        assert_eq!(d.eos, vec![4]);
    }

    #[test]
    fn every_prefix_and_every_byte_flip_is_an_error_or_a_vocabulary_never_a_panic() {
        let f = tiny();
        for n in 0..f.len() {
            assert!(read(&f[..n]).is_err(), "prefix {n}");
        }
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..4000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let mut g = f.clone();
            let at = (rng % g.len() as u64) as usize;
            g[at] ^= 1 << ((rng >> 32) % 8);
            if let Ok(v) = read(&g) {
                let _ = derive(&v);
            }
        }
    }

    #[test]
    fn bad_headers_are_named() {
        let mut f = tiny();
        f[0] = b'X';
        assert!(matches!(read(&f), Err(GgufError::BadMagic(_))));
        let mut f = tiny();
        f[4..8].copy_from_slice(&1u32.to_le_bytes());
        assert_eq!(read(&f).unwrap_err(), GgufError::Version(1));
        let mut f = tiny();
        f[4..8].copy_from_slice(&3u32.to_be_bytes());
        assert_eq!(read(&f).unwrap_err(), GgufError::BigEndian);
        // tokens as an array of u32: the wrong type, named.
        let f = file(&[kv_str("tokenizer.ggml.model", "gpt2"), kv_i32s("tokenizer.ggml.tokens", &[1, 2])]);
        let e = read(&f).unwrap_err();
        assert!(matches!(&e, GgufError::WrongType { key, .. } if key == "tokenizer.ggml.tokens"), "{e}");
        let f = file(&[kv_str("tokenizer.ggml.model", "bert"), kv_strs("tokenizer.ggml.tokens", &["a"])]);
        assert_eq!(derive(&read(&f).unwrap()).err(), Some(GgufError::UnsupportedModel("bert".into())));
        // A forged array length cannot allocate beyond the file.
        let mut f = file(&[kv_str("tokenizer.ggml.model", "gpt2"), kv_strs("tokenizer.ggml.tokens", &["a"])]);
        let at = f.len() - 8 - 1 - 8;
        f[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(read(&f), Err(GgufError::Truncated { .. })));
    }
}
