//! Part of the CLI (the binary's first layer: raw flags → `Plan`): `--config FILE`, read into
//! flags. A TOML or YAML file's keys are long flag names (`request-rate = 50`, lists as
//! arrays); a run's `summary.json` holds the flags that made it (`config.args`) and its prompt
//! nonce. Either way the file becomes command-line arguments placed before the line's own, so
//! clap's own parsing, checks and messages apply to them, and a flag on the line replaces the
//! file's value of the same flag. There is no second settings type: the flags are the one
//! source. Errors name the file, the key and the fix; nothing here prints.

use super::UsageError;
use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, Command};
use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// One flag read from a file: its long name as the file spells it, and its values (none for
/// a flag that is on).
#[derive(Clone, Debug, PartialEq)]
struct Entry {
    key: String,
    values: Vec<String>,
}

/// A file read: its flags, and for a `summary.json` the run's resolved settings (to say how a
/// rerun differs from it).
pub struct Loaded {
    entries: Vec<Entry>,
    /// `summary.json`'s `config` block.
    pub recorded: Option<Value>,
}

/// Flags of a run that its rerun does not take: where its files went (`--out`, AIPerf's
/// `--artifact-dir`, vLLM's `--result-filename`) and its id (`--run-id`, vLLM's
/// `--request-id-prefix`).
pub const NOT_RERUN: [&str; 5] = [
    "out",
    "artifact-dir",
    "result-filename",
    "run-id",
    "request-id-prefix",
];

/// Keys a file may not hold, and why.
const REFUSED: [(&str, &str); 2] = [
    (
        "config",
        "a config file cannot name another one: merge them, or give the other one on the line",
    ),
    (
        "api-key",
        "keep secrets out of files kept in git: set OPENAI_API_KEY or give --api-key on the line",
    ),
];

/// Reads `path`: `.toml`, `.yaml`/`.yml`, or a run's `summary.json` (or the run's folder).
pub fn load(path: &Path) -> Result<Loaded, UsageError> {
    let path = if path.is_dir() {
        path.join("summary.json")
    } else {
        path.to_path_buf()
    };
    let shown = path.display();
    let text = std::fs::read_to_string(&path)
        .map_err(|e| UsageError(format!("--config {shown}: cannot read it ({e})")))?;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let bad = |what: &str, e: &dyn std::fmt::Display| {
        UsageError(format!("--config {shown}: not valid {what}: {e}"))
    };
    let doc: Value = match ext.as_str() {
        "toml" => toml::from_str(&text).map_err(|e| bad("TOML", &e))?,
        "yaml" | "yml" => serde_norway::from_str(&text).map_err(|e| bad("YAML", &e))?,
        "json" => serde_json::from_str(&text).map_err(|e| bad("JSON", &e))?,
        _ => {
            return Err(UsageError(format!(
                "--config {shown}: name the file .toml, .yaml or .yml (or give a run's \
                 summary.json or its folder)"
            )))
        }
    };
    if doc.get("schema_version").is_some() && doc.get("config").is_some() {
        return from_summary(&path, doc);
    }
    let Value::Object(map) = doc else {
        return Err(UsageError(format!(
            "--config {shown}: expected keys and values at the top, like request-rate = 50"
        )));
    };
    let entries = map
        .into_iter()
        .map(|(key, v)| entry_of(&path, key, v))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .flatten()
        .collect();
    Ok(Loaded {
        entries,
        recorded: None,
    })
}

/// `key = value`: a flag that is on (`true`; `false` leaves it off), one value, or a list.
fn entry_of(path: &Path, key: String, v: Value) -> Result<Option<Entry>, UsageError> {
    let scalar = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    let values = match &v {
        Value::Bool(false) => return Ok(None),
        Value::Bool(true) => vec![],
        Value::Array(items) => items
            .iter()
            .map(scalar)
            .collect::<Option<Vec<_>>>()
            .ok_or(())
            .map_err(|()| not_a_value(path, &key))?,
        other => vec![scalar(other).ok_or_else(|| not_a_value(path, &key))?],
    };
    Ok(Some(Entry { key, values }))
}

