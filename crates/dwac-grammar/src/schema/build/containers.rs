//! Grammar construction for objects and arrays: keys (with `propertyNames`), properties,
//! `additionalProperties`, counts, and array positions (prefix items, `items`, `contains`,
//! unevaluated items).

use super::{
    flatten, json_eq, key_parts, merge, ptr_token, strings, validate, Builder, HashMap, Part, Presence, Rest,
    SchemaError, Shape, StringConstraints, Symbol, Value, MAX_UNIQUE_DOMAIN, MAX_UNROLL, OTHER_KEY, T_BOOL, T_NULL,
    T_STR,
};

/// The most "some member" constraints one object may carry (each doubles the kinds of members).
const MAX_SOME_MEMBERS: usize = 4;

/// An extra member's kind: its key terminal (name, main regex, also, except) and value parts,
/// and for keys the object does not name when nothing else constrains them, those names
/// ([`dwac_grammar::Terminal::key_complement`](crate::Terminal::key_complement)).
type ExtraMember = (&'static str, String, Vec<String>, Vec<String>, Vec<Part>, Option<Vec<String>>);

/// A named key's member: its variants (the "some member" bits each sets, its symbol) and whether
/// the key is required.
type NamedMember = (Vec<(u32, Symbol)>, bool);

/// Where the "some member" bits start in a member sequence's state: above the presence bits (at
/// most 16 keys and `other_bit`).
const WITNESS_SHIFT: u32 = 17;

/// An array's one `contains` and its `minContains` (0 without `contains`); several `contains`
/// in one conjunction are refused.
fn single_contains(s: &Shape) -> Result<(Option<Part>, u64), SchemaError> {
    match s.contains.as_slice() {
        [] => Ok((None, 0)),
        [(part, m)] => Ok((Some(part.clone()), *m)),
        [_, (part, _), ..] => {
            Err(SchemaError::new("contains", &part.ptr, "several `contains` in one conjunction are not supported"))
        }
    }
}

/// What an array's states count marked elements up to, and the part an unmarked element must
/// satisfy: with `maxContains` (M), exactly up to M and the complement of `contains`; without
/// it, up to `mc`, saturating. `None`: no array (M < `mc`).
fn contains_count(s: &Shape, has_contains: bool, mc: u64) -> Result<Option<(u64, Option<Part>)>, SchemaError> {
    match &s.contains_max {
        Some((m, not_part)) if has_contains => {
            if *m > MAX_UNROLL {
                return Err(SchemaError::new(
                    "maxContains",
                    &s.ptr,
                    format!("more than {MAX_UNROLL} is not supported"),
                ));
            }
            Ok((*m >= mc).then(|| (*m, Some(not_part.clone()))))
        }
        _ => Ok(Some((mc, None))),
    }
}

/// Every subset of `items` (indices below 32), as bit sets, the empty set first.
fn subsets_of(items: &[usize]) -> Vec<u32> {
    (0..1u32 << items.len())
        .map(|m| (0..items.len()).filter(|i| m >> i & 1 == 1).fold(0u32, |acc, i| acc | 1 << items[i]))
        .collect()
}

/// The indices of the set bits of `bits`.
fn bits_of(bits: u32) -> impl Iterator<Item = usize> {
    (0..32).filter(move |i| bits >> i & 1 == 1)
}

/// An object's named keys: in definition order, then required keys not listed, then the keys
/// presence constraints name.
fn object_key_names(s: &Shape) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for spec in &s.objs {
        for p in &spec.props {
            if !names.contains(p) {
                names.push(p.clone());
            }
        }
    }
    for r in &s.required {
        if !names.contains(r) {
            names.push(r.clone());
        }
    }
    for p in &s.presence {
        for k in p.keys() {
            if !names.contains(k) {
                names.push(k.clone());
            }
        }
    }
    names
}

