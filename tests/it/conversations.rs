//! Multi-turn datasets (`--turns` with a `--dataset` of conversations) end to end: session `s`
//! sends conversation `s mod C`'s user messages one per turn, each after the exact history
//! (seen by `sessions`' recording server), with the answers' lengths (or the given ones) as
//! `max_tokens`, and ends `completed` after the conversation's last turn (or `--turns N`).
//! The fixtures are in `tests/data/conversations/`. Each test that runs a load holds the lock.

use crate::sessions::{recording_server, Seen, REPLY_A, REPLY_B};
use crate::support::common::{lock, out_dir, output, read_json, read_jsonl, ringbench, sim_plan};
use ringbench::plan::workload::{DatasetKind, DatasetSpec, LengthDist, Sampling};
use ringbench::plan::{Plan, SessionSpec, Target, ThinkTime};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/conversations")
        .join(name)
}

/// `sharegpt.json`'s usable conversations: (user message, its answer).
const SHAREGPT: [&[(&str, &str)]; 3] = [
    &[
        ("Name three \"primary\" colours.", "Red, yellow and blue."),
        (
            "And the secondary ones?\nList them.",
            "Orange, green and purple: each mixes two primaries.",
        ),
    ],
    &[
        (
            "Translate 'café' into English.",
            "Coffee, or a coffee house.",
        ),
        ("Which one is meant in a street name?", "The coffee house."),
        ("Thanks \\o/", "You are welcome."),
    ],
    &[(
        "One question only.",
        "One answer of a few more words than that.",
    )],
];

/// An answer's length as the run counts it without a tokenizer: a token per 4 bytes.
fn approx_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4).max(1)
}

/// The run's `max_tokens` when a turn gives none.
const DEFAULT_OSL: u64 = 11;

