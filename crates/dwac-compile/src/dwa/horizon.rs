//! Bounded-horizon equivalence of lexer states: `x ≡_d y` when every byte string of length at
//! most `d` leads `x` and `y` to states the Terminal DWA walk cannot tell apart (both dead, or
//! both alive with the same start flag, accept list and `Next⁺`). The walk of a trie subtree of
//! height `h` (at most `h` further bytes) from `x` reads only what `≡_h` compares, so it yields
//! the lexings it yields from `y` (see [`super::terminal_dwa::Walker`] for the exact conditions).
//!
//! This is what makes counting terminals cheap (`maxLength`, `{m,n}` repetitions, hostname
//! labels): a lexer state per counter position, but all positions farther from the bound than
//! the longest token are equivalent for every token.
//!
//! The relations `≡_0 ⊇ ≡_1 ⊇ …` are computed by Moore refinement, one round per level, up to
//! the trie's height or until a round splits nothing. A round only re-examines the predecessors
//! of the states that changed block in the previous round: a state none of whose successors
//! changed block keeps its signature, which all members of its block shared. Each state keeps
//! the history of its block ids (a state changes block only when it is split off, so histories
//! are short), and a fresh id is never reused, so `x ≡_d y` is an equality of ids at level `d`.

use dwac_runtime::unstable::LexerTables;
use dwac_runtime::unstable::DEAD;

use super::FastMap;

/// Block id of [`DEAD`] at every level.
const DEAD_BLOCK: u32 = u32::MAX;

/// The relations `≡_d` of a lexer's states, for every `d` up to a maximum depth: each state's
/// block id per level.
pub struct Horizon {
    /// Per state, `hist[hist_off[x]..hist_off[x + 1]]`: (level, block id) from that level on,
    /// levels ascending, the first at level 0.
    hist_off: Vec<u32>,
    hist: Vec<(u32, u32)>,
    /// Levels computed.
    levels: u32,
    /// No round after `levels` would split anything: `≡_d` is `≡_levels` for every `d` above.
    stable: bool,
    /// Per state: the fewest bytes to a state (itself included, at 0) where accepting a lexeme
    /// creates an inhibitor; `u32::MAX` if none is reachable.
    inh_dist: Vec<u32>,
    /// Refinement rounds that split some block (statistics).
    pub rounds: u32,
}

impl Horizon {
    /// `≡_d` for every `d ≤ max_depth`.
    pub fn new(lex: &LexerTables, max_depth: u32) -> Horizon {
        // Level 0: what the walk reads at a state.
        let mut cur = vec![0u32; lex.num_states as usize];
        let mut index: FastMap<(bool, &[u32], &[u64]), u32> = FastMap::default();
        for (x, id) in cur.iter_mut().enumerate() {
            let key = (x as u32 == lex.start, lex.accepts(x as u32), lex.next_plus(x as u32));
            let next = index.len() as u32;
            *id = *index.entry(key).or_insert(next);
        }
        let next_id = index.len() as u32;
        drop(index);
        Horizon::refine(lex, max_depth, cur, next_id)
    }

    /// `≡_d` up to the name of the pending lexeme's terminal: states whose lexeme can only
    /// become one terminal ([`sole_terminal`]) are compared with that terminal replaced by a
    /// placeholder (its inhibition mode and priority kept), so that `x ≡_d y` here, with sole
    /// terminals `s` and `t`, says that every byte string of length at most `d` leads `x` and `y`
    /// to states the walk cannot tell apart once `s` is renamed `t`. A lexeme's states all
    /// have its sole terminal, and the lexeme's end leaves them, so the renaming holds until
    /// the first lexeme ends; what comes after it is compared as it is.
    ///
    /// The lexer states of two length-bounded strings of a schema are so alike near their
    /// bounds, where each position is a state of its own (the walk of one serves the other).
    pub fn renaming(lex: &LexerTables, max_depth: u32) -> Horizon {
        const SELF: u32 = u32::MAX;
        type Key = (bool, Vec<u32>, Vec<u64>, Option<(u8, i32)>);
        let mut cur = vec![0u32; lex.num_states as usize];
        let mut index: FastMap<Key, u32> = FastMap::default();
        for (x, id) in cur.iter_mut().enumerate() {
            let x = x as u32;
            let (acc, np) = (lex.accepts(x), lex.next_plus(x));
            let key = match sole_terminal(lex, x) {
                Some(t) => {
                    let mut np = np.to_vec();
                    np[(t / 64) as usize] &= !(1u64 << (t % 64));
                    let acc = acc.iter().map(|&a| if a == t { SELF } else { a }).collect();
                    let own = (lex.munch.get(t as usize).copied().unwrap_or(0), lex.priority_of(t));
                    (x == lex.start, acc, np, Some(own))
                }
                None => (x == lex.start, acc.to_vec(), np.to_vec(), None),
            };
            let next = index.len() as u32;
            *id = *index.entry(key).or_insert(next);
        }
        let next_id = index.len() as u32;
        drop(index);
        Horizon::refine(lex, max_depth, cur, next_id)
    }

