//! Issue 21, item 4: `ringbench k8s manifest`. The manifest for 4 shards is an Indexed Job
//! with parallelism = completions = 4, Guaranteed QoS (requests = limits, whole CPUs), every
//! pod's args `run --shard auto --shards 4` with one `--seed` and one `--start-at`, and the
//! user's flags after them unchanged (odd characters included); bad flags exit 2 naming the
//! flag; `deploy/ringbench-job.yaml` is what its command prints; the pods' args, expanded as
//! Kubernetes expands them, run as two local shard processes and merge into one run; and, where
//! `kubernetes-validate` is installed, every manifest validates against Kubernetes' schemas
//! (`.ci/run` installs it and sets RINGBENCH_REQUIRE_KUBERNETES_VALIDATE=1, so CI cannot skip).

use crate::support::common::{lock, made_dir, output, read_jsonl, ringbench, spawn_sim};
use serde::Deserialize;
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::Stdio;

/// A header with every character YAML and Kubernetes treat specially: quotes, `#`, `: `,
/// `$(VAR)` (which Kubernetes would expand) and `$$`.
const ODD_HEADER: &str = "X-Odd: a \"b\" 'c' # d: $(HOME) $$ {e} [f] é";

/// Run flags for the 4-shard manifest: values YAML 1.1 reads as booleans or times, too.
const RUN_FLAGS: [&str; 14] = [
    "--url",
    "http://vllm.example:8000",
    "--request-rate",
    "200",
    "--duration",
    "30s",
    "--model",
    "yes",
    "--run-id",
    "on",
    "--header",
    ODD_HEADER,
    "--goodput",
    "ttft:500",
];

/// The command `deploy/ringbench-job.yaml` is the output of (deploy/README.md shows it).
const DEPLOY_ARGS: [&str; 28] = [
    "k8s",
    "manifest",
    "--shards",
    "4",
    "--start-at",
    "2030-01-01T00:00:00Z",
    "--k8s-volume-claim",
    "ringbench-results",
    "--k8s-api-key-secret",
    "vllm-api-key",
    "--url",
    "http://vllm.default.svc:8000",
    "--model",
    "my-model",
    "--request-rate",
    "2000",
    "--duration",
    "5m",
    "--input-tokens",
    "1024",
    "--output-tokens",
    "256",
    "--seed",
    "7",
    "--goodput",
    "ttft:500",
    "--metrics-listen",
    "0.0.0.0:9464",
];

fn manifest(args: &[&str]) -> String {
    let out = output(&mut ringbench(args));
    assert!(out.status.success(), "{args:?}: {}", out.stderr);
    out.stdout
}

/// The YAML documents, as JSON values.
fn docs(text: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).expect("a YAML document"))
        .collect()
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|a| a.as_str().expect("a string").to_string())
        .collect()
}

/// The value after `flag` in `args`, once.
fn after<'a>(args: &'a [String], flag: &str) -> &'a str {
    let at: Vec<usize> = (0..args.len()).filter(|&i| args[i] == flag).collect();
    assert_eq!(at.len(), 1, "{flag} once in {args:?}");
    &args[at[0] + 1]
}

/// A pod's args as its container sees them: `$(JOB_COMPLETION_INDEX)` replaced by its index,
/// `$$` read as `$` (Kubernetes' expansion of container args).
fn expand(args: &[String], index: u32) -> Vec<String> {
    args.iter()
        .map(|a| {
            a.replace("$(JOB_COMPLETION_INDEX)", &index.to_string())
                .replace("$$", "$")
        })
        .collect()
}