fn not_a_value(path: &Path, key: &str) -> UsageError {
    UsageError(format!(
        "--config {}: key `{key}`: give a string, a number, true, or a list of them",
        path.display()
    ))
}

/// A run's `summary.json`: the flags in `config.args` but `NOT_RERUN`'s, and the prompt nonce
/// the run drew (unless its flags fixed it or turned salting off), so the rerun sends the same
/// bytes.
fn from_summary(path: &Path, doc: Value) -> Result<Loaded, UsageError> {
    let config = doc["config"].clone();
    let Some(args) = config.get("args").and_then(Value::as_array) else {
        return Err(UsageError(format!(
            "--config {}: this summary.json has no config.args (written by a library call or \
             an older ringbench): give the run's flags instead",
            path.display()
        )));
    };
    let mut entries = Vec::with_capacity(args.len() + 1);
    for arg in args {
        let Some(flag) = arg.as_str().and_then(|a| a.strip_prefix("--")) else {
            return Err(UsageError(format!(
                "--config {}: config.args holds {arg}, not a --flag",
                path.display()
            )));
        };
        entries.push(match flag.split_once('=') {
            Some((k, v)) => Entry {
                key: k.to_string(),
                values: vec![v.to_string()],
            },
            None => Entry {
                key: flag.to_string(),
                values: vec![],
            },
        });
    }
    // The run's identity is not the plan's: a rerun gets its own folder and id, never
    // writing over the run it repeats.
    entries.retain(|e| !NOT_RERUN.contains(&e.key.as_str()));
    let workload = &config["workload"];
    let nonce = workload["prompt_nonce"].as_u64();
    let named = entries.iter().any(|e| e.key == "prompt-nonce");
    if let (Some(n), true, false) = (nonce, workload["prompt_salt"] == true, named) {
        entries.push(Entry {
            key: "prompt-nonce".into(),
            values: vec![n.to_string()],
        });
    }
    Ok(Loaded {
        entries,
        recorded: Some(config),
    })
}

/// The argument of `cmd` a file's key names: its long name or an alias, with `_` read as
/// `-` (`request_rate` is `--request-rate`).
fn find<'a>(cmd: &'a Command, key: &str) -> Option<&'a clap::Arg> {
    let key = key.replace('_', "-");
    cmd.get_arguments().find(|a| {
        a.get_long() == Some(key.as_str())
            || a.get_all_aliases()
                .is_some_and(|al| al.contains(&key.as_str()))
    })
}

/// The long flag nearest to an unknown key, when one is near enough to be a typo.
fn nearest(cmd: &Command, key: &str) -> Option<String> {
    let key = key.replace('_', "-");
    cmd.get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter_map(|a| a.get_long())
        .map(|l| (strsim::jaro_winkler(&key, l), l))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, l)| l.to_string())
}

/// The file's flags as arguments for `cmd` (the subcommand), leaving out those the line
/// gives itself (`line`: the line's own matches), so the line's value wins whole (a list
/// too, not appended to the file's).
pub fn to_args(
    loaded: &Loaded,
    path: &Path,
    cmd: &Command,
    line: &ArgMatches,
) -> Result<Vec<OsString>, UsageError> {
    let shown = path.display();
    let mut out = Vec::new();
    for e in &loaded.entries {
        if let Some((_, why)) = REFUSED.iter().find(|(k, _)| e.key.replace('_', "-") == *k) {
            return Err(UsageError(format!(
                "--config {shown}: key `{}`: {why}",
                e.key
            )));
        }
        let Some(arg) = find(cmd, &e.key) else {
            let hint = match nearest(cmd, &e.key) {
                Some(l) => format!("did you mean `{l}`?"),
                None => format!("see `ringbench {} --help`", cmd.get_name()),
            };
            return Err(UsageError(format!(
                "--config {shown}: unknown key `{}`: no flag --{} ({hint})",
                e.key,
                e.key.replace('_', "-")
            )));
        };
        let Some(long) = arg.get_long() else {
            continue;
        };
        let id = arg.get_id().as_str();
        if line.value_source(id) == Some(ValueSource::CommandLine) {
            continue;
        }
        let takes_values = !matches!(
            arg.get_action(),
            ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count
        );
        match (takes_values, e.values.as_slice()) {
            (false, []) => out.push(format!("--{long}").into()),
            (false, _) => {
                return Err(UsageError(format!(
                    "--config {shown}: key `{}`: --{long} is a switch: write {} = true",
                    e.key, e.key
                )))
            }
            (true, []) => out.push(format!("--{long}").into()),
            (true, values) => {
                out.extend(values.iter().map(|v| format!("--{long}={v}").into()));
            }
        }
    }
    Ok(out)
}

