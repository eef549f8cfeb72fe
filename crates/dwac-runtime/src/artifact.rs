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

/// The first eight bytes of every artifact.
pub const MAGIC: [u8; 8] = *b"DWAC-ART";
/// NUL-padded label after the magic, so `xxd` output says what the file is.
pub const LABEL: [u8; 24] = *b"dwac grammar artifact\0\0\0";
/// Written as a native `u32`; reads as `0xFEFF` on a little-endian host.
pub const ENDIAN_PROBE: u32 = 0xFEFF;
/// Format major version: a reader refuses any other major.
pub const MAJOR: u16 = 3;
/// Format minor version: a reader accepts older minors (and ignores optional sections it does
/// not know).
pub const MINOR: u16 = 1;
/// Size of [`Header`].
pub const HEADER_LEN: usize = 256;
/// Every section starts at a multiple of this.
pub const SECTION_ALIGN: usize = 64;
/// Header flag: the file holds the Parser DWA (mask) sections.
pub const FLAG_MASK: u32 = 1;
/// Section flag: a reader that does not know the kind may skip the section.
pub const SECTION_OPTIONAL: u32 = 1;
/// Section flag (format 3.1): a `u32` column stored as `u16`s, `0xFFFF` standing for
/// `u32::MAX` ([`crate::array::Col`]). Only on the kinds [`narrowable`] names.
pub const SECTION_NARROW: u32 = 2;

/// The `u32` sections a writer may narrow to 16 bits: the big index columns (the lexer's
/// transitions and `Next⁺` rows, the Parser DWA's edge labels, targets and outputs).
pub fn narrowable(k: u32) -> bool {
    matches!(
        k,
        kind::LEX_TRANS | kind::LEX_NEXT_PLUS_ROW | kind::DWA_EDGE_LABEL | kind::DWA_EDGE_TARGET | kind::DWA_EDGE_RHO
    )
}

/// The fixed header at byte 0 (all integers little-endian; see FORMAT.md §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct Header {
    pub magic: [u8; 8],
    pub label: [u8; 24],
    pub endian: u32,
    pub major: u16,
    pub minor: u16,
    /// [`FLAG_MASK`]; other bits are zero.
    pub flags: u32,
    /// Always [`HEADER_LEN`].
    pub header_len: u32,
    /// The whole file's length in bytes.
    pub file_len: u64,
    /// CRC-32C of the header (this field zero) and the section table.
    pub header_checksum: u64,
    pub section_count: u32,
    /// Byte offset of the section table (right after the header).
    pub section_table: u32,
    pub vocab_size: u32,
    pub eos_count: u32,
    /// `u32` words of a token mask: `ceil(vocab_size / 32)`.
    pub mask_words: u32,
    pub lexer_states: u32,
    pub lexer_start: u32,
    pub num_terminals: u32,
    pub lr_states: u32,
    pub num_nonterminals: u32,
    pub dwa_states: u32,
    pub token_sets: u32,
    pub reserved: [u32; 4],
    /// SHA-256 fingerprint of the tokenizer's vocabulary (`dwac-vocab`'s canonical encoding).
    pub tokenizer_fingerprint: [u8; 32],
    /// SHA-256 fingerprint of the grammar source, its kind, every compile option and the
    /// compiler version.
    pub grammar_fingerprint: [u8; 32],
    pub reserved2: [u8; 64],
}

const _: () = assert!(size_of::<Header>() == HEADER_LEN);

/// One entry of the section table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct SectionEntry {
    pub kind: u32,
    /// [`SECTION_OPTIONAL`]; other bits are zero.
    pub flags: u32,
    pub offset: u64,
    /// Length in bytes (a multiple of the element size).
    pub len: u64,
    /// CRC-32C of the section's bytes, zero-extended.
    pub checksum: u64,
}

const _: () = assert!(size_of::<SectionEntry>() == 32);

