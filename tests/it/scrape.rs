//! The server's own metrics (`ringbench::__private::scrape`, beside the flow, never in it): pages of real
//! engines (`tests/data/metrics/`: vLLM's captured, llama.cpp's, SGLang's and TGI's written
//! from their sources) give the expected concept values; the window's arithmetic (histogram
//! quantiles by interpolation, counter deltas across a reset) is exact on hand-made pages;
//! endpoints that stall, reset, answer 500 or garbage cost the caller nothing but counted
//! failures; and the simulator's `/metrics` is found and read as vLLM's, the library's parser
//! (`prom_text_format_parser`) reading every `vllm:*` sample of it as an independent one
//! (`openmetrics-parser`, a dev-dependency) does. Tests that time something or load the
//! simulator take the one lock.

use crate::support::common::{cpu_pair, lock, made_dir, run_summary, sim_plan, within_attempts};
use ringbench::__private::scrape::jsonl::read_file;
use ringbench::__private::scrape::{
    measured_window, parse_page, probe, probe_with, summarize, Concept, Engine, Fetcher,
    GetOptions, MetricsUrl, Page, Phase, Scrape, ScrapeError, ScrapeSettings, Scraper,
};
use ringbench::host::mono_ns;
use ringbench::plan::{Load, SimSettings, Stop, Target};
use ringbench::sim::{self, SimConfig};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

fn page_of(file: &str) -> Page {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/metrics")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    parse_page(&text, 256).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn value(p: &Page, c: Concept) -> f64 {
    *p.values
        .get(&c)
        .unwrap_or_else(|| panic!("{c:?} missing: {:?}", p.values))
}

/// (count, sum) of a histogram concept.
fn count_sum(p: &Page, c: Concept) -> (Option<f64>, Option<f64>) {
    let h = p
        .histograms
        .get(&c)
        .unwrap_or_else(|| panic!("{c:?} missing"));
    (h.count, h.sum)
}

#[test]
fn the_captured_vllm_page_gives_its_concepts() {
    let p = page_of("vllm-cpu-0.32.txt");
    assert_eq!(p.engine, Some(Engine::Vllm));
    assert_eq!(p.families, 92, "one per # TYPE line");
    for (c, want) in [
        (Concept::Running, 0.0),              // line 57
        (Concept::Waiting, 0.0),              // line 60
        (Concept::KvCacheUsage, 0.0),         // line 72
        (Concept::PrefixCacheQueries, 235.0), // line 75
        (Concept::PrefixCacheHits, 0.0),      // line 81
        (Concept::Preemptions, 0.0),          // line 111
        (Concept::PromptTokens, 235.0),       // line 117
        (Concept::GenerationTokens, 218.0),   // line 153
    ] {
        assert_eq!(value(&p, c), want, "{c:?}");
    }
    for (c, count, sum) in [
        (Concept::Ttft, 17.0, 22.46818256378174),  // lines 313-315
        (Concept::Itl, 201.0, 1.9661952020003355), // lines 340-342
        (Concept::E2e, 17.0, 24.395339727401733),  // lines 397-398
        (Concept::QueueTime, 17.0, 0.00042000599955827056), // lines 426-427
        (Concept::PrefillTime, 17.0, 22.109346122999796), // lines 484-485
        (Concept::DecodeTime, 17.0, 1.9661952020003355), // lines 513-514
    ] {
        assert_eq!(count_sum(&p, c), (Some(count), Some(sum)), "{c:?}");
    }
    // Lines 291-312: TTFT's cumulative buckets, as printed.
    let ttft = &p.histograms[&Concept::Ttft];
    assert_eq!(ttft.le.len(), 22);
    assert_eq!(
        &ttft.cum[..9],
        [0.0, 0.0, 1.0, 6.0, 13.0, 14.0, 15.0, 15.0, 16.0]
    );
    // Everything else (python_*, process_*, http_*, the unmapped vllm: families) is raw.
    assert!(p.raw.contains_key("vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name=\"tiny-llama\"}"));
    assert!(p.raw_families > 50, "{}", p.raw_families);
    assert_eq!(p.raw_dropped, 0, "{} raw series kept", p.raw.len());
    // vLLM's cache settings, as labels of one series (line 554), are kept whole.
    assert!(p
        .raw
        .keys()
        .any(|k| k.starts_with("vllm:cache_config_info{") && k.len() > 1000));
}

