//! Hopcroft's DFA minimization over byte classes, O(k·n·log n).
//!
//! Moore's refinement needs as many rounds as the longest distinguishing word, which is
//! hundreds of rounds for length-bounded terminals (a 253-character hostname); Hopcroft's
//! algorithm does not.

use dwac_runtime::DEAD;

/// Partition `0..256` into classes of bytes that every state treats alike (equal columns of
/// the transition table), numbered in order of their smallest byte.
pub(crate) fn byte_classes(n: usize, trans: &[u32]) -> (Vec<u16>, usize) {
    // A hash of each column, then exact comparison among equal hashes.
    let mut hash = [0u64; 256];
    for q in 0..n {
        for (h, &t) in hash.iter_mut().zip(&trans[q * 256..q * 256 + 256]) {
            *h = (h.rotate_left(5) ^ t as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    let mut class = vec![0u16; 256];
    let mut reps: Vec<usize> = Vec::new();
    for b in 0..256 {
        let same = |r: usize| hash[r] == hash[b] && (0..n).all(|q| trans[q * 256 + r] == trans[q * 256 + b]);
        match reps.iter().position(|&r| same(r)) {
            Some(c) => class[b] = c as u16,
            None => {
                class[b] = reps.len() as u16;
                reps.push(b);
            }
        }
    }
    let k = reps.len().max(1);
    (class, k)
}

/// Coarsest partition of the states `0..n` (transitions `trans[q*256+b]`, [`DEAD`] = none)
/// refining `initial` (block ids) and compatible with the transitions. Returns each state's block.
pub fn minimize(n: usize, trans: &[u32], initial: &[u32]) -> Vec<u32> {
    let (class, k) = byte_classes(n, trans);
    let mut rep_byte = vec![0usize; k];
    for b in (0..256).rev() {
        rep_byte[class[b] as usize] = b;
    }
    // A sink state `n` stands for DEAD, so the transition function is total.
    let total = n + 1;
    let target = |q: usize, c: usize| -> usize {
        if q == n {
            return n;
        }
        let t = trans[q * 256 + rep_byte[c]];
        if t == DEAD {
            n
        } else {
            t as usize
        }
    };
    // Inverse transitions per class, CSR: pre[c] lists for each target t the sources.
    let mut pre_off: Vec<Vec<u32>> = Vec::with_capacity(k);
    let mut pre: Vec<Vec<u32>> = Vec::with_capacity(k);
    for c in 0..k {
        let mut cnt = vec![0u32; total + 1];
        for q in 0..total {
            cnt[target(q, c) + 1] += 1;
        }
        for i in 0..total {
            cnt[i + 1] += cnt[i];
        }
        let mut fill = cnt.clone();
        let mut src = vec![0u32; total];
        for q in 0..total {
            let t = target(q, c);
            src[fill[t] as usize] = q as u32;
            fill[t] += 1;
        }
        pre_off.push(cnt);
        pre.push(src);
    }
    // Blocks: members stored contiguously in `elems`, block b = elems[start[b]..end[b]].
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
    let mut in_work: Vec<Vec<bool>> = Vec::new();
    let mut work: Vec<(u32, u16)> = Vec::new();
    for b in 0..nb0 {
        in_work.push(vec![true; k]);
        if end[b] > start[b] {
            for c in 0..k {
                work.push((b as u32, c as u16));
            }
        }
    }
    let mut mark_count: Vec<u32> = vec![0; nb0];
    let mut touched: Vec<u32> = Vec::new();
    let mut x: Vec<u32> = Vec::new();
    while let Some((a, c)) = work.pop() {
        in_work[a as usize][c as usize] = false;
        let c = c as usize;
        // X = predecessors of block a on class c.
        x.clear();
        for i in start[a as usize]..end[a as usize] {
            let t = elems[i as usize] as usize;
            let (s, e) = (pre_off[c][t] as usize, pre_off[c][t + 1] as usize);
            x.extend_from_slice(&pre[c][s..e]);
        }
        touched.clear();
        for &q in &x {
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
            // Split: marked part [start, start+m) becomes a new block if smaller, else the rest does.
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
            // Hopcroft: whether or not (b, c) is pending, adding the smaller part (nb, c) suffices.
            in_work.push(vec![true; k]);
            for c2 in 0..k {
                work.push((nb as u32, c2 as u16));
            }
            mark_count.push(0);
        }
    }
    block.truncate(n);
    block
}
