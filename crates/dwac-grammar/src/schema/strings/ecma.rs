//! ECMA-262 patterns → Rust regexes, semantics preserved: a tokenizer of the ECMA syntax (with
//! its `u`-mode and Annex B rules) and the translation of each construct.

use super::{invalid, push_scalar, unsupported, Hir, StringError, NEVER};

pub(super) const ECMA_DIGIT: &str = "[0-9]";
pub(super) const ECMA_NOT_DIGIT: &str = "[^0-9]";
pub(super) const ECMA_WORD: &str = "[A-Za-z0-9_]";
pub(super) const ECMA_NOT_WORD: &str = "[^A-Za-z0-9_]";
pub(super) const ECMA_SPACE: &str =
    r"[\x{9}-\x{D}\x{20}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}]";
pub(super) const ECMA_NOT_SPACE: &str =
    r"[^\x{9}-\x{D}\x{20}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}]";
pub(super) const ECMA_DOT: &str = r"[^\x{A}\x{D}\x{2028}\x{2029}]";
pub(super) const ALL_CHARS: &str = r"[\x{0}-\x{10FFFF}]";

/// One parsed ECMA atom: a single character or a set (as a Rust class expression).
pub(super) enum Atom {
    Char(u32),
    Set(String),
}

impl Atom {
    pub(super) fn to_rust(&self) -> String {
        match self {
            Atom::Char(c) => {
                let mut s = String::new();
                push_scalar(&mut s, *c);
                s
            }
            Atom::Set(s) => s.clone(),
        }
    }
}

pub(super) struct Ecma<'a> {
    pub(super) src: &'a str,
    pub(super) chars: Vec<char>,
    pub(super) pos: usize,
    pub(super) out: String,
}

impl<'a> Ecma<'a> {
    pub(super) fn new(src: &'a str) -> Self {
        Ecma { src, chars: src.chars().collect(), pos: 0, out: String::new() }
    }

    pub(super) fn peek(&self, off: usize) -> Option<char> {
        self.chars.get(self.pos + off).copied()
    }

    pub(super) fn err_invalid(&self, what: &str) -> StringError {
        invalid(format!("{what} in pattern {:?}", self.src))
    }

    pub(super) fn err_unsupported(&self, what: &str) -> StringError {
        unsupported(format!("{what} in pattern {:?}", self.src))
    }

    pub(super) fn translate(mut self) -> Result<String, StringError> {
        let mut depth = 0usize;
        let mut can_quantify = false;
        while let Some(c) = self.peek(0) {
            match c {
                '\\' => {
                    self.pos += 1;
                    let atom = self.escape(false)?;
                    self.out.push_str(&atom.to_rust());
                    can_quantify = true;
                }
                '[' => {
                    self.pos += 1;
                    let cls = self.class()?;
                    self.out.push_str(&cls);
                    can_quantify = true;
                }
                '(' => {
                    self.pos += 1;
                    self.group_open()?;
                    depth += 1;
                    can_quantify = false;
                }
                ')' => {
                    if depth == 0 {
                        return Err(self.err_invalid("unmatched `)`"));
                    }
                    depth -= 1;
                    self.pos += 1;
                    self.out.push(')');
                    can_quantify = true;
                }
                '|' | '^' | '$' => {
                    self.pos += 1;
                    self.out.push(c);
                    can_quantify = false;
                }
                '.' => {
                    self.pos += 1;
                    self.out.push_str(ECMA_DOT);
                    can_quantify = true;
                }
                '*' | '+' | '?' => {
                    if !can_quantify {
                        return Err(self.err_invalid(&format!("quantifier `{c}` without operand")));
                    }
                    self.pos += 1;
                    self.out.push(c);
                    self.skip_lazy();
                    can_quantify = false;
                }
                '{' => match self.quantifier()? {
                    Some(q) => {
                        if !can_quantify {
                            return Err(self.err_invalid("quantifier `{..}` without operand"));
                        }
                        self.out.push_str(&q);
                        self.skip_lazy();
                        can_quantify = false;
                    }
                    None => {
                        // Annex B: a `{` that does not start a quantifier is a literal.
                        self.pos += 1;
                        push_scalar(&mut self.out, '{' as u32);
                        can_quantify = true;
                    }
                },
                _ => {
                    self.pos += 1;
                    push_scalar(&mut self.out, c as u32);
                    can_quantify = true;
                }
            }
        }
        if depth != 0 {
            return Err(self.err_invalid("unterminated group"));
        }
        Ok(self.out)
    }

    pub(super) fn skip_lazy(&mut self) {
        if self.peek(0) == Some('?') {
            self.pos += 1;
        }
    }