#[test]
fn pages_written_from_llama_cpp_sglang_and_tgi_give_their_concepts() {
    let l = page_of("llamacpp-03d4bcc.txt");
    assert_eq!(l.engine, Some(Engine::LlamaCpp));
    assert_eq!(value(&l, Concept::Running), 4.0);
    assert_eq!(value(&l, Concept::Waiting), 3.0);
    assert_eq!(value(&l, Concept::KvCacheUsage), 0.3125);
    assert_eq!(value(&l, Concept::PromptTokens), 1536.0);
    assert_eq!(value(&l, Concept::GenerationTokens), 2048.0);
    assert_eq!(count_sum(&l, Concept::PrefillTime), (None, Some(2.876)));
    assert_eq!(count_sum(&l, Concept::DecodeTime), (None, Some(41.305)));
    assert_eq!((l.families, l.raw_families), (12, 5));
    assert!(
        !l.values.contains_key(&Concept::PrefixCacheHits),
        "no such family then"
    );

    // A later llama.cpp, captured: the prompt tokens are those processed and those reused.
    let b = page_of("llamacpp-b11434.txt");
    assert_eq!(b.engine, Some(Engine::LlamaCpp));
    assert_eq!(value(&b, Concept::PromptTokens), 21.0 + 17.0);
    assert_eq!(value(&b, Concept::PrefixCacheQueries), 21.0 + 17.0);
    assert_eq!(value(&b, Concept::PrefixCacheHits), 17.0);
    assert_eq!(value(&b, Concept::GenerationTokens), 16.0);
    assert_eq!(value(&b, Concept::Running), 0.0);
    assert!(
        !b.values.contains_key(&Concept::KvCacheUsage),
        "not exported any more"
    );
    assert_eq!(count_sum(&b, Concept::PrefillTime), (None, Some(0.027694)));
    for mapped in [
        "llamacpp:prompt_tokens_total",
        "llamacpp:prompt_tokens_cached_total",
    ] {
        assert!(!b.raw.contains_key(mapped), "{mapped} is mapped, not raw");
    }
    assert!(
        b.raw.contains_key("llamacpp:prompt_tokens_seconds"),
        "a gauge kept raw"
    );

    let s = page_of("sglang-00ae9c1.txt");
    assert_eq!(s.engine, Some(Engine::Sglang));
    for (c, want) in [
        (Concept::Running, 6.0),
        (Concept::Waiting, 2.0),
        (Concept::KvCacheUsage, 0.42),
        (Concept::PrefixCacheQueries, 12288.0),
        (Concept::PrefixCacheHits, 4096.0),
        (Concept::Preemptions, 1.0),
        (Concept::PromptTokens, 12288.0),
        (Concept::GenerationTokens, 6144.0),
    ] {
        assert_eq!(value(&s, c), want, "{c:?}");
    }
    assert_eq!(count_sum(&s, Concept::Ttft).0, Some(48.0));
    assert_eq!(count_sum(&s, Concept::Itl).0, Some(6096.0));
    assert_eq!(count_sum(&s, Concept::E2e).0, Some(48.0));
    let queue = &s.histograms[&Concept::QueueTime];
    assert_eq!(
        (queue.le[0], queue.cum[0], queue.count),
        (0.0, 40.0, Some(48.0))
    );

    let t = page_of("tgi-db931fc.txt");
    assert_eq!(t.engine, Some(Engine::Tgi));
    assert_eq!(value(&t, Concept::Running), 8.0);
    assert_eq!(value(&t, Concept::Waiting), 3.0);
    assert_eq!(value(&t, Concept::PromptTokens), 61440.0);
    assert_eq!(value(&t, Concept::GenerationTokens), 14336.0);
    assert_eq!(
        count_sum(&t, Concept::Itl),
        (Some(112.0), Some(2.2400000000000015))
    );
    assert_eq!(count_sum(&t, Concept::E2e), (Some(112.0), Some(336.0)));
    assert_eq!(count_sum(&t, Concept::QueueTime).0, Some(112.0));
    assert_eq!(t.histograms[&Concept::E2e].le.len(), 35);
    // Counters declared without `_total` (metrics-exporter-prometheus) are read raw as such.
    assert_eq!(t.raw["tgi_request_count"], 120.0);
}

