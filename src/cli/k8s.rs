//! Part of the CLI (the binary's first layer): `ringbench k8s manifest --shards N [run flags]`,
//! a run's flags made into a Kubernetes Indexed Job whose pod I runs `ringbench run --shard
//! auto --shards N` (the index from `JOB_COMPLETION_INDEX`) with one `--start-at` and one
//! `--seed` for every pod, plus, with a volume claim, a suspended Job that merges the shards.
//! Pure: `manifest` returns the YAML as a `String` (built with serde_norway, so every value is
//! quoted as YAML needs); `main` prints it. Nothing here reads a file or the clock.

use super::parse::{parse_duration_ns, parse_start_at, JOB_INDEX_VAR};
use super::{Cli, UsageError};
use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches, Subcommand};
use serde_norway::{Mapping, Value};

/// `ringbench k8s ...`.
#[derive(Debug, Args)]
pub struct K8sArgs {
    #[command(subcommand)]
    pub command: K8sCommand,
}

#[derive(Debug, Subcommand)]
pub enum K8sCommand {
    /// Print an Indexed Job (YAML) whose N pods run the shards of one run, and the merge step
    ///
    /// Every pod runs `ringbench run --shard auto --shards N --start-at T --seed S --cpus auto
    /// --out /results/NAME/shard-$(JOB_COMPLETION_INDEX)` and then the run flags given here,
    /// unchanged. Flags of this command go before the run flags.
    Manifest(ManifestArgs),
}

/// The most pods an Indexed Job may have (Kubernetes' bound on `completions` when Indexed).
pub const MAX_SHARDS: u32 = 100_000;
/// `--start-in`'s default: time enough to pull the image and start every pod.
pub const DEFAULT_START_IN: &str = "60s";
/// The uid and gid the image's user has (deploy/Dockerfile) and the pods run as.
pub const RUN_AS: u64 = 10001;
/// Where the results volume is mounted in every pod.
pub const RESULTS: &str = "/results";

#[derive(Debug, Args)]
pub struct ManifestArgs {
    /// The number of shards: the Job's pods (parallelism = completions = N)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=MAX_SHARDS as i64))]
    pub shards: u32,
    /// Every pod starts its schedule this long after now (the manifest's writing)
    #[arg(long, value_name = "D", value_parser = parse_duration_ns, default_value = DEFAULT_START_IN, conflicts_with = "start_at")]
    pub start_in: u64,
    /// Every pod starts its schedule at this instant instead: RFC 3339 or Unix ns
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// The Job's name (its pods', the results folder's, the merge Job's with -merge)
    #[arg(long, value_name = "NAME", default_value = "ringbench")]
    pub k8s_name: String,
    /// The namespace written into the manifest [default: none, kubectl's current]
    #[arg(long, value_name = "NS")]
    pub k8s_namespace: Option<String>,
    /// The container image (deploy/Dockerfile builds it) [default: ringbench:VERSION]
    #[arg(long, value_name = "IMAGE")]
    pub k8s_image: Option<String>,
    /// Whole CPUs per pod, requests = limits (Guaranteed QoS: the static CPU manager pins them)
    ///
    /// The run uses --cpus auto: a worker on each of them but one, left to the collector.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub k8s_cpus: u32,
    /// Memory per pod, requests = limits, a Kubernetes quantity like 2Gi or 512Mi
    #[arg(long, value_name = "Q", default_value = "2Gi")]
    pub k8s_memory: String,
    /// Results to this PersistentVolumeClaim (ReadWriteMany across nodes) [default: emptyDir]
    ///
    /// With a claim the manifest also holds the merge Job (suspended until the shards are
    /// done); an emptyDir ends with its pod.
    #[arg(long, value_name = "NAME")]
    pub k8s_volume_claim: Option<String>,
    /// OPENAI_API_KEY from this Secret's key OPENAI_API_KEY (never a key in the manifest)
    #[arg(long, value_name = "SECRET")]
    pub k8s_api_key_secret: Option<String>,
    /// `ringbench run`'s flags, passed to every pod unchanged
    #[arg(
        value_name = "RUN FLAGS",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub run: Vec<String>,
}

