//! The artifact writer: an [`Engine`] plus where it came from → the bytes `docs/FORMAT.md`
//! specifies (laid out by `dwac_runtime::unstable::artifact::layout`, the same section list the reader
//! uses), written atomically, optionally in the zstd transport form.
//!
//! The bytes are deterministic: the same source, options, tokenizer and compiler version give
//! the same file. The metadata therefore holds counts, never times or absolute paths.

use std::io::Write;
use std::path::Path;

use dwac_grammar::schema::SchemaOptions;
use dwac_runtime::unstable::artifact::{self, hex};
use dwac_runtime::Engine;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::dwa::MaskOptions;
use crate::{CompileStats, EngineOptions, SourceKind};

/// What the grammar came from.
#[derive(Clone, Debug)]
pub struct SourceInfo {
    /// A display name (the input's file name, or `--regex`).
    pub name: String,
    /// `"lark"`, `"gbnf"`, `"json-schema"`, `"structural-tag"` or `"regex"`.
    pub kind: &'static str,
    /// The source text (the grammar, the schema or the pattern).
    pub text: String,
}

impl SourceInfo {
    /// The name of a source kind as written in [`SourceInfo::kind`] and the metadata:
    /// `"lark"`, `"gbnf"`, `"json-schema"` or `"structural-tag"`.
    pub fn kind_name(kind: SourceKind) -> &'static str {
        match kind {
            SourceKind::Lark => "lark",
            SourceKind::Gbnf => "gbnf",
            SourceKind::JsonSchema => "json-schema",
            SourceKind::StructuralTag => "structural-tag",
        }
    }
}

/// The tokenizer the engine was compiled with.
#[derive(Clone, Debug)]
pub struct TokenizerInfo {
    /// The tokenizer's name (as given when it was loaded), written into the metadata.
    pub name: String,
    /// SHA-256 of the tokenizer's vocabulary, written into the header and the metadata.
    pub fingerprint: [u8; 32],
}

/// Every compile option, in one canonical form. Destructured in full, so adding an option
/// without putting it here is a compile error, and the fingerprint can never miss one.
pub fn options_json(schema: &SchemaOptions, engine: &EngineOptions) -> serde_json::Value {
    let SchemaOptions { whitespace, lenient, default_draft, strict } = schema;
    let EngineOptions { mask, mask_options } = engine;
    // `walk_thread`, `link_states`, `rename_states` and `apart_classes` change how the tables
    // are built, not what they are; `max_dwa_states` only whether they are built;
    // `follow_bytes` follows from the grammar.
    let MaskOptions {
        max_states_per_lexer_state,
        work_per_lexer_state,
        walk_thread: _,
        link_states: _,
        max_dwa_states: _,
        follow_bytes: _,
        rename_states: _,
        saturate,
        saturate_beside,
        apart_classes: _,
    } = mask_options;
    let mut o = json!({
        "schema.whitespace": format!("{whitespace:?}"),
        "schema.lenient": lenient,
        "schema.default_draft": default_draft.map(|d| format!("{d:?}")),
        "mask": mask,
        "mask.max_states_per_lexer_state": max_states_per_lexer_state,
        "mask.work_per_lexer_state": work_per_lexer_state,
    });
    // Written only when set, so the artifacts (and fingerprints) of schemas compiled without it
    // are those of compilers from before the option.
    if *strict {
        o["schema.strict"] = json!(true);
    }
    if !*saturate {
        o["mask.saturate"] = json!(false);
    }
    // (Where the second thread starts does not change the tables, but a restarted attempt may
    // fit a budget that one attempt would not: a changed setting is written.)
    if *saturate_beside != MaskOptions::default().saturate_beside {
        o["mask.saturate_beside"] = json!([saturate_beside.0, saturate_beside.1]);
    }
    o
}

/// The compiler version written into artifacts and fingerprints.
pub const COMPILER_VERSION: &str = concat!("dwac ", env!("CARGO_PKG_VERSION"));

/// SHA-256 over the compiler version, the source kind and text, and every option.
pub fn grammar_fingerprint(source: &SourceInfo, schema: &SchemaOptions, engine: &EngineOptions) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in
        ["dwac-grammar-fp-v1", COMPILER_VERSION, source.kind, &source.text, &options_json(schema, engine).to_string()]
    {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    h.finalize().into()
}

