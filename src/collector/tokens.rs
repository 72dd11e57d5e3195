//! Part of the collector (… → record → **collector** → summary → report): how a request's
//! output tokens spread over its events. Exact when the events' own counts add up to the
//! OSL (the server streamed cumulative usage — vLLM `continuous_usage_stats` — or sent one
//! token per event); otherwise the OSL is split evenly over the token-bearing events, the
//! first ones taking the remainder. A tokenizer count per event (issue 4's tokenizer) would
//! slot in here as a third source, between the two. Never allocates, never prints.

use crate::record::Record;

/// `(at_ns, tokens)` for each token-bearing event of `r`; the tokens add up to the OSL.
pub fn per_event(r: &Record) -> impl Iterator<Item = (u64, u32)> + '_ {
    let n = r.token_events().count() as u32;
    let sum: u32 = r.token_events().map(|e| e.tokens).sum();
    let exact = sum == r.output_tokens || n == 0;
    let q = r.output_tokens.checked_div(n).unwrap_or(0);
    let rem = r.output_tokens.checked_rem(n).unwrap_or(0);
    r.token_events().enumerate().map(move |(i, e)| {
        let t = if exact {
            e.tokens
        } else {
            q + u32::from((i as u32) < rem)
        };
        (e.at_ns, t)
    })
}

/// The per-token view of ITL: each chunk gap divided by the tokens its later event carried,
/// one sample per token (a gap of 6 ms closing a 3-token event gives three 2 ms samples).
pub fn per_token_gaps(r: &Record, mut each: impl FnMut(u64, u32)) {
    let mut prev: Option<u64> = None;
    for (at, n) in per_event(r) {
        if let (Some(p), true) = (prev, n > 0) {
            each(at.saturating_sub(p) / n as u64, n);
        }
        prev = Some(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::EventStamp;

    fn rec(tokens: &[u32], osl: u32) -> Record {
        Record {
            output_tokens: osl,
            events: tokens
                .iter()
                .enumerate()
                .map(|(i, &t)| EventStamp {
                    at_ns: (i as u64 + 1) * 6_000,
                    tokens: t,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn exact_counts_are_kept_and_others_split_evenly() {
        let exact = rec(&[0, 1, 3, 2], 6);
        let got: Vec<_> = per_event(&exact).map(|(_, n)| n).collect();
        assert_eq!(got, vec![1, 3, 2]);
        // Usage says 8 but each event counted 1: 8 over 3 events is 3, 3, 2.
        let split = rec(&[1, 1, 1], 8);
        let got: Vec<_> = per_event(&split).map(|(_, n)| n).collect();
        assert_eq!(got, vec![3, 3, 2]);
    }

    #[test]
    fn per_token_gaps_divide_each_gap_by_its_tokens() {
        let mut samples = vec![];
        per_token_gaps(&rec(&[1, 3, 2], 6), |gap, n| samples.push((gap, n)));
        assert_eq!(samples, vec![(2_000, 3), (3_000, 2)]);
    }
}
