//! The simulator's engine model seen from outside (server side of the flow schedule → worker
//! → http → sse → extract → record → collector → report): the KV cache against the client's
//! salted prompts, prefix groups against their intended reuse, the scheduler against
//! arithmetic, and `/metrics` through a real Prometheus text parser. Each test holds the one
//! lock: it runs a load.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::support::common::{
    cpu_pair, lock, made_dir, read_json, ringbench, run_summary, sim_plan,
};
use openmetrics_parser::{MetricsExposition, PrometheusType, PrometheusValue};
use ringbench::plan::workload::PrefixSpec;
use ringbench::plan::{Load, Plan, SimSettings, Stop, Target};
use ringbench::sim::{self, SimConfig, SimHandle};
use serde_json::Value;

/// A closed loop of `users` for `requests`, no warm-up, lag not judged.
pub(crate) fn closed(p: &mut Plan, users: u32, requests: u64) {
    p.load = Load::Closed { concurrency: users };
    p.stop = Stop {
        request_count: Some(requests),
        duration_ns: None,
    };
    p.warmup_requests = 0;
    p.max_lag_ms = 1e9;
}

fn cached_rate(s: &Value) -> f64 {
    s["workload"]["observed_cached_rate"]
        .as_f64()
        .unwrap_or_else(|| panic!("the sim reported cached tokens: {}", s["workload"]))
}

/// A simulator of its own (not the run's), so a test can read it during and after runs.
pub(crate) fn start_sim(settings: SimSettings) -> SimHandle {
    sim::start(SimConfig {
        settings: SimSettings {
            cpus: vec![cpu_pair().1],
            ..settings
        },
        ..SimConfig::default()
    })
    .expect("the simulator starts")
}

pub(crate) fn against(sim: &SimHandle) -> Plan {
    let mut p = sim_plan();
    p.sim = None;
    p.targets = vec![Target::parse(&format!("http://{}", sim.addr)).unwrap()];
    p.allow_concurrent = true;
    p
}

