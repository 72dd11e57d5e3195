//! Part of stage 5 (worker → http → sse → **extract** → record): reads a pooling answer
//! (`/v1/embeddings`, `/v1/rerank`, `/v1/score`, TEI's `/rerank`) as its decoded body slices
//! arrive, cut anywhere, without gathering the body and without materialising a float. A
//! pooling answer can be large (8 inputs x 1,024 floats is ~170 KB of JSON), and all a
//! record needs of it is how many items it held, how long each vector was, its `usage`,
//! whether it was an error or another API's answer, and the simulator's `ringbench_ns` stamp.
//! A float vector's numbers are read in runs (`vector_run`: a number's grammar checked with
//! eight digits a step), not byte by byte.
//!
//! The scanner is a byte-level JSON state machine: it tracks depth (at most `MAX_DEPTH`),
//! strings and their escapes, numbers and literals, so invalid JSON is malformed at any cut,
//! and gives each open container a role (the root object, the items array, one item, the
//! usage object, one vector). It may not allocate (every buffer is a fixed array: keys are
//! compared from a `KEY_BYTES` buffer), do I/O, or keep a byte it has scanned.

use super::{EventInfo, ExtractError, Usage};
use crate::plan::Endpoint;

/// Containers nested deeper than this make the body malformed (a pooling answer is 4 deep).
const MAX_DEPTH: usize = 64;

/// Keys longer than this are none of the keys the scanner looks for.
const KEY_BYTES: usize = 16;

/// What an open container is to the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Nothing the answer is read for.
    Other,
    /// The root object.
    Root,
    /// The items array: `data`, `results`, or TEI's root array.
    Items,
    /// One item of the items array.
    Item,
    /// The root's `usage` object.
    Usage,
    /// One embedding's array of numbers.
    Vector,
}

/// A key the scanner acts on, in the container it was met in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Other,
    /// The root's items key (`data` or `results`, by endpoint).
    Items,
    Usage,
    Error,
    /// An item's `embedding`.
    Embedding,
    /// Usage's `prompt_tokens`.
    PromptTokens,
    /// Usage's `total_tokens`.
    TotalTokens,
    /// The root's `ringbench_ns`: the simulator's write stamp.
    Stamp,
}

/// Where a number is in its grammar (RFC 8259 §6).
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

impl Num {
    /// The number may end here.
    fn complete(self) -> bool {
        matches!(self, Num::Zero | Num::Int | Num::Frac | Num::Exp)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Before the root value.
    Start,
    /// A value must come (after `:`, or `,` in an array).
    Value,
    /// After `[`: a value or `]`.
    ValueOrClose,
    /// After `{`: a key or `}`.
    KeyOrClose,
    /// After `,` in an object: a key.
    Key,
    /// After a key: `:`.
    Colon,
    /// After a value in a container: `,` or its close.
    CommaOrClose,
    /// After the root value: white space only.
    End,
    /// In a string (a key's when `key`).
    Str {
        key: bool,
    },
    /// After a backslash in a string.
    Escape {
        key: bool,
    },
    /// In a `\u` escape, `left` hex digits to go.
    Unicode {
        key: bool,
        left: u8,
    },
    Number(Num),
    /// In `true`, `false` or `null`, `at` bytes matched.
    Literal {
        word: &'static [u8],
        at: u8,
    },
    /// Not JSON; scanning stopped.
    Failed,
}

/// Incremental reader of one pooling answer; `reset` before each body. Fixed size, no heap.
#[derive(Clone, Debug)]
pub struct PooledScanner {
    endpoint: Endpoint,
    state: State,
    roles: [Role; MAX_DEPTH],
    /// Bit `d` set: the container at depth `d` is an array.
    arrays: u64,
    depth: usize,
    key_buf: [u8; KEY_BYTES],
    key_len: usize,
    /// The key just read (for the value that follows).
    key: Key,
    /// The key of the number being read, if it is a usage count.
    num_key: Key,
    num: u64,
    /// Base64 characters (padding left out) of the embedding string being read.
    b64_chars: Option<u64>,
    /// Numbers in the vector being read.
    vector_len: u32,
    /// The first vector's length; later ones must match it.
    first_len: Option<u32>,
    unequal: bool,
    items: u32,
    found_items: bool,
    usage_seen: bool,
    prompt_tokens: Option<u32>,
    total_tokens: Option<u32>,
    stamp_ns: Option<u64>,
    error: bool,
}

impl PooledScanner {
    /// A scanner for the answers of `endpoint` (which key holds the items follows from it:
    /// `data` for embeddings and score, `results` for rerank, the root array for TEI).
    pub fn new(endpoint: Endpoint) -> Self {
        PooledScanner {
            endpoint,
            state: State::Start,
            roles: [Role::Other; MAX_DEPTH],
            arrays: 0,
            depth: 0,
            key_buf: [0; KEY_BYTES],
            key_len: 0,
            key: Key::Other,
            num_key: Key::Other,
            num: 0,
            b64_chars: None,
            vector_len: 0,
            first_len: None,
            unequal: false,
            items: 0,
            found_items: false,
            usage_seen: false,
            prompt_tokens: None,
            total_tokens: None,
            stamp_ns: None,
            error: false,
        }
    }

