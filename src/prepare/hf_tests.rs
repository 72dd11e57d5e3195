//! `hf.rs`'s tests: the Hub's file layouts, the row shapes read at every kind of cell, and
//! whole Parquet files (written by `tests/it/support/parquet.rs`) read from a folder.

use super::*;
use crate::plan::workload::{DatasetKind, Sampling};
use parquet::record::Row;

#[path = "../../tests/it/support/parquet.rs"]
mod writer;

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

#[test]
fn splits_and_subsets_come_from_the_hubs_layouts() {
    let cases = [
        ("data/train-00000-of-00002.parquet", None, "train"),
        ("data/test-00001-of-00002.parquet", None, "test"),
        ("train.parquet", None, "train"),
        (
            "plain_text/train-00000-of-00001.parquet",
            Some("plain_text"),
            "train",
        ),
        ("default/train/0000.parquet", Some("default"), "train"),
        ("en/validation/0001.parquet", Some("en"), "validation"),
        ("train/0000.parquet", None, "train"),
    ];
    for (rel, subset, split) in cases {
        assert_eq!(
            split_of(Path::new(rel)),
            (subset.map(String::from), split.to_string()),
            "{rel}"
        );
    }
    assert!(is_repo_id("lmarena-ai/VisionArena-Chat") && is_repo_id("squad"));
    for not in ["/abs/x", "a/b/c", "./x", "x.parquet", "a//b", ""] {
        assert!(!is_repo_id(not), "{not}");
    }
}

fn s(v: &str) -> Field {
    Field::Str(v.into())
}

/// Cells that are no list (lists are read from files below: the parquet crate makes them).
#[test]
fn prompts_and_images_of_plain_cells() {
    assert_eq!(prompt_of(&s("plain")).unwrap().as_deref(), Some("plain"));
    assert_eq!(prompt_of(&Field::Null).unwrap(), None);
    let m = |role: &str| {
        Field::Group(Row::new(vec![
            ("role".into(), s(role)),
            ("content".into(), s("c")),
        ]))
    };
    assert_eq!(prompt_of(&m("user")).unwrap().as_deref(), Some("c"));
    assert_eq!(prompt_of(&m("assistant")).unwrap(), None);
    let e = prompt_of(&Field::Int(3)).unwrap_err();
    assert!(e.contains("not a prompt"), "{e}");
    let img = |bytes: Option<&[u8]>, path: Option<&str>| {
        Field::Group(Row::new(vec![
            (
                "bytes".into(),
                bytes.map_or(Field::Null, |b| Field::Bytes(b.to_vec().into())),
            ),
            ("path".into(), path.map_or(Field::Null, s)),
        ]))
    };
    assert_eq!(
        image_of(&img(Some(PNG), Some("a.png"))).unwrap().as_deref(),
        Some(PNG)
    );
    assert_eq!(
        image_of(&Field::Bytes(PNG.to_vec().into()))
            .unwrap()
            .as_deref(),
        Some(PNG)
    );
    assert_eq!(image_of(&Field::Null).unwrap(), None);
    let e = image_of(&img(None, Some("x.png"))).unwrap_err();
    assert!(e.contains("no bytes") && e.contains("x.png"), "{e}");
    for bad in [s("x.png"), Field::Long(1), m("user")] {
        let e = image_of(&bad).unwrap_err();
        assert!(e.contains("not an image"), "{e}");
    }
}

