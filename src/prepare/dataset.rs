//! Before the run (plan → **dataset** → workload → catalog …): prompt sources read from files —
//! ShareGPT JSON, custom JSONL (`prompt` or `messages`, optional `output_tokens` and
//! `image`/`images`; or one conversation a line, `{"turns": [...]}`) and production request
//! logs (`prompt_tokens`, `completion_tokens`, replayed with synthetic text); Hugging Face
//! datasets are `hf`'s — and the seeded choice of which items
//! (or conversations) a run sends. Any problem stops the run before it starts, naming the
//! file, the line and what is wrong. Never on the hot path; never prints.

use super::image::{self, ImageUrl};
use crate::plan::workload::DatasetKind;
use crate::plan::workload::DatasetSpec;
use crate::plan::workload::Sampling;
use rand::rngs::Xoshiro256PlusPlus;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// One usable line or conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    /// Prompt text (`None`: only its length is known; the text is synthesized).
    pub prompt: Option<String>,
    /// Chat messages to send as they are (JSONL `messages`); `prompt` holds their joined text.
    pub messages: Option<serde_json::Value>,
    pub input_tokens: Option<u32>,
    pub output_tokens: Option<u32>,
    /// ShareGPT's answer, counted for the OSL when the run does not set one.
    pub answer: Option<String>,
    /// Images sent with the prompt (chat only), as `image_url` URLs: `data:` URLs of files
    /// read before the run, or `http(s)` URLs passed through.
    pub images: Vec<ImageUrl>,
}

/// A dataset that cannot be used; the message names the file, the line and the problem.
#[derive(Debug, thiserror::Error)]
#[error("--dataset {}{}: {why}", path.display(), line.map_or(String::new(), |l| format!(" line {l}")))]
pub struct DatasetError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub why: String,
}

fn err(path: &Path, line: Option<usize>, why: impl Into<String>) -> DatasetError {
    DatasetError {
        path: path.to_path_buf(),
        line,
        why: why.into(),
    }
}

/// All usable items of a file, in file order.
#[derive(Debug)]
pub struct Dataset {
    pub items: Vec<Item>,
}

/// What a file holds: single prompts, or (with conversations asked for) whole conversations.
#[derive(Debug)]
pub enum Loaded {
    /// One item per request.
    Items(Dataset),
    /// One entry per conversation: its user turns in order, each an item (its text and the
    /// answer's or the given output length); never empty.
    Conversations(Vec<Vec<Item>>),
}

/// The file's usable items; with `conversations` (a session run), a ShareGPT file's whole
/// conversations and a JSONL file's `{"turns": [...]}` lines. A JSONL file of conversations
/// without `conversations` is an error (which flag to give), and so is one mixing both kinds.
pub fn load(spec: &DatasetSpec, conversations: bool) -> Result<Loaded, DatasetError> {
    let path = spec.path.as_path();
    let file = std::fs::File::open(path).map_err(|e| err(path, None, e.to_string()))?;
    let loaded = match spec.kind {
        DatasetKind::Sharegpt => {
            let convs = sharegpt(path, BufReader::new(file))?.into_iter();
            match conversations {
                true => Loaded::Conversations(convs.map(human_turns).collect()),
                false => Loaded::Items(Dataset {
                    items: convs.map(first_turn).collect(),
                }),
            }
        }
        DatasetKind::Jsonl => jsonl(path, BufReader::new(file), conversations)?,
        DatasetKind::Hf => unreachable!("a Hugging Face dataset is read by hf::load"),
        DatasetKind::Logs => {
            let mut items = vec![];
            for (n, line) in lines(path, BufReader::new(file)) {
                items.push(log_item(&line?).map_err(|why| err(path, Some(n), why))?);
            }
            Loaded::Items(Dataset { items })
        }
    };
    let empty = match &loaded {
        Loaded::Items(d) => d.items.is_empty(),
        Loaded::Conversations(c) => c.is_empty(),
    };
    if empty {
        return Err(err(path, None, "no usable item in the file (empty set)"));
    }
    Ok(loaded)
}

