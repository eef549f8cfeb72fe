//! Interned sets of small integers (terminals, token classes): sorted, deduplicated vectors
//! with ids, and memoized unions. Id 0 is the empty set.

use super::FastMap;

/// A pool of interned sets: each distinct set once, by id, with memoized unions and
/// intersections of ids.
#[derive(Clone, Default)]
pub struct SetPool {
    sets: Vec<Box<[u32]>>,
    index: FastMap<Box<[u32]>, u32>,
    unions: FastMap<(u32, u32), u32>,
    intersections: FastMap<(u32, u32), u32>,
}

impl SetPool {
    /// A pool holding only the empty set, as id 0.
    pub fn new() -> SetPool {
        let mut p = SetPool::default();
        p.intern(Vec::new());
        p
    }

    /// The id of the set of `v` (sorted and deduplicated here).
    pub fn intern(&mut self, mut v: Vec<u32>) -> u32 {
        v.sort_unstable();
        v.dedup();
        self.intern_sorted(v.into_boxed_slice())
    }

    fn intern_sorted(&mut self, v: Box<[u32]>) -> u32 {
        if let Some(&id) = self.index.get(&v) {
            return id;
        }
        let id = self.sets.len() as u32;
        self.sets.push(v.clone());
        self.index.insert(v, id);
        id
    }

    /// The elements of set `id`, sorted.
    pub fn get(&self, id: u32) -> &[u32] {
        &self.sets[id as usize]
    }

    /// The id of the union of sets `a` and `b` (memoized).
    pub fn union(&mut self, a: u32, b: u32) -> u32 {
        if a == b || b == 0 {
            return a;
        }
        if a == 0 {
            return b;
        }
        let key = (a.min(b), a.max(b));
        if let Some(&u) = self.unions.get(&key) {
            return u;
        }
        let (x, y) = (self.get(a), self.get(b));
        let mut out = Vec::with_capacity(x.len() + y.len());
        let (mut i, mut j) = (0, 0);
        while i < x.len() || j < y.len() {
            let take_x = j == y.len() || (i < x.len() && x[i] <= y[j]);
            let v = if take_x { x[i] } else { y[j] };
            if take_x {
                i += 1;
                if j < y.len() && y[j] == v {
                    j += 1;
                }
            } else {
                j += 1;
            }
            out.push(v);
        }
        let u = self.intern_sorted(out.into_boxed_slice());
        self.unions.insert(key, u);
        u
    }

    /// The union of many sets, interning only the result.
    pub fn union_many(&mut self, parts: &[u32]) -> u32 {
        match parts {
            [] => 0,
            [a] => *a,
            [a, b] => self.union(*a, *b),
            _ => {
                let mut v: Vec<u32> = parts.iter().flat_map(|&p| self.get(p).iter().copied()).collect();
                v.sort_unstable();
                v.dedup();
                self.intern_sorted(v.into_boxed_slice())
            }
        }
    }

    /// The id of the intersection of sets `a` and `b` (memoized).
    pub fn intersect(&mut self, a: u32, b: u32) -> u32 {
        if a == b {
            return a;
        }
        if a == 0 || b == 0 {
            return 0;
        }
        let key = (a.min(b), a.max(b));
        if let Some(&u) = self.intersections.get(&key) {
            return u;
        }
        let (x, y) = (self.get(a), self.get(b));
        let out = intersect_sorted(x, y);
        // (A set equal to one of the two is that one: no need to hash it to find its id.)
        let u = if out.len() == x.len() {
            a
        } else if out.len() == y.len() {
            b
        } else {
            self.intern_sorted(out.into_boxed_slice())
        };
        self.intersections.insert(key, u);
        u
    }

    /// The number of sets interned (the next set's id).
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    /// The sets from id `from` on, in id order (to mirror this pool in another with
    /// [`SetPool::extend_from`]).
    pub fn since(&self, from: usize) -> Vec<Box<[u32]>> {
        self.sets[from..].to_vec()
    }