/// A scrape of `text` at `start_ns`, in round `round`.
fn scrape_at(text: &str, start_ns: u64, round: u64, phase: Phase) -> Scrape {
    Scrape {
        start_ns,
        end_ns: start_ns + 1_000_000,
        url: "http://127.0.0.1:1/metrics".into(),
        phase,
        round,
        mark: false,
        error: None,
        page: Some(parse_page(text, 16).unwrap()),
        prometheus: None,
    }
}

/// A vLLM-named page: `running` and `kv` gauges, the token counter, and a TTFT histogram
/// with bounds 0.1, 0.2, 0.4 s given as cumulative counts and a sum.
fn vllm_page(running: f64, kv: f64, tokens: f64, ttft: [f64; 4], sum: f64) -> String {
    let b = |le: &str, n: f64| {
        format!("vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"{le}\"}} {n}\n")
    };
    format!(
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{{engine=\"0\"}} {running}\n\
         # TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{{engine=\"0\"}} {kv}\n\
         # TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{{engine=\"0\"}} {tokens}\n\
         # TYPE vllm:request_queue_time_seconds histogram\n\
         vllm:request_queue_time_seconds_bucket{{engine=\"0\",le=\"+Inf\"}} {n}\n\
         vllm:request_queue_time_seconds_count{{engine=\"0\"}} {n}\n\
         vllm:request_queue_time_seconds_sum{{engine=\"0\"}} {q}\n\
         # TYPE vllm:time_to_first_token_seconds histogram\n{}{}{}{}\
         vllm:time_to_first_token_seconds_count{{engine=\"0\"}} {}\n\
         vllm:time_to_first_token_seconds_sum{{engine=\"0\"}} {sum}\n",
        b("0.1", ttft[0]),
        b("0.2", ttft[1]),
        b("0.4", ttft[2]),
        b("+Inf", ttft[3]),
        ttft[3],
        n = ttft[3],
        q = sum / 4.0,
    )
}

#[test]
fn the_window_counts_deltas_across_a_reset_and_interpolates_quantiles_exactly() {
    let s = |at_s: u64, round, phase, page: String| {
        scrape_at(&page, at_s * 1_000_000_000, round, phase)
    };
    let scrapes = vec![
        // Warm-up: outside the window.
        s(
            0,
            1,
            Phase::Warmup,
            vllm_page(9.0, 0.9, 50.0, [1.0, 1.0, 1.0, 1.0], 0.05),
        ),
        s(
            10,
            2,
            Phase::Measure,
            vllm_page(2.0, 0.25, 100.0, [2.0, 2.0, 2.0, 2.0], 0.1),
        ),
        s(
            11,
            3,
            Phase::Measure,
            vllm_page(4.0, 0.5, 300.0, [4.0, 6.0, 8.0, 9.0], 1.5),
        ),
        // The server restarted: every counter starts again from 0.
        s(
            12,
            4,
            Phase::Measure,
            vllm_page(1.0, 0.125, 40.0, [2.0, 4.0, 6.0, 8.0], 1.0),
        ),
        s(
            14,
            5,
            Phase::After,
            vllm_page(3.0, 0.75, 140.0, [4.0, 8.0, 10.0, 12.0], 2.0),
        ),
        s(
            20,
            6,
            Phase::After,
            vllm_page(0.0, 0.0, 999.0, [9.0, 9.0, 9.0, 99.0], 9.0),
        ),
    ];
    let (t0, t1) = measured_window(&scrapes).unwrap();
    assert_eq!((t0, t1), (10_000_000_000, 14_000_000_000));
    let sum = summarize(&scrapes, t0, t1, &[75.0]);
    assert_eq!(sum.engine.as_deref(), Some("vllm"));
    assert_eq!((sum.scrapes_ok, sum.scrapes_failed), (4, 0));
    assert_eq!(sum.window_s, 4.0);
    // Running 2, 4, 1, 3: nearest rank.
    let g = &sum.gauges["running"];
    assert_eq!(
        (g.samples, g.min, g.mean, g.p50, g.p90, g.max),
        (4, Some(1.0), Some(2.5), Some(2.0), Some(4.0), Some(4.0))
    );
    assert_eq!(sum.gauges["kv_cache_usage"].max, Some(0.75));
    // Tokens 100 → 300 → (reset) 40 → 140: 140 − 100 + 300 = 340 over 4 s.
    let c = &sum.counters["generation_tokens"];
    assert_eq!((c.delta, c.per_s, c.resets), (340.0, Some(85.0), 1));
    // TTFT buckets rise by (0.1: 2 + 2 + 2, 0.2: 4 + 4 + 4, 0.4: 6 + 6 + 4, +Inf: 7 + 8 + 4)
    // = 6, 12, 16, 19 observations.
    let h = &sum.histograms["ttft"];
    assert_eq!(h.count, Some(19));
    // p50: rank 9.5 in (0.1, 0.2] holding 6 → 0.1 + 0.1 · 3.5/6 s.
    assert_eq!(h.p50_ms, Some((0.1 + 0.1 * (3.5 / 6.0)) * 1e3));
    // p75: rank 14.25 in (0.2, 0.4] holding 4 → 0.2 + 0.2 · 2.25/4 s.
    assert_eq!(h.get("p75_ms"), Some((0.2 + 0.2 * (2.25 / 4.0)) * 1e3));
    // p90 (rank 17.1) and p99 fall in +Inf: the highest finite bound, marked.
    assert_eq!((h.p90_ms, h.p99_ms), (Some(400.0), Some(400.0)));
    assert_eq!(h.capped, ["p90_ms", "p99_ms"]);
    // 19 observations are enough for p90 (10), not for p99 (100).
    assert_eq!(h.small_sample, ["p99_ms"]);
    // Sums 0.1 → 1.5 → (reset) 1.0 → 2.0: 2.0 − 0.1 + 1.5 = 3.4 s over 19.
    assert_eq!(h.sum_ms, Some((2.0 - 0.1 + 1.5) * 1e3));
    // NTPOT: queue sums are a quarter of TTFT's, over 340 tokens; no prefill or decode family.
    let n = sum.ntpot_ms.unwrap();
    assert_eq!(n.queue, Some((0.5 - 0.025 + 0.375) / 340.0 * 1e3));
    assert_eq!((n.prefill, n.decode, n.total), (None, None, None));
}

#[test]
fn a_window_of_one_scrape_has_gauges_but_no_deltas() {
    let page = vllm_page(3.0, 0.5, 10.0, [1.0, 1.0, 1.0, 1.0], 0.1);
    let one = [scrape_at(&page, 5, 1, Phase::Measure)];
    let sum = summarize(&one, 0, 10, &[]);
    assert_eq!(sum.gauges["running"].samples, 1);
    assert!(sum.counters.is_empty() && sum.histograms.is_empty());
    assert!(sum.ntpot_ms.is_none());
    let none = summarize(&one, 6, 10, &[]);
    assert!(none.gauges.is_empty() && none.engine.is_none());
}

/// A server on 127.0.0.1:0 that answers each request with `answer`: `Stall` holds the
/// connection and never answers, `Reset` resets it, `Bytes` writes them (and keeps it open).
#[derive(Clone, Copy)]
pub(crate) enum Answer {
    Stall,
    Reset,
    Bytes(&'static str),
}

pub(crate) fn server(answer: Answer) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/metrics", l.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in l.incoming() {
            let Ok(conn) = conn else { return };
            match answer {
                Answer::Stall => held.push(conn),
                Answer::Reset => reset(conn),
                Answer::Bytes(reply) => {
                    std::thread::spawn(move || answer_each(conn, reply));
                }
            }
        }
    });
    url
}