/// The non-blank lines of a file, numbered from 1.
fn lines<'a>(
    path: &'a Path,
    r: impl BufRead + 'a,
) -> impl Iterator<Item = (usize, Result<String, DatasetError>)> + 'a {
    r.lines()
        .enumerate()
        .map(move |(i, l)| (i + 1, l.map_err(|e| err(path, Some(i + 1), e.to_string()))))
        .filter(|(_, l)| l.as_ref().map_or(true, |l| !l.trim().is_empty()))
}

/// A JSONL file: every line a prompt, or every line a conversation.
fn jsonl(path: &Path, r: impl BufRead, conversations: bool) -> Result<Loaded, DatasetError> {
    let (mut items, mut convs) = (vec![], vec![]);
    let mut first_kind = None;
    for (n, line) in lines(path, r) {
        let dir = path.parent().unwrap_or(Path::new("."));
        let line = jsonl_line(&line?, dir).map_err(|why| err(path, Some(n), why))?;
        let kind = matches!(line, Line::Conversation(_));
        let (first_n, first) = *first_kind.get_or_insert((n, kind));
        if kind != first {
            let what = |conv: bool| match conv {
                true => "a conversation ({\"turns\": [...]})",
                false => "a single prompt",
            };
            return Err(err(
                path,
                Some(n),
                format!(
                    "{} after {} on line {first_n}: a file holds one kind",
                    what(kind),
                    what(first)
                ),
            ));
        }
        match line {
            Line::Single(item) => items.push(item),
            Line::Conversation(turns) => convs.push(turns),
        }
    }
    match (first_kind, conversations) {
        (Some((n, true)), false) => Err(err(
            path,
            Some(n),
            "holds conversations ({\"turns\": [...]}): run them as sessions with --turns all \
             (every turn) or --turns N (at most N turns each)",
        )),
        (Some((_, true)), true) => Ok(Loaded::Conversations(convs)),
        _ => Ok(Loaded::Items(Dataset { items })),
    }
}

#[derive(Deserialize)]
struct Conversation {
    #[serde(default)]
    conversations: Vec<Turn>,
}

#[derive(Deserialize)]
struct Turn {
    #[serde(default)]
    from: String,
    #[serde(default)]
    value: String,
}

/// ShareGPT: conversations whose first turn is the human's and second an answer; others
/// (fewer than two turns, or starting with the model) are skipped, as vLLM does.
fn sharegpt(path: &Path, r: impl std::io::Read) -> Result<Vec<Vec<Turn>>, DatasetError> {
    let convs: Vec<Conversation> = serde_json::from_reader(r).map_err(|e| {
        err(
            path,
            Some(e.line()),
            format!("not ShareGPT JSON (an array of {{\"conversations\": [...]}}): {e}"),
        )
    })?;
    Ok(convs
        .into_iter()
        .map(|c| c.conversations)
        .filter(|t| t.len() >= 2 && t[0].human() && !t[0].value.is_empty())
        .collect())
}

impl Turn {
    fn human(&self) -> bool {
        matches!(self.from.as_str(), "human" | "user")
    }
}

/// A ShareGPT conversation's first turn as a single prompt, the second its answer.
fn first_turn(turns: Vec<Turn>) -> Item {
    let mut t = turns.into_iter();
    let (q, a) = (
        t.next().expect("kept: 2 turns"),
        t.next().expect("kept: 2 turns"),
    );
    text_item(q.value, None, Some(a.value))
}

/// A ShareGPT conversation as a session's turns: every non-empty human turn, the turn after
/// it its answer when that is not the human's again.
fn human_turns(turns: Vec<Turn>) -> Vec<Item> {
    let mut items = vec![];
    let mut t = turns.into_iter().peekable();
    while let Some(q) = t.next() {
        if !q.human() || q.value.is_empty() {
            continue;
        }
        let answer = t.next_if(|a| !a.human()).map(|a| a.value);
        items.push(text_item(q.value, None, answer));
    }
    items
}