/// Run flags the manifest sets itself, with what to do instead.
const SET_HERE: [(&str, &str); 7] = [
    (
        "shard",
        "every pod gets --shard auto; give --shards N before the run flags",
    ),
    (
        "shards",
        "give --shards N before the run flags (it is k8s manifest's own)",
    ),
    (
        "start_at",
        "give --start-at or --start-in before the run flags",
    ),
    (
        "out",
        "every pod writes to /results/NAME/shard-I; name a volume with --k8s-volume-claim",
    ),
    (
        "artifact_dir",
        "every pod writes to /results/NAME/shard-I (AIPerf's spelling of --out)",
    ),
    (
        "cpus",
        "every pod uses --cpus auto (its cpuset); set the pod's CPUs with --k8s-cpus",
    ),
    (
        "config",
        "the pod has no such file: give the flags themselves",
    ),
];

/// The manifest these flags ask for, `now_unix_ns` being now (for `--start-in`).
pub fn manifest(args: &ManifestArgs, now_unix_ns: u64) -> Result<String, UsageError> {
    check_names(args)?;
    let start_at = match &args.start_at {
        Some(t) => {
            parse_start_at(t).map_err(|e| UsageError(format!("--start-at {e}")))?;
            t.clone()
        }
        None => ringbench::host::rfc3339((now_unix_ns + args.start_in).div_ceil(1_000_000_000)),
    };
    let seed = run_flags_seed(args)?;
    let metrics_port = metrics_port(args)?;
    let out = format!("{RESULTS}/{}/shard-$({JOB_INDEX_VAR})", args.k8s_name);
    let mut pod_args: Vec<String> = ["run", "--shard", "auto", "--shards"]
        .map(String::from)
        .into();
    pod_args.push(args.shards.to_string());
    pod_args.extend(["--start-at".into(), start_at.clone()]);
    if let Some(seed) = seed {
        pod_args.extend(["--seed".into(), seed.to_string()]);
    }
    pod_args.extend(["--cpus".into(), "auto".into(), "--out".into(), out]);
    pod_args.extend(args.run.iter().cloned());
    // The whole line as a pod's `ringbench` reads it (a rule between the manifest's flags
    // and the user's, like --self-check's conflicts, is a usage error here, not in N pods).
    let argv = std::iter::once("ringbench".to_string()).chain(pod_args.iter().cloned());
    Cli::command()
        .try_get_matches_from(argv)
        .map_err(|e| UsageError(format!("the pods' run: {}", first_line(&e.to_string()))))?;
    pod_args.truncate(pod_args.len() - args.run.len());
    // Kubernetes expands $(VAR) in args and reads $$ as $: doubled, a `$` reaches the run.
    pod_args.extend(args.run.iter().map(|a| a.replace('$', "$$")));
    let mut text = job_comment(args, &start_at, metrics_port);
    text.push_str(&yaml(&run_job(args, pod_args, metrics_port))?);
    if args.k8s_volume_claim.is_some() {
        text.push_str(&merge_comment(args));
        text.push_str(&yaml(&merge_job(args))?);
    }
    Ok(text)
}

