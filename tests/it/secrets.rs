//! Secrets never leave the process except on the wire: the API key (`--api-key` or
//! `OPENAI_API_KEY`) and secret-looking `--header` values appear in no output file, not on
//! stdout, not on stderr, whether the run succeeds, fails or is refused.

use crate::support::common::{self, lock, out_dir, output};
use std::path::Path;

const KEY: &str = "sk-LEAKCHECK-4f1d2a";
const BEARER: &str = "LEAKCHECK-bearer-77";
const TOKEN: &str = "LEAKCHECK-token-93";

fn ringbench(args: &[&str], env_key: bool, dir: &Path) -> String {
    let mut cmd = common::ringbench(args);
    cmd.arg("--out").arg(dir).env_remove("OPENAI_API_KEY");
    if env_key {
        cmd.env("OPENAI_API_KEY", KEY);
    } else {
        cmd.args(["--api-key", KEY]);
    }
    cmd.args(["--header", &format!("Authorization: Bearer {BEARER}")])
        .args(["--header", &format!("X-Session-Token:{TOKEN}")])
        .args(["--header", "X-Team:visible-team"]);
    let out = output(&mut cmd);
    out.stdout + &out.stderr
}

/// Every file under `dir`, as bytes (binary exports included).
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = vec![];
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
        }
    }
    out
}

fn assert_no_secret(console: &str, dir: &Path) {
    for secret in [KEY, BEARER, TOKEN] {
        assert!(
            !console.contains(secret),
            "console leaks {secret}:\n{console}"
        );
        for (name, bytes) in files(dir) {
            let hit = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
            assert!(!hit, "{name} leaks {secret}");
        }
    }
}

#[test]
fn no_output_holds_the_key_or_a_secret_header() {
    let _g = lock();
    let dir = out_dir("run");
    for env_key in [false, true] {
        // The second run writes over the first's files (`--out` refuses them otherwise).
        let console = ringbench(
            &["run", "--request-count", "20", "--overwrite"],
            env_key,
            &dir,
        );
        assert!(console.contains("Successful requests"), "{console}");
        let summary = std::fs::read_to_string(dir.join("summary.json")).unwrap();
        assert!(summary.contains("visible-team"), "plain headers are kept");
        assert!(dir.join("requests.jsonl").exists());
        assert_no_secret(&console, &dir);
    }
    // A run that fails before sending (nothing listens) and one refused as bad usage.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let console = ringbench(&["run", "--url", &url, "--request-count", "2"], false, &dir);
    assert_no_secret(&console, &dir);
    let console = ringbench(&["run", "--request-rate", "0"], true, &dir);
    assert!(console.contains("--request-rate"), "{console}");
    assert_no_secret(&console, &dir);
    let _ = std::fs::remove_dir_all(&dir);
}