#[test]
fn four_shards_are_an_indexed_job_with_guaranteed_qos_and_one_seed_and_start() {
    let mut line = vec!["k8s", "manifest", "--shards", "4", "--start-in", "2m"];
    line.extend(RUN_FLAGS);
    let text = manifest(&line);
    let all = docs(&text);
    assert_eq!(all.len(), 1, "no claim, no merge Job: {text}");
    let job = &all[0];
    assert_eq!(job["apiVersion"], "batch/v1");
    assert_eq!(job["kind"], "Job");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["parallelism"], 4);
    assert_eq!(spec["completions"], 4);
    assert_eq!(spec["backoffLimitPerIndex"], 0);
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let anti =
        &pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"];
    assert_eq!(
        anti[0]["podAffinityTerm"]["topologyKey"],
        "kubernetes.io/hostname"
    );
    assert!(pod["volumes"][0]["emptyDir"].is_object(), "{text}");
    let containers = pod["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    assert_eq!(
        c["image"],
        format!("ringbench:{}", env!("CARGO_PKG_VERSION"))
    );
    let res = &c["resources"];
    assert_eq!(res["requests"], res["limits"], "Guaranteed QoS");
    let cpu = res["limits"]["cpu"].as_str().unwrap();
    assert_eq!(cpu.parse::<u32>().ok(), Some(2), "whole CPUs: {cpu}");
    assert!(res["limits"]["memory"].is_string());

    let args = strs(&c["args"]);
    assert_eq!(args[0], "run");
    assert_eq!(after(&args, "--shard"), "auto");
    assert_eq!(after(&args, "--shards"), "4");
    assert_eq!(after(&args, "--cpus"), "auto");
    assert_eq!(
        after(&args, "--seed"),
        "0",
        "no --seed given: the run's default, written"
    );
    let start = after(&args, "--start-at").to_string();
    assert!(start.ends_with('Z') && start.len() == 20, "{start}");
    // The user's flags, after the manifest's own, unchanged once Kubernetes has expanded them.
    let user = &args[args.len() - RUN_FLAGS.len()..];
    assert_eq!(expand(user, 0), RUN_FLAGS, "{text}");
    assert!(
        user.iter().any(|a| a.contains("$$(HOME)")),
        "a $ is escaped"
    );
    // Every pod: the same seed and start, its own folder.
    let outs: Vec<String> = (0..4)
        .map(|i| {
            let pod = expand(&args, i);
            assert_eq!(after(&pod, "--seed"), "0");
            assert_eq!(after(&pod, "--start-at"), start);
            after(&pod, "--out").to_string()
        })
        .collect();
    assert_eq!(outs[3], "/results/ringbench/shard-3");
    assert_eq!(
        outs.iter().collect::<std::collections::BTreeSet<_>>().len(),
        4
    );

    // A seed given is kept as given, and not written twice.
    let mut seeded = line.clone();
    seeded.extend(["--seed", "42"]);
    let args =
        strs(&docs(&manifest(&seeded))[0]["spec"]["template"]["spec"]["containers"][0]["args"]);
    assert_eq!(after(&args, "--seed"), "42");
    validate_or_skip("the 4-shard manifest", &text);
}

#[test]
fn with_a_claim_the_merge_job_is_there_suspended_and_the_key_comes_from_a_secret() {
    let text = manifest(&[
        "k8s",
        "manifest",
        "--shards",
        "3",
        "--k8s-name",
        "bench-a",
        "--k8s-namespace",
        "perf",
        "--k8s-cpus",
        "4",
        "--k8s-memory",
        "8Gi",
        "--k8s-volume-claim",
        "results",
        "--k8s-api-key-secret",
        "key",
        "--k8s-image",
        "registry.example/ringbench:dev",
        "--url",
        "http://s:8000",
        "--concurrency",
        "30",
    ]);
    let d = docs(&text);
    assert_eq!(d.len(), 2, "{text}");
    let (job, merge) = (&d[0], &d[1]);
    assert_eq!(job["metadata"]["namespace"], "perf");
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(
        pod["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "results"
    );
    let c = &pod["containers"][0];
    assert_eq!(c["image"], "registry.example/ringbench:dev");
    assert_eq!(c["resources"]["requests"]["cpu"], "4");
    assert_eq!(c["resources"]["limits"]["memory"], "8Gi");
    assert_eq!(c["env"][0]["valueFrom"]["secretKeyRef"]["name"], "key");
    assert_eq!(
        after(&strs(&c["args"]), "--out"),
        "/results/bench-a/shard-$(JOB_COMPLETION_INDEX)"
    );
    assert_eq!(merge["metadata"]["name"], "bench-a-merge");
    assert_eq!(merge["spec"]["suspend"], true);
    let m_args = strs(&merge["spec"]["template"]["spec"]["containers"][0]["args"]);
    let want: Vec<String> = [
        "merge",
        "/results/bench-a/shard-0",
        "/results/bench-a/shard-1",
        "/results/bench-a/shard-2",
        "--out",
        "/results/bench-a/merged",
    ]
    .map(String::from)
    .into();
    assert_eq!(m_args, want);
    validate_or_skip("the manifest with a claim", &text);
}

#[test]
fn bad_flags_exit_2_naming_the_flag() {
    let cases: [(&[&str], &str); 7] = [
        (&["--shards", "0"], "--shards"),
        (&["--url", "http://h:1"], "--shards"),
        (
            &["--shards", "2", "--url", "http://h:1", "--cpus", "0"],
            "--cpus",
        ),
        (
            &["--shards", "2", "--url", "http://h:1", "--k8s-image", "x"],
            "--k8s-image",
        ),
        (
            &["--shards", "2", "--url", "http://h:1", "--no-such-flag"],
            "--no-such-flag",
        ),
        (
            &[
                "--shards",
                "2",
                "--k8s-memory",
                "lots",
                "--url",
                "http://h:1",
            ],
            "--k8s-memory",
        ),
        (
            &["--shards", "2", "--start-in", "soon", "--url", "http://h:1"],
            "--start-in",
        ),
    ];
    for (flags, named) in cases {
        let mut args = vec!["k8s", "manifest"];
        args.extend(flags);
        let out = output(&mut ringbench(&args));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(named), "{args:?}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{args:?}: no manifest on stdout");
    }
}

