//! `dwac._dwac`: the Python bindings (PyO3, abi3). The package `dwac` (`python/dwac`) wraps
//! this module; see its docstrings and `python/dwac/_dwac.pyi` for the API.
//!
//! Every call that can fail raises `dwac.DwacError` (a `ValueError`) with the CLI's one-line
//! message; nothing panics into Python (a panic in the runtime would be a bug, and PyO3 turns
//! it into `PanicException`). Compilation, mask filling and batch filling release the GIL.

use std::sync::{Arc, Mutex};

mod compiler;

use numpy::{PyArray1, PyArray2, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use dwac_compile::artifact::{artifact_bytes, write_atomically, SourceInfo, TokenizerInfo};
use dwac_compile::{compile_engine_with, parse_source_with, regex_grammar, EngineOptions, SourceKind};
use dwac_grammar::schema::{Draft, SchemaOptions, Whitespace};
use dwac_runtime::{Artifact, MaskCounters, MaskError, Matcher as RMatcher, OpenOptions};

pyo3::create_exception!(_dwac, DwacError, PyValueError, "An error from dwac: a bad grammar or schema (with its location), a corrupt or mismatched artifact, a refused token, a bad buffer.");

fn err(msg: impl Into<String>) -> PyErr {
    DwacError::new_err(msg.into())
}

/// A mask that could not be written: a bad buffer is the caller's `ValueError`; a worker thread
/// that panicked is a bug in dwac (`RuntimeError`), never an empty mask.
fn mask_err(e: MaskError) -> PyErr {
    match e {
        MaskError::BufferTooSmall { .. } => PyValueError::new_err(e.to_string()),
        e => PyRuntimeError::new_err(e.to_string()),
    }
}

/// A tokenizer's vocabulary: every token's exact bytes, the special tokens, the end tokens.
#[pyclass(module = "dwac._dwac", frozen)]
struct Tokenizer {
    inner: Arc<dwac_vocab::Tokenizer>,
    /// The model's number of logits (`vocab_size`): at least the tokenizer's ids. Ids past the
    /// tokenizer's (padded embedding rows) are never allowed. Not part of the fingerprint.
    width: usize,
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

/// How [`compile_source`] compiles (the keyword options of `Grammar.compile`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct CompileOptions {
    compact: bool,
    lenient: bool,
    draft: Option<String>,
    max_whitespace: Option<u32>,
    mask_work: Option<u64>,
    strict: bool,
}

/// Compile `source` of kind `kind` for `tok` (GIL released by the caller).
fn compile_source(
    kind: &str,
    source: String,
    tok: &Arc<dwac_vocab::Tokenizer>,
    width: usize,
    o: &CompileOptions,
) -> Result<Grammar, String> {
    let mut opts = EngineOptions::default();
    if let Some(w) = o.mask_work {
        opts.mask_options =
            dwac_compile::dwa::MaskOptions { work_per_lexer_state: w, saturate: false, ..opts.mask_options };
    }
    let default_draft = match o.draft.as_deref() {
        None => None,
        Some(d) => {
            Some(Draft::from_name(d).ok_or_else(|| format!("unknown draft {d:?} ({})", Draft::NAMES.join(", ")))?)
        }
    };
    let schema = SchemaOptions {
        whitespace: match (o.compact, o.max_whitespace) {
            (true, _) => Whitespace::Compact,
            (false, Some(n)) => Whitespace::Around { max: Some(n) },
            (false, None) => Whitespace::Flexible,
        },
        lenient: o.lenient,
        default_draft,
        strict: o.strict,
    };
    let (what, kind_name, parsed) = match kind {
        "json_schema" | "json" => ("schema", SourceKind::JsonSchema, Some(SourceKind::JsonSchema)),
        "lark" => ("grammar", SourceKind::Lark, Some(SourceKind::Lark)),
        "gbnf" => ("grammar", SourceKind::Gbnf, Some(SourceKind::Gbnf)),
        "structural_tag" => ("structural tag", SourceKind::StructuralTag, Some(SourceKind::StructuralTag)),
        "regex" => ("regex", SourceKind::Lark, None),
        k => return Err(format!("unknown grammar kind {k:?} (json_schema, lark, gbnf, structural_tag, regex)")),
    };
    let (grammar, mut warnings, info) = match parsed {
        Some(k) => {
            let (g, w) = parse_source_with(k, &source, &schema).map_err(|e| e.located(&what, false))?;
            let info = SourceInfo { name: what.into(), kind: SourceInfo::kind_name(kind_name), text: source };
            (g, w.into_iter().map(|w| format!("{what}: {w}")).collect::<Vec<_>>(), info)
        }
        None => {
            let g = regex_grammar(&source);
            (g, Vec::new(), SourceInfo { name: "regex".into(), kind: "regex", text: source })
        }
    };
    let (engine, stats) = compile_engine_with(&grammar, tok.vocab().clone(), &opts)
        .map_err(|e| e.located(&what, kind_name == SourceKind::JsonSchema))?;
    warnings.extend(stats.warnings.iter().map(|w| w.0.located(&what)));
    let ti = TokenizerInfo { name: tok.name().to_string(), fingerprint: tok.fingerprint() };
    let bytes = artifact_bytes(&engine, &info, &ti, &stats, &schema, &opts);
    let artifact = Artifact::from_bytes(&bytes).map_err(|e| format!("{what}: {e}"))?;
    Ok(Grammar { artifact, warnings, width })
}

/// A compiled grammar: an opened, validated artifact. Immutable; share it among threads and
/// matchers.
#[pyclass(module = "dwac._dwac", frozen)]
struct Grammar {
    artifact: Artifact,
    warnings: Vec<String>,
    /// Mask width (the tokenizer's `vocab_size`, else the vocabulary's ids).
    width: usize,
}

#[pymethods]
impl Grammar {
    /// Compile `source` of kind `kind` (`"json_schema"`, `"lark"`, `"gbnf"`, `"structural_tag"`
    /// or `"regex"`) for `tokenizer`. JSON Schema options as the CLI's: `compact` (no whitespace
    /// between tokens), `max_whitespace` (whitespace only around punctuation, at most this many
    /// characters on each side), `lenient` (drop keywords that cannot be honoured exactly, listed in
    /// `warnings`), `draft` (`"draft4"`, `"draft6"`, `"draft7"`, `"2019-09"`, `"2020-12"`),
    /// `strict` (keys and items a schema does not name refused; tags' schemas too). No GIL.
    ///
    /// `_mask_work_per_lexer_state` is a diagnostic and test option, not for serving: the compiler's work
    /// budget per lexer state (`MaskOptions::work_per_lexer_state`); a lexer state over it gets no automaton
    /// (nor a saturated one): its tokens are UNDECIDED, decided at run time by commit. Recorded in the options.
    #[staticmethod]
    #[pyo3(signature = (kind, source, tokenizer, compact = false, lenient = false, draft = None, _mask_work_per_lexer_state = None, max_whitespace = None, strict = false))]
    #[expect(clippy::too_many_arguments, reason = "the Python signature: keyword arguments, each an option")]
    fn compile(
        py: Python<'_>,
        kind: &str,
        source: String,
        tokenizer: &Tokenizer,
        compact: bool,
        lenient: bool,
        draft: Option<&str>,
        _mask_work_per_lexer_state: Option<u64>,
        max_whitespace: Option<u32>,
        strict: bool,
    ) -> PyResult<Grammar> {
        let options = CompileOptions {
            compact,
            lenient,
            draft: draft.map(str::to_string),
            max_whitespace,
            mask_work: _mask_work_per_lexer_state,
            strict,
        };
        let tok = Arc::clone(&tokenizer.inner);
        let width = tokenizer.width;
        py.detach(move || compile_source(kind, source, &tok, width, &options)).map_err(err)
    }

    /// Map and verify an artifact file (`.dwa` or `.dwa.zst`). With `tokenizer`, the artifact
    /// must have been compiled for it (refused by name otherwise); a `.dwa.zst` saved without
    /// the vocabulary needs it.
    #[staticmethod]
    #[pyo3(signature = (path, tokenizer = None))]
    fn open(py: Python<'_>, path: std::path::PathBuf, tokenizer: Option<&Tokenizer>) -> PyResult<Grammar> {
        let tok = tokenizer.map(|t| (Arc::clone(&t.inner), t.width));
        py.detach(move || {
            let opened = match &tok {
                Some((t, _)) => OpenOptions::new().vocabulary(t.vocab()).open(&path),
                None => Artifact::open(&path),
            };
            let artifact = opened.map_err(|e| {
                let given =
                    tok.as_ref().map_or(String::new(), |(t, _)| format!(" (the tokenizer given is {:?})", t.name()));
                format!("{}: {e}{given}", path.display())
            })?;
            let mut width = artifact.engine().vocab().len();
            if let Some((t, w)) = tok {
                artifact
                    .check_tokenizer(&t.fingerprint(), t.vocab())
                    .map_err(|e| format!("{}: {e} (the tokenizer given is {:?})", path.display(), t.name()))?;
                width = w;
            }
            Ok::<_, String>(Grammar { artifact, warnings: Vec::new(), width })
        })
        .map_err(err)
    }

    /// Write the artifact (atomically) to `path`; it opens with `Grammar.open`. With `zstd`,
    /// the transport form (`.dwa.zst`), and with `without_vocabulary` too, without the
    /// vocabulary's sections (it then opens only with its tokenizer).
    #[pyo3(signature = (path, zstd = false, without_vocabulary = false))]
    fn save(&self, py: Python<'_>, path: std::path::PathBuf, zstd: bool, without_vocabulary: bool) -> PyResult<()> {
        if without_vocabulary && !zstd {
            return Err(PyValueError::new_err("without_vocabulary applies to the zstd form: pass zstd=True too"));
        }
        let bytes = self.artifact.as_bytes();
        py.detach(|| {
            use dwac_compile::artifact::{compress, compress_without_vocabulary, ZSTD_LEVEL};
            let out = match (zstd, without_vocabulary) {
                (false, _) => return write_atomically(&path, bytes),
                (true, false) => compress(bytes, ZSTD_LEVEL)?,
                (true, true) => compress_without_vocabulary(bytes, ZSTD_LEVEL)?,
            };
            write_atomically(&path, &out)
        })
        .map_err(|e| err(format!("{}: {e}", path.display())))
    }

    /// The width of masks: the tokenizer's `vocab_size` (compiled with, or given to `open`),
    /// else the vocabulary's number of ids.
    #[getter]
    fn vocab_size(&self) -> usize {
        self.width
    }

    /// Number of token ids of the vocabulary the grammar was compiled for.
    #[getter]
    fn num_tokens(&self) -> usize {
        self.artifact.engine().vocab().len()
    }

    /// The artifact's metadata (JSON text: source, options, tokenizer, statistics).
    #[getter]
    fn metadata(&self) -> String {
        self.artifact.metadata().to_string()
    }

    /// Warnings of the compile (e.g. keywords dropped by `lenient`, formats not enforced).
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    /// The (lexer state, token) pairs the compiler left UNDECIDED, which masks decide at run
    /// time by committing the token (`Matcher.counters()` counts them as they happen): from
    /// the Parser DWA's tables, so the same for a compiled and a reopened artifact. `None` for
    /// an artifact without a Parser DWA (every mask is then the reference mask).
    #[getter]
    fn undecided_tokens(&self) -> Option<u64> {
        self.artifact.engine().undecided_tokens()
    }

    fn __repr__(&self) -> String {
        format!("Grammar(vocab_size={}, bytes={})", self.vocab_size(), self.artifact.len())
    }
}

/// One sequence's parse state. See the package docs for the method contract.
#[pyclass(module = "dwac._dwac")]
struct Matcher {
    inner: RMatcher,
    /// The grammar's mask width (bitmask rows must hold it).
    width: usize,
    /// What this matcher's mask fills did (`counters()`). Behind a lock so that fills, which
    /// borrow the matcher shared and release the GIL, can record into it.
    counts: Mutex<Counts>,
}

/// A matcher's mask counters: the last fill's, and sums over its life.
#[derive(Clone, Copy, Default)]
struct Counts {
    last: MaskCounters,
    masks: u64,
    undecided_total: u64,
    fallbacks_total: u64,
    masks_with_undecided: u64,
}

impl Counts {
    fn record(&mut self, c: MaskCounters) {
        self.last = c;
        self.masks += 1;
        self.undecided_total += u64::from(c.undecided);
        self.fallbacks_total += u64::from(c.fallbacks);
        self.masks_with_undecided += u64::from(c.undecided > 0);
    }
}

impl Matcher {
    fn wrap(inner: RMatcher, width: usize) -> Matcher {
        Matcher { inner, width, counts: Mutex::new(Counts::default()) }
    }

    /// Add one fill's counters (a poisoned lock only means another thread panicked while
    /// holding it: the counts are plain numbers, still usable).
    fn record(&self, c: MaskCounters) {
        self.counts.lock().unwrap_or_else(|p| p.into_inner()).record(c);
    }
}

/// Refuse bitmask rows of `cols` words too narrow for masks `width` tokens wide.
fn check_width(cols: usize, width: usize) -> PyResult<()> {
    if cols.saturating_mul(32) < width {
        return Err(PyValueError::new_err(format!(
            "bitmask rows have {cols} words; vocab_size {width} needs {} (allocate_token_bitmask(batch, {width}))",
            width.div_ceil(32)
        )));
    }
    Ok(())
}

/// The rows of `bitmask` (a 2-D C-contiguous int32 numpy array, or a CPU torch tensor, whose
/// `.numpy()` shares its memory) as `u32` words.
fn bitmask_rows<'py>(bitmask: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyArray2<i32>>, usize, usize)> {
    let module = bitmask.get_type().module().map(|m| m.to_string()).unwrap_or_default();
    let bitmask = &if module.starts_with("torch") {
        let device = bitmask.getattr("device")?.getattr("type")?.extract::<String>()?;
        if device != "cpu" {
            return Err(PyValueError::new_err(format!(
                "bitmask must be a CPU tensor (got device {device:?}); fill it on the CPU, then copy it"
            )));
        }
        bitmask.call_method0("numpy")?
    } else {
        bitmask.clone()
    };
    let arr: Bound<'py, PyArray2<i32>> = match bitmask.extract() {
        Ok(a) => a,
        Err(_) => {
            let ok1 = bitmask.extract::<Bound<'py, PyArray1<i32>>>().is_ok();
            let what = if ok1 {
                "a 1-D array; use shape (batch, words), e.g. allocate_token_bitmask(1, vocab_size)".to_string()
            } else {
                let ty = bitmask.get_type().name().map(|n| n.to_string()).unwrap_or_default();
                let dtype = bitmask.getattr("dtype").map(|d| d.to_string()).unwrap_or_else(|_| "?".into());
                format!("{ty} with dtype {dtype}")
            };
            return Err(PyValueError::new_err(format!("bitmask must be a 2-D numpy int32 array, got {what}")));
        }
    };
    if !arr.is_c_contiguous() {
        return Err(PyValueError::new_err("bitmask must be C-contiguous"));
    }
    let shape = arr.shape();
    Ok((arr.clone(), shape[0], shape[1]))
}