    /// Forget the previous body.
    pub fn reset(&mut self) {
        *self = PooledScanner::new(self.endpoint);
    }

    /// The next decoded slice of the body, cut anywhere. Invalid JSON stops the scan; the
    /// error comes from `finish`, so it does not depend on where the body was cut.
    pub fn push(&mut self, data: &[u8]) {
        let mut i = 0;
        while i < data.len() {
            let used = match self.state {
                State::Failed => return,
                State::Str { key } => self.string_run(&data[i..], key),
                // Most of a float answer's bytes: whole numbers and their commas in a run.
                State::Value | State::ValueOrClose | State::CommaOrClose
                    if self.top() == Role::Vector =>
                {
                    self.vector_run(&data[i..])
                }
                // A number cut by the slice's end: its fraction's or exponent's digits change
                // no state.
                State::Number(Num::Frac | Num::Exp) => digits(&data[i..]),
                _ => 0,
            };
            if used == 0 {
                self.byte(data[i]);
                i += 1;
            }
            i += used;
        }
    }

    /// Whole numbers of the vector being read and the commas between them, while each
    /// number's end is in `data`: returns the bytes used (0: the byte-wise path goes on, for
    /// white space, the close, a number cut by the slice's end, or anything invalid, which
    /// it fails on exactly as it would have here).
    fn vector_run(&mut self, data: &[u8]) -> usize {
        let mut at = 0;
        if self.state == State::CommaOrClose {
            if data.first() != Some(&b',') {
                return 0;
            }
            at = 1;
            self.state = State::Value;
        }
        while let Some(len) = number_len(&data[at..]) {
            self.vector_len = self.vector_len.saturating_add(1);
            at += len;
            self.state = State::CommaOrClose;
            // A number's end is in `data`: `at` is in bounds.
            if data[at] != b',' {
                break;
            }
            at += 1;
            self.state = State::Value;
        }
        at
    }

    /// The body ended: what it said, or why it is malformed.
    pub fn finish(&mut self) -> Result<EventInfo, ExtractError> {
        if let State::Number(n) = self.state {
            if n.complete() && self.depth == 0 {
                self.state = State::End;
            }
        }
        if self.state != State::End {
            return Err(ExtractError::BadJson);
        }
        if self.unequal {
            return Err(ExtractError::UnequalVectors);
        }
        let usage = self.usage_seen.then_some(Usage {
            prompt_tokens: self.prompt_tokens.or(self.total_tokens),
            completion_tokens: None,
            cached_tokens: None,
        });
        Ok(EventInfo {
            items: self.items,
            vector_len: self.first_len.unwrap_or(0),
            usage,
            error: self.error,
            wrong_api: !self.found_items && !self.error,
            server_mono_ns: self.stamp_ns,
            ..EventInfo::default()
        })
    }