/// The flags a run was given (the file's and the line's, as `--long=value`), for
/// `summary.json`'s `config.args`: what `--config summary.json` reads back. The API key and
/// secret-looking headers are left out, and so is `--config` (its flags are in the list).
pub fn given_args(cmd: &Command, m: &ArgMatches) -> Vec<String> {
    let mut out = Vec::new();
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if m.value_source(id) != Some(ValueSource::CommandLine) || id == "config" {
            continue;
        }
        let (Some(long), false) = (arg.get_long(), id == "api_key") else {
            continue;
        };
        if matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse) {
            out.push(format!("--{long}"));
            continue;
        }
        let raw: Vec<String> = m
            .get_raw(id)
            .map(|vs| vs.map(|v| v.to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        if raw.is_empty() {
            out.push(format!("--{long}"));
        }
        for v in raw {
            if id == "headers" && secret_header(&v) {
                continue;
            }
            out.push(format!("--{long}={v}"));
        }
    }
    out
}

fn secret_header(kv: &str) -> bool {
    let name = kv.split([':', '=']).next().unwrap_or_default();
    ringbench::plan::is_secret_header(name.trim())
}

/// How a rerun's plan differs from the run it was read from, as `config` keys (`sim.ttft_ms`),
/// leaving out what is new on every run (its id, folder, progress display, vLLM's file name)
/// and the secrets, which are never read back (said by `secrets_missing`).
pub fn differences(recorded: &Value, now: &Value) -> Vec<String> {
    const FRESH: [&str; 7] = [
        "run_id",
        "out_dir",
        "progress",
        "vllm_result",
        "args",
        "api_key",
        "headers",
    ];
    let mut out = Vec::new();
    let (Some(a), Some(b)) = (recorded.as_object(), now.as_object()) else {
        return out;
    };
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for k in keys {
        if FRESH.contains(&k.as_str()) {
            continue;
        }
        let (x, y) = (
            a.get(k).unwrap_or(&Value::Null),
            b.get(k).unwrap_or(&Value::Null),
        );
        if x == y {
            continue;
        }
        match (x.as_object(), y.as_object()) {
            (Some(xo), Some(yo)) => {
                let inner: std::collections::BTreeSet<&String> =
                    xo.keys().chain(yo.keys()).collect();
                out.extend(
                    inner
                        .into_iter()
                        .filter(|ik| xo.get(*ik) != yo.get(*ik))
                        .map(|ik| format!("{k}.{ik}")),
                );
            }
            _ => out.push(k.clone()),
        }
    }
    out
}

/// What a rerun cannot take from `summary.json`: the headers whose values were redacted and
/// the API key, unless the line (or the environment) gives them again.
pub fn secrets_missing(recorded: &Value, plan: &ringbench::Plan) -> Vec<String> {
    let mut out = Vec::new();
    if recorded["api_key"].is_string() && plan.api_key.is_none() {
        out.push("the API key (OPENAI_API_KEY or --api-key)".to_string());
    }
    if let Some(h) = recorded["headers"].as_object() {
        for (name, v) in h {
            let redacted = v.as_str() == Some(ringbench::plan::REDACTED);
            let given = plan
                .headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case(name));
            if redacted && !given {
                out.push(format!("the header {name} (--header {name}:VALUE)"));
            }
        }
    }
    out
}

