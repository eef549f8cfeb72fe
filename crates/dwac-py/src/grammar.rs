//! `Grammar`: a compiled engine, compiled in process (with the GIL released) or read from an
//! artifact file; and the compile every source kind shares.

use std::borrow::Cow;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use dwac_compile::artifact::{cache_key, write_atomically, ArtifactSource, SourceInfo, TokenizerInfo};
use dwac_compile::{regex_grammar, Compiler, EngineOptions, SourceKind};
use dwac_grammar::schema::{Draft, SchemaOptions, Whitespace};
use dwac_runtime::unstable::artifact::tables_len;
use dwac_runtime::{Artifact, Engine, OpenOptions};

use crate::budget::{self, Budget};
use crate::err;
use crate::tokenizer::Tokenizer;

/// How [`compile_source`] compiles (the keyword options of `Grammar.compile`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct CompileOptions {
    pub(crate) compact: bool,
    pub(crate) lenient: bool,
    pub(crate) draft: Option<String>,
    pub(crate) max_whitespace: Option<u32>,
    pub(crate) mask_work: Option<u64>,
    pub(crate) strict: bool,
}

/// A source of one kind with its options, ready to be keyed ([`Prepared::key`]) and compiled.
pub(crate) struct Prepared {
    compiler: Compiler,
    /// How errors name the source: `schema`, `grammar`, `structural tag`, `regex`.
    what: &'static str,
    /// The front end (`None`: a regex).
    parsed: Option<SourceKind>,
    info: SourceInfo,
}

impl Prepared {
    /// `source` of kind `kind` (`json_schema`, `lark`, `gbnf`, `structural_tag`, `regex`) with
    /// the options `o`.
    pub(crate) fn new(kind: &str, source: String, o: &CompileOptions) -> Result<Prepared, String> {
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
        let compiler = Compiler { schema, engine: opts, ..Compiler::default() };
        let (what, parsed) = match kind {
            "json_schema" | "json" => ("schema", Some(SourceKind::JsonSchema)),
            "lark" => ("grammar", Some(SourceKind::Lark)),
            "gbnf" => ("grammar", Some(SourceKind::Gbnf)),
            "structural_tag" => ("structural tag", Some(SourceKind::StructuralTag)),
            "regex" => ("regex", None),
            k => return Err(format!("unknown grammar kind {k:?} (json_schema, lark, gbnf, structural_tag, regex)")),
        };
        let info = match parsed {
            Some(k) => SourceInfo { name: what.into(), kind: SourceInfo::kind_name(k), text: source },
            None => SourceInfo { name: "regex".into(), kind: "regex", text: source },
        };
        Ok(Prepared { compiler, what, parsed, info })
    }

    /// The key its artifact is cached under for `tok` (`dwac compile --cache-dir`'s).
    pub(crate) fn key(&self, tok: &dwac_vocab::Tokenizer) -> String {
        cache_key(&self.info, &tok.fingerprint(), &self.compiler.schema, &self.compiler.engine)
    }

    /// The front end alone (the grammar parsed, a schema or structural tag translated): the
    /// errors a compile would report about the source itself, in a small part of its time and
    /// without a tokenizer (a regex: its syntax); the warnings otherwise.
    pub(crate) fn check(&self) -> Result<Vec<String>, String> {
        let what = self.what;
        match self.parsed {
            Some(k) => {
                let (_, w) = self.compiler.parse(k, &self.info.text).map_err(|e| e.located(&what, false))?;
                Ok(w.into_iter().map(|w| format!("{what}: {w}")).collect())
            }
            None => {
                dwac_compile::lexer::check_pattern(dwac_compile::REGEX_TERMINAL, &self.info.text)
                    .map_err(|e| e.located(&what, false))?;
                Ok(Vec::new())
            }
        }
    }

    /// Compile for `tok` within `budget` (GIL released by the caller).
    pub(crate) fn compile(
        self,
        tok: &Arc<dwac_vocab::Tokenizer>,
        width: usize,
        budget: Budget,
    ) -> Result<Grammar, String> {
        let what = self.what;
        budget::within(budget, what, || self.compile_unbounded(tok, width))
    }

