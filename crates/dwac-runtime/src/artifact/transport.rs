//! The transport form (`.dwa.zst`, FORMAT.md §6): the artifact in one zstd frame, optionally
//! behind a *delta filter* that makes its integer columns compress better.
//!
//! Many `u32` columns are offsets or sorted labels: their neighbours differ by little, while the
//! values themselves are large. The filter replaces every word of a listed byte range by its
//! difference to the word before it (wrapping; the first word of a range is kept), and the
//! reader undoes it with a running sum after decompressing. On a Kubernetes-shaped artifact
//! this takes the zstd form from 3.2 to 2.2 MB; on a MaskBench one from 1.0 to 0.7 MB (the
//! vocabulary's offsets alone drop from 443 to 105 KB).
//!
//! The filter is announced by a zstd *skippable frame* in front of the data frame, so the
//! file is still a valid zstd stream (`zstd -d` skips the skippable frame and yields the
//! filtered bytes; only dwac undoes the filter). A file that starts with the data frame itself
//! is the unfiltered form, which is still read.
//!
//! A second skippable frame may list sections the form *leaves out*: the vocabulary's, which
//! are the same in every artifact of a tokenizer and most of a small grammar's zstd form (a
//! MaskBench schema with Qwen3's 151,669 tokens: 0.7 MB with them, under 0.1 MB without). Their
//! bytes are zero in the data frame; the reader takes them from the vocabulary the caller
//! passes ([`decompress_with`]), and each one must have the section's checksum, so only the
//! artifact's own vocabulary opens it.

#![cfg_attr(
    not(feature = "zstd"),
    allow(dead_code, reason = "without zstd a transport form is refused before its frames are read")
)]

use super::ArtifactError;
use crate::array::Backing;

/// Zstandard data frame magic.
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// The skippable frame magic dwac uses for the filter description (`0x184D2A5E`).
pub const FILTER_MAGIC: [u8; 4] = [0x5E, 0x2A, 0x4D, 0x18];
/// First bytes of the filter description.
pub const FILTER_TAG: [u8; 8] = *b"DWAC-XF1";
/// First bytes of the description of the sections a transport form leaves out.
pub const ELIDED_TAG: [u8; 8] = *b"DWAC-VX1";
/// Most sections a transport form may leave out.
pub const MAX_ELIDED: usize = 16;
/// Most ranges a filter may list (an artifact has fewer sections than this).
pub const MAX_RANGES: usize = 256;
/// Largest decompressed size a `.dwa.zst` may declare (refused above, so a forged header cannot
/// make the reader allocate without bound).
pub const MAX_DECOMPRESSED: u64 = 16 << 30;

/// Delta-coded byte ranges: (offset, length), both multiples of 4.
pub type Ranges = Vec<(u64, u64)>;

/// Does `prefix` (the first four bytes of a file) start a transport form?
pub fn is_transport(prefix: &[u8]) -> bool {
    prefix.starts_with(&ZSTD_MAGIC) || prefix.starts_with(&FILTER_MAGIC)
}

/// Replace each `u32` word in `ranges` (byte offset, byte length; both multiples of 4) by its
/// difference to the previous word of its range. The inverse of [`undelta`].
#[cfg(feature = "unstable")]
pub fn delta(bytes: &mut [u8], ranges: &[(u64, u64)]) {
    for &(off, len) in ranges {
        let (a, b) = (off as usize, (off + len) as usize);
        let mut prev = 0u32;
        for w in bytes[a..b].chunks_exact_mut(4) {
            let x = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            w.copy_from_slice(&x.wrapping_sub(prev).to_le_bytes());
            prev = x;
        }
    }
}