/// `GET /metrics`, whole.
fn scrape(addr: SocketAddr) -> String {
    let mut sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    sock.write_all(b"GET /metrics HTTP/1.1\r\nHost: sim\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut raw = String::new();
    sock.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a whole response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    body.to_string()
}

type Page = MetricsExposition<PrometheusType, PrometheusValue>;

/// The page through a real Prometheus text parser (`openmetrics-parser`; `prometheus-parse`
/// cannot read vLLM's `vllm:` names: its name pattern has no colon).
fn parse(page: &str) -> Page {
    openmetrics_parser::prometheus::parse_prometheus(page).expect("the page parses")
}

/// The value of `family`'s first series with `labels` among its labels.
fn sample(page: &str, family: &str, labels: &[(&str, &str)]) -> f64 {
    let parsed = parse(page);
    let fam = parsed
        .families
        .get(family)
        .unwrap_or_else(|| panic!("{family} is missing:\n{page}"));
    let hit = fam.iter_samples().find(|s| {
        let set = s.get_labelset().unwrap();
        labels
            .iter()
            .all(|(k, v)| set.get_label_value(k) == Some(*v))
    });
    match hit.map(|s| &s.value) {
        Some(PrometheusValue::Gauge(n)) | Some(PrometheusValue::Unknown(n)) => n.as_f64(),
        Some(PrometheusValue::Counter(c)) => c.value.as_f64(),
        other => panic!("{family} {labels:?}: {other:?}"),
    }
}

#[test]
fn salted_prompts_meet_a_cold_cache_and_unsalted_ones_do_not() {
    let _g = lock();
    let run = |salt: bool| {
        let sim = start_sim(SimSettings {
            kv_cache_blocks: 16_384,
            ..SimSettings::default()
        });
        let mut p = against(&sim);
        closed(&mut p, 16, 5_000);
        p.workload.prompt_salt = salt;
        let s = run_summary(&p);
        (s, sim.stop())
    };
    let (s, stats) = run(true);
    assert_eq!(s["counts"]["ok"], 5_000, "{}", s["counts"]);
    assert!(cached_rate(&s) < 0.01, "{}", s["workload"]);
    assert_eq!(stats.completions, 5_000);
    assert_eq!(
        stats.distinct_prompts, 5_000,
        "every request its own prompt"
    );
    assert_eq!(s["workload"]["distinct_prompts_sent"], 5_000);
    // The same run unsalted repeats the catalog's 1,024 prompts; a cache serves them.
    let (s, stats) = run(false);
    assert_eq!(stats.distinct_prompts, 1_024);
    // Requests after the 1,024th hit all but the last block of 128 words: 3,976 × 112 / 5,000 × 128.
    let expect = 3_976.0 * 112.0 / (5_000.0 * 128.0);
    let got = cached_rate(&s);
    assert!((got - expect).abs() < 0.01, "{got} vs {expect}");
    assert_eq!(stats.cached_tokens, 3_976 * 112);
}

#[test]
fn a_sweep_against_one_cache_sends_every_point_cold() {
    let _g = lock();
    let sim = start_sim(SimSettings {
        kv_cache_blocks: 16_384,
        ..SimSettings::default()
    });
    let url = format!("http://{}", sim.addr);
    let sweep = |name: &str, extra: &[&str]| {
        let dir = made_dir(name);
        let out = ringbench(["sweep", "--url", &url, "--concurrency", "2,4,8", "--quiet"])
            .args([
                "--request-count",
                "300",
                "--warmup-requests",
                "0",
                "--cooldown",
                "0s",
            ])
            .args(["--allow-invalid", "--allow-concurrent", "--export", "none"])
            .args(["--cpus", &cpu_pair().0.to_string()])
            .args(extra)
            .arg("--out")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        ["c2", "c4", "c8"].map(|c| read_json(&dir.join(format!("points/{c}-1/summary.json"))))
    };
    for point in sweep("sweep-cold", &[]) {
        assert!(cached_rate(&point) < 0.01, "{}", point["workload"]);
    }
    // The same sweep with a fixed nonce and no salt: every later point re-sends the first
    // point's 300 prompts, and the cache answers them.
    let warm = sweep("sweep-warm", &["--no-prompt-salt"]);
    for point in &warm[1..] {
        assert!(cached_rate(point) > 0.5, "{}", point["workload"]);
    }
}

#[test]
fn prefix_groups_hit_as_intended_until_the_cache_is_too_small() {
    let _g = lock();
    let run = |blocks: u32| {
        let sim = start_sim(SimSettings {
            kv_cache_blocks: blocks,
            ..SimSettings::default()
        });
        let mut p = against(&sim);
        closed(&mut p, 8, 600);
        p.input_tokens = 1_024;
        p.workload.prefix = Some(PrefixSpec {
            groups: 4,
            tokens: 512,
            zipf: None,
        });
        let s = run_summary(&p);
        let page = scrape(sim.addr);
        (s, page, sim.stop())
    };
    let (s, page, stats) = run(40_960);
    let intended = s["workload"]["prefix"]["intended_reuse_rate"]
        .as_f64()
        .unwrap();
    let got = cached_rate(&s);
    assert!(
        (got - intended).abs() < 0.02,
        "observed {got}, intended {intended}"
    );
    assert_eq!(stats.kv_evictions, 0);
    assert_eq!(
        sample(&page, "ringbench_sim:kv_cache_evictions_total", &[]),
        0.0
    );
    // 70 blocks hold one running request (65 blocks) and little else: the prefixes are
    // evicted between requests, and the page says so.
    let (s, page, stats) = run(70);
    let small = cached_rate(&s);
    assert!(
        small < intended - 0.1,
        "observed {small}, intended {intended}"
    );
    assert!(stats.kv_evictions > 0);
    let evicted = sample(
        &page,
        "ringbench_sim:kv_cache_evictions_total",
        &[("engine", "0")],
    );
    assert_eq!(evicted, stats.kv_evictions as f64);
    assert_eq!(
        s["counts"]["ok"], 600,
        "requests wait for blocks, none fails"
    );
}

#[test]
fn four_slots_and_sixteen_users_queue_three_rounds_deep() {
    let _g = lock();
    // Prefill P, no other delay: 16 users on 4 slots run in rounds of 4, each P long, so a
    // request waits for the 3 rounds ahead of it (queue ≈ 3P) and sees its first token one
    // round later (TTFT ≈ 4P); 12 wait at any time.
    const P_MS: f64 = 20.0;
    let sim = start_sim(SimSettings {
        max_num_seqs: 4,
        prefill_overhead_ms: P_MS,
        ..SimSettings::default()
    });
    let mut p = against(&sim);
    closed(&mut p, 16, 320); // 80 rounds, 1.6 s
    p.output_tokens = 4;
    let addr = sim.addr;
    let run = std::thread::spawn(move || run_summary(&p));
    // Mid-run (rounds start at 0, 20, 40 ms...), the queue holds the 12 behind the 4.
    std::thread::sleep(Duration::from_millis(600));
    let mut during: Vec<f64> = (0..7)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(37));
            sample(
                &scrape(addr),
                "vllm:num_requests_waiting",
                &[("engine", "0")],
            )
        })
        .collect();
    let s = run.join().unwrap();
    let after = scrape(addr);
    let stats = sim.stop();
    // A scrape can land in the few hundred µs between a round's end and its users' next
    // requests (the queue then holds 8): the median is the steady state.
    during.sort_by(f64::total_cmp);
    assert!((11.0..=13.0).contains(&during[3]), "waiting {during:?}");
    assert!(
        during.iter().all(|w| (8.0..=13.0).contains(w)),
        "waiting {during:?}"
    );
    assert_eq!(sample(&after, "vllm:num_requests_waiting", &[]), 0.0);
    assert_eq!(sample(&after, "vllm:num_requests_running", &[]), 0.0);
    let ttft_p50 = s["latency_ms"]["ttft"]["p50"].as_f64().unwrap();
    assert!(
        (4.0 * P_MS..4.0 * P_MS + 10.0).contains(&ttft_p50),
        "TTFT p50 {ttft_p50} ms"
    );
    let queue_p50_ms = stats.queue_us.p50.unwrap() / 1e3;
    assert!(
        (3.0 * P_MS - 2.0..3.0 * P_MS + 8.0).contains(&queue_p50_ms),
        "queue p50 {queue_p50_ms} ms"
    );
    assert_eq!(
        sample(
            &after,
            "vllm:request_success_total",
            &[("finished_reason", "length")]
        ),
        320.0
    );
}

