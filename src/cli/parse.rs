//! Part of the CLI (the binary's first layer: raw flags → `Plan`): the parsers of single flag
//! values — durations, CPU lists, URLs, SLOs, headers, percentiles, export lists. Each error
//! names the flag and shows a value that works. No rule between two flags lives here: those
//! are `Plan::validate`'s.

use super::{usage, UsageError};
use ringbench::plan::{Endpoint, ExportKind, Slo, SloMetric, Target, MAX_CPU};

/// The unit a bare number is read in: each flag keeps the unit its name or its old help gave
/// it (`--duration 30` is seconds, `--max-lag 1` and `--sim-ttft-ms 20` milliseconds,
/// `--pacer-spin-us 40` microseconds), while a number with a unit means what it says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bare {
    S,
    Ms,
    Us,
}

impl Bare {
    fn ns(self) -> f64 {
        match self {
            Bare::S => 1e9,
            Bare::Ms => 1e6,
            Bare::Us => 1e3,
        }
    }
}

/// `ns` as the shortest duration text that `duration_ns_in` reads back exactly, in the
/// largest whole unit up to seconds (`600s`, `250ms`, `1500us`, `7ns`; `0s` for none).
pub fn duration_text(ns: u64) -> String {
    let units = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")];
    match units.iter().find(|(per, _)| ns % per == 0) {
        _ if ns == 0 => "0s".to_string(),
        Some((per, unit)) => format!("{}{unit}", ns / per),
        None => format!("{ns}ns"),
    }
}

/// A duration in ns: `30s`, `2m`, `500ms`, `100us` (or `µs`), `250ns`, `1h`, `1.5s`; a bare
/// number is in `bare`'s unit.
pub fn duration_ns_in(s: &str, bare: Bare) -> Result<u64, String> {
    let s = s.trim();
    if s.starts_with('-') {
        return Err(format!(
            "'{s}': must be positive (a duration like 30s, 2m, 500ms)"
        ));
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (like 30s, 2m, 500ms, 100us)"))?;
    let scale = match unit.trim() {
        "" => bare.ns(),
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        other => {
            return Err(format!(
                "'{s}': unknown unit '{other}' (use ns, us, ms, s, m or h)"
            ))
        }
    };
    let ns = value * scale;
    if !ns.is_finite() || ns >= u64::MAX as f64 {
        return Err(format!("'{s}' is not a finite duration"));
    }
    Ok(ns.round() as u64)
}

/// `30s`, `2m`, `500ms`, `100us`, `1h`, `1.5s`; a bare number is seconds.
pub fn parse_duration_ns(s: &str) -> Result<u64, String> {
    duration_ns_in(s, Bare::S)
}

/// `--stages`' value: one flag, a list of stages (a newtype, so clap keeps it one value).
#[derive(Clone, Debug, PartialEq)]
pub struct StageList(pub Vec<ringbench::plan::Stage>);

/// `--stages 200:30s,400:30s`: each stage a rate (req/s) and a duration (bare: s).
pub fn parse_stages(s: &str) -> Result<StageList, String> {
    s.split(',')
        .map(|part| {
            let (rate, d) = part
                .trim()
                .split_once(':')
                .ok_or_else(|| format!("stage '{part}': give RATE:DURATION, like 200:30s"))?;
            let rate: f64 = rate.trim().parse().map_err(|_| {
                format!("stage '{part}': '{rate}' is not a rate in req/s, like 200:30s")
            })?;
            if !(rate.is_finite() && rate > 0.0) {
                return Err(format!("stage '{part}': the rate must be above 0"));
            }
            let duration_ns = parse_duration_ns(d).map_err(|e| format!("stage '{part}': {e}"))?;
            if duration_ns == 0 {
                return Err(format!("stage '{part}': the duration must be above 0"));
            }
            Ok(ringbench::plan::Stage {
                request_rate: rate,
                duration_ns,
            })
        })
        .collect::<Result<_, _>>()
        .map(StageList)
}

/// A time in milliseconds, as the settings keep it: `20ms`, `0.5s`, `250us`; a bare number
/// is ms (the flags named `-ms`, `--max-lag`, `--goodput`'s bounds).
pub fn parse_ms(s: &str) -> Result<f64, String> {
    duration_ns_in(s, Bare::Ms).map(|ns| ns as f64 / 1e6)
}

/// As `parse_ms`, for the settings kept in whole milliseconds (`--fault-stall-ms`).
pub fn parse_whole_ms(s: &str) -> Result<u64, String> {
    let ns = duration_ns_in(s, Bare::Ms)?;
    if ns % 1_000_000 != 0 {
        return Err(format!(
            "'{s}' is not a whole number of ms (like 200ms or 5s)"
        ));
    }
    Ok(ns / 1_000_000)
}

/// `0`, `0,1`, `0-3`, `0-1,4`: CPUs this process may run on (`online`), each at most
/// `MAX_CPU`, so a typo like `0-99999999999` is an error, not an allocation of that size.
pub fn parse_cpus(flag: &str, s: &str, online: &[usize]) -> Result<Vec<usize>, UsageError> {
    let bad = || {
        UsageError(format!(
            "{flag} '{s}': expected CPU numbers like 0 or 0,1 or 0-3"
        ))
    };
    let beyond = |c: usize| {
        UsageError(format!(
            "{flag}: CPU {c} is not available here (available: {online:?})"
        ))
    };
    let mut cpus = vec![];
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b): (usize, usize) = match part.split_once('-') {
            Some((a, b)) => (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?),
            None => {
                let c = part.parse().map_err(|_| bad())?;
                (c, c)
            }
        };
        if a > b {
            return Err(bad());
        }
        if b > MAX_CPU {
            return Err(beyond(b));
        }
        cpus.extend(a..=b);
    }
    if cpus.is_empty() {
        return Err(bad());
    }
    match cpus.iter().find(|c| !online.contains(c)) {
        Some(&c) => Err(beyond(c)),
        None => Ok(cpus),
    }
}