/// Section kinds (FORMAT.md §4). Element type in brackets.
pub mod kind {
    /// Metadata, JSON text [u8].
    pub const META: u32 = 0x0001;
    pub const VOCAB_OFFSETS: u32 = 0x0101;
    pub const VOCAB_BYTES: u32 = 0x0102;
    pub const VOCAB_SPECIAL: u32 = 0x0103;
    pub const VOCAB_EOS: u32 = 0x0104;
    pub const LEX_TRANS: u32 = 0x0201;
    pub const LEX_BYTE_CLASS: u32 = 0x020A;
    /// Per lexer state, its row of `lexer.next_plus` (format 3.1) [u32, narrowable].
    pub const LEX_NEXT_PLUS_ROW: u32 = 0x020B;
    pub const LEX_ACCEPT_OFF: u32 = 0x0202;
    pub const LEX_ACCEPT: u32 = 0x0203;
    pub const LEX_NEXT_PLUS: u32 = 0x0204;
    pub const LEX_IGNORED: u32 = 0x0205;
    pub const LEX_MUNCH: u32 = 0x0206;
    pub const LEX_PRIORITY: u32 = 0x0207;
    pub const LEX_FORK_OFF: u32 = 0x0208;
    pub const LEX_FORK: u32 = 0x0209;
    pub const LR_ACTION_ROW: u32 = 0x0301;
    pub const LR_ACTION_TERM: u32 = 0x0302;
    pub const LR_ACTION_OFF: u32 = 0x0303;
    pub const LR_ACTIONS: u32 = 0x0304;
    pub const LR_GOTO_ROW: u32 = 0x0305;
    pub const LR_GOTO_NT: u32 = 0x0306;
    pub const LR_GOTO_TARGET: u32 = 0x0307;
    pub const LR_RULE_LHS: u32 = 0x0308;
    pub const LR_RULE_LEN: u32 = 0x0309;
    pub const NAME_OFF: u32 = 0x0401;
    pub const NAME_BYTES: u32 = 0x0402;
    pub const DWA_START: u32 = 0x0501;
    pub const DWA_START_RHO: u32 = 0x0502;
    pub const DWA_UNDECIDED: u32 = 0x0503;
    pub const DWA_EDGE_OFF: u32 = 0x0504;
    pub const DWA_EDGE_LABEL: u32 = 0x0505;
    pub const DWA_EDGE_TARGET: u32 = 0x0506;
    pub const DWA_EDGE_RHO: u32 = 0x0507;
    pub const DWA_DEFAULT_TARGET: u32 = 0x0508;
    pub const DWA_DEFAULT_RHO: u32 = 0x0509;
    pub const SET_OFF: u32 = 0x0601;
    pub const SET_RANGES: u32 = 0x0602;
    pub const SET_DENSE: u32 = 0x0603;
    pub const SET_BLOCK_REFS: u32 = 0x0604;
    pub const SET_BLOCKS: u32 = 0x0605;
    pub const KILL_S: u32 = 0x0701;
    pub const KILL_K: u32 = 0x0702;
    pub const KILL_SET: u32 = 0x0703;
}