    /// Append sets taken with [`SetPool::since`] from a pool this one mirrors: they get the ids
    /// they have there (checked: both pools must have interned the same sets before).
    pub fn extend_from(&mut self, sets: Vec<Box<[u32]>>) {
        for v in sets {
            let want = self.sets.len() as u32;
            let id = self.intern_sorted(v);
            assert_eq!(id, want, "set pools out of step");
        }
    }

    /// Whether the pool holds no sets, not even the empty set (a `SetPool::default()`).
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }
}

/// A list this many times shorter than the other is intersected with it by search, not merge.
const GALLOP_RATIO: usize = 16;

/// The common elements of two sorted lists, sorted: a merge, or, when one is much shorter, a
/// search for each of its elements in the rest of the longer one (exponential, then binary),
/// `O(short · log(long / short))`. A token class set of thousands meets the few classes below
/// one trie node in every read of a DWA state.
pub fn intersect_sorted(x: &[u32], y: &[u32]) -> Vec<u32> {
    let (short, long) = if x.len() <= y.len() { (x, y) } else { (y, x) };
    if short.len() * GALLOP_RATIO < long.len() {
        let mut out = Vec::with_capacity(short.len());
        let mut rest = long;
        for &v in short {
            let mut hi = 1;
            while hi < rest.len() && rest[hi - 1] < v {
                hi *= 2;
            }
            match rest[..hi.min(rest.len())].binary_search(&v) {
                Ok(i) => {
                    out.push(v);
                    rest = &rest[i + 1..];
                }
                Err(i) => rest = &rest[i..],
            }
            if rest.is_empty() {
                break;
            }
        }
        return out;
    }
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < x.len() && j < y.len() {
        match x[i].cmp(&y[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(x[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_is_set_union() {
        let mut p = SetPool::new();
        let a = p.intern(vec![5, 1, 3, 3]);
        let b = p.intern(vec![2, 3, 9]);
        let u = p.union(a, b);
        assert_eq!(p.get(u), &[1, 2, 3, 5, 9]);
        assert_eq!(p.union(b, a), u);
        assert_eq!(p.union(a, 0), a);
        assert_eq!(p.intern(vec![1, 3, 5]), a);
        assert_eq!(p.get(0), &[] as &[u32]);
        let c = p.intern(vec![7]);
        let m = p.union_many(&[a, b, c, 0]);
        assert_eq!(p.get(m), &[1, 2, 3, 5, 7, 9]);
        let i = p.intersect(a, b);
        assert_eq!(p.get(i), &[3]);
        assert_eq!(p.intersect(a, 0), 0);
    }

    #[test]
    fn intersection_by_search_equals_merge() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % n) as u32
        };
        for round in 0..400 {
            let long_len = 1 + next(3000) as usize;
            let short_len = if round % 2 == 0 { next(40) as usize } else { next(3000) as usize };
            let range = 1 + next(20_000) as u64;
            let mut x: Vec<u32> = (0..long_len).map(|_| next(range)).collect();
            let mut y: Vec<u32> = (0..short_len).map(|_| next(range)).collect();
            for v in [&mut x, &mut y] {
                v.sort_unstable();
                v.dedup();
            }
            let want: Vec<u32> = x.iter().copied().filter(|v| y.binary_search(v).is_ok()).collect();
            assert_eq!(intersect_sorted(&x, &y), want);
            assert_eq!(intersect_sorted(&y, &x), want);
            let mut p = SetPool::new();
            let (a, b) = (p.intern(x.clone()), p.intern(y.clone()));
            let i = p.intersect(a, b);
            assert_eq!(p.get(i), &want[..]);
            assert_eq!(p.intern(want.clone()), i);
        }
    }

    #[test]
    fn mirror_keeps_ids() {
        let mut p = SetPool::new();
        let mut m = SetPool::new();
        let a = p.intern(vec![4, 2]);
        m.extend_from(p.since(m.len()));
        let c = p.intern(vec![7]);
        let b = p.union(a, c);
        m.extend_from(p.since(m.len()));
        assert_eq!(m.len(), p.len());
        assert_eq!(m.get(a), &[2, 4]);
        assert_eq!(m.get(b), &[2, 4, 7]);
        assert_eq!(m.intern(vec![7]), c);
    }
}
