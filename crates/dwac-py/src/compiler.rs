//! `Compiler`: compiles for one tokenizer and keeps what it compiled (a cache by source and
//! options, bounded in bytes, least recently used out first), for servers that receive the same
//! schemas or tools again; and `tools_structural_tag`, the tool-calling front end.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::budget::{self, Budget};
use crate::grammar::{open_artifact, Prepared};
use crate::{err, CompileOptions, Grammar, Tokenizer};

/// One compile, done or in flight: threads asking for the same key while it compiles wait for
/// it instead of compiling it again.
type Slot = Arc<OnceLock<Result<Py<Grammar>, String>>>;

struct Entry {
    slot: Slot,
    /// Bytes held (the artifact's, or a refusal's message): 0 while compiling.
    bytes: usize,
    last_use: u64,
}

/// What a refusal (a compile error) counts for in the cache's bytes: its message and the
/// entry's keeping, so that refusals are evicted with the rest.
const REFUSAL_BYTES: usize = 512;

#[derive(Default)]
struct Cache {
    entries: HashMap<Key, Entry>,
    clock: u64,
    bytes: usize,
    hits: u64,
    misses: u64,
    evictions: u64,
    /// Hits on a remembered refusal (counted in `hits` too).
    refusals: u64,
}

/// A cache key: the source's kind, the options, the budget (a refusal past a budget holds for
/// that budget only) and the source's text.
type Key = (String, CompileOptions, (Option<u64>, Option<u64>), String);

/// A compiler for one tokenizer with a cache of compiled grammars and of refusals, keyed by the
/// source's kind and text, the options, the budget and the tokenizer's fingerprint (one per
/// compiler), holding at most `cache_bytes` of grammars (`Grammar::own_bytes`: their tables,
/// without the vocabulary they share). Every compile runs within the
/// compiler's budget (`budget.rs`). Thread-safe; compiles release the GIL.
#[pyclass(module = "dwac._dwac", frozen)]
pub(crate) struct Compiler {
    tok: Arc<dwac_vocab::Tokenizer>,
    width: usize,
    cache_bytes: usize,
    budget: Budget,
    cache: Mutex<Cache>,
    /// The artifact directory: looked in before compiling, written after (`<key>.dwa`).
    cache_dir: Option<PathBuf>,
    disk: Arc<Disk>,
}

/// What the artifact directory did.
#[derive(Default)]
struct Disk {
    /// Compiles saved by an artifact found under its key.
    hits: AtomicU64,
    /// Artifacts written after a compile.
    writes: AtomicU64,
    /// Files under a key that did not open (corrupt, truncated, another tokenizer's): compiled
    /// again and replaced.
    bad_files: AtomicU64,
    /// Artifacts that could not be written (a read-only directory, a full disk).
    write_errors: AtomicU64,
}

