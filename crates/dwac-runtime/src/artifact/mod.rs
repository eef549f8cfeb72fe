//! The artifact: a versioned, mmap-able, zero-copy file holding everything a server needs
//! (vocabulary, lexer, LR tables, Parser DWA). `docs/FORMAT.md` is the byte-level spec; this
//! module is its reader and the single list of sections ([`columns`]) that the writer in
//! `dwac-compile` also uses.
//!
//! Opening validates, in time linear in the file size and in the order FORMAT.md gives, every
//! structure and every index the runtime will later follow, so a corrupt or truncated file is a
//! typed [`ArtifactError`], never a panic or an out-of-bounds read. The tables are then views
//! of the file's bytes ([`Array`]); nothing is copied but the terminal names.

use std::sync::Arc;

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::array::{Array, Backing, Col, Elem};
use crate::dwa::MaskTables;
use crate::matcher::Engine;
use crate::tables::{GrammarTables, LexerTables, LrTables, TableError, Vocabulary};

mod crc;
mod format;
#[cfg(feature = "unstable")]
mod layout;
pub mod transport;

pub use crc::crc32c;
use crc::crc32c_update;
use format::is_mask_kind;
pub use format::{
    kind, kind_info, narrowable, Header, SectionEntry, ENDIAN_PROBE, FLAG_MASK, HEADER_LEN, LABEL, MAGIC, MAJOR, MINOR,
    SECTION_ALIGN, SECTION_NARROW, SECTION_OPTIONAL,
};
#[cfg(feature = "unstable")]
pub use layout::{columns, header_for, layout, reseal, reseal_all};

/// Why an artifact could not be opened or used. Opening never panics: every corrupt, truncated
/// or foreign file ends here.
#[derive(Debug)]
#[non_exhaustive]
pub enum ArtifactError {
    /// Reading or mapping the file failed.
    Io {
        /// The file.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// Shorter than its header or than the header says.
    Truncated {
        /// Bytes there are.
        len: u64,
        /// Bytes the header needs or names.
        need: u64,
    },
    /// Not a dwac artifact (wrong magic or label).
    BadMagic,
    /// Written on (or read by) a big-endian machine: the format is little-endian.
    Endianness {
        /// The endianness probe as read.
        probe: u32,
    },
    /// A format major version this reader does not read.
    UnsupportedVersion {
        /// The file's major version.
        major: u16,
        /// The file's minor version.
        minor: u16,
    },
    /// The buffer is not aligned for zero-copy views.
    Misaligned {
        /// The alignment needed, in bytes.
        align: usize,
    },
    /// A structural field is wrong; `what` names it.
    Corrupt {
        /// The field or structure.
        what: String,
    },
    /// A section's (or the header's) checksum does not match its bytes.
    Checksum {
        /// The section's name.
        section: String,
    },
    /// The tables are inconsistent (an index out of range, …).
    Tables(TableError),
    /// The `.dwa.zst` transport form could not be decompressed.
    Zstd(String),
    /// A tokenizer whose vocabulary differs from the artifact's.
    TokenizerMismatch {
        /// The artifact's tokenizer fingerprint (hex).
        artifact: String,
        /// The given tokenizer's fingerprint (hex).
        given: String,
        /// The first difference between the two vocabularies, in words.
        first_difference: String,
    },
    /// A transport form that leaves the vocabulary out, opened without one
    /// ([`OpenOptions::vocabulary`] reads it).
    VocabularyNeeded,
    /// The vocabulary given to a transport form that leaves it out is not the artifact's: the
    /// named section's bytes differ in length or checksum.
    VocabularyMismatch {
        /// The section's name.
        section: String,
    },
}

impl std::fmt::Display for ArtifactError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArtifactError::Io { path, source } => write!(f, "{path}: {source}"),
            ArtifactError::Truncated { len, need } => {
                write!(f, "truncated artifact: {len} bytes, the header needs {need}")
            }
            ArtifactError::BadMagic => write!(f, "not a dwac artifact (bad magic)"),
            ArtifactError::Endianness { probe } => {
                write!(f, "artifact endianness probe reads {probe:#x}: the format is little-endian")
            }
            ArtifactError::UnsupportedVersion { major, minor } => write!(
                f,
                "artifact format version {major}.{minor} is not supported (this reader reads {MAJOR}.x up to {MAJOR}.{MINOR}); recompile it with this dwac"
            ),
            ArtifactError::Misaligned { align } => write!(f, "artifact buffer is not {align}-byte aligned"),
            ArtifactError::Corrupt { what } => write!(f, "corrupt artifact: {what}"),
            ArtifactError::Checksum { section } => write!(f, "corrupt artifact: checksum mismatch in {section}"),
            ArtifactError::Tables(e) => write!(f, "corrupt artifact: {e}"),
            ArtifactError::Zstd(e) => write!(f, "corrupt .dwa.zst artifact: {e}"),
            ArtifactError::VocabularyNeeded => write!(
                f,
                "this .dwa.zst leaves the vocabulary out: open it with its tokenizer's vocabulary (`--tokenizer`, Artifact::open_with_vocabulary)"
            ),
            ArtifactError::VocabularyMismatch { section } => write!(
                f,
                "the vocabulary given is not the artifact's ({section} differs): open it with the tokenizer it was compiled for"
            ),
            ArtifactError::TokenizerMismatch { artifact, given, first_difference } => write!(
                f,
                "tokenizer differs from the artifact's: artifact fingerprint {artifact}, given {given}; {first_difference}"
            ),
        }
    }
}