    /// [`Prepared::compile`] without a budget.
    fn compile_unbounded(self, tok: &Arc<dwac_vocab::Tokenizer>, width: usize) -> Result<Grammar, String> {
        let Prepared { compiler, what, parsed, info } = self;
        let (grammar, mut warnings) = match parsed {
            Some(k) => {
                let (g, w) = compiler.parse(k, &info.text).map_err(|e| e.located(&what, false))?;
                (g, w.into_iter().map(|w| format!("{what}: {w}")).collect::<Vec<_>>())
            }
            None => (regex_grammar(&info.text), Vec::new()),
        };
        let (engine, stats) = compiler
            .compile_engine(&grammar, tok.vocab().clone())
            .map_err(|e| e.located(&what, parsed == Some(SourceKind::JsonSchema)))?;
        warnings.extend(stats.warnings.iter().map(|w| w.0.located(&what)));
        // The Parser DWA is the compiler's own output, which the compiler leaves unchecked
        // (`Artifact::open` checks it wherever an artifact is loaded): checked here, as a
        // grammar compiled in process has no artifact until one is asked for.
        if let Some(m) = engine.mask_tables() {
            m.validate(engine.tables().lexer.num_states, engine.vocab().len() as u32)
                .map_err(|e| format!("{what}: the compiled Parser DWA: {e}"))?;
        }
        let tokenizer = TokenizerInfo { name: tok.name().to_string(), fingerprint: tok.fingerprint() };
        let (schema, options) = (compiler.schema, compiler.engine);
        let layout = Box::new(ArtifactSource { source: info, tokenizer, stats, schema, options });
        Ok(Grammar::compiled(Arc::new(engine), layout, warnings, width))
    }
}

/// Compile `source` of kind `kind` for `tok` within `budget` (GIL released by the caller).
pub(crate) fn compile_source(
    kind: &str,
    source: String,
    tok: &Arc<dwac_vocab::Tokenizer>,
    width: usize,
    o: &CompileOptions,
    budget: Budget,
) -> Result<Grammar, String> {
    Prepared::new(kind, source, o)?.compile(tok, width, budget)
}

/// Map and verify the artifact at `path`; with a tokenizer (and its mask width), one compiled
/// for it (refused by name otherwise).
pub(crate) fn open_artifact(
    path: &std::path::Path,
    tok: Option<(&Arc<dwac_vocab::Tokenizer>, usize)>,
) -> Result<Grammar, String> {
    // (With the tokenizer, its vocabulary stands in for the artifact's: 1.7 MB of a 150k-token
    // artifact neither checksummed nor read.)
    let fingerprint = tok.as_ref().map(|(t, _)| t.fingerprint());
    let opened = match (&tok, &fingerprint) {
        (Some((t, _)), Some(fp)) => OpenOptions::new().tokenizer(t.vocab(), fp).open(path),
        _ => Artifact::open(path),
    };
    let artifact = opened.map_err(|e| {
        let given = tok.as_ref().map_or(String::new(), |(t, _)| format!(" (the tokenizer given is {:?})", t.name()));
        format!("{}: {e}{given}", path.display())
    })?;
    let mut width = artifact.engine().vocab().len();
    if let Some((t, w)) = tok {
        artifact
            .check_tokenizer(&t.fingerprint(), t.vocab())
            .map_err(|e| format!("{}: {e} (the tokenizer given is {:?})", path.display(), t.name()))?;
        width = w;
    }
    Ok(Grammar::opened(artifact, width))
}

/// A compiled grammar: its engine, compiled in process or from an opened, validated artifact.
/// Immutable; share it among threads and matchers.
///
/// A grammar compiled in process holds its engine (its tables, and the tokenizer's vocabulary,
/// shared) and what its artifact is laid out from, when one is asked for (`save`, a compiler's
/// cache directory). Laying an artifact out and reading it back cost 0.6–0.9 ms of a small
/// schema's time to first mask, and the artifact holds a copy of the vocabulary (1.8 MB with
/// a 128k-token tokenizer) that the engine does not.
#[pyclass(module = "dwac._dwac", frozen)]
pub(crate) struct Grammar {
    /// The engine masks are computed with: the compile's, or the opened artifact's.
    pub(crate) engine: Arc<Engine>,
    origin: Origin,
    pub(crate) warnings: Vec<String>,
    /// Mask width (the tokenizer's `vocab_size`, else the vocabulary's ids).
    pub(crate) width: usize,
}

/// Where a [`Grammar`] comes from.
enum Origin {
    /// An artifact file, opened.
    Opened(Box<Artifact>),
    /// A compile in process, with what its artifact is laid out from.
    Compiled(Box<ArtifactSource>),
}

impl Grammar {
    fn compiled(engine: Arc<Engine>, layout: Box<ArtifactSource>, warnings: Vec<String>, width: usize) -> Grammar {
        Grammar { engine, origin: Origin::Compiled(layout), warnings, width }
    }

    fn opened(artifact: Artifact, width: usize) -> Grammar {
        let engine = Arc::clone(artifact.engine());
        Grammar { engine, origin: Origin::Opened(Box::new(artifact)), warnings: Vec::new(), width }
    }

