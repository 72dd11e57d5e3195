//! Part of `scrape` (the server's side of a run): `server_metrics.jsonl`, one JSON object a
//! line per scrape — run-clock ns of its start and end, the URL, the phase, the round, whether
//! a boundary (`mark`) asked for it, and either the failure (`error`: kind and message) or the
//! page (`page`: engine, concept values, histogram buckets as `le` and cumulative `cum` with
//! `count` and `sum`, the raw series). It is `Scrape` serialized, so `ringbench report DIR` can
//! read the scrapes back and recompute the `server` block from the file alone. Lines are
//! bounded (`MAX_LINE_BYTES`: a page's raw series are left out of a line that would pass it);
//! so is reading. Nothing here prints.

use super::Scrape;
use std::io::{self, BufRead, Write};
use std::path::Path;

/// Longest line written or read (a page's raw series alone can be 256 × 2 KiB).
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// `scrape` as one line (with its newline) in `buf`, within `MAX_LINE_BYTES`: when the whole
/// page would not fit, its raw series are left out (and counted in `raw_dropped`).
pub fn format_line(scrape: &Scrape, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    serde_json::to_writer(&mut *buf, scrape)?;
    if buf.len() >= MAX_LINE_BYTES {
        let mut lean = scrape.clone();
        if let Some(p) = lean.page.as_mut() {
            let n = u32::try_from(p.raw.len()).unwrap_or(u32::MAX);
            p.raw_dropped = p.raw_dropped.saturating_add(n);
            p.raw.clear();
        }
        buf.clear();
        serde_json::to_writer(&mut *buf, &lean)?;
    }
    if buf.len() >= MAX_LINE_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a line over {MAX_LINE_BYTES} bytes"),
        ));
    }
    buf.push(b'\n');
    Ok(())
}

/// Writes `scrape`'s line to `w` (`buf` is scratch, reused between lines).
pub fn write_line(w: &mut impl Write, scrape: &Scrape, buf: &mut Vec<u8>) -> io::Result<()> {
    format_line(scrape, buf)?;
    w.write_all(buf)
}

/// The scrapes a file gave back, and what it could not.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReadBack {
    /// The scrapes, in file order.
    pub scrapes: Vec<Scrape>,
    /// Lines that were not a scrape (bad JSON, an unknown key, over the bound).
    pub bad_lines: u64,
    /// Why the first bad line was bad, with its line number.
    pub first_bad: Option<String>,
    /// Lines past `max` not kept.
    pub dropped: u64,
}

/// Reads scrapes from `r`, keeping at most `max`; bad lines are counted, not fatal.
pub fn read(mut r: impl BufRead, max: usize) -> io::Result<ReadBack> {
    let mut back = ReadBack::default();
    let mut buf = Vec::new();
    let mut number = 0u64;
    loop {
        buf.clear();
        let n =
            io::Read::take(r.by_ref(), MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut buf)?;
        if n == 0 {
            return Ok(back);
        }
        number += 1;
        let whole = buf.last() == Some(&b'\n');
        if !whole && buf.len() > MAX_LINE_BYTES {
            skip_line(&mut r)?;
            back.bad(number, "over the line bound".into());
            continue;
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Scrape>(&buf) {
            Ok(_) if back.scrapes.len() >= max => back.dropped += 1,
            Ok(s) => back.scrapes.push(s),
            Err(e) => back.bad(number, e.to_string()),
        }
    }
}

/// Reads `server_metrics.jsonl` at `path` (see `read`).
pub fn read_file(path: &Path, max: usize) -> io::Result<ReadBack> {
    read(io::BufReader::new(std::fs::File::open(path)?), max)
}

impl ReadBack {
    fn bad(&mut self, line: u64, why: String) {
        self.bad_lines += 1;
        self.first_bad
            .get_or_insert_with(|| format!("line {line}: {why}"));
    }
}

/// Consumes the rest of an overlong line.
fn skip_line(r: &mut impl BufRead) -> io::Result<()> {
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            return Ok(());
        }
        match chunk.iter().position(|&b| b == b'\n') {
            Some(at) => {
                r.consume(at + 1);
                return Ok(());
            }
            None => {
                let n = chunk.len();
                r.consume(n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scrape::{Concept, Engine, Failure, Hist, Page, Phase};

    fn sample() -> Vec<Scrape> {
        let mut page = Page {
            engine: Some(Engine::Vllm),
            families: 3,
            ..Page::default()
        };
        page.values.insert(Concept::Running, 2.0);
        page.values.insert(Concept::KvCacheUsage, 0.125);
        page.histograms.insert(
            Concept::Ttft,
            Hist {
                le: vec![0.1, 1.0],
                cum: vec![1.0, 3.0],
                count: Some(4.0),
                sum: Some(2.5),
            },
        );
        page.raw.insert("process_open_fds".into(), 12.0);
        let ok = Scrape {
            start_ns: 10,
            end_ns: 20,
            url: "http://127.0.0.1:8000/metrics".into(),
            phase: Phase::Measure,
            round: 3,
            mark: true,
            error: None,
            page: Some(page),
            prometheus: None,
        };
        let failed = Scrape {
            error: Some(Failure {
                kind: "http_500".into(),
                message: "HTTP 500".into(),
            }),
            page: None,
            mark: false,
            ..ok.clone()
        };
        vec![ok, failed]
    }

    #[test]
    fn lines_read_back_to_the_same_scrapes() {
        let mut file = Vec::new();
        let mut buf = Vec::new();
        for s in sample() {
            write_line(&mut file, &s, &mut buf).unwrap();
        }
        let text = String::from_utf8(file.clone()).unwrap();
        assert!(text.contains("\"kv_cache_usage\":0.125"), "{text}");
        assert!(text.contains("\"le\":[0.1,1.0]"), "{text}");
        assert!(!text.lines().nth(1).unwrap().contains("\"page\""));
        let back = read(&file[..], 10).unwrap();
        assert_eq!(back.scrapes, sample());
        assert_eq!(back.bad_lines, 0);
        let capped = read(&file[..], 1).unwrap();
        assert_eq!((capped.scrapes.len(), capped.dropped), (1, 1));
    }

    #[test]
    fn bad_and_overlong_lines_are_counted() {
        let mut file = b"{\"nope\":1}\n\n".to_vec();
        file.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 10));
        file.push(b'\n');
        let mut buf = Vec::new();
        write_line(&mut file, &sample()[0], &mut buf).unwrap();
        let back = read(&file[..], 10).unwrap();
        assert_eq!((back.scrapes.len(), back.bad_lines), (1, 2));
        assert!(back.first_bad.unwrap().starts_with("line 1:"));
    }

    #[test]
    fn a_line_too_long_leaves_its_raw_series_out() {
        let mut s = sample().remove(0);
        let page = s.page.as_mut().unwrap();
        for i in 0..40_000 {
            page.raw.insert(
                format!("family_{i:05}{{label=\"{}\"}}", "v".repeat(20)),
                1.0,
            );
        }
        let mut buf = Vec::new();
        format_line(&s, &mut buf).unwrap();
        assert!(buf.len() < MAX_LINE_BYTES);
        let back: Scrape = serde_json::from_slice(&buf).unwrap();
        let p = back.page.unwrap();
        assert!(p.raw.is_empty());
        assert_eq!(p.raw_dropped, 40_001);
        assert_eq!(p.values[&Concept::Running], 2.0);
    }
}