/// `turns.jsonl`'s conversations: (user message, `max_tokens` asked).
fn jsonl_conversations() -> [Vec<(&'static str, u64)>; 3] {
    [
        vec![
            ("plain first turn", DEFAULT_OSL),
            ("second, with \"quotes\"", 5),
            ("third: never sent with --turns 2", DEFAULT_OSL),
        ],
        vec![("only turn", 3)],
        vec![
            (
                "x then y",
                approx_tokens("an answer whose length is the OSL"),
            ),
            ("y\ttab", 4),
        ],
    ]
}

/// A closed loop of 2 users holding 6 sessions of `file`'s conversations against the
/// recording server: the requests each session sent, in order, and the run's records.
fn record(
    kind: DatasetKind,
    file: &str,
    turns: Option<u32>,
    salt: bool,
) -> (BTreeMap<u64, Vec<Seen>>, Vec<Value>, Value) {
    let (addr, seen) = recording_server();
    let mut p = sim_plan();
    p.sim = None;
    p.targets = vec![Target::parse(&format!("http://{addr}")).unwrap()];
    p.model = Some("m".into());
    p.run_id = Some("mt".into());
    p.output_tokens = DEFAULT_OSL as u32;
    p.workload.prompt_salt = salt;
    p.workload.dataset = Some(DatasetSpec {
        kind,
        path: data(file),
        sampling: Sampling::Sequential,
    });
    crate::engine::closed(&mut p, 2, 6);
    p.sessions = Some(spec(turns));
    let dir = out_dir(file);
    p.out_dir = Some(dir.clone());
    let s = ringbench::run(&p).expect("the run completes");
    let mut by_session: BTreeMap<u64, Vec<Seen>> = BTreeMap::new();
    for r in std::mem::take(&mut *seen.lock().unwrap()) {
        let sid = r.headers.get("x-session-id").expect("x-session-id");
        let s: u64 = sid.strip_prefix("mt-").unwrap().parse().unwrap();
        by_session.entry(s).or_default().push(r);
    }
    let recs = read_jsonl(&dir.join("requests.jsonl"));
    (by_session, recs, serde_json::to_value(&s).unwrap())
}

/// `--turns N` (a cap), or `--turns all` without it.
fn spec(turns: Option<u32>) -> SessionSpec {
    SessionSpec {
        turns: LengthDist::Fixed {
            tokens: turns.unwrap_or(ringbench::plan::session::MAX_TURNS),
        },
        think_time: ThinkTime::default(),
        max_context_tokens: None,
        all_turns: turns.is_none(),
    }
}

/// Every session sent `want(s)`'s messages in order — the last message of turn `k` its
/// `k`-th (after the turn's salt and a line break when salted), every earlier message the
/// earlier turns' exactly, each followed by the reply — with its `max_tokens`; and ended
/// `completed` after them.
fn check(
    sessions: &BTreeMap<u64, Vec<Seen>>,
    recs: &[Value],
    salted: bool,
    want: impl Fn(u64) -> Vec<(String, u64)>,
) {
    assert_eq!(sessions.len(), 6, "{:?}", sessions.keys());
    let reply = json!({"role": "assistant", "content": format!("{REPLY_A}{REPLY_B}")});
    for (&s, turns) in sessions {
        let conv = want(s);
        assert_eq!(turns.len(), conv.len(), "session {s}'s turns");
        let mut lasts: Vec<&Value> = vec![];
        for (k, (t, (text, osl))) in turns.iter().zip(&conv).enumerate() {
            let msgs = t.body["messages"].as_array().unwrap();
            assert_eq!(msgs.len(), 2 * k + 1, "session {s} turn {k}");
            for (j, earlier) in lasts.iter().enumerate() {
                assert_eq!(&&msgs[2 * j], earlier, "session {s} turn {k}: history {j}");
                assert_eq!(msgs[2 * j + 1], reply, "session {s} turn {k}: reply {j}");
            }
            let last = msgs.last().unwrap();
            assert_eq!(last["role"], "user");
            let content = last["content"].as_str().unwrap();
            match salted {
                true => assert!(
                    content.ends_with(&format!("\n{text}")) && content.len() > text.len() + 1,
                    "session {s} turn {k}: {content:?} is a salt, a line break and {text:?}"
                ),
                false => assert_eq!(content, text, "session {s} turn {k}"),
            }
            assert_eq!(
                t.body["max_tokens"].as_u64(),
                Some(*osl),
                "session {s} turn {k}"
            );
            lasts.push(last);
        }
    }
    let mut ends: BTreeMap<u64, (u64, Value)> = BTreeMap::new();
    for r in recs {
        let t = &r["turn"];
        let (s, k) = (t["session"].as_u64().unwrap(), t["index"].as_u64().unwrap());
        assert_eq!(r["outcome"], "ok", "session {s} turn {k}");
        let e = ends.entry(s).or_insert((0, Value::Null));
        if k >= e.0 {
            *e = (k, t["end"].clone());
        }
    }
    for (s, (last, end)) in ends {
        assert_eq!(last + 1, want(s).len() as u64, "session {s}'s last turn");
        assert_eq!(end, "completed", "session {s}");
    }
}

#[test]
fn sharegpt_sessions_send_every_human_turn_of_their_conversation() {
    let _l = lock();
    let (sessions, recs, summary) = record(DatasetKind::Sharegpt, "sharegpt.json", None, true);
    let want = |s: u64| {
        SHAREGPT[(s % 3) as usize]
            .iter()
            .map(|(q, a)| (q.to_string(), approx_tokens(a)))
            .collect()
    };
    check(&sessions, &recs, true, want);
    let ss = &summary["sessions"];
    assert_eq!(ss["ended"]["completed"], 6);
    assert_eq!(ss["turns_per_session_max"], 3);
    assert_eq!(summary["counts"]["ok"], 12, "2 × (2 + 3 + 1) turns");
    let source = summary["workload"]["source"].as_str().unwrap();
    assert!(source.contains("3 conversations, 6 user turns"), "{source}");
}

#[test]
fn jsonl_sessions_send_their_conversations_turns_at_most_turns_n() {
    let _l = lock();
    let (sessions, recs, summary) = record(DatasetKind::Jsonl, "turns.jsonl", Some(2), false);
    let convs = jsonl_conversations();
    let want = |s: u64| {
        let c = &convs[(s % 3) as usize];
        c.iter().take(2).map(|(q, n)| (q.to_string(), *n)).collect()
    };
    check(&sessions, &recs, false, want);
    assert_eq!(summary["sessions"]["ended"]["completed"], 6);
    assert_eq!(summary["counts"]["ok"], 10, "2 × (2 + 1 + 2) turns");
}

/// The flags as users give them, against the simulator: `--turns all` runs every turn, and
/// what cannot combine is refused naming the flag that fixes it.
#[test]
fn dataset_conversations_run_from_the_command_line_and_bad_combinations_name_the_fix() {
    let _l = lock();
    let dir = out_dir("cli");
    let sharegpt = data("sharegpt.json");
    let ran = output(&mut ringbench([
        "run",
        "--turns",
        "all",
        "--users",
        "2",
        "--request-count",
        "6",
        "--dataset",
        sharegpt.to_str().unwrap(),
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
    ]));
    assert!(ran.status.success(), "{}", ran.stderr);
    let s = read_json(&dir.join("summary.json"));
    assert_eq!(crate::outputs::schema_errors(&s), Vec::<String>::new());
    assert_eq!(s["sessions"]["ended"]["completed"], 6);
    assert_eq!(s["counts"]["ok"], 12);
    let per_turn = s["sessions"]["per_turn"].as_array().unwrap();
    let requests: Vec<u64> = per_turn
        .iter()
        .map(|r| r["sent"].as_u64().unwrap())
        .collect();
    assert_eq!(
        requests,
        [6, 4, 2],
        "every session a turn 1, two in three a turn 2…"
    );

    let jsonl = data("turns.jsonl");
    let jsonl = jsonl.to_str().unwrap();
    let single = out_dir("single");
    std::fs::create_dir_all(&single).unwrap();
    let single = single.join("prompts.jsonl");
    std::fs::write(&single, "{\"prompt\": \"one\"}\n").unwrap();
    for (args, needle) in [
        (vec!["--turns", "all"], "--dataset"),
        (vec!["--dataset", jsonl], "--turns all"),
        (
            vec!["--turns", "all", "--dataset", single.to_str().unwrap()],
            "--turns N",
        ),
    ] {
        let ran = output(&mut ringbench(
            ["run", "--request-count", "2"].iter().chain(&args),
        ));
        assert_eq!(ran.status.code(), Some(2), "{args:?}: {}", ran.stderr);
        assert!(ran.stderr.contains(needle), "{args:?}: {}", ran.stderr);
    }
}

/// `Plan` as the library takes it: what `record` builds is a valid plan (so a failure there
/// is the feature's, not the test's set-up).
#[test]
fn the_recorded_plans_validate() {
    let mut p = Plan::defaults();
    p.sessions = Some(spec(None));
    assert!(p.validate().is_err(), "--turns all needs a dataset");
    p.workload.dataset = Some(DatasetSpec {
        kind: DatasetKind::Sharegpt,
        path: data("sharegpt.json"),
        sampling: Sampling::Sequential,
    });
    p.validate().expect("a dataset of conversations");
}