/// Where `--config` points, if the subcommand's line gives it.
pub fn path_of(m: &ArgMatches) -> Option<PathBuf> {
    m.try_get_one::<PathBuf>("config").ok().flatten().cloned()
}

#[cfg(test)]
mod tests {
    use crate::cli::{parse, Command, ParseError, RunArgs};
    use serde_json::Value;
    use std::path::PathBuf;

    /// `text` written as `name` in this process's own folder.
    fn file(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ringbench-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn run_args(args: &[&str]) -> Result<RunArgs, String> {
        let argv = ["ringbench", "run"].iter().chain(args);
        match parse(argv.copied()) {
            Ok(cli) => match cli.command {
                Command::Run(run) => Ok(*run),
                _ => unreachable!("run"),
            },
            Err(ParseError::Usage(e)) => Err(e.0),
            Err(ParseError::Clap(e, note)) => Err(format!("{e} {}", note.unwrap_or_default())),
        }
    }

    /// The resolved plan as `summary.json`'s `config` shows it.
    fn config(args: &[&str]) -> Value {
        let run = run_args(args).unwrap();
        serde_json::to_value(run.run_plan().unwrap().0).unwrap()
    }

    const TOML: &str = r#"
request-rate = 50
duration = "3s"
goodput = ["ttft:500", "tpot:50"]
sim-ttft-ms = "20ms"
no_stream = true
ignore-eos = false
percentiles = [50, 99]
header = ["x-team:infra"]
input-dist = "uniform:100:0.5"
seed = 7
prompt-nonce = 9
"#;

    const YAML: &str = r#"
request-rate: 50
duration: 3s
goodput: ["ttft:500", "tpot:50"]
sim-ttft-ms: 20ms
no-stream: true
percentiles: [50, 99]
header:
  - x-team:infra
input-dist: uniform:100:0.5
seed: 7
prompt-nonce: 9
"#;

    const LINE: [&str; 20] = [
        "--request-rate",
        "50",
        "--duration",
        "3s",
        "--goodput",
        "ttft:500",
        "tpot:50",
        "--sim-ttft-ms",
        "20ms",
        "--no-stream",
        "--percentiles",
        "50,99",
        "--header",
        "x-team:infra",
        "--input-dist",
        "uniform:100:0.5",
        "--seed",
        "7",
        "--prompt-nonce",
        "9",
    ];

    #[test]
    fn a_file_and_the_same_flags_give_the_same_plan() {
        let want = config(&LINE);
        assert_eq!(want["load"]["request_rate"], 50.0);
        assert_eq!(want["sim"]["ttft_ms"], 20.0);
        for (name, text) in [("same.toml", TOML), ("same.yaml", YAML)] {
            let path = file(name, text);
            let got = config(&["--config", path.to_str().unwrap()]);
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn the_line_wins_over_the_file_whole() {
        let path = file("wins.toml", TOML);
        let got = config(&[
            "--config",
            path.to_str().unwrap(),
            "--request-rate",
            "10",
            "--goodput",
            "e2e:900",
        ]);
        assert_eq!(got["load"]["request_rate"], 10.0);
        let goodput = got["goodput"].as_array().unwrap();
        assert_eq!(
            goodput.len(),
            1,
            "the line's list replaces the file's: {goodput:?}"
        );
        assert_eq!(
            got["stop"]["duration_ns"], 3_000_000_000u64,
            "the rest stays"
        );
    }

    #[test]
    fn bad_files_name_the_file_the_key_and_the_fix() {
        let cases: &[(&str, &str, &[&str])] = &[
            (
                "typo.toml",
                "request-rat = 5",
                &["typo.toml", "`request-rat`", "did you mean `request-rate`"],
            ),
            (
                "far.toml",
                "colour = 5",
                &["far.toml", "unknown key `colour`", "ringbench run --help"],
            ),
            (
                "key.toml",
                "api-key = \"sk-1\"",
                &["key.toml", "`api-key`", "OPENAI_API_KEY"],
            ),
            (
                "nest.yaml",
                "config: other.toml",
                &["nest.yaml", "`config`"],
            ),
            (
                "obj.toml",
                "[load]\nrate = 5",
                &["obj.toml", "`load`", "a string, a number"],
            ),
            (
                "switch.toml",
                "no-stream = \"yes\"",
                &["switch.toml", "--no-stream is a switch", "no-stream = true"],
            ),
            (
                "value.toml",
                "request-rate = \"fast\"",
                &["fast", "--request-rate", "from --config", "value.toml"],
            ),
            (
                "broken.toml",
                "request-rate = ",
                &["broken.toml", "not valid TOML"],
            ),
            (
                "flags.ini",
                "request-rate = 5",
                &["flags.ini", ".toml, .yaml or .yml"],
            ),
        ];
        for (name, text, wants) in cases {
            let path = file(name, text);
            let e = run_args(&["--config", path.to_str().unwrap()]).unwrap_err();
            for w in *wants {
                assert!(e.contains(w), "{name}: {e}");
            }
        }
        let e = run_args(&["--config", "/no/such/run.toml"]).unwrap_err();
        assert!(
            e.contains("/no/such/run.toml") && e.contains("cannot read"),
            "{e}"
        );
    }

    #[test]
    fn config_args_keep_the_flags_given_and_never_a_secret() {
        let run = run_args(&[
            "--api-key",
            "sk-secret",
            "--header",
            "Authorization:Bearer sk-other",
            "x-team:infra",
            "--request-count",
            "5",
            "--quiet",
        ])
        .unwrap();
        for want in ["--quiet", "--request-count=5", "--header=x-team:infra"] {
            assert!(run.args.iter().any(|a| a == want), "{want}: {:?}", run.args);
        }
        let all = run.args.join(" ");
        assert!(
            !all.contains("sk-") && !all.contains("Authorization"),
            "{all}"
        );
        let plan = run.run_plan().unwrap().0;
        assert_eq!(plan.args, run.args, "summary.json's config.args");
    }

    #[test]
    fn a_summary_gives_back_its_flags_and_its_nonce() {
        let summary = serde_json::json!({
            "schema_version": 1,
            "config": {
                "args": ["--request-rate=50", "--duration=2s", "--no-stream", "--out=/tmp/r1",
                         "--run-id=exp1"],
                "workload": {"prompt_salt": true, "prompt_nonce": 42u64},
                "api_key": "<redacted>",
                "headers": {"Authorization": "<redacted>", "x-team": "infra"},
            }
        });
        let dir = file("x", "").parent().unwrap().join("run");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("summary.json"), summary.to_string()).unwrap();
        let run = run_args(&["--config", dir.to_str().unwrap(), "--duration", "1s"]).unwrap();
        let plan = run.run_plan().unwrap().0;
        assert_eq!(plan.target_rate(), Some(50.0));
        assert_eq!(plan.stop.duration_ns, Some(1_000_000_000), "the line wins");
        assert!(!plan.stream);
        assert_eq!(plan.workload.prompt_nonce, Some(42));
        assert_eq!(
            (&plan.out_dir, &plan.run_id),
            (&None, &None),
            "never the run's own"
        );
        let (_, recorded) = run.rerun_of.as_ref().unwrap();
        let missing = super::secrets_missing(recorded, &plan);
        assert_eq!(missing.len(), 2, "{missing:?}");
        assert!(missing[1].contains("Authorization"), "{missing:?}");
        let differs = super::differences(recorded, &serde_json::to_value(&plan).unwrap());
        assert!(differs.contains(&"stop".to_string()), "{differs:?}");
        let old = file(
            "old-summary.json",
            r#"{"schema_version": 1, "config": {"seed": 1}}"#,
        );
        let e = run_args(&["--config", old.to_str().unwrap()]).unwrap_err();
        assert!(e.contains("no config.args"), "{e}");
    }
}
