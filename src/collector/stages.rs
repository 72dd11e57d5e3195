//! Part of the collector (… → record → **collector** → summary → output): the per-stage
//! tally of a `--stages` run. A request belongs to the stage its *intended* time falls in
//! (its time on the schedule's time line, from the schedule's start); each stage keeps its
//! own counts and histograms, so its percentiles come from its own records, never from the
//! whole run's. Bounded: a few histograms per stage, `MAX_STAGES` stages at most. Never
//! prints.

use super::{record_metric, Dist};
use crate::plan::{shape, Shard, Stage};
use crate::record::{Outcome, Record};
use crate::summary::metric::role;
use crate::summary::stages::{StageCounts, StageSummary};
use crate::summary::Metric;

/// One stage as it fills.
#[derive(Clone, Debug)]
struct One {
    stage: Stage,
    /// Its window on the schedule's time line, ns from the schedule's start.
    start_ns: u64,
    /// Its first global arrival index.
    first: u64,
    counts: StageCounts,
    sent_in_window: u64,
    sched_lag: Dist,
    /// Indexed like `Metric::with(role::STAGE)`.
    dists: Vec<Dist>,
}

/// Every stage of the run, and where the schedule started.
#[derive(Clone, Debug)]
pub(crate) struct StageTally {
    stages: Vec<One>,
    shard: Shard,
    /// The schedule's start on the run clock; unknown (an old `run.json`), a record's stage
    /// is read from its index, which names the same stage: stage k holds exactly the
    /// arrivals from its first index on, all inside its window (`Schedule::staged`).
    start_ns: Option<u64>,
    /// Records that fell in no stage (none should).
    unplaced: u64,
}

impl StageTally {
    /// `None` for a run without stages.
    pub fn new(stages: &[Stage], shard: Shard) -> Option<Self> {
        if stages.is_empty() {
            return None;
        }
        let metrics = Metric::with(role::STAGE).count();
        let stages = shape::stage_starts(stages)
            .into_iter()
            .zip(stages)
            .map(|((start_ns, first), &stage)| One {
                stage,
                start_ns,
                first,
                counts: StageCounts::default(),
                sent_in_window: 0,
                sched_lag: Dist::new(),
                dists: (0..metrics).map(|_| Dist::new()).collect(),
            })
            .collect();
        Some(StageTally {
            stages,
            shard,
            start_ns: None,
            unplaced: 0,
        })
    }

    /// Where the schedule started, run clock.
    pub fn set_start(&mut self, start_ns: u64) {
        self.start_ns = Some(start_ns);
    }

    /// The stage of a record: by its intended time, or by its index when the start is not
    /// known.
    fn place(&self, rec: &Record) -> Option<usize> {
        let after = |s: &One| match self.start_ns {
            Some(start) => rec
                .intended_ns
                .checked_sub(start)
                .is_some_and(|t| t >= s.start_ns),
            None => rec.id >= s.first,
        };
        let k = self.stages.iter().rposition(after)?;
        let s = &self.stages[k];
        let inside = match self.start_ns {
            Some(start) => rec.intended_ns - start < s.start_ns + s.stage.duration_ns,
            None => rec.id < s.first + s.stage.arrivals(),
        };
        inside.then_some(k)
    }

    /// One record, warm-up included (counted apart).
    pub fn add(&mut self, rec: &Record, stream: bool) {
        let Some(k) = self.place(rec) else {
            self.unplaced += 1;
            return;
        };
        let window = self.start_ns.map(|t| {
            let s = &self.stages[k];
            t + s.start_ns..t + s.start_ns + s.stage.duration_ns
        });
        let one = &mut self.stages[k];
        let c = &mut one.counts;
        if rec.warmup {
            c.warmup += 1;
            return;
        }
        c.tally.add(rec.outcome);
        if !rec.outcome.was_sent() {
            return;
        }
        if let (Some(w), Some(sent)) = (window, rec.sent_ns) {
            one.sent_in_window += u64::from(w.contains(&sent));
        }
        if let Some(lag) = rec.sched_lag_ns() {
            one.sched_lag.record(lag);
        }
        if rec.outcome != Outcome::Ok {
            return;
        }
        for (m, d) in Metric::with(role::STAGE).zip(one.dists.iter_mut()) {
            record_metric(m, rec, stream, d);
        }
    }

    /// Each stage's summary; warnings for records in no stage and for a stage whose records
    /// do not add up to its schedule.
    pub fn summaries(&self, percentiles: &[f64], warnings: &mut Vec<String>) -> Vec<StageSummary> {
        if self.unplaced > 0 {
            warnings.push(format!(
                "{} records fell in no stage of --stages (their intended time is outside \
                 every stage's window); the stages leave them out",
                self.unplaced
            ));
        }
        let mut out = Vec::with_capacity(self.stages.len());
        for (index, one) in self.stages.iter().enumerate() {
            let first = one.first;
            let own = self.shard.share(first + one.stage.arrivals()) - self.shard.share(first);
            let mut counts = one.counts.clone();
            counts.scheduled = own.saturating_sub(counts.warmup);
            let t = counts.tally;
            if counts.scheduled != t.sent + t.not_sent {
                warnings.push(format!(
                    "INVARIANT BROKEN: stage {index} scheduled {} measured arrivals but {} \
                     records arrived (sent {} + not_sent {})",
                    counts.scheduled,
                    t.sent + t.not_sent,
                    t.sent,
                    t.not_sent
                ));
            }
            let duration_s = one.stage.duration_ns as f64 / 1e9;
            out.push(StageSummary {
                index,
                target_request_rate: one.stage.request_rate,
                start_s: one.start_ns as f64 / 1e9,
                duration_s,
                achieved_request_rate: (duration_s > 0.0).then(|| t.sent as f64 / duration_s),
                counts,
                sent_in_window: one.sent_in_window,
                sched_lag_ms: one.sched_lag.stats_ms(percentiles),
                latency_ms: Metric::with(role::STAGE)
                    .zip(&one.dists)
                    .map(|(m, d)| (m.key().to_string(), d.stats_ms(percentiles)))
                    .collect(),
            });
        }
        out
    }
}