    /// At `{`: parses `{n}`, `{n,}`, `{n,m}`; returns the Rust quantifier and advances, or `None`.
    pub(super) fn quantifier(&mut self) -> Result<Option<String>, StringError> {
        let mut i = self.pos + 1;
        let read_num = |i: &mut usize| -> Option<String> {
            let start = *i;
            while self.chars.get(*i).is_some_and(|c| c.is_ascii_digit()) {
                *i += 1;
            }
            (*i > start).then(|| self.chars[start..*i].iter().collect())
        };
        let Some(min) = read_num(&mut i) else { return Ok(None) };
        let max = if self.chars.get(i) == Some(&',') {
            i += 1;
            match read_num(&mut i) {
                Some(m) => Some(Some(m)),
                None => Some(None),
            }
        } else {
            None
        };
        if self.chars.get(i) != Some(&'}') {
            return Ok(None);
        }
        let parse = |s: &str| s.parse::<u32>().map_err(|_| self.err_unsupported("repetition count too large"));
        let min_v = parse(&min)?;
        let q = match max {
            None => format!("{{{min_v}}}"),
            Some(None) => format!("{{{min_v},}}"),
            Some(Some(m)) => {
                let max_v = parse(&m)?;
                if max_v < min_v {
                    return Err(self.err_invalid("quantifier range out of order"));
                }
                format!("{{{min_v},{max_v}}}")
            }
        };
        self.pos = i + 1;
        Ok(Some(q))
    }

    /// After `(`.
    pub(super) fn group_open(&mut self) -> Result<(), StringError> {
        if self.peek(0) != Some('?') {
            self.out.push_str("(?:");
            return Ok(());
        }
        match (self.peek(1), self.peek(2)) {
            (Some(':'), _) => {
                self.pos += 2;
                self.out.push_str("(?:");
                Ok(())
            }
            (Some('='), _) => Err(self.err_unsupported("lookahead `(?=`")),
            (Some('!'), _) => Err(self.err_unsupported("negative lookahead `(?!`")),
            (Some('<'), Some('=')) => Err(self.err_unsupported("lookbehind `(?<=`")),
            (Some('<'), Some('!')) => Err(self.err_unsupported("negative lookbehind `(?<!`")),
            (Some('<'), _) => {
                let mut i = self.pos + 2;
                while self.chars.get(i).is_some_and(|&c| c == '_' || c == '$' || c.is_alphanumeric()) {
                    i += 1;
                }
                if i == self.pos + 2 || self.chars.get(i) != Some(&'>') {
                    return Err(self.err_invalid("malformed group name"));
                }
                self.pos = i + 1;
                self.out.push_str("(?:");
                Ok(())
            }
            (Some(c), _) => Err(self.err_invalid(&format!("`(?{c}` is not ECMA-262 group syntax"))),
            (None, _) => Err(self.err_invalid("unterminated group")),
        }
    }

    /// After `\`.
    pub(super) fn escape(&mut self, in_class: bool) -> Result<Atom, StringError> {
        let Some(c) = self.peek(0) else { return Err(self.err_invalid("trailing backslash")) };
        self.pos += 1;
        Ok(match c {
            'd' => Atom::Set(ECMA_DIGIT.into()),
            'D' => Atom::Set(ECMA_NOT_DIGIT.into()),
            'w' => Atom::Set(ECMA_WORD.into()),
            'W' => Atom::Set(ECMA_NOT_WORD.into()),
            's' => Atom::Set(ECMA_SPACE.into()),
            'S' => Atom::Set(ECMA_NOT_SPACE.into()),
            'b' if in_class => Atom::Char(8),
            'b' => return Err(self.err_unsupported("word boundary `\\b`")),
            'B' if in_class => return Err(self.err_invalid("`\\B` in a character class")),
            'B' => return Err(self.err_unsupported("non-word boundary `\\B`")),
            'p' | 'P' => {
                if self.peek(0) != Some('{') {
                    return Err(self.err_invalid(&format!("`\\{c}` without `{{name}}`")));
                }
                let start = self.pos + 1;
                let mut i = start;
                while self.chars.get(i).is_some_and(|&ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '=') {
                    i += 1;
                }
                if i == start || self.chars.get(i) != Some(&'}') {
                    return Err(self.err_invalid(&format!("malformed `\\{c}{{..}}` property escape")));
                }
                let name: String = self.chars[start..i].iter().collect();
                self.pos = i + 1;
                Atom::Set(format!("\\{c}{{{name}}}"))
            }
            't' => Atom::Char(9),
            'n' => Atom::Char(10),
            'v' => Atom::Char(11),
            'f' => Atom::Char(12),
            'r' => Atom::Char(13),
            '0' if self.peek(0).is_some_and(|d| d.is_ascii_digit()) => {
                return Err(self.err_invalid("octal escape"));
            }
            '0' => Atom::Char(0),
            '1'..='9' if in_class => return Err(self.err_invalid("octal escape in a character class")),
            '1'..='9' => return Err(self.err_unsupported(&format!("backreference `\\{c}`"))),
            'k' => return Err(self.err_unsupported("named backreference `\\k<..>`")),
            'c' => match self.peek(0) {
                Some(l) if l.is_ascii_alphabetic() => {
                    self.pos += 1;
                    Atom::Char(l as u32 % 32)
                }
                _ => return Err(self.err_invalid("`\\c` not followed by an ASCII letter")),
            },
            'x' => {
                let v = self.hex_digits(2).ok_or_else(|| self.err_invalid("`\\x` needs two hex digits"))?;
                Atom::Char(v)
            }
            'u' => Atom::Char(self.unicode_escape()?),
            c if c.is_ascii_punctuation() => Atom::Char(c as u32),
            c => return Err(self.err_invalid(&format!("`\\{c}` is not an ECMA-262 escape"))),
        })
    }