/// An item of text.
fn text_item(prompt: String, output_tokens: Option<u32>, answer: Option<String>) -> Item {
    Item {
        prompt: Some(prompt),
        messages: None,
        input_tokens: None,
        output_tokens,
        answer,
        images: vec![],
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonlLine {
    prompt: Option<String>,
    messages: Option<Vec<Message>>,
    output_tokens: Option<u32>,
    /// An image sent with the prompt: a file (relative to the dataset's folder) or a URL.
    image: Option<String>,
    /// Images sent with the prompt, each as `image` is.
    images: Option<Vec<String>>,
}

#[derive(Deserialize, Serialize)]
struct Message {
    role: String,
    content: String,
}

fn jsonl_item(line: &str, dir: &Path) -> Result<Item, String> {
    let l: JsonlLine = serde_json::from_str(line).map_err(|e| {
        format!("{e} (expected {{\"prompt\": \"...\"}} or {{\"messages\": [...]}}, optional \"output_tokens\", \"image\", \"images\")")
    })?;
    let names: Vec<String> = l
        .image
        .into_iter()
        .chain(l.images.into_iter().flatten())
        .collect();
    if !names.is_empty() && l.messages.is_some() {
        return Err("\"image\"/\"images\" go with \"prompt\" (the user message they are sent with), not with \"messages\"".into());
    }
    let images = names
        .iter()
        .map(|n| image::reference(n, dir))
        .collect::<Result<Vec<_>, _>>()?;
    if l.output_tokens == Some(0) {
        return Err("output_tokens must be at least 1".into());
    }
    let (prompt, messages) = match (l.prompt, l.messages) {
        (Some(p), None) if !p.is_empty() => (p, None),
        (None, Some(m)) if !m.is_empty() => {
            let joined = m
                .iter()
                .map(|m| m.content.as_str())
                .collect::<Vec<_>>()
                .join("\n");
            (
                joined,
                Some(serde_json::to_value(&m).expect("messages serialize")),
            )
        }
        (Some(_), Some(_)) => return Err("give either \"prompt\" or \"messages\", not both".into()),
        _ => return Err("needs a non-empty \"prompt\" or \"messages\"".into()),
    };
    Ok(Item {
        prompt: Some(prompt),
        messages,
        input_tokens: None,
        output_tokens: l.output_tokens,
        answer: None,
        images,
    })
}

/// One line of a JSONL file.
enum Line {
    Single(Item),
    /// A conversation's user turns, in order.
    Conversation(Vec<Item>),
}

/// A line with a `turns` key is a conversation, any other a single prompt.
fn jsonl_line(line: &str, dir: &Path) -> Result<Line, String> {
    let value: serde_json::Value = serde_json::from_str(line).map_err(|e| {
        format!("{e} (expected {{\"prompt\": \"...\"}}, {{\"messages\": [...]}} or {{\"turns\": [...]}})")
    })?;
    match value.get("turns") {
        Some(_) => conversation(value).map(Line::Conversation),
        None => jsonl_item(line, dir).map(Line::Single),
    }
}

/// A conversation line: AIPerf's multi-turn spelling, `session_id` and `type` accepted and
/// not used (a session's id is the run's).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConversationLine {
    turns: Vec<serde_json::Value>,
    #[serde(default)]
    #[allow(dead_code)]
    session_id: Option<IgnoredAny>,
    #[serde(default, rename = "type")]
    #[allow(dead_code)]
    kind: Option<IgnoredAny>,
}

/// A turn given as an object. `delay` and `timestamp` (AIPerf's) are accepted and not used:
/// the pause between turns is `--think-time`'s.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TurnLine {
    #[serde(alias = "prompt")]
    text: Option<String>,
    #[serde(alias = "output_length", alias = "max_tokens")]
    output_tokens: Option<u32>,
    role: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    delay: Option<IgnoredAny>,
    #[serde(default)]
    #[allow(dead_code)]
    timestamp: Option<IgnoredAny>,
}

const TURN_FORMAT: &str = "a turn is a string or {\"text\": \"...\", \"output_tokens\": N}";

