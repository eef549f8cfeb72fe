//! Exact token bytes from a Hugging Face `tokenizer.json` (ARCHITECTURE.md "Crates").
//!
//! This crate is the only one in the workspace that depends on the `tokenizers` crate. It turns a
//! `tokenizer.json` (plus, optionally, the `tokenizer_config.json` / `special_tokens_map.json` /
//! `generation_config.json` beside it) into a [`dwac_runtime::Vocabulary`]: the exact bytes of every
//! token id, a special flag per id, and the end-of-sequence ids. It also encodes text into tokens
//! whose bytes concatenate back to the text exactly, and fingerprints the vocabulary.
//!
//! # Families and byte derivation rules
//!
//! The family is detected from the file's structure (`model.type`, `normalizer`, `pre_tokenizer`,
//! `decoder`, `model.byte_fallback`), never from its name:
//!
//! * **Byte-level** (GPT-2, Llama-3, Qwen, DeepSeek): a `ByteLevel` component in the pre-tokenizer
//!   or the decoder. Every character of a model-vocabulary token string is mapped through the
//!   inverse of GPT-2's `bytes_to_unicode` table (`Ġ` → `0x20`, `Ċ` → `0x0A`, printable Latin-1
//!   to itself, ...). A character outside that 256-character alphabet is an error
//!   ([`VocabError::NotByteLevel`]) unless the id is also an added token (see below).
//! * **SentencePiece-style** (Llama-2, Mistral, Phi-3): a `Metaspace` pre-tokenizer or decoder, a
//!   `Replace(" " → "▁")` normalizer or a `Replace("▁" → " ")` decoder. The metaspace character
//!   (`▁` unless the file names another) becomes a space; with byte fallback (`model.byte_fallback`
//!   or a `ByteFallback` decoder) a token spelled exactly `<0xNN>` is the single byte `NN`;
//!   everything else is the token string's UTF-8. The SentencePiece control tokens `<unk>`, `<s>`
//!   and `</s>` are flagged special even when the file's `added_tokens` entry says otherwise
//!   (Phi-3.5 marks `</s>` non-special).
//! * Anything else — both families at once, neither, `WordPiece`/`WordLevel` models, or BPE with a
//!   `continuing_subword_prefix`/`end_of_word_suffix` — is refused with
//!   [`VocabError::UnsupportedTokenizer`] / [`VocabError::UnsupportedModel`]: there is no exact,
//!   unambiguous byte string for such tokens.
//!
//! **Added tokens** (`added_tokens`) override the model vocabulary for their id. A non-special
//! added token's bytes are what the tokenizer's own decoder renders for it: in the SentencePiece
//! family the metaspace becomes a space and, with byte fallback, a token spelled exactly `<0xNN>`
//! is the byte `NN` (Gemma-style `▁▁▁▁` is four spaces); in the byte-level family every character
//! is mapped through the byte-level alphabet if all of them are in it (`ĠĠ` is two spaces), else
//! the content's UTF-8 stands, as HF's `ByteLevel` decoder does (Qwen3's `<think>` is the 7 bytes
//! `<think>`, DeepSeek's `<｜fim▁hole｜>` its UTF-8). **Special tokens have no bytes** (they are
//! never text) and are flagged special, so a mask never allows them unless they are end tokens;
//! the model's `unk_token` and every EOS id are special too.
//!
//! The decoder is checked component by component: `ByteLevel`, `Metaspace`, `ByteFallback`, `Fuse`,
//! `Replace` of the metaspace by a space, and `Strip` (which acts on the whole decoded text, e.g.
//! Llama-2's removal of the first space, never on a token) are honoured; any other component
//! would give some token bytes other than the decoder's, and the tokenizer is refused with
//! [`VocabError::UnsupportedTokenizer`] naming the component (and, for `Replace`, a token it
//! changes).
//!
//! The vocabulary size is `max id + 1` over the model vocabulary and the added tokens. An id that
//! has no token gets empty bytes and is flagged special. A model's embedding matrix may have more
//! rows than that (Phi-3.5: 32,011 ids here, 32,064 logits); callers pad masks to the model's size.
//!
//! # End-of-sequence tokens
//!
//! The side files name them; only without any, well-known special end tokens are used. The
//! full rule is at [`Tokenizer::from_parts`]. For the tokenizers the tests ship with: GPT-2 (no
//! side file) `<|endoftext|>` 50256 by the fallback; Qwen2 `<|endoftext|>` 151643 and Qwen3
//! `<|im_end|>` 151645 (each per its `tokenizer_config.json`; the other one is special but not
//! EOS); DeepSeek-R1 `<｜end▁of▁sentence｜>` 1; Phi-3.5-mini `<|endoftext|>` 32000. A
//! `generation_config.json` beside the file adds its ids (instruct models often list several,
//! e.g. both `<|im_end|>` and `<|endoftext|>`); none ships with the test tokenizers.
//!
//! # Encoding
//!
//! [`Tokenizer::encode`] runs the `tokenizers` pipeline on an edited copy of the file so that the
//! result spells the text byte for byte: no special tokens (the encoder does not match special
//! added tokens, so `<|endoftext|>` in the text is spelled with ordinary tokens; non-special added
//! tokens such as Qwen3's `<think>` are used), no post-processor, no truncation or
//! padding, no `lstrip`/`rstrip` whitespace swallowing by added tokens, no Unicode normalization
//! (`NFC`/`NFD`/`NFKC`/`NFKD` are dropped — Qwen's NFC would otherwise rewrite combining marks), no
//! prepended `▁` (the `Prepend` normalizer is dropped and `Metaspace` gets `prepend_scheme:
//! "never"`). In SentencePiece-style tokenizers a literal metaspace character in the text (which
//! the model cannot tell from a space) is spelled with its byte-fallback tokens. The result is
//! always checked: if the concatenated bytes differ from the text (e.g. a normalizer we keep, such
//! as `Lowercase`, rewrote it), encoding fails with [`VocabError::RoundTrip`] instead of returning
//! a wrong answer; a character the tokenizer can only spell with a special token (a vocabulary
//! without `{` and without byte fallback gives `<unk>`) fails with [`VocabError::Unrepresentable`],
//! naming the character and its byte offset. An added token whose bytes differ from its content
//! (a byte-level `ĠĠ`) is never matched on its content's characters (which it does not spell);
//! the model's merges still produce it from the text it stands for. The `tokenizers` crate numbers added tokens by position rather than by the
//! file's ids; a file where the two disagree is refused at load time.

