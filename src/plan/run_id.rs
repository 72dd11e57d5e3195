//! Part of the plan (a leaf: it imports nothing of the flow): the run's id, `--run-id` or drawn
//! when the run starts, and the header that carries it with every request
//! (`x-request-id: <run id>-<request id>`, see `record::request_id`). Held inline (no
//! allocation), so every record can carry it.

use std::num::NonZeroU8;

/// The request header's name, as sent (HTTP header names are case-insensitive).
pub const HEADER: &str = "x-request-id";

/// Longest run id, bytes: kept inline in every record.
pub const MAX_RUN_ID_BYTES: usize = 23;
/// A run's id: 1 to 23 bytes of `[A-Za-z0-9._-]`, held inline.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RunId {
    len: NonZeroU8,
    bytes: [u8; MAX_RUN_ID_BYTES],
}

impl RunId {
    /// Checks `s`; the error says what is wrong with it.
    pub fn new(s: &str) -> Result<RunId, String> {
        if s.is_empty() || s.len() > MAX_RUN_ID_BYTES {
            return Err(format!(
                "a run id is 1 to {MAX_RUN_ID_BYTES} bytes; `{s}` has {}",
                s.len()
            ));
        }
        if let Some(c) = s
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        {
            return Err(format!(
                "a run id is letters, digits, `.`, `_` and `-` (it goes into an HTTP header); \
                 `{s}` has `{c}`"
            ));
        }
        let mut bytes = [0; MAX_RUN_ID_BYTES];
        bytes[..s.len()].copy_from_slice(s.as_bytes());
        let len = NonZeroU8::new(s.len() as u8).expect("checked non-empty above");
        Ok(RunId { len, bytes })
    }

    /// The id a run draws for itself from 32 random bits: 8 lowercase hex digits.
    pub fn from_bits(bits: u32) -> RunId {
        RunId::new(&format!("{bits:08x}")).expect("8 hex digits are a run id")
    }

    /// Its text.
    pub fn as_str(&self) -> &str {
        // Only ASCII was ever copied in.
        std::str::from_utf8(&self.bytes[..usize::from(self.len.get())]).unwrap_or("")
    }
}

impl std::fmt::Debug for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RunId({})", self.as_str())
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_checked_and_kept_inline() {
        assert_eq!(RunId::new("exp-42.b_c").unwrap().as_str(), "exp-42.b_c");
        assert_eq!(RunId::from_bits(0xab).as_str(), "000000ab");
        assert!(RunId::new("").is_err());
        assert!(RunId::new(&"x".repeat(MAX_RUN_ID_BYTES)).is_ok());
        assert!(RunId::new(&"x".repeat(MAX_RUN_ID_BYTES + 1)).is_err());
        let err = RunId::new("a b").unwrap_err();
        assert!(err.contains("`a b` has ` `"), "{err}");
        assert!(RunId::new("a\r\nx: y").is_err());
    }
}