    /// The levels of [`Horizon`] from level 0's blocks (`cur`, ids below `next_id`).
    fn refine(lex: &LexerTables, max_depth: u32, mut cur: Vec<u32>, mut next_id: u32) -> Horizon {
        let n = lex.num_states as usize;
        let k = lex.num_classes as usize;
        let mut size = vec![0u32; next_id as usize];
        for &b in &cur {
            size[b as usize] += 1;
        }
        let mut log: Vec<(u32, u32, u32)> = (0..n).map(|x| (x as u32, 0, cur[x])).collect();

        let (live_off, live) = live_transitions(lex);
        let live_of = |x: u32| &live[live_off[x as usize] as usize..live_off[x as usize + 1] as usize];

        let (pred_off, pred) = predecessors(n, k, &live_off, &live);

        // Refinement rounds. Round `level` computes ≡_level from ≡_(level-1) (`cur`).
        let mut changed: Vec<u32> = Vec::new();
        let mut mark = vec![0u32; n];
        let mut cands: Vec<u32> = Vec::new();
        let mut keyed: Vec<(u32, u64, u32)> = Vec::new();
        let mut groups: Vec<(usize, usize)> = Vec::new();
        let mut moves: Vec<(u32, u32)> = Vec::new();
        let mut levels = 0;
        let mut stable = false;
        let mut rounds = 0;
        for level in 1..=max_depth {
            // Round 1 looks at every state; later rounds at the predecessors of the states that
            // changed block in the round before.
            cands.clear();
            if level == 1 {
                cands.extend(0..n as u32);
            } else {
                for &y in &changed {
                    for &x in &pred[pred_off[y as usize] as usize..pred_off[y as usize + 1] as usize] {
                        if mark[x as usize] != level {
                            mark[x as usize] = level;
                            cands.push(x);
                        }
                    }
                }
            }
            if cands.is_empty() {
                stable = true;
                break;
            }
            // Each candidate's signature (its successors' blocks) as a hash, grouped by block
            // and hash; a group's members are then checked against its first (equal hashes of
            // unequal signatures are split apart by a full comparison).
            keyed.clear();
            for &x in &cands {
                let mut h: u64 = 0x9E37_79B9_7F4A_7C15;
                for &(c, t) in live_of(x) {
                    h = (h.rotate_left(5) ^ ((c as u64) << 32 | cur[t as usize] as u64))
                        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
                }
                keyed.push((cur[x as usize], h, x));
            }
            keyed.sort_unstable();
            let sig_eq = |x: u32, y: u32| {
                let (a, b) = (live_of(x), live_of(y));
                a.len() == b.len()
                    && a.iter().zip(b).all(|(&(c, s), &(d, t))| c == d && cur[s as usize] == cur[t as usize])
            };
            moves.clear();
            let mut i = 0;
            while i < keyed.len() {
                let block = keyed[i].0;
                let mut j = i;
                while j < keyed.len() && keyed[j].0 == block {
                    j += 1;
                }
                // The block's candidates by signature: runs of one hash, each checked.
                groups.clear();
                let mut g = i;
                while g < j {
                    let mut h = g + 1;
                    while h < j && keyed[h].1 == keyed[g].1 {
                        h += 1;
                    }
                    if keyed[g + 1..h].iter().all(|e| sig_eq(e.2, keyed[g].2)) {
                        groups.push((g, h));
                    } else {
                        // A collision: the run by full signature.
                        let sig = |x: u32| -> Vec<(u32, u32)> {
                            live_of(x).iter().map(|&(c, t)| (c, cur[t as usize])).collect()
                        };
                        keyed[g..h].sort_by_cached_key(|e| (sig(e.2), e.2));
                        let mut a = g;
                        while a < h {
                            let mut b = a + 1;
                            while b < h && sig_eq(keyed[b].2, keyed[a].2) {
                                b += 1;
                            }
                            groups.push((a, b));
                            a = b;
                        }
                    }
                    g = h;
                }
                // From round 2 on, a candidate has a successor with a fresh id, which no
                // non-candidate has: every group leaves the non-candidates. If the block has
                // none (or in round 1), its largest group keeps the block's id.
                let keep = if level == 1 || (j - i) as u32 == size[block as usize] {
                    groups.iter().enumerate().max_by_key(|(gi, &(a, b))| (b - a, usize::MAX - gi)).map(|(gi, _)| gi)
                } else {
                    None
                };
                for (gi, &(a, b)) in groups.iter().enumerate() {
                    if Some(gi) == keep {
                        continue;
                    }
                    let id = next_id;
                    next_id += 1;
                    for e in &keyed[a..b] {
                        moves.push((e.2, id));
                    }
                }
                i = j;
            }
            if moves.is_empty() && level > 1 {
                stable = true;
                break;
            }
            levels = level;
            if moves.is_empty() {
                changed.clear();
                continue;
            }
            rounds += 1;
            size.resize(next_id as usize, 0);
            changed.clear();
            for &(x, id) in &moves {
                size[cur[x as usize] as usize] -= 1;
                size[id as usize] += 1;
                cur[x as usize] = id;
                log.push((x, level, id));
                changed.push(x);
            }
        }
        if max_depth == 0 {
            stable = false;
        }

        let (hist_off, hist) = histories(n, &log);

        let inh_dist = inhibitor_distance(lex, &pred_off, &pred);
        Horizon { hist_off, hist, levels, stable, inh_dist, rounds }
    }

