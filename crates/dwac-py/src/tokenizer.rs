//! `Tokenizer`: a tokenizer's vocabulary, read from `tokenizer.json` or a GGUF file.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::err;

/// A tokenizer's vocabulary: every token's exact bytes, the special tokens, the end tokens.
#[pyclass(module = "dwac._dwac", frozen)]
pub(crate) struct Tokenizer {
    pub(crate) inner: Arc<dwac_vocab::Tokenizer>,
    /// The model's number of logits (`vocab_size`): at least the tokenizer's ids. Ids past the
    /// tokenizer's (padded embedding rows) are never allowed. Not part of the fingerprint.
    pub(crate) width: usize,
}

impl Tokenizer {
    /// `t` with masks `vocab_size` wide (default: its own number of ids).
    fn wrap(t: dwac_vocab::Tokenizer, vocab_size: Option<usize>) -> PyResult<Tokenizer> {
        Tokenizer::widened(Arc::new(t), vocab_size)
    }

    fn widened(t: Arc<dwac_vocab::Tokenizer>, vocab_size: Option<usize>) -> PyResult<Tokenizer> {
        let n = t.vocab().len();
        let width = match vocab_size {
            None => n,
            Some(w) if w >= n && w <= u32::MAX as usize => w,
            Some(w) => {
                return Err(err(format!(
                    "vocab_size {w} is smaller than the tokenizer's {n} token ids ({:?}); it must be the \
                     model's number of logits, at least the tokenizer's ids",
                    t.name()
                )))
            }
        };
        Ok(Tokenizer { inner: t, width })
    }
}

#[pymethods]
impl Tokenizer {
    /// Load a Hugging Face `tokenizer.json` (its `tokenizer_config.json` beside it, if any,
    /// names the end token), or a GGUF model file (recognized by its magic).
    #[staticmethod]
    #[pyo3(signature = (path, vocab_size = None))]
    fn from_file(py: Python<'_>, path: std::path::PathBuf, vocab_size: Option<usize>) -> PyResult<Tokenizer> {
        let t = py.detach(|| dwac_vocab::Tokenizer::from_file(&path)).map_err(|e| match e {
            // These name the file already.
            dwac_vocab::VocabError::Gguf { .. } | dwac_vocab::VocabError::Io { .. } => err(e.to_string()),
            e => err(format!("{}: {e}", path.display())),
        })?;
        Tokenizer::wrap(t, vocab_size)
    }

    /// The vocabulary inside a GGUF model file (llama.cpp), read through a memory map: only the
    /// header, never the weights. Token bytes follow llama.cpp's token types.
    #[staticmethod]
    #[pyo3(signature = (path, vocab_size = None))]
    fn from_gguf(py: Python<'_>, path: std::path::PathBuf, vocab_size: Option<usize>) -> PyResult<Tokenizer> {
        let t = py.detach(|| dwac_vocab::Tokenizer::from_gguf(&path)).map_err(|e| err(e.to_string()))?;
        Tokenizer::wrap(t, vocab_size)
    }

    /// From the text of a `tokenizer.json` (e.g. `tokenizers.Tokenizer.to_str()`); `eos` names
    /// the end tokens when the JSON alone does not.
    #[staticmethod]
    #[pyo3(signature = (json, name = "tokenizer", eos = None, vocab_size = None))]
    fn from_json(json: &str, name: &str, eos: Option<Vec<u32>>, vocab_size: Option<usize>) -> PyResult<Tokenizer> {
        let mut t =
            dwac_vocab::Tokenizer::from_json_bytes(json.as_bytes(), None, name).map_err(|e| err(e.to_string()))?;
        if let Some(eos) = eos.filter(|e| !e.is_empty()) {
            t = t.with_eos(&eos).map_err(|e| err(e.to_string()))?;
        }
        Tokenizer::wrap(t, vocab_size)
    }

    /// The embedded default tokenizer (GPT-2).
    #[staticmethod]
    #[pyo3(signature = (vocab_size = None))]
    fn default(vocab_size: Option<usize>) -> PyResult<Tokenizer> {
        let t = dwac_vocab::Tokenizer::default_embedded().map_err(|e| err(e.to_string()))?;
        Tokenizer::wrap(t, vocab_size)
    }

    /// The same vocabulary with masks `vocab_size` wide (the model's number of logits, at
    /// least `num_tokens`). Same fingerprint: artifacts are shared.
    fn with_vocab_size(&self, vocab_size: usize) -> PyResult<Tokenizer> {
        Tokenizer::widened(Arc::clone(&self.inner), Some(vocab_size))
    }

    /// The tokenizer's name (its model family, or the name given).
    #[getter]
    fn name(&self) -> String {
        self.inner.name().to_string()
    }

    /// The width of masks: the model's number of logits if given (`vocab_size=`), else the
    /// tokenizer's number of ids. Bitmasks need `ceil(vocab_size / 32)` words per row.
    #[getter]
    fn vocab_size(&self) -> usize {
        self.width
    }

    /// The tokenizer's own number of token ids (ids from here to `vocab_size` are padding,
    /// never allowed).
    #[getter]
    fn num_tokens(&self) -> usize {
        self.inner.vocab().len()
    }

    /// The end-of-sequence token ids.
    #[getter]
    fn eos_token_ids(&self) -> Vec<u32> {
        self.inner.vocab().eos().to_vec()
    }

    /// The vocabulary's fingerprint (hex): artifacts record it.
    #[getter]
    fn fingerprint(&self) -> String {
        self.inner.fingerprint_hex()
    }

    /// Token ids of `text` (the tokenizer's own pre-tokenization and merges).
    fn encode(&self, text: &str) -> PyResult<Vec<u32>> {
        self.inner.encode(text).map_err(|e| err(e.to_string()))
    }

    /// The exact bytes of token `id` (empty for special tokens).
    fn token_bytes<'py>(&self, py: Python<'py>, id: u32) -> PyResult<Bound<'py, PyBytes>> {
        let b = self.inner.vocab().token_bytes(id).ok_or_else(|| err(format!("token {id} is out of range")))?;
        Ok(PyBytes::new(py, b))
    }

    fn __repr__(&self) -> String {
        let n = self.inner.vocab().len();
        if self.width == n {
            format!("Tokenizer(name={:?}, vocab_size={n})", self.inner.name())
        } else {
            format!("Tokenizer(name={:?}, vocab_size={}, num_tokens={n})", self.inner.name(), self.width)
        }
    }
}
