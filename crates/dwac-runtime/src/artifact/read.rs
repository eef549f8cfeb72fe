//! Opening's validation, step by step in FORMAT.md §5's order (each step's checks in the order
//! the format gives, so a file broken in several ways gets the first step's error): the header,
//! the section table and every section, which sections are present, then the tables as views.

use zerocopy::FromBytes;

use super::{
    corrupt, crc32c, header_checksum, is_mask_kind, kind, kind_info, narrowable, ArtifactError, Header, SectionEntry,
    ENDIAN_PROBE, FLAG_MASK, HEADER_LEN, LABEL, MAGIC, MAJOR, MINOR, SECTION_ALIGN, SECTION_NARROW, SECTION_OPTIONAL,
};
use crate::array::{Array, Backing, Col, Elem};
use crate::dwa::MaskTables;
use crate::tables::{LexerTables, LrTables, Vocabulary};
use kind::{
    DWA_AUX_START, DWA_EDGE_LABEL, DWA_EDGE_OFF, DWA_EDGE_OUTCOME, DWA_LABEL_OFF, DWA_OUTCOME_OFF, DWA_OUTCOME_RHO,
    DWA_OUTCOME_TARGET, DWA_START, DWA_START_RHO, DWA_UNDECIDED, KILL_K, KILL_S, KILL_SET, LEX_ACCEPT, LEX_ACCEPT_OFF,
    LEX_BYTE_CLASS, LEX_FORK, LEX_FORK_OFF, LEX_IGNORED, LEX_MUNCH, LEX_NEXT_PLUS, LEX_NEXT_PLUS_ROW, LEX_PRIORITY,
    LEX_TRANS, LR_ACTIONS, LR_ACTION_OFF, LR_ACTION_ROW, LR_ACTION_TERM, LR_GOTO_NT, LR_GOTO_ROW, LR_GOTO_TARGET,
    LR_RULE_LEN, LR_RULE_LHS, META, NAME_BYTES, NAME_OFF, SET_BLOCKS, SET_BLOCK_REFS, SET_DENSE, SET_OFF, SET_RANGES,
    VOCAB_BYTES, VOCAB_EOS, VOCAB_OFFSETS, VOCAB_SPECIAL,
};

/// Steps 1–2: magic, size, alignment, endianness, version; the header's fields.
pub(super) fn header(bytes: &[u8]) -> Result<Header, ArtifactError> {
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
    Ok(h)
}

/// Steps 3–4: the section table and the header checksum over it; every section (known kind or
/// optional, aligned, in bounds, in increasing kind and offset order without overlap, a whole
/// number of elements, zero padding, its checksum); nothing after the last. With
/// `vocabulary_given`, the vocabulary sections' checksums are not checked (their bytes are not
/// used: a vocabulary with the same section lengths and checksums stands in for them).
pub(super) fn sections(
    bytes: &[u8],
    h: &Header,
    verify: bool,
    vocabulary_given: bool,
) -> Result<Vec<SectionEntry>, ArtifactError> {
    // 3. The section table, and the header checksum over it.
    let n = h.section_count as usize;
    let table_end = n
        .checked_mul(size_of::<SectionEntry>())
        .and_then(|x| x.checked_add(HEADER_LEN))
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| corrupt("section table runs past the end of the file"))?;
    let sections =
        <[SectionEntry]>::ref_from_bytes(&bytes[HEADER_LEN..table_end]).map_err(|_| corrupt("section table"))?.to_vec();
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
        let unused = vocabulary_given && matches!(e.kind, VOCAB_OFFSETS | VOCAB_BYTES | VOCAB_SPECIAL | VOCAB_EOS);
        if verify && !unused && crc32c(&bytes[off..end]) as u64 != e.checksum {
            return Err(ArtifactError::Checksum { section: name });
        }
    }
    if prev_end != bytes.len() {
        return Err(corrupt("bytes after the last section"));
    }
    Ok(sections)
}

/// Step 5: the sections the header's flags and version call for, and no others.
pub(super) fn presence(h: &Header, sections: &[SectionEntry]) -> Result<(), ArtifactError> {
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
    Ok(())
}

/// Step 6: the sections as columns of the artifact's bytes.
pub(super) struct Views<'a> {
    pub(super) backing: &'a Backing,
    pub(super) sections: &'a [SectionEntry],
}

