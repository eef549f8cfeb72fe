//! Anchors: a pattern expanded into start- and end-anchored, look-free branches (JSON Schema
//! patterns are unanchored searches; lexer terminals match whole lexemes).

use super::{any_char_group, enc_hir, parse_rust, unsupported, Ecma, Hir, HirKind, Look, StringError, NEVER};

pub(super) struct Branch {
    pub(super) start: bool,
    pub(super) end: bool,
    pub(super) body: Hir,
}

pub(super) const MAX_BRANCHES: usize = 256;

pub(super) fn nullable(h: &Hir) -> bool {
    h.properties().minimum_len() == Some(0)
}

pub(super) fn combine(r: &Branch, c: &Branch) -> Option<Branch> {
    let mut rb = r.body.clone();
    let mut cb = c.body.clone();
    if c.start {
        // `^` inside `c` forces everything before it to be empty and at position 0.
        if !nullable(&rb) {
            return None;
        }
        rb = Hir::empty();
    }
    if r.end {
        // `$` inside `r` forces everything after it to be empty.
        if !nullable(&cb) {
            return None;
        }
        cb = Hir::empty();
    }
    Some(Branch { start: r.start || c.start, end: r.end || c.end, body: Hir::concat(vec![rb, cb]) })
}

pub(super) fn expand(h: &Hir, src: &str) -> Result<Vec<Branch>, StringError> {
    if h.properties().look_set().is_empty() {
        return Ok(vec![Branch { start: false, end: false, body: h.clone() }]);
    }
    let too_many = || unsupported(format!("too many anchored alternatives in pattern {src:?}"));
    match h.kind() {
        HirKind::Look(Look::Start) => Ok(vec![Branch { start: true, end: false, body: Hir::empty() }]),
        HirKind::Look(Look::End) => Ok(vec![Branch { start: false, end: true, body: Hir::empty() }]),
        HirKind::Look(other) => Err(unsupported(format!("assertion {other:?} in pattern {src:?}"))),
        HirKind::Capture(cap) => expand(&cap.sub, src),
        HirKind::Alternation(hs) => {
            let mut out = Vec::new();
            for h in hs {
                out.extend(expand(h, src)?);
                if out.len() > MAX_BRANCHES {
                    return Err(too_many());
                }
            }
            Ok(out)
        }
        HirKind::Concat(hs) => {
            let mut acc = vec![Branch { start: false, end: false, body: Hir::empty() }];
            for h in hs {
                let cs = expand(h, src)?;
                let mut next = Vec::new();
                for r in &acc {
                    for c in &cs {
                        next.extend(combine(r, c));
                    }
                }
                if next.len() > MAX_BRANCHES {
                    return Err(too_many());
                }
                acc = next;
            }
            Ok(acc)
        }
        HirKind::Repetition(rep) if rep.max == Some(1) && rep.min <= 1 => {
            let mut out = expand(&rep.sub, src)?;
            if rep.min == 0 {
                out.push(Branch { start: false, end: false, body: Hir::empty() });
            }
            Ok(out)
        }
        _ => Err(unsupported(format!("anchor inside a repeated group in pattern {src:?}"))),
    }
}

/// The literal regex for an ECMA pattern, or `None` if the pattern matches every string.
pub(super) fn pattern_literal(ecma: &str) -> Result<Option<String>, StringError> {
    let rust = Ecma::new(ecma).translate()?;
    let hir = parse_rust(&rust, &format!("pattern {ecma:?}"))?;
    let branches = expand(&hir, ecma)?;
    let any_star = format!("{}*", any_char_group());
    let mut alts: Vec<String> = Vec::new();
    for b in branches {
        if b.body.properties().minimum_len().is_none() {
            continue; // never matches
        }
        if nullable(&b.body) && !(b.start && b.end) {
            return Ok(None); // matches every string
        }
        let mut s = String::new();
        if !b.start {
            s.push_str(&any_star);
        }
        enc_hir(&b.body, &mut s)?;
        if !b.end {
            s.push_str(&any_star);
        }
        if !alts.contains(&s) {
            alts.push(s);
        }
    }
    Ok(Some(match alts.len() {
        0 => format!("\"{NEVER}\""),
        1 => format!("\"{}\"", alts[0]),
        _ => format!("\"(?:{})\"", alts.join("|")),
    }))
}