/// A known section kind: its name and element size.
pub fn kind_info(k: u32) -> Option<(&'static str, usize)> {
    use kind::*;
    Some(match k {
        META => ("meta", 1),
        VOCAB_OFFSETS => ("vocab.offsets", 4),
        VOCAB_BYTES => ("vocab.bytes", 1),
        VOCAB_SPECIAL => ("vocab.special", 1),
        VOCAB_EOS => ("vocab.eos", 4),
        LEX_TRANS => ("lexer.trans", 4),
        LEX_BYTE_CLASS => ("lexer.byte_class", 1),
        LEX_NEXT_PLUS_ROW => ("lexer.next_plus_row", 4),
        LEX_ACCEPT_OFF => ("lexer.accept_off", 4),
        LEX_ACCEPT => ("lexer.accept", 4),
        LEX_NEXT_PLUS => ("lexer.next_plus", 8),
        LEX_IGNORED => ("lexer.ignored", 8),
        LEX_MUNCH => ("lexer.munch", 1),
        LEX_PRIORITY => ("lexer.priority", 4),
        LEX_FORK_OFF => ("lexer.fork_off", 4),
        LEX_FORK => ("lexer.fork", 4),
        LR_ACTION_ROW => ("lr.action_row", 4),
        LR_ACTION_TERM => ("lr.action_term", 4),
        LR_ACTION_OFF => ("lr.action_off", 4),
        LR_ACTIONS => ("lr.actions", 4),
        LR_GOTO_ROW => ("lr.goto_row", 4),
        LR_GOTO_NT => ("lr.goto_nt", 4),
        LR_GOTO_TARGET => ("lr.goto_target", 4),
        LR_RULE_LHS => ("lr.rule_lhs", 4),
        LR_RULE_LEN => ("lr.rule_len", 4),
        NAME_OFF => ("names.offsets", 4),
        NAME_BYTES => ("names.bytes", 1),
        DWA_START => ("dwa.start", 4),
        DWA_START_RHO => ("dwa.start_rho", 4),
        DWA_UNDECIDED => ("dwa.undecided", 4),
        DWA_EDGE_OFF => ("dwa.edge_off", 4),
        DWA_EDGE_LABEL => ("dwa.edge_label", 4),
        DWA_EDGE_TARGET => ("dwa.edge_target", 4),
        DWA_EDGE_RHO => ("dwa.edge_rho", 4),
        DWA_DEFAULT_TARGET => ("dwa.default_target", 4),
        DWA_DEFAULT_RHO => ("dwa.default_rho", 4),
        SET_OFF => ("sets.offsets", 4),
        SET_RANGES => ("sets.ranges", 4),
        SET_DENSE => ("sets.dense", 4),
        SET_BLOCK_REFS => ("sets.block_refs", 4),
        SET_BLOCKS => ("sets.blocks", 4),
        KILL_S => ("kill.state", 4),
        KILL_K => ("kill.terminal", 4),
        KILL_SET => ("kill.set", 4),
        _ => return None,
    })
}

/// Is section kind `k` part of the Parser DWA (present exactly when [`FLAG_MASK`] is set)?
fn is_mask_kind(k: u32) -> bool {
    (0x0500..0x0800).contains(&k)
}