impl Views<'_> {
    /// Section `k` as a column of `T`s.
    pub(super) fn col<T: Elem>(&self, k: u32) -> Result<Array<T>, ArtifactError> {
        let name = kind_info(k).map_or("?", |i| i.0);
        let e = self.sections.iter().find(|e| e.kind == k).ok_or_else(|| corrupt(format!("missing section {name}")))?;
        Array::view(self.backing, e.offset as usize, e.len as usize / size_of::<T>())
            .ok_or_else(|| corrupt(format!("{name}: cannot be viewed (bounds or alignment)")))
    }

    pub(super) fn c32(&self, k: u32) -> Result<Array<u32>, ArtifactError> {
        self.col(k)
    }

    pub(super) fn c8(&self, k: u32) -> Result<Array<u8>, ArtifactError> {
        self.col(k)
    }

    pub(super) fn c64(&self, k: u32) -> Result<Array<u64>, ArtifactError> {
        self.col(k)
    }

    /// A narrowable column, wide or narrow as its section says.
    pub(super) fn cn(&self, k: u32) -> Result<Col, ArtifactError> {
        let narrow = self.sections.iter().any(|e| e.kind == k && e.flags & SECTION_NARROW != 0);
        Ok(if narrow { Col::Narrow(self.col::<u16>(k)?) } else { Col::Wide(self.c32(k)?) })
    }
}

/// The vocabulary, checked against the header's counts.
pub(super) fn vocabulary(v: &Views, h: &Header) -> Result<Vocabulary, ArtifactError> {
    let vocab = Vocabulary {
        offsets: v.c32(VOCAB_OFFSETS)?,
        bytes: v.c8(VOCAB_BYTES)?,
        special: v.c8(VOCAB_SPECIAL)?,
        eos: v.c32(VOCAB_EOS)?,
        special_names: Default::default(),
        section_sums: Default::default(),
    };
    counts(&vocab, h)?;
    Ok(vocab)
}

/// Do the artifact's vocabulary sections have `vocab`'s lengths and checksums (so `vocab` can
/// stand in for them)? (Read from the section table before it is validated: these are plain
/// numbers compared, nothing indexed.)
pub(super) fn same_vocabulary(bytes: &[u8], h: &Header, vocab: &Vocabulary) -> bool {
    let n = h.section_count as usize;
    let Some(table) = n.checked_mul(size_of::<SectionEntry>()).and_then(|l| bytes.get(HEADER_LEN..HEADER_LEN + l))
    else {
        return false;
    };
    let Ok(entries) = <[SectionEntry]>::ref_from_bytes(table) else { return false };
    let sums = vocab.section_checksums();
    [VOCAB_OFFSETS, VOCAB_BYTES, VOCAB_SPECIAL, VOCAB_EOS].iter().zip(sums).all(|(&k, &(len, crc))| {
        entries.iter().any(|e| e.kind == k && e.flags == 0 && e.len == len && e.checksum == crc)
    })
}

/// A vocabulary in place of the artifact's (the same sections), checked against the header's
/// counts.
pub(super) fn given_vocabulary(vocab: &Vocabulary, h: &Header) -> Result<Vocabulary, ArtifactError> {
    counts(vocab, h)?;
    Ok(vocab.clone())
}

fn counts(vocab: &Vocabulary, h: &Header) -> Result<(), ArtifactError> {
    if vocab.len() != h.vocab_size as usize || vocab.eos.len() != h.eos_count as usize {
        return Err(corrupt("vocabulary size or end-token count differs from the header"));
    }
    if h.mask_words != h.vocab_size.div_ceil(32) {
        return Err(corrupt("mask words differ from the vocabulary size"));
    }
    Ok(())
}

