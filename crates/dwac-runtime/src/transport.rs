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

use crate::array::Backing;
use crate::artifact::ArtifactError;

/// Zstandard data frame magic.
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// The skippable frame magic dwac uses for the filter description (`0x184D2A5E`).
pub const FILTER_MAGIC: [u8; 4] = [0x5E, 0x2A, 0x4D, 0x18];
/// First bytes of the filter description.
pub const FILTER_TAG: [u8; 8] = *b"DWAC-XF1";
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

fn bad(what: impl Into<String>) -> ArtifactError {
    ArtifactError::Zstd(what.into())
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
#[cfg(feature = "zstd")]
pub fn decompress(bytes: &[u8]) -> Result<Backing, ArtifactError> {
    use zerocopy::IntoBytes;
    let (ranges, frame) = parse_filter(bytes)?;
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
    Ok(Backing::from_words(words, size))
}

/// Without the `zstd` feature the transport form cannot be read.
#[cfg(not(feature = "zstd"))]
pub fn decompress(_: &[u8]) -> Result<Backing, ArtifactError> {
    Err(bad("this build of dwac-runtime has no zstd support (feature `zstd`)"))
}

#[cfg(test)]
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