/// `--cpus` and `--sim-cpus`: the workers' CPUs and the simulator's, each by the one default
/// rule (`ringbench::host::default_sim_cpus`) where not given. `--cpus auto`: every CPU this
/// process may run on but one (`ringbench::host::auto_worker_cpus`; the pod's cpuset in a
/// container).
pub fn cpus_of(
    workers: Option<&str>,
    sim: Option<&str>,
) -> Result<(Vec<usize>, Vec<usize>), UsageError> {
    let online = ringbench::host::online_cpus();
    let workers = match workers {
        Some(s) if s.trim() == "auto" => ringbench::host::auto_worker_cpus(&online),
        Some(s) => parse_cpus("--cpus", s, &online)?,
        None => ringbench::host::default_worker_cpus(&online),
    };
    let sim = match sim {
        Some(s) => parse_cpus("--sim-cpus", s, &online)?,
        None => ringbench::host::default_sim_cpus(&online, &workers),
    };
    Ok((workers, sim))
}

/// `--goodput KEY:MS` (vLLM's syntax): `ttft:500`, `e2el:3000ms`, `e2e:3s` (a bare bound is
/// ms, as vLLM's).
pub fn parse_slo(s: &str) -> Result<Slo, UsageError> {
    let bad = |why: &str| UsageError(format!("--goodput '{s}': {why} (like ttft:500 tpot:50)"));
    let (k, v) = s.split_once(':').ok_or_else(|| bad("expected KEY:MS"))?;
    let metric = SloMetric::from_key(k)
        .ok_or_else(|| bad("unknown key; use ttft, tpot, itl, e2e or ntpot"))?;
    let max_ms = parse_ms(v).map_err(|_| bad("not a time (ms, or with a unit: 500ms, 0.5s)"))?;
    if !(max_ms.is_finite() && max_ms > 0.0) {
        return Err(bad("the bound must be above 0"));
    }
    Ok(Slo { metric, max_ms })
}