/// Undo [`delta`]: a running (wrapping) sum over each range.
pub fn undelta(bytes: &mut [u8], ranges: &[(u64, u64)]) {
    for &(off, len) in ranges {
        let (a, b) = (off as usize, (off + len) as usize);
        let mut sum = 0u32;
        for w in bytes[a..b].chunks_exact_mut(4) {
            sum = sum.wrapping_add(u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
            w.copy_from_slice(&sum.to_le_bytes());
        }
    }
}

/// The skippable frame announcing a delta filter over `ranges`.
#[cfg(feature = "unstable")]
pub fn filter_frame(ranges: &[(u64, u64)]) -> Vec<u8> {
    let payload = FILTER_TAG.len() + 4 + 16 * ranges.len();
    let mut out = Vec::with_capacity(8 + payload);
    out.extend_from_slice(&FILTER_MAGIC);
    out.extend_from_slice(&(payload as u32).to_le_bytes());
    out.extend_from_slice(&FILTER_TAG);
    out.extend_from_slice(&(ranges.len() as u32).to_le_bytes());
    for &(off, len) in ranges {
        out.extend_from_slice(&off.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
    }
    out
}

/// The skippable frame announcing that the sections of `kinds` are left out (zero in the data
/// frame).
#[cfg(feature = "unstable")]
pub fn elided_frame(kinds: &[u32]) -> Vec<u8> {
    let payload = ELIDED_TAG.len() + 4 + 4 * kinds.len();
    let mut out = Vec::with_capacity(8 + payload);
    out.extend_from_slice(&FILTER_MAGIC);
    out.extend_from_slice(&(payload as u32).to_le_bytes());
    out.extend_from_slice(&ELIDED_TAG);
    out.extend_from_slice(&(kinds.len() as u32).to_le_bytes());
    for k in kinds {
        out.extend_from_slice(&k.to_le_bytes());
    }
    out
}

fn bad(what: impl Into<String>) -> ArtifactError {
    ArtifactError::Zstd(what.into())
}

/// What a transport form's skippable frames say, and its data frame.
#[derive(Debug)]
pub struct Frames<'a> {
    /// Delta-coded byte ranges ([`delta`]).
    pub ranges: Ranges,
    /// Section kinds left out, ascending ([`elided_frame`]).
    pub elided: Vec<u32>,
    /// The zstd data frame.
    pub data: &'a [u8],
}

/// Split a transport form into its skippable frames (a filter, and the sections it leaves out;
/// each at most once, in either order) and the data frame.
pub fn parse_frames(mut bytes: &[u8]) -> Result<Frames<'_>, ArtifactError> {
    let mut ranges = None;
    let mut elided: Option<Vec<u32>> = None;
    while bytes.starts_with(&FILTER_MAGIC) {
        let size = bytes
            .get(4..8)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or_else(|| bad("truncated skippable frame"))?;
        let frame_len =
            8usize.checked_add(size).filter(|&e| e <= bytes.len()).ok_or_else(|| bad("truncated skippable frame"))?;
        let payload = &bytes[8..frame_len];
        if payload.starts_with(&ELIDED_TAG) {
            if elided.is_some() {
                return Err(bad("two frames listing left-out sections"));
            }
            let count = payload
                .get(8..12)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
                .ok_or_else(|| bad("truncated left-out sections frame"))?;
            if count > MAX_ELIDED || payload.len() != 12 + 4 * count {
                return Err(bad(format!("a frame of {size} bytes cannot list {count} left-out sections")));
            }
            let kinds: Vec<u32> =
                payload[12..].chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
            if kinds.windows(2).any(|w| w[0] >= w[1]) {
                return Err(bad("left-out sections not in increasing kind order"));
            }
            elided = Some(kinds);
        } else {
            if ranges.is_some() {
                return Err(bad("two filter frames"));
            }
            ranges = Some(parse_filter(&bytes[..frame_len])?.0);
        }
        bytes = &bytes[frame_len..];
    }
    Ok(Frames { ranges: ranges.unwrap_or_default(), elided: elided.unwrap_or_default(), data: bytes })
}

