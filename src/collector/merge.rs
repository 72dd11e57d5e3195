//! Part of the collector (… → record → **collector** → summary → report): `ringbench merge`,
//! one run from the folders of its shards (`run --shard I/N`). It checks that the shards are
//! one run (same plan hash, seed and shard count; each shard's records exactly its own
//! global indices, once each; every shard 0..N there once), moves every stamp onto one time
//! base (the earliest shard's wall-clock origin, by each shard's recorded `clock` offset),
//! writes the union of the records as one `requests.jsonl` in time order (a k-way merge of
//! the shards' files by `done_ns`) with a `run.json` beside it, keeps one shard's
//! `server_metrics.jsonl` (every shard scraped the same server; its stamps moved as its
//! records are), and recomputes the summary and the `.hlog` interval logs from them through
//! `replay::recompute_to`, the path `ringbench report` takes: never by combining the shards'
//! percentiles. Each shard's own overhead (lag, CPU, validity) is kept in the summary's
//! `merge` block, and the merged run is valid only if every shard was and none is missing.
//! Memory stays flat: records stream one at a time (each shard is read twice: checked, then
//! merged; nothing is written before every shard checked out). Never prints.

use super::replay::{self, read_records, Overrides, RecordReader, ReplayError};
use super::sidecar::RunSidecar;
use super::{Collector, RunFacts};
use crate::plan::Shard;
use crate::record::Record;
use crate::summary::shard::{ClockSync, MergeInfo, ShardPart};
use crate::summary::Summary;
use std::path::{Path, PathBuf};

/// How `merge` treats what is missing.
#[derive(Clone, Debug, Default)]
pub struct MergeOptions {
    /// Write the result even when shards are missing or duplicated, marked incomplete (and
    /// invalid), instead of refusing (`--allow-incomplete`).
    pub allow_incomplete: bool,
}