#![deny(missing_docs)]

mod bytes;
mod eos;
mod fingerprint;
pub mod gguf;

use std::fmt;
use std::path::{Path, PathBuf};

use dwac_runtime::Vocabulary;
use serde_json::Value;

pub use eos::WELL_KNOWN_EOS;
pub use fingerprint::FINGERPRINT_MAGIC;
pub use gguf::GgufError;

/// The embedded default tokenizer: GPT-2's `tokenizer.json` (minified), zstd-compressed.
/// Its license is `assets/gpt2.LICENSE`.
static EMBEDDED_GPT2: &[u8] = include_bytes!("../assets/gpt2.tokenizer.json.zst");

/// Token ids must be below this (4,194,304). The largest real vocabularies have about 262k
/// tokens; a file claiming far more is refused before anything that large is allocated.
pub const MAX_VOCAB_SIZE: usize = 1 << 22;

/// Errors from loading a tokenizer or encoding text.
#[derive(thiserror::Error, Debug)]
#[non_exhaustive]
pub enum VocabError {
    /// A file cannot be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A `tokenizer.json` or a side file is not valid JSON.
    #[error("{what} is not valid JSON: {source}")]
    Json {
        /// The file: a side file's name, or `NAME: tokenizer.json`.
        what: String,
        /// The JSON parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A file is valid JSON but not of the shape a tokenizer or side file has.
    #[error("{what}: {detail}")]
    Malformed {
        /// The file (`tokenizer.json` or a side file's name).
        what: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The `tokenizer.json` model type is neither BPE nor Unigram; holds the type.
    #[error("tokenizer model type {0:?} is not supported (supported: BPE, Unigram)")]
    UnsupportedModel(String),
    /// The tokenizer's components give no exact, unambiguous byte string per token (no family or
    /// both, an unsupported decoder component, BPE affixes, ...); holds why.
    #[error("cannot derive exact token bytes: {0}")]
    UnsupportedTokenizer(String),
    /// A byte-level token string has a character outside the 256-character byte-level alphabet.
    #[error("token {id} ({token:?}) has a character outside the byte-level alphabet")]
    NotByteLevel {
        /// The token's id.
        id: u32,
        /// The token string.
        token: String,
    },
    /// Two token strings have the same id.
    #[error("token id {id} appears twice ({first:?} and {second:?})")]
    DuplicateId {
        /// The id.
        id: u32,
        /// The first token string with that id.
        first: String,
        /// The second token string with that id.
        second: String,
    },
    /// The vocabulary exceeds a size limit (token ids at or above [`MAX_VOCAB_SIZE`], or more
    /// than `u32::MAX` bytes of token text); holds what exceeds it.
    #[error("vocabulary too large: {0}")]
    TooLarge(String),
    /// A side file names an end-of-sequence token that is neither an added token nor in the
    /// model vocabulary.
    #[error("{file}: end-of-sequence token {content:?} is not in the vocabulary")]
    EosNotFound {
        /// The side file's name.
        file: String,
        /// The token content it names.
        content: String,
    },
    /// An end-of-sequence id is not below the vocabulary size.
    #[error("{file}: end-of-sequence token id {id} is out of range (vocabulary size {size})")]
    EosOutOfRange {
        /// The side file naming the id, or `override` for [`Tokenizer::with_eos`].
        file: String,
        /// The id.
        id: u64,
        /// The vocabulary size (number of ids).
        size: usize,
    },
    /// No end-of-sequence token: no side file names one and no special added token is one of
    /// [`WELL_KNOWN_EOS`] (or [`Tokenizer::with_eos`] got an empty list).
    #[error(
        "no end-of-sequence token: no tokenizer_config.json, special_tokens_map.json or \
         generation_config.json names one, and no special added token is one of the well-known \
         end tokens ({})",
        WELL_KNOWN_EOS.join(", ")
    )]
    NoEos,
    /// The `tokenizers` crate refused the edited tokenizer, failed to encode, or panicked;
    /// holds its error.
    #[error("the tokenizers crate rejected the tokenizer: {0}")]
    Tokenizers(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The encoding's token bytes do not spell the text exactly.
    #[error(
        "encoding is not exact: the tokens' bytes differ from the text at byte {offset} \
         (text {text_len} bytes, tokens {tokens_len} bytes)"
    )]
    RoundTrip {
        /// Byte offset in the text of the first difference.
        offset: usize,
        /// Length of the text, in bytes.
        text_len: usize,
        /// Length of the concatenated token bytes, in bytes.
        tokens_len: usize,
    },
    /// The encoding holds a special or out-of-range token at a place that is not the start of a
    /// character of the text (its end, or inside a character).
    #[error("encoding produced token {id}, which is special or out of range")]
    SpecialInEncoding {
        /// The token id.
        id: u32,
    },
    /// A character of the text has no spelling in ordinary tokens: the tokenizer spells it with
    /// a special token (e.g. `<unk>`).
    #[error(
        "text cannot be represented exactly: character {ch:?} at byte {offset} has no token \
         (the tokenizer spells it with the special token {id})"
    )]
    Unrepresentable {
        /// The character.
        ch: char,
        /// Its byte offset in the text.
        offset: usize,
        /// The special token the tokenizer spells it with.
        id: u32,
    },
    /// The text holds the metaspace character, which a SentencePiece-style tokenizer can only
    /// spell with byte-fallback tokens, and some byte of it has no `<0xNN>` token.
    #[error(
        "text contains {ch:?}, which this tokenizer can only spell with byte-fallback tokens, \
         and it has none for every byte of it"
    )]
    NoByteFallback {
        /// The metaspace character.
        ch: char,
    },
    /// A GGUF file's vocabulary cannot be read.
    #[error("{file}: {source}")]
    Gguf {
        /// The file's path, or the name given to [`Tokenizer::from_gguf_bytes`].
        file: String,
        /// What is wrong with the file.
        #[source]
        source: GgufError,
    },
    /// The embedded GPT-2 tokenizer does not decompress.
    #[error("the embedded tokenizer is corrupt: {0}")]
    Embedded(#[source] std::io::Error),
}

