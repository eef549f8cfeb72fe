//! Hopcroft's DFA minimization over byte classes, O(k·n·log n).
//!
//! Moore's refinement needs as many rounds as the longest distinguishing word, which is
//! hundreds of rounds for length-bounded terminals (a 253-character hostname); Hopcroft's
//! algorithm does not.

use dwac_runtime::unstable::DEAD;

/// Partition `0..256` into classes of bytes that every state treats alike (equal columns of
/// the transition table), numbered in order of their smallest byte.
#[cfg(test)]
pub(crate) fn byte_classes(n: usize, trans: &[u32]) -> (Vec<u16>, usize) {
    column_classes(n, 256, trans)
}

/// Partition the `k` columns of `trans` (`trans[q*k+c]`, `n` rows) into classes of equal
/// columns, numbered in order of their first column.
pub(crate) fn column_classes(n: usize, k: usize, trans: &[u32]) -> (Vec<u16>, usize) {
    // A hash of each column, built and then checked row by row (the table is stored by rows:
    // reading it by columns misses the cache on every state).
    let width = k;
    let mut hash = vec![0u64; width];
    for row in trans[..n * width].chunks_exact(width) {
        for (h, &t) in hash.iter_mut().zip(row) {
            *h = (h.rotate_left(5) ^ t as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    let mut rep = vec![0usize; width];
    for b in 0..width {
        rep[b] = (0..b).find(|&r| rep[r] == r && hash[r] == hash[b]).unwrap_or(b);
    }
    let collision = trans[..n * width].chunks_exact(width).any(|row| (0..width).any(|b| row[b] != row[rep[b]]));
    if collision {
        // Equal hashes of unequal columns: compare the columns themselves.
        for b in 0..width {
            let same = |r: usize| (0..n).all(|q| trans[q * width + r] == trans[q * width + b]);
            rep[b] = (0..b).find(|&r| rep[r] == r && same(r)).unwrap_or(b);
        }
    }
    let mut class = vec![0u16; width];
    let mut k = 0;
    for b in 0..width {
        if rep[b] == b {
            class[b] = k as u16;
            k += 1;
        } else {
            class[b] = class[rep[b]];
        }
    }
    (class, k.max(1))
}

/// The states other than `q0` from which no accepting state is reachable, with every
/// transition into them made [`DEAD`] (`trans[q·k+c]`, `n` states).
pub(crate) fn doomed_states(n: usize, k: usize, trans: &mut [u32], accs: &[Vec<u32>]) -> Vec<bool> {
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
    for q in 0..n {
        for &t in &trans[q * k..q * k + k] {
            if t != DEAD && preds[t as usize].last() != Some(&(q as u32)) {
                preds[t as usize].push(q as u32);
            }
        }
    }
    let mut live: Vec<bool> = accs.iter().map(|a| !a.is_empty()).collect();
    let mut stack: Vec<u32> = (0..n as u32).filter(|&q| live[q as usize]).collect();
    while let Some(q) = stack.pop() {
        for &p in &preds[q as usize] {
            if !live[p as usize] {
                live[p as usize] = true;
                stack.push(p);
            }
        }
    }
    if let Some(q0) = live.first_mut() {
        *q0 = true;
    }
    for t in trans.iter_mut() {
        if *t != DEAD && !live[*t as usize] {
            *t = DEAD;
        }
    }
    live.iter().map(|&l| !l).collect()
}

/// Coarsest partition of the states `0..n` (transitions `trans[q*256+b]`, [`DEAD`] = none)
/// refining `initial` (block ids) and compatible with the transitions. Returns each state's block.
/// (The compiler's tables come with their byte classes and call [`minimize_classes`]; this
/// byte-wide form is the tests' reference.)
#[cfg(test)]
pub fn minimize(n: usize, trans: &[u32], initial: &[u32]) -> Vec<u32> {
    let (class, k) = byte_classes(n, trans);
    let mut rep_byte = vec![0usize; k];
    for b in (0..256).rev() {
        rep_byte[class[b] as usize] = b;
    }
    let mut by_class = Vec::with_capacity(n * k);
    for row in trans[..n * 256].chunks_exact(256) {
        by_class.extend(rep_byte.iter().map(|&b| row[b]));
    }
    minimize_classes(n, k, &by_class, initial)
}

/// The coarsest partition of the states `0..n` refining `initial` (block ids) and compatible
/// with the transitions, over a table reduced to `k` input classes (`trans[q*k+c]`, [`DEAD`] =
/// none): where every class stands for bytes with equal columns, the partition is the same as
/// over the bytes. Returns each state's block.
pub fn minimize_classes(n: usize, k: usize, trans: &[u32], initial: &[u32]) -> Vec<u32> {
    debug_assert_eq!(trans.len(), n * k);
    // Inverse transitions, CSR by target and then class: the predecessors of `t` on class `c`
    // are `pre[off[t·k+c]..off[t·k+c+1]]`, so a state's predecessors on every class lie
    // together (a splitter is read for all its pending classes at once, below). DEAD (the
    // sink) has none kept: it is never a splitter (below).
    let mut off: Vec<u32> = vec![0u32; n * k + 1];
    for row in trans.chunks_exact(k) {
        for (c, &t) in row.iter().enumerate() {
            if t != DEAD {
                off[t as usize * k + c + 1] += 1;
            }
        }
    }
    for i in 0..n * k {
        off[i + 1] += off[i];
    }
    let mut fill: Vec<u32> = off[..n * k].to_vec();
    let mut pre: Vec<u32> = vec![0u32; off[n * k] as usize];
    for (q, row) in trans.chunks_exact(k).enumerate() {
        for (c, &t) in row.iter().enumerate() {
            if t != DEAD {
                let at = &mut fill[t as usize * k + c];
                pre[*at as usize] = q as u32;
                *at += 1;
            }
        }
    }
    drop(fill);
    // Blocks: members stored contiguously in `elems`, block b = elems[start[b]..end[b]]. The
    // sink (DEAD, state `n`) is a block of its own.
    let total = n + 1;
    let sink_block = initial.iter().max().map_or(0, |&m| m + 1);
    let init = |q: usize| if q == n { sink_block } else { initial[q] };
    let nb0 = sink_block as usize + 1;
    let mut elems: Vec<u32> = (0..total as u32).collect();
    elems.sort_by_key(|&q| init(q as usize));
    let mut block: Vec<u32> = (0..total).map(init).collect();
    let mut pos = vec![0u32; total];
    for (i, &q) in elems.iter().enumerate() {
        pos[q as usize] = i as u32;
    }
    let mut start = vec![0u32; nb0];
    let mut end = vec![0u32; nb0];
    let mut i = 0;
    while i < total {
        let b = block[elems[i] as usize] as usize;
        let s = i;
        while i < total && block[elems[i] as usize] as usize == b {
            i += 1;
        }
        start[b] = s as u32;
        end[b] = i as u32;
    }
    // Splitters, kept per block: the classes still to split by (`pending[b]`), and a stack of
    // the blocks with some. Every initial block but one is a splitter for every class
    // (Hopcroft): all but the sink's, a block of one state that never splits, so never one again.
    let words = k.div_ceil(64);
    let mut pending: Vec<u64> = vec![0; nb0 * words];
    let all = |p: &mut [u64]| {
        for (w, word) in p.iter_mut().enumerate() {
            *word = if (w + 1) * 64 <= k { u64::MAX } else { (1u64 << (k - w * 64)) - 1 };
        }
    };
    let mut stack: Vec<u32> = Vec::new();
    for b in 0..nb0 {
        if end[b] > start[b] && b != sink_block as usize {
            all(&mut pending[b * words..(b + 1) * words]);
            stack.push(b as u32);
        }
    }
    let mut mark_count: Vec<u32> = vec![0; nb0];
    let mut touched: Vec<u32> = Vec::new();
    let mut members: Vec<u32> = Vec::new();
    let mut classes: Vec<usize> = Vec::new();
    // Per pending class, its predecessors of the splitter: `xs[x_off[j]..x_off[j+1]]`.
    let mut xs: Vec<u32> = Vec::new();
    let mut x_off: Vec<usize> = Vec::new();
    while let Some(a) = stack.pop() {
        let a = a as usize;
        classes.clear();
        for w in 0..words {
            let mut word = std::mem::take(&mut pending[a * words + w]);
            while word != 0 {
                classes.push(w * 64 + word.trailing_zeros() as usize);
                word &= word - 1;
            }
        }
        if classes.is_empty() {
            continue;
        }
        // X_c = predecessors of block a on class c, for every pending class c, read from a's
        // members as they are now (splitting by a's members on each class after a has itself
        // been split by an earlier class is splitting by a union of blocks: sound, and the
        // parts split off are splitters of their own).
        members.clear();
        members.extend_from_slice(&elems[start[a] as usize..end[a] as usize]);
        xs.clear();
        x_off.clear();
        for &c in &classes {
            x_off.push(xs.len());
            for &t in &members {
                let at = t as usize * k + c;
                xs.extend_from_slice(&pre[off[at] as usize..off[at + 1] as usize]);
            }
        }
        x_off.push(xs.len());
        for j in 0..classes.len() {
            touched.clear();
            for &q in &xs[x_off[j]..x_off[j + 1]] {
                let b = block[q as usize] as usize;
                // Move q to the front part of its block (the marked region).
                let m = mark_count[b];
                let first = start[b] + m;
                let pq = pos[q as usize];
                if pq < first {
                    continue; // already marked
                }
                if m == 0 {
                    touched.push(b as u32);
                }
                let other = elems[first as usize];
                elems.swap(first as usize, pq as usize);
                pos[other as usize] = pq;
                pos[q as usize] = first;
                mark_count[b] = m + 1;
            }
            for &b in &touched {
                let b = b as usize;
                let m = mark_count[b];
                mark_count[b] = 0;
                let size = end[b] - start[b];
                if m == size {
                    continue;
                }
                // Split: the smaller part becomes a new block.
                let nb = start.len();
                let (ns, ne, keep_s, keep_e) = if m <= size - m {
                    (start[b], start[b] + m, start[b] + m, end[b])
                } else {
                    (start[b] + m, end[b], start[b], start[b] + m)
                };
                start.push(ns);
                end.push(ne);
                start[b] = keep_s;
                end[b] = keep_e;
                for i in ns..ne {
                    block[elems[i as usize] as usize] = nb as u32;
                }
                // Hopcroft: whether or not b is pending on a class, the smaller part on every
                // class suffices.
                pending.resize((nb + 1) * words, 0);
                all(&mut pending[nb * words..(nb + 1) * words]);
                stack.push(nb as u32);
                mark_count.push(0);
            }
        }
    }
    block.truncate(n);
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Moore's refinement to a fixpoint, by the definition: two states stay together while
    /// their blocks and the blocks of their successors on every byte agree.
    fn moore(n: usize, trans: &[u32], initial: &[u32]) -> Vec<u32> {
        let mut block = initial.to_vec();
        loop {
            let sig = |q: usize, block: &[u32]| -> Vec<u32> {
                let mut s = vec![block[q]];
                s.extend((0..256).map(|b| match trans[q * 256 + b] {
                    DEAD => u32::MAX,
                    t => block[t as usize],
                }));
                s
            };
            let mut ids: std::collections::HashMap<Vec<u32>, u32> = Default::default();
            let next: Vec<u32> = (0..n)
                .map(|q| {
                    let k = ids.len() as u32;
                    *ids.entry(sig(q, &block)).or_insert(k)
                })
                .collect();
            let count = |v: &[u32]| v.iter().collect::<std::collections::HashSet<_>>().len();
            if count(&next) == count(&block) {
                return next;
            }
            block = next;
        }
    }

    /// Two partitions of `0..n` are the same up to the naming of blocks.
    fn same_partition(a: &[u32], b: &[u32]) -> bool {
        let mut ab: std::collections::HashMap<u32, u32> = Default::default();
        let mut ba: std::collections::HashMap<u32, u32> = Default::default();
        a.iter().zip(b).all(|(&x, &y)| *ab.entry(x).or_insert(y) == y && *ba.entry(y).or_insert(x) == x)
    }

    #[test]
    fn hopcroft_equals_moore_on_random_dfas() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut rand = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        let mut merged = 0;
        for round in 0..300 {
            let n = 1 + rand(40) as usize;
            // A few byte columns (so that byte classes are non-trivial), DEAD often.
            let distinct = 1 + rand(5) as usize;
            let cols: Vec<Vec<u32>> = (0..distinct)
                .map(|_| (0..n).map(|_| if rand(3) == 0 { DEAD } else { rand(n as u64) as u32 }).collect())
                .collect();
            let col_of: Vec<usize> = (0..256).map(|_| rand(distinct as u64) as usize).collect();
            let mut trans = vec![DEAD; n * 256];
            for q in 0..n {
                for b in 0..256 {
                    trans[q * 256 + b] = cols[col_of[b]][q];
                }
            }
            let initial: Vec<u32> = (0..n).map(|_| rand(1 + round % 3) as u32).collect();
            let got = minimize(n, &trans, &initial);
            let want = moore(n, &trans, &initial);
            assert!(same_partition(&got, &want), "round {round}: {got:?} vs {want:?}");
            let blocks = want.iter().collect::<std::collections::HashSet<_>>().len();
            merged += n - blocks;
        }
        // The DFAs were not all minimal already.
        assert!(merged > 100, "only {merged} states merged");
    }

    #[test]
    fn byte_classes_group_equal_columns() {
        let n = 3;
        let mut trans = vec![DEAD; n * 256];
        for q in 0..n {
            for b in b'a'..=b'z' {
                trans[q * 256 + b as usize] = ((q + 1) % n) as u32;
            }
            trans[q * 256 + b'0' as usize] = q as u32;
        }
        let (class, k) = byte_classes(n, &trans);
        assert_eq!(k, 3, "letters, '0', everything else");
        assert!((b'a'..=b'z').all(|b| class[b as usize] == class[b'a' as usize]));
        assert_ne!(class[b'0' as usize], class[b'a' as usize]);
        assert_eq!(class[0], class[255]);
    }
}