/// Why shards could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A shard's files could not be read.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// A folder holds a run that was not run with `--shard`.
    #[error("{0}: not a shard (its run.json has no shard block): run it with --shard I/N")]
    NotShard(PathBuf),
    /// A folder's shard belongs to another run than the first folder's.
    #[error(
        "{dir}: not the same run as {first}: {what} differs ({theirs} vs {ours}); merge only \
         shards run with the same flags and --seed"
    )]
    OtherRun {
        /// The folder that differs.
        dir: PathBuf,
        /// The first folder.
        first: PathBuf,
        /// What differs: the plan hash, the seed or the shard count.
        what: &'static str,
        /// Its value in `dir`.
        theirs: String,
        /// Its value in `first`.
        ours: String,
    },
    /// Shards are missing or given twice (without `--allow-incomplete`).
    #[error(
        "the shards do not make one whole run of {count}: {detail} (give every shard's folder \
         once, or --allow-incomplete to merge what there is, marked incomplete)"
    )]
    Incomplete {
        /// The run's shard count.
        count: u32,
        /// Which shards are missing and which were given twice, by folder.
        detail: String,
    },
    /// A shard's records are not exactly its share of the schedule.
    #[error("{dir}: {reason}")]
    Records {
        /// The shard's folder.
        dir: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The merged files could not be written.
    #[error("cannot write the merged run in {dir}: {source}")]
    Write {
        /// The output folder.
        dir: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// One shard as read: its folder, its sidecar and which part it is.
struct Part {
    dir: PathBuf,
    side: RunSidecar,
    shard: Shard,
}

/// Merges the shard folders `dirs` into `out` (`requests.jsonl` in time order, `run.json`,
/// the `.hlog` interval logs, and one shard's `server_metrics.jsonl`); returns the recomputed
/// summary. The caller writes `summary.json` and the exports (`output::write_run`).
pub fn merge(dirs: &[PathBuf], out: &Path, opts: &MergeOptions) -> Result<Summary, MergeError> {
    let parts = read_parts(dirs)?;
    let first = &parts[0];
    let info0 = first.side.facts.shard.clone().expect("read_parts checked");
    let count = info0.count;
    let (kept, missing, duplicated) = pick(&parts, count);
    if !(missing.is_empty() && duplicated.is_empty() || opts.allow_incomplete) {
        return Err(MergeError::Incomplete {
            count,
            detail: describe(&parts, &missing, &duplicated),
        });
    }
    let base = kept
        .iter()
        .map(|p| origin(&p.side))
        .min()
        .expect("at least one shard");
    let shifts: Vec<i128> = kept.iter().map(|p| origin(&p.side) - base).collect();
    let mut merged = merged_sidecar(first, base, out);
    let mut parts_info = Vec::with_capacity(kept.len());
    let mut arrivals = 0;
    for (p, &shift) in kept.iter().zip(&shifts) {
        let (own, own_arrivals) =
            check_records(p, info0.global_scheduled).map_err(check_err(&p.dir))?;
        arrivals += own_arrivals;
        add_part(&mut merged, p, shift);
        parts_info.push(part_info(p, shift, &own));
    }
    if let Some(c) = merged
        .facts
        .clock
        .as_mut()
        .filter(|c| c.schedule_start_ns == u64::MAX)
    {
        c.schedule_start_ns = 0;
    }
    if missing.is_empty() && duplicated.is_empty() {
        if let Some(total) = info0.global_scheduled {
            if arrivals != total {
                return Err(MergeError::Records {
                    dir: out.to_path_buf(),
                    reason: format!(
                        "the shards scheduled {arrivals} arrivals together, the run {total}"
                    ),
                });
            }
        }
    }
    std::fs::create_dir_all(out).map_err(write_err(out))?;
    write_in_time_order(&kept, &shifts, out)?;
    let scrapes = copy_scrapes(&kept, &shifts, out, &mut merged.facts.warnings)?;
    merged.facts.merge = Some(MergeInfo {
        shards: count,
        complete: missing.is_empty() && duplicated.is_empty(),
        missing,
        duplicated,
        origin_unix_ns: base as u64,
        max_clock_error_us: kept.iter().filter_map(|p| max_error_us(p)).max(),
        server_metrics_shard: scrapes,
        parts: parts_info,
    });
    merged.write(out).map_err(write_err(out))?;
    Ok(replay::recompute_to(out, &Overrides::default(), Some(out))?)
}

/// Read buffer of each shard's `requests.jsonl` during the merge (one open per shard).
const MERGE_READ_BUFFER: usize = 1 << 18;

/// One shard's next record in the merge, moved onto the merged time base.
struct Pending {
    reader: RecordReader,
    rec: Record,
    shift: i128,
}

impl Pending {
    /// Reads the shard's next record; its merge key when there is one.
    fn advance(&mut self) -> Result<Option<u64>, ReplayError> {
        if !self.reader.next_into(&mut self.rec)? {
            return Ok(None);
        }
        shift_stamps(&mut self.rec, self.shift);
        Ok(Some(time_key(&self.rec)))
    }
}

/// Where a record sits in time order: when it ended (`done_ns`, what the `.hlog` files
/// and a live run's log follow), or for one never sent its intended time.
fn time_key(r: &Record) -> u64 {
    r.done_ns.unwrap_or(r.intended_ns)
}

/// Writes the kept shards' records as one `out/requests.jsonl` in time order (by
/// `time_key`, shifted): a k-way merge holding one pending record per shard, so memory stays
/// flat. Each shard's own file is in its collector's order — by `done_ns` but for records
/// handed over in batches — and the merge never puts a record further behind an earlier one
/// than it was in its own shard's file; ties go to the lower shard index.
fn write_in_time_order(kept: &[&Part], shifts: &[i128], out: &Path) -> Result<(), MergeError> {
    use std::cmp::Reverse;
    let mut log = super::log::RequestLog::create(out).map_err(write_err(out))?;
    let mut pending = Vec::with_capacity(kept.len());
    let mut due = std::collections::BinaryHeap::with_capacity(kept.len());
    for (i, (p, &shift)) in kept.iter().zip(shifts).enumerate() {
        let mut one = Pending {
            reader: RecordReader::open(&p.dir, MERGE_READ_BUFFER)?,
            rec: Record::default(),
            shift,
        };
        if let Some(key) = one.advance()? {
            due.push(Reverse((key, i)));
        }
        pending.push(one);
    }
    while let Some(Reverse((_, i))) = due.pop() {
        log.append(&pending[i].rec).map_err(write_err(out))?;
        if let Some(key) = pending[i].advance()? {
            due.push(Reverse((key, i)));
        }
    }
    log.close().map_err(write_err(out))
}

/// Every shard scraped the same server(s): the merge keeps the scrapes of one, the first
/// kept shard (lowest index) that has `server_metrics.jsonl`, each line's run-clock stamps
/// moved by that shard's shift as its records are, into `out`; returns its index. Lines
/// that do not read back as a scrape are left out, with a warning.
fn copy_scrapes(
    kept: &[&Part],
    shifts: &[i128],
    out: &Path,
    warnings: &mut Vec<String>,
) -> Result<Option<u32>, MergeError> {
    use crate::scrape::join::FILE_NAME;
    let Some((p, &shift)) = kept
        .iter()
        .zip(shifts)
        .find(|(p, _)| p.dir.join(FILE_NAME).is_file())
    else {
        return Ok(None);
    };
    if let Some(lost) = shift_scrapes(&p.dir, out, shift)? {
        warnings.push(format!("shard {}: {lost}", p.shard.label()));
    }
    Ok(Some(p.shard.index))
}

/// Writes `from/server_metrics.jsonl` to `to/` (atomically) with each scrape's run-clock
/// stamps (`start_ns`, `end_ns`) moved `shift` ns; says what it left out, if anything.
fn shift_scrapes(from: &Path, to: &Path, shift: i128) -> Result<Option<String>, MergeError> {
    use crate::scrape::{join::FILE_NAME, jsonl, scraper::DEFAULT_MAX_SCRAPES};
    let path = from.join(FILE_NAME);
    let back = jsonl::read_file(&path, 2 * DEFAULT_MAX_SCRAPES)
        .map_err(|source| ReplayError::Io { path, source })?;
    let (mut text, mut buf) = (Vec::new(), Vec::new());
    for s in &back.scrapes {
        let mut s = s.clone();
        s.start_ns = moved(s.start_ns, shift);
        s.end_ns = moved(s.end_ns, shift);
        jsonl::write_line(&mut text, &s, &mut buf).map_err(write_err(to))?;
    }
    crate::rt::file::write_atomic(&to.join(FILE_NAME), &text).map_err(write_err(to))?;
    let lost = back.bad_lines + back.dropped;
    Ok((lost > 0).then(|| {
        format!(
            "{lost} lines of {FILE_NAME} left out of the merge ({} unreadable{}, {} past the \
             bound)",
            back.bad_lines,
            back.first_bad.map_or(String::new(), |b| format!(": {b}")),
            back.dropped
        )
    }))
}

/// A shard's check failure as the merge's error: a bad record names the shard's folder.
fn check_err(dir: &Path) -> impl FnOnce(CheckError) -> MergeError + '_ {
    move |e| match e {
        CheckError::Replay(e) => MergeError::Replay(e),
        CheckError::Records(reason) => MergeError::Records {
            dir: dir.to_path_buf(),
            reason,
        },
    }
}

/// The kernel's maximum clock error on a shard's host, µs, when it recorded one.
fn max_error_us(p: &Part) -> Option<i64> {
    p.side
        .facts
        .clock
        .as_ref()?
        .kernel
        .as_ref()
        .map(|k| k.maxerror_us)
}

fn write_err(dir: &Path) -> impl FnOnce(std::io::Error) -> MergeError + '_ {
    |source| MergeError::Write {
        dir: dir.to_path_buf(),
        source,
    }
}

