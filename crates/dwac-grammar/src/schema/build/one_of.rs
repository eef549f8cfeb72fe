//! `oneOf` whose branches overlap, where "exactly one" is still regular: branches that are all
//! strings. A string matches exactly one branch `i` when it is in `Bᵢ` and in no other `Bⱼ`, and
//! each `Bᵢ` is a regular language over string lexemes (lengths, patterns, `enum`/`const`
//! strings), so `Bᵢ \ ⋃ⱼ Bⱼ` is one string terminal: `Bᵢ`'s regexes with each other branch's
//! language in its `except` list. The union of these terminals is the `oneOf`, and they are
//! disjoint by construction.
//!
//! A language subtracted must be exact, so a branch used as an `except` may carry neither a
//! format (format regexes may be stricter than the format: subtracting less would be looser)
//! nor exclusions of its own, and must be one regex (the `except` list holds single regexes).
//! Otherwise the `oneOf` is left to the disjointness check, which refuses it by name.
//!
//! A `oneOf` whose branches each hold for finitely many values (`enum`/`const`, directly or
//! through a nested `oneOf`/`anyOf` of such branches) is the finite set of the values that
//! satisfy exactly one branch, each judged by the validator, written out as literals.

use super::{flatten, merge, refusal, strings, validate, Builder, Disj, Part, SchemaError, Symbol, Value, T_STR};

/// One branch's strings: all of `regexes` and none of `except`; `exact` when its language is
/// one regex that may be subtracted (no format, no exclusions).
struct StringBranch {
    regexes: Vec<String>,
    except: Vec<String>,
    exact: bool,
}

/// The most values a finite `oneOf` enumerates.
const MAX_FINITE_VALUES: usize = 4096;