/// Split a transport form into its filter ranges (empty when unfiltered) and the data frame.
/// Ranges are checked to be word-aligned, in increasing order and non-overlapping; that they
/// lie inside the decompressed file is checked once its size is known.
pub fn parse_filter(bytes: &[u8]) -> Result<(Ranges, &[u8]), ArtifactError> {
    if !bytes.starts_with(&FILTER_MAGIC) {
        return Ok((Vec::new(), bytes));
    }
    let word = |at: usize| -> Result<u32, ArtifactError> {
        let b = bytes.get(at..at + 4).ok_or_else(|| bad("truncated filter frame"))?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let size = word(4)? as usize;
    let payload = bytes.get(8..8 + size).ok_or_else(|| bad("truncated filter frame"))?;
    if !payload.starts_with(&FILTER_TAG) {
        return Err(bad("unknown skippable frame (not a dwac filter)"));
    }
    let count = word(8 + FILTER_TAG.len())? as usize;
    if count > MAX_RANGES || size != FILTER_TAG.len() + 4 + 16 * count {
        return Err(bad(format!("filter frame of {size} bytes cannot list {count} ranges")));
    }
    let mut ranges = Vec::with_capacity(count);
    let mut end = 0u64;
    for i in 0..count {
        let at = FILTER_TAG.len() + 4 + 16 * i;
        let u = |k: usize| u64::from_le_bytes(payload[k..k + 8].try_into().expect("8 bytes"));
        let (off, len) = (u(at), u(at + 8));
        if off % 4 != 0 || len % 4 != 0 || off < end || off.checked_add(len).is_none() {
            return Err(bad(format!("filter range {i} ({off}, {len}) is misaligned or out of order")));
        }
        end = off + len;
        ranges.push((off, len));
    }
    Ok((ranges, &bytes[8 + size..]))
}

/// Decompress a transport form (filtered or not) into an 8-aligned buffer, undoing the filter.
/// A form that leaves sections out needs [`decompress_with`].
#[cfg(feature = "unstable")]
pub fn decompress(bytes: &[u8]) -> Result<Backing, ArtifactError> {
    decompress_with(bytes, None)
}

/// [`decompress`], filling the sections the form leaves out (the vocabulary's) from `vocab`:
/// each must have exactly the section's length and checksum
/// ([`ArtifactError::VocabularyMismatch`] otherwise), so the result is the artifact the
/// writer compressed. Without `vocab`, such a form is [`ArtifactError::VocabularyNeeded`].
#[cfg(feature = "zstd")]
pub fn decompress_with(bytes: &[u8], vocab: Option<&crate::Vocabulary>) -> Result<Backing, ArtifactError> {
    use zerocopy::IntoBytes;
    let Frames { ranges, elided, data: frame } = parse_frames(bytes)?;
    if !elided.is_empty() && vocab.is_none() {
        return Err(ArtifactError::VocabularyNeeded);
    }
    let size = zstd::zstd_safe::get_frame_content_size(frame)
        .map_err(|_| bad("not a zstd frame"))?
        .ok_or_else(|| bad("the frame does not declare its size"))?;
    if size > MAX_DECOMPRESSED {
        return Err(bad(format!("declared size {size} is over the limit {MAX_DECOMPRESSED}")));
    }
    if let Some(&(off, len)) = ranges.last() {
        if off + len > size {
            return Err(bad(format!("filter range ({off}, {len}) runs past the {size} decompressed bytes")));
        }
    }
    let size = size as usize;
    let mut words = vec![0u64; size.div_ceil(8)];
    let out = &mut words.as_mut_bytes()[..size];
    let n = zstd::bulk::Decompressor::new()
        .and_then(|mut d| d.decompress_to_buffer(frame, out))
        .map_err(|e| bad(e.to_string()))?;
    if n != size {
        return Err(bad(format!("decompressed {n} bytes, the frame declares {size}")));
    }
    undelta(out, &ranges);
    if let Some(vocab) = vocab.filter(|_| !elided.is_empty()) {
        fill_elided(out, &elided, vocab)?;
    }
    Ok(Backing::from_words(words, size))
}

/// Copy `vocab`'s sections into the places the transport form left them out (`out` is the
/// decompressed file), checking each against its section's length and checksum.
#[cfg(feature = "zstd")]
fn fill_elided(out: &mut [u8], elided: &[u32], vocab: &crate::Vocabulary) -> Result<(), ArtifactError> {
    use super::{crc32c, kind, kind_info, SectionEntry, HEADER_LEN};
    use zerocopy::{FromBytes, IntoBytes};
    let count = out.get(64..68).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize).unwrap_or(0);
    let table_end = count
        .checked_mul(size_of::<SectionEntry>())
        .and_then(|x| x.checked_add(HEADER_LEN))
        .filter(|&e| e <= out.len())
        .ok_or_else(|| bad("section table runs past the end of the file"))?;
    let sections =
        <[SectionEntry]>::ref_from_bytes(&out[HEADER_LEN..table_end]).map_err(|_| bad("section table"))?.to_vec();
    for &k in elided {
        let given: &[u8] = match k {
            kind::VOCAB_OFFSETS => vocab.offsets.as_bytes(),
            kind::VOCAB_BYTES => vocab.bytes.as_bytes(),
            kind::VOCAB_SPECIAL => vocab.special.as_bytes(),
            kind::VOCAB_EOS => vocab.eos.as_bytes(),
            _ => return Err(bad(format!("section kind {k:#06x} cannot be left out"))),
        };
        let name = kind_info(k).map_or("?", |i| i.0).to_string();
        let e = sections
            .iter()
            .find(|e| e.kind == k)
            .ok_or_else(|| bad(format!("left-out section {name} is not in the section table")))?;
        let at = usize::try_from(e.offset)
            .ok()
            .zip(usize::try_from(e.len).ok())
            .and_then(|(off, len)| Some(off..off.checked_add(len).filter(|&end| end <= out.len())?))
            .ok_or_else(|| bad(format!("left-out section {name} runs past the end of the file")))?;
        if given.len() != at.len() || crc32c(given) as u64 != e.checksum {
            return Err(ArtifactError::VocabularyMismatch { section: name });
        }
        let place = &mut out[at];
        if place.iter().any(|&b| b != 0) {
            return Err(bad(format!("left-out section {name} is not zero in the data frame")));
        }
        place.copy_from_slice(given);
    }
    Ok(())
}