/// `--url`: `http://host:port[/prefix]` or `https://…` (`Target::parse`).
pub fn parse_target(url: &str) -> Result<Target, UsageError> {
    Target::parse(url).map_err(|e| UsageError(e.0))
}

/// `--url-file FILE`: its URLs, one per line; blank lines and lines starting with `#`
/// skipped.
pub fn url_file(path: &std::path::Path) -> Result<Vec<String>, UsageError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        UsageError(format!(
            "--url-file {}: {e} (give a text file, one URL per line)",
            path.display()
        ))
    })?;
    let urls: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect();
    if urls.is_empty() {
        return usage(format!(
            "--url-file {}: no URL in it (one per line, like http://10.0.0.1:8000)",
            path.display()
        ));
    }
    Ok(urls)
}

/// `--header NAME:VALUE`, or vLLM's `NAME=VALUE`: split at the first `:` or `=`, neither
/// of which a header name may hold.
pub fn parse_header(s: &str) -> Result<(String, String), UsageError> {
    match s.find([':', '=']).map(|i| (&s[..i], &s[i + 1..])) {
        Some((k, v)) if !k.trim().is_empty() && !k.trim().contains(char::is_whitespace) => {
            Ok((k.trim().to_string(), v.trim().to_string()))
        }
        _ => usage(format!(
            "--header '{s}': expected NAME:VALUE (or NAME=VALUE), like --header X-Team:infra"
        )),
    }
}

/// `--endpoint`: a name (`chat`, `responses`, …) or the route as vLLM spells it
/// (`/v1/chat/completions`, `/v1/responses`, …; `/rerank` is TEI's).
pub fn parse_endpoint(s: &str) -> Result<Endpoint, String> {
    let want = s.trim().trim_end_matches('/');
    let bare = want.trim_start_matches('/');
    Endpoint::ALL
        .into_iter()
        .find(|e| e.name() == want || e.path().trim_start_matches('/') == bare)
        .ok_or_else(|| {
            let names: Vec<&str> = Endpoint::ALL.iter().map(|e| e.name()).collect();
            format!(
                "'{s}' is not a route ringbench calls: use {} or its path (/v1/chat/completions, \
                 /v1/responses, /v1/messages, /v1/embeddings, /v1/rerank, /v1/score, TEI's \
                 /rerank; a path prefix before /v1 goes in --url)",
                names.join(", ")
            )
        })
}

/// `--percentiles 50,99,99.9`: each in (0, 100].
pub fn check_percentiles(ps: &[f64]) -> Result<Vec<f64>, UsageError> {
    if let Some(p) = ps
        .iter()
        .find(|p| !(p.is_finite() && **p > 0.0 && **p <= 100.0))
    {
        return usage(format!(
            "--percentiles: {p} is not a percentile (use values in (0, 100], like 50,99,99.9)"
        ));
    }
    Ok(ps.to_vec())
}