impl Builder<'_> {
    /// String constraints from `propertyNames`: regexes every key must also match, and regexes
    /// no key may match (`not: {const/enum/pattern}`: the key terminals' `except` lists).
    #[allow(clippy::type_complexity, reason = "two regex lists, named at the one call site")]
    fn property_name_regexes(&mut self, s: &Shape) -> Result<Option<(Vec<String>, Vec<String>)>, SchemaError> {
        if s.prop_names.is_empty() {
            return Ok(Some((Vec::new(), Vec::new())));
        }
        let flat = flatten(&self.doc, &s.prop_names)?;
        if flat.is_false {
            return Ok(None);
        }
        self.check_refusals(&flat)?;
        let shape = merge(&self.doc, &flat)?;
        let ptr = s.prop_names[0].ptr.clone();
        if !flat.disjunctions.is_empty() {
            return Err(SchemaError::new(
                "propertyNames",
                &ptr,
                "only string constraints (pattern, length, format, const/enum, `not` of those) are supported",
            ));
        }
        // `const`/`enum`: the keys are the listed strings that satisfy all of `propertyNames`.
        if let Some(values) = &shape.enums {
            let mut keys = Vec::new();
            for v in values {
                if v.is_string() && validate(&self.doc, v, &s.prop_names)? {
                    keys.push(strings::json_string_literal(v.as_str().unwrap_or_default()));
                }
            }
            if keys.is_empty() {
                return Ok(None);
            }
            return Ok(Some((vec![format!("(?:{})", keys.join("|"))], Vec::new())));
        }
        if shape.types & T_STR == 0 {
            return Ok(None);
        }
        let mut out = Vec::new();
        let max = self.capped_max_length(shape.str_min, shape.str_max, &ptr)?;
        let len = StringConstraints {
            min_length: (shape.str_min > 0).then_some(shape.str_min),
            max_length: max,
            ..Default::default()
        };
        if shape.str_max.is_some_and(|m| m < shape.str_min) {
            return Ok(None);
        }
        out.extend(strings::string_regexes(&len).map_err(|e| self.string_error("propertyNames", &ptr, e))?);
        for (p, pp) in &shape.patterns {
            out.push(strings::pattern_regex(p).map_err(|e| self.string_error("pattern", pp, e))?);
        }
        for (f, fp) in &shape.formats {
            if strings::is_supported_format(f) {
                let c = StringConstraints { format: Some(f.clone()), ..Default::default() };
                out.extend(strings::string_regexes(&c).map_err(|e| self.string_error("format", fp, e))?);
            }
        }
        Ok(Some((out, shape.str_not.clone())))
    }

    pub(super) fn build_object(&mut self, n: u32, s: &Shape) -> Result<(), SchemaError> {
        let Some((name_regexes, names_not)) = self.property_name_regexes(s)? else {
            // No key can satisfy propertyNames: only the empty object.
            if s.min_props == 0 && s.required.is_empty() && s.some_members.is_empty() {
                let (l, r) = (self.punct("{"), self.punct("}"));
                self.rule(n, vec![l, r]);
            }
            return Ok(());
        };
        let names = object_key_names(s);
        let colon = self.punct(":");
        // "Some member" constraints (`SomeMember`): a bit each, set by a member that is one.
        if s.some_members.len() > MAX_SOME_MEMBERS {
            return Err(SchemaError::new(
                "patternProperties",
                &s.ptr,
                format!(
                    "more than {MAX_SOME_MEMBERS} complements of patternProperties/additionalProperties in one object"
                ),
            ));
        }
        let Some(members) = self.named_members(s, &names, colon)? else {
            return Ok(());
        };
        let extra_alts = self.extra_member_kinds(s, &names, &name_regexes, &names_not)?;
        let extra = self.extra_members(s, extra_alts, colon)?;
        self.member_sequence(n, s, &names, &members, &extra)
    }

    /// Members for the named keys: their variants (the "some member" bits each sets, its
    /// symbol; none if the key cannot appear), and whether the key is required. `None` if a
    /// required key can never appear (no object).
    fn named_members(
        &mut self,
        s: &Shape,
        names: &[String],
        colon: Symbol,
    ) -> Result<Option<Vec<NamedMember>>, SchemaError> {
        let witnesses = &s.some_members;
        let mut members: Vec<(Vec<(u32, Symbol)>, bool)> = Vec::new();
        for name in names {
            let required = s.required.contains(name);
            let mut ok = true;
            if !s.prop_names.is_empty() {
                ok = validate(&self.doc, &Value::String(name.clone()), &s.prop_names)?;
            }
            let mut parts = key_parts(&self.doc, &s.objs, name)?;
            for u in &s.uneval_props {
                let mut evaluated = u.names.contains(name);
                for p in &u.patterns {
                    evaluated = evaluated || super::super::patterns::matches_pattern(p, name)?;
                }
                if !evaluated {
                    parts.push(u.part.clone());
                }
            }
            if parts.iter().any(|p| self.doc.get(&p.ptr) == Some(&Value::Bool(false))) {
                ok = false;
            }
            let mut variants = Vec::new();
            if ok {
                let mut fits = Vec::new();
                for (wi, w) in witnesses.iter().enumerate() {
                    if w.key_fits(name)? {
                        fits.push(wi);
                    }
                }
                for wbits in subsets_of(&fits) {
                    let mut parts = parts.clone();
                    parts.extend(bits_of(wbits).map(|wi| witnesses[wi].value.clone()));
                    let v = self.conj(parts)?;
                    let key = self.term("KEY", strings::json_string_literal(name), vec![], vec![]);
                    let m = self.nt(format!("member {name}"))?;
                    self.rule(m, vec![Symbol::T(key), colon, Symbol::N(v)]);
                    variants.push((wbits << WITNESS_SHIFT, Symbol::N(m)));
                }
            }
            if variants.is_empty() && required {
                return Ok(None); // a required key can never appear: no object
            }
            members.push((variants, required));
        }
        Ok(Some(members))
    }

    /// The kinds of extra members (keys the schema does not name): keys matching no pattern,
    /// and keys matching each set of patterns.
    fn extra_member_kinds(
        &self,
        s: &Shape,
        names: &[String],
        name_regexes: &[String],
        names_not: &[String],
    ) -> Result<Vec<ExtraMember>, SchemaError> {
        let named_literals: Vec<String> = names.iter().map(|k| strings::json_string_literal(k)).collect();
        let mut all_patterns: Vec<(String, Part, usize)> = Vec::new();
        for (si, spec) in s.objs.iter().enumerate() {
            for (p, part) in &spec.patterns {
                all_patterns.push((p.clone(), part.clone(), si));
            }
        }
        let mut pattern_res: Vec<String> = Vec::new();
        for (p, _, si) in &all_patterns {
            let ptr = format!("{}/patternProperties/{}", s.objs[*si].ptr, ptr_token(p));
            pattern_res.push(strings::pattern_regex(p).map_err(|e| self.string_error("patternProperties", &ptr, e))?);
        }
        // (key terminal name, main regex, also, except, value parts) of each kind of extra member.
        let mut extra_alts: Vec<ExtraMember> = Vec::new();
        // Keys matching no pattern.
        {
            let mut parts = Vec::new();
            let mut allowed = true;
            for spec in &s.objs {
                if let Some(a) = &spec.additional {
                    if self.doc.get(&a.ptr) == Some(&Value::Bool(false)) {
                        allowed = false;
                    }
                    parts.push(a.clone());
                }
            }
            for u in &s.uneval_props {
                if self.doc.get(&u.part.ptr) == Some(&Value::Bool(false)) {
                    allowed = false;
                }
                parts.push(u.part.clone());
            }
            if allowed {
                let mut except = named_literals.clone();
                except.extend(pattern_res.iter().cloned());
                except.extend(names_not.iter().cloned());
                // Any key but the named ones: the terminal the compiler may share. (With no names,
                // it is the value strings' terminal: not marked.)
                let plain =
                    !names.is_empty() && pattern_res.is_empty() && names_not.is_empty() && name_regexes.is_empty();
                let complement = plain.then(|| names.to_vec());
                let mut also = name_regexes.to_vec();
                let main = if also.is_empty() { strings::json_string_any() } else { also.remove(0) };
                extra_alts.push(("KEY_ADDITIONAL", main, also, except, parts, complement));
            }
        }
        // Keys matching a set of patterns (all subsets for up to 4 patterns, else single patterns;
        // keys matching several patterns beyond that are rejected: stricter, never looser).
        let k = all_patterns.len();
        let subsets: Vec<Vec<usize>> = if k == 0 {
            Vec::new()
        } else if k <= 4 {
            (1..(1usize << k)).map(|m| (0..k).filter(|i| m >> i & 1 == 1).collect()).collect()
        } else {
            (0..k).map(|i| vec![i]).collect()
        };
        for subset in subsets {
            let mut parts: Vec<Part> = subset.iter().map(|&i| all_patterns[i].1.clone()).collect();
            let mut allowed = true;
            for (si, spec) in s.objs.iter().enumerate() {
                if spec.patterns.is_empty() || !subset.iter().any(|&i| all_patterns[i].2 == si) {
                    if let Some(a) = &spec.additional {
                        if self.doc.get(&a.ptr) == Some(&Value::Bool(false)) {
                            allowed = false;
                        }
                        parts.push(a.clone());
                    }
                }
            }
            for u in &s.uneval_props {
                if !subset.iter().any(|&i| u.patterns.contains(&all_patterns[i].0)) {
                    if self.doc.get(&u.part.ptr) == Some(&Value::Bool(false)) {
                        allowed = false;
                    }
                    parts.push(u.part.clone());
                }
            }
            if !allowed {
                continue;
            }
            let main = pattern_res[subset[0]].clone();
            let mut also: Vec<String> = subset[1..].iter().map(|&i| pattern_res[i].clone()).collect();
            also.extend(name_regexes.iter().cloned());
            let mut except = named_literals.clone();
            except.extend((0..k).filter(|i| !subset.contains(i)).map(|i| pattern_res[i].clone()));
            except.extend(names_not.iter().cloned());
            extra_alts.push(("KEY_PATTERN", main, also, except, parts, None));
        }
        Ok(extra_alts)
    }

    /// The extra members' alternatives by the "some member" bits they set: each kind of extra
    /// member as each set of "some member" constraints it may meet.
    fn extra_members(
        &mut self,
        s: &Shape,
        extra_alts: Vec<ExtraMember>,
        colon: Symbol,
    ) -> Result<Vec<(u32, Symbol)>, SchemaError> {
        let witnesses = &s.some_members;
        // Each kind of extra member, and as each set of "some member" constraints it may meet
        // (its key in their languages too, its value in their schemas too): an alternative of
        // the extra members that set those bits.
        let mut kinds: Vec<(u32, u32)> = Vec::new();
        let everyone: Vec<usize> = (0..witnesses.len()).collect();
        for (name, main, also, except, parts, complement) in extra_alts {
            for wbits in subsets_of(&everyone) {
                let (mut also, mut except, mut parts) = (also.clone(), except.clone(), parts.clone());
                for wi in bits_of(wbits) {
                    let w = &witnesses[wi];
                    for p in &w.matches {
                        also.push(
                            strings::pattern_regex(p).map_err(|e| self.string_error("patternProperties", &w.ptr, e))?,
                        );
                    }
                    for p in &w.excepts {
                        except.push(
                            strings::pattern_regex(p).map_err(|e| self.string_error("patternProperties", &w.ptr, e))?,
                        );
                    }
                    except.extend(w.names.iter().map(|k| strings::json_string_literal(k)));
                    parts.push(w.value.clone());
                }
                // (A key no string can be: no such member, and no value to build.)
                if wbits != 0 && strings::regexes_disjoint(&[vec![main.clone()], also.clone()].concat()) {
                    continue;
                }
                let key = self.term(name, main.clone(), also, except);
                if wbits == 0 {
                    if let Some(names) = &complement {
                        self.g.terminals[key as usize].key_complement = Some(names.clone());
                    }
                }
                let v = self.conj(parts)?;
                let m = self.nt(if name == "KEY_PATTERN" { "member pattern" } else { "member additional" }.into())?;
                self.rule(m, vec![Symbol::T(key), colon, Symbol::N(v)]);
                kinds.push((wbits << WITNESS_SHIFT, m));
            }
        }
        let mut extra: Vec<(u32, Symbol)> = Vec::new();
        for (bits, _) in &kinds {
            if extra.iter().any(|(b, _)| b == bits) {
                continue;
            }
            let x = self.nt("member extra".into())?;
            for (_, m) in kinds.iter().filter(|(b, _)| b == bits) {
                self.rule(x, vec![Symbol::N(*m)]);
            }
            extra.push((*bits, Symbol::N(x)));
        }
        Ok(extra)
    }

    /// The member sequence of object `n`: the named members in order, then extra members, with
    /// the counts (min/maxProperties), the presence constraints and the "some member" bits.
    fn member_sequence(
        &mut self,
        n: u32,
        s: &Shape,
        names: &[String],
        members: &[NamedMember],
        extra: &[(u32, Symbol)],
    ) -> Result<(), SchemaError> {
        let witness_all: u32 = ((1u32 << s.some_members.len()) - 1) << WITNESS_SHIFT;
        // The member sequence with counts (min/maxProperties).
        let (min, max) = (s.min_props, s.max_props);
        if max.is_some_and(|m| m < min) {
            return Ok(());
        }
        if max.is_some_and(|m| m > names.len() as u64 + MAX_UNROLL) && !extra.is_empty() {
            return Err(SchemaError::new("maxProperties", &s.ptr, "too large to unroll"));
        }
        // Presence constraints (dependentRequired, oneOf of `required` sets) track which
        // involved keys are present.
        // ("Some key outside a list" looks at every named key, and at whether an unnamed one
        // was emitted: one more bit, `other_bit`.)
        let outside = s.presence.iter().any(|p| matches!(p, Presence::SomeOutside(_)));
        let involved: Vec<usize> = {
            let mut keys: Vec<&String> = Vec::new();
            for p in &s.presence {
                keys.extend(p.keys());
            }
            if outside {
                keys.extend(names.iter());
            }
            let mut idx: Vec<usize> = keys.iter().filter_map(|k| names.iter().position(|n| n == *k)).collect();
            idx.sort_unstable();
            idx.dedup();
            idx
        };
        if involved.len() > 16 {
            return Err(SchemaError::new("dependentRequired", &s.ptr, "more than 16 keys in presence constraints"));
        }
        let bit_of = |i: usize| involved.iter().position(|&x| x == i).map(|b| 1u32 << b);
        let other_bit = if outside { 1u32 << involved.len() } else { 0 };
        let present = |bits: u32, k: &str| -> bool {
            if k == OTHER_KEY {
                return bits & other_bit != 0;
            }
            names.iter().position(|n| n == k).and_then(bit_of).is_some_and(|b| bits & b != 0)
        };
        let satisfied = |bits: u32| {
            bits & witness_all == witness_all && s.presence.iter().all(|p| p.holds(names, &|k: &str| present(bits, k)))
        };
        let sat = |c: u64| if max.is_none() { c.min(min) } else { c };
        let fits = |c: u64| max.is_none_or(|m| c <= m);
        let comma = self.punct(",");
        let nm = members.len();
        // State (i, c, bits, first): next candidate named member i (extras at i == nm), c members
        // emitted (saturating), presence bits, and whether nothing was emitted yet.
        type St = (usize, u64, u32, bool);
        let mut memo: HashMap<St, u32> = HashMap::new();
        let mut work: Vec<St> = Vec::new();
        let mut state = |b: &mut Builder, st: St, work: &mut Vec<St>| -> Result<u32, SchemaError> {
            if let Some(&x) = memo.get(&st) {
                return Ok(x);
            }
            let x = b.nt(format!("members {}/{}/{}", st.0, st.1, st.2))?;
            memo.insert(st, x);
            work.push(st);
            Ok(x)
        };
        let start = state(self, (0, 0, 0, true), &mut work)?;
        while let Some((i, c, bits, first)) = work.pop() {
            let a = state(self, (i, c, bits, first), &mut work)?;
            let lead = |rhs: Vec<Symbol>| if first { rhs } else { [vec![comma], rhs].concat() };
            if i < nm {
                for &(wbits, sym) in members[i].0.iter().filter(|_| fits(c + 1)) {
                    let nbits = bits | bit_of(i).unwrap_or(0) | wbits;
                    let next = state(self, (i + 1, sat(c + 1), nbits, false), &mut work)?;
                    self.rule(a, lead(vec![sym, Symbol::N(next)]));
                }
                if !members[i].1 {
                    let next = state(self, (i + 1, c, bits, first), &mut work)?;
                    self.rule(a, vec![Symbol::N(next)]);
                }
            } else {
                if c >= min && satisfied(bits) {
                    self.rule(a, vec![]);
                }
                for &(wbits, x) in extra.iter().filter(|_| fits(c + 1)) {
                    let next = state(self, (nm, sat(c + 1), bits | other_bit | wbits, false), &mut work)?;
                    self.rule(a, lead(vec![x, Symbol::N(next)]));
                }
            }
        }
        let (l, r) = (self.punct("{"), self.punct("}"));
        self.rule(n, vec![l, Symbol::N(start), r]);
        Ok(())
    }

    pub(super) fn build_array(&mut self, n: u32, s: &Shape) -> Result<(), SchemaError> {
        if let Some(ptr) = &s.unique {
            if s.max_items.is_none_or(|m| m > 1) {
                return self.build_unique_array(n, s, ptr);
            }
        }
        let p = s.arrs.iter().map(|a| a.prefix.len()).chain(s.uneval_items.iter().map(|u| u.prefix)).max().unwrap_or(0);
        let mut max = s.max_items;
        // Parts constraining position i; None: the position cannot exist.
        let uneval: Vec<(usize, Part, bool, bool)> = s
            .uneval_items
            .iter()
            .map(|u| (u.prefix, u.part.clone(), self.doc.get(&u.part.ptr) == Some(&Value::Bool(false)), u.by_contains))
            .collect();
        // Parts of position i (None: the position cannot exist). A `marked` element satisfies
        // `contains`, which evaluates it for an in-place `unevaluatedItems`.
        let position_m = |i: usize, marked: bool| -> Option<Vec<Part>> {
            let mut parts = Vec::new();
            for (prefix, part, is_false, by_contains) in &uneval {
                if i >= *prefix && !(marked && *by_contains) {
                    if *is_false {
                        return None;
                    }
                    parts.push(part.clone());
                }
            }
            for a in &s.arrs {
                if let Some(x) = a.prefix.get(i) {
                    parts.push(x.clone());
                } else {
                    match &a.rest {
                        Rest::Any => {}
                        Rest::Nothing => return None,
                        Rest::Schema(x) => parts.push(x.clone()),
                    }
                }
            }
            Some(parts)
        };
        let position = |i: usize| position_m(i, false);
        for i in 0..=p {
            if position(i).is_none() && (s.contains.is_empty() || position_m(i, true).is_none()) {
                max = Some(max.map_or(i as u64, |m| m.min(i as u64)));
                break;
            }
        }
        let min = s.min_items;
        if max.is_some_and(|m| m < min) {
            return Ok(());
        }
        let u = (p as u64).max(min);
        if u > MAX_UNROLL || max.is_some_and(|m| m > u + MAX_UNROLL) {
            return Err(SchemaError::new(
                if u > MAX_UNROLL { "minItems" } else { "maxItems" },
                &s.ptr,
                format!("array bounds beyond {MAX_UNROLL} explicit positions are not supported"),
            ));
        }
        // `contains` (with `minContains`): each element is either plain or "marked" (also
        // satisfies `contains`); states count marked elements up to `mc`.
        let (contains, mc) = single_contains(s)?;
        if max.is_some_and(|m| m < mc) {
            return Ok(());
        }
        let (l, r, comma) = (self.punct("["), self.punct("]"), self.punct(","));
        if min == 0 && mc == 0 {
            self.rule(n, vec![l, r]);
        }
        if max == Some(0) {
            return Ok(());
        }
        // With `maxContains` (M): an unmarked element satisfies the complement of `contains`, and
        // the marked ones are counted exactly up to M (not saturating at mc).
        let Some((count_to, unmarked)) = contains_count(s, contains.is_some(), mc)? else {
            return Ok(()); // (no array: at least mc and at most maxContains < mc matching items)
        };
        let elem = |b: &mut Builder, k: u64, marked: bool| -> Result<Symbol, SchemaError> {
            let Some(mut parts) = position_m((k as usize).min(p), marked) else {
                return Ok(Symbol::N(b.nt("nothing".into())?));
            };
            if marked {
                parts.extend(contains.iter().cloned());
            } else {
                parts.extend(unmarked.iter().cloned());
            }
            Ok(Symbol::N(b.conj(parts)?))
        };
        // T(k, c): k elements emitted, c of them marked (saturating at mc; up to M with maxContains).
        let last = max.unwrap_or(u.max(mc)).max(1);
        let mut states: HashMap<(u64, u64), u32> = HashMap::new();
        let mut work: Vec<(u64, u64)> = Vec::new();
        let mut state = |b: &mut Builder, k: u64, c: u64, work: &mut Vec<(u64, u64)>| -> Result<u32, SchemaError> {
            if let Some(&t) = states.get(&(k, c)) {
                return Ok(t);
            }
            let t = b.nt(format!("items {k}/{c}"))?;
            states.insert((k, c), t);
            work.push((k, c));
            Ok(t)
        };
        let marks: &[bool] = if contains.is_some() { &[false, true] } else { &[false] };
        for &m in marks {
            let c = (m as u64).min(count_to);
            if unmarked.is_some() && m as u64 > count_to {
                continue; // (maxContains: 0)
            }
            let t = state(self, 1, c, &mut work)?;
            let e0 = elem(self, 0, m)?;
            self.rule(n, vec![l, e0, Symbol::N(t), r]);
        }
        while let Some((k, c)) = work.pop() {
            let t = state(self, k, c, &mut work)?;
            if k >= min && c >= mc {
                self.rule(t, vec![]);
            }
            if max.is_none() || k < last {
                for &m in marks {
                    if unmarked.is_some() && c + m as u64 > count_to {
                        continue; // (past maxContains)
                    }
                    let c2 = (c + m as u64).min(count_to);
                    let k2 = if max.is_none() { (k + 1).min(last) } else { k + 1 };
                    let next = state(self, k2, c2, &mut work)?;
                    let e = elem(self, k, m)?;
                    self.rule(t, vec![comma, e, Symbol::N(next)]);
                }
            }
        }
        Ok(())
    }

    /// `uniqueItems: true` over a finite item domain (an `enum`/`const`, booleans, `null`; at
    /// most [`MAX_UNIQUE_DOMAIN`] values): the array's states are the sets of values used so far,
    /// and each element is a value not yet in the set. Values equal as JSON count once (a
    /// string's literal matches every spelling, a number's every notation of it). Anything else
    /// is refused by name (or, lenient, compiled without uniqueness, with a warning).
    fn build_unique_array(&mut self, n: u32, s: &Shape, ptr: &str) -> Result<(), SchemaError> {
        let refuse = |b: &mut Builder, why: &str| -> Result<(), SchemaError> {
            let e = SchemaError::new("uniqueItems", ptr, format!("`uniqueItems: true` {why}"));
            if !b.opts.lenient {
                return Err(e);
            }
            b.warnings.push(format!("dropped: {e}"));
            let mut plain = s.clone();
            plain.unique = None;
            b.build_array(n, &plain)
        };
        if !s.contains.is_empty() || !s.uneval_items.is_empty() || s.arrs.iter().any(|a| !a.prefix.is_empty()) {
            return refuse(self, "with prefixItems, contains or unevaluatedItems cannot be compiled exactly");
        }
        let mut parts = Vec::new();
        let mut nothing = false;
        for a in &s.arrs {
            match &a.rest {
                Rest::Any => {}
                Rest::Nothing => nothing = true,
                Rest::Schema(x) => parts.push(x.clone()),
            }
        }
        let (l, r, comma) = (self.punct("["), self.punct("]"), self.punct(","));
        // The item domain (decided before any rule is added: a lenient refusal builds the
        // array again without uniqueness).
        let flat = if nothing { None } else { Some(flatten(&self.doc, &parts)?).filter(|f| !f.is_false) };
        let Some(flat) = flat else {
            if s.min_items == 0 {
                self.rule(n, vec![l, r]);
            }
            return Ok(());
        };
        let shape = merge(&self.doc, &flat)?;
        let candidates: Vec<Value> = match &shape.enums {
            Some(values) if flat.disjunctions.is_empty() => values.clone(),
            None if flat.disjunctions.is_empty() && shape.types & !(T_NULL | T_BOOL) == 0 => {
                let mut v = Vec::new();
                if shape.types & T_NULL != 0 {
                    v.push(Value::Null);
                }
                if shape.types & T_BOOL != 0 {
                    v.extend([Value::Bool(false), Value::Bool(true)]);
                }
                v
            }
            _ => {
                return refuse(
                    self,
                    &format!("is compiled only over a finite item domain (enum, const, booleans, null) of at most {MAX_UNIQUE_DOMAIN} values"),
                )
            }
        };
        let mut values: Vec<Value> = Vec::new();
        for v in candidates {
            if !values.iter().any(|w| json_eq(w, &v)) && validate(&self.doc, &v, &parts)? {
                values.push(v);
            }
        }
        if values.len() > MAX_UNIQUE_DOMAIN {
            return refuse(
                self,
                &format!("over an item domain of {} values (at most {MAX_UNIQUE_DOMAIN})", values.len()),
            );
        }
        let k = values.len();
        let max = s.max_items.map_or(k as u64, |m| m.min(k as u64));
        let min = s.min_items;
        if min == 0 {
            self.rule(n, vec![l, r]);
        }
        let lits = values.iter().map(|v| self.literal(v)).collect::<Result<Vec<_>, _>>()?;
        // U(used): the values used so far; more may follow while fewer than `max` are used.
        let mut states: HashMap<u32, u32> = HashMap::new();
        let mut work: Vec<u32> = Vec::new();
        let mut state = |b: &mut Builder, used: u32, work: &mut Vec<u32>| -> Result<u32, SchemaError> {
            if let Some(&t) = states.get(&used) {
                return Ok(t);
            }
            let t = b.nt(format!("unique items {used:b}"))?;
            states.insert(used, t);
            work.push(used);
            Ok(t)
        };
        if max >= 1 {
            for (i, lit) in lits.iter().enumerate() {
                let t = state(self, 1 << i, &mut work)?;
                self.rule(n, vec![l, *lit, Symbol::N(t), r]);
            }
        }
        while let Some(used) = work.pop() {
            let t = state(self, used, &mut work)?;
            let count = u64::from(used.count_ones());
            if count >= min {
                self.rule(t, vec![]);
            }
            if count < max {
                for (i, lit) in lits.iter().enumerate() {
                    if used & (1 << i) == 0 {
                        let next = state(self, used | 1 << i, &mut work)?;
                        self.rule(t, vec![comma, *lit, Symbol::N(next)]);
                    }
                }
            }
        }
        Ok(())
    }
}
