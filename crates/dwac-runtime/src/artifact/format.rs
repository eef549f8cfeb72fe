//! The format's constants and its single registry of sections (docs/FORMAT.md §§1–4): magic,
//! versions, flags, the fixed header, the section table entry, section kinds with their names and
//! element sizes.

use super::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// The first eight bytes of every artifact.
pub const MAGIC: [u8; 8] = *b"DWAC-ART";

/// NUL-padded label after the magic, so `xxd` output says what the file is.
pub const LABEL: [u8; 24] = *b"dwac grammar artifact\0\0\0";

/// Written as a native `u32`; reads as `0xFEFF` on a little-endian host.
pub const ENDIAN_PROBE: u32 = 0xFEFF;

/// Format major version: a reader refuses any other major.
pub const MAJOR: u16 = 4;

/// Format minor version: a reader accepts older minors (and ignores optional sections it does
/// not know). 4.1 adds `dwa.aux_start`; a writer marks a file 4.1 only when it has that section,
/// so a file without it stays readable by 4.0 readers.
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
/// transitions and `Next⁺` rows, the Parser DWA's edge labels and outcomes, the outcomes'
/// targets and outputs).
pub fn narrowable(k: u32) -> bool {
    matches!(
        k,
        kind::LEX_TRANS
            | kind::LEX_NEXT_PLUS_ROW
            | kind::DWA_EDGE_LABEL
            | kind::DWA_EDGE_OUTCOME
            | kind::DWA_OUTCOME_TARGET
            | kind::DWA_OUTCOME_RHO
    )
}

/// The fixed header at byte 0 (all integers little-endian; see FORMAT.md §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct Header {
    /// [`MAGIC`].
    pub magic: [u8; 8],
    /// [`LABEL`].
    pub label: [u8; 24],
    /// [`ENDIAN_PROBE`], as written by the writer.
    pub endian: u32,
    /// Format major version ([`MAJOR`]).
    pub major: u16,
    /// Format minor version (at most [`MINOR`]).
    pub minor: u16,
    /// [`FLAG_MASK`]; other bits are zero.
    pub flags: u32,
    /// Always [`HEADER_LEN`].
    pub header_len: u32,
    /// The whole file's length in bytes.
    pub file_len: u64,
    /// CRC-32C of the header (this field zero) and the section table.
    pub header_checksum: u64,
    /// Entries of the section table.
    pub section_count: u32,
    /// Byte offset of the section table (right after the header).
    pub section_table: u32,
    /// Tokens in the vocabulary.
    pub vocab_size: u32,
    /// End-of-sequence tokens.
    pub eos_count: u32,
    /// `u32` words of a token mask: `ceil(vocab_size / 32)`.
    pub mask_words: u32,
    /// Lexer DFA states.
    pub lexer_states: u32,
    /// The lexer's start state.
    pub lexer_start: u32,
    /// Terminals (without `$`).
    pub num_terminals: u32,
    /// LR states.
    pub lr_states: u32,
    /// Nonterminals.
    pub num_nonterminals: u32,
    /// Parser DWA states (0 without one).
    pub dwa_states: u32,
    /// Token sets of the Parser DWA.
    pub token_sets: u32,
    /// Zero.
    pub reserved: [u32; 4],
    /// SHA-256 fingerprint of the tokenizer's vocabulary (`dwac-vocab`'s canonical encoding).
    pub tokenizer_fingerprint: [u8; 32],
    /// SHA-256 fingerprint of the grammar source, its kind, every compile option and the
    /// compiler version.
    pub grammar_fingerprint: [u8; 32],
    /// Zero.
    pub reserved2: [u8; 64],
}

const _: () = assert!(size_of::<Header>() == HEADER_LEN);