/// `{"turns": [...]}`: each turn a string (the user's message) or an object with its `text`
/// and optionally its `output_tokens`; an object with `role: "assistant"` is the answer to
/// the turn before it (its length that turn's output length, like ShareGPT's answers).
fn conversation(value: serde_json::Value) -> Result<Vec<Item>, String> {
    let line: ConversationLine = serde_json::from_value(value)
        .map_err(|e| format!("{e} (expected {{\"turns\": [...]}}; {TURN_FORMAT})"))?;
    let mut items: Vec<Item> = vec![];
    for (i, turn) in line.turns.into_iter().enumerate() {
        let n = i + 1;
        let t = match turn {
            serde_json::Value::String(text) => TurnLine {
                text: Some(text),
                output_tokens: None,
                role: None,
                delay: None,
                timestamp: None,
            },
            other => serde_json::from_value(other)
                .map_err(|e| format!("turn {n}: {e} ({TURN_FORMAT})"))?,
        };
        if t.output_tokens == Some(0) {
            return Err(format!("turn {n}: output_tokens must be at least 1"));
        }
        let text = t.text.filter(|t| !t.is_empty());
        match (t.role.as_deref(), items.last_mut()) {
            (None | Some("user"), _) => {
                let text = text.ok_or_else(|| format!("turn {n}: needs a non-empty text"))?;
                items.push(text_item(text, t.output_tokens, None));
            }
            (Some("assistant"), Some(last)) if last.answer.is_none() => last.answer = text,
            (Some(role), _) => {
                return Err(format!(
                    "turn {n}: role \"{role}\" here: user turns are sent, an assistant turn \
                     may follow each one (its length the output length)"
                ))
            }
        }
    }
    if items.is_empty() {
        return Err(format!("\"turns\" holds no user turn ({TURN_FORMAT})"));
    }
    Ok(items)
}

