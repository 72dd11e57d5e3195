//! Conversations (`--turns`) end to end (schedule → worker → http → … → collector): the
//! exact history each turn sends, seen by a recording server; the simulator's prefix cache
//! and prefill model against each turn's history; think time; how sessions end; the flags'
//! usage errors. Each test that runs a load holds the one lock.

use crate::support::common::{lock, out_dir, output, read_json, read_jsonl, ringbench, sim_plan};
use ringbench::plan::workload::LengthDist;
use ringbench::plan::{Plan, SessionSpec, Target, ThinkTime};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// What the recording server answers every turn: text that needs escaping both ways.
pub(crate) const REPLY_A: &str = "Hi \"you\"\n\\ ";
pub(crate) const REPLY_B: &str = "and é\t😀";

/// One request as the recording server read it.
pub(crate) struct Seen {
    pub(crate) conn: usize,
    /// Lower-case names; the request line is under `:request-line`.
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) body: Value,
}

/// Reads one request from `r` (keep-alive: `None` when the client closed).
fn read_request(r: &mut BufReader<TcpStream>) -> Option<(BTreeMap<String, String>, Value)> {
    let mut headers = BTreeMap::new();
    let mut line = String::new();
    if r.read_line(&mut line).ok()? == 0 {
        return None;
    }
    headers.insert(":request-line".into(), line.trim_end().to_string());
    loop {
        line.clear();
        r.read_line(&mut line).ok()?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':')?;
        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
    }
    let len: usize = headers.get("content-length")?.parse().ok()?;
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some((
        headers,
        serde_json::from_slice(&body).expect("the body is JSON"),
    ))
}