/// The lexer tables (a whole number of transition rows).
pub(super) fn lexer(v: &Views, h: &Header) -> Result<LexerTables, ArtifactError> {
    let lexer = LexerTables {
        num_states: h.lexer_states,
        num_terminals: h.num_terminals,
        words: h.num_terminals.div_ceil(64),
        start: h.lexer_start,
        trans: v.cn(LEX_TRANS)?,
        byte_class: v.c8(LEX_BYTE_CLASS)?,
        // (Checked by `LexerTables::validate`: the table must be `num_states` whole rows.)
        num_classes: {
            let n = h.lexer_states.max(1) as usize;
            let len = v
                .sections
                .iter()
                .find(|e| e.kind == LEX_TRANS)
                .map_or(0, |e| e.len as usize / if e.flags & SECTION_NARROW != 0 { 2 } else { 4 });
            if len % n != 0 {
                return Err(corrupt("lexer.trans is not a whole number of rows"));
            }
            (len / n) as u32
        },
        accept_off: v.c32(LEX_ACCEPT_OFF)?,
        accept: v.c32(LEX_ACCEPT)?,
        next_plus: v.c64(LEX_NEXT_PLUS)?,
        next_plus_row: v.cn(LEX_NEXT_PLUS_ROW)?,
        ignored: v.c64(LEX_IGNORED)?,
        munch: v.c8(LEX_MUNCH)?,
        priority: v.col::<i32>(LEX_PRIORITY)?,
        fork_off: v.c32(LEX_FORK_OFF)?,
        fork: v.c32(LEX_FORK)?,
    };
    Ok(lexer)
}

/// The LR tables.
pub(super) fn lr(v: &Views, h: &Header) -> Result<LrTables, ArtifactError> {
    let lr = LrTables {
        num_states: h.lr_states,
        num_terminals: h.num_terminals,
        num_nonterminals: h.num_nonterminals,
        action_row: v.c32(LR_ACTION_ROW)?,
        action_term: v.c32(LR_ACTION_TERM)?,
        action_off: v.c32(LR_ACTION_OFF)?,
        actions: v.c32(LR_ACTIONS)?,
        goto_row: v.c32(LR_GOTO_ROW)?,
        goto_nt: v.c32(LR_GOTO_NT)?,
        goto_target: v.c32(LR_GOTO_TARGET)?,
        rule_lhs: v.c32(LR_RULE_LHS)?,
        rule_len: v.c32(LR_RULE_LEN)?,
    };
    Ok(lr)
}

/// Step 7: the terminal names (the one copy: `String`s for diagnostics), UTF-8.
pub(super) fn terminal_names(v: &Views, h: &Header) -> Result<Vec<String>, ArtifactError> {
    // 7. Terminal names (the one copy: `String`s for diagnostics) and metadata, UTF-8.
    let (name_off, name_bytes) = (v.c32(NAME_OFF)?, v.c8(NAME_BYTES)?);
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
    Ok(terminal_names)
}

/// The metadata section, UTF-8.
pub(super) fn metadata(v: &Views) -> Result<Array<u8>, ArtifactError> {
    let meta = v.c8(META)?;
    if std::str::from_utf8(&meta).is_err() {
        return Err(corrupt("metadata is not UTF-8"));
    }
    Ok(meta)
}

/// The Parser DWA's tables if the header's flag says there are some, checked against its counts.
pub(super) fn mask(v: &Views, h: &Header, has_mask: bool) -> Result<Option<MaskTables>, ArtifactError> {
    Ok(if has_mask {
        let m = MaskTables {
            num_tokens: h.vocab_size,
            start: v.c32(DWA_START)?,
            start_rho: v.c32(DWA_START_RHO)?,
            undecided: v.c32(DWA_UNDECIDED)?,
            aux_start: if v.sections.iter().any(|e| e.kind == DWA_AUX_START) {
                v.c32(DWA_AUX_START)?
            } else {
                Array::default()
            },
            edge_off: v.c32(DWA_EDGE_OFF)?,
            label_off: v.c32(DWA_LABEL_OFF)?,
            edge_label: v.cn(DWA_EDGE_LABEL)?,
            edge_outcome: v.cn(DWA_EDGE_OUTCOME)?,
            outcome_off: v.c32(DWA_OUTCOME_OFF)?,
            outcome_target: v.cn(DWA_OUTCOME_TARGET)?,
            outcome_rho: v.cn(DWA_OUTCOME_RHO)?,
            set_off: v.c32(SET_OFF)?,
            set_ranges: v.c32(SET_RANGES)?,
            set_dense: v.c32(SET_DENSE)?,
            block_refs: v.c32(SET_BLOCK_REFS)?,
            blocks: v.c32(SET_BLOCKS)?,
            kill_s: v.c32(KILL_S)?,
            kill_k: v.c32(KILL_K)?,
            kill_set: v.c32(KILL_SET)?,
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
    })
}