/// The tokenizer family, detected from the file's structure (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// GPT-2 style byte-level BPE (`ByteLevel` pre-tokenizer / decoder).
    ByteLevel,
    /// SentencePiece style with a metaspace character and optional `<0xNN>` byte fallback.
    SentencePiece,
}

/// Optional files that sit beside `tokenizer.json` and name end-of-sequence tokens.
#[derive(Clone, Copy, Debug, Default)]
pub struct SideFiles<'a> {
    /// `tokenizer_config.json`: `"eos_token"`, a string or `{"content": ...}`.
    pub tokenizer_config: Option<&'a [u8]>,
    /// `special_tokens_map.json`: `"eos_token"`, a string or `{"content": ...}`.
    pub special_tokens_map: Option<&'a [u8]>,
    /// `generation_config.json`: `"eos_token_id"`, an integer or a list of integers.
    pub generation_config: Option<&'a [u8]>,
}

/// A loaded tokenizer: exact token bytes, special flags, end tokens, fingerprint and an exact encoder.
#[derive(Clone)]
pub struct Tokenizer {
    name: String,
    family: Family,
    vocab: Vocabulary,
    fingerprint: [u8; 32],
    encoder: tokenizers::Tokenizer,
    /// SentencePiece family: the metaspace character and the byte-fallback ids spelling it
    /// (`None` if some byte has no `<0xNN>` token).
    metaspace: Option<(char, Option<Vec<u32>>)>,
}

