//! Test support (outside the flow) for the parser tests against captured bytes
//! (`parser_fixtures`, `parser_apis`): what a response produced (`Trace`), one parse of a
//! sequence of reads, the capture files of a folder, and every way of cutting one capture
//! into reads that those tests compare. Only the library's public API; no assertion about
//! what it produces (the tests make those).

use std::path::{Path, PathBuf};

use ringbench::__private::extract::EventInfo;
use ringbench::__private::http::{Progress, ResponseError, ResponseParser, ResponseSink};

/// Everything a response produced, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    pub heads: Vec<(u16, bool)>,
    pub events: Vec<EventInfo>,
    pub end: Option<Result<Progress, ResponseError>>,
}

impl ResponseSink for Trace {
    fn head(&mut self, status: u16, streaming: bool) {
        self.heads.push((status, streaming));
    }
    fn event(&mut self, ev: &EventInfo) {
        self.events.push(*ev);
    }
}

/// Feed `reads` in order to one parser (reused: reset first), then eof if not yet done.
/// Reads after the response is done are fed too, as a connection would read them: stray
/// bytes after the end forbid the connection's reuse whichever read carried them (a 204
/// followed by a body ends with `keep_alive: false` cut anywhere, not only in one read).
pub fn parse(p: &mut ResponseParser, reads: &mut dyn Iterator<Item = &[u8]>) -> Trace {
    p.reset();
    let mut t = Trace::default();
    while let Some(read) = reads.next() {
        let r = p.feed(read, &mut t);
        if let Ok(Progress::Done { .. }) = r {
            let last = reads.fold(r, |_, more| p.feed(more, &mut t));
            t.end = Some(last);
            return t;
        }
        if !matches!(r, Ok(Progress::NeedMore)) {
            t.end = Some(r);
            return t;
        }
    }
    let r = p.eof(&mut t);
    t.end = Some(r);
    t
}

/// A small seeded generator (splitmix64) so a failing cut can be replayed exactly.
pub struct Rng(pub u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Read sizes biased to small (1..=16) with some large ones, as sockets deliver.
    pub fn cut_sizes(&mut self, total: usize) -> Vec<usize> {
        let mut sizes = Vec::new();
        let mut left = total;
        while left > 0 {
            let n = match self.next() % 4 {
                0 => 1 + (self.next() % 512) as usize,
                _ => 1 + (self.next() % 16) as usize,
            };
            let n = n.min(left);
            sizes.push(n);
            left -= n;
        }
        sizes
    }
}

/// Every `<server>/<name>.wire.bin` below `dir`: ("server/name", its path), sorted.
pub fn wire_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for server in std::fs::read_dir(dir).expect("read the captures' folder") {
        let server = server.expect("dir entry").path();
        if !server.is_dir() {
            continue;
        }
        let server_name = server
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        for file in std::fs::read_dir(&server).expect("read a server's folder") {
            let path = file.expect("dir entry").path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if let Some(stem) = name.strip_suffix(".wire.bin") {
                out.push((format!("{server_name}/{stem}"), path.clone()));
            }
        }
    }
    out.sort();
    out
}

/// Ways of reading `wire` that must all give one read's trace, each with what to say when
/// one does not: every two-way cut (`two_way`), `rounds` rounds of random read sizes, and one
/// byte at a time.
pub fn readings<'a>(
    wire: &'a [u8],
    rng: &mut Rng,
    two_way: bool,
    rounds: usize,
) -> Vec<(String, Vec<&'a [u8]>)> {
    let mut out = Vec::new();
    if two_way {
        for cut in 0..=wire.len() {
            let (a, b) = wire.split_at(cut);
            out.push((format!("cut at byte {cut}"), vec![a, b]));
        }
    }
    for round in 0..rounds {
        let sizes = rng.cut_sizes(wire.len());
        let mut at = 0;
        let reads = sizes
            .iter()
            .map(|&n| {
                at += n;
                &wire[at - n..at]
            })
            .collect();
        out.push((format!("round {round}, read sizes {sizes:?}"), reads));
    }
    out.push(("byte-at-a-time".into(), wire.chunks(1).collect()));
    out
}
