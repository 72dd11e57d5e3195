//! Before the run (plan → **dataset** → workload → catalog …): prompt sources read from files —
//! ShareGPT JSON, custom JSONL (`prompt` or `messages`, optional `output_tokens`) and
//! production request logs (`prompt_tokens`, `completion_tokens`, replayed with synthetic
//! text) — and the seeded choice of which items a run sends. Any problem stops the run before
//! it starts, naming the file, the line and what is wrong. Never on the hot path; never prints.

use crate::plan::workload::DatasetKind;
use crate::plan::workload::DatasetSpec;
use crate::plan::workload::Sampling;
use rand::rngs::Xoshiro256PlusPlus;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
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

pub fn load(spec: &DatasetSpec) -> Result<Dataset, DatasetError> {
    let path = spec.path.as_path();
    let file = std::fs::File::open(path).map_err(|e| err(path, None, e.to_string()))?;
    let items = match spec.kind {
        DatasetKind::Sharegpt => sharegpt(path, BufReader::new(file))?,
        DatasetKind::Jsonl | DatasetKind::Logs => {
            let mut items = vec![];
            for (i, line) in BufReader::new(file).lines().enumerate() {
                let line = line.map_err(|e| err(path, Some(i + 1), e.to_string()))?;
                if line.trim().is_empty() {
                    continue;
                }
                let parse = if spec.kind == DatasetKind::Jsonl {
                    jsonl_item
                } else {
                    log_item
                };
                items.push(parse(&line).map_err(|why| err(path, Some(i + 1), why))?);
            }
            items
        }
    };
    if items.is_empty() {
        return Err(err(path, None, "no usable item in the file (empty set)"));
    }
    Ok(Dataset { items })
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
fn sharegpt(path: &Path, r: impl std::io::Read) -> Result<Vec<Item>, DatasetError> {
    let convs: Vec<Conversation> = serde_json::from_reader(r).map_err(|e| {
        err(
            path,
            Some(e.line()),
            format!("not ShareGPT JSON (an array of {{\"conversations\": [...]}}): {e}"),
        )
    })?;
    Ok(convs
        .into_iter()
        .filter_map(|c| {
            let mut turns = c.conversations.into_iter();
            let (q, a) = (turns.next()?, turns.next()?);
            let human = matches!(q.from.as_str(), "human" | "user");
            (human && !q.value.is_empty()).then_some(Item {
                prompt: Some(q.value),
                messages: None,
                input_tokens: None,
                output_tokens: None,
                answer: Some(a.value),
            })
        })
        .collect())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonlLine {
    prompt: Option<String>,
    messages: Option<Vec<Message>>,
    output_tokens: Option<u32>,
}

#[derive(Deserialize, Serialize)]
struct Message {
    role: String,
    content: String,
}

fn jsonl_item(line: &str) -> Result<Item, String> {
    let l: JsonlLine = serde_json::from_str(line).map_err(|e| {
        format!("{e} (expected {{\"prompt\": \"...\"}} or {{\"messages\": [...]}}, optional \"output_tokens\")")
    })?;
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
    })
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
    })
}

impl Dataset {
    /// `n` items chosen by `sampling` (seeded).
    pub fn pick(self, sampling: Sampling, n: usize, seed: u64) -> Vec<Item> {
        let len = self.items.len();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x0da7_a5e7);
        let order: Vec<usize> = match sampling {
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
        };
        order.into_iter().map(|i| self.items[i].clone()).collect()
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
        let d = load(&spec(DatasetKind::Sharegpt, p)).unwrap();
        assert_eq!(d.items.len(), 1);
        assert_eq!(d.items[0].prompt.as_deref(), Some("hi there"));
        assert_eq!(d.items[0].answer.as_deref(), Some("hello you"));
    }

    #[test]
    fn jsonl_reads_prompts_and_messages() {
        let p = write(
            "c.jsonl",
            "{\"prompt\":\"one\",\"output_tokens\":5}\n\n{\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":\"two\"}]}\n",
        );
        let d = load(&spec(DatasetKind::Jsonl, p)).unwrap();
        assert_eq!(d.items.len(), 2);
        assert_eq!(d.items[0].output_tokens, Some(5));
        assert_eq!(d.items[1].prompt.as_deref(), Some("be brief\ntwo"));
        assert_eq!(d.items[1].messages.as_ref().unwrap()[1]["content"], "two");
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
            let e = load(&spec(*kind, p.clone())).unwrap_err().to_string();
            assert!(
                e.contains(&p.display().to_string()) && e.contains(want),
                "{e}"
            );
        }
        let e = load(&spec(DatasetKind::Logs, "/nonexistent/x.jsonl".into())).unwrap_err();
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