/// Every section of `engine`'s tables as (kind, flags, bytes), in increasing kind order,
/// without the metadata section. [`narrowable`] columns whose values fit are written as `u16`s
/// (flag [`SECTION_NARROW`]). The writer lays these out; [`Artifact::from_backing`] reads the same
/// kinds back, so this is the one place the section ↔ table mapping is written down.
pub fn columns(engine: &Engine) -> Vec<(u32, u32, Vec<u8>)> {
    use kind::*;
    fn b<T: Elem>(a: &[T]) -> (u32, Vec<u8>) {
        (0, a.as_bytes().to_vec())
    }
    fn n(c: &Col) -> (u32, Vec<u8>) {
        match c.narrowed() {
            Some(v) => (SECTION_NARROW, v.as_bytes().to_vec()),
            None => (0, c.to_vec().as_bytes().to_vec()),
        }
    }
    let (v, t) = (engine.vocab(), engine.tables());
    let (l, r) = (&t.lexer, &t.lr);
    let mut name_off = vec![0u32];
    let mut name_bytes = Vec::new();
    for n in &t.terminal_names {
        name_bytes.extend_from_slice(n.as_bytes());
        name_off.push(name_bytes.len() as u32);
    }
    let mut out = vec![
        (VOCAB_OFFSETS, b(&v.offsets)),
        (VOCAB_BYTES, b(&v.bytes)),
        (VOCAB_SPECIAL, b(&v.special)),
        (VOCAB_EOS, b(&v.eos)),
        (LEX_TRANS, n(&l.trans)),
        (LEX_ACCEPT_OFF, b(&l.accept_off)),
        (LEX_ACCEPT, b(&l.accept)),
        (LEX_NEXT_PLUS, b(&l.next_plus)),
        (LEX_IGNORED, b(&l.ignored)),
        (LEX_MUNCH, b(&l.munch)),
        (LEX_PRIORITY, b(&l.priority)),
        (LEX_FORK_OFF, b(&l.fork_off)),
        (LEX_FORK, b(&l.fork)),
        (LEX_BYTE_CLASS, b(&l.byte_class)),
        (LEX_NEXT_PLUS_ROW, n(&l.next_plus_row)),
        (LR_ACTION_ROW, b(&r.action_row)),
        (LR_ACTION_TERM, b(&r.action_term)),
        (LR_ACTION_OFF, b(&r.action_off)),
        (LR_ACTIONS, b(&r.actions)),
        (LR_GOTO_ROW, b(&r.goto_row)),
        (LR_GOTO_NT, b(&r.goto_nt)),
        (LR_GOTO_TARGET, b(&r.goto_target)),
        (LR_RULE_LHS, b(&r.rule_lhs)),
        (LR_RULE_LEN, b(&r.rule_len)),
        (NAME_OFF, b(&name_off)),
        (NAME_BYTES, (0, name_bytes)),
    ];
    if let Some(m) = engine.mask_tables() {
        out.extend([
            (DWA_START, b(&m.start)),
            (DWA_START_RHO, b(&m.start_rho)),
            (DWA_UNDECIDED, b(&m.undecided)),
            (DWA_EDGE_OFF, b(&m.edge_off)),
            (DWA_EDGE_LABEL, n(&m.edge_label)),
            (DWA_EDGE_TARGET, n(&m.edge_target)),
            (DWA_EDGE_RHO, n(&m.edge_rho)),
            (DWA_DEFAULT_TARGET, b(&m.default_target)),
            (DWA_DEFAULT_RHO, b(&m.default_rho)),
            (SET_OFF, b(&m.set_off)),
            (SET_RANGES, b(&m.set_ranges)),
            (SET_DENSE, b(&m.set_dense)),
            (SET_BLOCK_REFS, b(&m.block_refs)),
            (SET_BLOCKS, b(&m.blocks)),
            (KILL_S, b(&m.kill_s)),
            (KILL_K, b(&m.kill_k)),
            (KILL_SET, b(&m.kill_set)),
        ]);
    }
    out.into_iter().map(|(k, (f, bytes))| (k, f, bytes)).collect()
}

/// The header fields that describe `engine` (counts; fingerprints and layout fields zero).
pub fn header_for(engine: &Engine) -> Header {
    let (v, t) = (engine.vocab(), engine.tables());
    Header {
        magic: MAGIC,
        label: LABEL,
        endian: ENDIAN_PROBE,
        major: MAJOR,
        minor: MINOR,
        flags: if engine.mask_tables().is_some() { FLAG_MASK } else { 0 },
        header_len: HEADER_LEN as u32,
        file_len: 0,
        header_checksum: 0,
        section_count: 0,
        section_table: HEADER_LEN as u32,
        vocab_size: v.len() as u32,
        eos_count: v.eos.len() as u32,
        mask_words: (v.len() as u32).div_ceil(32),
        lexer_states: t.lexer.num_states,
        lexer_start: t.lexer.start,
        num_terminals: t.lexer.num_terminals,
        lr_states: t.lr.num_states,
        num_nonterminals: t.lr.num_nonterminals,
        dwa_states: engine.mask_tables().map_or(0, |m| m.num_states() as u32),
        token_sets: engine.mask_tables().map_or(0, |m| m.num_sets() as u32),
        reserved: [0; 4],
        tokenizer_fingerprint: [0; 32],
        grammar_fingerprint: [0; 32],
        reserved2: [0; 64],
    }
}