impl std::error::Error for ArtifactError {}

impl From<TableError> for ArtifactError {
    fn from(e: TableError) -> Self {
        ArtifactError::Tables(e)
    }
}

fn corrupt(what: impl Into<String>) -> ArtifactError {
    ArtifactError::Corrupt { what: what.into() }
}

/// An opened artifact: its header, metadata and a ready [`Engine`] whose tables are views of
/// the artifact's bytes. `Send + Sync`; share the engine (an `Arc`) among any number of
/// matchers and threads.
#[derive(Debug, Clone)]
pub struct Artifact {
    header: Header,
    #[cfg_attr(not(feature = "unstable"), allow(dead_code, reason = "read by `sections()`, feature `unstable`"))]
    sections: Vec<SectionEntry>,
    engine: Arc<Engine>,
    meta: Array<u8>,
    backing: Backing,
}

use transport::{decompress_with, is_transport};

/// How to open an artifact: [`Artifact::open`] and [`Artifact::from_bytes`] with options.
///
/// ```no_run
/// use dwac_runtime::{OpenOptions, Vocabulary};
/// # fn tokenizer_vocabulary() -> Vocabulary { Vocabulary::default() }
/// // A transport form compiled `--without-vocabulary`, given its tokenizer's vocabulary
/// // (`dwac_vocab::Tokenizer::vocab`):
/// let vocab = tokenizer_vocabulary();
/// let artifact = OpenOptions::new().vocabulary(&vocab).open("artifacts/book_flight.dwa.zst")?;
/// # Ok::<(), dwac_runtime::ArtifactError>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct OpenOptions<'v> {
    vocabulary: Option<&'v Vocabulary>,
    verify: bool,
}

impl Default for OpenOptions<'_> {
    fn default() -> Self {
        OpenOptions::new()
    }
}