#[test]
fn metrics_has_every_vllm_family_with_its_type() {
    let _g = lock();
    let sim = start_sim(SimSettings {
        kv_cache_blocks: 1_024,
        ..SimSettings::default()
    });
    let mut p = against(&sim);
    closed(&mut p, 2, 20);
    let s = run_summary(&p);
    assert_eq!(s["counts"]["ok"], 20);
    let page = scrape(sim.addr);
    let parsed = parse(&page);
    for (name, want) in [
        ("vllm:num_requests_running", PrometheusType::Gauge),
        ("vllm:num_requests_waiting", PrometheusType::Gauge),
        ("vllm:kv_cache_usage_perc", PrometheusType::Gauge),
        ("vllm:prefix_cache_queries_total", PrometheusType::Counter),
        ("vllm:prefix_cache_hits_total", PrometheusType::Counter),
        ("vllm:mm_cache_queries_total", PrometheusType::Counter),
        ("vllm:mm_cache_hits_total", PrometheusType::Counter),
        ("vllm:prompt_tokens_total", PrometheusType::Counter),
        ("vllm:generation_tokens_total", PrometheusType::Counter),
        ("vllm:num_preemptions_total", PrometheusType::Counter),
        ("vllm:request_success_total", PrometheusType::Counter),
        (
            "vllm:time_to_first_token_seconds",
            PrometheusType::Histogram,
        ),
        (
            "vllm:inter_token_latency_seconds",
            PrometheusType::Histogram,
        ),
        (
            "vllm:e2e_request_latency_seconds",
            PrometheusType::Histogram,
        ),
        ("vllm:request_queue_time_seconds", PrometheusType::Histogram),
        (
            "vllm:request_prefill_time_seconds",
            PrometheusType::Histogram,
        ),
    ] {
        let fam = parsed
            .families
            .get(name)
            .unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(fam.family_type, want, "{name}");
        assert!(fam.iter_samples().count() >= 1, "{name} has a series");
    }
    // The real vLLM page parses with the same parser, and has every one of these families.
    let real = std::fs::read_to_string(
        crate::support::common::fixtures_dir()
            .parent()
            .unwrap()
            .join("metrics/vllm-cpu-0.32.txt"),
    )
    .unwrap();
    let real_parsed = parse(&real);
    for name in parsed.families.keys().filter(|n| n.starts_with("vllm:")) {
        let theirs = real_parsed
            .families
            .get(name)
            .unwrap_or_else(|| panic!("{name} is not vLLM's"));
        assert_eq!(
            theirs.family_type, parsed.families[name].family_type,
            "{name}"
        );
        assert_eq!(
            theirs.get_label_names(),
            parsed.families[name].get_label_names(),
            "{name}"
        );
    }
    // Counters agree with what the client sent and got.
    assert_eq!(
        sample(
            &page,
            "vllm:prompt_tokens_total",
            &[("model_name", "ringbench-sim")]
        ),
        20.0 * 128.0
    );
    assert_eq!(
        sample(&page, "vllm:generation_tokens_total", &[]),
        20.0 * 16.0
    );
    let ttft = parsed.families["vllm:time_to_first_token_seconds"]
        .iter_samples()
        .next()
        .unwrap();
    let PrometheusValue::Histogram(h) = &ttft.value else {
        unreachable!()
    };
    assert_eq!(h.count, Some(20), "every request observed once");
    // The same bounds as vLLM's own page.
    let bounds = |page: &str| -> Vec<String> {
        page.lines()
            .filter(|l| l.starts_with("vllm:time_to_first_token_seconds_bucket{engine=\"0\""))
            .map(|l| {
                l.split("le=\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    assert_eq!(bounds(&page), bounds(&real));
}

#[test]
fn the_llama_cpp_flavour_closes_after_every_stream_and_nothing_fails() {
    let _g = lock();
    let sim = start_sim(SimSettings {
        flavor: ringbench::plan::sim::Flavor::LlamaCpp,
        kv_cache_blocks: 4_096,
        ..SimSettings::default()
    });
    for endpoint in [
        ringbench::plan::Endpoint::Chat,
        ringbench::plan::Endpoint::Completions,
    ] {
        let mut p = against(&sim);
        closed(&mut p, 4, 200);
        p.endpoint = endpoint;
        // Counted below: the simulator's connections are the run's and the test's own.
        p.server_metrics.enabled = false;
        let s = run_summary(&p);
        assert_eq!(s["counts"]["ok"], 200, "{endpoint:?}: {}", s["counts"]);
        assert_eq!(s["counts"]["failed"], 0);
        // Every response closed its connection: one connection per request, none failed.
        let opened: u64 = s["overhead"]["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["connections_opened"].as_u64().unwrap())
            .sum();
        assert_eq!(opened, 200, "{endpoint:?}: {}", s["overhead"]["workers"]);
        // The usage (on the finish event for completions, its own event for chat) was read.
        assert_eq!(s["tokens"]["output_source"]["usage"], 200, "{endpoint:?}");
        assert_eq!(s["tokens"]["input_server_reports"], 200, "{endpoint:?}");
        assert!(cached_rate(&s) < 0.01);
    }
    let page = scrape(sim.addr);
    let parsed = parse(&page);
    assert_eq!(
        parsed.families["llamacpp:requests_processing"].family_type,
        PrometheusType::Gauge
    );
    assert_eq!(
        sample(&page, "llamacpp:tokens_predicted_total", &[]),
        400.0 * 16.0
    );
    assert_eq!(
        sample(&page, "llamacpp:prompt_tokens_total", &[]),
        400.0 * 128.0
    );
    // 400 requests, one `GET /v1/models` per run (the model name), one scrape.
    assert_eq!(sim.stop().connections, 400 + 2 + 1);
}

#[test]
fn reasoning_comes_first_under_each_flavours_key_and_counts_for_ttft_not_ttfo() {
    let _g = lock();
    for flavor in [
        ringbench::plan::sim::Flavor::Vllm,
        ringbench::plan::sim::Flavor::LlamaCpp,
    ] {
        // 8 tokens an event each 2 ms apart, the first 4 reasoning: the first content event
        // is due 4 × 2 ms after the first token.
        let sim = start_sim(SimSettings {
            flavor,
            itl_ms: 2.0,
            reasoning_tokens: 4,
            ..SimSettings::default()
        });
        let mut p = against(&sim);
        closed(&mut p, 2, 40);
        p.output_tokens = 8;
        let s = run_summary(&p);
        assert_eq!(s["counts"]["ok"], 40, "{flavor:?}: {}", s["counts"]);
        assert_eq!(s["tokens"]["output_total"], 40 * 8, "{flavor:?}");
        let ms = |m: &str| s["latency_ms"][m]["p50"].as_f64().unwrap();
        let gap = ms("ttfo") - ms("ttft");
        // At least the 8 ms the simulator waits (less what the first event was late by,
        // bounded well below it); reasoning counted as output, not as a failure.
        assert!(gap > 5.0, "{flavor:?}: TTFO − TTFT p50 {gap} ms");
        assert_eq!(s["counts"]["failed"], 0);
        sim.stop();
    }
}