/// Every folder's sidecar, each a shard of the same run as the first.
fn read_parts(dirs: &[PathBuf]) -> Result<Vec<Part>, MergeError> {
    let mut parts: Vec<Part> = Vec::with_capacity(dirs.len());
    for dir in dirs {
        let (side, _) = replay::settings(dir, &Overrides::default())?;
        let Some(info) = side.facts.shard.clone() else {
            return Err(MergeError::NotShard(dir.clone()));
        };
        if let Some(first) = parts.first() {
            let f = first.side.facts.shard.as_ref().expect("checked");
            let other = |what, theirs: String, ours: String| MergeError::OtherRun {
                dir: dir.clone(),
                first: first.dir.clone(),
                what,
                theirs,
                ours,
            };
            if info.plan_hash != f.plan_hash {
                return Err(other("the plan hash", info.plan_hash, f.plan_hash.clone()));
            }
            if info.seed != f.seed {
                return Err(other("--seed", info.seed.to_string(), f.seed.to_string()));
            }
            if info.count != f.count {
                return Err(other(
                    "the shard count",
                    info.count.to_string(),
                    f.count.to_string(),
                ));
            }
        }
        parts.push(Part {
            dir: dir.clone(),
            shard: Shard {
                index: info.index,
                count: info.count,
            },
            side,
        });
    }
    if parts.is_empty() {
        return Err(MergeError::Incomplete {
            count: 0,
            detail: "no folder given".into(),
        });
    }
    Ok(parts)
}

