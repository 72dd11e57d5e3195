//! Part of the collector (… → record → **collector** → summary): the reading-speed figures
//! (`--stall-ms`): of the chunk gaps of measured successful streamed requests, those above
//! the bound, and the requests that had one. Counters only (bounded); never prints.

use crate::record::Record;
use crate::summary::Stalls;

/// The stalls so far, against one bound.
#[derive(Clone, Debug, Default)]
pub struct StallTally {
    stall_ns: u64,
    gaps: u64,
    above: u64,
    requests: u64,
    requests_with: u64,
    most: u64,
}

impl StallTally {
    /// A gap of more than `stall_ns` is a stall.
    pub fn new(stall_ns: u64) -> Self {
        StallTally {
            stall_ns,
            ..Self::default()
        }
    }

    /// One measured successful streamed request: its chunk gaps (`Record::itl_gaps_ns`, the
    /// ITL samples).
    pub fn add(&mut self, rec: &Record) {
        let mut stalls = 0;
        for gap in rec.itl_gaps_ns() {
            self.gaps += 1;
            stalls += u64::from(gap > self.stall_ns);
        }
        self.above += stalls;
        self.requests += 1;
        self.requests_with += u64::from(stalls > 0);
        self.most = self.most.max(stalls);
    }

    /// The summary's `stalls` block; `None` without a request.
    pub fn summary(&self) -> Option<Stalls> {
        let pct = |n: u64, d: u64| (d > 0).then(|| 100.0 * n as f64 / d as f64);
        (self.requests > 0).then(|| Stalls {
            stall_ms: self.stall_ns as f64 / 1e6,
            gaps: self.gaps,
            gaps_above: self.above,
            gaps_above_percent: pct(self.above, self.gaps),
            requests: self.requests,
            requests_with_stall: self.requests_with,
            requests_with_stall_percent: 100.0 * self.requests_with as f64 / self.requests as f64,
            per_request_mean: self.above as f64 / self.requests as f64,
            per_request_max: self.most,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::EventStamp;

    fn rec(at_ms: &[u64]) -> Record {
        Record {
            sent_ns: Some(0),
            events: at_ms
                .iter()
                .map(|&ms| EventStamp {
                    at_ns: ms * 1_000_000,
                    tokens: 1,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn gaps_above_the_bound_are_counted_exactly() {
        let mut t = StallTally::new(250_000_000);
        assert_eq!(t.summary(), None);
        // Gaps 100, 250 (not above), 251, 600 ms: two stalls.
        t.add(&rec(&[0, 100, 350, 601, 1_201]));
        // Gaps 10, 10: none.
        t.add(&rec(&[0, 10, 20]));
        // One event: no gap.
        t.add(&rec(&[5]));
        let s = t.summary().unwrap();
        assert_eq!(s.stall_ms, 250.0);
        assert_eq!((s.gaps, s.gaps_above), (6, 2));
        assert_eq!(s.gaps_above_percent, Some(100.0 * 2.0 / 6.0));
        assert_eq!((s.requests, s.requests_with_stall), (3, 1));
        assert_eq!(s.requests_with_stall_percent, 100.0 / 3.0);
        assert_eq!(s.per_request_mean, 2.0 / 3.0);
        assert_eq!(s.per_request_max, 2);
    }
}
