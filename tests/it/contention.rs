//! Telling the machine from the client: with CPU-burning threads pinned to the worker's CPU,
//! the kernel's scheduler says the worker waited for its CPU, the verdict names host
//! contention (not the client), a real measurement exits 4 for it, and the demo and the
//! self-check — which are not measurements — report it and exit 0.

use crate::support::common::{at, f, within_attempts, KillOnDrop};
use crate::support::common::{cpu_pair, lock, out_dir, output, read_json, ringbench, spawn_sim};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Threads spinning on one CPU until dropped: another program holding the worker's core.
struct Burners {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Burners {
    fn on(cpu: usize, count: usize) -> Burners {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..count)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    assert!(core_affinity::set_for_current(core_affinity::CoreId {
                        id: cpu
                    }));
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        Burners { stop, threads }
    }
}

impl Drop for Burners {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.threads.drain(..).for_each(|t| {
            let _ = t.join();
        });
    }
}

/// The summary's overhead figures, for a failure message.
fn figures(s: &Value) -> String {
    let o = at(s, "overhead");
    format!(
        "valid {} cause {} host wait max {} % lag p99 {} ms reasons {} verdict {}",
        o["valid"],
        o["invalid_cause"],
        o["host_wait_percent_max"],
        o["sched_lag_ms"]["p99"],
        o["invalid_reasons"],
        s["verdict"]
    )
}

/// Runs `args` (a run writing `dir`) under burners on the worker's CPU until it comes out
/// invalid, at most three times: a scheduler may let a waking worker in on time for a whole
/// short run. Returns the exit code, the console and the summary of the invalid attempt.
fn invalid_under_contention(name: &str, args: &[&str]) -> (i32, String, Value) {
    let (cpu, _) = cpu_pair();
    let what = format!("{name}: an invalid run under two burners");
    within_attempts(3, &what, |attempt| {
        let dir = out_dir(&format!("{name}-{attempt}"));
        let cpus = cpu.to_string();
        let mut line: Vec<&str> = args.to_vec();
        line.extend(["--cpus", &cpus, "--quiet", "--out", dir.to_str().unwrap()]);
        let ran = {
            let _burn = Burners::on(cpu, 2);
            output(&mut ringbench(&line))
        };
        let s = read_json(&dir.join("summary.json"));
        // The burners held the worker's CPU: the kernel said so, whatever the verdict.
        assert!(
            f(&s, "overhead.host_wait_percent_max") >= 5.0,
            "attempt {attempt}: {}",
            figures(&s)
        );
        match s["overhead"]["valid"] == false {
            true => Ok((ran.status.code().unwrap(), ran.stdout, s)),
            false => Err(figures(&s)),
        }
    })
}

#[test]
fn the_demo_under_host_contention_names_the_host_and_ends_0() {
    let _g = lock();
    if cpu_pair().0 == cpu_pair().1 {
        panic!("this test needs two CPUs: the burners' and the simulator's");
    }
    let (code, console, s) = invalid_under_contention("demo", &["run"]);
    assert_eq!(
        at(&s, "overhead.invalid_cause"),
        "host_contention",
        "{}",
        figures(&s)
    );
    assert!(console.contains("host contention"), "{console}");
    assert!(
        console.contains("The demo is not a measurement"),
        "{console}"
    );
    assert_eq!(code, 0, "{console}");
    assert_eq!(s["verdict"]["exit_code"], 4, "{}", figures(&s));
}

#[test]
fn a_measurement_under_host_contention_exits_4_naming_the_host() {
    let _g = lock();
    let (sim, addr) = spawn_sim();
    let _sim = KillOnDrop(sim);
    let url = format!("http://{addr}");
    let args = [
        "run",
        "--url",
        &url,
        "--model",
        "m",
        "--request-rate",
        "400",
        "--duration",
        "3s",
        "--output-tokens",
        "8",
    ];
    let (code, console, s) = invalid_under_contention("measured", &args);
    assert_eq!(code, 4, "{console}");
    assert_eq!(
        at(&s, "overhead.invalid_cause"),
        "host_contention",
        "{}",
        figures(&s)
    );
    let reasons = at(&s, "verdict.reasons").to_string();
    assert!(reasons.contains("the machine, not the client"), "{reasons}");
    assert!(!console.contains("not a measurement"), "{console}");
}

#[test]
fn the_self_check_ends_0_even_when_invalid() {
    let _g = lock();
    let (cpu, _) = cpu_pair();
    let dir = out_dir("self-check");
    let ran = {
        let _burn = Burners::on(cpu, 2);
        output(&mut ringbench([
            "run",
            "--self-check",
            "--cpus",
            &cpu.to_string(),
            "--quiet",
            "--max-lag",
            "1us",
            "--out",
            dir.to_str().unwrap(),
        ]))
    };
    let s = read_json(&dir.join("summary.json"));
    // A bound no run meets: invalid for sure, and the self-check still ends 0.
    assert_eq!(s["overhead"]["valid"], false, "{}", figures(&s));
    assert_eq!(ran.status.code(), Some(0), "{}", ran.stdout);
    assert!(
        ran.stdout.contains("The self-check is not a measurement"),
        "{}",
        ran.stdout
    );
}