/// `f` on the bitmask's words as `&mut [u32]` (checked writable and aligned), with the GIL
/// released.
///
/// Not through rust-numpy's borrow tracking: servers fill different rows of one bitmask from
/// several threads at once, which its exclusive borrows would refuse. The callers write only
/// the rows they are given; two threads writing the same row is the caller's race on its own
/// array, as with any numpy buffer written without the GIL.
fn with_words<R>(arr: &Bound<'_, PyArray2<i32>>, f: impl FnOnce(&mut [u32]) -> R + Send) -> PyResult<R>
where
    R: Send,
{
    let writeable: bool = arr.getattr("flags")?.getattr("writeable")?.extract()?;
    if !writeable {
        return Err(PyValueError::new_err("bitmask is not writable (a read-only array)"));
    }
    // SAFETY: checked C-contiguous (by the caller) and writeable; the array object stays alive
    // (we hold a reference) while `f` runs.
    let slice = unsafe { arr.as_slice_mut() }.map_err(|_| PyValueError::new_err("bitmask must be C-contiguous"))?;
    if !slice.as_ptr().cast::<u32>().is_aligned() {
        return Err(PyValueError::new_err("bitmask is not aligned for int32"));
    }
    // SAFETY: i32 and u32 have the same size and alignment.
    let words: &mut [u32] = unsafe { std::slice::from_raw_parts_mut(slice.as_mut_ptr().cast(), slice.len()) };
    let py = arr.py();
    Ok(py.detach(move || f(words)))
}

#[pymethods]
impl Matcher {
    /// A matcher at the start of `grammar`. `max_rollback` bounds how many commits `rollback`
    /// can undo (default: all).
    #[new]
    #[pyo3(signature = (grammar, max_rollback = None))]
    fn new(grammar: &Bound<'_, PyAny>, max_rollback: Option<usize>) -> PyResult<Matcher> {
        // (The package's `dwac.Grammar` wraps the native one as `_g`.)
        let native = match grammar.extract::<PyRef<'_, Grammar>>() {
            Ok(g) => g,
            Err(_) => grammar
                .getattr("_g")
                .and_then(|g| g.extract::<PyRef<'_, Grammar>>().map_err(Into::into))
                .map_err(|_| PyValueError::new_err("Matcher(grammar): grammar must be a dwac.Grammar"))?,
        };
        let engine = Arc::clone(native.artifact.engine());
        let inner = match max_rollback {
            Some(n) => RMatcher::with_max_rollback(engine, n),
            None => RMatcher::new(engine),
        };
        Ok(Matcher::wrap(inner, native.width))
    }

    /// Write the allowed next tokens into row `index` of `bitmask` (int32, shape `[batch,
    /// words]`, `words >= ceil(vocab_size / 32)`; bit `v % 32` of word `v / 32` set iff token
    /// `v` is allowed; bits past the vocabulary cleared). Releases the GIL. What the fill did
    /// is added to `counters()`.
    #[pyo3(signature = (bitmask, index = 0))]
    fn fill_next_token_bitmask(&self, bitmask: &Bound<'_, PyAny>, index: usize) -> PyResult<()> {
        let (arr, rows, cols) = bitmask_rows(bitmask)?;
        if index >= rows {
            return Err(PyValueError::new_err(format!("index {index} is out of range for a bitmask of {rows} rows")));
        }
        check_width(cols, self.width)?;
        let m = &self.inner;
        let c = with_words(&arr, |w| m.fill_mask(&mut w[index * cols..(index + 1) * cols]))?.map_err(mask_err)?;
        self.record(c);
        Ok(())
    }

    /// What this matcher's mask fills did: the last fill's `undecided` (UNDECIDED tokens it
    /// decided by committing them), `fallbacks` (1 if the whole mask was the reference mask)
    /// and `reads` (Parser DWA reads); and over the matcher's life (every fill path:
    /// `fill_next_token_bitmask`, `fill_next_token_bitmask_batch`), `masks` filled,
    /// `undecided_total`, `fallbacks_total` and `masks_with_undecided`. `reset` keeps them; a
    /// `fork` starts from zero.
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = *self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let d = PyDict::new(py);
        d.set_item("undecided", c.last.undecided)?;
        d.set_item("fallbacks", c.last.fallbacks)?;
        d.set_item("reads", c.last.reads)?;
        d.set_item("masks", c.masks)?;
        d.set_item("undecided_total", c.undecided_total)?;
        d.set_item("fallbacks_total", c.fallbacks_total)?;
        d.set_item("masks_with_undecided", c.masks_with_undecided)?;
        Ok(d)
    }

    /// Commit `token`; `False` (and no change) if the grammar refuses it.
    fn accept_token(&mut self, token: u32) -> bool {
        self.inner.commit(token).is_ok()
    }

    /// Commit `token`, raising `DwacError` with the reason if the grammar refuses it.
    fn commit(&mut self, token: u32) -> PyResult<()> {
        self.inner.commit(token).map_err(|e| err(e.to_string()))
    }

    /// Commit tokens in turn up to the first refused one; returns how many were committed.
    fn accept_tokens(&mut self, tokens: Vec<u32>) -> usize {
        match self.inner.commit_tokens(&tokens) {
            Ok(()) => tokens.len(),
            Err(e) => e.accepted,
        }
    }

    /// Commit raw bytes (e.g. a forced prefix), raising `DwacError` if refused.
    fn accept_bytes(&mut self, data: &[u8]) -> PyResult<()> {
        self.inner.commit_bytes(data).map_err(|e| err(e.to_string()))
    }

    /// The length of the longest prefix of `tokens` that could be committed in turn, without
    /// changing the matcher (speculative decoding).
    fn validate_tokens(&self, tokens: Vec<u32>) -> usize {
        self.inner.validate_tokens(&tokens)
    }

    /// Undo the last `n` commits (`DwacError` if fewer can be undone).
    #[pyo3(signature = (n = 1))]
    fn rollback(&mut self, n: usize) -> PyResult<()> {
        self.inner.rollback(n).map_err(|e| err(e.to_string()))
    }

    /// Back to the start of the grammar.
    fn reset(&mut self) {
        self.inner.reset()
    }

    /// An independent copy (O(1)) for beam search or speculation; its `counters()` start from
    /// zero.
    fn fork(&self) -> Matcher {
        Matcher::wrap(self.inner.clone(), self.width)
    }

    /// Has an end token been committed (the output is complete; nothing more is allowed)?
    fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }

    /// May the output end here (an end token is allowed)?
    fn is_accepting(&self) -> bool {
        self.inner.is_accepting()
    }

    /// The tokens the grammar forces from here (at most `limit`), for jump-forward decoding.
    #[pyo3(signature = (limit = 64))]
    fn forced_tokens(&self, py: Python<'_>, limit: usize) -> PyResult<Vec<u32>> {
        let m = &self.inner;
        py.detach(|| m.forced_tokens(limit)).map_err(|e| err(e.to_string()))
    }

    /// The bytes every continuation starts with (at most `limit`).
    #[pyo3(signature = (limit = 256))]
    fn forced_bytes<'py>(&self, py: Python<'py>, limit: usize) -> PyResult<Bound<'py, PyBytes>> {
        let m = &self.inner;
        let b = py.detach(|| m.forced_bytes(limit)).map_err(|e| err(e.to_string()))?;
        Ok(PyBytes::new(py, &b))
    }

    /// Allowed next token ids as a list (slow; for tests and debugging).
    fn allowed_tokens(&self) -> Vec<u32> {
        self.inner.allowed()
    }

    fn __repr__(&self) -> String {
        format!(
            "Matcher(position={}, accepting={}, terminated={})",
            self.inner.position(),
            self.inner.is_accepting(),
            self.inner.is_terminated()
        )
    }
}

