//! Part of stage 9 (… → summary → **output**): the console block's row grammar, shared by
//! `console.rs` and its `console_*` blocks — vLLM's `{:<40} {:<10}` rows, 50-column rules,
//! `n/a` for a figure that is not there. It only formats; it may not print.

use std::io::{self, Write};

/// The block's width: vLLM's rules are 50 columns.
pub(super) const WIDTH: usize = 50;

/// `title` centred in a rule of `fill`.
pub(super) fn rule(title: &str, fill: char) -> String {
    let pad = WIDTH.saturating_sub(title.chars().count());
    let left = pad / 2;
    let fill_s = |n| fill.to_string().repeat(n);
    format!("{}{title}{}", fill_s(left), fill_s(pad - left))
}

/// vLLM's `{:<40} {:<10}` row, without its trailing blanks.
pub(super) fn row(
    out: &mut impl Write,
    label: &str,
    value: impl std::fmt::Display,
) -> io::Result<()> {
    let line = format!("{label:<40} {value:<10}");
    writeln!(out, "{}", line.trim_end())
}

pub(super) fn num(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.decimals$}"))
}
