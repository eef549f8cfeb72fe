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

use crate::array::{Array, Backing};
use crate::matcher::Engine;
use crate::tables::{GrammarTables, TableError, Vocabulary};

mod crc;
mod format;
#[cfg(feature = "unstable")]
mod layout;
mod read;
pub mod transport;

pub use crc::crc32c;
use crc::crc32c_update;
use format::is_mask_kind;
pub use format::{
    kind, kind_info, narrowable, Header, SectionEntry, ENDIAN_PROBE, FLAG_MASK, HEADER_LEN, LABEL, MAGIC, MAJOR, MINOR,
    SECTION_ALIGN, SECTION_NARROW, SECTION_OPTIONAL,
};
#[cfg(feature = "unstable")]
pub use layout::{columns, grammar_tables_len, header_for, layout, reseal, reseal_all, tables_len};

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
    /// The tokenizer's own vocabulary and fingerprint, used in place of the artifact's.
    tokenizer: Option<(&'v Vocabulary, &'v [u8; 32])>,
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
        OpenOptions { vocabulary: None, tokenizer: None, verify: true }
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

    /// The tokenizer the artifact is for, by its vocabulary and that vocabulary's fingerprint
    /// (`dwac_vocab::Tokenizer::vocab` and `fingerprint`; the caller vouches that the
    /// fingerprint is the vocabulary's). An artifact whose header names another fingerprint is
    /// refused with [`ArtifactError::TokenizerMismatch`], naming the first token that differs
    /// (as [`Artifact::check_tokenizer`]). In one compiled for it, the vocabulary sections whose
    /// lengths and checksums are this vocabulary's ([`Vocabulary::section_checksums`]) are
    /// neither checksummed again nor read: this vocabulary stands in for them (with a
    /// 150k-token vocabulary, 1.7 MB of a typical 2.8 MB artifact left untouched; a vocabulary
    /// built by [`Vocabulary::from_tokens`] is shared, not copied). A grammar that names
    /// tokens stores its own vocabulary (FORMAT.md §4), whose sections differ: they are
    /// verified and read as without this option. Implies [`OpenOptions::vocabulary`] for a
    /// transport form that leaves the vocabulary out.
    pub fn tokenizer(mut self, vocab: &'v Vocabulary, fingerprint: &'v [u8; 32]) -> OpenOptions<'v> {
        self.vocabulary = Some(vocab);
        self.tokenizer = Some((vocab, fingerprint));
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
        Artifact::from_backing(load_with(path.as_ref(), self.vocabulary)?, self.verify, self.tokenizer)
    }

    /// Read an artifact (or its zstd transport form) from bytes, copying them once into an
    /// aligned buffer.
    pub fn from_bytes(&self, bytes: &[u8]) -> Result<Artifact, ArtifactError> {
        let backing =
            if is_transport(bytes) { decompress_with(bytes, self.vocabulary)? } else { Backing::copy_from(bytes) };
        Artifact::from_backing(backing, self.verify, self.tokenizer)
    }

    /// Use a static buffer holding a plain artifact without copying it (it must be 8-byte
    /// aligned, else [`ArtifactError::Misaligned`]). A transport form is decompressed as by
    /// [`OpenOptions::from_bytes`].
    pub fn from_static(&self, bytes: &'static [u8]) -> Result<Artifact, ArtifactError> {
        if is_transport(bytes) {
            return self.from_bytes(bytes);
        }
        Artifact::from_backing(Backing::from_static(bytes), self.verify, self.tokenizer)
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
    /// checksums. With `tokenizer` (see [`OpenOptions::tokenizer`]), its vocabulary stands in
    /// for the artifact's, whose sections are not checksummed.
    fn from_backing(
        backing: Backing,
        verify: bool,
        tokenizer: Option<(&Vocabulary, &[u8; 32])>,
    ) -> Result<Artifact, ArtifactError> {
        let bytes = backing.bytes();
        let h = read::header(bytes)?;
        if let Some((vocab, fingerprint)) = tokenizer.filter(|(_, fp)| **fp != h.tokenizer_fingerprint) {
            // Another tokenizer's artifact: opened whole, to name the first token that differs.
            return Err(Artifact::from_backing(backing, verify, None)?.mismatch(fingerprint, vocab));
        }
        // (A grammar that names tokens stores its own vocabulary, not the tokenizer's: FORMAT.md
        // §4, "Special tokens". The tokenizer's stands in only for sections that are its own.)
        let given = tokenizer.map(|(v, _)| v).filter(|v| read::same_vocabulary(bytes, &h, v));
        let sections = read::sections(bytes, &h, verify, given.is_some())?;
        read::presence(&h, &sections)?;
        let has_mask = h.flags & FLAG_MASK != 0;
        let v = read::Views { backing: &backing, sections: &sections };
        let vocab = match given {
            Some(vocab) => read::given_vocabulary(vocab, &h)?,
            None => read::vocabulary(&v, &h)?,
        };
        let lexer = read::lexer(&v, &h)?;
        let lr = read::lr(&v, &h)?;
        let terminal_names = read::terminal_names(&v, &h)?;
        let meta = read::metadata(&v)?;
        let tables = GrammarTables { lexer, lr, terminal_names };
        let mask = read::mask(&v, &h, has_mask)?;
        // 8–9. Every index the runtime follows (`Engine::validated` validates the tables).
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
        Err(self.mismatch(fingerprint, vocab))
    }

    /// The refusal of a tokenizer whose fingerprint is not the artifact's.
    fn mismatch(&self, fingerprint: &[u8; 32], vocab: &Vocabulary) -> ArtifactError {
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
        ArtifactError::TokenizerMismatch {
            artifact: hex(&self.header.tokenizer_fingerprint),
            given: hex(fingerprint),
            first_difference,
        }
    }
}

// (Here rather than in `tables.rs`: the checksum is the artifact's.)
impl Vocabulary {
    /// The length and checksum of the sections `vocab.offsets`, `vocab.bytes`,
    /// `vocab.special` and `vocab.eos` an artifact would hold for this vocabulary (FORMAT.md
    /// §3–4), computed once and shared by clones: an artifact whose sections have these is
    /// opened with this vocabulary in their place ([`crate::OpenOptions::tokenizer`]).
    pub fn section_checksums(&self) -> &[(u64, u64); 4] {
        self.section_sums.get_or_init(|| {
            use zerocopy::IntoBytes;
            let sum = |b: &[u8]| (b.len() as u64, crc32c(b) as u64);
            [sum(self.offsets.as_bytes()), sum(&self.bytes), sum(&self.special), sum(self.eos.as_bytes())]
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