/// Lay out an artifact: `header` (counts from [`header_for`], fingerprints filled in), the
/// metadata JSON text and the `columns`, each section at a multiple of [`SECTION_ALIGN`], all
/// padding zero, checksums filled in. Deterministic: the same inputs give the same bytes.
pub fn layout(mut header: Header, meta: &str, columns: &[(u32, u32, Vec<u8>)]) -> Vec<u8> {
    let mut sections: Vec<(u32, u32, &[u8])> = vec![(kind::META, 0, meta.as_bytes())];
    sections.extend(columns.iter().map(|(k, f, b)| (*k, *f, &b[..])));
    sections.sort_by_key(|s| s.0);
    let table_end = HEADER_LEN + sections.len() * size_of::<SectionEntry>();
    let mut offset = table_end.next_multiple_of(SECTION_ALIGN);
    let mut entries = Vec::with_capacity(sections.len());
    for &(k, flags, bytes) in &sections {
        entries.push(SectionEntry {
            kind: k,
            flags,
            offset: offset as u64,
            len: bytes.len() as u64,
            checksum: crc32c(bytes) as u64,
        });
        offset = (offset + bytes.len()).next_multiple_of(SECTION_ALIGN);
    }
    let file_len = entries.last().map_or(table_end, |e| (e.offset + e.len) as usize);
    header.file_len = file_len as u64;
    header.section_count = sections.len() as u32;
    header.section_table = HEADER_LEN as u32;
    header.header_checksum = 0;
    let mut out = vec![0u8; file_len];
    out[..HEADER_LEN].copy_from_slice(header.as_bytes());
    out[HEADER_LEN..table_end].copy_from_slice(entries.as_bytes());
    for (e, &(_, _, bytes)) in entries.iter().zip(&sections) {
        out[e.offset as usize..(e.offset + e.len) as usize].copy_from_slice(bytes);
    }
    reseal(&mut out);
    out
}

/// Recompute the header checksum of a laid-out file (after its header or section table was
/// edited). Also used by tests and the fuzzer to get mutated files past the checksums, so
/// that the structural checks behind them are exercised. Does nothing if `bytes` is too short.
pub fn reseal(bytes: &mut [u8]) {
    if let Some(sum) = header_checksum(bytes) {
        bytes[56..64].copy_from_slice(&sum.to_le_bytes());
    }
}

/// Recompute every section checksum and then the header checksum, as far as the section table
/// can be read (for tests and the fuzzer).
pub fn reseal_all(bytes: &mut [u8]) {
    let Ok((h, _)) = Header::read_from_prefix(bytes) else { return };
    let n = h.section_count as usize;
    for i in 0..n {
        let at = HEADER_LEN + i * size_of::<SectionEntry>();
        let Some(raw) = bytes.get(at..at + size_of::<SectionEntry>()) else { break };
        let Ok(mut e) = SectionEntry::read_from_bytes(raw) else { break };
        let (Ok(a), Ok(l)) = (usize::try_from(e.offset), usize::try_from(e.len)) else { continue };
        let Some(data) = a.checked_add(l).and_then(|end| bytes.get(a..end)) else { continue };
        e.checksum = crc32c(data) as u64;
        bytes[at..at + size_of::<SectionEntry>()].copy_from_slice(e.as_bytes());
    }
    reseal(bytes);
}

fn header_checksum(bytes: &[u8]) -> Option<u64> {
    let (h, _) = Header::read_from_prefix(bytes).ok()?;
    let table_len = (h.section_count as usize).checked_mul(size_of::<SectionEntry>())?;
    let table = bytes.get(HEADER_LEN..HEADER_LEN.checked_add(table_len)?)?;
    let mut head = h;
    head.header_checksum = 0;
    let c = crc32c_update(!0, head.as_bytes());
    Some(!crc32c_update(c, table) as u64)
}

/// Why an artifact could not be opened or used. Opening never panics: every corrupt, truncated
/// or foreign file ends here.
#[derive(Debug)]
pub enum ArtifactError {
    /// Reading or mapping the file failed.
    Io { path: String, source: std::io::Error },
    /// Shorter than its header or than the header says.
    Truncated { len: u64, need: u64 },
    /// Not a dwac artifact (wrong magic or label).
    BadMagic,
    /// Written on (or read by) a big-endian machine: the format is little-endian.
    Endianness { probe: u32 },
    /// A format major version this reader does not read.
    UnsupportedVersion { major: u16, minor: u16 },
    /// The buffer is not aligned for zero-copy views.
    Misaligned { align: usize },
    /// A structural field is wrong; `what` names it.
    Corrupt { what: String },
    /// A section's (or the header's) checksum does not match its bytes.
    Checksum { section: String },
    /// The tables are inconsistent (an index out of range, …).
    Tables(TableError),
    /// The `.dwa.zst` transport form could not be decompressed.
    Zstd(String),
    /// A tokenizer whose vocabulary differs from the artifact's.
    TokenizerMismatch { artifact: String, given: String, first_difference: String },
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
    sections: Vec<SectionEntry>,
    engine: Arc<Engine>,
    meta: Array<u8>,
    backing: Backing,
}