    /// `x`'s block at level `d ≤ self.levels`.
    fn block(&self, x: u32, d: u32) -> u32 {
        let h = &self.hist[self.hist_off[x as usize] as usize..self.hist_off[x as usize + 1] as usize];
        h.iter().rev().find(|e| e.0 <= d).map_or(DEAD_BLOCK, |e| e.1)
    }

    /// `x`'s block of `≡_d`, if known (`None`: `d` is past the levels computed).
    pub fn block_at(&self, x: u32, d: u32) -> Option<u32> {
        if x == DEAD || (d > self.levels && !self.stable) {
            return None;
        }
        Some(self.block(x, d.min(self.levels)))
    }

    /// `x ≡_d y`: no byte string of length at most `d` tells the two apart.
    pub fn equivalent(&self, x: u32, y: u32, d: u32) -> bool {
        if x == y {
            return true;
        }
        if x == DEAD || y == DEAD {
            return false;
        }
        if d > self.levels && !self.stable {
            return false;
        }
        let d = d.min(self.levels);
        self.block(x, d) == self.block(y, d)
    }

    /// The largest `d ≤ max` with `x ≡_d y` and no inhibitor created within `d` bytes of `x`
    /// (what [`Walker::equivalent_branches`](super::terminal_dwa) needs of a subtree of height
    /// `d`); `None` when there is none.
    pub fn agreement(&self, x: u32, y: u32, max: u32) -> Option<u32> {
        let free = self.inh_dist.get(x as usize)?.checked_sub(1)?;
        let max = max.min(free);
        if !self.equivalent(x, y, 0) {
            return None;
        }
        // `≡_d` only refines as `d` grows: the last level at which the two agree, by bisection.
        let (mut lo, mut hi) = (0, max);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if self.equivalent(x, y, mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        Some(lo)
    }

    /// No byte string of length at most `d` leads `x` to a state where accepting a lexeme
    /// creates an inhibitor.
    pub fn inhibitor_free(&self, x: u32, d: u32) -> bool {
        self.inh_dist.get(x as usize).is_some_and(|&e| e > d)
    }

    /// Levels computed, and whether the refinement was stable past them.
    pub fn levels(&self) -> (u32, bool) {
        (self.levels, self.stable)
    }
}

/// The one terminal the lexeme pending at `x` can become (what it accepts and what it can still
/// reach, `Next⁺`, hold that terminal and no other), unless it is ignored; `None` at the start.
pub fn sole_terminal(lex: &LexerTables, x: u32) -> Option<u32> {
    if x == lex.start || x == DEAD {
        return None;
    }
    let mut sole = None;
    let mut one = |t: u32| match sole {
        None => {
            sole = Some(t);
            true
        }
        Some(s) => s == t,
    };
    for &t in lex.accepts(x) {
        if !one(t) {
            return None;
        }
    }
    for (w, &word) in lex.next_plus(x).iter().enumerate() {
        let mut word = word;
        while word != 0 {
            if !one(w as u32 * 64 + word.trailing_zeros()) {
                return None;
            }
            word &= word - 1;
        }
    }
    sole.filter(|&t| !lex.is_ignored(t))
}

/// Each state's live transitions (class, target), CSR: a signature is read off them (the
/// classes that are dead are those missing), at a few per state inside most terminals instead
/// of one per byte class.
fn live_transitions(lex: &LexerTables) -> (Vec<u32>, Vec<(u32, u32)>) {
    let n = lex.num_states as usize;
    let k = lex.num_classes as usize;
    let succ = |x: usize, c: usize| lex.trans.get(x * k + c);
    let mut live_off = vec![0u32; n + 1];
    let mut live: Vec<(u32, u32)> = Vec::new();
    for x in 0..n {
        live.extend((0..k).filter_map(|c| Some((c as u32, succ(x, c))).filter(|&(_, t)| t != DEAD)));
        live_off[x + 1] = live.len() as u32;
    }
    (live_off, live)
}

/// Distinct predecessors of each state, CSR.
fn predecessors(n: usize, k: usize, live_off: &[u32], live: &[(u32, u32)]) -> (Vec<u32>, Vec<u32>) {
    let live_of = |x: u32| &live[live_off[x as usize] as usize..live_off[x as usize + 1] as usize];
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    let mut row: Vec<u32> = Vec::with_capacity(k);
    for x in 0..n {
        row.clear();
        row.extend(live_of(x as u32).iter().map(|&(_, t)| t));
        row.sort_unstable();
        row.dedup();
        pairs.extend(row.iter().map(|&t| (t, x as u32)));
    }
    pairs.sort_unstable();
    let mut pred_off = vec![0u32; n + 1];
    for &(t, _) in &pairs {
        pred_off[t as usize + 1] += 1;
    }
    for i in 0..n {
        pred_off[i + 1] += pred_off[i];
    }
    let pred: Vec<u32> = pairs.iter().map(|&(_, x)| x).collect();
    (pred_off, pred)
}

/// Histories, per state in level order (the log is in level order): `hist[hist_off[x]..]` are
/// state `x`'s (level, block) entries.
fn histories(n: usize, log: &[(u32, u32, u32)]) -> (Vec<u32>, Vec<(u32, u32)>) {
    let mut hist_off = vec![0u32; n + 1];
    for &(x, _, _) in log {
        hist_off[x as usize + 1] += 1;
    }
    for i in 0..n {
        hist_off[i + 1] += hist_off[i];
    }
    let mut fill = hist_off.clone();
    let mut hist = vec![(0u32, 0u32); log.len()];
    for &(x, level, id) in log {
        hist[fill[x as usize] as usize] = (level, id);
        fill[x as usize] += 1;
    }
    (hist_off, hist)
}

/// Each state's distance to an inhibitor-creating state, by a backward search over the
/// predecessors (`u32::MAX`: none reachable).
fn inhibitor_distance(lex: &LexerTables, pred_off: &[u32], pred: &[u32]) -> Vec<u32> {
    let n = lex.num_states as usize;
    let mut inh_dist = vec![u32::MAX; n];
    let mut queue: std::collections::VecDeque<u32> = Default::default();
    for (x, d) in inh_dist.iter_mut().enumerate() {
        let creates = lex.accepts(x as u32).iter().any(|&t| lex.inhibitor_for(t, x as u32).is_some());
        if creates {
            *d = 0;
            queue.push_back(x as u32);
        }
    }
    while let Some(y) = queue.pop_front() {
        let d = inh_dist[y as usize] + 1;
        for &x in &pred[pred_off[y as usize] as usize..pred_off[y as usize + 1] as usize] {
            if inh_dist[x as usize] == u32::MAX {
                inh_dist[x as usize] = d;
                queue.push_back(x);
            }
        }
    }
    inh_dist
}
