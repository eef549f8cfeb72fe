//! The structural generator: the exponent-free regex of the numbers in an interval that are
//! multiples of a step, built digit position by digit position within a work budget.

use super::{
    alt, cat, class, empty, eps, rep, signed, text, Decimal, HashMap, Ordering, Prepared, Re, Step, WORK_LIMIT,
};

pub(super) struct TooBig;

pub(super) fn structural(pr: &Prepared) -> Result<Re, TooBig> {
    let aut = match &pr.step {
        None => Aut::none(),
        Some(st) => Aut::new(st).ok_or(TooBig)?,
    };
    let zero = Decimal::zero();
    let pos = if pr.hi.as_ref().is_some_and(|(h, _)| h.is_negative()) {
        empty()
    } else {
        let (lo, li) = match &pr.lo {
            Some((l, i)) if !l.is_negative() => (l.clone(), *i),
            _ => (zero.clone(), true),
        };
        let hi = pr.hi.as_ref().map(|(h, i)| (h, *i));
        Gen::new(&lo, li, hi, &aut, pr.frac).side()?
    };
    let neg = if pr.lo.as_ref().is_some_and(|(l, _)| l.is_positive()) {
        empty()
    } else {
        let hi_m = pr.lo.as_ref().map(|(l, i)| (l.negated(), *i));
        let (lo_m, li) = match &pr.hi {
            Some((h, i)) if !h.is_positive() => (h.negated(), *i),
            _ => (zero.clone(), true),
        };
        Gen::new(&lo_m, li, hi_m.as_ref().map(|(h, i)| (h, *i)), &aut, pr.frac).side()?
    };
    let re = signed(pos, neg);
    if !re.fits() {
        return Err(TooBig);
    }
    Ok(re)
}

/// The step as a digit automaton over positions: state `(r, k)` = (digit string mod b,
/// window contribution mod c).
pub(super) struct Aut {
    pub(super) has: bool,
    pub(super) b: u64,
    pub(super) c: u64,
    pub(super) e: i64,
    pub(super) t: i64,
    pub(super) pow: Vec<u64>,
}

pub(super) type St = (u64, u64);

impl Aut {
    pub(super) fn none() -> Aut {
        Aut { has: false, b: 1, c: 1, e: i64::MIN / 4, t: 0, pow: Vec::new() }
    }

    pub(super) fn new(st: &Step) -> Option<Aut> {
        let (b, c) = (st.b?, st.c?);
        let mut pow = Vec::new();
        let mut x: u128 = 1 % c as u128;
        for _ in 0..st.t {
            pow.push(x as u64);
            x = x * 10 % c as u128;
        }
        Some(Aut { has: true, b, c, e: st.e, t: st.t, pow })
    }

    pub(super) fn step(&self, p: i64, s: St, d: u8) -> Option<St> {
        if !self.has {
            return Some(s);
        }
        if p < self.e {
            return (d == 0).then_some(s);
        }
        let r = ((s.0 as u128 * 10 + d as u128) % self.b as u128) as u64;
        let k = if p < self.e + self.t {
            ((s.1 as u128 + d as u128 * self.pow[(p - self.e) as usize] as u128) % self.c as u128) as u64
        } else {
            s.1
        };
        Some((r, k))
    }

    pub(super) fn accept(&self, s: St) -> bool {
        s == (0, 0)
    }