    pub(super) fn hex_digits(&mut self, n: usize) -> Option<u32> {
        let mut v = 0u32;
        for k in 0..n {
            v = v * 16 + self.peek(k)?.to_digit(16)?;
        }
        self.pos += n;
        Some(v)
    }

    /// After `\u`.
    pub(super) fn unicode_escape(&mut self) -> Result<u32, StringError> {
        if self.peek(0) == Some('{') {
            let start = self.pos + 1;
            let mut i = start;
            let mut v: u32 = 0;
            while let Some(d) = self.chars.get(i).and_then(|c| c.to_digit(16)) {
                v = v.saturating_mul(16).saturating_add(d);
                i += 1;
            }
            if i == start || self.chars.get(i) != Some(&'}') || v > 0x10FFFF {
                return Err(self.err_invalid("malformed `\\u{..}` escape"));
            }
            self.pos = i + 1;
            if (0xD800..=0xDFFF).contains(&v) {
                return Err(self.err_unsupported("escaped lone surrogate"));
            }
            return Ok(v);
        }
        let v = self.hex_digits(4).ok_or_else(|| self.err_invalid("`\\u` needs four hex digits"))?;
        if (0xD800..=0xDBFF).contains(&v) && self.peek(0) == Some('\\') && self.peek(1) == Some('u') {
            let save = self.pos;
            self.pos += 2;
            match self.hex_digits(4) {
                Some(lo) if (0xDC00..=0xDFFF).contains(&lo) => {
                    return Ok(0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00));
                }
                _ => self.pos = save,
            }
        }
        if (0xD800..=0xDFFF).contains(&v) {
            return Err(self.err_unsupported("escaped lone surrogate"));
        }
        Ok(v)
    }

    pub(super) fn class_atom(&mut self) -> Result<Atom, StringError> {
        let Some(c) = self.peek(0) else { return Err(self.err_invalid("unterminated character class")) };
        self.pos += 1;
        if c == '\\' {
            self.escape(true)
        } else {
            Ok(Atom::Char(c as u32))
        }
    }

    /// After `[`.
    pub(super) fn class(&mut self) -> Result<String, StringError> {
        let negated = self.peek(0) == Some('^');
        if negated {
            self.pos += 1;
        }
        if self.peek(0) == Some(']') {
            self.pos += 1;
            return Ok(if negated { ALL_CHARS } else { NEVER }.to_string());
        }
        let mut items = String::new();
        loop {
            match self.peek(0) {
                None => return Err(self.err_invalid("unterminated character class")),
                Some(']') => {
                    self.pos += 1;
                    break;
                }
                Some(_) => {}
            }
            let a = self.class_atom()?;
            if self.peek(0) == Some('-') && self.peek(1).is_some_and(|n| n != ']') {
                self.pos += 1;
                let b = self.class_atom()?;
                match (a, b) {
                    (Atom::Char(x), Atom::Char(y)) => {
                        if x > y {
                            return Err(self.err_invalid("character class range out of order"));
                        }
                        push_scalar(&mut items, x);
                        items.push('-');
                        push_scalar(&mut items, y);
                    }
                    _ => return Err(self.err_invalid("class escape used as a range endpoint")),
                }
            } else {
                items.push_str(&a.to_rust());
            }
        }
        Ok(format!("[{}{items}]", if negated { "^" } else { "" }))
    }
}

/// Parses a Rust-syntax regex (as produced by the ECMA tokenizer or written in this module).
pub(super) fn parse_rust(rust: &str, what: &str) -> Result<Hir, StringError> {
    regex_syntax::ParserBuilder::new().unicode(true).utf8(true).build().parse(rust).map_err(|e| {
        let msg = e.to_string();
        let detail = msg.lines().last().unwrap_or_default().trim().to_string();
        match &e {
            regex_syntax::Error::Translate(t)
                if matches!(
                    t.kind(),
                    regex_syntax::hir::ErrorKind::UnicodePropertyNotFound
                        | regex_syntax::hir::ErrorKind::UnicodePropertyValueNotFound
                ) =>
            {
                unsupported(format!("{detail} in {what}"))
            }
            _ => invalid(format!("{detail} in {what}")),
        }
    })
}