impl fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokenizer")
            .field("name", &self.name)
            .field("family", &self.family)
            .field("vocab_size", &self.vocab.len())
            .field("eos", &self.vocab.eos())
            .field("fingerprint", &self.fingerprint_hex())
            .finish_non_exhaustive()
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, VocabError> {
    std::fs::read(path).map_err(|source| VocabError::Io { path: path.to_path_buf(), source })
}

/// Does the file at `path` start with the GGUF magic?
fn is_gguf(path: &Path) -> Result<bool, VocabError> {
    use std::io::Read;
    let io = |source| VocabError::Io { path: path.to_path_buf(), source };
    let mut magic = [0u8; 4];
    let mut f = std::fs::File::open(path).map_err(io)?;
    let mut n = 0;
    while n < 4 {
        match f.read(&mut magic[n..]).map_err(io)? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n == 4 && magic == gguf::GGUF_MAGIC)
}

fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, VocabError> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(VocabError::Io { path: path.to_path_buf(), source }),
    }
}

impl Tokenizer {
    /// Load an HF `tokenizer.json`. The files `tokenizer_config.json`, `special_tokens_map.json`
    /// and `generation_config.json` in the same directory are read if present (they name the end
    /// tokens, see [`Tokenizer::from_parts`]). The name is the directory's name when the file is
    /// called `tokenizer.json` (`.../qwen3/tokenizer.json` → `qwen3`), else the file name.
    ///
    /// A GGUF model file (recognized by its magic, whatever its name) is read with
    /// [`Tokenizer::from_gguf`].
    pub fn from_file(path: &Path) -> Result<Tokenizer, VocabError> {
        if is_gguf(path)? {
            return Tokenizer::from_gguf(path);
        }
        let json = read_file(path)?;
        let dir = path.parent().unwrap_or_else(|| Path::new(""));
        let cfg = read_optional(&dir.join("tokenizer_config.json"))?;
        let stm = read_optional(&dir.join("special_tokens_map.json"))?;
        let gen = read_optional(&dir.join("generation_config.json"))?;
        let file_name = path.file_name().map(|s| s.to_string_lossy().into_owned());
        let name = match file_name.as_deref() {
            Some("tokenizer.json") => dir
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "tokenizer.json".to_string()),
            Some(n) => n.to_string(),
            None => path.display().to_string(),
        };
        let side = SideFiles {
            tokenizer_config: cfg.as_deref(),
            special_tokens_map: stm.as_deref(),
            generation_config: gen.as_deref(),
        };
        Tokenizer::from_parts(&json, side, &name)
    }

    /// Load from the bytes of a `tokenizer.json` and, optionally, of its `tokenizer_config.json`.
    pub fn from_json_bytes(json: &[u8], config_json: Option<&[u8]>, name: &str) -> Result<Tokenizer, VocabError> {
        Tokenizer::from_parts(json, SideFiles { tokenizer_config: config_json, ..SideFiles::default() }, name)
    }

    /// Load from the bytes of a `tokenizer.json` and of whichever side files exist.
    ///
    /// **End-of-sequence rule.** The EOS ids are the union of
    /// 1. `tokenizer_config.json` → `"eos_token"` (a string, or an object with `"content"`),
    /// 2. `special_tokens_map.json` → `"eos_token"` (same shapes),
    /// 3. `generation_config.json` → `"eos_token_id"` (an integer or a list of integers).
    ///
    /// A token named by content is looked up among the added tokens first, then in the model
    /// vocabulary (by its token string); a name that is not found, or an id out of range, is an
    /// error — a side file that disagrees with the tokenizer is never silently ignored. `null` or
    /// a missing key contributes nothing.
    ///
    /// Only if 1–3 give no id at all: every *special* added token whose content is one of
    /// [`WELL_KNOWN_EOS`] (`<|endoftext|>`, `</s>`, `<|im_end|>`, `<｜end▁of▁sentence｜>`,
    /// `<|end|>`, `<|eot_id|>`, ...). If that is empty too: [`VocabError::NoEos`].
    ///
    /// EOS tokens are always flagged special.
    pub fn from_parts(json: &[u8], side: SideFiles<'_>, name: &str) -> Result<Tokenizer, VocabError> {
        let root: Value = serde_json::from_slice(json)
            .map_err(|source| VocabError::Json { what: format!("{name}: tokenizer.json"), source })?;
        let table = bytes::derive(&root)?;
        let eos = eos::resolve(&table, side)?;
        let mut special = table.special.clone();
        for &e in &eos {
            if let Some(s) = special.get_mut(e as usize) {
                *s = true;
            }
        }
        let names = table.added.iter().map(|a| (a.content.clone(), a.id)).chain(texts(&table.bytes));
        let vocab = vocabulary(&table.bytes, special, eos, names)?;
        let encoder = build_encoder(root, &vocab, &table)?;
        let metaspace = match table.family {
            Family::ByteLevel => None,
            Family::SentencePiece => {
                let ch = table.metaspace;
                let mut buf = [0u8; 4];
                let ids: Option<Vec<u32>> =
                    ch.encode_utf8(&mut buf).bytes().map(|b| table.byte_fallback_ids[b as usize]).collect();
                Some((ch, ids))
            }
        };
        let fingerprint = fingerprint::compute(&vocab);
        Ok(Tokenizer { name: name.to_string(), family: table.family, vocab, fingerprint, encoder, metaspace })
    }

    /// Load the vocabulary of a GGUF model file (llama.cpp), memory-mapped: only the header and
    /// the key/value list are read, never the tensors. Token bytes follow llama.cpp's token
    /// types ([`gguf`] module docs). The name is the file name without `.gguf`.
    pub fn from_gguf(path: &Path) -> Result<Tokenizer, VocabError> {
        let io = |source| VocabError::Io { path: path.to_path_buf(), source };
        let file = std::fs::File::open(path).map_err(io)?;
        // SAFETY: the map is read-only and only read during this call; a file changed under us
        // can give wrong bytes (caught by the checks) but every read is bounds-checked.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        let name = path.file_name().map_or_else(|| path.display().to_string(), |s| s.to_string_lossy().into_owned());
        let name = name.strip_suffix(".gguf").unwrap_or(&name).to_string();
        Tokenizer::gguf(&map, &name, &path.display().to_string())
    }

    /// As [`Tokenizer::from_gguf`], from the file's bytes (at least its header and key/value
    /// list).
    pub fn from_gguf_bytes(bytes: &[u8], name: &str) -> Result<Tokenizer, VocabError> {
        Tokenizer::gguf(bytes, name, name)
    }

    /// A GGUF vocabulary named `name`; errors name `file`.
    fn gguf(bytes: &[u8], name: &str, file: &str) -> Result<Tokenizer, VocabError> {
        let err = |source| VocabError::Gguf { file: file.to_string(), source };
        let g = gguf::read(bytes).map_err(err)?;
        let d = gguf::derive(&g).map_err(err)?;
        let vocab = gguf::vocabulary(&d)?;
        let encoder = gguf::encoder(&g, &d)?;
        let metaspace = match d.family {
            Family::ByteLevel => None,
            Family::SentencePiece => {
                let mut buf = [0u8; 4];
                let ids: Option<Vec<u32>> =
                    bytes::METASPACE.encode_utf8(&mut buf).bytes().map(|b| d.byte_fallback_ids[b as usize]).collect();
                Some((bytes::METASPACE, ids))
            }
        };
        let fingerprint = fingerprint::compute(&vocab);
        Ok(Tokenizer { name: name.to_string(), family: d.family, vocab, fingerprint, encoder, metaspace })
    }

    /// The embedded default tokenizer: GPT-2 (50,257 tokens, EOS `<|endoftext|>` = 50256),
    /// named `gpt2`.
    pub fn default_embedded() -> Result<Tokenizer, VocabError> {
        let json = zstd::stream::decode_all(EMBEDDED_GPT2).map_err(VocabError::Embedded)?;
        Tokenizer::from_parts(&json, SideFiles::default(), "gpt2")
    }

    /// Replace the end-of-sequence ids (e.g. from a command-line override). The new EOS ids are
    /// flagged special; the fingerprint is recomputed. (If an ordinary text token becomes an EOS
    /// token this way, [`Tokenizer::encode`] refuses texts whose encoding needs it.)
    pub fn with_eos(mut self, eos: &[u32]) -> Result<Tokenizer, VocabError> {
        if eos.is_empty() {
            return Err(VocabError::NoEos);
        }
        let size = self.vocab.len();
        for &e in eos {
            if e as usize >= size {
                return Err(VocabError::EosOutOfRange { file: "override".into(), id: e as u64, size });
            }
        }
        let mut special: Vec<bool> = (0..self.vocab.len() as u32).map(|id| self.vocab.is_special(id)).collect();
        for &e in eos {
            if let Some(s) = special.get_mut(e as usize) {
                *s = true;
            }
        }
        let tokens: Vec<Vec<u8>> =
            (0..size as u32).map(|i| self.vocab.token_bytes(i).unwrap_or_default().to_vec()).collect();
        let names: Vec<(String, u32)> =
            self.vocab.special_names().iter().map(|(n, id)| (n.to_string(), *id)).chain(texts(&tokens)).collect();
        self.vocab = vocabulary(&tokens, special, eos.to_vec(), names)?;
        self.fingerprint = fingerprint::compute(&self.vocab);
        Ok(self)
    }

    /// Exact bytes per token id, special flags and EOS ids.
    pub fn vocab(&self) -> &Vocabulary {
        &self.vocab
    }

    /// Consume the tokenizer, keeping only its vocabulary.
    pub fn into_vocab(self) -> Vocabulary {
        self.vocab
    }

    /// The detected family.
    pub fn family(&self) -> Family {
        self.family
    }

    /// SHA-256 of the vocabulary in the layout documented at [`FINGERPRINT_MAGIC`].
    pub fn fingerprint(&self) -> [u8; 32] {
        self.fingerprint
    }

    /// [`Tokenizer::fingerprint`] as 64 lowercase hex digits.
    pub fn fingerprint_hex(&self) -> String {
        fingerprint::hex(&self.fingerprint)
    }

    /// The name given at load time.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Encode `text` with no special tokens and no prepended `▁`/space, such that concatenating
    /// `vocab().token_bytes(id)` over the result reproduces `text`'s bytes exactly. Any other
    /// outcome is an error (module docs, "Encoding").
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, VocabError> {
        let mut ids = Vec::new();
        match &self.metaspace {
            Some((ch, fallback)) => {
                let mut rest = text;
                while let Some(pos) = rest.find(*ch) {
                    self.encode_piece(&rest[..pos], &mut ids)?;
                    match fallback {
                        Some(f) => ids.extend_from_slice(f),
                        None => return Err(VocabError::NoByteFallback { ch: *ch }),
                    }
                    rest = &rest[pos + ch.len_utf8()..];
                }
                self.encode_piece(rest, &mut ids)?;
            }
            None => self.encode_piece(text, &mut ids)?,
        }
        self.check(text.as_bytes(), &ids)?;
        Ok(ids)
    }

    fn encode_piece(&self, piece: &str, ids: &mut Vec<u32>) -> Result<(), VocabError> {
        if piece.is_empty() {
            return Ok(());
        }
        let enc = guard("encoding", || self.encoder.encode(piece, false).map_err(VocabError::Tokenizers))?;
        ids.extend_from_slice(enc.get_ids());
        Ok(())
    }

    /// Check that `ids` are non-special tokens whose bytes spell `text`.
    fn check(&self, text: &[u8], ids: &[u32]) -> Result<(), VocabError> {
        let mut pos = 0usize;
        for &id in ids {
            let Some(b) = self.vocab.token_bytes(id).filter(|_| !self.vocab.is_special(id)) else {
                // The tokens so far spelled `text[..pos]` exactly: the character at `pos` is the one
                // the tokenizer could not spell (e.g. it became `<unk>`).
                let ch = std::str::from_utf8(text.get(pos..).unwrap_or_default())
                    .ok()
                    .or_else(|| {
                        let rest = text.get(pos..).unwrap_or_default();
                        (1..=4).rev().find_map(|n| rest.get(..n).and_then(|r| std::str::from_utf8(r).ok()))
                    })
                    .and_then(|r| r.chars().next());
                return Err(match ch {
                    Some(ch) => VocabError::Unrepresentable { ch, offset: pos, id },
                    None => VocabError::SpecialInEncoding { id },
                });
            };
            let end = pos + b.len();
            if text.get(pos..end) != Some(b) {
                let tokens_len = ids.iter().map(|&i| self.vocab.token_bytes(i).map_or(0, <[u8]>::len)).sum();
                let offset = pos + b.iter().zip(text.get(pos..).unwrap_or(&[])).take_while(|(x, y)| x == y).count();
                return Err(VocabError::RoundTrip { offset, text_len: text.len(), tokens_len });
            }
            pos = end;
        }
        if pos != text.len() {
            return Err(VocabError::RoundTrip { offset: pos, text_len: text.len(), tokens_len: pos });
        }
        Ok(())
    }
}