    /// Bytes of a string up to its closing quote or a backslash; returns the bytes used.
    fn string_run(&mut self, data: &[u8], key: bool) -> usize {
        let end = memchr::memchr2(b'"', b'\\', data).unwrap_or(data.len());
        let run = &data[..end];
        // Branch-free folds over the run (they vectorize): a control character is invalid
        // in a string; a base64 vector's padding is no character of its floats.
        let control = match (key, self.b64_chars.as_mut()) {
            (false, Some(n)) => {
                let (control, pad) = run.iter().fold((false, 0), |(c, p), &b| {
                    (c | (b < 0x20), p + u64::from(b == b'='))
                });
                *n += run.len() as u64 - pad;
                control
            }
            _ => run.iter().fold(false, |c, &b| c | (b < 0x20)),
        };
        if control {
            self.state = State::Failed;
            return data.len();
        }
        if key {
            let end = self.key_len.saturating_add(run.len());
            if let Some(dst) = self.key_buf.get_mut(self.key_len..end) {
                dst.copy_from_slice(run);
            }
            self.key_len = end;
        }
        match data.get(end) {
            None => data.len(),
            Some(b'"') => {
                self.end_string(key);
                end + 1
            }
            Some(_) => {
                self.state = State::Escape { key };
                end + 1
            }
        }
    }

    fn end_string(&mut self, key: bool) {
        if key {
            self.key = self.classify_key();
            self.state = State::Colon;
            return;
        }
        if let Some(chars) = self.b64_chars.take() {
            // 6 bits a character, 4 bytes a float.
            let floats = chars * 6 / 8 / 4;
            self.end_vector(u32::try_from(floats).unwrap_or(u32::MAX));
        }
        self.end_value();
    }

    fn classify_key(&self) -> Key {
        if self.key_len > KEY_BYTES {
            return Key::Other;
        }
        let k = &self.key_buf[..self.key_len];
        match (self.top(), k) {
            (Role::Root, b"data")
                if matches!(self.endpoint, Endpoint::Embeddings | Endpoint::Score) =>
            {
                Key::Items
            }
            (Role::Root, b"results") if self.endpoint == Endpoint::Rerank => Key::Items,
            (Role::Root, b"usage") => Key::Usage,
            (Role::Root, b"error") => Key::Error,
            (Role::Root, b"ringbench_ns") => Key::Stamp,
            (Role::Item, b"embedding") => Key::Embedding,
            (Role::Usage, b"prompt_tokens") => Key::PromptTokens,
            (Role::Usage, b"total_tokens") => Key::TotalTokens,
            _ => Key::Other,
        }
    }

    /// The role of the innermost open container (`Other` at the root's level).
    fn top(&self) -> Role {
        match self.depth {
            0 => Role::Other,
            d => self.roles[d - 1],
        }
    }

    fn top_is_array(&self) -> bool {
        self.depth > 0 && self.arrays & (1 << (self.depth - 1)) != 0
    }

    fn byte(&mut self, b: u8) {
        let ws = matches!(b, b' ' | b'\t' | b'\n' | b'\r');
        match self.state {
            State::Start | State::Value if ws => {}
            State::Start | State::Value => self.value_start(b),
            State::ValueOrClose if ws => {}
            State::ValueOrClose if b == b']' => self.close(b),
            State::ValueOrClose => self.value_start(b),
            State::KeyOrClose | State::Key if ws => {}
            State::KeyOrClose if b == b'}' => self.close(b),
            State::KeyOrClose | State::Key if b == b'"' => {
                self.key_len = 0;
                self.state = State::Str { key: true };
            }
            State::Colon if ws => {}
            State::Colon if b == b':' => self.state = State::Value,
            State::CommaOrClose if ws => {}
            State::CommaOrClose if b == b',' => {
                self.state = match self.top_is_array() {
                    true => State::Value,
                    false => State::Key,
                };
            }
            State::CommaOrClose if b == b']' || b == b'}' => self.close(b),
            State::End if ws => {}
            State::Escape { key } => self.escape(b, key),
            State::Unicode { key, left } if b.is_ascii_hexdigit() => {
                self.state = match left {
                    1 => State::Str { key },
                    _ => State::Unicode {
                        key,
                        left: left - 1,
                    },
                };
            }
            State::Number(n) => self.number(n, b),
            State::Literal { word, at } if word.get(usize::from(at)) == Some(&b) => {
                let at = at + 1;
                if usize::from(at) == word.len() {
                    self.end_value();
                } else {
                    self.state = State::Literal { word, at };
                }
            }
            _ => self.state = State::Failed,
        }
    }