/// Fill the masks of `matchers` into the rows of `bitmask` (row `indices[i]` for matcher `i`;
/// default: row `i`), across threads with the GIL released.
#[pyfunction]
#[pyo3(signature = (matchers, bitmask, indices = None))]
fn fill_next_token_bitmask_batch(
    matchers: Vec<PyRef<'_, Matcher>>,
    bitmask: &Bound<'_, PyAny>,
    indices: Option<Vec<usize>>,
) -> PyResult<()> {
    let (arr, rows, cols) = bitmask_rows(bitmask)?;
    for m in &matchers {
        check_width(cols, m.width)?;
    }
    let indices = indices.unwrap_or_else(|| (0..matchers.len()).collect());
    if indices.len() != matchers.len() {
        return Err(PyValueError::new_err(format!("{} indices for {} matchers", indices.len(), matchers.len())));
    }
    let mut seen = vec![false; rows];
    for &i in &indices {
        if i >= rows || std::mem::replace(&mut seen[i], true) {
            return Err(PyValueError::new_err(format!("row index {i} is out of range or repeated ({rows} rows)")));
        }
    }
    // (Matchers are cloned, O(1) each, so no Python object is touched without the GIL.)
    let ms: Vec<RMatcher> = matchers.iter().map(|m| m.inner.clone()).collect();
    let counters = with_words(&arr, move |words| {
        use rayon::prelude::*;
        let mut slots: Vec<Option<&mut [u32]>> = words.chunks_mut(cols).map(Some).collect();
        let mut jobs: Vec<(&RMatcher, &mut [u32])> = Vec::with_capacity(ms.len());
        for (m, &i) in ms.iter().zip(&indices) {
            if let Some(row) = slots[i].take() {
                jobs.push((m, row));
            }
        }
        // (In the matchers' order: each row's counters go to its matcher below.)
        jobs.into_par_iter().map(|(m, row)| m.fill_mask(row)).collect::<Result<Vec<MaskCounters>, MaskError>>()
    })?
    .map_err(mask_err)?;
    for (m, c) in matchers.iter().zip(counters) {
        m.record(c);
    }
    Ok(())
}