#[derive(Deserialize)]
struct LogLine {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

fn log_item(line: &str) -> Result<Item, String> {
    let l: LogLine = serde_json::from_str(line).map_err(|e| {
        format!("{e} (expected {{\"prompt_tokens\": N, \"completion_tokens\": M}})")
    })?;
    let (Some(p), Some(c)) = (l.prompt_tokens, l.completion_tokens) else {
        return Err("needs both \"prompt_tokens\" and \"completion_tokens\"".into());
    };
    let max = u64::from(crate::plan::workload::MAX_LENGTH);
    if !(1..=max).contains(&p) || !(1..=max).contains(&c) {
        return Err(format!(
            "prompt_tokens {p} and completion_tokens {c} must be in [1, {max}]"
        ));
    }
    Ok(Item {
        prompt: None,
        messages: None,
        input_tokens: Some(p as u32),
        output_tokens: Some(c as u32),
        answer: None,
        images: vec![],
    })
}

impl Dataset {
    /// `n` items chosen by `sampling` (seeded).
    pub fn pick(self, sampling: Sampling, n: usize, seed: u64) -> Vec<Item> {
        let order = order(sampling, n, self.items.len(), seed);
        order.into_iter().map(|i| self.items[i].clone()).collect()
    }
}

/// The conversations a session run keeps, by `sampling` (seeded): up to `n` (the sessions it
/// needs), each once unless sampled with replacement, each cut to its first `max_turns`
/// turns, and no more than fit in `max_entries` turns in all (the first always kept).
pub fn pick_conversations(
    convs: Vec<Vec<Item>>,
    sampling: Sampling,
    n: usize,
    seed: u64,
    (max_turns, max_entries): (usize, usize),
) -> Vec<Vec<Item>> {
    let n = match sampling {
        Sampling::Random => n,
        Sampling::Sequential | Sampling::Shuffle => n.min(convs.len()),
    };
    let mut total = 0;
    let mut kept = vec![];
    for i in order(sampling, n, convs.len(), seed) {
        let turns = &convs[i][..convs[i].len().min(max_turns)];
        total += turns.len();
        if total > max_entries && !kept.is_empty() {
            break;
        }
        kept.push(turns.to_vec());
    }
    kept
}

/// `n` indices into `len` items, in the order `sampling` gives (seeded).
fn order(sampling: Sampling, n: usize, len: usize, seed: u64) -> Vec<usize> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x0da7_a5e7);
    match sampling {
        Sampling::Sequential => (0..n).map(|i| i % len).collect(),
        Sampling::Random => (0..n).map(|_| rng.random_range(0..len)).collect(),
        Sampling::Shuffle => {
            let mut out = Vec::with_capacity(n);
            let mut perm: Vec<usize> = (0..len).collect();
            while out.len() < n {
                perm.shuffle(&mut rng);
                out.extend(perm.iter().take(n - out.len()));
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ringbench-ds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn spec(kind: DatasetKind, path: PathBuf) -> DatasetSpec {
        DatasetSpec {
            kind,
            path,
            sampling: Sampling::Sequential,
        }
    }

    #[test]
    fn sharegpt_takes_the_first_human_turn_and_skips_the_rest() {
        let p = write(
            "sg.json",
            r#"[{"id":"a","conversations":[{"from":"human","value":"hi there"},{"from":"gpt","value":"hello you"}]},
               {"id":"b","conversations":[{"from":"gpt","value":"starts wrong"},{"from":"human","value":"x"}]},
               {"id":"c","conversations":[{"from":"human","value":"alone"}]}]"#,
        );
        let d = items(load(&spec(DatasetKind::Sharegpt, p), false));
        assert_eq!(d.items.len(), 1);
        assert_eq!(d.items[0].prompt.as_deref(), Some("hi there"));
        assert_eq!(d.items[0].answer.as_deref(), Some("hello you"));
    }

    fn items(l: Result<Loaded, DatasetError>) -> Dataset {
        match l.unwrap() {
            Loaded::Items(d) => d,
            Loaded::Conversations(c) => panic!("conversations: {c:?}"),
        }
    }

    fn conversations(l: Result<Loaded, DatasetError>) -> Vec<Vec<(String, Option<u32>)>> {
        let Loaded::Conversations(c) = l.unwrap() else {
            panic!("single prompts")
        };
        c.into_iter()
            .map(|turns| {
                turns
                    .into_iter()
                    .map(|i| {
                        assert!(i.messages.is_none() && i.input_tokens.is_none());
                        let osl = i.output_tokens.or(i.answer.map(|a| a.len() as u32));
                        (i.prompt.unwrap(), osl)
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn sharegpt_conversations_are_every_human_turn_with_its_answer() {
        let p = write(
            "sgc.json",
            r#"[{"id":"a","conversations":[{"from":"human","value":"q1"},{"from":"gpt","value":"a1.."},
                  {"from":"human","value":"q2"},{"from":"gpt","value":"a2"},{"from":"human","value":"q3"}]},
               {"id":"b","conversations":[{"from":"gpt","value":"starts wrong"},{"from":"human","value":"x"}]},
               {"id":"c","conversations":[{"from":"human","value":"r1"},{"from":"human","value":"r2"},
                  {"from":"system","value":"sys"},{"from":"human","value":""},{"from":"chatgpt","value":"abc"}]}]"#,
        );
        let convs = conversations(load(&spec(DatasetKind::Sharegpt, p.clone()), true));
        let t = |q: &str, a: Option<u32>| (q.to_string(), a);
        assert_eq!(
            convs,
            [
                vec![t("q1", Some(4)), t("q2", Some(2)), t("q3", None)],
                vec![t("r1", None), t("r2", Some(3))],
            ],
            "b starts with the model: skipped, as for single prompts"
        );
        // Without sessions, the same file is its first turns, as before.
        let d = items(load(&spec(DatasetKind::Sharegpt, p), false));
        let firsts: Vec<_> = d.items.iter().map(|i| i.prompt.as_deref()).collect();
        assert_eq!(firsts, [Some("q1"), Some("r1")]);
        assert_eq!(d.items[1].answer.as_deref(), Some("r2"));
    }

    #[test]
    fn jsonl_conversations_take_strings_and_objects() {
        let p = write(
            "conv.jsonl",
            concat!(
                "{\"turns\": [\"hello\", {\"text\": \"more\", \"output_tokens\": 7}]}\n",
                "\n   \n",
                "{\"session_id\": \"s9\", \"type\": \"multi_turn\", \"turns\": [",
                "{\"text\": \"a\", \"delay\": 500}, {\"role\": \"assistant\", \"text\": \"xyz\"}, ",
                "{\"prompt\": \"b\", \"output_length\": 3, \"role\": \"user\"}, {\"text\": \"c\", \"max_tokens\": 2}]}\n",
            ),
        );
        let convs = conversations(load(&spec(DatasetKind::Jsonl, p.clone()), true));
        let t = |q: &str, a: Option<u32>| (q.to_string(), a);
        assert_eq!(
            convs,
            [
                vec![t("hello", None), t("more", Some(7))],
                vec![t("a", Some(3)), t("b", Some(3)), t("c", Some(2))],
            ]
        );
        let e = load(&spec(DatasetKind::Jsonl, p.clone()), false).unwrap_err();
        let e = e.to_string();
        assert!(e.contains(" line 1:") && e.contains("--turns all"), "{e}");
        // A file of single prompts stays one with sessions on (each turn a prompt, by id).
        let single = write("single.jsonl", "{\"prompt\": \"one\"}\n");
        items(load(&spec(DatasetKind::Jsonl, single), true));
    }

    #[test]
    fn bad_conversation_lines_name_their_line_and_turn() {
        let ok = "{\"turns\": [\"fine\"]}\n";
        let cases = [
            ("{\"turns\": [\"a\"\n", "line 1"),
            ("{\"turns\": []}\n", "no user turn"),
            ("{\"turns\": \"abc\"}\n", "expected {\"turns\""),
            ("{\"turns\": [3]}\n", "turn 1"),
            (
                "{\"turns\": [\"a\", {\"txt\": \"b\"}]}\n",
                "turn 2: unknown field `txt`",
            ),
            (
                "{\"turns\": [\"a\", {\"text\": \"\"}]}\n",
                "turn 2: needs a non-empty text",
            ),
            (
                "{\"turns\": [{\"role\": \"assistant\", \"text\": \"x\"}]}\n",
                "turn 1: role",
            ),
            (
                "{\"turns\": [\"a\", {\"text\": \"b\", \"output_tokens\": 0}]}\n",
                "at least 1",
            ),
            (
                "{\"turns\": [\"a\"], \"extra\": 1}\n",
                "unknown field `extra`",
            ),
            (
                "{\"prompt\": \"single\"}\n",
                "a conversation ({\"turns\": [...]}) after a single prompt on line 1",
            ),
        ];
        for (i, (line, want)) in cases.iter().enumerate() {
            // The bad line is the file's third (after a blank line): its number is the file's.
            let text = if want.starts_with("a conversation") {
                format!("{line}\n{ok}")
            } else {
                format!("{ok}\n{line}")
            };
            let p = write(&format!("badconv{i}.jsonl"), &text);
            let e = load(&spec(DatasetKind::Jsonl, p.clone()), true)
                .unwrap_err()
                .to_string();
            let at = format!("{} line 3: ", p.display());
            assert!(e.contains(&at) && e.contains(want), "{e}");
        }
    }

    #[test]
    fn conversations_kept_are_cut_to_the_turn_and_entry_bounds() {
        let conv = |n: u32| {
            (0..n)
                .map(|k| text_item(format!("{n}.{k}"), Some(1), None))
                .collect::<Vec<_>>()
        };
        let convs = || vec![conv(3), conv(5), conv(2)];
        let lens = |v: Vec<Vec<Item>>| v.iter().map(Vec::len).collect::<Vec<_>>();
        let seq = Sampling::Sequential;
        assert_eq!(
            lens(pick_conversations(convs(), seq, 10, 0, (256, 100))),
            [3, 5, 2]
        );
        assert_eq!(
            lens(pick_conversations(convs(), seq, 2, 0, (256, 100))),
            [3, 5]
        );
        assert_eq!(
            lens(pick_conversations(convs(), seq, 10, 0, (4, 100))),
            [3, 4, 2]
        );
        assert_eq!(
            lens(pick_conversations(convs(), seq, 10, 0, (256, 8))),
            [3, 5]
        );
        assert_eq!(
            lens(pick_conversations(convs(), seq, 10, 0, (256, 1))),
            [3],
            "one at least"
        );
        let mut shuffled = lens(pick_conversations(
            convs(),
            Sampling::Shuffle,
            10,
            4,
            (256, 100),
        ));
        shuffled.sort();
        assert_eq!(shuffled, [2, 3, 5], "each once");
        assert_eq!(
            pick_conversations(convs(), Sampling::Random, 7, 1, (256, 100)).len(),
            7
        );
    }

    #[test]
    fn jsonl_reads_prompts_and_messages() {
        let p = write(
            "c.jsonl",
            "{\"prompt\":\"one\",\"output_tokens\":5}\n\n{\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":\"two\"}]}\n",
        );
        let d = items(load(&spec(DatasetKind::Jsonl, p), false));
        assert_eq!(d.items.len(), 2);
        assert_eq!(d.items[0].output_tokens, Some(5));
        assert_eq!(d.items[1].prompt.as_deref(), Some("be brief\ntwo"));
        assert_eq!(d.items[1].messages.as_ref().unwrap()[1]["content"], "two");
    }

    #[test]
    fn jsonl_images_are_read_before_the_run_or_passed_through() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        let p = write("img.jsonl", "");
        let dir = p.parent().unwrap();
        std::fs::write(dir.join("pic.png"), png).unwrap();
        std::fs::write(dir.join("pic.txt"), "words").unwrap();
        std::fs::write(
            &p,
            concat!(
                "{\"prompt\":\"a\",\"image\":\"pic.png\"}\n",
                "{\"prompt\":\"b\",\"images\":[\"https://x.test/p.jpg\",\"pic.png\"]}\n",
                "{\"prompt\":\"c\"}\n",
            ),
        )
        .unwrap();
        let d = items(load(&spec(DatasetKind::Jsonl, p.clone()), false));
        let url = image::data_url(png).unwrap();
        assert_eq!(d.items[0].images, std::slice::from_ref(&url));
        assert_eq!(d.items[1].images, ["https://x.test/p.jpg".into(), url]);
        assert!(d.items[2].images.is_empty());
        let cases = [
            ("{\"prompt\":\"a\",\"image\":\"pic.txt\"}\n", "not a PNG"),
            ("{\"prompt\":\"a\",\"images\":[\"gone.png\"]}\n", "gone.png"),
            (
                "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"image\":\"pic.png\"}\n",
                "not with \"messages\"",
            ),
        ];
        for (i, (text, want)) in cases.iter().enumerate() {
            let bad = write(&format!("badimg{i}.jsonl"), text);
            let e = load(&spec(DatasetKind::Jsonl, bad), false)
                .unwrap_err()
                .to_string();
            assert!(e.contains(" line 1: ") && e.contains(want), "{e}");
        }
    }

    #[test]
    fn bad_input_names_file_line_and_problem() {
        let cases = [
            (
                DatasetKind::Jsonl,
                "{\"prompt\":\"ok\"}\n{\"prompt\":3}\n",
                "line 2",
            ),
            (DatasetKind::Jsonl, "{\"promt\":\"typo\"}\n", "line 1"),
            (
                DatasetKind::Jsonl,
                "{\"prompt\":\"a\",\"output_tokens\":0}\n",
                "at least 1",
            ),
            (
                DatasetKind::Logs,
                "{\"prompt_tokens\":5}\n",
                "completion_tokens",
            ),
            (
                DatasetKind::Logs,
                "{\"prompt_tokens\":0,\"completion_tokens\":3}\n",
                "line 1",
            ),
            (DatasetKind::Logs, "\n\n", "empty set"),
            (DatasetKind::Sharegpt, "[{\"conversations\": 5}]", "line 1"),
        ];
        for (i, (kind, text, want)) in cases.iter().enumerate() {
            let p = write(&format!("bad{i}"), text);
            let e = load(&spec(*kind, p.clone()), false)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&p.display().to_string()) && e.contains(want),
                "{e}"
            );
        }
        let e = load(
            &spec(DatasetKind::Logs, "/nonexistent/x.jsonl".into()),
            false,
        )
        .unwrap_err();
        assert!(e.to_string().contains("/nonexistent/x.jsonl"));
    }

    #[test]
    fn sampling_is_seeded_and_shuffle_covers_each_item_once_per_pass() {
        let items = |n: u32| Dataset {
            items: (1..=n)
                .map(|i| Item {
                    prompt: None,
                    messages: None,
                    input_tokens: Some(i),
                    output_tokens: Some(1),
                    answer: None,
                    images: vec![],
                })
                .collect(),
        };
        let lens = |v: Vec<Item>| {
            v.iter()
                .map(|i| i.input_tokens.unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            lens(items(3).pick(Sampling::Sequential, 7, 0)),
            [1, 2, 3, 1, 2, 3, 1]
        );
        let mut s = lens(items(50).pick(Sampling::Shuffle, 50, 1));
        assert_ne!(s, (1..=50).collect::<Vec<_>>());
        s.sort();
        assert_eq!(s, (1..=50).collect::<Vec<_>>());
        let a = lens(items(50).pick(Sampling::Random, 100, 2));
        assert_eq!(a, lens(items(50).pick(Sampling::Random, 100, 2)));
        assert_ne!(a, lens(items(50).pick(Sampling::Random, 100, 3)));
    }
}