/// The run flags parsed as `ringbench run` parses them (a bad one is refused here, not in
/// every pod); none of those the manifest sets; the seed to write when none was given (the
/// run's own default, written so every pod has it whatever its image's default).
fn run_flags_seed(args: &ManifestArgs) -> Result<Option<u64>, UsageError> {
    let own: Vec<String> = ManifestArgs::augment_args(clap::Command::new("manifest"))
        .get_arguments()
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .filter(|l| !matches!(l.as_str(), "--shards" | "--start-at"))
        .collect();
    if let Some(flag) = args.run.iter().find_map(|a| {
        own.iter()
            .find(|l| a == *l || a.starts_with(&format!("{l}=")))
    }) {
        return Err(UsageError(format!(
            "{flag}: a flag of k8s manifest; give it before the run flags"
        )));
    }
    let argv = ["ringbench", "run"].into_iter().map(String::from);
    let m = Cli::command()
        .try_get_matches_from(argv.chain(args.run.iter().cloned()))
        .map_err(|e| UsageError(format!("the run flags: {}", first_line(&e.to_string()))))?;
    let run_m = m.subcommand_matches("run").expect("run was parsed");
    for (id, fix) in SET_HERE {
        if run_m.value_source(id) == Some(ValueSource::CommandLine) {
            let flag = id.replace('_', "-");
            return Err(UsageError(format!("--{flag} in the run flags: {fix}")));
        }
    }
    if run_m.value_source("api_key") == Some(ValueSource::CommandLine) {
        return Err(UsageError(
            "--api-key in the run flags would be written into the manifest in plain text: \
             put it in a Secret and give --k8s-api-key-secret NAME"
                .into(),
        ));
    }
    let given = run_m.value_source("seed") == Some(ValueSource::CommandLine);
    let cli = Cli::from_arg_matches(&m).map_err(|e| UsageError(e.to_string()))?;
    match cli.command {
        super::Command::Run(run) => Ok((!given).then_some(run.seed)),
        _ => unreachable!("parsed as run"),
    }
}

/// `--metrics-listen` in the run flags: the port each pod exposes (a `containerPort` and the
/// `prometheus.io/*` annotations). It must listen beyond the pod's loopback, on a port known
/// in advance.
fn metrics_port(args: &ManifestArgs) -> Result<Option<u16>, UsageError> {
    let run = &args.run;
    let value =
        run.iter()
            .enumerate()
            .find_map(|(i, a)| match a.strip_prefix("--metrics-listen") {
                Some("") => run.get(i + 1).cloned(),
                Some(v) => v.strip_prefix('=').map(str::to_string),
                None => None,
            });
    let Some(value) = value else {
        return Ok(None);
    };
    let bad = |why: &str| {
        UsageError(format!(
            "--metrics-listen {value} in the run flags: {why}; give 0.0.0.0:PORT (like \
             0.0.0.0:9464) so Prometheus reaches every pod on a port the manifest can name"
        ))
    };
    let addr: std::net::SocketAddr = value.parse().map_err(|_| bad("not an address"))?;
    if addr.ip().is_loopback() {
        return Err(bad("the pod's loopback is out of Prometheus's reach"));
    }
    if addr.port() == 0 {
        return Err(bad("port 0 is picked at run time"));
    }
    Ok(Some(addr.port()))
}

fn first_line(s: &str) -> &str {
    let line = s.lines().next().unwrap_or(s);
    line.strip_prefix("error: ").unwrap_or(line)
}

/// Names Kubernetes accepts: the Job's (a DNS label, with room for `-merge` and the pods'
/// suffixes), the namespace's, the claim's and the secret's (DNS subdomains).
fn check_names(args: &ManifestArgs) -> Result<(), UsageError> {
    let label = |s: &str, max: usize| {
        !s.is_empty()
            && s.len() <= max
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !s.starts_with('-')
            && !s.ends_with('-')
    };
    let subdomain = |s: &str| s.len() <= 253 && s.split('.').all(|p| label(p, 63));
    let bad = |flag: &str, v: &str, what: &str| {
        Err(UsageError(format!(
            "{flag} '{v}': {what} (lowercase letters, digits and '-', like ringbench-run)"
        )))
    };
    if !label(&args.k8s_name, 40) {
        return bad("--k8s-name", &args.k8s_name, "at most 40 characters");
    }
    if let Some(ns) = args.k8s_namespace.as_deref().filter(|n| !label(n, 63)) {
        return bad("--k8s-namespace", ns, "a DNS label");
    }
    let names = [
        ("--k8s-volume-claim", &args.k8s_volume_claim),
        ("--k8s-api-key-secret", &args.k8s_api_key_secret),
    ];
    for (flag, v) in names {
        if let Some(v) = v.as_deref().filter(|v| !subdomain(v)) {
            return bad(flag, v, "a DNS subdomain");
        }
    }
    let q = &args.k8s_memory;
    let digits = q.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &q[digits.len()..];
    let units = ["", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti"];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || !units.contains(&suffix)
    {
        return Err(UsageError(format!(
            "--k8s-memory '{q}': a whole Kubernetes quantity, like 2Gi, 512Mi or 4G"
        )));
    }
    Ok(())
}

fn image(args: &ManifestArgs) -> String {
    args.k8s_image
        .clone()
        .unwrap_or_else(|| format!("ringbench:{}", env!("CARGO_PKG_VERSION")))
}

fn s(v: impl Into<String>) -> Value {
    Value::String(v.into())
}

fn n(v: u64) -> Value {
    Value::Number(v.into())
}

/// A mapping in the order given (serde_norway keeps it), so the YAML reads top-down.
fn map<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    Value::Mapping(
        pairs
            .into_iter()
            .map(|(k, v)| (s(k), v))
            .collect::<Mapping>(),
    )
}

