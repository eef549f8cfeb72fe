//! An independent, hand-written JSON prefix checker (RFC 8259, UTF-8), used as a second
//! oracle for the JSON grammar: it shares no code with the lexer, the parser or the
//! grammar front-end.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ctx {
    Obj,
    Arr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Num {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    E,
    ESign,
    Exp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// A value must come (`first`: also `]` allowed, right after `[`).
    Value {
        first_in_array: bool,
    },
    /// Right after `{`: a key or `}`.
    KeyOrEnd,
    Key,
    Colon,
    After,
    Str {
        key: bool,
        utf8_left: u8,
        lo: u8,
        hi: u8,
    },
    Escape {
        key: bool,
    },
    Hex {
        key: bool,
        left: u8,
    },
    Number(Num),
    Literal {
        word: &'static [u8],
        at: u8,
    },
    Failed,
}

/// Streaming JSON checker.
#[derive(Clone, Debug)]
pub struct JsonCheck {
    stack: Vec<Ctx>,
    mode: Mode,
}

impl Default for JsonCheck {
    fn default() -> Self {
        JsonCheck { stack: Vec::new(), mode: Mode::Value { first_in_array: false } }
    }
}

fn ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

impl JsonCheck {
    pub fn failed(&self) -> bool {
        self.mode == Mode::Failed
    }

    /// Is the input so far a complete JSON text?
    pub fn complete(&self) -> bool {
        self.stack.is_empty()
            && match self.mode {
                Mode::After => true,
                Mode::Number(n) => matches!(n, Num::Zero | Num::Int | Num::Frac | Num::Exp),
                Mode::Literal { word, at } => at as usize == word.len(),
                _ => false,
            }
    }

    fn close_value(&mut self) {
        self.mode = Mode::After;
    }

    fn start_value(&mut self, b: u8) -> bool {
        self.mode = match b {
            b'{' => {
                self.stack.push(Ctx::Obj);
                Mode::KeyOrEnd
            }
            b'[' => {
                self.stack.push(Ctx::Arr);
                Mode::Value { first_in_array: true }
            }
            b'"' => Mode::Str { key: false, utf8_left: 0, lo: 0, hi: 0 },
            b'-' => Mode::Number(Num::Minus),
            b'0' => Mode::Number(Num::Zero),
            b'1'..=b'9' => Mode::Number(Num::Int),
            b't' => Mode::Literal { word: b"true", at: 1 },
            b'f' => Mode::Literal { word: b"false", at: 1 },
            b'n' => Mode::Literal { word: b"null", at: 1 },
            _ => return false,
        };
        true
    }

    pub fn push(&mut self, b: u8) {
        if !self.step(b) {
            self.mode = Mode::Failed;
        }
    }