#[test]
fn message_columns_give_their_first_user_message() {
    let d = dir("messages");
    let sharegpt = d.join("sharegpt.parquet");
    writer::write_messages(
        &sharegpt,
        "conversations",
        ("from", "value"),
        &[
            vec![("system", "sys"), ("human", "hi"), ("gpt", "hello")],
            vec![("gpt", "only the model")],
            vec![("human", "second")],
        ],
    );
    let messages = d.join("messages.parquet");
    writer::write_messages(
        &messages,
        "messages",
        ("role", "content"),
        &[vec![("user", "one"), ("assistant", "two")]],
    );
    let other = d.join("other.parquet");
    writer::write_messages(
        &other,
        "dialog",
        ("role", "content"),
        &[vec![("user", "named")]],
    );
    let prompts = |p: &PathBuf, hf: &HfSpec| {
        let got = load(&spec(p.clone()), hf, 10).unwrap();
        got.items
            .into_iter()
            .map(|i| i.prompt.unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(prompts(&sharegpt, &HfSpec::default()), ["hi", "second"]);
    assert_eq!(prompts(&messages, &HfSpec::default()), ["one"]);
    let named = HfSpec {
        prompt_column: Some("dialog".into()),
        ..HfSpec::default()
    };
    assert_eq!(prompts(&other, &named), ["named"]);
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ringbench-hf-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn spec(path: PathBuf) -> DatasetSpec {
    DatasetSpec {
        kind: DatasetKind::Hf,
        path,
        sampling: Sampling::Sequential,
    }
}

fn arena_rows(n: usize) -> Vec<writer::ArenaRow> {
    (0..n)
        .map(|i| writer::ArenaRow {
            turns: vec![
                vec![
                    ("user".into(), format!("question {i}")),
                    ("assistant".into(), format!("answer {i}")),
                ],
                vec![("user".into(), format!("again {i}"))],
            ],
            images: match i % 3 {
                2 => vec![],
                _ => vec![[PNG, &[i as u8]].concat(), b"second".to_vec()],
            },
        })
        .collect()
}

#[test]
fn a_folder_of_splits_reads_the_split_asked_in_file_order() {
    let d = dir("splits");
    std::fs::create_dir_all(d.join("data")).unwrap();
    let rows = arena_rows(7);
    writer::write_vision_arena(&d.join("data/train-00000-of-00002.parquet"), &rows[..4]);
    writer::write_vision_arena(&d.join("data/train-00001-of-00002.parquet"), &rows[4..]);
    writer::write_vision_arena(&d.join("data/test-00000-of-00001.parquet"), &rows[..1]);
    let mut hf = HfSpec {
        split: Some("train".into()),
        ..HfSpec::default()
    };
    let got = load(&spec(d.clone()), &hf, 100).unwrap();
    let prompts: Vec<_> = got
        .items
        .iter()
        .map(|i| i.prompt.clone().unwrap())
        .collect();
    assert_eq!(
        prompts,
        (0..7).map(|i| format!("question {i}")).collect::<Vec<_>>()
    );
    for (i, item) in got.items.iter().enumerate() {
        match i % 3 {
            2 => assert!(item.images.is_empty(), "row {i}"),
            _ => {
                assert_eq!(item.images.len(), 1, "the first image only");
                let want = image::data_url(&[PNG, &[i as u8]].concat()).unwrap();
                assert_eq!(item.images[0], want, "row {i}");
            }
        }
    }
    assert!(
        got.described
            .contains("split train, 2 Parquet files, 7 rows read, 5 with an image"),
        "{}",
        got.described
    );
    // The limit stops reading.
    assert_eq!(load(&spec(d.clone()), &hf, 5).unwrap().items.len(), 5);
    // Splits and subsets that are not there are named with what is.
    hf.split = Some("validation".into());
    let e = load(&spec(d.clone()), &hf, 10).unwrap_err().to_string();
    assert!(
        e.starts_with("--hf-split validation:") && e.contains("train, test")
            || e.contains("test, train"),
        "{e}"
    );
    hf.split = None;
    let e = load(&spec(d.clone()), &hf, 10).unwrap_err().to_string();
    assert!(
        e.starts_with("--hf-split") && e.contains("several splits"),
        "{e}"
    );
    hf.subset = Some("en".into());
    let e = load(&spec(d.clone()), &hf, 10).unwrap_err().to_string();
    assert!(
        e.starts_with("--hf-subset en:") && e.contains("default"),
        "{e}"
    );
    // A single file is read as it is, whatever its name.
    let one = load(
        &spec(d.join("data/test-00000-of-00001.parquet")),
        &HfSpec::default(),
        10,
    );
    assert_eq!(one.unwrap().items.len(), 1);
}

#[test]
fn bad_files_and_columns_name_the_flag() {
    let d = dir("bad");
    let text = d.join("text.parquet");
    writer::write_strings(
        &text,
        "instruction",
        &[Some("do this"), None, Some(""), Some("then that")],
    );
    let got = load(&spec(text.clone()), &HfSpec::default(), 10).unwrap();
    let prompts: Vec<_> = got
        .items
        .iter()
        .map(|i| i.prompt.as_deref().unwrap())
        .collect();
    assert_eq!(
        prompts,
        ["do this", "then that"],
        "null and empty rows skipped"
    );
    let named = |p: Option<&str>, i: Option<&str>| HfSpec {
        prompt_column: p.map(String::from),
        image_column: i.map(String::from),
        ..HfSpec::default()
    };
    let cases: Vec<(PathBuf, HfSpec, &str)> = vec![
        (
            text.clone(),
            named(Some("question"), None),
            "--hf-prompt-column question: no such column",
        ),
        (
            text.clone(),
            named(None, Some("images")),
            "--hf-image-column images: no such column",
        ),
        (d.join("nope.parquet"), HfSpec::default(), "--dataset-path"),
        (d.join("empty"), HfSpec::default(), "no .parquet file"),
    ];
    std::fs::create_dir_all(d.join("empty")).unwrap();
    let other = d.join("other.parquet");
    writer::write_strings(&other, "question", &[Some("q")]);
    let stringy = d.join("stringy.parquet");
    writer::write_prompt_and_string_image(&stringy, &[("p", "x.png")]);
    let not_png = d.join("notpng.parquet");
    writer::write_vision_arena(
        &not_png,
        &[writer::ArenaRow {
            turns: vec![vec![("user".into(), "q".into())]],
            images: vec![b"GIF00 not really".to_vec()],
        }],
    );
    let garbage = d.join("garbage.parquet");
    std::fs::write(&garbage, b"PAR1 not a parquet file at all PAR1").unwrap();
    let mut cases = cases;
    cases.extend([
        (other, HfSpec::default(), "--hf-prompt-column (not given)"),
        (stringy, HfSpec::default(), "--hf-image-column image: "),
        (not_png, HfSpec::default(), "not a PNG, JPEG, WebP or GIF"),
        (garbage, HfSpec::default(), "cannot be read as Parquet"),
    ]);
    for (path, hf, want) in cases {
        let e = load(&spec(path.clone()), &hf, 10).unwrap_err().to_string();
        assert!(e.contains(want), "{}: {e}", path.display());
    }
    let e = load(&spec(d.join("stringy.parquet")), &HfSpec::default(), 10)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("row 1") && e.contains("a string, not an image"),
        "{e}"
    );
}

#[test]
fn a_dataset_id_not_in_the_cache_names_the_download_command() {
    // No environment is changed here: the id is looked up in whatever cache this machine
    // has, under a name no dataset has.
    let e = load(
        &spec("ringbench-test/no-such-dataset-x7".into()),
        &HfSpec::default(),
        1,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with(
            "--dataset-path ringbench-test/no-such-dataset-x7: not in the Hugging Face cache"
        ),
        "{e}"
    );
    assert!(
        e.contains(
            "`huggingface-cli download --repo-type dataset ringbench-test/no-such-dataset-x7`"
        ),
        "{e}"
    );
    let e = load(&spec("/no/such/dir/x".into()), &HfSpec::default(), 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no such file or folder"), "{e}");
}