/// `prepared` compiled (within `budget`), or found in `dir` under its key (a hit maps the file:
/// no compile); a compiled artifact is written there atomically, so other processes and the
/// next start find it. A file under the key that does not open is compiled again and replaced.
fn compile_through(
    prepared: Prepared,
    dir: Option<&PathBuf>,
    disk: &Disk,
    tok: &Arc<dwac_vocab::Tokenizer>,
    width: usize,
    budget: Budget,
) -> Result<Grammar, String> {
    let Some(dir) = dir else { return prepared.compile(tok, width, budget) };
    let path = dir.join(format!("{}.dwa", prepared.key(tok)));
    if path.exists() {
        match open_artifact(&path, Some((tok, width))) {
            Ok(g) => {
                disk.hits.fetch_add(1, Ordering::Relaxed);
                return Ok(g);
            }
            Err(_) => {
                disk.bad_files.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    let g = prepared.compile(tok, width, budget)?;
    let written = std::fs::create_dir_all(dir)
        .and_then(|()| dwac_compile::artifact::write_atomically(&path, &g.artifact_bytes()));
    match written {
        Ok(()) => disk.writes.fetch_add(1, Ordering::Relaxed),
        Err(_) => disk.write_errors.fetch_add(1, Ordering::Relaxed),
    };
    Ok(g)
}

impl Compiler {
    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        // A panic while holding the lock leaves counters only; the map stays consistent.
        self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[pymethods]
impl Compiler {
    #[new]
    #[pyo3(signature = (tokenizer, cache_bytes = 512 << 20, max_seconds = budget::DEFAULT.max_seconds, max_memory_mb = budget::DEFAULT.max_memory_mb, cache_dir = None))]
    fn new(
        tokenizer: &Tokenizer,
        cache_bytes: usize,
        max_seconds: Option<f64>,
        max_memory_mb: Option<u64>,
        cache_dir: Option<PathBuf>,
    ) -> PyResult<Compiler> {
        if cache_dir.is_some() {
            // (Computed once per vocabulary, shared by its clones: now, with the tokenizer's
            // loading, rather than in the first request's time to first mask.)
            tokenizer.inner.vocab().section_checksums();
        }
        Ok(Compiler {
            tok: Arc::clone(&tokenizer.inner),
            width: tokenizer.width,
            cache_bytes,
            budget: Budget::new(max_seconds, max_memory_mb).map_err(err)?,
            cache: Mutex::new(Cache::default()),
            cache_dir,
            disk: Arc::default(),
        })
    }

    /// Compile `source` of kind `kind` (as `Grammar.compile`, within the compiler's budget), or
    /// return the grammar compiled before for the same kind, text and options (the same object),
    /// or raise the error it was refused with before (without compiling again).
    #[pyo3(signature = (kind, source, compact = false, lenient = false, draft = None, max_whitespace = None, strict = false))]
    #[expect(clippy::too_many_arguments, reason = "the Python signature: keyword arguments, each an option")]
    fn compile(
        &self,
        py: Python<'_>,
        kind: &str,
        source: String,
        compact: bool,
        lenient: bool,
        draft: Option<String>,
        max_whitespace: Option<u32>,
        strict: bool,
    ) -> PyResult<Py<Grammar>> {
        let options = CompileOptions { compact, lenient, draft, max_whitespace, mask_work: None, strict };
        let key = (kind.to_string(), options.clone(), self.budget.key(), source.clone());
        let slot = {
            let mut c = self.lock();
            c.clock += 1;
            let now = c.clock;
            match c.entries.get_mut(&key) {
                Some(e) => {
                    e.last_use = now;
                    let slot = Arc::clone(&e.slot);
                    c.hits += 1;
                    c.refusals += u64::from(matches!(slot.get(), Some(Err(_))));
                    slot
                }
                None => {
                    let slot = Slot::default();
                    c.entries.insert(key.clone(), Entry { slot: Arc::clone(&slot), bytes: 0, last_use: now });
                    c.misses += 1;
                    slot
                }
            }
        };
        let (tok, width, budget) = (Arc::clone(&self.tok), self.width, self.budget);
        let (dir, disk) = (self.cache_dir.as_ref(), &*self.disk);
        py.detach(|| {
            slot.get_or_init(|| {
                let prepared = Prepared::new(kind, source, &options)?;
                let g = compile_through(prepared, dir, disk, &tok, width, budget)?;
                Python::attach(|py| Py::new(py, g).map_err(|e| e.to_string()))
            });
        });
        let done = slot.get().expect("initialized above");
        let mut c = self.lock();
        let same = c.entries.get(&key).is_some_and(|e| Arc::ptr_eq(&e.slot, &slot));
        let size = match done {
            Ok(g) => g.get().own_bytes(),
            Err(m) => m.len() + REFUSAL_BYTES,
        };
        if same {
            if let Some(e) = c.entries.get_mut(&key).filter(|e| e.bytes == 0) {
                e.bytes = size;
                c.bytes += size;
            }
            evict(&mut c, self.cache_bytes);
        }
        // (A refusal is remembered like a grammar: the same request, same options and budget,
        // fails at once the next time, until it is evicted or the cache cleared.)
        match done {
            Ok(g) => Ok(g.clone_ref(py)),
            Err(m) => Err(err(m.clone())),
        }
    }

    /// `{"entries", "bytes", "cache_bytes", "hits", "misses", "evictions", "refusals",
    /// "max_seconds", "max_memory_mb", "cache_dir", "disk_hits", "disk_writes",
    /// "disk_bad_files", "disk_write_errors"}` (`refusals`: hits on a remembered refusal).
    fn cache_info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.lock();
        let d = PyDict::new(py);
        d.set_item("entries", c.entries.len())?;
        d.set_item("bytes", c.bytes)?;
        d.set_item("cache_bytes", self.cache_bytes)?;
        d.set_item("hits", c.hits)?;
        d.set_item("misses", c.misses)?;
        d.set_item("evictions", c.evictions)?;
        d.set_item("refusals", c.refusals)?;
        d.set_item("max_seconds", self.budget.max_seconds)?;
        d.set_item("max_memory_mb", self.budget.max_memory_mb)?;
        d.set_item("cache_dir", self.cache_dir.as_ref().map(|p| p.display().to_string()))?;
        d.set_item("disk_hits", self.disk.hits.load(Ordering::Relaxed))?;
        d.set_item("disk_writes", self.disk.writes.load(Ordering::Relaxed))?;
        d.set_item("disk_bad_files", self.disk.bad_files.load(Ordering::Relaxed))?;
        d.set_item("disk_write_errors", self.disk.write_errors.load(Ordering::Relaxed))?;
        Ok(d)
    }

    /// Forget every compiled grammar and remembered refusal (grammars already returned stay
    /// valid).
    fn clear(&self) {
        let mut c = self.lock();
        c.entries.retain(|_, e| e.bytes == 0);
        c.bytes = 0;
    }
}

/// Drop the least recently used finished entries until the cache holds at most `budget` bytes.
fn evict(c: &mut Cache, budget: usize) {
    while c.bytes > budget {
        let Some(key) =
            c.entries.iter().filter(|(_, e)| e.bytes > 0).min_by_key(|(_, e)| e.last_use).map(|(k, _)| k.clone())
        else {
            break;
        };
        if let Some(e) = c.entries.remove(&key) {
            c.bytes -= e.bytes;
            c.evictions += 1;
        }
    }
}

/// The structural tag (JSON text) of an assistant turn with `tools` (JSON text of a tools list or
/// a request) in `format`'s wire format; `tool_choice` is JSON text when given.
#[pyfunction]
#[pyo3(signature = (tools, format, tool_choice = None, parallel_tool_calls = None, reasoning = false, max_whitespace = None))]
pub(crate) fn tools_structural_tag(
    tools: &str,
    format: &str,
    tool_choice: Option<&str>,
    parallel_tool_calls: Option<bool>,
    reasoning: bool,
    max_whitespace: Option<u32>,
) -> PyResult<String> {
    use dwac_grammar::tools::{request, structural_tag, ToolCalling, ToolChoice, ToolFormat};
    let f = ToolFormat::from_name(format)
        .ok_or_else(|| err(format!("unknown tool format {format:?} ({})", ToolFormat::NAMES.join(", "))))?;
    let v: serde_json::Value = serde_json::from_str(tools).map_err(|e| err(format!("tools: {e}")))?;
    let r = request(&v).map_err(|e| err(e.to_string()))?;
    let tool_choice = match tool_choice {
        Some(c) => {
            let c: serde_json::Value = serde_json::from_str(c).map_err(|e| err(format!("tool_choice: {e}")))?;
            ToolChoice::from_json(&c).map_err(|e| err(e.to_string()))?
        }
        None => r.tool_choice.unwrap_or(ToolChoice::Auto),
    };
    let c = ToolCalling {
        format: f,
        tool_choice,
        parallel_tool_calls: parallel_tool_calls.or(r.parallel_tool_calls).unwrap_or(true),
        reasoning,
        max_whitespace,
    };
    structural_tag(&r.tools, &c).map(|t| t.to_string()).map_err(|e| err(e.to_string()))
}

/// The key (hex) under which `source` of kind `kind`, compiled with `tokenizer` and these
/// options, is cached in an artifact directory (`dwac compile --cache-dir`,
/// `Compiler(cache_dir=…)`).
#[pyfunction]
#[pyo3(signature = (kind, source, tokenizer, compact = false, lenient = false, draft = None, max_whitespace = None, strict = false))]
#[expect(clippy::too_many_arguments, reason = "the Python signature: keyword arguments, each an option")]
pub(crate) fn cache_key(
    kind: &str,
    source: String,
    tokenizer: &Tokenizer,
    compact: bool,
    lenient: bool,
    draft: Option<String>,
    max_whitespace: Option<u32>,
    strict: bool,
) -> PyResult<String> {
    let options = CompileOptions { compact, lenient, draft, max_whitespace, mask_work: None, strict };
    Ok(Prepared::new(kind, source, &options).map_err(err)?.key(&tokenizer.inner))
}

/// Check `source` of kind `kind` without compiling it: the errors a compile would report about
/// the source itself (a grammar's syntax with its line:column, a schema's unsupported keyword
/// with its JSON pointer), in a small part of a compile's time and without a tokenizer. Returns
/// the warnings (`lenient`). A regex: its syntax. No GIL.
#[pyfunction]
#[pyo3(signature = (kind, source, compact = false, lenient = false, draft = None, max_whitespace = None, strict = false))]
#[expect(clippy::too_many_arguments, reason = "the Python signature: keyword arguments, each an option")]
pub(crate) fn check_source(
    py: Python<'_>,
    kind: &str,
    source: String,
    compact: bool,
    lenient: bool,
    draft: Option<String>,
    max_whitespace: Option<u32>,
    strict: bool,
) -> PyResult<Vec<String>> {
    let options = CompileOptions { compact, lenient, draft, max_whitespace, mask_work: None, strict };
    let prepared = Prepared::new(kind, source, &options).map_err(err)?;
    py.detach(move || prepared.check()).map_err(err)
}