impl<'v> OpenOptions<'v> {
    /// The defaults: full validation, no vocabulary given.
    pub fn new() -> OpenOptions<'v> {
        OpenOptions { vocabulary: None, verify: true }
    }

    /// The vocabulary a transport form may leave out (`dwac compile --zstd
    /// --without-vocabulary`): the left-out sections are filled from it, and it must be the
    /// artifact's own (each filled section's checksum is checked, else
    /// [`ArtifactError::VocabularyMismatch`]). Any other artifact ignores it. Without it, such
    /// a transport form is refused with [`ArtifactError::VocabularyNeeded`].
    pub fn vocabulary(mut self, vocab: &'v Vocabulary) -> OpenOptions<'v> {
        self.vocabulary = Some(vocab);
        self
    }

    /// Whether to verify the checksums and validate every table index (on by default,
    /// FORMAT.md §5 steps 1–9). Off, only the structure needed to take the views is checked, in
    /// time proportional to the number of sections: for files already verified at deploy time
    /// (with verification on, or `dwac inspect --verify`). Memory safety never depends on the
    /// file either way (every table read stays bounds-checked); a corrupt file opened without
    /// verification may make later calls panic instead of returning errors.
    pub fn verify(mut self, verify: bool) -> OpenOptions<'v> {
        self.verify = verify;
        self
    }

    /// Open an artifact file (`.dwa`, or the zstd transport form, recognized by its magic). A
    /// plain file is memory-mapped (feature `mmap`, on by default) or else read into an aligned
    /// buffer.
    pub fn open(&self, path: impl AsRef<std::path::Path>) -> Result<Artifact, ArtifactError> {
        Artifact::from_backing(load_with(path.as_ref(), self.vocabulary)?, self.verify)
    }

    /// Read an artifact (or its zstd transport form) from bytes, copying them once into an
    /// aligned buffer.
    pub fn from_bytes(&self, bytes: &[u8]) -> Result<Artifact, ArtifactError> {
        let backing =
            if is_transport(bytes) { decompress_with(bytes, self.vocabulary)? } else { Backing::copy_from(bytes) };
        Artifact::from_backing(backing, self.verify)
    }

    /// Use a static buffer holding a plain artifact without copying it (it must be 8-byte
    /// aligned, else [`ArtifactError::Misaligned`]). A transport form is decompressed as by
    /// [`OpenOptions::from_bytes`].
    pub fn from_static(&self, bytes: &'static [u8]) -> Result<Artifact, ArtifactError> {
        if is_transport(bytes) {
            return self.from_bytes(bytes);
        }
        Artifact::from_backing(Backing::from_static(bytes), self.verify)
    }
}

