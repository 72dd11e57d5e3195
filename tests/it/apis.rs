//! Every endpoint end to end (issue 33): the client's bodies, the simulator's answers in the
//! real servers' shapes, the parsers and the figures, through the public API against the
//! in-process simulator — then `report` recomputes each run's `summary.json` byte for byte
//! from its `requests.jsonl`. Bounded: 60 requests per run on loopback, under the one lock.

use crate::support::common::{lock, out_dir, sim_plan};
use ringbench::plan::{Endpoint, Load, Plan, Tool, ToolChoice};
use ringbench::report::{self, Overrides};
use ringbench::summary::Summary;

const REQUESTS: u64 = 60;
const OUTPUT_TOKENS: u32 = 6;

fn plan(endpoint: Endpoint, name: &str) -> Plan {
    let mut p = sim_plan();
    p.endpoint = endpoint;
    p.stream = endpoint.generates();
    p.load = Load::Closed { concurrency: 4 };
    p.stop.request_count = Some(REQUESTS);
    p.output_tokens = OUTPUT_TOKENS;
    p.input_tokens = 12;
    if endpoint.batches() {
        p.api.batch_size = 3;
    }
    p.out_dir = Some(out_dir(name));
    p
}

/// Runs `p`, checks that `report` reproduces its `summary.json` exactly, returns the summary.
fn run_and_replay(p: &Plan) -> Summary {
    let s = ringbench::run(p).expect("the run completes");
    let dir = p.out_dir.as_deref().unwrap();
    let written = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let again = report::recompute(dir, &Overrides::default()).unwrap();
    let text = serde_json::to_string_pretty(&again).unwrap() + "\n";
    assert_eq!(
        text, written,
        "{:?}: report recomputes the summary",
        p.endpoint
    );
    let _ = std::fs::remove_dir_all(dir);
    s
}

#[test]
fn every_generating_endpoint_streamed_and_not() {
    let _g = lock();
    for e in [Endpoint::Chat, Endpoint::Responses, Endpoint::Messages] {
        for stream in [true, false] {
            let mut p = plan(e, &format!("{}-{stream}", e.name()));
            p.stream = stream;
            let s = run_and_replay(&p);
            let what = format!("{e:?} stream={stream}");
            assert_eq!(
                (s.counts.tally.ok, s.counts.tally.failed),
                (REQUESTS, 0),
                "{what}"
            );
            // The simulator answers max_tokens tokens and says so in its usage.
            let out = s.tokens.output_total;
            assert_eq!(out, REQUESTS * u64::from(OUTPUT_TOKENS), "{what}");
            let ttft = s.latency_ms.ttft.count;
            assert_eq!(ttft, if stream { REQUESTS } else { 0 }, "{what}");
            if stream {
                // One token per event: every gap between a request's tokens is an ITL.
                let gaps = REQUESTS * u64::from(OUTPUT_TOKENS - 1);
                assert_eq!(s.latency_ms.itl.count, gaps, "{what}");
            }
            assert!(s.tools.is_none() && s.pooling.is_none(), "{what}");
        }
    }
}

#[test]
fn tool_calls_are_output_and_counted() {
    let _g = lock();
    let tool = Tool {
        name: "lookup".into(),
        description: None,
        parameters: serde_json::json!({"type": "object"}),
    };
    for e in [Endpoint::Chat, Endpoint::Responses, Endpoint::Messages] {
        let mut p = plan(e, &format!("tools-{}", e.name()));
        p.api.tools = vec![tool.clone()];
        p.api.tool_choice = Some(ToolChoice::Required);
        let s = run_and_replay(&p);
        assert_eq!(s.counts.tally.ok, REQUESTS, "{e:?}");
        let t = s.tools.as_ref().expect("a tools block");
        assert_eq!((t.with_calls, t.calls), (REQUESTS, REQUESTS), "{e:?}");
        // A tool call's fragments are the answer: TTFT and TTFO stamp on them.
        assert_eq!(s.latency_ms.ttfo.count, REQUESTS, "{e:?}");
        assert_eq!(s.tokens.output_total, REQUESTS * u64::from(OUTPUT_TOKENS));
        // `none`: never a call, the same tools sent.
        p.api.tool_choice = Some(ToolChoice::None);
        p.out_dir = Some(out_dir(&format!("tools-none-{}", e.name())));
        let s = run_and_replay(&p);
        assert_eq!(s.tools.as_ref().map_or(0, |t| t.with_calls), 0, "{e:?}");
    }
}

#[test]
fn every_pooling_endpoint_counts_its_inputs_and_bytes() {
    let _g = lock();
    for e in [
        Endpoint::Embeddings,
        Endpoint::Rerank,
        Endpoint::Score,
        Endpoint::TeiRerank,
    ] {
        let s = run_and_replay(&plan(e, &format!("pool-{}", e.name())));
        assert_eq!(
            (s.counts.tally.ok, s.counts.tally.failed),
            (REQUESTS, 0),
            "{e:?}"
        );
        let pool = s.pooling.as_ref().expect("a pooling block");
        assert_eq!(
            pool.inputs,
            REQUESTS * 3,
            "{e:?}: 3 inputs (documents) each"
        );
        assert_eq!(pool.response_bytes.count, REQUESTS, "{e:?}");
        assert!(s.throughput.inputs_per_s.is_some_and(|r| r > 0.0), "{e:?}");
        assert_eq!(s.latency_ms.ttft.count, 0, "{e:?}: not streamed");
        assert_eq!(s.latency_ms.e2e.count, REQUESTS, "{e:?}");
        // The client's count: a query and 3 documents of 12 tokens (rerank, score), or 3
        // inputs (embeddings), per request.
        let per = if e == Endpoint::Embeddings { 3 } else { 4 };
        assert_eq!(s.tokens.input_total, REQUESTS * per * 12, "{e:?}");
        // Every answer carries the simulator's write stamp (TEI's bare array in a header),
        // so the overhead self-report covers every pooling endpoint.
        let stamped = s.overhead.delivery_delay_ms.as_ref().map(|d| d.count);
        assert_eq!(stamped, Some(REQUESTS), "{e:?}: stamped answers");
    }
}

#[test]
fn embeddings_in_base64_are_smaller_and_as_many() {
    let _g = lock();
    let float = run_and_replay(&plan(Endpoint::Embeddings, "float"));
    let mut p = plan(Endpoint::Embeddings, "base64");
    p.api.encoding_format = ringbench::plan::EncodingFormat::Base64;
    let b64 = run_and_replay(&p);
    let (f, b) = (float.pooling.unwrap(), b64.pooling.unwrap());
    assert_eq!((f.inputs, b.inputs), (REQUESTS * 3, REQUESTS * 3));
    let (fm, bm) = (
        f.response_bytes.mean.unwrap(),
        b.response_bytes.mean.unwrap(),
    );
    assert!(bm * 2.0 < fm, "base64 {bm} bytes vs float text {fm}");
}
