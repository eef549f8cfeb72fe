//! The writer's side: an engine's tables as sections ([`columns`]), the header for them, and the
//! file laid out with its checksums (the compiler's `artifact_bytes` calls these).

use crate::array::{Col, Elem};
use crate::tables::GrammarTables;

use super::{
    crc32c, header_checksum, kind, Engine, FromBytes, Header, IntoBytes, SectionEntry, ENDIAN_PROBE, FLAG_MASK,
    HEADER_LEN, LABEL, MAGIC, MAJOR, MINOR, SECTION_ALIGN, SECTION_NARROW,
};

/// Every section of `engine`'s tables as (kind, flags, bytes), in increasing kind order,
/// without the metadata section. [`narrowable`](super::narrowable) columns whose values fit are written as `u16`s
/// (flag [`SECTION_NARROW`]). The writer lays these out; the reader (`Artifact::from_backing`) reads the same
/// kinds back, so this is the one place the section ↔ table mapping is written down.
pub fn columns(engine: &Engine) -> Vec<(u32, u32, Vec<u8>)> {
    use kind::{
        DWA_AUX_START, DWA_EDGE_LABEL, DWA_EDGE_OFF, DWA_EDGE_OUTCOME, DWA_LABEL_OFF, DWA_OUTCOME_OFF, DWA_OUTCOME_RHO,
        DWA_OUTCOME_TARGET, DWA_START, DWA_START_RHO, DWA_UNDECIDED, KILL_K, KILL_S, KILL_SET, LEX_ACCEPT,
        LEX_ACCEPT_OFF, LEX_BYTE_CLASS, LEX_FORK, LEX_FORK_OFF, LEX_IGNORED, LEX_MUNCH, LEX_NEXT_PLUS,
        LEX_NEXT_PLUS_ROW, LEX_PRIORITY, LEX_TRANS, LR_ACTIONS, LR_ACTION_OFF, LR_ACTION_ROW, LR_ACTION_TERM,
        LR_GOTO_NT, LR_GOTO_ROW, LR_GOTO_TARGET, LR_RULE_LEN, LR_RULE_LHS, NAME_BYTES, NAME_OFF, SET_BLOCKS,
        SET_BLOCK_REFS, SET_DENSE, SET_OFF, SET_RANGES, VOCAB_BYTES, VOCAB_EOS, VOCAB_OFFSETS, VOCAB_SPECIAL,
    };
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
            (DWA_LABEL_OFF, b(&m.label_off)),
            (DWA_EDGE_OUTCOME, n(&m.edge_outcome)),
            (DWA_OUTCOME_OFF, b(&m.outcome_off)),
            (DWA_OUTCOME_TARGET, n(&m.outcome_target)),
            (DWA_OUTCOME_RHO, n(&m.outcome_rho)),
            (SET_OFF, b(&m.set_off)),
            (SET_RANGES, b(&m.set_ranges)),
            (SET_DENSE, b(&m.set_dense)),
            (SET_BLOCK_REFS, b(&m.block_refs)),
            (SET_BLOCKS, b(&m.blocks)),
            (KILL_S, b(&m.kill_s)),
            (KILL_K, b(&m.kill_k)),
            (KILL_SET, b(&m.kill_set)),
        ]);
        if !m.aux_start.is_empty() {
            out.push((DWA_AUX_START, b(&m.aux_start)));
        }
    }
    out.into_iter().map(|(k, (f, bytes))| (k, f, bytes)).collect()
}

/// Bytes `engine`'s tables take in memory, apart from its vocabulary: what a compiled grammar
/// holds of its own (the vocabulary is its tokenizer's, shared by every grammar compiled for
/// it). The sections [`columns`] writes but the vocabulary's, each column at its width in
/// memory (a wide column that would fit `u16`s counts 4 bytes an entry here, 2 in the file).
pub fn tables_len(engine: &Engine) -> usize {
    let mut len = grammar_tables_len(engine.tables());
    if let Some(m) = engine.mask_tables() {
        len += b(&m.start)
            + b(&m.start_rho)
            + b(&m.undecided)
            + b(&m.edge_off)
            + n(&m.edge_label)
            + b(&m.label_off)
            + n(&m.edge_outcome)
            + b(&m.outcome_off)
            + n(&m.outcome_target)
            + n(&m.outcome_rho)
            + b(&m.set_off)
            + b(&m.set_ranges)
            + b(&m.set_dense)
            + b(&m.block_refs)
            + b(&m.blocks)
            + b(&m.kill_s)
            + b(&m.kill_k)
            + b(&m.kill_set)
            + b(&m.aux_start);
    }
    len
}

/// [`tables_len`] of the lexer's and the parser's tables and the terminal names alone (no
/// Parser DWA).
pub fn grammar_tables_len(t: &GrammarTables) -> usize {
    let (l, r) = (&t.lexer, &t.lr);
    // (As the names' sections: their bytes, and an offset per name and one more.)
    let names = t.terminal_names.iter().map(String::len).sum::<usize>() + 4 * (t.terminal_names.len() + 1);
    names
        + n(&l.trans)
        + b(&l.accept_off)
        + b(&l.accept)
        + b(&l.next_plus)
        + b(&l.ignored)
        + b(&l.munch)
        + b(&l.priority)
        + b(&l.fork_off)
        + b(&l.fork)
        + b(&l.byte_class)
        + n(&l.next_plus_row)
        + b(&r.action_row)
        + b(&r.action_term)
        + b(&r.action_off)
        + b(&r.actions)
        + b(&r.goto_row)
        + b(&r.goto_nt)
        + b(&r.goto_target)
        + b(&r.rule_lhs)
        + b(&r.rule_len)
}

/// Bytes of a table in memory.
fn b<T: Elem>(a: &[T]) -> usize {
    size_of_val(a)
}

/// Bytes of a column in memory, at its width.
fn n(c: &Col) -> usize {
    match c {
        Col::Wide(a) => size_of_val(&a[..]),
        Col::Narrow(a) => size_of_val(&a[..]),
    }
}

/// The header fields that describe `engine` (counts; fingerprints and layout fields zero).
pub fn header_for(engine: &Engine) -> Header {
    let (v, t) = (engine.vocab(), engine.tables());
    Header {
        magic: MAGIC,
        label: LABEL,
        endian: ENDIAN_PROBE,
        major: MAJOR,
        // (4.0 unless the file uses what 4.1 added.)
        minor: if engine.mask_tables().is_some_and(|m| !m.aux_start.is_empty()) { MINOR } else { 0 },
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