/// A source's text in the form cache keys are taken over ([`cache_key`]): a JSON source (a
/// schema or a structural tag) that parses, with the whitespace between its tokens taken out
/// (every string, number and escape kept as written: a lossless form, so that two schemas are
/// one key only if they are the same JSON text but for spacing); any other source as it is.
pub fn canonical_source(kind: &str, text: &str) -> String {
    if !matches!(kind, "json-schema" | "structural-tag") || serde_json::from_str::<serde_json::Value>(text).is_err() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}

/// The key a compiled constraint is cached under, the same wherever it is computed (`dwac
/// compile --cache-dir`, the Python `Compiler(cache_dir=…)`, the server backends): SHA-256,
/// in hex, over the grammar fingerprint of the canonical source ([`canonical_source`],
/// [`grammar_fingerprint`]: the compiler version, the source's kind and text, every option)
/// and the tokenizer's fingerprint. An artifact is found under its key only by a request that
/// would compile to the same bytes but for the metadata's source text.
pub fn cache_key(source: &SourceInfo, tokenizer: &[u8; 32], schema: &SchemaOptions, engine: &EngineOptions) -> String {
    let canonical = SourceInfo { text: canonical_source(source.kind, &source.text), ..source.clone() };
    let mut h = Sha256::new();
    // (v2: the language of a bounded whitespace, `--max-whitespace`, changed: `null`, `true`
    // and `false` take none around them. An artifact directory made before holds artifacts of
    // the older language under the v1 keys, never found again.)
    h.update(b"dwac-cache-key-v2");
    h.update(grammar_fingerprint(&canonical, schema, engine));
    h.update(tokenizer);
    hex(&h.finalize())
}

/// The metadata section: source, options, tokenizer, compiler and statistics (deterministic).
pub fn metadata(
    source: &SourceInfo,
    tokenizer: &TokenizerInfo,
    engine: &Engine,
    stats: &CompileStats,
    schema: &SchemaOptions,
    opts: &EngineOptions,
) -> serde_json::Value {
    let mask = stats.mask.as_ref().map(|m| {
        let mut o = json!({
            "dwa_states": m.dwa_states,
            "max_lookback": if m.max_lookback == u32::MAX { json!("unbounded") } else { json!(m.max_lookback) },
            "token_classes": m.token_classes,
            "token_sets": m.token_sets,
            "lexer_states_with_dwa": m.lexer_states_with_dwa,
            "lexer_states_over_budget": m.lexer_states_over_budget,
            "undecided_tokens": m.undecided_tokens,
            "carried_inhibitors": m.carried_inhibitors,
        });
        // (Written only when there are some, so other artifacts are those of compilers from
        // before backward saturation.)
        if m.tokens_saturated > 0 {
            o["tokens_saturated"] = json!(m.tokens_saturated);
            o["second_starts"] = json!(m.second_starts);
        }
        o
    });
    // A 4.1 artifact only where it has what 4.1 added (lexer states with a second start).
    let minor = if stats.mask.as_ref().is_some_and(|m| m.second_starts > 0) { artifact::MINOR } else { 0 };
    let mut meta = json!({
        "format": format!("dwac artifact {}.{minor}", artifact::MAJOR),
        "compiler": COMPILER_VERSION,
        "source": {
            "name": source.name,
            "kind": source.kind,
            "sha256": hex(&Sha256::digest(source.text.as_bytes())),
        },
        "options": options_json(schema, opts),
        "tokenizer": {
            "name": tokenizer.name,
            "fingerprint": hex(&tokenizer.fingerprint),
            "vocab_size": engine.vocab().len(),
            "eos": engine.vocab().eos(),
        },
        "grammar": {
            "terminals": stats.terminals,
            "rules": stats.rules_in,
            "rules_normalized": stats.rules_normalized,
            "lexer_states": stats.lexer_states,
            "lr_states": stats.lr_states,
            "lr_conflicts": stats.lr_conflicts,
            "right_recursive_left": stats.right_recursive_left,
            "warnings": stats.warnings.iter().map(|w| w.0.to_string()).collect::<Vec<_>>(),
        },
        "mask": mask,
    });
    // (Only for character-level grammars: other artifacts' metadata is as it was.)
    if let Some(li) = &stats.lexer_inference {
        meta["grammar"]["lexer_inference"] = json!({
            "regular_rules": li.lifted.regular,
            "whole_grammar": li.lifted.whole,
            "terminals": li.lifted.terminals.iter().map(|t| json!({"name": t.name, "rules": t.rules})).collect::<Vec<_>>(),
        });
    }
    // (Only for grammars that name tokens: the vocabulary sections hold the grammar's
    // vocabulary, these tokens spelled by their escapes; docs/FORMAT.md.)
    if let Some(tt) = &stats.token_terminals {
        meta["grammar"]["token_terminals"] = json!({
            "escaped_tokens": tt.escaped,
            "terminals": tt.terminals.iter().map(|(name, n)| json!({"name": name, "tokens": n})).collect::<Vec<_>>(),
        });
    }
    meta
}