/// The vocabulary over `tokens`, where special tokens keep no bytes (they are never text);
/// `names` are the text of tokens (special ones are kept as [`Vocabulary::special_names`]).
fn vocabulary(
    tokens: &[Vec<u8>],
    special: Vec<bool>,
    eos: Vec<u32>,
    names: impl IntoIterator<Item = (String, u32)>,
) -> Result<Vocabulary, VocabError> {
    let kept: Vec<Vec<u8>> =
        tokens.iter().zip(&special).map(|(t, &sp)| if sp { Vec::new() } else { t.clone() }).collect();
    let total: usize = kept.iter().map(Vec::len).sum();
    if total > u32::MAX as usize {
        return Err(VocabError::TooLarge(format!("{total} bytes of token text")));
    }
    Ok(Vocabulary::from_tokens(&kept, special, eos).with_special_names(names))
}

/// The text of every token that has UTF-8 bytes, by id.
fn texts(tokens: &[Vec<u8>]) -> impl Iterator<Item = (String, u32)> + '_ {
    tokens
        .iter()
        .enumerate()
        .filter_map(|(i, t)| std::str::from_utf8(t).ok().filter(|s| !s.is_empty()).map(|s| (s.to_string(), i as u32)))
}

/// Run a call into the `tokenizers` crate, turning a panic inside it into an error.
fn guard<T>(what: &str, f: impl FnOnce() -> Result<T, VocabError>) -> Result<T, VocabError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err(VocabError::Tokenizers(format!("the tokenizers crate panicked while {what}").into())))
}

