//! What `run` shows while it goes, and the first run the README shows: with stderr not a
//! terminal (a CI log), a plain `progress:` line every `--progress-interval`, and nothing else
//! changed on stdout; `ringbench run` alone runs the demo against the simulator at a small
//! model's pace, reports non-zero TPOT and ITL, and ends by saying how to point it at a server.

use crate::support::common::{cpu_pair, lock, output, ringbench};

/// stdout's layout: each row's label (or the whole line, its numbers masked) up to the
/// warnings, which a loaded machine may add to one run and not the other.
fn shape(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .take_while(|l| !l.contains("Warnings") && !l.starts_with("Valid:"))
        .map(|l| match l.split_once(':') {
            Some((label, _)) => label.to_string(),
            None => l.replace(|c: char| c.is_ascii_digit() || c == '.', "#"),
        })
        .collect()
}

#[test]
fn progress_lines_come_at_the_interval_off_a_terminal_and_change_nothing_else() {
    let _g = lock();
    let cpu = cpu_pair().0.to_string();
    let run = |extra: &[&str]| {
        output(
            ringbench(["run", "--request-rate", "50", "--duration", "3500ms"])
                .args(["--output-tokens", "4", "--seed", "3", "--prompt-nonce", "3"])
                .args(["--allow-invalid", "--no-server-metrics", "--cpus", &cpu])
                .args(extra),
        )
    };
    let shown = run(&["--progress-interval", "1s"]);
    let quiet = run(&["--quiet"]);
    assert!(
        shown.status.success() && quiet.status.success(),
        "{}",
        shown.stderr
    );
    let lines: Vec<&str> = shown.stderr.lines().collect();
    assert!(
        lines.iter().all(|l| l.starts_with("progress: ")),
        "only progress lines on stderr: {lines:#?}"
    );
    assert!(
        (3..=5).contains(&lines.len()),
        "one a second over 3.5 s: {lines:#?}"
    );
    for (i, l) in lines.iter().enumerate() {
        let elapsed: f64 = l["progress: ".len()..]
            .split('/')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            elapsed >= (i + 1) as f64 - 0.01,
            "line {i} at {elapsed} s: {l}"
        );
        for part in [
            "/3.5 s |",
            "| sent ",
            "| in flight ",
            "| ok ",
            "| failed ",
            " req/s",
        ] {
            assert!(l.contains(part), "{part}: {l}");
        }
    }
    assert!(lines.last().unwrap().contains("TTFT p50 "), "{lines:#?}");
    assert!(quiet.stderr.is_empty(), "--quiet: {}", quiet.stderr);
    assert_eq!(
        shape(&shown.stdout),
        shape(&quiet.stdout),
        "stdout is the same"
    );
    assert!(!shown.stdout.contains("progress"));
    let none = run(&["--progress-interval", "0"]);
    assert!(
        none.stderr.is_empty(),
        "--progress-interval 0: {}",
        none.stderr
    );
}

#[test]
fn the_first_run_shows_a_small_models_pace_and_how_to_go_on() {
    let _g = lock();
    let out = output(&mut ringbench(["run", "--progress-interval", "4s"]));
    let stdout = &out.stdout;
    // Run beside the other tests on two cores, the client's own lag may pass its bound: the
    // demo then says so and exits 4, as any run would (a healthy machine gives 0).
    let overloaded = out.status.code() == Some(4)
        && stdout.contains("the client's own overhead made the run invalid");
    assert!(
        out.status.success() || overloaded,
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(stdout.contains("No --url: a 8 s demo"), "{stdout}");
    let value = |label: &str| -> f64 {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label} in {stdout}"));
        line[label.len()..]
            .trim()
            .trim_end_matches(" *")
            .parse()
            .unwrap()
    };
    let (tpot, itl, ttft) = (
        value("Median TPOT (ms):"),
        value("Median ITL (ms):"),
        value("Median TTFT (ms):"),
    );
    assert!(
        (4.5..6.5).contains(&tpot) && (4.5..6.5).contains(&itl),
        "{tpot} {itl}"
    );
    assert!((19.5..30.0).contains(&ttft), "{ttft}");
    assert!(value("Successful requests:") > 200.0, "{stdout}");
    assert!(
        stdout.contains("Verdict:"),
        "the client-overhead verdict: {stdout}"
    );
    let last = stdout.lines().last().unwrap();
    assert!(last.contains("--url http://HOST:PORT"), "{last}");
    assert!(
        out.stderr.lines().all(|l| l.starts_with("progress: ")),
        "nothing but progress on stderr: {}",
        out.stderr
    );
    assert!(out.stderr.lines().count() >= 1, "{}", out.stderr);
}