/// Benchmark hook (`cargo xtask py-bench`): replay `tokens` on `matcher`, each step a mask fill
/// into a buffer of its own, then a commit, timed in Rust with no Python between them. Returns
/// (fill ns, commit ns) per step, stopping after a refused token. The matcher advances, and its
/// `counters()` count the fills.
#[pyfunction]
fn _time_trace(py: Python<'_>, mut matcher: PyRefMut<'_, Matcher>, tokens: Vec<u32>) -> PyResult<(Vec<u64>, Vec<u64>)> {
    let Matcher { inner: m, counts, .. } = &mut *matcher;
    let counts = counts.get_mut().unwrap_or_else(|p| p.into_inner());
    py.detach(|| {
        let mut buf = vec![0u32; m.mask_words()];
        let (mut fill, mut commit) = (Vec::with_capacity(tokens.len()), Vec::with_capacity(tokens.len()));
        for t in tokens {
            let t0 = std::time::Instant::now();
            let c = m.fill_mask(&mut buf).map_err(mask_err)?;
            let t1 = std::time::Instant::now();
            let ok = m.commit(t).is_ok();
            let t2 = std::time::Instant::now();
            counts.record(c);
            fill.push((t1 - t0).as_nanos() as u64);
            commit.push((t2 - t1).as_nanos() as u64);
            if !ok {
                break;
            }
        }
        Ok((fill, commit))
    })
}