pub use crate::transport::MAX_DECOMPRESSED;
use crate::transport::{decompress, is_transport};

impl Artifact {
    /// Open an artifact file (`.dwa`, or the zstd transport form, recognized by its magic).
    /// A plain file is memory-mapped (feature `mmap`, on by default) or else read into an
    /// aligned buffer; then fully validated.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Artifact, ArtifactError> {
        Artifact::from_backing(load(path.as_ref())?, true)
    }

    /// As [`Artifact::open`], skipping the checksums and the table index validation (the
    /// structure needed to take the views is still checked, in time proportional to the number
    /// of sections). For files already verified at deploy time with [`Artifact::open`] or
    /// `dwac inspect --verify`.
    ///
    /// # Safety
    /// Memory safety never depends on the file: every table read stays bounds-checked. The
    /// caller promises the file was verified; an unverified corrupt file may make later calls
    /// panic instead of returning errors.
    pub unsafe fn open_unchecked(path: impl AsRef<std::path::Path>) -> Result<Artifact, ArtifactError> {
        Artifact::from_backing(load(path.as_ref())?, false)
    }

    /// Read an artifact (or its zstd form) from bytes, copying them once into an aligned
    /// buffer, then validate it.
    pub fn from_bytes(bytes: &[u8]) -> Result<Artifact, ArtifactError> {
        Artifact::from_backing(backing_from_bytes(bytes)?, true)
    }

    /// As [`Artifact::from_bytes`], without the checksums and index validation.
    ///
    /// # Safety
    /// As for [`Artifact::open_unchecked`].
    pub unsafe fn from_bytes_unchecked(bytes: &[u8]) -> Result<Artifact, ArtifactError> {
        Artifact::from_backing(backing_from_bytes(bytes)?, false)
    }

    /// Use a static buffer without copying (it must be 8-byte aligned, else
    /// [`ArtifactError::Misaligned`]).
    pub fn from_static(bytes: &'static [u8]) -> Result<Artifact, ArtifactError> {
        Artifact::from_backing(Backing::from_static(bytes), true)
    }

    /// Validate and open an artifact held in `backing`. With `verify`, checksums are checked
    /// and the tables validated (FORMAT.md §5, steps 1–9); without it, steps 1–6 minus the
    /// checksums.
    #[doc(hidden)]
    pub fn from_backing(backing: Backing, verify: bool) -> Result<Artifact, ArtifactError> {
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
            // (`lexer.next_plus_row` came with 3.1: a 3.0 file has one Next⁺ row per state.)
            let want = (!is_mask_kind(k) || has_mask) && (k != kind::LEX_NEXT_PLUS_ROW || h.minor >= 1);
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
        use kind::*;
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
            next_plus_row: if h.minor >= 1 { cn(LEX_NEXT_PLUS_ROW)? } else { (0..h.lexer_states).collect() },
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
                edge_off: c32(DWA_EDGE_OFF)?,
                edge_label: cn(DWA_EDGE_LABEL)?,
                edge_target: cn(DWA_EDGE_TARGET)?,
                edge_rho: cn(DWA_EDGE_RHO)?,
                default_target: c32(DWA_DEFAULT_TARGET)?,
                default_rho: c32(DWA_DEFAULT_RHO)?,
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
        let engine = if verify {
            Engine::with_mask(tables, vocab, mask)?
        } else {
            Engine::with_mask_unchecked(tables, vocab, mask)
        };
        Ok(Artifact { header: h, sections, engine: Arc::new(engine), meta, backing })
    }

    /// The engine to make matchers from (`Matcher::new(artifact.engine().clone())`).
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The header (format version, fingerprints).
    #[doc(hidden)]
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The section table.
    #[doc(hidden)]
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