impl Artifact {
    /// Open an artifact file with the default [`OpenOptions`]: memory-mapped if it is a plain
    /// `.dwa` (feature `mmap`, on by default), decompressed if it is the zstd transport form,
    /// then fully validated.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Artifact, ArtifactError> {
        OpenOptions::new().open(path)
    }

    /// Read an artifact (or its zstd transport form) from bytes with the default
    /// [`OpenOptions`], copying them once into an aligned buffer, then validate it.
    pub fn from_bytes(bytes: &[u8]) -> Result<Artifact, ArtifactError> {
        OpenOptions::new().from_bytes(bytes)
    }

    /// Validate and open an artifact held in `backing`. With `verify`, checksums are checked
    /// and the tables validated (FORMAT.md §5, steps 1–9); without it, steps 1–6 minus the
    /// checksums.
    fn from_backing(backing: Backing, verify: bool) -> Result<Artifact, ArtifactError> {
        let bytes = backing.bytes();
        // 1. Magic, size, endianness, version.
        if bytes.len() < HEADER_LEN && !bytes.starts_with(&MAGIC[..bytes.len().min(8)]) {
            return Err(ArtifactError::BadMagic);
        }
        if bytes.len() < HEADER_LEN {
            return Err(ArtifactError::Truncated { len: bytes.len() as u64, need: HEADER_LEN as u64 });
        }
        if (bytes.as_ptr() as usize) & 7 != 0 {
            return Err(ArtifactError::Misaligned { align: 8 });
        }
        let (h, _) = Header::read_from_prefix(bytes).map_err(|_| corrupt("header"))?;
        if h.magic != MAGIC || h.label != LABEL {
            return Err(ArtifactError::BadMagic);
        }
        if h.endian != ENDIAN_PROBE || cfg!(target_endian = "big") {
            return Err(ArtifactError::Endianness { probe: h.endian });
        }
        if h.major != MAJOR || h.minor > MINOR {
            return Err(ArtifactError::UnsupportedVersion { major: h.major, minor: h.minor });
        }
        // 2. Header fields.
        if h.header_len as usize != HEADER_LEN || h.section_table as usize != HEADER_LEN {
            return Err(corrupt("header length or section table offset"));
        }
        if h.file_len != bytes.len() as u64 {
            return Err(ArtifactError::Truncated { len: bytes.len() as u64, need: h.file_len });
        }
        if h.flags & !FLAG_MASK != 0 {
            return Err(corrupt("unknown header flags"));
        }
        if h.reserved != [0; 4] || h.reserved2 != [0; 64] {
            return Err(corrupt("reserved header bytes are not zero"));
        }
        // 3. The section table, and the header checksum over it.
        let n = h.section_count as usize;
        let table_end = n
            .checked_mul(size_of::<SectionEntry>())
            .and_then(|x| x.checked_add(HEADER_LEN))
            .filter(|&e| e <= bytes.len())
            .ok_or_else(|| corrupt("section table runs past the end of the file"))?;
        let sections = <[SectionEntry]>::ref_from_bytes(&bytes[HEADER_LEN..table_end])
            .map_err(|_| corrupt("section table"))?
            .to_vec();
        if verify && header_checksum(bytes) != Some(h.header_checksum) {
            return Err(ArtifactError::Checksum { section: "header".into() });
        }
        // 4. Every section: known kind (or optional), aligned, in bounds, in increasing kind and
        //    offset order without overlap, a whole number of elements; padding zero; checksum.
        let mut prev_kind = 0u32;
        let mut prev_end = table_end;
        for e in &sections {
            let name = kind_info(e.kind).map_or_else(|| format!("section kind {:#06x}", e.kind), |i| i.0.to_string());
            if e.kind <= prev_kind {
                return Err(corrupt(format!("{name}: section kinds must be strictly increasing")));
            }
            prev_kind = e.kind;
            if e.flags & !(SECTION_OPTIONAL | SECTION_NARROW) != 0 {
                return Err(corrupt(format!("{name}: unknown section flags")));
            }
            if e.flags & SECTION_NARROW != 0 && !narrowable(e.kind) {
                return Err(corrupt(format!("{name}: this section cannot be narrowed")));
            }
            let (Ok(off), Ok(len)) = (usize::try_from(e.offset), usize::try_from(e.len)) else {
                return Err(corrupt(format!("{name}: offset or length out of range")));
            };
            let end = off.checked_add(len).filter(|&x| x <= bytes.len());
            let Some(end) = end else {
                return Err(corrupt(format!("{name}: runs past the end of the file")));
            };
            if off & (SECTION_ALIGN - 1) != 0 || off < prev_end {
                return Err(corrupt(format!("{name}: misaligned or overlapping")));
            }
            if verify && bytes[prev_end..off].iter().any(|&b| b != 0) {
                return Err(corrupt(format!("{name}: padding before it is not zero")));
            }
            prev_end = end;
            let elem = |size| if e.flags & SECTION_NARROW != 0 { 2 } else { size };
            match kind_info(e.kind).map(|(n, size)| (n, elem(size))) {
                Some((_, size)) if len % size != 0 => {
                    return Err(corrupt(format!("{name}: length {len} is not a multiple of {size}")))
                }
                None if e.flags & SECTION_OPTIONAL == 0 => {
                    return Err(corrupt(format!("{name}: unknown required section")))
                }
                _ => {}
            }
            if verify && crc32c(&bytes[off..end]) as u64 != e.checksum {
                return Err(ArtifactError::Checksum { section: name });
            }
        }
        if prev_end != bytes.len() {
            return Err(corrupt("bytes after the last section"));
        }
        // 5. Which sections are present.
        let has_mask = h.flags & FLAG_MASK != 0;
        let find = |k: u32| sections.iter().find(|e| e.kind == k);
        for k in (0..0x0800).filter(|&k| kind_info(k).is_some()) {
            if k == DWA_AUX_START {
                // (4.1, and only where some lexer state has a second start.)
                if find(k).is_some() && (!has_mask || h.minor < 1) {
                    return Err(corrupt("dwa.aux_start without the mask flag or in a 4.0 file"));
                }
                continue;
            }
            let want = !is_mask_kind(k) || has_mask;
            if want != find(k).is_some() {
                let name = kind_info(k).map_or("?", |i| i.0);
                return Err(corrupt(if want {
                    format!("missing section {name}")
                } else {
                    format!("section {name} without the mask flag")
                }));
            }
        }
        // 6. Views.
        fn col<T: Elem>(backing: &Backing, sections: &[SectionEntry], k: u32) -> Result<Array<T>, ArtifactError> {
            let name = kind_info(k).map_or("?", |i| i.0);
            let e = sections.iter().find(|e| e.kind == k).ok_or_else(|| corrupt(format!("missing section {name}")))?;
            Array::view(backing, e.offset as usize, e.len as usize / size_of::<T>())
                .ok_or_else(|| corrupt(format!("{name}: cannot be viewed (bounds or alignment)")))
        }
        use kind::{
            DWA_AUX_START, DWA_EDGE_LABEL, DWA_EDGE_OFF, DWA_EDGE_OUTCOME, DWA_LABEL_OFF, DWA_OUTCOME_OFF,
            DWA_OUTCOME_RHO, DWA_OUTCOME_TARGET, DWA_START, DWA_START_RHO, DWA_UNDECIDED, KILL_K, KILL_S, KILL_SET,
            LEX_ACCEPT, LEX_ACCEPT_OFF, LEX_BYTE_CLASS, LEX_FORK, LEX_FORK_OFF, LEX_IGNORED, LEX_MUNCH, LEX_NEXT_PLUS,
            LEX_NEXT_PLUS_ROW, LEX_PRIORITY, LEX_TRANS, LR_ACTIONS, LR_ACTION_OFF, LR_ACTION_ROW, LR_ACTION_TERM,
            LR_GOTO_NT, LR_GOTO_ROW, LR_GOTO_TARGET, LR_RULE_LEN, LR_RULE_LHS, META, NAME_BYTES, NAME_OFF, SET_BLOCKS,
            SET_BLOCK_REFS, SET_DENSE, SET_OFF, SET_RANGES, VOCAB_BYTES, VOCAB_EOS, VOCAB_OFFSETS, VOCAB_SPECIAL,
        };
        let c32 = |k| col::<u32>(&backing, &sections, k);
        let c8 = |k| col::<u8>(&backing, &sections, k);
        let c64 = |k| col::<u64>(&backing, &sections, k);
        // A narrowable column, wide or narrow as its section says.
        let cn = |k| -> Result<Col, ArtifactError> {
            let narrow = sections.iter().any(|e| e.kind == k && e.flags & SECTION_NARROW != 0);
            Ok(if narrow { Col::Narrow(col::<u16>(&backing, &sections, k)?) } else { Col::Wide(c32(k)?) })
        };
        let vocab = Vocabulary {
            offsets: c32(VOCAB_OFFSETS)?,
            bytes: c8(VOCAB_BYTES)?,
            special: c8(VOCAB_SPECIAL)?,
            eos: c32(VOCAB_EOS)?,
            special_names: Default::default(),
        };
        if vocab.len() != h.vocab_size as usize || vocab.eos.len() != h.eos_count as usize {
            return Err(corrupt("vocabulary size or end-token count differs from the header"));
        }
        if h.mask_words != h.vocab_size.div_ceil(32) {
            return Err(corrupt("mask words differ from the vocabulary size"));
        }
        let lexer = LexerTables {
            num_states: h.lexer_states,
            num_terminals: h.num_terminals,
            words: h.num_terminals.div_ceil(64),
            start: h.lexer_start,
            trans: cn(LEX_TRANS)?,
            byte_class: c8(LEX_BYTE_CLASS)?,
            // (Checked by `LexerTables::validate`: the table must be `num_states` whole rows.)
            num_classes: {
                let n = h.lexer_states.max(1) as usize;
                let len = sections
                    .iter()
                    .find(|e| e.kind == LEX_TRANS)
                    .map_or(0, |e| e.len as usize / if e.flags & SECTION_NARROW != 0 { 2 } else { 4 });
                if len % n != 0 {
                    return Err(corrupt("lexer.trans is not a whole number of rows"));
                }
                (len / n) as u32
            },
            accept_off: c32(LEX_ACCEPT_OFF)?,
            accept: c32(LEX_ACCEPT)?,
            next_plus: c64(LEX_NEXT_PLUS)?,
            next_plus_row: cn(LEX_NEXT_PLUS_ROW)?,
            ignored: c64(LEX_IGNORED)?,
            munch: c8(LEX_MUNCH)?,
            priority: col::<i32>(&backing, &sections, LEX_PRIORITY)?,
            fork_off: c32(LEX_FORK_OFF)?,
            fork: c32(LEX_FORK)?,
        };
        let lr = LrTables {
            num_states: h.lr_states,
            num_terminals: h.num_terminals,
            num_nonterminals: h.num_nonterminals,
            action_row: c32(LR_ACTION_ROW)?,
            action_term: c32(LR_ACTION_TERM)?,
            action_off: c32(LR_ACTION_OFF)?,
            actions: c32(LR_ACTIONS)?,
            goto_row: c32(LR_GOTO_ROW)?,
            goto_nt: c32(LR_GOTO_NT)?,
            goto_target: c32(LR_GOTO_TARGET)?,
            rule_lhs: c32(LR_RULE_LHS)?,
            rule_len: c32(LR_RULE_LEN)?,
        };
        // 7. Terminal names (the one copy: `String`s for diagnostics) and metadata, UTF-8.
        let (name_off, name_bytes) = (c32(NAME_OFF)?, c8(NAME_BYTES)?);
        if name_off.len() != h.num_terminals as usize + 1
            || name_off.first() != Some(&0)
            || name_off.last().map(|&x| x as usize) != Some(name_bytes.len())
            || name_off.windows(2).any(|w| w[0] > w[1])
        {
            return Err(corrupt("terminal name offsets"));
        }
        let mut terminal_names = Vec::with_capacity(h.num_terminals as usize);
        for w in name_off.windows(2) {
            let s = std::str::from_utf8(&name_bytes[w[0] as usize..w[1] as usize])
                .map_err(|_| corrupt("terminal name is not UTF-8"))?;
            terminal_names.push(s.to_string());
        }
        let meta = c8(META)?;
        if std::str::from_utf8(&meta).is_err() {
            return Err(corrupt("metadata is not UTF-8"));
        }
        let tables = GrammarTables { lexer, lr, terminal_names };
        let mask = if has_mask {
            let m = MaskTables {
                num_tokens: h.vocab_size,
                start: c32(DWA_START)?,
                start_rho: c32(DWA_START_RHO)?,
                undecided: c32(DWA_UNDECIDED)?,
                aux_start: if sections.iter().any(|e| e.kind == DWA_AUX_START) {
                    c32(DWA_AUX_START)?
                } else {
                    Array::default()
                },
                edge_off: c32(DWA_EDGE_OFF)?,
                label_off: c32(DWA_LABEL_OFF)?,
                edge_label: cn(DWA_EDGE_LABEL)?,
                edge_outcome: cn(DWA_EDGE_OUTCOME)?,
                outcome_off: c32(DWA_OUTCOME_OFF)?,
                outcome_target: cn(DWA_OUTCOME_TARGET)?,
                outcome_rho: cn(DWA_OUTCOME_RHO)?,
                set_off: c32(SET_OFF)?,
                set_ranges: c32(SET_RANGES)?,
                set_dense: c32(SET_DENSE)?,
                block_refs: c32(SET_BLOCK_REFS)?,
                blocks: c32(SET_BLOCKS)?,
                kill_s: c32(KILL_S)?,
                kill_k: c32(KILL_K)?,
                kill_set: c32(KILL_SET)?,
            };
            if m.num_states() != h.dwa_states as usize || m.num_sets() != h.token_sets as usize {
                return Err(corrupt("DWA state or token set count differs from the header"));
            }
            Some(m)
        } else {
            if h.dwa_states != 0 || h.token_sets != 0 {
                return Err(corrupt("DWA counts without the mask flag"));
            }
            None
        };
        // 8–9. Every index the runtime follows (Engine::with_mask validates the tables).
        let engine =
            if verify { Engine::validated(tables, vocab, mask)? } else { Engine::unchecked(tables, vocab, mask) };
        Ok(Artifact { header: h, sections, engine: Arc::new(engine), meta, backing })
    }

    /// The engine to make matchers from (`Matcher::new(artifact.engine().clone())`).
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The header (format version, fingerprints). Unstable (feature `unstable`).
    #[cfg(feature = "unstable")]
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The section table. Unstable (feature `unstable`).
    #[cfg(feature = "unstable")]
    pub fn sections(&self) -> &[SectionEntry] {
        &self.sections
    }

    /// The metadata section (JSON text: source, options, compiler version, statistics).
    pub fn metadata(&self) -> &str {
        std::str::from_utf8(&self.meta).unwrap_or("")
    }

    /// The artifact's bytes (decompressed, as validated): what a `.dwa` file of it holds.
    pub fn as_bytes(&self) -> &[u8] {
        self.backing.bytes()
    }

    /// Size of the (decompressed) artifact in bytes.
    pub fn len(&self) -> usize {
        self.backing.bytes().len()
    }

    /// Is the artifact empty? (Never, once opened: kept for `len`'s sake.)
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Is the artifact a file mapping (not a heap copy)?
    pub fn is_mapped(&self) -> bool {
        self.backing.is_mapped()
    }

    /// Refuse a tokenizer (given by its fingerprint and vocabulary) that is not the one the
    /// artifact was compiled with, naming both fingerprints and the first token that differs.
    pub fn check_tokenizer(&self, fingerprint: &[u8; 32], vocab: &Vocabulary) -> Result<(), ArtifactError> {
        if *fingerprint == self.header.tokenizer_fingerprint {
            return Ok(());
        }
        let mine = self.engine.vocab();
        let first_difference = if mine.len() != vocab.len() {
            format!("vocabulary sizes differ: artifact {}, given {}", mine.len(), vocab.len())
        } else {
            (0..mine.len() as u32)
                .find(|&i| mine.token_bytes(i) != vocab.token_bytes(i) || mine.is_special(i) != vocab.is_special(i))
                .map(|i| {
                    let show = |v: &Vocabulary| {
                        let b = v.token_bytes(i).unwrap_or_default().escape_ascii().to_string();
                        if v.is_special(i) {
                            format!("\"{b}\" (special)")
                        } else {
                            format!("\"{b}\"")
                        }
                    };
                    format!("first differing token: id {i}, artifact {}, given {}", show(mine), show(vocab))
                })
                .unwrap_or_else(|| {
                    if mine.eos != vocab.eos {
                        format!("end tokens differ: artifact {:?}, given {:?}", &mine.eos[..], &vocab.eos[..])
                    } else {
                        "every token is the same (the fingerprints come from different versions)".into()
                    }
                })
        };
        Err(ArtifactError::TokenizerMismatch {
            artifact: hex(&self.header.tokenizer_fingerprint),
            given: hex(fingerprint),
            first_difference,
        })
    }
}