    pub fn push_all(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.push(b);
        }
    }

    fn step(&mut self, b: u8) -> bool {
        match self.mode {
            Mode::Failed => false,
            Mode::Value { first_in_array } => {
                if ws(b) {
                    return true;
                }
                if first_in_array && b == b']' {
                    self.stack.pop();
                    self.close_value();
                    return true;
                }
                self.start_value(b)
            }
            Mode::KeyOrEnd | Mode::Key => {
                if ws(b) {
                    return true;
                }
                if self.mode == Mode::KeyOrEnd && b == b'}' {
                    self.stack.pop();
                    self.close_value();
                    return true;
                }
                if b == b'"' {
                    self.mode = Mode::Str { key: true, utf8_left: 0, lo: 0, hi: 0 };
                    return true;
                }
                false
            }
            Mode::Colon => {
                if ws(b) {
                    return true;
                }
                if b == b':' {
                    self.mode = Mode::Value { first_in_array: false };
                    return true;
                }
                false
            }
            Mode::After => {
                if ws(b) {
                    return true;
                }
                match (self.stack.last(), b) {
                    (Some(Ctx::Obj), b',') => self.mode = Mode::Key,
                    (Some(Ctx::Obj), b'}') | (Some(Ctx::Arr), b']') => {
                        self.stack.pop();
                        self.mode = Mode::After;
                    }
                    (Some(Ctx::Arr), b',') => self.mode = Mode::Value { first_in_array: false },
                    _ => return false,
                }
                true
            }
            Mode::Str { key, utf8_left, lo, hi } => {
                if utf8_left > 0 {
                    if b < lo || b > hi {
                        return false;
                    }
                    self.mode = Mode::Str { key, utf8_left: utf8_left - 1, lo: 0x80, hi: 0xBF };
                    return true;
                }
                let (n, lo, hi) = match b {
                    b'"' => {
                        self.mode = if key { Mode::Colon } else { Mode::After };
                        return true;
                    }
                    b'\\' => {
                        self.mode = Mode::Escape { key };
                        return true;
                    }
                    0x00..=0x1F => return false,
                    0x20..=0x7F => return true,
                    0xC2..=0xDF => (1, 0x80, 0xBF),
                    0xE0 => (2, 0xA0, 0xBF),
                    0xE1..=0xEC | 0xEE..=0xEF => (2, 0x80, 0xBF),
                    0xED => (2, 0x80, 0x9F),
                    0xF0 => (3, 0x90, 0xBF),
                    0xF1..=0xF3 => (3, 0x80, 0xBF),
                    0xF4 => (3, 0x80, 0x8F),
                    _ => return false,
                };
                self.mode = Mode::Str { key, utf8_left: n, lo, hi };
                true
            }
            Mode::Escape { key } => {
                self.mode = match b {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                        Mode::Str { key, utf8_left: 0, lo: 0, hi: 0 }
                    }
                    b'u' => Mode::Hex { key, left: 4 },
                    _ => return false,
                };
                true
            }
            Mode::Hex { key, left } => {
                if !b.is_ascii_hexdigit() {
                    return false;
                }
                self.mode = if left == 1 {
                    Mode::Str { key, utf8_left: 0, lo: 0, hi: 0 }
                } else {
                    Mode::Hex { key, left: left - 1 }
                };
                true
            }
            Mode::Number(n) => {
                let next = match (n, b) {
                    (Num::Minus, b'0') => Some(Num::Zero),
                    (Num::Minus, b'1'..=b'9') => Some(Num::Int),
                    (Num::Int, b'0'..=b'9') => Some(Num::Int),
                    (Num::Zero | Num::Int, b'.') => Some(Num::Dot),
                    (Num::Dot | Num::Frac, b'0'..=b'9') => Some(Num::Frac),
                    (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Some(Num::E),
                    (Num::E, b'+' | b'-') => Some(Num::ESign),
                    (Num::E | Num::ESign | Num::Exp, b'0'..=b'9') => Some(Num::Exp),
                    _ => None,
                };
                match next {
                    Some(n2) => {
                        self.mode = Mode::Number(n2);
                        true
                    }
                    None if matches!(n, Num::Zero | Num::Int | Num::Frac | Num::Exp) => {
                        self.mode = Mode::After;
                        self.step(b)
                    }
                    None => false,
                }
            }
            Mode::Literal { word, at } => {
                if (at as usize) < word.len() {
                    if word[at as usize] != b {
                        return false;
                    }
                    self.mode = Mode::Literal { word, at: at + 1 };
                    true
                } else {
                    self.mode = Mode::After;
                    self.step(b)
                }
            }
        }
    }
}

/// Is `bytes` a prefix of some JSON text?
pub fn viable_prefix(bytes: &[u8]) -> bool {
    let mut c = JsonCheck::default();
    c.push_all(bytes);
    !c.failed()
}

/// The index of the first byte after which `bytes` is no longer a JSON prefix.
pub fn first_bad_byte(bytes: &[u8]) -> Option<usize> {
    let mut c = JsonCheck::default();
    for (i, &b) in bytes.iter().enumerate() {
        c.push(b);
        if c.failed() {
            return Some(i);
        }
    }
    None
}
