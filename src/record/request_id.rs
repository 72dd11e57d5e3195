//! Part of the record (… → extract → **record** → collector …): the id a request carries to
//! the server, `x-request-id: <run id>-<request id>`, so records join with the server's logs
//! and traces (vLLM, SGLang and most gateways log it, and echo it back where asked), and the
//! id the server echoed. Both are `Copy`-sized or recycled: a worker writes them with no
//! allocation and shares nothing with other cores. Pure values: no I/O, no clock, no randomness
//! (the run draws its id; see `run`).

pub use crate::plan::run_id::{RunId, HEADER};
use serde::{Deserialize, Serialize};

/// Longest echoed id kept, bytes; the rest of a longer one is cut (`Record::server_request_id`).
pub const MAX_ECHO_BYTES: usize = 128;

/// What one request sent as `x-request-id`: `<run>-<n>`, `n` its arrival index (the record's
/// `id`). `requests.jsonl` writes it as that string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RequestId {
    /// The run's id.
    pub run: RunId,
    /// The request's arrival index (`Record::id`).
    pub n: u64,
}

impl RequestId {
    /// Appends `<run>-<n>` to `out`.
    #[inline]
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.run.as_str().as_bytes());
        out.push(b'-');
        super::jsonl::push_u64(out, self.n);
    }

    /// `value` is exactly this id (what a server that echoes it sends back).
    pub fn is(&self, value: &[u8]) -> bool {
        let run = self.run.as_str().as_bytes();
        value.len() > run.len()
            && value.starts_with(run)
            && value[run.len()] == b'-'
            && parse_decimal(&value[run.len() + 1..]) == Some(self.n)
    }

    /// The inverse of `write`: `<run>-<n>`, split at the last `-`.
    pub fn parse(s: &str) -> Result<RequestId, String> {
        let (run, n) = s
            .rsplit_once('-')
            .ok_or_else(|| format!("a request id is `<run>-<n>`; `{s}` has no `-`"))?;
        let n = parse_decimal(n.as_bytes())
            .ok_or_else(|| format!("`{s}` does not end in a request number"))?;
        Ok(RequestId {
            run: RunId::new(run)?,
            n,
        })
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.run, self.n)
    }
}

impl Serialize for RequestId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        RequestId::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Replaces `dst` by the echoed header `value`, cut to `MAX_ECHO_BYTES`, each byte that is not
/// visible ASCII (or is `"` or `\`) as `?`: a header value is visible ASCII by RFC 9110, and
/// this way the log writes it without escaping. No allocation once `dst` has grown.
pub fn keep_echo(dst: &mut Vec<u8>, value: &[u8]) {
    dst.clear();
    dst.extend(value.iter().take(MAX_ECHO_BYTES).map(|&b| match b {
        b'"' | b'\\' => b'?',
        0x21..=0x7e => b,
        _ => b'?',
    }));
}

/// Plain decimal digits (no sign, no leading `+`, at most `u64::MAX`).
fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 20 {
        return None;
    }
    digits.iter().try_fold(0u64, |acc, &b| match b {
        b'0'..=b'9' => acc.checked_mul(10)?.checked_add(u64::from(b - b'0')),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_id_writes_parses_and_recognizes_its_echo() {
        let id = RequestId {
            run: RunId::new("run-7").unwrap(),
            n: 18_446_744_073_709_551_615,
        };
        let mut out = b"x".to_vec();
        id.write(&mut out);
        assert_eq!(out, b"xrun-7-18446744073709551615");
        assert_eq!(id.to_string().as_bytes(), &out[1..]);
        assert_eq!(RequestId::parse(&id.to_string()), Ok(id));
        assert!(id.is(&out[1..]));
        assert!(!id.is(b"run-7-18446744073709551614"));
        assert!(!id.is(b"run-7-"));
        assert!(!id.is(b"run-8-18446744073709551615"));
        assert!(!id.is(b"run-7-184467440737095516150"));
        assert!(!id.is(b"run-7"));
        assert!(RequestId::parse("run-7-").is_err());
        assert!(RequestId::parse("nodash").is_err());
        assert!(RequestId::parse("run-99999999999999999999").is_err());
        let small = RequestId {
            run: RunId::new("r").unwrap(),
            n: 0,
        };
        assert_eq!(small.to_string(), "r-0");
        assert_eq!(
            serde_json::to_string(&small).unwrap(),
            "\"r-0\"",
            "a JSON string"
        );
        assert_eq!(serde_json::from_str::<RequestId>("\"r-0\"").unwrap(), small);
    }

    #[test]
    fn an_echo_is_bounded_and_needs_no_escaping() {
        let mut kept = Vec::with_capacity(4);
        keep_echo(&mut kept, b"ab\"c\\d\x01\xff e");
        assert_eq!(kept, b"ab?c?d???e");
        keep_echo(&mut kept, &[b'z'; MAX_ECHO_BYTES + 50]);
        assert_eq!(kept.len(), MAX_ECHO_BYTES);
        keep_echo(&mut kept, b"");
        assert!(kept.is_empty());
    }
}