/// Set `-inf` in `row` wherever `words` has a zero bit (bit `v % 32` of word `v / 32`); ids past
/// the words are disallowed too.
fn mask_row(row: &mut [f32], words: &[u32]) {
    for (k, chunk) in row.chunks_mut(32).enumerate() {
        let w = words.get(k).copied().unwrap_or(0);
        if w == u32::MAX {
            continue;
        }
        if w == 0 {
            chunk.fill(f32::NEG_INFINITY);
            continue;
        }
        for (b, x) in chunk.iter_mut().enumerate() {
            if w >> b & 1 == 0 {
                *x = f32::NEG_INFINITY;
            }
        }
    }
}

/// `apply_token_bitmask_inplace` for C-contiguous float32 numpy logits (`[vocab]` with bitmask
/// row 0, or `[batch, vocab]` with row `indices[j]` of the logits masked by bitmask row `j`, or
/// row `r` by row `r` without indices). Returns False, touching nothing, for any other logits
/// (the Python fallback handles those).
#[pyfunction]
#[pyo3(signature = (logits, bitmask, indices = None))]
fn apply_bitmask_f32(
    logits: &Bound<'_, PyAny>,
    bitmask: &Bound<'_, PyAny>,
    indices: Option<Vec<usize>>,
) -> PyResult<bool> {
    let (arr, rows, cols) = bitmask_rows(bitmask)?;
    let mask = arr.readonly();
    let words = mask.as_slice().map_err(|_| PyValueError::new_err("bitmask must be C-contiguous"))?;
    // SAFETY: i32 and u32 have the same size and alignment.
    let words: &[u32] = unsafe { std::slice::from_raw_parts(words.as_ptr().cast(), words.len()) };
    if let Ok(l) = logits.extract::<Bound<'_, PyArray1<f32>>>() {
        if rows == 0 || indices.is_some() {
            return Err(PyValueError::new_err("1-D logits take bitmask row 0 and no indices"));
        }
        let Ok(mut l) = l.try_readwrite() else { return Ok(false) };
        let Ok(row) = l.as_slice_mut() else { return Ok(false) };
        mask_row(row, &words[..cols]);
        return Ok(true);
    }
    if let Ok(l) = logits.extract::<Bound<'_, PyArray2<f32>>>() {
        let (b, n) = (l.shape()[0], l.shape()[1]);
        let Ok(mut l) = l.try_readwrite() else { return Ok(false) };
        let Ok(all) = l.as_slice_mut() else { return Ok(false) };
        let pairs: Vec<(usize, usize)> = match indices {
            Some(ix) => ix.into_iter().enumerate().map(|(j, r)| (r, j)).collect(),
            None => (0..b).map(|r| (r, r)).collect(),
        };
        for &(r, j) in &pairs {
            if r >= b || j >= rows {
                return Err(PyValueError::new_err(format!(
                    "logits row {r} / bitmask row {j} out of range ({b} logits rows, {rows} bitmask rows)"
                )));
            }
        }
        for (r, j) in pairs {
            mask_row(&mut all[r * n..(r + 1) * n], &words[j * cols..(j + 1) * cols]);
        }
        return Ok(true);
    }
    Ok(false)
}

#[pymodule]
fn _dwac(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("DwacError", m.py().get_type::<DwacError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Tokenizer>()?;
    m.add_class::<Grammar>()?;
    m.add_class::<Matcher>()?;
    m.add_class::<compiler::Compiler>()?;
    m.add_function(wrap_pyfunction!(compiler::tools_structural_tag, m)?)?;
    m.add_function(wrap_pyfunction!(fill_next_token_bitmask_batch, m)?)?;
    m.add_function(wrap_pyfunction!(apply_bitmask_f32, m)?)?;
    m.add_function(wrap_pyfunction!(_time_trace, m)?)?;
    Ok(())
}
