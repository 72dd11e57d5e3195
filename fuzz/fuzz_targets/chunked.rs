//! Fuzz target: the chunked body decoder. Decoding arbitrary bytes whole or byte by byte
//! must give the same body bytes and the same verdict, and never panic or loop.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringbench::__private::http::ChunkedDecoder;

fn decode(input: &[u8], piece: usize) -> (Vec<u8>, String) {
    let mut d = ChunkedDecoder::new();
    let mut body = Vec::new();
    for mut part in input.chunks(piece.max(1)) {
        while !part.is_empty() && !d.is_done() {
            match d.step(part) {
                Ok(step) => {
                    assert!(step.consumed <= part.len());
                    assert!(step.consumed > 0 || d.is_done(), "no progress");
                    body.extend_from_slice(step.data);
                    part = &part[step.consumed..];
                }
                Err(e) => return (body, format!("{e:?}")),
            }
        }
    }
    (body, format!("done={}", d.is_done()))
}

fuzz_target!(|data: &[u8]| {
    let whole = decode(data, data.len());
    let bytewise = decode(data, 1);
    assert_eq!(whole, bytewise);
});