/// Build the exact encoder: an edited copy of the tokenizer (module docs, "Encoding").
fn build_encoder(
    mut root: Value,
    vocab: &Vocabulary,
    table: &bytes::Table,
) -> Result<tokenizers::Tokenizer, VocabError> {
    // An added token that the `tokenizers` crate would match on text other than the bytes it
    // stands for (a byte-level `ĠĠ` is two spaces, but would be matched on the characters `ĠĠ`) is
    // made unmatchable; where the model vocabulary has it, the model still produces it from the
    // right text. (A normalized added token of the SentencePiece family is matched after the
    // normalizer turned spaces into the metaspace, so it matches its own bytes.)
    let unmatchable: std::collections::HashSet<u32> = table
        .added
        .iter()
        .filter(|a| !(a.special || (a.normalized && table.family == Family::SentencePiece)))
        .filter(|a| vocab.token_bytes(a.id).is_some_and(|b| b != a.content.as_bytes()))
        .map(|a| a.id)
        .collect();
    let added_ids: Vec<(String, u32)> = root
        .get("added_tokens")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| Some((t.get("content")?.as_str()?.to_string(), u32::try_from(t.get("id")?.as_u64()?).ok()?)))
        .collect();
    if let Some(obj) = root.as_object_mut() {
        obj.insert("truncation".into(), Value::Null);
        obj.insert("padding".into(), Value::Null);
        obj.insert("post_processor".into(), Value::Null);
        if let Some(n) = obj.get_mut("normalizer") {
            strip_normalizer(n);
        }
        if let Some(p) = obj.get_mut("pre_tokenizer") {
            edit_pre_tokenizer(p);
        }
        if let Some(Value::Array(added)) = obj.get_mut("added_tokens") {
            // Entries stay (the `tokenizers` crate assigns added-token ids by position, not from
            // the file); special ones are skipped by `encode_special_tokens`.
            for t in added.iter_mut() {
                let id = t.get("id").and_then(Value::as_u64);
                let special = id.is_some_and(|id| {
                    id > u32::MAX as u64 || vocab.is_special(id as u32) || unmatchable.contains(&(id as u32))
                });
                if let Some(t) = t.as_object_mut() {
                    t.insert("lstrip".into(), Value::Bool(false));
                    t.insert("rstrip".into(), Value::Bool(false));
                    t.insert("special".into(), Value::Bool(special));
                }
            }
        }
    }
    let mut tok: tokenizers::Tokenizer =
        guard("loading", || serde_json::from_value(root).map_err(|e| VocabError::Tokenizers(Box::new(e))))?;
    for (content, id) in added_ids {
        if tok.token_to_id(&content) != Some(id) {
            return Err(VocabError::UnsupportedTokenizer(format!(
                "added token {content:?} has id {id} in the file but {:?} in the tokenizers crate",
                tok.token_to_id(&content)
            )));
        }
    }
    tok.set_encode_special_tokens(true);
    Ok(tok)
}