/// The first folder of each index (in index order), the indices none gave, and those more
/// than one gave.
fn pick(parts: &[Part], count: u32) -> (Vec<&Part>, Vec<u32>, Vec<u32>) {
    let mut kept = vec![];
    let (mut missing, mut duplicated) = (vec![], vec![]);
    for index in 0..count {
        let of: Vec<&Part> = parts.iter().filter(|p| p.shard.index == index).collect();
        match of.len() {
            0 => missing.push(index),
            1 => kept.push(of[0]),
            _ => {
                duplicated.push(index);
                kept.push(of[0]);
            }
        }
    }
    (kept, missing, duplicated)
}

/// "shard 1/3 missing; shard 2/3 given twice (a, b)".
fn describe(parts: &[Part], missing: &[u32], duplicated: &[u32]) -> String {
    let count = parts[0].shard.count;
    let mut said: Vec<String> = missing
        .iter()
        .map(|i| format!("shard {i}/{count} missing"))
        .collect();
    for &i in duplicated {
        let dirs: Vec<String> = parts
            .iter()
            .filter(|p| p.shard.index == i)
            .map(|p| p.dir.display().to_string())
            .collect();
        said.push(format!(
            "shard {i}/{count} given {} times ({})",
            dirs.len(),
            dirs.join(", ")
        ));
    }
    said.join("; ")
}

/// The wall-clock instant of a shard's run-clock origin, Unix ns (0 for a run that did not
/// record it, which then cannot be aligned and is taken as is).
fn origin(side: &RunSidecar) -> i128 {
    side.facts
        .clock
        .as_ref()
        .map_or(0, |c| i128::from(c.origin_unix_ns))
}

enum CheckError {
    Replay(ReplayError),
    Records(String),
}