/// `deploy/ringbench-job.yaml` is `ringbench k8s manifest` with `DEPLOY_ARGS` (and so stays
/// what the command prints); `RINGBENCH_BLESS=1` rewrites it. Every file of deploy/ validates.
#[test]
fn the_deploy_example_is_the_commands_output_and_validates() {
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
    let path = deploy.join("ringbench-job.yaml");
    let text = manifest(&DEPLOY_ARGS);
    if std::env::var_os("RINGBENCH_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &text).unwrap();
    }
    let kept = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        kept == text,
        "deploy/ringbench-job.yaml is not `ringbench {}`; rerun with RINGBENCH_BLESS=1",
        DEPLOY_ARGS.join(" ")
    );
    let readme = std::fs::read_to_string(deploy.join("README.md")).unwrap();
    assert!(
        readme.contains("--start-at 2030-01-01T00:00:00Z"),
        "the README shows the command"
    );
    for entry in std::fs::read_dir(&deploy).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&p).unwrap();
            assert!(!docs(&text).is_empty(), "{}", p.display());
            validate_or_skip(&p.display().to_string(), &text);
        }
    }
}

/// `kubernetes-validate --strict` (offline, the schemas ship with it) on `text`: it reads YAML
/// as Kubernetes' own tools do (YAML 1.1), so an unquoted `yes` or time in args fails it.
fn validate_or_skip(what: &str, text: &str) {
    let tool = "kubernetes-validate";
    let child = std::process::Command::new(tool)
        .args(["--strict", "--quiet", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        let required = std::env::var_os("RINGBENCH_REQUIRE_KUBERNETES_VALIDATE").is_some();
        assert!(
            !required,
            "{tool} is required here (RINGBENCH_REQUIRE_KUBERNETES_VALIDATE) but cannot be run"
        );
        eprintln!("SKIPPED: {tool} is not installed: {what} not validated against the schemas");
        return;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !said.contains("ERROR"),
        "{what}: {said}\n{text}"
    );
}

/// The pods' args, expanded as Kubernetes expands them, run as two local processes (the
/// index in JOB_COMPLETION_INDEX, /results moved under a test folder) against one simulator,
/// and merge into one run of every request: the manifest's args work as written. Bounds: 20
/// requests at 200/s after a start 3 s out, on loopback; lateness on a loaded machine only
/// adds lag, which this test does not judge (--allow-invalid).
#[test]
fn the_pods_args_run_as_shards_and_merge() {
    let _g = lock();
    let (mut sim, addr) = spawn_sim();
    let url = format!("http://{addr}");
    let flags = [
        "--url",
        &url,
        "--model",
        "m",
        "--request-rate",
        "200",
        "--request-count",
        "20",
        "--quiet",
        "--allow-concurrent",
        "--allow-invalid",
        "--no-server-metrics",
    ];
    let mut line = vec!["k8s", "manifest", "--shards", "2", "--start-in", "3s"];
    line.extend(flags);
    let job = &docs(&manifest(&line))[0];
    let args = strs(&job["spec"]["template"]["spec"]["containers"][0]["args"]);
    let root = made_dir("k8s-pods");
    let results = root.display().to_string();
    let pods: Vec<_> = (0..2)
        .map(|i| {
            let pod: Vec<String> = expand(&args, i)
                .into_iter()
                .map(|a| a.replacen("/results/", &format!("{results}/"), 1))
                .collect();
            ringbench(&pod)
                .env("JOB_COMPLETION_INDEX", i.to_string())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let codes: Vec<_> = pods
        .into_iter()
        .map(|p| p.wait_with_output().unwrap())
        .collect();
    let _ = sim.kill();
    let _ = sim.wait();
    for (i, o) in codes.iter().enumerate() {
        assert!(
            matches!(o.status.code(), Some(0 | 4)),
            "pod {i}: {:?} {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let dir = root.join("ringbench");
    let merged = dir.join("merged");
    let shards = [dir.join("shard-0"), dir.join("shard-1")];
    let mut merge = vec!["merge".to_string()];
    merge.extend(shards.iter().map(|p| p.display().to_string()));
    merge.extend(["--out".into(), merged.display().to_string()]);
    let out = output(&mut ringbench(&merge));
    assert!(matches!(out.status.code(), Some(0 | 4)), "{}", out.stderr);
    let ids: std::collections::BTreeSet<u64> = read_jsonl(&merged.join("requests.jsonl"))
        .iter()
        .map(|r| r["id"].as_u64().expect("an id"))
        .collect();
    assert_eq!(ids, (0..20).collect(), "every request once, over both pods");
}
