//! Test support (outside the flow): a small Mooncake-style trace, written where a test wants
//! it. Shared by the integration tests (`support::trace`) and the crate's own unit tests
//! (`run::testkit::trace`, which includes this file), so both replay the same lines.

use std::path::{Path, PathBuf};

/// A trace line: `(timestamp ms, input_length, output_length, hash_ids)`.
pub type Line = (u64, u32, u32, &'static [u64]);

/// Block size 16: lines 0, 1, 3 share block 1; 0 and 3 share blocks 1–2; line 2 has none.
pub const TRACE: &[Line] = &[
    (1_000, 40, 5, &[1, 2, 3]),
    (1_000, 20, 3, &[1, 4]),
    (1_130, 7, 9, &[]),
    (1_400, 33, 2, &[1, 2, 5]),
    (2_000, 16, 1, &[6]),
    (2_001, 1, 4, &[7]),
];

/// `lines` as `dir/trace.jsonl` (`dir` exists); returns the file's path.
pub fn write_trace(dir: &Path, lines: &[Line]) -> PathBuf {
    let text: String = lines
        .iter()
        .map(|(t, i, o, h)| {
            let ids = if h.is_empty() {
                String::new()
            } else {
                format!(",\"hash_ids\":{h:?}")
            };
            format!("{{\"timestamp\":{t},\"input_length\":{i},\"output_length\":{o}{ids}}}\n")
        })
        .collect();
    let path = dir.join("trace.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}
