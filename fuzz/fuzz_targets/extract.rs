//! Fuzz target: the payload extractor on arbitrary event data and bodies: errors, never a
//! panic; the same input twice gives the same answer (buffers are reused between calls).
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringbench::extract::Extractor;

fuzz_target!(|data: &[u8]| {
    let mut x = Extractor::new();
    let a = format!("{:?}", x.event(data));
    let b = format!("{:?}", x.event(data));
    assert_eq!(a, b);
    let _ = x.body(data);
});