/// What an artifact is laid out from besides its engine ([`artifact_bytes`]'s other
/// arguments): kept by a grammar compiled in process that lays its artifact out only when one
/// is asked for (the Python `Grammar`).
pub struct ArtifactSource {
    /// The source compiled.
    pub source: SourceInfo,
    /// The tokenizer compiled for.
    pub tokenizer: TokenizerInfo,
    /// The compile's statistics.
    pub stats: CompileStats,
    /// The JSON Schema options compiled with.
    pub schema: SchemaOptions,
    /// The engine options compiled with.
    pub options: EngineOptions,
}

impl ArtifactSource {
    /// The artifact of `engine` ([`artifact_bytes`]).
    pub fn bytes(&self, engine: &Engine) -> Vec<u8> {
        artifact_bytes(engine, &self.source, &self.tokenizer, &self.stats, &self.schema, &self.options)
    }

    /// Its metadata section's text, as [`ArtifactSource::bytes`] writes it.
    pub fn metadata_text(&self, engine: &Engine) -> String {
        metadata_text(&metadata(&self.source, &self.tokenizer, engine, &self.stats, &self.schema, &self.options))
    }
}

/// The metadata section's text.
fn metadata_text(meta: &serde_json::Value) -> String {
    serde_json::to_string_pretty(meta).unwrap_or_default()
}

/// The artifact's bytes.
pub fn artifact_bytes(
    engine: &Engine,
    source: &SourceInfo,
    tokenizer: &TokenizerInfo,
    stats: &CompileStats,
    schema: &SchemaOptions,
    opts: &EngineOptions,
) -> Vec<u8> {
    let mut header = artifact::header_for(engine);
    header.tokenizer_fingerprint = tokenizer.fingerprint;
    header.grammar_fingerprint = grammar_fingerprint(source, schema, opts);
    let meta = metadata_text(&metadata(source, tokenizer, engine, stats, schema, opts));
    artifact::layout(header, &meta, &artifact::columns(engine))
}

/// Default zstd level of the transport form: measured on a 2.9 MB MaskBench artifact, level 9
/// takes 0.05 s for 440 KB, level 19 0.41 s for 370 KB.
pub const ZSTD_LEVEL: i32 = 9;

/// The zstd transport form (FORMAT.md §6): one frame with its content size and checksum,
/// behind a delta filter over the `u32` sections it makes smaller (see [`delta_ranges`]).
pub fn compress(bytes: &[u8], level: i32) -> std::io::Result<Vec<u8>> {
    compress_sections(bytes, level, &[])
}

/// The sections [`compress_without_vocabulary`] leaves out: the vocabulary's token bytes,
/// offsets and special flags (its end tokens, a few bytes, stay).
pub const VOCABULARY_SECTIONS: [u32; 3] = {
    use dwac_runtime::unstable::artifact::kind::{VOCAB_BYTES, VOCAB_OFFSETS, VOCAB_SPECIAL};
    [VOCAB_OFFSETS, VOCAB_BYTES, VOCAB_SPECIAL]
};

/// The transport form without the vocabulary ([`VOCABULARY_SECTIONS`]; FORMAT.md §6): what
/// every artifact of a tokenizer repeats, and most of a small grammar's transport form. It
/// opens only with the artifact's own vocabulary
/// (`dwac_runtime::Artifact::open_with_vocabulary`), which the section checksums check.
pub fn compress_without_vocabulary(bytes: &[u8], level: i32) -> std::io::Result<Vec<u8>> {
    compress_sections(bytes, level, &VOCABULARY_SECTIONS)
}