    fn escape(&mut self, b: u8, key: bool) {
        // An escaped character is one of the string's characters (a key's escapes make
        // it none of the keys looked for).
        if key {
            self.key_len = KEY_BYTES + 1;
        } else if let Some(n) = self.b64_chars.as_mut() {
            *n += 1;
        }
        self.state = match b {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => State::Str { key },
            b'u' => State::Unicode { key, left: 4 },
            _ => State::Failed,
        };
    }

    fn number(&mut self, n: Num, b: u8) {
        let next = match (n, b) {
            (Num::Minus, b'0') => Some(Num::Zero),
            (Num::Minus | Num::Int, b'1'..=b'9') | (Num::Int, b'0') => Some(Num::Int),
            (Num::Zero | Num::Int, b'.') => Some(Num::Dot),
            (Num::Dot | Num::Frac, b'0'..=b'9') => Some(Num::Frac),
            (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Some(Num::E),
            (Num::E, b'+' | b'-') => Some(Num::ESign),
            (Num::E | Num::ESign | Num::Exp, b'0'..=b'9') => Some(Num::Exp),
            _ => None,
        };
        match next {
            Some(next) => {
                if next == Num::Int {
                    self.num = self
                        .num
                        .saturating_mul(10)
                        .saturating_add(u64::from(b - b'0'));
                } else if next != Num::Zero {
                    // Not a plain count.
                    self.num_key = Key::Other;
                }
                self.state = State::Number(next);
            }
            None if n.complete() => {
                self.end_number();
                self.end_value();
                // The byte that ended the number is the container's next.
                self.byte(b);
            }
            None => self.state = State::Failed,
        }
    }

    fn end_number(&mut self) {
        let n = u32::try_from(self.num).ok();
        match self.num_key {
            Key::PromptTokens => self.prompt_tokens = n,
            Key::TotalTokens => self.total_tokens = n,
            // Saturated: too large to be a stamp.
            Key::Stamp => self.stamp_ns = (self.num != u64::MAX).then_some(self.num),
            _ => {}
        }
        self.num_key = Key::Other;
    }

    fn value_start(&mut self, b: u8) {
        let parent = self.top();
        let key = std::mem::replace(&mut self.key, Key::Other);
        match parent {
            Role::Items => self.items = self.items.saturating_add(1),
            Role::Vector => self.vector_len = self.vector_len.saturating_add(1),
            _ => {}
        }
        if (parent, key) == (Role::Root, Key::Error) && b != b'n' {
            self.error = true;
        }
        let child = match (parent, key, b) {
            (_, _, b'{') if self.depth == 0 => Role::Root,
            (_, _, b'[') if self.depth == 0 && self.endpoint == Endpoint::TeiRerank => {
                self.found_items = true;
                Role::Items
            }
            (Role::Root, Key::Items, b'[') => {
                self.found_items = true;
                Role::Items
            }
            (Role::Root, Key::Usage, b'{') => {
                self.usage_seen = true;
                Role::Usage
            }
            (Role::Items, _, b'{') => Role::Item,
            (Role::Item, Key::Embedding, b'[') => {
                self.vector_len = 0;
                Role::Vector
            }
            _ => Role::Other,
        };
        match b {
            b'{' | b'[' => self.open(child, b == b'['),
            b'"' => {
                if (parent, key) == (Role::Item, Key::Embedding) {
                    self.b64_chars = Some(0);
                }
                self.state = State::Str { key: false };
            }
            b'-' | b'0'..=b'9' => {
                self.num = 0;
                // A count is a usage member's (or the stamp's) non-negative integer.
                self.num_key = match (parent, b) {
                    (Role::Usage | Role::Root, b'0'..=b'9') => key,
                    _ => Key::Other,
                };
                self.state = State::Number(Num::Minus);
                if b != b'-' {
                    self.number(Num::Minus, b);
                }
            }
            b't' => {
                self.state = State::Literal {
                    word: b"true",
                    at: 1,
                }
            }
            b'f' => {
                self.state = State::Literal {
                    word: b"false",
                    at: 1,
                }
            }
            b'n' => {
                self.state = State::Literal {
                    word: b"null",
                    at: 1,
                }
            }
            _ => self.state = State::Failed,
        }
    }

    fn open(&mut self, role: Role, array: bool) {
        if self.depth == MAX_DEPTH {
            self.state = State::Failed;
            return;
        }
        self.roles[self.depth] = role;
        let bit = 1u64 << self.depth;
        self.arrays = if array {
            self.arrays | bit
        } else {
            self.arrays & !bit
        };
        self.depth += 1;
        self.state = match array {
            true => State::ValueOrClose,
            false => State::KeyOrClose,
        };
    }

    fn close(&mut self, b: u8) {
        if (b == b']') != self.top_is_array() || self.depth == 0 {
            self.state = State::Failed;
            return;
        }
        if self.top() == Role::Vector {
            self.end_vector(self.vector_len);
        }
        self.depth -= 1;
        self.end_value();
    }

    fn end_vector(&mut self, len: u32) {
        match self.first_len {
            None => self.first_len = Some(len),
            Some(first) => self.unequal |= first != len,
        }
    }

    fn end_value(&mut self) {
        self.state = match self.depth {
            0 => State::End,
            _ => State::CommaOrClose,
        };
    }
}

/// Leading ASCII digits of `s`, eight at a time.
fn digits(s: &[u8]) -> usize {
    const ZEROS: u64 = u64::from_le_bytes([b'0'; 8]);
    const HIGH: u64 = u64::from_le_bytes([0x80; 8]);
    const OVER_NINE: u64 = u64::from_le_bytes([0x76; 8]);
    let mut n = 0;
    while let Some(word) = s.get(n..n + 8) {
        let x = u64::from_le_bytes(word.try_into().unwrap_or_default()) ^ ZEROS;
        // A byte's high bit: it was not a digit (x > 9 once '0' is taken away). A carry
        // comes only out of such a byte, so the lowest one set is the first non-digit.
        let other = (x.wrapping_add(OVER_NINE) | x) & HIGH;
        if other != 0 {
            return n + other.trailing_zeros() as usize / 8;
        }
        n += 8;
    }
    n + s[n..].iter().take_while(|b| b.is_ascii_digit()).count()
}

/// The length of the JSON number (RFC 8259 §6) that `s` starts with, if it is one and the
/// byte after it is in `s` (a number cut by the slice's end may go on in the next).
fn number_len(s: &[u8]) -> Option<usize> {
    let mut at = usize::from(s.first() == Some(&b'-'));
    match s.get(at)? {
        b'0' => at += 1,
        b'1'..=b'9' => at += 1 + digits(&s[at + 1..]),
        _ => return None,
    }
    if s.get(at) == Some(&b'.') {
        let n = digits(&s[at + 1..]);
        if n == 0 {
            return None;
        }
        at += 1 + n;
    }
    if matches!(s.get(at), Some(b'e' | b'E')) {
        at += 1 + usize::from(matches!(s.get(at + 1), Some(b'+' | b'-')));
        let n = digits(s.get(at..)?);
        if n == 0 {
            return None;
        }
        at += n;
    }
    (at < s.len()).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_at(endpoint: Endpoint, body: &[u8], cut: usize) -> Result<EventInfo, ExtractError> {
        let mut s = PooledScanner::new(endpoint);
        s.push(&body[..cut]);
        s.push(&body[cut..]);
        s.finish()
    }

    /// The answer, checked to be the same at every two-way cut and byte by byte.
    fn scan(endpoint: Endpoint, body: &str) -> Result<EventInfo, ExtractError> {
        let body = body.as_bytes();
        let whole = scan_at(endpoint, body, 0);
        for cut in 1..=body.len() {
            assert_eq!(scan_at(endpoint, body, cut), whole, "cut at {cut}");
        }
        let mut s = PooledScanner::new(endpoint);
        body.chunks(1).for_each(|b| s.push(b));
        assert_eq!(s.finish(), whole, "byte by byte");
        whole
    }

    #[test]
    fn embeddings_count_items_vector_length_and_usage() {
        let e = scan(
            Endpoint::Embeddings,
            r#"{"object":"list","data":[{"embedding":[0.1,-2e-3,3],"index":0},
               {"index":1,"embedding":[1E+2, 0, -0.5]}],"usage":{"prompt_tokens":7,"total_tokens":9}}"#,
        )
        .unwrap();
        assert_eq!(
            (e.items, e.vector_len, e.error, e.wrong_api),
            (2, 3, false, false)
        );
        assert_eq!(e.usage.unwrap().prompt_tokens, Some(7));
        assert!(!e.carries_token());
        assert_eq!(e.server_mono_ns, None);
    }