/// Drop normalizers that would make the encoding spell something other than the input:
/// `Prepend` (the leading `▁`) and Unicode normalization forms.
fn strip_normalizer(n: &mut Value) {
    const DROP: [&str; 5] = ["Prepend", "NFC", "NFD", "NFKC", "NFKD"];
    let ty = n.get("type").and_then(Value::as_str).unwrap_or("");
    if DROP.contains(&ty) {
        *n = Value::Null;
        return;
    }
    if ty == "Sequence" {
        if let Some(Value::Array(list)) = n.get_mut("normalizers") {
            for item in list.iter_mut() {
                strip_normalizer(item);
            }
            list.retain(|v| !v.is_null());
        }
    }
}

/// Never prepend a space or `▁`.
fn edit_pre_tokenizer(p: &mut Value) {
    let ty = p.get("type").and_then(Value::as_str).unwrap_or("").to_string();
    let Some(obj) = p.as_object_mut() else { return };
    match ty.as_str() {
        "Metaspace" => {
            obj.remove("add_prefix_space");
            obj.insert("prepend_scheme".into(), Value::String("never".into()));
        }
        "ByteLevel" => {
            obj.insert("add_prefix_space".into(), Value::Bool(false));
        }
        "Sequence" => {
            if let Some(Value::Array(list)) = obj.get_mut("pretokenizers") {
                for item in list.iter_mut() {
                    edit_pre_tokenizer(item);
                }
            }
        }
        _ => {}
    }
}