fn reset(conn: TcpStream) {
    use std::os::fd::AsRawFd;
    let mut buf = [0u8; 1024];
    let _ = (&conn).read(&mut buf);
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket and a linger struct of the size passed.
    unsafe {
        libc::setsockopt(
            conn.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

fn answer_each(mut conn: TcpStream, reply: &str) {
    let mut buf = [0u8; 4096];
    loop {
        let mut got = Vec::new();
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            match conn.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        if conn.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// A good answer: a one-family page, its length counted.
fn good_page() -> &'static str {
    let body = "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 2\n";
    let reply = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    Box::leak(reply.into_boxed_str())
}

#[test]
fn failing_endpoints_are_counted_by_kind_and_never_hold_the_caller_up() {
    let _g = lock();
    let urls = vec![
        server(Answer::Stall),
        server(Answer::Reset),
        server(Answer::Bytes(
            "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\n\r\noops\n",
        )),
        server(Answer::Bytes("\u{1}\u{2} no HTTP here\r\n\r\n")),
        server(Answer::Bytes(
            "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n<html>metrics</html>",
        )),
        server(Answer::Bytes(good_page())),
        "http://127.0.0.1:1/metrics".to_string(),
    ];
    // The bounds on time (the timeout plus 150 ms) are what a loaded machine can break.
    within_attempts(3, "the scraper's timeout bounds", |_| scrape_failing(&urls));
}

/// One attempt of the test above: a scraper over `urls` (the stalled one first, the good one
/// sixth) for a second, marked once. Counts and kinds are asserted; `Err` with the times
/// when a mark, the stop or a stalled scrape took longer than its timeout and the slack.
fn scrape_failing(urls: &[String]) -> Result<(), String> {
    let mut settings = ScrapeSettings::new(urls.to_vec());
    settings.interval_ns = 100_000_000;
    let timeout = settings.timeout();
    assert_eq!(timeout, Duration::from_millis(100));
    let scraper = Scraper::start(settings, mono_ns(), &[]).unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let asked = Instant::now();
    scraper.mark(Phase::Measure);
    let mark_took = asked.elapsed();
    std::thread::sleep(Duration::from_millis(300));
    let asked = Instant::now();
    let log = scraper.stop();
    let stop_took = asked.elapsed();
    assert!(log.stopped, "{:?}", log.notes);
    let kinds = &log.failures_by_kind;
    for kind in [
        "timeout",
        "reset",
        "http_500",
        "parse",
        "not_prometheus",
        "connect",
    ] {
        assert!(
            kinds.get(kind).copied().unwrap_or(0) >= 2,
            "{kind}: {kinds:?}"
        );
    }
    assert!(
        log.first_error["http_500"].contains("500"),
        "{:?}",
        log.first_error
    );
    // The healthy one kept answering between the others' failures, in every round.
    let good: Vec<&Scrape> = log.scrapes.iter().filter(|s| s.url == urls[5]).collect();
    assert!(
        good.len() >= 3 && good.iter().all(|s| s.error.is_none()),
        "{good:?}"
    );
    assert_eq!(log.ok, good.len() as u64);
    assert!(good.iter().any(|s| s.phase == Phase::Measure && s.mark));
    assert_eq!(log.failed + log.ok, log.scrapes.len() as u64 + log.dropped);
    // Each stalled scrape cost its timeout (never less), and no more than the slack above.
    let stalled: Vec<Duration> = (log.scrapes.iter())
        .filter(|s| s.url == urls[0])
        .map(|s| Duration::from_nanos(s.end_ns - s.start_ns))
        .collect();
    assert!(stalled.iter().all(|t| *t >= timeout), "{stalled:?}");
    let bound = timeout + Duration::from_millis(150);
    let held = mark_took <= bound && stop_took <= bound && stalled.iter().all(|t| *t <= bound);
    match held {
        true => Ok(()),
        false => Err(format!(
            "mark took {mark_took:?}, stop {stop_took:?}, stalled scrapes {stalled:?} (bound {bound:?})"
        )),
    }
}

#[test]
fn a_scraper_that_cannot_start_says_why() {
    let mut s = ScrapeSettings::new(vec!["localhost:9/metrics".into()]);
    assert!(matches!(
        Scraper::start(s.clone(), 0, &[]),
        Err(ScrapeError::Setup(_))
    ));
    s.urls = vec!["http://127.0.0.1:9/metrics".into()];
    s.interval_ns = 10_000_000;
    let e = Scraper::start(s, 0, &[]).err().unwrap();
    assert!(e.to_string().contains("at least 100 ms"), "{e}");
    assert!(matches!(
        probe("http://127.0.0.1:1/metrics", Duration::from_millis(200)),
        Err(ScrapeError::Connect(_))
    ));
}

#[test]
fn the_simulator_is_found_as_vllm_and_its_counters_match_the_run() {
    let _g = lock();
    let (client_cpu, sim_cpu) = cpu_pair();
    let sim = sim::start(SimConfig {
        settings: SimSettings {
            cpus: vec![sim_cpu],
            max_num_seqs: 4,
            prefill_overhead_ms: 20.0,
            ..SimSettings::default()
        },
        ..SimConfig::default()
    })
    .unwrap();
    let url = format!("http://{}/metrics", sim.addr);
    let info = probe(&url, Duration::from_secs(2)).unwrap();
    assert_eq!(info.engine, Some(Engine::Vllm));
    assert!(info.families >= 16, "{info:?}");

    let dir = made_dir("sim");
    let mut settings = ScrapeSettings::new(vec![url]);
    settings.interval_ns = 100_000_000;
    settings.jsonl = Some(dir.join("server_metrics.jsonl"));
    let scraper = Scraper::start(settings, mono_ns(), &[client_cpu]).unwrap();
    let mut p = sim_plan();
    p.sim = None;
    p.targets = vec![Target::parse(&format!("http://{}", sim.addr)).unwrap()];
    p.allow_concurrent = true;
    p.load = Load::Closed { concurrency: 8 };
    p.stop = Stop {
        request_count: Some(120),
        duration_ns: None,
    };
    p.warmup_requests = 0;
    p.max_lag_ms = 1e9;
    p.output_tokens = 4;
    assert!(scraper.mark(Phase::Measure));
    let s = run_summary(&p);
    assert!(scraper.mark(Phase::After));
    let log = scraper.stop();
    drop(sim.stop());
    assert_eq!(s["counts"]["ok"], 120, "{}", s["counts"]);
    assert_eq!(log.failed, 0, "{:?}", log.first_error);
    let (t0, t1) = measured_window(&log.scrapes).unwrap();
    let sum = summarize(&log.scrapes, t0, t1, &[]);
    assert_eq!(sum.engine.as_deref(), Some("vllm"));
    // 8 users on 4 slots, 20 ms a round: 4 running and 4 waiting while it lasts.
    assert_eq!(sum.gauges["running"].max, Some(4.0), "{:?}", sum.gauges);
    assert!(
        sum.gauges["waiting"].max.unwrap() >= 1.0,
        "{:?}",
        sum.gauges
    );
    // The server's token counters over the window are the run's exactly.
    assert_eq!(sum.counters["generation_tokens"].delta, 120.0 * 4.0);
    assert_eq!(sum.counters["prompt_tokens"].delta, 120.0 * 128.0);
    assert_eq!(s["tokens"]["output_total"], 480);
    assert_eq!(sum.histograms["ttft"].count, Some(120));
    let n = sum.ntpot_ms.clone().unwrap();
    assert!(n.queue.unwrap() > 0.0 && n.total.is_some(), "{n:?}");
    // The file alone gives the same block.
    let back = read_file(&dir.join("server_metrics.jsonl"), 100_000).unwrap();
    assert_eq!((back.bad_lines, back.scrapes.len()), (0, log.scrapes.len()));
    let (f0, f1) = measured_window(&back.scrapes).unwrap();
    assert_eq!(summarize(&back.scrapes, f0, f1, &[]), sum);
    assert!(back
        .scrapes
        .iter()
        .any(|s| !s.page.as_ref().unwrap().raw.is_empty()));
}

#[test]
fn https_metrics_are_read_through_a_private_ca_on_one_connection() {
    let _g = lock();
    let dir = made_dir("tls");
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    let sim = sim::start(SimConfig {
        tls: Some(ringbench::__private::http::tls::server_config(&cert_path, &key_path).unwrap()),
        settings: SimSettings {
            cpus: vec![cpu_pair().1],
            ..SimSettings::default()
        },
        ..SimConfig::default()
    })
    .unwrap();
    let url = format!("https://127.0.0.1:{}/metrics", sim.addr.port());
    let opts = GetOptions {
        cacert: Some(cert_path),
        ..GetOptions::default()
    };
    let info = probe_with(&url, Duration::from_secs(2), &opts).unwrap();
    assert_eq!(info.engine, Some(Engine::Vllm));
    let mut f = Fetcher::new(MetricsUrl::parse(&url).unwrap(), &opts).unwrap();
    for _ in 0..3 {
        let page = parse_page(f.get(Duration::from_secs(2)).unwrap(), 0).unwrap();
        assert_eq!(page.values[&Concept::Running], 0.0);
    }
    assert_eq!(f.connections(), 1, "kept alive over TLS");
    // The system's roots do not know this certificate.
    let e = probe(&url, Duration::from_secs(2)).unwrap_err();
    assert!(
        matches!(e, ScrapeError::Connect(_) | ScrapeError::Setup(_)),
        "{e:?}"
    );
    drop(sim.stop());
}

/// A sample's identity across the two parsers: its line's name (with `_bucket`, `_sum` or
/// `_count`), its labels but `le` (unescaped, sorted) and its bound's bits.
type SampleKey = (String, Vec<(String, String)>, Option<u64>);

/// `prom_text_format_parser`'s samples of the `vllm:*` families (the library's parser).
fn ours(page: &str) -> Vec<(SampleKey, f64)> {
    use prom_text_format_parser::{Type, ValueType};
    let unescape = |v: &str| {
        v.replace("\\\\", "\u{0}")
            .replace("\\\"", "\"")
            .replace("\\n", "\n")
            .replace('\u{0}', "\\")
    };
    let (metrics, err) = prom_text_format_parser::parse_scrape(page);
    assert!(err.is_none(), "{err:?}");
    let mut out = Vec::new();
    for m in metrics.iter().filter(|m| m.name.starts_with("vllm:")) {
        for s in &m.samples {
            let suffix = match (m.kind, s.value.value_type) {
                (Type::Histogram, ValueType::Sample) => "_bucket",
                (_, ValueType::Sum) => "_sum",
                (_, ValueType::Count) => "_count",
                _ => "",
            };
            let mut labels: Vec<(String, String)> = s
                .labels
                .iter()
                .filter(|l| !(suffix == "_bucket" && l.key == "le"))
                .map(|l| (l.key.clone(), unescape(&l.value)))
                .collect();
            labels.sort();
            let le = s
                .labels
                .iter()
                .find(|l| suffix == "_bucket" && l.key == "le");
            let le = le.map(|l| l.value.parse::<f64>().unwrap().to_bits());
            let value = s.value.value.parse::<f64>().unwrap();
            out.push(((format!("{}{suffix}", m.name), labels, le), value));
        }
    }
    out
}

/// `openmetrics-parser`'s samples of the `vllm:*` families (the independent one).
fn theirs(page: &str) -> Vec<(SampleKey, f64)> {
    use openmetrics_parser::PrometheusValue as V;
    let parsed = openmetrics_parser::prometheus::parse_prometheus(page).expect("it parses");
    let mut out = Vec::new();
    for (name, fam) in parsed
        .families
        .iter()
        .filter(|(n, _)| n.starts_with("vllm:"))
    {
        for s in fam.iter_samples() {
            let mut labels: Vec<(String, String)> = s
                .get_labelset()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            labels.sort();
            let mut push = |suffix: &str, le: Option<f64>, value: f64| {
                let key = (
                    format!("{name}{suffix}"),
                    labels.clone(),
                    le.map(f64::to_bits),
                );
                out.push((key, value));
            };
            match &s.value {
                V::Gauge(n) | V::Unknown(n) => push("", None, n.as_f64()),
                V::Counter(c) => push("", None, c.value.as_f64()),
                V::Histogram(h) => {
                    for b in &h.buckets {
                        push("_bucket", Some(b.upper_bound), b.count.as_f64());
                    }
                    h.sum.iter().for_each(|v| push("_sum", None, v.as_f64()));
                    h.count.iter().for_each(|&c| push("_count", None, c as f64));
                }
                V::Summary(_) => panic!("{name}: the simulator prints no summary"),
            }
        }
    }
    out
}

#[test]
fn both_parsers_read_every_vllm_sample_of_the_simulators_page_alike() {
    let _g = lock();
    let sim = sim::start(SimConfig {
        settings: SimSettings {
            cpus: vec![cpu_pair().1],
            max_num_seqs: 2,
            ..SimSettings::default()
        },
        ..SimConfig::default()
    })
    .unwrap();
    let mut p = sim_plan();
    p.sim = None;
    p.targets = vec![Target::parse(&format!("http://{}", sim.addr)).unwrap()];
    p.allow_concurrent = true;
    p.load = Load::Closed { concurrency: 4 };
    p.stop = Stop {
        request_count: Some(24),
        duration_ns: None,
    };
    p.warmup_requests = 0;
    p.max_lag_ms = 1e9;
    p.output_tokens = 4;
    assert_eq!(run_summary(&p)["counts"]["ok"], 24);
    let url = MetricsUrl::parse(&format!("http://{}/metrics", sim.addr)).unwrap();
    let mut f = Fetcher::new(url, &GetOptions::default()).unwrap();
    let page = f.get(Duration::from_secs(2)).unwrap().to_string();
    drop(sim.stop());

    let (mut a, mut b) = (ours(&page), theirs(&page));
    a.sort_by(|x, y| x.0.cmp(&y.0));
    b.sort_by(|x, y| x.0.cmp(&y.0));
    let keys = |v: &[(SampleKey, f64)]| v.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    assert_eq!(keys(&a), keys(&b), "the same samples");
    for ((key, x), (_, y)) in a.iter().zip(&b) {
        assert!(x == y || (x.is_nan() && y.is_nan()), "{key:?}: {x} vs {y}");
    }
    // Every histogram family, its buckets, sums and counts; requests were observed.
    assert!(a.len() >= 100, "{} samples", a.len());
    let ttft = "vllm:time_to_first_token_seconds_count".to_string();
    let counts: f64 = a.iter().filter(|(k, _)| k.0 == ttft).map(|(_, v)| v).sum();
    assert_eq!(counts, 24.0);
    // The library reads the same page: its raw vllm:* series are among those samples.
    let parsed = parse_page(&page, 256).unwrap();
    assert_eq!(parsed.engine, Some(Engine::Vllm));
    assert_eq!(parsed.values[&Concept::GenerationTokens], 24.0 * 4.0);
    let raw: Vec<(&String, &f64)> = parsed
        .raw
        .iter()
        .filter(|(k, _)| k.starts_with("vllm:"))
        .collect();
    assert!(!raw.is_empty(), "{:?}", parsed.raw);
    for (series, v) in raw {
        let name = series.split('{').next().unwrap();
        let hit = a.iter().any(|((n, labels, _), x)| {
            let written: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
            let written = if written.is_empty() {
                String::new()
            } else {
                format!("{{{}}}", written.join(","))
            };
            n == name && format!("{n}{written}") == *series && x == v
        });
        assert!(hit, "{series} = {v} is no sample of the page");
    }
}