/// Without the `zstd` feature the transport form cannot be read.
#[cfg(not(feature = "zstd"))]
pub fn decompress_with(_: &[u8], _: Option<&crate::Vocabulary>) -> Result<Backing, ArtifactError> {
    Err(bad("this build of dwac-runtime has no zstd support (feature `zstd`)"))
}

// (The tests build tables with the writer's side: feature `unstable`.)
#[cfg(all(test, feature = "unstable"))]
mod tests {
    use super::*;

    #[test]
    fn delta_and_undelta_are_inverse_and_the_frame_round_trips() {
        let mut b: Vec<u8> = (0..64u32).flat_map(|i| (i * i * 7919).to_le_bytes()).collect();
        let orig = b.clone();
        let ranges = [(4, 40), (64, 128)];
        delta(&mut b, &ranges);
        assert_ne!(b, orig);
        undelta(&mut b, &ranges);
        assert_eq!(b, orig);
        let f = filter_frame(&ranges);
        let mut file = f.clone();
        file.extend_from_slice(b"rest");
        let (r, rest) = parse_filter(&file).unwrap();
        assert_eq!(r, ranges);
        assert_eq!(rest, b"rest");
        // Misaligned, overlapping, truncated or foreign frames are refused.
        for bad in [filter_frame(&[(2, 4)]), filter_frame(&[(8, 8), (12, 4)]), f[..f.len() - 1].to_vec()] {
            assert!(parse_filter(&bad).is_err());
        }
        let mut foreign = f.clone();
        foreign[8] = b'X';
        assert!(parse_filter(&foreign).is_err());
    }
}