    /// The artifact's bytes: the opened file's, or laid out now (not kept).
    pub(crate) fn artifact_bytes(&self) -> Cow<'_, [u8]> {
        match &self.origin {
            Origin::Opened(a) => Cow::Borrowed(a.as_bytes()),
            Origin::Compiled(l) => Cow::Owned(l.bytes(&self.engine)),
        }
    }

    /// Bytes the grammar holds of its own: its tables, without the vocabulary (the
    /// tokenizer's, shared), or the artifact read into memory (not mapped) it was opened from.
    pub(crate) fn own_bytes(&self) -> usize {
        match &self.origin {
            Origin::Opened(a) if !a.is_mapped() => a.len(),
            _ => tables_len(&self.engine),
        }
    }
}

#[pymethods]
impl Grammar {
    /// Compile `source` of kind `kind` (`"json_schema"`, `"lark"`, `"gbnf"`, `"structural_tag"`
    /// or `"regex"`) for `tokenizer`. JSON Schema options as the CLI's: `compact` (no whitespace
    /// between tokens), `max_whitespace` (whitespace only around punctuation, at most this many
    /// characters on each side), `lenient` (drop keywords that cannot be honoured exactly, listed in
    /// `warnings`), `draft` (`"draft4"`, `"draft6"`, `"draft7"`, `"2019-09"`, `"2020-12"`),
    /// `strict` (keys and items a schema does not name refused; tags' schemas too). No GIL.
    /// `max_seconds` (default 10) and `max_memory_mb` (default 2048): the compile's budget, past
    /// which it stops and raises, having freed what it allocated (`None`: no limit).
    ///
    /// `_mask_work_per_lexer_state` is a diagnostic and test option, not for serving: the compiler's work
    /// budget per lexer state (`MaskOptions::work_per_lexer_state`); a lexer state over it gets no automaton
    /// (nor a saturated one): its tokens are UNDECIDED, decided at run time by commit. Recorded in the options.
    #[staticmethod]
    #[pyo3(signature = (kind, source, tokenizer, compact = false, lenient = false, draft = None, _mask_work_per_lexer_state = None, max_whitespace = None, strict = false, max_seconds = budget::DEFAULT.max_seconds, max_memory_mb = budget::DEFAULT.max_memory_mb))]
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
        max_seconds: Option<f64>,
        max_memory_mb: Option<u64>,
    ) -> PyResult<Grammar> {
        let budget = Budget::new(max_seconds, max_memory_mb).map_err(err)?;
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
        py.detach(move || compile_source(kind, source, &tok, width, &options, budget)).map_err(err)
    }

    /// Map and verify an artifact file (`.dwa` or `.dwa.zst`). With `tokenizer`, the artifact
    /// must have been compiled for it (refused by name otherwise), and the tokenizer's
    /// vocabulary stands in for the artifact's copy of it (`OpenOptions::tokenizer`); a
    /// `.dwa.zst` saved without the vocabulary needs it.
    #[staticmethod]
    #[pyo3(signature = (path, tokenizer = None))]
    fn open(py: Python<'_>, path: std::path::PathBuf, tokenizer: Option<&Tokenizer>) -> PyResult<Grammar> {
        let tok = tokenizer.map(|t| (Arc::clone(&t.inner), t.width));
        py.detach(move || open_artifact(&path, tok.as_ref().map(|(t, w)| (t, *w)))).map_err(err)
    }

    /// Write the artifact (atomically) to `path`; it opens with `Grammar.open`. With `zstd`,
    /// the transport form (`.dwa.zst`), and with `without_vocabulary` too, without the
    /// vocabulary's sections (it then opens only with its tokenizer).
    #[pyo3(signature = (path, zstd = false, without_vocabulary = false))]
    fn save(&self, py: Python<'_>, path: std::path::PathBuf, zstd: bool, without_vocabulary: bool) -> PyResult<()> {
        if without_vocabulary && !zstd {
            return Err(PyValueError::new_err("without_vocabulary applies to the zstd form: pass zstd=True too"));
        }
        py.detach(|| {
            let bytes = &*self.artifact_bytes();
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
        self.engine.vocab().len()
    }

    /// The artifact's metadata (JSON text: source, options, tokenizer, statistics), as its
    /// artifact has it (`save` writes the same).
    #[getter]
    fn metadata(&self) -> String {
        match &self.origin {
            Origin::Opened(a) => a.metadata().to_string(),
            Origin::Compiled(l) => l.metadata_text(&self.engine),
        }
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
        self.engine.undecided_tokens()
    }

    fn __repr__(&self) -> String {
        format!("Grammar(vocab_size={}, bytes={})", self.vocab_size(), self.own_bytes())
    }
}
