//! Fuzz target: the SSE splitter. Any cutting of the input into pushes gives the same event
//! payloads as one push, and the oversized bound holds. The first byte picks the cut size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringbench::__private::sse::{SseOversized, SseSplitter};

fn split(input: &[u8], piece: usize) -> (Vec<Vec<u8>>, bool) {
    let mut s = SseSplitter::new(1024);
    let mut out = Vec::new();
    for part in input.chunks(piece.max(1)) {
        let r = s.push::<SseOversized>(part, |d| {
            assert!(d.len() <= 1024);
            out.push(d.to_vec());
            Ok(())
        });
        if r.is_err() {
            return (out, true);
        }
    }
    (out, false)
}

fuzz_target!(|data: &[u8]| {
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let whole = split(rest, rest.len());
    let cutwise = split(rest, cut as usize % 17 + 1);
    assert_eq!(whole, cutwise);
});