/// Reads a shard's records, checking that its arrivals are exactly its share of the global
/// indices, once each; returns the shard's own summary (recomputed from the same records,
/// for its overhead) and its arrivals. An
/// arrival is a request, or for conversations (`--turns`, sharded by session) a session:
/// its first turn's record (sent or not) stands for it.
fn check_records(p: &Part, global: Option<u64>) -> Result<(Summary, u64), CheckError> {
    let (side, settings) =
        replay::settings(&p.dir, &Overrides::default()).map_err(CheckError::Replay)?;
    let mut own = Collector::from_settings(settings);
    let n = u64::from(p.shard.count.max(1));
    let mut seen: Vec<u64> = Vec::new();
    let mut fault: Option<String> = None;
    let mut all = 0u64;
    let lines = read_records(&p.dir, |r| {
        if fault.is_some() {
            return;
        }
        own.add(r);
        all += 1;
        let (key, first) = r.turn.map_or((r.id, true), |t| (t.session, t.index == 0));
        if !first {
            return;
        }
        if !p.shard.owns(key) || global.is_some_and(|g| key >= g) {
            fault = Some(format!(
                "request {} is not shard {}'s (its ids are i mod {n} = {}{})",
                key,
                p.shard.label(),
                p.shard.index,
                global.map_or(String::new(), |g| format!(", below {g}"))
            ));
            return;
        }
        if !first_time(&mut seen, (key / n) as usize) {
            fault = Some(format!("request {key} has two records"));
        }
    })
    .map_err(CheckError::Replay)?;
    if let Some(f) = fault {
        return Err(CheckError::Records(f));
    }
    let arrivals: u64 = seen.iter().map(|w| u64::from(w.count_ones())).sum();
    if all != side.facts.scheduled {
        return Err(CheckError::Records(format!(
            "{all} records for {} scheduled requests ({lines} lines): the shard's log is \
             incomplete",
            side.facts.scheduled
        )));
    }
    if let Some(g) = global.filter(|&g| p.shard.share(g) != arrivals) {
        return Err(CheckError::Records(format!(
            "shard {} scheduled {arrivals} arrivals, its share of the run's {g} is {}",
            p.shard.label(),
            p.shard.share(g)
        )));
    }
    Ok((
        own.summarize(side.facts.clone(), side.host.clone()),
        arrivals,
    ))
}

/// A run-clock stamp moved `shift` ns (never below 0).
fn moved(v: u64, shift: i128) -> u64 {
    u64::try_from(i128::from(v) + shift).unwrap_or(0)
}

/// Sets bit `i` of `bits` (grown as needed); false when it was set already.
fn first_time(bits: &mut Vec<u64>, i: usize) -> bool {
    let (word, bit) = (i / 64, 1u64 << (i % 64));
    if bits.len() <= word {
        bits.resize(word + 1, 0);
    }
    let first = bits[word] & bit == 0;
    bits[word] |= bit;
    first
}

/// Every stamp of `r` (the server's write stamps too, which are on the run clock) moved
/// `shift` ns.
pub(crate) fn shift_stamps(r: &mut Record, shift: i128) {
    let mv = |v: u64| moved(v, shift);
    r.intended_ns = mv(r.intended_ns);
    for ns in [
        &mut r.sent_ns,
        &mut r.head_ns,
        &mut r.first_token_ns,
        &mut r.first_output_ns,
        &mut r.first_visible_ns,
        &mut r.last_token_ns,
        &mut r.done_ns,
        &mut r.first_token_user_ns,
        &mut r.done_user_ns,
        &mut r.uploaded_ns,
    ] {
        *ns = ns.map(mv);
    }
    if let Some(t) = r.turn.as_mut() {
        t.session_start_ns = mv(t.session_start_ns);
    }
    for e in &mut r.events {
        e.at_ns = mv(e.at_ns);
        e.server_ns = e.server_ns.map(mv);
        e.user_ns = e.user_ns.map(mv);
    }
}

/// The merged run's sidecar before its shards are added: the first shard's config without
/// its shard, the time base's origin.
fn merged_sidecar(first: &Part, base: i128, out: &Path) -> RunSidecar {
    let mut config = first.side.config.clone();
    if let Some(map) = config.as_object_mut() {
        map.insert("shard".into(), serde_json::Value::Null);
        map.insert(
            "out_dir".into(),
            serde_json::Value::String(out.display().to_string()),
        );
    }
    let c0 = first.side.facts.clock.clone().unwrap_or_default();
    RunSidecar {
        config,
        facts: RunFacts {
            scheduled: 0,
            wall_ns: 0,
            interrupted: false,
            sim: None,
            warnings: vec![],
            workers: vec![],
            kernel_net: None,
            shard: None,
            clock: Some(ClockSync {
                origin_unix_ns: base as u64,
                schedule_start_ns: u64::MAX,
                kernel: None,
                start_late_ns: 0,
                offset_uncertainty_ns: 0,
                start_at_unix_ns: c0.start_at_unix_ns,
            }),
            merge: None,
            ..first.side.facts.clone()
        },
        ..first.side.clone()
    }
}