impl Builder<'_> {
    /// Are the branches of `d`, each with the sibling keywords `own`, pairwise provably disjoint?
    fn branches_disjoint(&self, d: &Disj, own: &[Part]) -> bool {
        let with = |b: &Part| -> Vec<Part> { own.iter().cloned().chain(std::iter::once(b.clone())).collect() };
        let k = d.branches.len();
        (0..k).all(|i| {
            (i + 1..k).all(|j| {
                super::super::validate::provably_disjoint(&self.doc, &with(&d.branches[i]), &with(&d.branches[j]))
            })
        })
    }

    /// Compile `d` (with the sibling keywords `own`) into `n` as the values that satisfy exactly
    /// one of its branches, where every branch holds for finitely many values; `false` (nothing
    /// added) where a branch does not, or no value satisfies any.
    pub(super) fn finite_one_of(&mut self, n: u32, d: &Disj, own: &[Part]) -> Result<bool, SchemaError> {
        let with = |b: &Part| -> Vec<Part> { own.iter().cloned().chain(std::iter::once(b.clone())).collect() };
        // (Provably disjoint branches: the ordinary `anyOf` construction is exact, and kept.)
        if d.branches.len() > 64 || self.branches_disjoint(d, own) {
            return Ok(false);
        }
        let mut candidates: Vec<Value> = Vec::new();
        for b in &d.branches {
            let Some(values) = self.finite_values(&with(b), 0)? else { return Ok(false) };
            for v in values {
                if !candidates.contains(&v) {
                    candidates.push(v);
                }
            }
            if candidates.len() > MAX_FINITE_VALUES {
                return Ok(false);
            }
        }
        if candidates.is_empty() {
            return Ok(false);
        }
        for v in candidates {
            let mut matched = 0;
            for b in &d.branches {
                matched += usize::from(validate(&self.doc, &v, &with(b))?);
            }
            if matched == 1 {
                let sym = self.literal(&v)?;
                self.rule(n, vec![sym]);
            }
        }
        Ok(true)
    }

    /// Every value that satisfies all of `parts`, if they are finitely many and this can tell
    /// (an `enum`/`const` in the conjunction, or one `oneOf`/`anyOf` whose branches are such);
    /// `None` otherwise.
    fn finite_values(&self, parts: &[Part], depth: usize) -> Result<Option<Vec<Value>>, SchemaError> {
        let Ok(flat) = flatten(&self.doc, parts) else { return Ok(None) };
        if flat.is_false {
            return Ok(Some(Vec::new()));
        }
        let candidates = match &flat.disjunctions[..] {
            [] => match merge(&self.doc, &flat) {
                Ok(shape) => match shape.enums {
                    Some(values) => values,
                    None => return Ok(None),
                },
                Err(_) => return Ok(None),
            },
            [d] if depth < 8 => {
                let mut out: Vec<Value> = Vec::new();
                for b in &d.branches {
                    let p: Vec<Part> = flat.own.iter().cloned().chain(std::iter::once(b.clone())).collect();
                    let Some(values) = self.finite_values(&p, depth + 1)? else { return Ok(None) };
                    for v in values {
                        if !out.contains(&v) {
                            out.push(v);
                        }
                    }
                    if out.len() > MAX_FINITE_VALUES {
                        return Ok(None);
                    }
                }
                out
            }
            _ => return Ok(None),
        };
        let mut out = Vec::new();
        for v in candidates {
            if validate(&self.doc, &v, parts)? {
                out.push(v);
            }
        }
        Ok(Some(out))
    }

    /// Compile `d` (with the sibling keywords `own`) into `n` as exactly one of its string
    /// branches; `false` (nothing added) where that does not apply: the branches are provably
    /// disjoint already (the ordinary `anyOf` construction is exact), some branch allows
    /// non-strings, or a branch's language cannot be subtracted exactly.
    pub(super) fn string_one_of(&mut self, n: u32, d: &Disj, own: &[Part]) -> Result<bool, SchemaError> {
        let with = |b: &Part| -> Vec<Part> { own.iter().cloned().chain(std::iter::once(b.clone())).collect() };
        let k = d.branches.len();
        if k > 16 {
            return Ok(false);
        }
        let disjoint = self.branches_disjoint(d, own);
        if disjoint {
            return Ok(false);
        }
        // Per branch: `None` if no string fits.
        let mut langs: Vec<Option<StringBranch>> = Vec::with_capacity(k);
        for b in &d.branches {
            let parts = with(b);
            let Ok(flat) = flatten(&self.doc, &parts) else { return Ok(false) };
            if flat.is_false {
                langs.push(None);
                continue;
            }
            if !flat.disjunctions.is_empty()
                || flat.schemas.iter().any(|(_, o)| o.iter().any(|(kw, v)| refusal(kw, v, o, self.doc.draft).is_some()))
            {
                return Ok(false);
            }
            let Ok(shape) = merge(&self.doc, &flat) else { return Ok(false) };
            if shape.types & !T_STR != 0 {
                return Ok(false);
            }
            if shape.types & T_STR == 0 {
                langs.push(None);
                continue;
            }
            let regexes = match &shape.enums {
                Some(values) => {
                    let mut lits = Vec::new();
                    for v in values {
                        if let Value::String(x) = v {
                            if validate(&self.doc, v, &parts)? {
                                lits.push(strings::json_string_literal(x));
                            }
                        }
                    }
                    if lits.is_empty() {
                        langs.push(None);
                        continue;
                    }
                    vec![format!("(?:{})", lits.join("|"))]
                }
                None => match self.string_regexes_of(&shape)? {
                    Some(r) => r,
                    None => {
                        langs.push(None);
                        continue;
                    }
                },
            };
            let exact = shape.str_not.is_empty() && shape.formats.is_empty() && regexes.len() <= 1;
            langs.push(Some(StringBranch { regexes, except: shape.str_not, exact }));
        }
        let mut terms = Vec::new();
        'branch: for (i, bi) in langs.iter().enumerate() {
            let Some(bi) = bi else { continue };
            let (mut also, mut except) = (bi.regexes.clone(), bi.except.clone());
            for (j, bj) in langs.iter().enumerate() {
                let Some(bj) = bj.as_ref().filter(|_| j != i) else { continue };
                match &bj.regexes[..] {
                    // (Every string is in Bⱼ, or every string but Bⱼ's exclusions.)
                    [] if bj.except.is_empty() => continue 'branch,
                    [r] if bj.exact => except.push(r.clone()),
                    _ => return Ok(false),
                }
            }
            also.sort();
            also.dedup();
            except.sort();
            except.dedup();
            let main = if also.is_empty() { strings::json_string_any() } else { also.remove(0) };
            terms.push((main, also, except));
        }
        for (main, also, except) in terms {
            let t = self.term("STRING", main, also, except);
            self.rule(n, vec![Symbol::T(t)]);
        }
        Ok(true)
    }
}