fn seq(items: impl IntoIterator<Item = Value>) -> Value {
    Value::Sequence(items.into_iter().collect())
}

/// One YAML document, written here rather than by serde_norway's emitter: it leaves strings
/// plain that YAML 1.1 readers (PyYAML, and the go-yaml under kubectl) take for booleans or
/// times (`yes`, `on`, `2026-12-02T08:30:00Z`), which a pod's `args` would then refuse. A
/// string is plain only when it is a word no YAML reads as anything else; every other one is
/// double-quoted with JSON's escapes (a JSON string is a YAML double-quoted scalar).
fn yaml(doc: &Value) -> Result<String, UsageError> {
    let mut text = String::from("---\n");
    for line in block(doc) {
        text.push_str(&line);
        text.push('\n');
    }
    Ok(text)
}

fn is_block(v: &Value) -> bool {
    match v {
        Value::Mapping(m) => !m.is_empty(),
        Value::Sequence(s) => !s.is_empty(),
        _ => false,
    }
}

/// The lines of a mapping or a sequence, indented from column 0 (sequences under a key at the
/// key's column, as kubectl writes them).
fn block(v: &Value) -> Vec<String> {
    let mut out = vec![];
    match v {
        Value::Mapping(m) => {
            for (k, val) in m {
                let key = scalar(k);
                if !is_block(val) {
                    out.push(format!("{key}: {}", scalar(val)));
                    continue;
                }
                out.push(format!("{key}:"));
                let pad = if val.is_sequence() { "" } else { "  " };
                out.extend(block(val).into_iter().map(|l| format!("{pad}{l}")));
            }
        }
        Value::Sequence(items) => {
            for item in items {
                if !is_block(item) {
                    out.push(format!("- {}", scalar(item)));
                    continue;
                }
                for (i, l) in block(item).into_iter().enumerate() {
                    out.push(format!("{}{l}", if i == 0 { "- " } else { "  " }));
                }
            }
        }
        other => out.push(scalar(other)),
    }
    out
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) if plain(s) => s.clone(),
        Value::String(s) => quoted(s),
        Value::Mapping(_) => "{}".into(),
        Value::Sequence(_) => "[]".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Null | Value::Tagged(_) => "null".into(),
    }
}