/// A shard's facts added to the merged sidecar's.
fn add_part(m: &mut RunSidecar, p: &Part, shift: i128) {
    let s = &p.side;
    let label = p.shard.label();
    let shift_u = u64::try_from(shift).unwrap_or(0);
    m.facts.scheduled += s.facts.scheduled;
    m.facts.wall_ns = m.facts.wall_ns.max(s.facts.wall_ns + shift_u);
    m.facts.interrupted |= s.facts.interrupted;
    m.facts.workers.extend(s.facts.workers.iter().cloned());
    m.facts.warnings.extend(
        s.facts
            .warnings
            .iter()
            .map(|w| format!("shard {label}: {w}")),
    );
    if let (Some(mc), Some(c)) = (m.facts.clock.as_mut(), s.facts.clock.as_ref()) {
        mc.schedule_start_ns = mc.schedule_start_ns.min(c.schedule_start_ns + shift_u);
        mc.start_late_ns = mc.start_late_ns.max(c.start_late_ns);
        mc.offset_uncertainty_ns = mc.offset_uncertainty_ns.max(c.offset_uncertainty_ns);
    }
    if m.facts.served != s.facts.served {
        m.facts.served = None;
    }
    if s.facts.started_at < m.facts.started_at {
        m.facts.started_at = s.facts.started_at.clone();
    }
}

fn part_info(p: &Part, shift: i128, own: &Summary) -> ShardPart {
    ShardPart {
        index: p.shard.index,
        dir: p.dir.display().to_string(),
        started_at: p.side.facts.started_at.clone(),
        shift_ns: i64::try_from(shift).unwrap_or(i64::MAX),
        clock: p.side.facts.clock.clone(),
        scheduled: p.side.facts.scheduled,
        sched_lag_ms_p99: own.overhead.sched_lag_ms.p99,
        worker_cpu_percent: own.overhead.worker_cpu_percent,
        valid: own.overhead.valid,
        invalid_reasons: own.overhead.invalid_reasons.clone(),
    }
}

/// Test hook: moves every stamp of the run in `dir` (its scrapes' too) `by_ns` later and its
/// recorded clock origin `by_ns` earlier — the same instants, as a host whose run clock started `by_ns`
/// earlier would have stamped them. `merge` must undo it exactly.
pub fn shift_run(dir: &Path, by_ns: i64) -> Result<(), MergeError> {
    let (mut side, _) = replay::settings(dir, &Overrides::default())?;
    let tmp = dir.join(".shifted");
    std::fs::create_dir_all(&tmp).map_err(write_err(&tmp))?;
    let mut log = super::log::RequestLog::create(&tmp).map_err(write_err(&tmp))?;
    let mut rec = Record::default();
    let mut failed = None;
    read_records(dir, |r| {
        rec.clone_from(r);
        shift_stamps(&mut rec, i128::from(by_ns));
        if let Err(e) = log.append(&rec) {
            failed = Some(e);
        }
    })?;
    if let Some(e) = failed {
        return Err(MergeError::Write {
            dir: tmp,
            source: e,
        });
    }
    log.close().map_err(write_err(&tmp))?;
    let name = crate::record::jsonl::FILE_NAME;
    std::fs::rename(tmp.join(name), dir.join(name)).map_err(write_err(dir))?;
    let _ = std::fs::remove_dir(&tmp);
    if dir.join(crate::scrape::join::FILE_NAME).is_file() {
        shift_scrapes(dir, dir, i128::from(by_ns))?;
    }
    if let Some(c) = side.facts.clock.as_mut() {
        let mv = |v: u64| u64::try_from(i128::from(v) + i128::from(by_ns)).unwrap_or(0);
        c.origin_unix_ns =
            u64::try_from(i128::from(c.origin_unix_ns) - i128::from(by_ns)).unwrap_or(0);
        c.schedule_start_ns = mv(c.schedule_start_ns);
    }
    side.facts.wall_ns =
        u64::try_from(i128::from(side.facts.wall_ns) + i128::from(by_ns)).unwrap_or(0);
    side.write(dir).map_err(write_err(dir))
}