/// Lower-case hex of a fingerprint.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The bytes of the artifact file at `path` (mapped or read, decompressed if need be), with the
/// vocabulary a transport form may leave out.
fn load_with(path: &std::path::Path, vocab: Option<&Vocabulary>) -> Result<Backing, ArtifactError> {
    let io = |source| ArtifactError::Io { path: path.display().to_string(), source };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut magic = [0u8; 4];
    let is_zstd = {
        use std::io::Read;
        let mut f = &file;
        let n = f.read(&mut magic).map_err(io)?;
        n == 4 && is_transport(&magic)
    };
    if is_zstd {
        return decompress_with(&std::fs::read(path).map_err(io)?, vocab);
    }
    #[cfg(feature = "mmap")]
    {
        // SAFETY: the mapping is read-only, and the writer never modifies a file in place (it
        // writes a temporary file and renames it over the old one), so the mapped bytes do not
        // change under us as long as nobody else truncates or rewrites the file in place.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        Ok(Backing::from_mmap(map))
    }
    #[cfg(not(feature = "mmap"))]
    {
        Ok(Backing::copy_from(&std::fs::read(path).map_err(io)?))
    }
}

/// The header checksum of a laid-out file: CRC-32C of the header (its checksum field zero) and
/// the section table; `None` if `bytes` is too short to hold them.
pub(crate) fn header_checksum(bytes: &[u8]) -> Option<u64> {
    let (h, _) = Header::read_from_prefix(bytes).ok()?;
    let table_len = (h.section_count as usize).checked_mul(size_of::<SectionEntry>())?;
    let table = bytes.get(HEADER_LEN..HEADER_LEN.checked_add(table_len)?)?;
    let mut head = h;
    head.header_checksum = 0;
    let c = crc32c_update(!0, head.as_bytes());
    Some(!crc32c_update(c, table) as u64)
}