/// [`compress`], with the sections of `leave_out` zeroed in the data frame and listed in a
/// frame of their own (none is delta-coded).
fn compress_sections(bytes: &[u8], level: i32, leave_out: &[u32]) -> std::io::Result<Vec<u8>> {
    let elided: Vec<(u64, u64)> =
        section_ranges(bytes).into_iter().filter(|r| leave_out.contains(&r.0)).map(|r| (r.1, r.2)).collect();
    if elided.len() != leave_out.len() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "not an artifact with those sections"));
    }
    let ranges: Vec<(u64, u64)> = delta_ranges(bytes).into_iter().filter(|r| !elided.contains(r)).collect();
    let mut filtered = bytes.to_vec();
    for &(off, len) in &elided {
        filtered[off as usize..(off + len) as usize].fill(0);
    }
    dwac_runtime::unstable::transport::delta(&mut filtered, &ranges);
    let mut c = zstd::bulk::Compressor::new(level)?;
    c.include_checksum(true)?;
    c.include_contentsize(true)?;
    let mut out = Vec::new();
    if !leave_out.is_empty() {
        let mut kinds = leave_out.to_vec();
        kinds.sort_unstable();
        out.extend_from_slice(&dwac_runtime::unstable::transport::elided_frame(&kinds));
    }
    if !ranges.is_empty() {
        out.extend_from_slice(&dwac_runtime::unstable::transport::filter_frame(&ranges));
    }
    out.extend_from_slice(&c.compress(&filtered)?);
    Ok(out)
}

/// Every section of a laid-out artifact as (kind, offset, length), in bounds; empty if `bytes`
/// is not a readable artifact.
fn section_ranges(bytes: &[u8]) -> Vec<(u32, u64, u64)> {
    use dwac_runtime::unstable::artifact::HEADER_LEN;
    let u32_at = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
    let u64_at = |at: usize| bytes.get(at..at + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
    let Some(count) = u32_at(64) else { return Vec::new() };
    let mut out = Vec::new();
    for i in 0..count as usize {
        // A section table entry: kind u32, flags u32, offset u64, length u64, checksum u64.
        let at = HEADER_LEN + i * 32;
        let (Some(kind), Some(offset), Some(length)) = (u32_at(at), u64_at(at + 8), u64_at(at + 16)) else { break };
        if offset.checked_add(length).is_some_and(|end| end <= bytes.len() as u64) {
            out.push((kind, offset, length));
        }
    }
    out
}

/// The sections of a laid-out artifact worth delta-coding in the transport form: every section
/// of `u32` elements (at least 4 KiB) whose delta-coded bytes compress smaller, judged by a
/// trial at zstd level 1 (fast; the ranking agrees with higher levels on the columns measured).
/// Offsets, sorted labels and the edges' weights gain most. Empty if `bytes` is not a readable
/// artifact.
pub fn delta_ranges(bytes: &[u8]) -> Vec<(u64, u64)> {
    use dwac_runtime::unstable::artifact::kind_info;
    let size = |b: &[u8]| zstd::bulk::compress(b, 1).map_or(usize::MAX, |z| z.len());
    let mut ranges = Vec::new();
    for (kind, offset, length) in section_ranges(bytes) {
        let (Ok(off), Ok(len)) = (usize::try_from(offset), usize::try_from(length)) else { continue };
        let Some(data) = off.checked_add(len).and_then(|end| bytes.get(off..end)) else { continue };
        if kind_info(kind).map(|k| k.1) != Some(4) || len < 4096 || off % 4 != 0 {
            continue;
        }
        let mut d = data.to_vec();
        dwac_runtime::unstable::transport::delta(&mut d, &[(0, len as u64)]);
        if size(&d) < size(data) {
            ranges.push((offset, length));
        }
    }
    ranges.sort_unstable();
    ranges
}

/// Write `bytes` to `path` atomically: into a temporary file in the same directory, flushed,
/// then renamed into place (a reader that has the old file mapped keeps the old bytes). The
/// parent directory is created if missing.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new().prefix(".dwac-").suffix(".tmp").tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    // A temporary file is private (0600); an artifact is an ordinary read-only-shared file.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
