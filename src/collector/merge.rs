//! Part of the collector (… → record → **collector** → summary → report): `ringbench merge`,
//! one run from the folders of its shards (`run --shard I/N`). It checks that the shards are
//! one run (same plan hash, seed and shard count; each shard's records exactly its own
//! global indices, once each; every shard 0..N there once), moves every stamp onto one time
//! base (the earliest shard's wall-clock origin, by each shard's recorded `clock` offset),
//! writes the union of the records as one `requests.jsonl` with a `run.json` beside it, and
//! recomputes the summary from them through `replay::recompute`, the path `ringbench report`
//! takes: never by combining the shards' percentiles. Each shard's own overhead (lag, CPU,
//! validity) is kept in the summary's `merge` block, and the merged run is valid only if
//! every shard was and none is missing. Memory stays flat: records stream one at a time.
//! Never prints.

use super::replay::{self, read_records, Overrides, ReplayError};
use super::sidecar::RunSidecar;
use super::Collector;
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

/// Merges the shard folders `dirs` into `out` (`requests.jsonl`, `run.json`); returns the
/// recomputed summary. The caller writes `summary.json` and the exports
/// (`output::write_run`).
pub fn merge(dirs: &[PathBuf], out: &Path, opts: &MergeOptions) -> Result<Summary, MergeError> {
    let parts = read_parts(dirs)?;
    let first = &parts[0];
    let info0 = first.side.shard.clone().expect("read_parts checked");
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
    std::fs::create_dir_all(out).map_err(write_err(out))?;
    let mut log = super::log::RequestLog::create(out).map_err(write_err(out))?;
    let mut merged = merged_sidecar(first, base, out);
    let mut parts_info = Vec::with_capacity(kept.len());
    let mut arrivals = 0;
    for p in &kept {
        let shift = origin(&p.side) - base;
        let (own, own_arrivals) = copy_records(p, shift, info0.global_scheduled, |r| log.append(r))
            .map_err(copy_err(&p.dir, out))?;
        arrivals += own_arrivals;
        add_part(&mut merged, p, shift);
        parts_info.push(part_info(p, shift, &own));
    }
    log.close().map_err(write_err(out))?;
    if let Some(c) = merged
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
    merged.merge = Some(MergeInfo {
        shards: count,
        complete: missing.is_empty() && duplicated.is_empty(),
        missing,
        duplicated,
        origin_unix_ns: base as u64,
        max_clock_error_us: kept.iter().filter_map(|p| max_error_us(p)).max(),
        parts: parts_info,
    });
    merged.write(out).map_err(write_err(out))?;
    Ok(replay::recompute(out, &Overrides::default())?)
}

/// A shard's copy failure as the merge's error: a bad record names the shard's folder, a
/// failed write the output folder.
fn copy_err<'a>(dir: &'a Path, out: &'a Path) -> impl FnOnce(CopyError) -> MergeError + 'a {
    move |e| match e {
        CopyError::Replay(e) => MergeError::Replay(e),
        CopyError::Records(reason) => MergeError::Records {
            dir: dir.to_path_buf(),
            reason,
        },
        CopyError::Write(source) => MergeError::Write {
            dir: out.to_path_buf(),
            source,
        },
    }
}