    /// Lowest integer position above which only `mod b` matters.
    pub(super) fn top(&self) -> i64 {
        if self.has {
            (self.e + self.t).max(0)
        } else {
            0
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) enum T {
    Free,
    Tight,
}

pub(super) const ALL: u16 = 0x3FF;
pub(super) const LEAD: u16 = 0x3FE;
pub(super) const ZERO: u16 = 1;

pub(super) type Key = (i64, T, T, St, bool);
pub(super) type Upper = Vec<((T, T, St), Re)>;

pub(super) fn int_len(x: &Decimal) -> i64 {
    match x.leading_position() {
        Some(l) if l >= 0 => l + 1,
        _ => 1,
    }
}

/// Digits of `range` grouped by the state they lead to.
pub(super) fn groups<K: PartialEq + Copy>(
    range: std::ops::RangeInclusive<u8>,
    f: impl Fn(u8) -> Option<K>,
) -> Vec<(u16, K)> {
    let mut g: Vec<(u16, K)> = Vec::new();
    for d in range {
        if let Some(k) = f(d) {
            if let Some(e) = g.iter_mut().find(|e| e.1 == k) {
                e.0 |= 1 << d;
            } else {
                g.push((1 << d, k));
            }
        }
    }
    g
}

/// Lexemes `(0|[1-9][0-9]*)(\.[0-9]+)?` whose value lies in `[lo, hi]` (inclusive flags) and is
/// accepted by the step automaton.
pub(super) struct Gen<'a> {
    pub(super) lo: &'a Decimal,
    pub(super) lo_incl: bool,
    pub(super) lo_free: bool,
    pub(super) hi: Option<(&'a Decimal, bool)>,
    pub(super) aut: &'a Aut,
    pub(super) frac: bool,
    pub(super) work: usize,
    pub(super) m_int: HashMap<Key, Re>,
    pub(super) m_free: HashMap<(i64, St), Re>,
    pub(super) m_frac: HashMap<Key, Re>,
    pub(super) m_ffrac: HashMap<(i64, St, bool), Re>,
    pub(super) m_exact: HashMap<(i64, u64, u64), Re>,
    pub(super) m_upto: HashMap<(i64, u64, u64), Re>,
    pub(super) m_upper: HashMap<Key, Upper>,
}

impl<'a> Gen<'a> {
    pub(super) fn new(
        lo: &'a Decimal,
        lo_incl: bool,
        hi: Option<(&'a Decimal, bool)>,
        aut: &'a Aut,
        frac: bool,
    ) -> Gen<'a> {
        Gen {
            lo,
            lo_incl,
            lo_free: lo.is_zero() && lo_incl,
            hi,
            aut,
            frac,
            work: 0,
            m_int: HashMap::new(),
            m_free: HashMap::new(),
            m_frac: HashMap::new(),
            m_ffrac: HashMap::new(),
            m_exact: HashMap::new(),
            m_upto: HashMap::new(),
            m_upper: HashMap::new(),
        }
    }

    pub(super) fn tick(&mut self) -> Result<(), TooBig> {
        self.work += 1;
        if self.work > WORK_LIMIT {
            Err(TooBig)
        } else {
            Ok(())
        }
    }

    pub(super) fn chk(&self, r: Re) -> Result<Re, TooBig> {
        if r.fits() {
            Ok(r)
        } else {
            Err(TooBig)
        }
    }

    pub(super) fn trans(&self, p: i64, lo: T, hi: T, s: St, d: u8) -> Option<(T, T, St)> {
        let lo2 = match lo {
            T::Free => T::Free,
            T::Tight => match d.cmp(&self.lo.digit(p)) {
                Ordering::Less => return None,
                Ordering::Equal => T::Tight,
                Ordering::Greater => T::Free,
            },
        };
        let hi2 = match hi {
            T::Free => T::Free,
            T::Tight => match d.cmp(&self.hi.unwrap().0.digit(p)) {
                Ordering::Greater => return None,
                Ordering::Equal => T::Tight,
                Ordering::Less => T::Free,
            },
        };
        Some((lo2, hi2, self.aut.step(p, s, d)?))
    }

    /// Whether the lexeme may end when the next unread position is `next`.
    pub(super) fn end_ok(&self, lo: T, hi: T, s: St, next: i64) -> bool {
        if !self.aut.accept(s) {
            return false;
        }
        if lo == T::Tight && ((!self.lo.is_zero() && self.lo.exp <= next) || !self.lo_incl) {
            return false;
        }
        if hi == T::Tight {
            let (h, incl) = self.hi.unwrap();
            let exhausted = h.is_zero() || h.exp > next;
            if exhausted && !incl {
                return false;
            }
        }
        true
    }

    pub(super) fn side(&mut self) -> Result<Re, TooBig> {
        if let Some((h, hincl)) = self.hi {
            match self.lo.cmp(h) {
                Ordering::Greater => return Ok(empty()),
                Ordering::Equal if !(self.lo_incl && hincl) => return Ok(empty()),
                _ => {}
            }
        }
        let n_lo = int_len(self.lo);
        let n_hi = self.hi.map(|(h, _)| int_len(h));
        let mut alts = vec![self.gen_len(n_lo)?];
        if n_hi != Some(n_lo) {
            let n1 = n_lo + 1;
            let n2 = n_hi.map(|x| x - 1);
            if n2.is_none_or(|n2| n1 <= n2) {
                alts.push(self.middle(n1, n2)?);
            }
            if let Some(nh) = n_hi {
                alts.push(self.gen_len(nh)?);
            }
        }
        self.chk(alt(alts))
    }

    /// Lexemes with an integer part of exactly `n` digits.
    pub(super) fn gen_len(&mut self, n: i64) -> Result<Re, TooBig> {
        let lo = if n == int_len(self.lo) && !self.lo_free { T::Tight } else { T::Free };
        let hi = if self.hi.map(|(h, _)| int_len(h)) == Some(n) { T::Tight } else { T::Free };
        let u = self.aut.top();
        if n - 1 < u {
            return self.gen_int(n - 1, lo, hi, (0, 0), n >= 2);
        }
        // Digits above the window first, grouped by the state they end in, so that the part
        // below (window, fraction) appears once per state rather than once per bound digit.
        let mut alts = Vec::new();
        for ((lo2, hi2, s2), up) in self.upper(n - 1, lo, hi, (0, 0), n >= 2)? {
            let low = if u == 0 { self.after_int(lo2, hi2, s2)? } else { self.gen_int(u - 1, lo2, hi2, s2, false)? };
            alts.push(cat([up, low]));
        }
        self.chk(alt(alts))
    }

    /// Integer digits at positions `p..=top`: the regex of the digits leading to each state.
    pub(super) fn upper(&mut self, p: i64, lo: T, hi: T, s: St, leading: bool) -> Result<Upper, TooBig> {
        let u = self.aut.top();
        if lo == T::Free && hi == T::Free && !leading {
            let h = p - u + 1;
            if self.aut.b == 1 {
                return Ok(vec![((lo, hi, s), rep(class(ALL), h as u32, Some(h as u32)))]);
            }
            let mut out = Vec::new();
            for r2 in 0..self.aut.b {
                let ex = self.exact(h, s.0, r2)?;
                if !ex.is_empty() {
                    out.push(((lo, hi, (r2, s.1)), ex));
                }
            }
            return Ok(out);
        }
        let key = (p, lo, hi, s, leading);
        if let Some(r) = self.m_upper.get(&key) {
            return Ok(r.clone());
        }
        self.tick()?;
        if let Some(r) = self.upper_run(p, lo, hi, s, leading)? {
            self.m_upper.insert(key, r.clone());
            return Ok(r);
        }
        let first = if leading { 1 } else { 0 };
        let mut out: Upper = Vec::new();
        let mut add = |st: (T, T, St), r: Re| match out.iter_mut().find(|x| x.0 == st) {
            Some(x) => x.1 = alt([x.1.clone(), r]),
            None => out.push((st, r)),
        };
        for (m, st2) in groups(first..=9, |d| self.trans(p, lo, hi, s, d)) {
            if p == u {
                add(st2, class(m));
            } else {
                for (st3, r) in self.upper(p - 1, st2.0, st2.1, st2.2, false)? {
                    add(st3, cat([class(m), r]));
                }
            }
        }
        for x in &out {
            if !x.1.fits() {
                return Err(TooBig);
            }
        }
        self.m_upper.insert(key, out.clone());
        Ok(out)
    }

    /// Integer parts of `n1..=n2` digits, both bounds already decided.
    pub(super) fn middle(&mut self, n1: i64, n2: Option<i64>) -> Result<Re, TooBig> {
        let u = self.aut.top();
        let mut alts = Vec::new();
        let small_end = n2.map_or(u, |n2| n2.min(u));
        for n in n1..=small_end {
            self.tick()?;
            alts.push(self.gen_len(n)?);
        }
        let m1 = n1.max(u + 1);
        if n2.is_none_or(|n2| m1 <= n2) {
            if self.aut.b == 1 {
                let low = self.free_int(u - 1, (0, 0))?;
                let reps = rep(class(ALL), (m1 - 1 - u) as u32, n2.map(|n2| (n2 - 1 - u) as u32));
                alts.push(cat([class(LEAD), reps, low]));
            } else if let Some(n2) = n2 {
                if n2 - m1 > 64 {
                    return Err(TooBig);
                }
                for n in m1..=n2 {
                    alts.push(self.gen_len(n)?);
                }
            } else {
                alts.push(self.tail_gnfa(m1)?);
            }
        }
        self.chk(alt(alts))
    }

    /// Integer parts of at least `n_min` digits (`n_min > top`), `mod b` tracked by an automaton.
    pub(super) fn tail_gnfa(&mut self, n_min: i64) -> Result<Re, TooBig> {
        let b = self.aut.b as usize;
        let u = self.aut.top();
        let m0 = n_min - u;
        let fin = b + 1;
        let mut edges: HashMap<(usize, usize), Re> = HashMap::new();
        let lead = groups(1..=9, |d| Some(d as u64 % self.aut.b));
        for r in 0..b {
            let mut alts = Vec::new();
            for &(m, r1) in &lead {
                let ex = self.exact(m0 - 1, r1, r as u64)?;
                alts.push(cat([class(m), ex]));
            }
            let a = alt(alts);
            if !a.is_empty() {
                edges.insert((0, r + 1), a);
            }
            for (m, r2) in groups(0..=9, |d| Some(((r as u64) * 10 + d as u64) % self.aut.b)) {
                edges.insert((r + 1, r2 as usize + 1), class(m));
            }
            let low = self.free_int(u - 1, (r as u64, 0))?;
            if !low.is_empty() {
                edges.insert((r + 1, fin), low);
            }
        }
        eliminate(edges, 0, fin, b + 2)
    }

    /// `len` digits taking residue `from` to `to` (mod b).
    pub(super) fn exact(&mut self, len: i64, from: u64, to: u64) -> Result<Re, TooBig> {
        if len == 0 {
            return Ok(if from == to { eps() } else { empty() });
        }
        if let Some(r) = self.m_exact.get(&(len, from, to)) {
            return Ok(r.clone());
        }
        self.tick()?;
        let b = self.aut.b;
        let r = if len == 1 {
            class((0..10u64).filter(|d| (from * 10 + d) % b == to).fold(0u16, |m, d| m | 1 << d))
        } else {
            let h1 = len / 2;
            let mut alts = Vec::new();
            for mid in 0..b {
                self.tick()?;
                let a = self.exact(h1, from, mid)?;
                if a.is_empty() {
                    continue;
                }
                let c = self.exact(len - h1, mid, to)?;
                alts.push(cat([a, c]));
            }
            alt(alts)
        };
        let r = self.chk(r)?;
        self.m_exact.insert((len, from, to), r.clone());
        Ok(r)
    }

    /// One bound tight on a run of `m ≥ 4` equal digits `d` (`> 10^308`, `< 0.999…`): the digits
    /// leaving the run above (below) `d` as one divide-and-conquer regex of size `O(m log m)`.
    pub(super) fn upper_run(&mut self, p: i64, lo: T, hi: T, s: St, leading: bool) -> Result<Option<Upper>, TooBig> {
        let u = self.aut.top();
        let (greater, bound) = match (lo, hi) {
            (T::Tight, T::Free) => (true, self.lo),
            (T::Free, T::Tight) => (false, self.hi.unwrap().0),
            _ => return Ok(None),
        };
        if leading || self.aut.b != 1 {
            return Ok(None);
        }
        let d = bound.digit(p);
        let mut m = 0;
        while p - m >= u && bound.digit(p - m) == d {
            m += 1;
        }
        if m < 4 {
            return Ok(None);
        }
        let mut out: Upper = Vec::new();
        let leave = run_cmp(d, m, greater);
        if !leave.is_empty() {
            let rest = (p - m + 1 - u) as u32;
            out.push(((T::Free, T::Free, s), cat([leave, rep(class(ALL), rest, Some(rest))])));
        }
        let stay = rep(class(1 << d), m as u32, Some(m as u32));
        if p - m < u {
            out.push(((lo, hi, s), stay));
        } else {
            for (st, r) in self.upper(p - m, lo, hi, s, false)? {
                match out.iter_mut().find(|x| x.0 == st) {
                    Some(x) => x.1 = alt([x.1.clone(), cat([stay.clone(), r])]),
                    None => out.push((st, cat([stay.clone(), r]))),
                }
            }
        }
        Ok(Some(out))
    }

    /// At most `len` digits taking residue `from` to `to` (mod b).
    pub(super) fn upto(&mut self, len: i64, from: u64, to: u64) -> Result<Re, TooBig> {
        if len <= 1 {
            let one = if len == 1 { self.exact(1, from, to)? } else { empty() };
            return Ok(alt([if from == to { eps() } else { empty() }, one]));
        }
        if let Some(r) = self.m_upto.get(&(len, from, to)) {
            return Ok(r.clone());
        }
        self.tick()?;
        let h1 = (len + 1) / 2;
        let mut alts = Vec::new();
        for mid in 0..self.aut.b {
            self.tick()?;
            let a = self.upto(h1, from, mid)?;
            if a.is_empty() {
                continue;
            }
            let c = self.upto(len - h1, mid, to)?;
            alts.push(cat([a, c]));
        }
        let r = self.chk(alt(alts))?;
        self.m_upto.insert((len, from, to), r.clone());
        Ok(r)
    }

    /// Positions `p..=0` (both bounds decided), then the fraction.
    pub(super) fn free_int(&mut self, p: i64, s: St) -> Result<Re, TooBig> {
        if p < 0 {
            return self.after_int(T::Free, T::Free, s);
        }
        if let Some(r) = self.m_free.get(&(p, s)) {
            return Ok(r.clone());
        }
        self.tick()?;
        let u = self.aut.top();
        let r = if p >= u {
            let h = p - u + 1;
            if self.aut.b == 1 {
                let low = self.free_int(u - 1, s)?;
                cat([rep(class(ALL), h as u32, Some(h as u32)), low])
            } else {
                let mut alts = Vec::new();
                for r2 in 0..self.aut.b {
                    let ex = self.exact(h, s.0, r2)?;
                    if ex.is_empty() {
                        continue;
                    }
                    let low = self.free_int(u - 1, (r2, s.1))?;
                    alts.push(cat([ex, low]));
                }
                alt(alts)
            }
        } else if self.aut.has && p < self.aut.e {
            let low = self.after_int(T::Free, T::Free, s)?;
            cat([rep(class(ZERO), (p + 1) as u32, Some((p + 1) as u32)), low])
        } else {
            let mut alts = Vec::new();
            for (m, s2) in groups(0..=9, |d| self.aut.step(p, s, d)) {
                alts.push(cat([class(m), self.free_int(p - 1, s2)?]));
            }
            alt(alts)
        };
        let r = self.chk(r)?;
        self.m_free.insert((p, s), r.clone());
        Ok(r)
    }

    /// Integer positions `p..=0` with bound tracking.
    pub(super) fn gen_int(&mut self, p: i64, lo: T, hi: T, s: St, leading: bool) -> Result<Re, TooBig> {
        if lo == T::Free && hi == T::Free && !leading {
            return self.free_int(p, s);
        }
        let key = (p, lo, hi, s, leading);
        if let Some(r) = self.m_int.get(&key) {
            return Ok(r.clone());
        }
        self.tick()?;
        let first = if leading { 1 } else { 0 };
        let mut alts = Vec::new();
        for (m, (lo2, hi2, s2)) in groups(first..=9, |d| self.trans(p, lo, hi, s, d)) {
            let next = if p == 0 { self.after_int(lo2, hi2, s2)? } else { self.gen_int(p - 1, lo2, hi2, s2, false)? };
            alts.push(cat([class(m), next]));
        }
        let r = self.chk(alt(alts))?;
        self.m_int.insert(key, r.clone());
        Ok(r)
    }

    /// After the integer part: the end, or a fraction.
    pub(super) fn after_int(&mut self, lo: T, hi: T, s: St) -> Result<Re, TooBig> {
        let mut alts = Vec::new();
        if self.end_ok(lo, hi, s, -1) {
            alts.push(eps());
        }
        if self.frac {
            let f = self.gen_frac(-1, lo, hi, s, true)?;
            alts.push(cat([text("\\."), f]));
        }
        Ok(alt(alts))
    }

    /// Fraction digits from position `p` (`first`: at least one digit must follow).
    pub(super) fn gen_frac(&mut self, p: i64, lo: T, hi: T, s: St, first: bool) -> Result<Re, TooBig> {
        if lo == T::Free && hi == T::Free {
            return self.free_frac(p, s, first);
        }
        let key = (p, lo, hi, s, first);
        if let Some(r) = self.m_frac.get(&key) {
            return Ok(r.clone());
        }
        self.tick()?;
        let mut rel = i64::MAX;
        if lo == T::Tight && !self.lo.is_zero() {
            rel = rel.min(self.lo.exp);
        }
        if hi == T::Tight {
            let h = self.hi.unwrap().0;
            if !h.is_zero() {
                rel = rel.min(h.exp);
            }
        }
        if self.aut.has {
            rel = rel.min(self.aut.e);
        }
        let r = if p < rel {
            self.tail(lo, hi, s, first)
        } else {
            let mut alts = Vec::new();
            for (m, (lo2, hi2, s2)) in groups(0..=9, |d| self.trans(p, lo, hi, s, d)) {
                let mut cont = Vec::new();
                if self.end_ok(lo2, hi2, s2, p - 1) {
                    cont.push(eps());
                }
                cont.push(self.gen_frac(p - 1, lo2, hi2, s2, false)?);
                alts.push(cat([class(m), alt(cont)]));
            }
            alt(alts)
        };
        let r = self.chk(r)?;
        self.m_frac.insert(key, r.clone());
        Ok(r)
    }

    /// Below every digit of the tight bounds and of the step: the state no longer changes.
    pub(super) fn tail(&self, lo: T, hi: T, s: St, first: bool) -> Re {
        let min = if first { 1 } else { 0 };
        let zeros = |ok: bool| if ok { rep(class(ZERO), min, None) } else { empty() };
        if self.aut.has {
            return zeros(self.end_ok(lo, hi, s, i64::MIN));
        }
        match (lo, hi) {
            (T::Tight, T::Free) if self.lo_incl => rep(class(ALL), min, None),
            (T::Tight, T::Free) => cat([rep(class(ZERO), 0, None), class(LEAD), rep(class(ALL), 0, None)]),
            (T::Free, T::Free) => rep(class(ALL), min, None),
            _ => zeros(self.end_ok(lo, hi, s, i64::MIN)),
        }
    }

    /// Fraction digits from position `p`, both bounds decided.
    pub(super) fn free_frac(&mut self, p: i64, s: St, first: bool) -> Result<Re, TooBig> {
        let min = if first { 1 } else { 0 };
        if !self.aut.has {
            return Ok(rep(class(ALL), min, None));
        }
        if p < self.aut.e {
            return Ok(if self.aut.accept(s) { rep(class(ZERO), min, None) } else { empty() });
        }
        if let Some(r) = self.m_ffrac.get(&(p, s, first)) {
            return Ok(r.clone());
        }
        self.tick()?;
        let u = self.aut.e + self.aut.t;
        let r = if self.aut.b > 1 && p >= u {
            // Digits down to the window (or to `e`) with the residue tracked by divide and
            // conquer; the lexeme may end wherever the residue is 0.
            let h = p - u + 1;
            let early = if first {
                let mut alts = Vec::new();
                for mid in 0..self.aut.b {
                    let a = self.exact(1, s.0, mid)?;
                    if !a.is_empty() {
                        alts.push(cat([a, self.upto(h - 1, mid, 0)?]));
                    }
                }
                alt(alts)
            } else {
                self.upto(h, s.0, 0)?
            };
            if self.aut.t == 0 {
                cat([early, rep(class(ZERO), 0, None)])
            } else {
                let mut alts = vec![early];
                for r2 in 0..self.aut.b {
                    let ex = self.exact(h, s.0, r2)?;
                    if !ex.is_empty() {
                        alts.push(cat([ex, self.free_frac(u - 1, (r2, s.1), false)?]));
                    }
                }
                alt(alts)
            }
        } else if self.aut.b == 1 && p >= u {
            let h = (p - u + 1) as u32;
            if self.aut.t == 0 {
                cat([rep(class(ALL), min, Some(h)), rep(class(ZERO), 0, None)])
            } else {
                let early = rep(class(ALL), min, Some(h));
                let full = cat([rep(class(ALL), h, Some(h)), self.free_frac(u - 1, s, false)?]);
                alt([early, full])
            }
        } else {
            let mut alts = Vec::new();
            for (m, s2) in groups(0..=9, |d| self.aut.step(p, s, d)) {
                let mut cont = Vec::new();
                if self.aut.accept(s2) {
                    cont.push(eps());
                }
                cont.push(self.free_frac(p - 1, s2, false)?);
                alts.push(cat([class(m), alt(cont)]));
            }
            alt(alts)
        };
        let r = self.chk(r)?;
        self.m_ffrac.insert((p, s, first), r.clone());
        Ok(r)
    }
}

/// Strings of `m` digits above (`greater`) or below `d^m`.
pub(super) fn run_cmp(d: u8, m: i64, greater: bool) -> Re {
    if m == 1 {
        let mask = if greater { ALL & !((2u16 << d) - 1) } else { (1u16 << d) - 1 };
        return class(mask);
    }
    let m1 = m / 2;
    let m2 = (m - m1) as u32;
    alt([
        cat([run_cmp(d, m1, greater), rep(class(ALL), m2, Some(m2))]),
        cat([rep(class(1 << d), m1 as u32, Some(m1 as u32)), run_cmp(d, m - m1, greater)]),
    ])
}

/// State elimination on a generalized automaton: the regex of paths `start → fin`.
pub(super) fn eliminate(
    mut edges: HashMap<(usize, usize), Re>,
    start: usize,
    fin: usize,
    n: usize,
) -> Result<Re, TooBig> {
    let mut alive: Vec<usize> = (0..n).filter(|&k| k != start && k != fin).collect();
    while !alive.is_empty() {
        // Cheapest node first: fewest new edges, then least text.
        let cost = |k: usize| {
            let ins = edges.iter().filter(|(&(i, j), _)| j == k && i != k).count();
            let outs = edges.iter().filter(|(&(i, j), _)| i == k && j != k).count();
            let size: usize = edges.iter().filter(|(&(i, j), _)| i == k || j == k).map(|(_, r)| r.len()).sum();
            (ins * outs, size)
        };
        let (idx, _) = alive.iter().enumerate().min_by_key(|(_, &k)| cost(k)).unwrap();
        let k = alive.remove(idx);
        let star = edges.remove(&(k, k)).map(|l| rep(l, 0, None)).unwrap_or_else(eps);
        let ins: Vec<(usize, Re)> =
            edges.iter().filter(|(&(_, j), _)| j == k).map(|(&(i, _), r)| (i, r.clone())).collect();
        let outs: Vec<(usize, Re)> =
            edges.iter().filter(|(&(i, _), _)| i == k).map(|(&(_, j), r)| (j, r.clone())).collect();
        edges.retain(|&(i, j), _| i != k && j != k);
        for (i, a) in &ins {
            for (j, b) in &outs {
                let path = cat([a.clone(), star.clone(), b.clone()]);
                let new = match edges.remove(&(*i, *j)) {
                    Some(old) => alt([old, path]),
                    None => path,
                };
                if !new.fits() {
                    return Err(TooBig);
                }
                edges.insert((*i, *j), new);
            }
        }
    }
    let through = edges.remove(&(start, fin)).unwrap_or_else(empty);
    Ok(match edges.remove(&(start, start)) {
        Some(l) => cat([rep(l, 0, None), through]),
        None => through,
    })
}