/// `--export` (run and report): the formats to write; all when not given.
pub fn exports_of(list: Option<&[String]>) -> Result<Vec<ExportKind>, UsageError> {
    match list {
        None => Ok(ExportKind::ALL.to_vec()),
        Some(items) => ExportKind::parse_list(items).map_err(UsageError),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration_ns("30s"), Ok(30_000_000_000));
        assert_eq!(parse_duration_ns("2m"), Ok(120_000_000_000));
        assert_eq!(parse_duration_ns("500ms"), Ok(500_000_000));
        assert_eq!(parse_duration_ns("100us"), Ok(100_000));
        assert_eq!(parse_duration_ns("1.5"), Ok(1_500_000_000));
        assert_eq!(parse_duration_ns("250ns"), Ok(250));
        assert_eq!(parse_duration_ns("3µs"), Ok(3_000));
        assert!(parse_duration_ns("1e30h").is_err());
        assert!(parse_duration_ns("-1s").is_err());
        assert!(parse_duration_ns("").is_err());
        assert!(parse_duration_ns("5 parsecs")
            .unwrap_err()
            .contains("unknown unit"));
    }

    #[test]
    fn bare_numbers_keep_each_flags_old_unit() {
        assert_eq!(duration_ns_in("40", Bare::Us), Ok(40_000));
        assert_eq!(duration_ns_in("40", Bare::Ms), Ok(40_000_000));
        assert_eq!(duration_ns_in("40us", Bare::Ms), Ok(40_000));
        assert_eq!(duration_ns_in("2s", Bare::Us), Ok(2_000_000_000));
        assert_eq!(parse_ms("1"), Ok(1.0));
        assert_eq!(parse_ms("100us"), Ok(0.1));
        assert_eq!(parse_ms("0.25s"), Ok(250.0));
        assert_eq!(parse_whole_ms("5s"), Ok(5_000));
        assert_eq!(parse_whole_ms("200"), Ok(200));
        assert!(parse_whole_ms("1500us")
            .unwrap_err()
            .contains("whole number of ms"));
    }

    #[test]
    fn cpu_lists_parse_and_huge_ranges_are_refused_before_allocating() {
        let online = [0, 1, 2, 3];
        assert_eq!(parse_cpus("--cpus", "0", &online).unwrap(), vec![0]);
        assert_eq!(
            parse_cpus("--cpus", "0-1,3", &online).unwrap(),
            vec![0, 1, 3]
        );
        for bad in [
            "",
            "3-1",
            "x",
            "0-18446744073709551615",
            "0-99999999999",
            "9",
        ] {
            let e = parse_cpus("--cpus", bad, &online).unwrap_err().0;
            assert!(e.starts_with("--cpus"), "{bad}: {e}");
        }
    }

    /// `--cpus auto` reads the process's affinity mask (a container's cpuset): the kernel's
    /// own list of it, `Cpus_allowed_list` in /proc/self/status, read here independently of
    /// `sched_getaffinity`, gives the same CPUs, all but the last (left to the collector).
    #[test]
    fn cpus_auto_is_the_affinity_mask_but_one() {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let list = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .expect("Cpus_allowed_list in /proc/self/status")
            .trim();
        let allowed = parse_cpus("--cpus", list, &(0..=MAX_CPU).collect::<Vec<_>>()).unwrap();
        let (workers, sim) = cpus_of(Some("auto"), None).unwrap();
        let (manual, _) = cpus_of(Some(list), None).unwrap();
        assert_eq!(manual, allowed);
        if allowed.len() == 1 {
            assert_eq!(workers, allowed);
        } else {
            assert_eq!(workers, allowed[..allowed.len() - 1]);
            assert_eq!(
                sim,
                [*allowed.last().unwrap()],
                "the spare CPU is not a worker's"
            );
        }
        assert!(cpus_of(Some(" auto "), None).is_ok());
        let e = cpus_of(Some("automatic"), None).unwrap_err().0;
        assert!(e.starts_with("--cpus 'automatic'"), "{e}");
    }

    #[test]
    fn slos_read_vllm_keys() {
        assert_eq!(
            parse_slo("e2el:3000ms").unwrap(),
            Slo {
                metric: SloMetric::E2e,
                max_ms: 3000.0
            }
        );
        assert_eq!(parse_slo("ttft:0.5s").unwrap().max_ms, 500.0);
        assert_eq!(parse_slo("tpot:50").unwrap().max_ms, 50.0);
        assert!(parse_slo("foo:5").unwrap_err().0.contains("unknown key"));
        assert!(parse_slo("ttft=5").unwrap_err().0.contains("--goodput"));
        assert!(parse_slo("ttft:0").unwrap_err().0.contains("above 0"));
    }
}