/// A double-quoted YAML scalar: JSON's escapes, and `\u` for what JSON leaves raw but YAML
/// does not allow (DEL, the C1 controls, U+FEFF, U+FFFE, U+FFFF).
fn quoted(s: &str) -> String {
    let json = serde_json::to_string(s).expect("a string serializes");
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c.is_control() || matches!(c, '\u{feff}' | '\u{fffe}' | '\u{ffff}') {
            out.push_str(&format!("\\u{:04X}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// Safe to write unquoted in YAML 1.1 and 1.2: a letter or `/` first (or `-`/`--` then a
/// letter), then letters, digits and `_ . / -`, and not a word YAML 1.1 reads as a boolean or
/// null. Numbers, times, quantities like 2Gi and anything with `:`, `#`, `$` or a space are
/// quoted.
fn plain(s: &str) -> bool {
    const WORDS: [&str; 12] = [
        "y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf", "infinity",
    ];
    let body = s.trim_start_matches('-');
    let first_ok = body
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || (b == b'/' && body.len() == s.len()));
    first_ok
        && s.len() - body.len() <= 2
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./-".contains(&b))
        && !WORDS.contains(&s.to_ascii_lowercase().as_str())
}

fn metadata(args: &ManifestArgs, name: String) -> Value {
    let mut m = Mapping::new();
    m.insert(s("name"), s(name));
    if let Some(ns) = &args.k8s_namespace {
        m.insert(s("namespace"), s(ns.clone()));
    }
    m.insert(s("labels"), labels(args));
    Value::Mapping(m)
}

fn labels(args: &ManifestArgs) -> Value {
    map([
        ("app.kubernetes.io/name", s("ringbench")),
        ("app.kubernetes.io/instance", s(args.k8s_name.clone())),
    ])
}

/// The container: the image's entrypoint is `ringbench`, so `args` is the whole command.
/// The key's Secret only in a shard (`run`), not in the merge.
fn container(args: &ManifestArgs, pod_args: Vec<String>, metrics: Option<u16>) -> Value {
    let run = pod_args.first().is_some_and(|a| a == "run");
    let amount = map([
        ("cpu", s(args.k8s_cpus.to_string())),
        ("memory", s(args.k8s_memory.clone())),
    ]);
    let mut c = Mapping::new();
    c.insert(s("name"), s("ringbench"));
    c.insert(s("image"), s(image(args)));
    c.insert(s("imagePullPolicy"), s("IfNotPresent"));
    c.insert(s("args"), seq(pod_args.into_iter().map(s)));
    if let Some(port) = metrics {
        let port = map([
            ("name", s("metrics")),
            ("containerPort", n(u64::from(port))),
        ]);
        c.insert(s("ports"), seq([port]));
    }
    if let Some(secret) = args.k8s_api_key_secret.as_ref().filter(|_| run) {
        let from = map([("name", s(secret.clone())), ("key", s("OPENAI_API_KEY"))]);
        let env = map([
            ("name", s("OPENAI_API_KEY")),
            ("valueFrom", map([("secretKeyRef", from)])),
        ]);
        c.insert(s("env"), seq([env]));
    }
    c.insert(
        s("resources"),
        map([("requests", amount.clone()), ("limits", amount)]),
    );
    c.insert(
        s("securityContext"),
        map([
            ("allowPrivilegeEscalation", Value::Bool(false)),
            ("capabilities", map([("drop", seq([s("ALL")]))])),
        ]),
    );
    let mount = map([("name", s("results")), ("mountPath", s(RESULTS))]);
    c.insert(s("volumeMounts"), seq([mount]));
    Value::Mapping(c)
}

/// The pod: never restarted (a shard run again could not rejoin the common start), as the
/// image's non-root user, the results volume; a shard's (`run`) spread over nodes where it
/// can be.
fn pod_spec(args: &ManifestArgs, pod_args: Vec<String>, metrics: Option<u16>) -> Value {
    let run = pod_args.first().is_some_and(|a| a == "run");
    let volume = match &args.k8s_volume_claim {
        Some(claim) => map([
            ("name", s("results")),
            (
                "persistentVolumeClaim",
                map([("claimName", s(claim.clone()))]),
            ),
        ]),
        None => map([("name", s("results")), ("emptyDir", map([]))]),
    };
    let mut p = Mapping::new();
    p.insert(s("restartPolicy"), s("Never"));
    if run {
        let term = map([
            ("labelSelector", map([("matchLabels", labels(args))])),
            ("topologyKey", s("kubernetes.io/hostname")),
        ]);
        let preferred = seq([map([("weight", n(100)), ("podAffinityTerm", term)])]);
        p.insert(
            s("affinity"),
            map([(
                "podAntiAffinity",
                map([("preferredDuringSchedulingIgnoredDuringExecution", preferred)]),
            )]),
        );
    }
    p.insert(
        s("securityContext"),
        map([
            ("runAsNonRoot", Value::Bool(true)),
            ("runAsUser", n(RUN_AS)),
            ("runAsGroup", n(RUN_AS)),
            ("fsGroup", n(RUN_AS)),
        ]),
    );
    p.insert(s("containers"), seq([container(args, pod_args, metrics)]));
    p.insert(s("volumes"), seq([volume]));
    Value::Mapping(p)
}

/// A shard's pod template: labels and, with `--metrics-listen`, the annotations a
/// Prometheus that discovers pods (`prometheus.io/scrape`) reads.
fn run_template(args: &ManifestArgs, pod_args: Vec<String>, metrics: Option<u16>) -> Value {
    let mut meta = Mapping::new();
    meta.insert(s("labels"), labels(args));
    if let Some(port) = metrics {
        meta.insert(
            s("annotations"),
            map([
                ("prometheus.io/scrape", s("true")),
                ("prometheus.io/port", s(port.to_string())),
                ("prometheus.io/path", s("/metrics")),
            ]),
        );
    }
    map([
        ("metadata", Value::Mapping(meta)),
        ("spec", pod_spec(args, pod_args, metrics)),
    ])
}

fn run_job(args: &ManifestArgs, pod_args: Vec<String>, metrics: Option<u16>) -> Value {
    let n_shards = u64::from(args.shards);
    map([
        ("apiVersion", s("batch/v1")),
        ("kind", s("Job")),
        ("metadata", metadata(args, args.k8s_name.clone())),
        (
            "spec",
            map([
                ("completionMode", s("Indexed")),
                ("completions", n(n_shards)),
                ("parallelism", n(n_shards)),
                ("backoffLimitPerIndex", n(0)),
                ("template", run_template(args, pod_args, metrics)),
            ]),
        ),
    ])
}

/// The merge Job: created suspended, started once the shards are done, in the cluster beside
/// the claim that holds them.
fn merge_job(args: &ManifestArgs) -> Value {
    let dir = format!("{RESULTS}/{}", args.k8s_name);
    let mut merge_args = vec!["merge".to_string()];
    merge_args.extend((0..args.shards).map(|i| format!("{dir}/shard-{i}")));
    merge_args.extend(["--out".into(), format!("{dir}/merged")]);
    map([
        ("apiVersion", s("batch/v1")),
        ("kind", s("Job")),
        (
            "metadata",
            metadata(args, format!("{}-merge", args.k8s_name)),
        ),
        (
            "spec",
            map([
                ("suspend", Value::Bool(true)),
                ("completions", n(1)),
                ("parallelism", n(1)),
                ("backoffLimit", n(0)),
                (
                    "template",
                    map([
                        ("metadata", map([("labels", labels(args))])),
                        ("spec", pod_spec(args, merge_args, None)),
                    ]),
                ),
            ]),
        ),
    ])
}

fn job_comment(args: &ManifestArgs, start_at: &str, metrics: Option<u16>) -> String {
    let (name, n_shards) = (&args.k8s_name, args.shards);
    let metrics = metrics.map_or(String::new(), |port| {
        format!(
            "#   ports, annotations: --metrics-listen's live figures at :{port}/metrics in every\n\
             #     pod, for a Prometheus that discovers pods (prometheus.io/scrape); the\n\
             #     dashboard deploy/grafana/ringbench.json shows them beside the server's.\n"
        )
    });
    let volume = match &args.k8s_volume_claim {
        Some(claim) => format!(
            "#   volumes: the PersistentVolumeClaim {claim} at {RESULTS} in every pod; shard I writes\n\
             #     {RESULTS}/{name}/shard-I. With pods on several nodes it must be ReadWriteMany.\n"
        ),
        None => "#   volumes: an emptyDir: the shards' folders end with their pods (their console\n\
             #     summaries stay in `kubectl logs`). To keep them and get the merge Job, create a\n\
             #     ReadWriteMany PersistentVolumeClaim and regenerate with --k8s-volume-claim NAME,\n\
             #     or replace `emptyDir: {}` by `persistentVolumeClaim: {claimName: NAME}`.\n"
            .to_string(),
    };
    format!(
        "# ringbench: one run over {n_shards} pods, made by `ringbench k8s manifest` (deploy/README.md\n\
         # in ringbench's repository explains every field).\n\
         #\n\
         # An Indexed Job: pod I (JOB_COMPLETION_INDEX, 0 to {last}) runs `ringbench run --shard auto\n\
         # --shards {n_shards}`: the arrivals i with i mod {n_shards} = I of the one schedule the run flags and\n\
         # --seed define. Every pod starts it at --start-at {start_at} on its own clock\n\
         # (NTP/PTP keeps the nodes' clocks together; a pod there late counts the lateness as\n\
         # scheduling lag): apply this before that instant, or regenerate it, or edit --start-at,\n\
         # which must stay the same in every pod.\n\
         #\n\
         #   completionMode Indexed, parallelism = completions = {n_shards}: one pod per shard, all at once.\n\
         #   backoffLimitPerIndex 0: a failed shard is not run again (it could not rejoin the\n\
         #     common start); the others go on, and merge names the missing one.\n\
         #   resources: requests = limits, whole CPUs: Guaranteed QoS, so a kubelet with the static\n\
         #     CPU manager pins the pod to CPUs of its own; --cpus auto puts a worker on each of\n\
         #     them but one, left to the collector.\n\
         #   affinity: preferred pod anti-affinity over kubernetes.io/hostname: one shard per node\n\
         #     where there are nodes enough.\n\
         #   securityContext: the image's non-root user ({RUN_AS}); fsGroup makes the volume writable.\n\
         #   args: the run flags follow the manifest's own, unchanged but for `$`, written `$$`\n\
         #     (Kubernetes expands $(VAR) in args and reads $$ as $).\n\
         {volume}\
         {metrics}\
         #   io_uring: container runtimes' default seccomp profiles often refuse it; ringbench then\n\
         #     runs on epoll (--io-driver auto) and summary.json says so (overhead.io_driver).\n\
         #\n\
         # Run:   kubectl apply -f THIS.yaml\n\
         #        kubectl logs job/{name}             (a pod's console; kubectl logs POD for each)\n\
         # Done:  kubectl get job {name}              (Complete, or Failed with the failed indexes)\n",
        last = n_shards - 1,
    )
}

fn merge_comment(args: &ManifestArgs) -> String {
    let name = &args.k8s_name;
    format!(
        "# The merge, as a Job beside the claim that holds the shards, created suspended: Jobs\n\
         # have no order between them, so it starts when you say the shards are done:\n\
         #   kubectl wait --for=condition=complete job/{name} --timeout=24h   (never, if a shard failed)\n\
         #   kubectl patch job {name}-merge --type=merge -p '{{\"spec\":{{\"suspend\":false}}}}'\n\
         #   kubectl logs -f job/{name}-merge          (the merged run's console summary)\n\
         # It writes {RESULTS}/{name}/merged on the claim (summary.json, requests.jsonl,\n\
         # report.html); a shard that failed is named there (add --allow-incomplete to its args to\n\
         # merge the rest, marked incomplete). Or copy the shard folders out and run\n\
         # `ringbench merge shard-0 ... --out merged` anywhere.\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every scalar the writer emits reads back as the same string (YAML 1.2 here; the CI's
    /// kubernetes-validate reads the manifests with PyYAML, YAML 1.1), and the words YAML 1.1
    /// would take for something else are quoted.
    #[test]
    fn strings_read_back_as_themselves_and_ambiguous_words_are_quoted() {
        let nasty = [
            "yes",
            "No",
            "on",
            "OFF",
            "y",
            "~",
            "null",
            "true",
            "0",
            "007",
            "1e3",
            "0x1F",
            ".5",
            "-1",
            "2Gi",
            "60s",
            "2026-12-02T08:30:00Z",
            "2026-12-02",
            "12:30",
            "a: b",
            "a #b",
            "#c",
            "'q'",
            "\"dq\"",
            "$(X)",
            "$$",
            "line\nbreak",
            "tab\there",
            " lead",
            "trail ",
            "",
            "-",
            "--",
            "---",
            "- x",
            "[a]",
            "{a: 1}",
            "*ref",
            "&anchor",
            "!tag",
            "%dir",
            "@at",
            "`tick`",
            "|",
            ">",
            "?",
            "é ü",
            "\u{7f}",
            "\u{85}",
            "\u{9f}",
            "\u{feff}",
            "\u{ffff}",
            "\\back",
            "😀",
        ];
        for v in nasty {
            let doc = map([("k", seq([s(v)]))]);
            let text = yaml(&doc).unwrap();
            let back: std::collections::BTreeMap<String, Vec<String>> =
                serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{v:?}: {e}\n{text}"));
            assert_eq!(back["k"], [v], "{text}");
        }
        for quoted in [
            "yes",
            "on",
            "0",
            "2Gi",
            "2026-12-02T08:30:00Z",
            "a: b",
            "$(X)",
            "-",
        ] {
            assert!(!plain(quoted), "{quoted} must be quoted");
        }
        for bare in [
            "run",
            "--shard",
            "auto",
            "batch/v1",
            "/results",
            "-x",
            "kubernetes.io/hostname",
        ] {
            assert!(plain(bare), "{bare} reads as itself unquoted");
        }
    }

    #[test]
    fn names_and_quantities_kubernetes_refuses_are_usage_errors_naming_the_flag() {
        use clap::Parser;
        #[derive(Parser)]
        struct T {
            #[command(flatten)]
            m: ManifestArgs,
        }
        let try_ = |extra: &[&str]| {
            let mut argv = vec!["t", "--shards", "2"];
            argv.extend_from_slice(extra);
            manifest(&T::try_parse_from(argv).unwrap().m, 0).map_err(|e| e.0)
        };
        assert!(try_(&["--url", "http://h:1"]).is_ok());
        let exposed = try_(&["--metrics-listen=0.0.0.0:9464"]).unwrap();
        assert!(exposed.contains("containerPort: 9464"), "{exposed}");
        assert!(
            exposed.contains("prometheus.io/port: \"9464\""),
            "{exposed}"
        );
        for (extra, flag) in [
            (&["--k8s-name", "Bench_1"][..], "--k8s-name"),
            (&["--k8s-name", "-x"], "--k8s-name"),
            (&["--k8s-namespace", "a.b"], "--k8s-namespace"),
            (&["--k8s-volume-claim", "UP"], "--k8s-volume-claim"),
            (&["--k8s-api-key-secret", "a b"], "--k8s-api-key-secret"),
            (&["--k8s-memory", "2GB"], "--k8s-memory"),
            (&["--k8s-memory", "1.5Gi"], "--k8s-memory"),
            (&["--start-at", "noon"], "--start-at"),
            (&["--url", "http://h:1", "--k8s-cpus", "4"], "--k8s-cpus"),
            (&["--url", "http://h:1", "--out", "x"], "--out"),
            (&["--url", "http://h:1", "--shard", "0/2"], "--shard"),
            (&["--url", "http://h:1", "--shards", "2"], "--shards"),
            (&["--url", "http://h:1", "--start-at", "0"], "--start-at"),
            (&["--url", "http://h:1", "--api-key", "sk-1"], "--api-key"),
            (&["--url", "http://h:1", "--config", "a.toml"], "--config"),
            (
                &["--url", "http://h:1", "--artifact-dir", "a"],
                "--artifact-dir",
            ),
            (&["--request-rate", "fast"], "--request-rate"),
            (&["--metrics-listen", "127.0.0.1:9464"], "--metrics-listen"),
            (&["--metrics-listen=0.0.0.0:0"], "--metrics-listen"),
            (&["--metrics-listen", "[::1]:9464"], "--metrics-listen"),
        ] {
            let e = try_(extra).unwrap_err();
            assert!(e.contains(flag), "{extra:?}: {e}");
        }
    }

    #[test]
    fn start_in_counts_from_now_and_rounds_up_to_a_whole_second() {
        use clap::Parser;
        #[derive(Parser)]
        struct T {
            #[command(flatten)]
            m: ManifestArgs,
        }
        let now = 1_795_959_946_000_000_001; // 2026-11-29T13:45:46Z and 1 ns
        let m = T::try_parse_from(["t", "--shards", "3", "--start-in", "90s"]).unwrap();
        let text = manifest(&m.m, now).unwrap();
        assert!(text.contains("- \"2026-11-29T13:47:17Z\""), "{text}");
    }
}
