//! Part of the collector (… → record → **collector** → summary → report): how a request's
//! output tokens spread over its events, best source first (`docs/metrics.md`):
//! 1. the events' own counts, when they add up to the OSL (the server streamed cumulative
//!    usage — vLLM `continuous_usage_stats` — or sent one token per event);
//! 2. else the client tokenizer's count per event (`--tokenizer`; see `osl`), scaled to the
//!    OSL when the server's usage and the tokenizer disagree on the total;
//! 3. else the OSL split evenly over the token-bearing events, the first ones taking the
//!    remainder.
//!
//! Never allocates, never prints.

use crate::record::Record;

/// `(at_ns, tokens)` for each token-bearing event of `r`; the tokens add up to the OSL
/// (an event may get 0 from the tokenizer when the token it started ends in a later one).
pub fn per_event(r: &Record) -> impl Iterator<Item = (u64, u32)> + '_ {
    let osl = r.output_tokens;
    let n = r.token_events().count() as u32;
    let sum: u32 = r.token_events().map(|e| e.tokens).sum();
    let by_text: u64 = r.token_events().map(|e| u64::from(e.text_tokens)).sum();
    let exact = sum == osl || n == 0;
    let q = osl.checked_div(n).unwrap_or(0);
    let rem = osl.checked_rem(n).unwrap_or(0);
    let mut text_before = 0u64;
    r.token_events().enumerate().map(move |(i, e)| {
        let t = if exact {
            e.tokens
        } else if by_text > 0 {
            // Cumulative shares rounded down: the counts add up to the OSL exactly, and
            // equal the tokenizer's own when it agrees with the OSL.
            let upto = |text: u64| (u64::from(osl) * text / by_text) as u32;
            let before = upto(text_before);
            text_before += u64::from(e.text_tokens);
            upto(text_before) - before
        } else {
            q + u32::from((i as u32) < rem)
        };
        (e.at_ns, t)
    })
}

/// The per-token view of ITL: each chunk gap divided by the tokens its later event carried,
/// one sample per token (a gap of 6 ms closing a 3-token event gives three 2 ms samples). An
/// event credited with no token (only the start of one) closes no gap: the wait runs on to
/// the event that completes the token.
pub fn per_token_gaps(r: &Record, mut each: impl FnMut(u64, u32)) {
    let mut prev: Option<u64> = None;
    for (at, n) in per_event(r) {
        if n == 0 {
            continue;
        }
        if let Some(p) = prev {
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

    fn with_text(tokens: &[u32], text_tokens: &[u32], osl: u32) -> Record {
        let mut r = rec(tokens, osl);
        r.events
            .iter_mut()
            .zip(text_tokens)
            .for_each(|(e, &t)| e.text_tokens = t);
        r
    }

    #[test]
    fn tokenizer_counts_come_between_exact_and_even() {
        // No usage per event (one each), OSL 6 from the tokenizer: its counts are used.
        let r = with_text(&[1, 1, 1], &[1, 4, 1], 6);
        let got: Vec<_> = per_event(&r).map(|(_, n)| n).collect();
        assert_eq!(got, vec![1, 4, 1]);
        // Usage says 12, the tokenizer 6: its shares, scaled, still add up to 12.
        let r = with_text(&[1, 1, 1], &[1, 4, 1], 12);
        let got: Vec<_> = per_event(&r).map(|(_, n)| n).collect();
        assert_eq!(got, vec![2, 8, 2]);
        let r = with_text(&[1, 1, 1], &[1, 1, 1], 4);
        let got: Vec<_> = per_event(&r).map(|(_, n)| n).collect();
        assert_eq!(got.iter().sum::<u32>(), 4);
        // Exact per-event counts still win over the tokenizer.
        let r = with_text(&[2, 2], &[1, 3], 4);
        let got: Vec<_> = per_event(&r).map(|(_, n)| n).collect();
        assert_eq!(got, vec![2, 2]);
        // A token-bearing event credited with nothing: the gap runs on to the next one.
        // (OSL 4 from the tokenizer, three events of one each: the events' own counts are
        // not exact.)
        let r = with_text(&[1, 1, 1], &[1, 0, 3], 4);
        let mut samples = vec![];
        per_token_gaps(&r, |gap, n| samples.push((gap, n)));
        assert_eq!(samples, vec![(4_000, 3)]);
    }

    #[test]
    fn per_token_gaps_divide_each_gap_by_its_tokens() {
        let mut samples = vec![];
        per_token_gaps(&rec(&[1, 3, 2], 6), |gap, n| samples.push((gap, n)));
        assert_eq!(samples, vec![(2_000, 3), (3_000, 2)]);
    }
}