/// The kernel's maximum clock error on a shard's host, µs, when it recorded one.
fn max_error_us(p: &Part) -> Option<i64> {
    p.side
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
        let Some(info) = side.shard.clone() else {
            return Err(MergeError::NotShard(dir.clone()));
        };
        if let Some(first) = parts.first() {
            let f = first.side.shard.as_ref().expect("checked");
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
    side.clock
        .as_ref()
        .map_or(0, |c| i128::from(c.origin_unix_ns))
}

enum CopyError {
    Replay(ReplayError),
    Records(String),
    Write(std::io::Error),
}

/// Streams a shard's records to `write`, each stamp moved `shift` ns later, checking that
/// its arrivals are exactly its share of the global indices, once each; returns the shard's
/// own summary (recomputed from the same records, for its overhead) and its arrivals. An
/// arrival is a request, or for conversations (`--turns`, sharded by session) a session:
/// its first turn's record (sent or not) stands for it.
fn copy_records(
    p: &Part,
    shift: i128,
    global: Option<u64>,
    mut write: impl FnMut(&Record) -> std::io::Result<()>,
) -> Result<(Summary, u64), CopyError> {
    let (side, settings) =
        replay::settings(&p.dir, &Overrides::default()).map_err(CopyError::Replay)?;
    let mut own = Collector::from_settings(settings);
    let n = u64::from(p.shard.count.max(1));
    let mut seen: Vec<u64> = Vec::new();
    let mut fault: Option<String> = None;
    let mut write_error: Option<std::io::Error> = None;
    let mut rec = Record::default();
    let mut all = 0u64;
    let mut copy = |r: &Record, write_error: &mut Option<std::io::Error>| {
        rec.clone_from(r);
        shift_stamps(&mut rec, shift);
        if let Err(e) = write(&rec) {
            *write_error = Some(e);
        }
    };
    let lines = read_records(&p.dir, |r| {
        if fault.is_some() || write_error.is_some() {
            return;
        }
        own.add(r);
        all += 1;
        let (key, first) = r.turn.map_or((r.id, true), |t| (t.session, t.index == 0));
        if !first {
            copy(r, &mut write_error);
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
            return;
        }
        copy(r, &mut write_error);
    })
    .map_err(CopyError::Replay)?;
    if let Some(e) = write_error {
        return Err(CopyError::Write(e));
    }
    if let Some(f) = fault {
        return Err(CopyError::Records(f));
    }
    let arrivals: u64 = seen.iter().map(|w| u64::from(w.count_ones())).sum();
    if all != side.scheduled {
        return Err(CopyError::Records(format!(
            "{all} records for {} scheduled requests ({lines} lines): the shard's log is \
             incomplete",
            side.scheduled
        )));
    }
    if let Some(g) = global.filter(|&g| p.shard.share(g) != arrivals) {
        return Err(CopyError::Records(format!(
            "shard {} scheduled {arrivals} arrivals, its share of the run's {g} is {}",
            p.shard.label(),
            p.shard.share(g)
        )));
    }
    Ok((own.summarize(side.facts(), side.host.clone()), arrivals))
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
    let mv = |v: u64| u64::try_from(i128::from(v) + shift).unwrap_or(0);
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
    let c0 = first.side.clock.clone().unwrap_or_default();
    RunSidecar {
        config,
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
        ..first.side.clone()
    }
}

/// A shard's facts added to the merged sidecar's.
fn add_part(m: &mut RunSidecar, p: &Part, shift: i128) {
    let s = &p.side;
    let label = p.shard.label();
    let shift_u = u64::try_from(shift).unwrap_or(0);
    m.scheduled += s.scheduled;
    m.wall_ns = m.wall_ns.max(s.wall_ns + shift_u);
    m.interrupted |= s.interrupted;
    m.workers.extend(s.workers.iter().cloned());
    m.warnings
        .extend(s.warnings.iter().map(|w| format!("shard {label}: {w}")));
    if let (Some(mc), Some(c)) = (m.clock.as_mut(), s.clock.as_ref()) {
        mc.schedule_start_ns = mc.schedule_start_ns.min(c.schedule_start_ns + shift_u);
        mc.start_late_ns = mc.start_late_ns.max(c.start_late_ns);
        mc.offset_uncertainty_ns = mc.offset_uncertainty_ns.max(c.offset_uncertainty_ns);
    }
    if s.started_at < m.started_at {
        m.started_at = s.started_at.clone();
    }
}

fn part_info(p: &Part, shift: i128, own: &Summary) -> ShardPart {
    ShardPart {
        index: p.shard.index,
        dir: p.dir.display().to_string(),
        started_at: p.side.started_at.clone(),
        shift_ns: i64::try_from(shift).unwrap_or(i64::MAX),
        clock: p.side.clock.clone(),
        scheduled: p.side.scheduled,
        sched_lag_ms_p99: own.overhead.sched_lag_ms.p99,
        worker_cpu_percent: own.overhead.worker_cpu_percent,
        valid: own.overhead.valid,
        invalid_reasons: own.overhead.invalid_reasons.clone(),
    }
}

/// Test hook: moves every stamp of the run in `dir` `by_ns` later and its recorded clock
/// origin `by_ns` earlier — the same instants, as a host whose run clock started `by_ns`
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
    if let Some(c) = side.clock.as_mut() {
        let mv = |v: u64| u64::try_from(i128::from(v) + i128::from(by_ns)).unwrap_or(0);
        c.origin_unix_ns =
            u64::try_from(i128::from(c.origin_unix_ns) - i128::from(by_ns)).unwrap_or(0);
        c.schedule_start_ns = mv(c.schedule_start_ns);
    }
    side.wall_ns = u64::try_from(i128::from(side.wall_ns) + i128::from(by_ns)).unwrap_or(0);
    side.write(dir).map_err(write_err(dir))
}