    #[test]
    fn the_roots_stamp_is_the_server_time() {
        let body = r#"{"data":[{"embedding":[1,2.5e-7,-0.125]}],"ringbench_ns":123456789012}"#;
        let e = scan(Endpoint::Embeddings, body).unwrap();
        assert_eq!((e.vector_len, e.server_mono_ns), (3, Some(123_456_789_012)));
        for other in [
            r#"{"data":[],"ringbench_ns":1.5}"#,
            r#"{"data":[],"ringbench_ns":-1}"#,
            r#"{"data":[],"ringbench_ns":"7"}"#,
            r#"{"data":[{"ringbench_ns":7}]}"#,
            r#"{"data":[],"ringbench_ns":99999999999999999999999}"#,
        ] {
            assert_eq!(
                scan(Endpoint::Embeddings, other).unwrap().server_mono_ns,
                None,
                "{other}"
            );
        }
    }

    #[test]
    fn number_runs_agree_with_the_grammar() {
        // Each alone in a vector, cut everywhere (`scan`): valid ones count, others fail.
        for good in [
            "0",
            "-0",
            "7",
            "-12",
            "0.5",
            "-0.000001",
            "1e5",
            "1E+05",
            "-2.5e-10",
            "12345678901234567890.12345678901234567890",
        ] {
            let body = format!(r#"{{"data":[{{"embedding":[{good},{good}]}}]}}"#);
            assert_eq!(
                scan(Endpoint::Embeddings, &body).unwrap().vector_len,
                2,
                "{good}"
            );
        }
        for bad in [
            "01", "-", "+1", "1.", ".5", "1e", "1e+", "0x1", "1.5.5", "1-", "--1", "1ee5", "NaN",
            "1,",
        ] {
            let body = format!(r#"{{"data":[{{"embedding":[{bad},0]}}]}}"#);
            assert_eq!(
                scan(Endpoint::Embeddings, &body),
                Err(ExtractError::BadJson),
                "{bad}"
            );
        }
        assert_eq!(digits(b"0123456789012345x"), 16);
        assert_eq!(digits(b"99999999/"), 8);
        assert_eq!(digits(b"12:"), 2);
        assert_eq!(digits(b"\xff1"), 0);
    }

    #[test]
    fn base64_vectors_are_decoded_bytes_over_four() {
        // 16 bytes = 4 floats: 24 characters with 2 of padding; an escaped slash counts once.
        let e = scan(
            Endpoint::Embeddings,
            r#"{"data":[{"embedding":"AAAAAAAAAAAAAAAAAAAAAA=="},{"embedding":"AAAAAAAAAAAAAAAAAAAA\/A=="}],"usage":{"total_tokens":5}}"#,
        )
        .unwrap();
        assert_eq!((e.items, e.vector_len), (2, 4));
        assert_eq!(e.usage.unwrap().prompt_tokens, Some(5), "total when alone");
    }

    #[test]
    fn unequal_vectors_are_malformed() {
        let body = r#"{"data":[{"embedding":[1,2]},{"embedding":[1,2,3]}]}"#;
        assert_eq!(
            scan(Endpoint::Embeddings, body),
            Err(ExtractError::UnequalVectors)
        );
    }

    #[test]
    fn rerank_score_and_tei_items() {
        let rerank = r#"{"results":[{"index":0,"document":{"text":"a \"data\": ["},"relevance_score":0.3},{"index":1,"relevance_score":0.1}],"usage":{"prompt_tokens":61}}"#;
        let e = scan(Endpoint::Rerank, rerank).unwrap();
        assert_eq!((e.items, e.vector_len, e.wrong_api), (2, 0, false));
        assert_eq!(e.usage.unwrap().prompt_tokens, Some(61));
        let score = r#"{"data":[{"score":0.5},{"score":0.25},{"score":1}]}"#;
        assert_eq!(scan(Endpoint::Score, score).unwrap().items, 3);
        let tei = r#"[{"index":1,"score":0.9},{"index":0,"score":0.1}]"#;
        let e = scan(Endpoint::TeiRerank, tei).unwrap();
        assert_eq!((e.items, e.usage, e.wrong_api), (2, None, false));
        assert!(scan(Endpoint::TeiRerank, "[]").unwrap().items == 0);
    }

    #[test]
    fn other_shapes_are_wrong_api_and_errors_are_errors() {
        let chat = r#"{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":3}}"#;
        assert!(scan(Endpoint::Embeddings, chat).unwrap().wrong_api);
        assert!(
            scan(Endpoint::Rerank, r#"{"data":[{"score":1}]}"#)
                .unwrap()
                .wrong_api
        );
        assert!(
            scan(Endpoint::Embeddings, r#"[{"embedding":[1]}]"#)
                .unwrap()
                .wrong_api
        );
        assert!(
            scan(Endpoint::TeiRerank, r#"{"results":[]}"#)
                .unwrap()
                .wrong_api
        );
        assert!(scan(Endpoint::Score, "42").unwrap().wrong_api);
        let err = scan(Endpoint::Embeddings, r#"{"error":{"message":"x"}}"#).unwrap();
        assert!(err.error && !err.wrong_api);
        let null = scan(Endpoint::Embeddings, r#"{"error":null,"data":[]}"#).unwrap();
        assert!(!null.error && !null.wrong_api);
    }

    #[test]
    fn invalid_json_is_bad_json_at_every_cut() {
        for bad in [
            "",
            "{",
            r#"{"data":[1,]}"#,
            r#"{"data" [1]}"#,
            r#"{"data":[1}"#,
            r#"{"data":[01]}"#,
            r#"{"data":[-]}"#,
            r#"{"data":[1.]}"#,
            r#"{"data":[tru]}"#,
            r#"{"a":"\x"}"#,
            r#"{"a":"\u12g4"}"#,
            "{\"a\":\"\n\"}",
            r#"{"a":1} x"#,
            r#"{"a":1}}"#,
            r#"{,}"#,
            r#"{"a":1,}"#,
        ] {
            assert_eq!(
                scan(Endpoint::Embeddings, bad),
                Err(ExtractError::BadJson),
                "{bad:?}"
            );
        }
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert_eq!(scan(Endpoint::TeiRerank, &deep), Err(ExtractError::BadJson));
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(scan(Endpoint::TeiRerank, &ok).is_ok());
    }

    #[test]
    fn long_and_escaped_keys_are_other_keys() {
        let e = scan(
            Endpoint::Embeddings,
            r#"{"data_and_more_than_sixteen":[1],"d\u0061ta":[1],"data":[{"embedding":[1]}]}"#,
        )
        .unwrap();
        assert_eq!((e.items, e.vector_len), (1, 1));
        let big = scan(
            Endpoint::Embeddings,
            r#"{"data":[],"usage":{"prompt_tokens":99999999999,"total_tokens":1.5}}"#,
        )
        .unwrap();
        assert_eq!(big.usage.unwrap().prompt_tokens, None);
    }

    #[test]
    fn reset_reuses_it() {
        let mut s = PooledScanner::new(Endpoint::Score);
        s.push(b"{bad");
        assert!(s.finish().is_err());
        s.reset();
        s.push(br#"{"data":[{"score":1}]}"#);
        assert_eq!(s.finish().unwrap().items, 1);
    }
}
