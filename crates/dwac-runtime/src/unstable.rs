//! The compiler's and the tests' view of the runtime (feature `unstable`): **not a stable
//! API**. Its items change with the artifact format and the compiler, without a semver
//! promise, and a server needs none of them: the crate root is the serving API.
//!
//! Here are the tables an [`Engine`](crate::Engine) is made of (lexer, LR, Parser DWA), the
//! vocabulary trie, the column type the tables are views in, the artifact's format constants and
//! its writer, and the transport form's frames. With this feature the serving types gain a few
//! methods of the same kind (`Engine::new`, `Engine::with_mask`, `Engine::tables`,
//! `Engine::mask_tables`, `Artifact::header`, `Artifact::sections`, `Matcher::stats`,
//! `Matcher::fill_reference_mask_shared`, `Matcher::configuration_key`,
//! `MaskScratch::set_groups_per_round`).

pub use crate::array::{Array, Backing, Col, Elem, VecGuard, NARROW_MAX};
pub use crate::dwa::{pack_bitmaps, Dense, DwaWriter, MaskTables, BLOCK_WORDS, NONE};
pub use crate::lexer::{Inhibitor, K_ALL};
pub use crate::tables::{
    Action, GrammarTables, LexerTables, LrTables, DEAD, MAX_RULE_LEN, MUNCH_GLOBAL, MUNCH_NONE, MUNCH_OWN,
};
pub use crate::trie::Trie;

/// The artifact's format (FORMAT.md): header, section table and section kinds, and the
/// writer's layout (the reader is [`Artifact`](crate::Artifact)).
pub mod artifact {
    pub use crate::artifact::{
        columns, crc32c, grammar_tables_len, header_for, hex, kind, kind_info, layout, narrowable, reseal, reseal_all,
        tables_len, Header, SectionEntry, ENDIAN_PROBE, FLAG_MASK, HEADER_LEN, LABEL, MAGIC, MAJOR, MINOR,
        SECTION_ALIGN, SECTION_NARROW, SECTION_OPTIONAL,
    };
}

/// The transport form (`.dwa.zst`, FORMAT.md §6): its frames, the delta filter, and the
/// vocabulary sections it may leave out.
pub mod transport {
    pub use crate::artifact::transport::{
        decompress, decompress_with, delta, elided_frame, filter_frame, is_transport, parse_filter, parse_frames,
        undelta, Frames, Ranges, ELIDED_TAG, FILTER_MAGIC, FILTER_TAG, MAX_DECOMPRESSED, MAX_ELIDED, MAX_RANGES,
        ZSTD_MAGIC,
    };
}