/// An OpenAI-compatible server that answers every chat request with the same two-event
/// stream and records what it read.
pub(crate) fn recording_server() -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for (conn, stream) in listener.incoming().enumerate() {
            let Ok(stream) = stream else { return };
            let log = log.clone();
            std::thread::spawn(move || {
                let mut w = stream.try_clone().unwrap();
                let mut r = BufReader::new(stream);
                while let Some((headers, body)) = read_request(&mut r) {
                    log.lock().unwrap().push(Seen {
                        conn,
                        headers,
                        body,
                    });
                    let ev = |t: &str| {
                        let d = serde_json::json!({"choices":[{"index":0,"delta":{"content":t}}]});
                        format!("data: {d}\n\n")
                    };
                    let data = format!("{}{}data: [DONE]\n\n", ev(REPLY_A), ev(REPLY_B));
                    let resp = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                         Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{data}\r\n0\r\n\r\n",
                        data.len()
                    );
                    if w.write_all(resp.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, seen)
}

fn spec(turns: u32, think: ThinkTime) -> SessionSpec {
    SessionSpec {
        turns: LengthDist::Fixed { tokens: turns },
        think_time: think,
        max_context_tokens: None,
        all_turns: false,
    }
}

/// A closed loop of `users` users holding `sessions` conversations in all (`--request-count`
/// counts sessions with `--turns`).
fn conversations(p: &mut Plan, users: u32, sessions: u64, spec: SessionSpec) {
    crate::engine::closed(p, users, sessions);
    p.sessions = Some(spec);
}

#[test]
fn each_turn_sends_the_exact_history_of_its_session() {
    let _l = lock();
    let (addr, seen) = recording_server();
    let mut p = sim_plan();
    p.sim = None;
    p.targets = vec![Target::parse(&format!("http://{addr}")).unwrap()];
    p.model = Some("m".into());
    p.run_id = Some("conv".into());
    conversations(&mut p, 2, 4, spec(3, ThinkTime::default()));
    let dir = out_dir("history");
    p.out_dir = Some(dir.clone());
    let s = ringbench::run(&p).expect("the run completes");
    assert_eq!(
        (s.counts.tally.sent, s.counts.tally.ok),
        (12, 12),
        "4 sessions of 3 turns"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 12);
    let mut by_session: BTreeMap<String, Vec<&Seen>> = BTreeMap::new();
    for r in seen.iter() {
        let sid = r.headers.get("x-session-id").expect("x-session-id").clone();
        by_session.entry(sid).or_default().push(r);
    }
    assert_eq!(by_session.len(), 4, "{:?}", by_session.keys());
    let reply = format!("{REPLY_A}{REPLY_B}");
    for (sid, turns) in &by_session {
        assert!(sid.starts_with("conv-"), "{sid}");
        assert_eq!(turns.len(), 3, "session {sid}");
        let conns: HashSet<usize> = turns.iter().map(|t| t.conn).collect();
        assert_eq!(conns.len(), 1, "a session keeps its connection: {sid}");
        for (k, t) in turns.iter().enumerate() {
            let msgs = t.body["messages"].as_array().unwrap();
            assert_eq!(msgs.len(), 2 * k + 1, "session {sid} turn {k}");
            if k == 0 {
                continue;
            }
            let prev = turns[k - 1].body["messages"].as_array().unwrap();
            assert_eq!(
                &msgs[..prev.len()],
                &prev[..],
                "turn {k} starts with turn {}'s",
                k - 1
            );
            let answer = &msgs[prev.len()];
            assert_eq!(answer["role"], "assistant");
            assert_eq!(answer["content"].as_str(), Some(reply.as_str()));
            assert_eq!(msgs.last().unwrap()["role"], "user");
            assert_ne!(msgs.last(), prev.last(), "a new user message each turn");
        }
    }
    let recs = read_jsonl(&dir.join("requests.jsonl"));
    let ends: Vec<&Value> = recs.iter().map(|r| &r["turn"]["end"]).collect();
    assert_eq!(
        ends.iter()
            .filter(|e| e.as_str() == Some("completed"))
            .count(),
        4
    );
    let sessions = serde_json::to_value(&s.sessions).unwrap();
    assert_eq!(sessions["started"], 4);
    assert_eq!(sessions["ended"]["completed"], 4);
    assert_eq!(sessions["per_turn"].as_array().unwrap().len(), 3);
}

/// The simulator's token is a word, its block `block_size` words: turn k's cached tokens are
/// the previous turn's prompt and reply rounded down to blocks, and its TTFT is the prefill
/// of what was not cached.
#[test]
fn the_prefix_cache_hits_each_turns_history_and_prefill_follows() {
    let _l = lock();
    let mut p = sim_plan();
    let (block, per_token_ms) = (16u64, 0.1);
    {
        let sim = p.sim.as_mut().unwrap();
        sim.kv_cache_blocks = 65_536;
        sim.block_size = block as u32;
        sim.prefill_ms_per_token = per_token_ms;
        sim.ttft_ms = 0.0;
        sim.itl_ms = 0.0;
    }
    p.input_tokens = 50;
    p.output_tokens = 30;
    conversations(&mut p, 2, 6, spec(3, ThinkTime::default()));
    let dir = out_dir("cache");
    p.out_dir = Some(dir.clone());
    let s = ringbench::run(&p).expect("the run completes");
    assert_eq!(s.counts.tally.ok, 18);
    let recs = read_jsonl(&dir.join("requests.jsonl"));
    let mut sessions: BTreeMap<u64, Vec<&Value>> = BTreeMap::new();
    for r in &recs {
        sessions
            .entry(r["turn"]["session"].as_u64().unwrap())
            .or_default()
            .push(r);
    }
    assert_eq!(sessions.len(), 6);
    for turns in sessions.values_mut() {
        turns.sort_by_key(|r| r["turn"]["index"].as_u64());
        for k in 1..turns.len() {
            let (prev, cur) = (turns[k - 1], turns[k]);
            let history = prev["usage_prompt_tokens"].as_u64().unwrap()
                + prev["usage_completion_tokens"].as_u64().unwrap();
            assert_eq!(
                cur["usage_prompt_tokens"].as_u64(),
                Some(history + 50),
                "turn {k}"
            );
            assert_eq!(
                cur["input_tokens"].as_u64(),
                Some(history + 50),
                "the client's count"
            );
            assert_eq!(
                cur["cached_tokens"].as_u64(),
                Some(history / block * block),
                "turn {k}: the history, in whole blocks"
            );
        }
    }
    // Turn 3 has 210 prompt tokens; 160 cached, so 50 to prefill: 5 ms, not 21.
    let row = &serde_json::to_value(&s.sessions).unwrap()["per_turn"][2];
    assert_eq!(row["prompt_tokens_mean"].as_f64(), Some(210.0));
    assert_eq!(row["cached_tokens_mean"].as_f64(), Some(160.0));
    let ttft = row["ttft_ms"]["p50"].as_f64().unwrap();
    assert!(
        (5.0..9.0).contains(&ttft),
        "turn 3 TTFT p50 {ttft} ms: prefill of 50 tokens is 5 ms"
    );
}

#[test]
fn think_time_sets_each_turns_intended_time_and_the_budget_ends_sessions() {
    let _l = lock();
    let mut p = sim_plan();
    p.input_tokens = 40;
    p.output_tokens = 20;
    let think_ns = 20_000_000;
    let mut sp = spec(4, ThinkTime::Fixed { ns: think_ns });
    // Turn 3's prompt would be 40 + 60 + 60 = 160 tokens: the budget ends every session there.
    sp.max_context_tokens = Some(150);
    conversations(&mut p, 2, 4, sp);
    let dir = out_dir("think");
    p.out_dir = Some(dir.clone());
    let s = ringbench::run(&p).expect("the run completes");
    assert_eq!(s.counts.tally.ok, 8, "2 turns of each of 4 sessions");
    let recs = read_jsonl(&dir.join("requests.jsonl"));
    let mut by_id: BTreeMap<(u64, u64), &Value> = BTreeMap::new();
    for r in &recs {
        let t = &r["turn"];
        by_id.insert(
            (t["session"].as_u64().unwrap(), t["index"].as_u64().unwrap()),
            r,
        );
    }
    for (&(session, k), r) in &by_id {
        let t = &r["turn"];
        if k == 0 {
            assert_eq!(t["think_ns"], 0);
            assert_eq!(t["end"], Value::Null);
            continue;
        }
        let prev = by_id[&(session, k - 1)];
        let prev_done = prev["done_ns"].as_u64().unwrap();
        assert_eq!(t["think_ns"].as_u64(), Some(think_ns));
        assert_eq!(
            r["intended_ns"].as_u64(),
            Some(prev_done + think_ns),
            "previous end + pause"
        );
        assert!(
            r["sent_ns"].as_u64().unwrap() >= prev_done + think_ns,
            "never early"
        );
        assert_eq!(t["end"], "context", "session {session}");
    }
    let sessions = serde_json::to_value(&s.sessions).unwrap();
    assert_eq!(sessions["ended"]["context"], 4);
    assert_eq!(sessions["ended"]["completed"], 0);
    assert_eq!(sessions["think_time_ms"]["mean"].as_f64(), Some(20.0));
    assert_eq!(
        s.counts.scheduled, 8,
        "the turns begun: scheduled = sent + not sent"
    );
}

#[test]
fn an_open_loop_of_sessions_ends_at_the_runs_end_and_reports_it() {
    let _l = lock();
    let dir = out_dir("open");
    let ran = output(&mut ringbench([
        "run",
        "--turns",
        "5",
        "--session-rate",
        "20",
        "--duration",
        "1s",
        "--think-time",
        "exp:100ms",
        "--output-tokens",
        "8",
        "--max-lag",
        "1000",
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
    ]));
    assert!(ran.status.success(), "{}", ran.stderr);
    assert!(ran.stdout.contains("Sessions started:"), "{}", ran.stdout);
    let s = read_json(&dir.join("summary.json"));
    assert_eq!(crate::outputs::schema_errors(&s), Vec::<String>::new());
    let sessions = &s["sessions"];
    assert_eq!(sessions["target_session_rate"].as_f64(), Some(20.0));
    assert_eq!(
        s["target"]["request_rate"],
        Value::Null,
        "a rate of sessions, not requests"
    );
    assert_eq!(sessions["started"], 20, "20/s for 1 s");
    let ended: u64 = sessions["ended"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(ended, 20, "every session ends once");
    assert!(
        sessions["ended"]["run_end"].as_u64().unwrap() > 0,
        "{sessions}"
    );
    assert_eq!(s["counts"]["scheduled"], s["counts"]["sent"]);
}

#[test]
fn session_flags_name_their_fix() {
    for (args, needle) in [
        (
            &["--turns", "3", "--request-rate", "5"][..],
            "--session-rate",
        ),
        (&["--turns", "3", "--concurrency", "2"][..], "--users"),
        (
            &["--turns", "3", "--endpoint", "completions"][..],
            "--endpoint chat",
        ),
        (&["--users", "2"][..], "--turns"),
        (
            &["--turns", "3", "--think-time", "lognormal:2s:1s"][..],
            "p99",
        ),
        (&["--turns", "0"][..], "--turns"),
    ] {
        let ran = output(&mut ringbench(["run"].iter().chain(args)));
        assert_eq!(ran.status.code(), Some(2), "{args:?}: {}", ran.stderr);
        assert!(ran.stderr.contains(needle), "{args:?}: {}", ran.stderr);
    }
}

/// (session, turn, pause drawn, prompt tokens) of every turn of a run.
fn turns_of(dir: &std::path::Path) -> std::collections::BTreeSet<(u64, u64, u64, u64)> {
    read_jsonl(&dir.join("requests.jsonl"))
        .iter()
        .map(|r| {
            let t = &r["turn"];
            let n = |v: &Value| v.as_u64().unwrap();
            (
                n(&t["session"]),
                n(&t["index"]),
                n(&t["think_ns"]),
                n(&r["input_tokens"]),
            )
        })
        .collect()
}

/// Sessions are sharded by session, never by turn: two shards' turns, merged, are the
/// single run's turns exactly (each session's draws depend only on the seed and its index).
#[test]
fn shards_split_sessions_whole_and_merge_back_to_the_single_run() {
    let _l = lock();
    let sp = SessionSpec {
        turns: LengthDist::Uniform {
            mean: 3,
            range_ratio: 0.5,
        },
        think_time: ThinkTime::Exponential { mean_ns: 1_000_000 },
        max_context_tokens: None,
        all_turns: false,
    };
    let plan = |shard: Option<u32>, dir: &std::path::Path| {
        let mut p = sim_plan();
        p.model = Some("m".into());
        p.seed = 5;
        conversations(&mut p, 4, 10, sp.clone());
        p.shard = shard.map(|index| ringbench::plan::Shard { index, count: 2 });
        p.out_dir = Some(dir.to_path_buf());
        p
    };
    let single = out_dir("single");
    ringbench::run(&plan(None, &single)).expect("the single run");
    let shards: Vec<_> = (0..2).map(|i| out_dir(&format!("shard{i}"))).collect();
    for (i, dir) in shards.iter().enumerate() {
        ringbench::run(&plan(Some(i as u32), dir)).expect("a shard runs");
        for (session, ..) in turns_of(dir) {
            assert_eq!(
                session % 2,
                i as u64,
                "shard {i} holds whole sessions of its own"
            );
        }
    }
    let merged = out_dir("merged");
    let ran = output(&mut ringbench([
        "merge",
        shards[0].to_str().unwrap(),
        shards[1].to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]));
    assert!(
        matches!(ran.status.code(), Some(0 | 4)),
        "merge: {}",
        ran.stderr
    );
    let want = turns_of(&single);
    assert!(
        want.len() > 20,
        "10 sessions of 2 to 5 turns: {}",
        want.len()
    );
    assert_eq!(turns_of(&merged), want);
    let s = read_json(&merged.join("summary.json"));
    assert_eq!(s["sessions"]["started"], 10);
    assert_eq!(s["counts"]["sent"].as_u64(), Some(want.len() as u64));
}

#[test]
fn an_abandoned_answer_ends_its_conversation_as_abandoned_not_failed() {
    let _l = lock();
    let mut p = sim_plan();
    p.output_tokens = 8;
    p.sim.as_mut().unwrap().itl_ms = 1.0;
    let sp = spec(3, ThinkTime::default());
    conversations(&mut p, 4, 40, sp.clone());
    let cancel = ringbench::plan::CancelSpec {
        rate: 0.3,
        after: ringbench::plan::CancelAfter::Tokens { n: 2 },
    };
    p.cancel = Some(cancel);
    // A session ends at its first turn the client cuts (or completes its 3 turns).
    let abandoned = (0..40u64)
        .filter(|&s| (0..3).any(|k| cancel.cancels(p.seed, sp.turn_id(s, k))))
        .count() as u64;
    assert!(abandoned > 5 && abandoned < 35, "{abandoned}");
    let s = ringbench::run(&p).expect("the run completes");
    let sessions = serde_json::to_value(&s.sessions).unwrap();
    assert_eq!(sessions["ended"]["abandoned"], abandoned);
    assert_eq!(sessions["ended"]["completed"], 40 - abandoned);
    assert_eq!(sessions["ended"]["failed"], 0);
    assert_eq!(
        (s.counts.tally.failed, s.counts.cancelled_by_client),
        (0, abandoned)
    );
}
