//! Diagnostics with line:column and a caret under the offending source.

use std::fmt;

/// A byte range in the grammar source, for diagnostics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// Byte offset of the first byte.
    pub start: u32,
    /// Byte offset just past the last byte (exclusive).
    pub end: u32,
}

impl Span {
    /// The span of bytes `start..end`.
    pub fn new(start: usize, end: usize) -> Span {
        Span { start: start as u32, end: end as u32 }
    }
}

/// An error in a grammar source, located by byte span.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct GrammarError {
    /// What is wrong, without the location.
    pub message: String,
    /// 1-based line of the span's start; 0 for an error without a location.
    pub line: usize,
    /// 1-based column of the span's start, in characters; 0 (as is `line`) for an error without a
    /// location ([`GrammarError::global`]).
    pub column: usize,
    /// The source line and a caret line under it, ready to print.
    pub snippet: String,
    /// The offending bytes of the source (empty for an error without a location).
    pub span: Span,
}

impl GrammarError {
    /// Locate `span` in `source` and build the message.
    pub fn at(source: &str, span: Span, message: impl Into<String>) -> GrammarError {
        let start = (span.start as usize).min(source.len());
        let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = source[start..].find('\n').map_or(source.len(), |i| start + i);
        let line = source[..start].matches('\n').count() + 1;
        let column = source[line_start..start].chars().count() + 1;
        let text = &source[line_start..line_end];
        let end = (span.end as usize).clamp(start, line_end);
        let width = source[start..end].chars().count().max(1);
        let gutter = line.to_string();
        let pad = " ".repeat(gutter.len());
        let snippet = format!("{pad} |\n{gutter} | {text}\n{pad} | {}{}", " ".repeat(column - 1), "^".repeat(width));
        GrammarError { message: message.into(), line, column, snippet, span }
    }

    /// An error without a useful location (whole-grammar problems).
    pub fn global(message: impl Into<String>) -> GrammarError {
        GrammarError { message: message.into(), line: 0, column: 0, snippet: String::new(), span: Span::default() }
    }
}

impl GrammarError {
    /// The one-line form tools print: `file:line:col: message` and the snippet under it, or
    /// `file: message` for an error without a location.
    pub fn located(&self, file: &dyn fmt::Display) -> String {
        if self.line == 0 {
            format!("{file}: {}", self.message)
        } else {
            format!("{file}:{}:{}: {}\n{}", self.line, self.column, self.message, self.snippet)
        }
    }
}

impl fmt::Display for GrammarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            return write!(f, "error: {}", self.message);
        }
        write!(f, "error: {}\n --> {}:{}\n{}", self.message, self.line, self.column, self.snippet)
    }
}

/// A located warning: the grammar compiles, but may not mean what its author expects. The
/// location fields are those of [`GrammarError`]; only the severity differs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning(pub GrammarError);

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = &self.0;
        if e.line == 0 {
            return write!(f, "warning: {}", e.message);
        }
        write!(f, "warning: {}\n --> {}:{}\n{}", e.message, e.line, e.column, e.snippet)
    }
}