/// The environment variable a Kubernetes Indexed Job sets to each pod's index.
pub const JOB_INDEX_VAR: &str = "JOB_COMPLETION_INDEX";

/// `--shard I/N`, or `--shard auto --shards N` with the index from `job_index` (the value of
/// `JOB_COMPLETION_INDEX`, `None` when unset); no `--shard`: the whole run.
pub fn shard_of(
    shard: Option<&str>,
    shards: Option<u32>,
    job_index: Option<&str>,
) -> Result<Option<ringbench::plan::Shard>, UsageError> {
    use ringbench::plan::Shard;
    let Some(spec) = shard else {
        if shards.is_some() {
            return usage("--shards N goes with --shard auto (or give --shard I/N alone)");
        }
        return Ok(None);
    };
    let spec = spec.trim();
    let shard = if spec == "auto" {
        let Some(count) = shards else {
            return usage("--shard auto needs --shards N, the number of shards of the run");
        };
        let Some(raw) = job_index else {
            return usage(format!(
                "--shard auto reads {JOB_INDEX_VAR}, which is not set (a Kubernetes Indexed \
                 Job sets it; elsewhere give --shard I/{count})"
            ));
        };
        let index = raw.trim().parse::<u32>().map_err(|_| {
            UsageError(format!(
                "--shard auto: {JOB_INDEX_VAR}='{raw}' is not a shard index (0 to {})",
                count.saturating_sub(1)
            ))
        })?;
        Shard { index, count }
    } else {
        if shards.is_some() {
            return usage(format!(
                "--shards goes with --shard auto; --shard {spec} already names the count"
            ));
        }
        let parsed = spec
            .split_once('/')
            .and_then(|(i, n)| Some((i.trim().parse().ok()?, n.trim().parse().ok()?)));
        let Some((index, count)) = parsed else {
            return usage(format!(
                "--shard '{spec}': give I/N (this host's index from 0, and the number of \
                 shards), like 0/3, or auto with --shards N"
            ));
        };
        Shard { index, count }
    };
    if shard.count == 0 || shard.index >= shard.count {
        return usage(format!(
            "--shard {}: the index must be 0 to {} (the count less one){}",
            shard.label(),
            shard.count.saturating_sub(1),
            if spec == "auto" {
                format!(" ({JOB_INDEX_VAR} gave the index)")
            } else {
                String::new()
            }
        ));
    }
    Ok(Some(shard))
}

/// `--start-at TIME`: RFC 3339 (`2026-12-02T08:30:00Z`, `…08:30:00.250+01:00`) or Unix
/// nanoseconds (digits only), to Unix nanoseconds.
pub fn parse_start_at(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let fix = "give RFC 3339, like 2026-12-02T08:30:00Z, or Unix nanoseconds";
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse::<u64>()
            .map_err(|_| format!("'{s}' is too large for Unix nanoseconds; {fix}"));
    }
    rfc3339_unix_ns(s).ok_or_else(|| format!("'{s}' is not a time; {fix}"))
}

/// `YYYY-MM-DD(T| )HH:MM:SS[.frac](Z|±HH:MM)` to Unix ns; `None` if malformed or before 1970.
fn rfc3339_unix_ns(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut frac_ns: i64 = 0;
    if let Some(f) = rest.strip_prefix('.') {
        let digits = f.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        for (k, c) in f[..digits].bytes().enumerate() {
            if k < 9 {
                frac_ns += i64::from(c - b'0') * 10_i64.pow(8 - k as u32);
            }
        }
        rest = &f[digits..];
    }
    let offset_s = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let o = rest.as_bytes();
            if o.len() != 6 || o[3] != b':' {
                return None;
            }
            let (oh, om) = (num_of(&rest[1..3])?, num_of(&rest[4..6])?);
            if oh > 23 || om > 59 {
                return None;
            }
            sign * (oh * 3600 + om * 60)
        }
    };
    let days = days_from_civil(y, mo as u32, d as u32);
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_s;
    u64::try_from(secs)
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(frac_ns as u64)
}

