//! What the server says about itself before the run (run → `about` → summary's `served`):
//! the model and where it came from, the context window (vLLM's `max_model_len` in
//! `/v1/models`, llama.cpp's `n_ctx` in `/props`) and the version (`/version`, `/props`), read
//! from the in-process simulator; conversations capped to that window instead of refused;
//! the simulator's own refusal of an over-long prompt in each flavour's words.

use crate::engine::closed;
use crate::support::common::{lock, out_dir, read_json, sim_plan};
use ringbench::plan::sim::Flavor;
use ringbench::plan::workload::LengthDist;
use ringbench::plan::{Plan, SessionSpec, ThinkTime};

/// 4 sessions of up to 4 turns, 40 tokens in and 20 out a turn: turn k's prompt is
/// 40 + 60k tokens (the simulator counts words, as the client does without a tokenizer).
fn conversations(window: u32, flavor: Flavor) -> Plan {
    let mut p = sim_plan();
    (p.input_tokens, p.output_tokens) = (40, 20);
    closed(&mut p, 2, 4);
    p.sessions = Some(SessionSpec {
        turns: LengthDist::Fixed { tokens: 4 },
        all_turns: false,
        think_time: ThinkTime::default(),
        max_context_tokens: None,
    });
    let sim = p.sim.as_mut().unwrap();
    (sim.max_model_len, sim.flavor) = (window, flavor);
    p
}

#[test]
fn conversations_end_before_a_prompt_the_servers_window_would_refuse() {
    let _l = lock();
    // A window of 150: turn 1 asks 100 + 20 (fits), turn 2 would ask 160 + 20 (does not).
    for flavor in [Flavor::Vllm, Flavor::LlamaCpp] {
        let mut p = conversations(150, flavor);
        let dir = out_dir(&format!("served-cap-{flavor:?}"));
        p.out_dir = Some(dir.clone());
        let s = ringbench::run(&p).expect("the run completes");
        assert_eq!(
            (s.counts.tally.ok, s.counts.tally.failed),
            (8, 0),
            "{flavor:?}: 2 turns of 4 sessions"
        );
        let sessions = serde_json::to_value(&s.sessions).unwrap();
        assert_eq!(sessions["ended"]["context"], 4, "{flavor:?}");
        let served = s.served.as_ref().expect("the server was asked");
        let (window_from, version_from) = match flavor {
            Flavor::Vllm => ("/v1/models", "/version"),
            Flavor::LlamaCpp => ("/props", "/props"),
        };
        assert_eq!(served.max_model_len, Some(150), "{flavor:?}");
        assert_eq!(served.max_model_len_from.as_deref(), Some(window_from));
        assert_eq!(served.version_from.as_deref(), Some(version_from));
        assert!(served
            .version
            .as_deref()
            .unwrap()
            .starts_with("ringbench-sim "));
        assert_eq!(
            (served.model_from.as_str(), served.sessions_capped),
            ("/v1/models", true)
        );
        assert!(
            s.warnings
                .iter()
                .any(|w| w.contains("capped to the server's context window (150")),
            "{flavor:?}: {:?}",
            s.warnings
        );
        let written = read_json(&dir.join("summary.json"));
        assert_eq!(written["served"]["max_model_len"], 150);
        let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
        assert!(
            html.contains("context window 150 tokens"),
            "{flavor:?}: report.html"
        );
    }
}

#[test]
fn without_a_window_nothing_is_capped_and_the_model_given_is_named() {
    let _l = lock();
    let mut p = conversations(0, Flavor::Vllm);
    p.model = Some("given".into());
    let s = ringbench::run(&p).expect("the run completes");
    assert_eq!(
        (s.counts.tally.ok, s.counts.tally.failed),
        (16, 0),
        "4 turns of 4 sessions"
    );
    let served = s.served.expect("the server was asked");
    assert_eq!(
        (served.model.as_str(), served.model_from.as_str()),
        ("given", "--model")
    );
    assert_eq!(
        (served.max_model_len, served.sessions_capped),
        (None, false)
    );
    assert!(
        !s.warnings.iter().any(|w| w.contains("capped")),
        "{:?}",
        s.warnings
    );
}

#[test]
fn a_prompt_longer_than_the_window_is_refused_in_the_servers_words() {
    let _l = lock();
    for (flavor, words) in [
        (Flavor::Vllm, "maximum context length is 100 tokens"),
        (Flavor::LlamaCpp, "exceeds the available context size"),
    ] {
        let mut p = sim_plan();
        (p.input_tokens, p.output_tokens) = (90, 20);
        closed(&mut p, 1, 3);
        let sim = p.sim.as_mut().unwrap();
        (sim.max_model_len, sim.flavor) = (100, flavor);
        let s = ringbench::run(&p).expect("the run completes");
        assert_eq!(
            (s.counts.tally.ok, s.counts.tally.failed),
            (0, 3),
            "{flavor:?}: 90 + 20 > 100"
        );
        let e = &s.errors[0];
        assert_eq!((e.status, e.count), (Some(400), 3), "{flavor:?}");
        let message = e.message.as_deref().unwrap_or_default();
        assert!(message.contains(words), "{flavor:?}: {message}");
        assert!(
            e.is_context_overflow(),
            "{flavor:?}: the hint's test reads it"
        );
    }
}
