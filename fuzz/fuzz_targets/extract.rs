//! Fuzz target: the payload extractor on arbitrary event data and bodies, for every
//! endpoint (the first input byte picks it): errors, never a panic; the same input twice
//! gives the same answer (buffers are reused between calls); a pooling body scanned in two
//! slices cut anywhere (the second byte picks the cut) reads as in one.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringbench::__private::extract::{Extractor, PooledScanner};
use ringbench::plan::Endpoint;

fuzz_target!(|input: &[u8]| {
    let Some((&pick, data)) = input.split_first() else {
        return;
    };
    let endpoint = Endpoint::ALL[usize::from(pick) % Endpoint::ALL.len()];
    let mut x = Extractor::for_endpoint(endpoint);
    let a = format!("{:?}", x.event(data));
    let b = format!("{:?}", x.event(data));
    assert_eq!(a, b);
    let whole = x.body(data);
    if !endpoint.generates() {
        let cut = data.first().map_or(0, |&c| usize::from(c) % (data.len() + 1));
        let mut s = PooledScanner::new(endpoint);
        s.push(&data[..cut]);
        s.push(&data[cut..]);
        assert_eq!(s.finish(), whole);
    }
});