fn num_of(t: &str) -> Option<i64> {
    t.bytes()
        .all(|c| c.is_ascii_digit())
        .then(|| t.parse().ok())?
}

/// (year, month, day) to days since 1970-01-01: Howard Hinnant's `days_from_civil`.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod shard_tests {
    use super::*;
    use ringbench::plan::Shard;

    #[test]
    fn shard_flags_parse_and_name_the_flag_when_wrong() {
        let s = |spec, n, env| shard_of(spec, n, env).map_err(|e| e.0);
        assert_eq!(s(None, None, None), Ok(None));
        assert_eq!(
            s(Some("2/3"), None, None),
            Ok(Some(Shard { index: 2, count: 3 }))
        );
        assert_eq!(
            s(Some("auto"), Some(4), Some("3")),
            Ok(Some(Shard { index: 3, count: 4 }))
        );
        let err = s(Some("auto"), Some(4), None).unwrap_err();
        assert!(
            err.contains("--shard auto") && err.contains(JOB_INDEX_VAR),
            "{err}"
        );
        let err = s(Some("auto"), Some(4), Some("4")).unwrap_err();
        assert!(
            err.contains("--shard 4/4") && err.contains(JOB_INDEX_VAR),
            "{err}"
        );
        let err = s(Some("auto"), Some(4), Some("x")).unwrap_err();
        assert!(err.contains(JOB_INDEX_VAR) && err.contains("'x'"), "{err}");
        let err = s(Some("auto"), None, Some("1")).unwrap_err();
        assert!(err.contains("--shards N"), "{err}");
        let err = s(Some("3/3"), None, None).unwrap_err();
        assert!(
            err.contains("--shard 3/3") && err.contains("0 to 2"),
            "{err}"
        );
        let err = s(Some("1/0"), None, None).unwrap_err();
        assert!(err.contains("--shard 1/0"), "{err}");
        let err = s(Some("1-3"), None, None).unwrap_err();
        assert!(
            err.contains("--shard '1-3'") && err.contains("I/N"),
            "{err}"
        );
        let err = s(Some("0/2"), Some(2), None).unwrap_err();
        assert!(err.contains("--shards"), "{err}");
        let err = s(None, Some(2), None).unwrap_err();
        assert!(err.contains("--shard auto"), "{err}");
    }

    #[test]
    fn start_at_reads_rfc3339_and_unix_ns() {
        assert_eq!(parse_start_at("0"), Ok(0));
        assert_eq!(
            parse_start_at("1795959946000000000"),
            Ok(1_795_959_946_000_000_000)
        );
        // The instant `rt::clock`'s own test formats as 2026-11-29T13:45:46Z.
        assert_eq!(
            parse_start_at("2026-11-29T13:45:46Z"),
            Ok(1_795_959_946_000_000_000)
        );
        assert_eq!(
            parse_start_at("2026-11-29T14:45:46.25+01:00"),
            Ok(1_795_959_946_250_000_000)
        );
        assert_eq!(
            parse_start_at("2000-02-29T00:00:00.000000001Z"),
            Ok(951_782_400_000_000_001)
        );
        assert_eq!(parse_start_at("1970-01-01T00:00:00Z"), Ok(0));
        for bad in [
            "",
            "soon",
            "2026-11-29",
            "2026-11-29T13:45:46",
            "2026-13-01T00:00:00Z",
            "2026-11-29T13:45:46+0100",
            "1969-12-31T23:59:59Z",
            "99999999999999999999",
            "-5",
        ] {
            let err = parse_start_at(bad).unwrap_err();
            assert!(err.contains("RFC 3339"), "{bad}: {err}");
        }
    }
}