fn backing_from_bytes(bytes: &[u8]) -> Result<Backing, ArtifactError> {
    if is_transport(bytes) {
        return decompress(bytes);
    }
    Ok(Backing::copy_from(bytes))
}

fn load(path: &std::path::Path) -> Result<Backing, ArtifactError> {
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
        return decompress(&std::fs::read(path).map_err(io)?);
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

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, initial and final XOR all ones) of
/// `bytes`, as FORMAT.md specifies. The SSE 4.2 `crc32` instruction where the CPU has it
/// (about 5× faster; verifying a 42 MB artifact spent most of its time here), else slice-by-8
/// tables built at compile time.
pub fn crc32c(bytes: &[u8]) -> u32 {
    !crc32c_update(!0, bytes)
}

fn crc32c_update(c: u32, bytes: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("sse4.2") {
            // SAFETY: the CPU supports SSE 4.2, checked just above.
            return unsafe { crc32c_sse42(c, bytes) };
        }
    }
    crc32c_update_table(c, bytes)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
unsafe fn crc32c_sse42(c: u32, bytes: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};
    let mut chunks = bytes.chunks_exact(8);
    let mut c64 = c as u64;
    for ch in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(ch);
        c64 = _mm_crc32_u64(c64, u64::from_le_bytes(w));
    }
    let mut c = c64 as u32;
    for &b in chunks.remainder() {
        c = _mm_crc32_u8(c, b);
    }
    c
}

const fn crc_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0x82F6_3B78 } else { c >> 1 };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut i = 0;
    while i < 256 {
        let mut j = 1;
        while j < 8 {
            t[j][i] = (t[j - 1][i] >> 8) ^ t[0][(t[j - 1][i] & 0xFF) as usize];
            j += 1;
        }
        i += 1;
    }
    t
}

static CRC: [[u32; 256]; 8] = crc_tables();

fn crc32c_update_table(mut c: u32, bytes: &[u8]) -> u32 {
    let mut chunks = bytes.chunks_exact(8);
    for ch in &mut chunks {
        let lo = c ^ u32::from_le_bytes([ch[0], ch[1], ch[2], ch[3]]);
        let hi = u32::from_le_bytes([ch[4], ch[5], ch[6], ch[7]]);
        c = CRC[7][(lo & 0xFF) as usize]
            ^ CRC[6][(lo >> 8 & 0xFF) as usize]
            ^ CRC[5][(lo >> 16 & 0xFF) as usize]
            ^ CRC[4][(lo >> 24) as usize]
            ^ CRC[3][(hi & 0xFF) as usize]
            ^ CRC[2][(hi >> 8 & 0xFF) as usize]
            ^ CRC[1][(hi >> 16 & 0xFF) as usize]
            ^ CRC[0][(hi >> 24) as usize];
    }
    for &b in chunks.remainder() {
        c = CRC[0][((c ^ b as u32) & 0xFF) as usize] ^ (c >> 8);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_matches_the_standard_check_values() {
        // RFC 3720 appendix B.4 and the CRC catalogue's check value.
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(&[0u8; 32]), 0x8A91_36AA);
        assert_eq!(crc32c(&[0xFFu8; 32]), 0x62A8_AB43);
        let inc: Vec<u8> = (0..32).collect();
        assert_eq!(crc32c(&inc), 0x46DD_794E);
        // The tables, the hardware path and any split of the input agree.
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        let whole = crc32c(&data);
        assert_eq!(!crc32c_update_table(!0, &data), whole);
        assert_eq!(!crc32c_update_table(!0, b"123456789"), 0xE306_9283);
        for cut in [0, 1, 7, 8, 9, 500, 999, 1000] {
            let c = crc32c_update(!0, &data[..cut]);
            assert_eq!(!crc32c_update(c, &data[cut..]), whole, "split at {cut}");
            let c = crc32c_update_table(!0, &data[..cut]);
            assert_eq!(!crc32c_update_table(c, &data[cut..]), whole, "table split at {cut}");
        }
    }
}