/// One entry of the section table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct SectionEntry {
    /// Section kind (a constant of [`kind`]).
    pub kind: u32,
    /// [`SECTION_OPTIONAL`]; other bits are zero.
    pub flags: u32,
    /// Byte offset of the section (a multiple of [`SECTION_ALIGN`]).
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
    /// Token byte offsets (`u32`, vocabulary size + 1).
    pub const VOCAB_OFFSETS: u32 = 0x0101;
    /// Token bytes.
    pub const VOCAB_BYTES: u32 = 0x0102;
    /// Per token: special (1) or not (0).
    pub const VOCAB_SPECIAL: u32 = 0x0103;
    /// End-of-sequence token ids, sorted.
    pub const VOCAB_EOS: u32 = 0x0104;
    /// Lexer transitions, per state and byte class.
    pub const LEX_TRANS: u32 = 0x0201;
    /// Byte → byte class (256 entries).
    pub const LEX_BYTE_CLASS: u32 = 0x020A;
    /// Per lexer state, its row of `lexer.next_plus` (format 3.1) [u32, narrowable].
    pub const LEX_NEXT_PLUS_ROW: u32 = 0x020B;
    /// Offsets of each lexer state's accepted terminals.
    pub const LEX_ACCEPT_OFF: u32 = 0x0202;
    /// Accepted terminals.
    pub const LEX_ACCEPT: u32 = 0x0203;
    /// Interned `Next⁺` terminal bitsets.
    pub const LEX_NEXT_PLUS: u32 = 0x0204;
    /// Bitset of ignored terminals.
    pub const LEX_IGNORED: u32 = 0x0205;
    /// Per-terminal munch mode.
    pub const LEX_MUNCH: u32 = 0x0206;
    /// Per-terminal priority.
    pub const LEX_PRIORITY: u32 = 0x0207;
    /// Offsets of the start state's further successors per byte (257 entries).
    pub const LEX_FORK_OFF: u32 = 0x0208;
    /// Further successors of the start state.
    pub const LEX_FORK: u32 = 0x0209;
    /// Per LR state: its first ACTION entry.
    pub const LR_ACTION_ROW: u32 = 0x0301;
    /// Per ACTION entry: the terminal.
    pub const LR_ACTION_TERM: u32 = 0x0302;
    /// Per ACTION entry: its first action.
    pub const LR_ACTION_OFF: u32 = 0x0303;
    /// Packed actions.
    pub const LR_ACTIONS: u32 = 0x0304;
    /// Per LR state: its first GOTO entry.
    pub const LR_GOTO_ROW: u32 = 0x0305;
    /// Per GOTO entry: the nonterminal.
    pub const LR_GOTO_NT: u32 = 0x0306;
    /// Per GOTO entry: the target state.
    pub const LR_GOTO_TARGET: u32 = 0x0307;
    /// Per rule: its left-hand nonterminal.
    pub const LR_RULE_LHS: u32 = 0x0308;
    /// Per rule: its right-hand length.
    pub const LR_RULE_LEN: u32 = 0x0309;
    /// Offsets of terminal names.
    pub const NAME_OFF: u32 = 0x0401;
    /// Terminal names (UTF-8).
    pub const NAME_BYTES: u32 = 0x0402;
    /// Per lexer state: its Parser DWA start state.
    pub const DWA_START: u32 = 0x0501;
    /// Per lexer state: its start output token set.
    pub const DWA_START_RHO: u32 = 0x0502;
    /// Per lexer state: its UNDECIDED token set.
    pub const DWA_UNDECIDED: u32 = 0x0503;
    /// Per DWA state: its first explicit edge.
    pub const DWA_EDGE_OFF: u32 = 0x0504;
    /// Label lists, shared by the states that have the same one [u32, narrowable].
    pub const DWA_EDGE_LABEL: u32 = 0x0505;
    // (0x0506–0x0509, format 3's per-edge targets and outputs and per-state DEFAULT edge, are
    // retired: format 4 stores outcomes.)
    /// Per state, where its label list starts (format 4.0) [u32].
    pub const DWA_LABEL_OFF: u32 = 0x050A;
    /// Per edge, its outcome's index among its state's outcomes (format 4.0) [u32, narrowable].
    pub const DWA_EDGE_OUTCOME: u32 = 0x050B;
    /// Per state, its outcomes' offsets; the first is the DEFAULT edge (format 4.0) [u32].
    pub const DWA_OUTCOME_OFF: u32 = 0x050C;
    /// Per outcome, its target state (format 4.0) [u32, narrowable].
    pub const DWA_OUTCOME_TARGET: u32 = 0x050D;
    /// Per outcome, its output token set (format 4.0) [u32, narrowable].
    pub const DWA_OUTCOME_RHO: u32 = 0x050E;
    /// Per lexer state, a second DWA state to read its threads' stacks from (format 4.1; present
    /// only when some state has one, and then required: without it masks would lack tokens).
    pub const DWA_AUX_START: u32 = 0x050F;
    /// Per token set: its first range.
    pub const SET_OFF: u32 = 0x0601;
    /// Token ranges (start, end) pairs.
    pub const SET_RANGES: u32 = 0x0602;
    /// Per token set: its bitmap's first block reference, or none.
    pub const SET_DENSE: u32 = 0x0603;
    /// Block references of bitmap sets.
    pub const SET_BLOCK_REFS: u32 = 0x0604;
    /// Interned bitmap blocks.
    pub const SET_BLOCKS: u32 = 0x0605;
    /// Carried inhibitors: lexer states.
    pub const KILL_S: u32 = 0x0701;
    /// Carried inhibitors: inhibition sets.
    pub const KILL_K: u32 = 0x0702;
    /// Carried inhibitors: the token set that fires each.
    pub const KILL_SET: u32 = 0x0703;
}

/// A known section kind: its name and element size.
pub fn kind_info(k: u32) -> Option<(&'static str, usize)> {
    use kind::{
        DWA_AUX_START, DWA_EDGE_LABEL, DWA_EDGE_OFF, DWA_EDGE_OUTCOME, DWA_LABEL_OFF, DWA_OUTCOME_OFF, DWA_OUTCOME_RHO,
        DWA_OUTCOME_TARGET, DWA_START, DWA_START_RHO, DWA_UNDECIDED, KILL_K, KILL_S, KILL_SET, LEX_ACCEPT,
        LEX_ACCEPT_OFF, LEX_BYTE_CLASS, LEX_FORK, LEX_FORK_OFF, LEX_IGNORED, LEX_MUNCH, LEX_NEXT_PLUS,
        LEX_NEXT_PLUS_ROW, LEX_PRIORITY, LEX_TRANS, LR_ACTIONS, LR_ACTION_OFF, LR_ACTION_ROW, LR_ACTION_TERM,
        LR_GOTO_NT, LR_GOTO_ROW, LR_GOTO_TARGET, LR_RULE_LEN, LR_RULE_LHS, META, NAME_BYTES, NAME_OFF, SET_BLOCKS,
        SET_BLOCK_REFS, SET_DENSE, SET_OFF, SET_RANGES, VOCAB_BYTES, VOCAB_EOS, VOCAB_OFFSETS, VOCAB_SPECIAL,
    };
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
        DWA_LABEL_OFF => ("dwa.label_off", 4),
        DWA_EDGE_OUTCOME => ("dwa.edge_outcome", 4),
        DWA_OUTCOME_OFF => ("dwa.outcome_off", 4),
        DWA_OUTCOME_TARGET => ("dwa.outcome_target", 4),
        DWA_OUTCOME_RHO => ("dwa.outcome_rho", 4),
        DWA_AUX_START => ("dwa.aux_start", 4),
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
pub(super) fn is_mask_kind(k: u32) -> bool {
    (0x0500..0x0800).contains(&k)
}
