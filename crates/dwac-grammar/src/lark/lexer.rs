//! The Lark grammar's own lexer: tokens of a `.lark` file with their spans.

use super::{parse_token_ref, GrammarError, Span};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tk {
    Name,
    Str,
    Regex,
    Number,
    Directive,
    Colon,
    Pipe,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Dot,
    DotDot,
    Tilde,
    Arrow,
    Star,
    Plus,
    Question,
    Bang,
    /// A token reference `<...>` (special tokens: `<|tool_call|>`, `<[128010]>`).
    TokenRef,
    /// `%json { ... }`: an embedded JSON Schema (the whole directive, body included).
    Json,
    Newline,
    Eof,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Tok {
    pub(super) kind: Tk,
    pub(super) start: usize,
    pub(super) end: usize,
}

impl Tok {
    pub(super) fn span(&self) -> Span {
        Span::new(self.start, self.end)
    }
}

pub(super) fn err(src: &str, start: usize, end: usize, msg: impl Into<String>) -> GrammarError {
    GrammarError::at(src, Span::new(start, end), msg)
}

pub(super) fn char_at(src: &str, i: usize) -> char {
    src.get(i..).and_then(|s| s.chars().next()).unwrap_or('\0')
}

pub(super) fn lex(src: &str) -> Result<Vec<Tok>, GrammarError> {
    let b = src.as_bytes();
    let n = b.len();
    let mut out: Vec<Tok> = Vec::new();
    let mut i = 0;
    let skip_to_eol = |mut j: usize| {
        while j < n && b[j] != b'\n' {
            j += 1;
        }
        j
    };
    while i < n {
        let c = b[i];
        let start = i;
        let single = |kind| Tok { kind, start, end: start + 1 };
        match c {
            b' ' | b'\t' | b'\r' | b'\x0c' => i += 1,
            b'\n' => {
                i += 1;
                if !out.is_empty() && out.last().map(|t| t.kind) != Some(Tk::Newline) {
                    out.push(Tok { kind: Tk::Newline, start, end: start + 1 });
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => i = skip_to_eol(i),
            b'#' => i = skip_to_eol(i),
            b'\\' => {
                let mut j = i + 1;
                while j < n && (b[j] == b' ' || b[j] == b'\t' || b[j] == b'\r') {
                    j += 1;
                }
                if j < n && b[j] == b'\n' {
                    i = j + 1;
                } else {
                    return Err(err(src, i, i + 1, "unexpected `\\` (a line continuation must end its line)"));
                }
            }
            b'"' => {
                i = string_end(src, i)?;
                out.push(Tok { kind: Tk::Str, start, end: i });
            }
            b'/' => {
                i = regex_end(src, i)?;
                out.push(Tok { kind: Tk::Regex, start, end: i });
            }
            b'%' => {
                let mut j = i + 1;
                while j < n && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                if j == i + 1 {
                    return Err(err(src, i, i + 1, "expected a directive name after `%`"));
                }
                if &src[i..j] == "%json" {
                    let end = json_body_end(src, j)?;
                    out.push(Tok { kind: Tk::Json, start, end });
                    i = end;
                    continue;
                }
                out.push(Tok { kind: Tk::Directive, start, end: j });
                i = j;
            }
            b'0'..=b'9' => {
                let mut j = i;
                while j < n && b[j].is_ascii_digit() {
                    j += 1;
                }
                out.push(Tok { kind: Tk::Number, start, end: j });
                i = j;
            }
            b'-' => {
                if b.get(i + 1) == Some(&b'>') {
                    out.push(Tok { kind: Tk::Arrow, start, end: i + 2 });
                    i += 2;
                } else if b.get(i + 1).is_some_and(u8::is_ascii_digit) {
                    let mut j = i + 1;
                    while j < n && b[j].is_ascii_digit() {
                        j += 1;
                    }
                    out.push(Tok { kind: Tk::Number, start, end: j });
                    i = j;
                } else {
                    return Err(err(src, i, i + 1, "unexpected `-` (did you mean `->`?)"));
                }
            }
            b'<' => {
                let (_, end) = parse_token_ref(src, i, true).map_err(|(s, e, m)| err(src, s, e, m))?;
                out.push(Tok { kind: Tk::TokenRef, start, end });
                i = end;
            }
            b'.' => {
                if b.get(i + 1) == Some(&b'.') {
                    out.push(Tok { kind: Tk::DotDot, start, end: i + 2 });
                    i += 2;
                } else {
                    out.push(single(Tk::Dot));
                    i += 1;
                }
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let mut j = i;
                while j < n && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                out.push(Tok { kind: Tk::Name, start, end: j });
                i = j;
            }
            _ => {
                let kind = match c {
                    b':' => Tk::Colon,
                    b'|' => Tk::Pipe,
                    b'(' => Tk::LParen,
                    b')' => Tk::RParen,
                    b'[' => Tk::LBracket,
                    b']' => Tk::RBracket,
                    b'{' => Tk::LBrace,
                    b'}' => Tk::RBrace,
                    b',' => Tk::Comma,
                    b'~' => Tk::Tilde,
                    b'*' => Tk::Star,
                    b'+' => Tk::Plus,
                    b'?' => Tk::Question,
                    b'!' => Tk::Bang,
                    _ => {
                        let ch = char_at(src, i);
                        let msg = if ch == '\'' {
                            "unexpected `'`: Lark string literals use double quotes".to_string()
                        } else {
                            format!("unexpected character `{}`", ch.escape_debug())
                        };
                        return Err(err(src, i, i + ch.len_utf8(), msg));
                    }
                };
                out.push(single(kind));
                i += 1;
            }
        }
    }
    out.push(Tok { kind: Tk::Eof, start: n, end: n });
    Ok(out)
}

/// The end of the string literal starting at `i` (with its `i` flag).
fn string_end(src: &str, i: usize) -> Result<usize, GrammarError> {
    let (b, n) = (src.as_bytes(), src.len());
    let mut j = i + 1;
    loop {
        if j >= n || b[j] == b'\n' {
            return Err(err(src, i, i + 1, "unterminated string literal"));
        }
        match b[j] {
            b'\\' if matches!(b.get(j + 1), Some(b'"') | Some(b'\\')) => j += 2,
            b'"' => break,
            _ => j += 1,
        }
    }
    j += 1;
    if b.get(j) == Some(&b'i') {
        j += 1;
    }
    Ok(j)
}

/// The end of the regex literal starting at `i` (with its flags); it may span lines only with
/// the `x` flag.
fn regex_end(src: &str, i: usize) -> Result<usize, GrammarError> {
    let (b, n) = (src.as_bytes(), src.len());
    let mut j = i + 1;
    let mut first_nl = None;
    loop {
        if j >= n {
            let end = first_nl.unwrap_or(n);
            return Err(err(src, i, end.max(i + 1), "unterminated regex literal"));
        }
        match b[j] {
            b'\\' if matches!(b.get(j + 1), Some(b'/') | Some(b'\\')) => j += 2,
            b'/' => break,
            b'\n' => {
                first_nl.get_or_insert(j);
                j += 1;
            }
            _ => j += 1,
        }
    }
    j += 1;
    while j < n && b"imslux".contains(&b[j]) {
        j += 1;
    }
    if let Some(nl) = first_nl {
        if !src[i..j].rsplit('/').next().unwrap_or("").contains('x') {
            return Err(err(src, i, nl, "unterminated regex literal (a regex may only span lines with the `x` flag)"));
        }
    }
    Ok(j)
}

/// The end of the JSON object after `%json` (whose name ends at `from`): blanks and newlines,
/// then `{` ... the matching `}`, strings with their escapes skipped.
fn json_body_end(src: &str, from: usize) -> Result<usize, GrammarError> {
    let b = src.as_bytes();
    let mut i = from;
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    if b.get(i) != Some(&b'{') {
        return Err(err(src, from.saturating_sub(5), from, "expected a JSON Schema object `{ ... }` after `%json`"));
    }
    let open = i;
    let mut depth = 0usize;
    let mut in_string = false;
    while i < b.len() {
        let c = b[i];
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match c {
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(i + 1);
                    }
                }
                _ => {}
            }
        }
        i += 1;
    }
    Err(err(src, open, open + 1, "unclosed `%json` object: expected `}` before the end of input"))
}
