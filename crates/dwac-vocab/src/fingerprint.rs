//! The vocabulary fingerprint.

use dwac_runtime::Vocabulary;
use sha2::{Digest, Sha256};

/// Leading bytes of the fingerprinted message (16 ASCII bytes, no terminator).
///
/// The fingerprint is SHA-256 over this byte layout (all integers little-endian):
///
/// ```text
/// b"dwac-vocab-fp-v2"                       16 bytes
/// n_tokens                                  u32
/// for id in 0..n_tokens:
///     id                                    u32
///     special                               u8   (1 = special, 0 = not)
///     len                                   u32  (byte length of the token; 0 for special tokens)
///     bytes                                 len bytes
/// n_eos                                     u32
/// for each EOS id, ascending, no duplicates:
///     id                                    u32
/// ```
///
/// v2 (special tokens have no bytes; non-special added tokens have their decoder rendering)
/// replaced v1 (special tokens kept their content's bytes; added tokens their raw content).
///
/// The tokenizer's name and file layout are not part of it: two files that give the same ids,
/// bytes, special flags and end tokens have the same fingerprint.
pub const FINGERPRINT_MAGIC: &[u8; 16] = b"dwac-vocab-fp-v2";

pub(crate) fn compute(v: &Vocabulary) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(FINGERPRINT_MAGIC);
    let n = v.len() as u32;
    h.update(n.to_le_bytes());
    for id in 0..n {
        let b = v.token_bytes(id).unwrap_or(&[]);
        h.update(id.to_le_bytes());
        h.update([u8::from(v.is_special(id))]);
        h.update((b.len() as u32).to_le_bytes());
        h.update(b);
    }
    let mut eos = v.eos().to_vec();
    eos.sort_unstable();
    eos.dedup();
    h.update((eos.len() as u32).to_le_bytes());
    for e in eos {
        h.update(e.to_le_bytes());
    }
    h.finalize().into()
}

pub(crate) fn hex(fp: &[u8; 32]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(64);
    for b in fp {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_as_documented() {
        let v = Vocabulary::from_tokens(&[b"a".to_vec(), Vec::new()], vec![false, true], vec![1]);
        let mut msg = Vec::new();
        msg.extend_from_slice(b"dwac-vocab-fp-v2");
        msg.extend_from_slice(&2u32.to_le_bytes());
        msg.extend_from_slice(&0u32.to_le_bytes());
        msg.push(0);
        msg.extend_from_slice(&1u32.to_le_bytes());
        msg.push(b'a');
        msg.extend_from_slice(&1u32.to_le_bytes());
        msg.push(1);
        msg.extend_from_slice(&0u32.to_le_bytes());
        msg.extend_from_slice(&1u32.to_le_bytes());
        msg.extend_from_slice(&1u32.to_le_bytes());
        let want: [u8; 32] = Sha256::digest(&msg).into();
        assert_eq!(compute(&v), want);
        assert_eq!(hex(&want).len(), 64);
    }
}
