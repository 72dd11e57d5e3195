//! Before the run (plan → **dataset** → workload → catalog …): a Hugging Face dataset read
//! offline — `ORG/NAME` from the local Hugging Face cache (`$HF_HUB_CACHE`, else
//! `$HF_HOME/hub`, else `~/.cache/huggingface/hub`: the snapshot `refs/main` names), or a
//! local folder or Parquet file — its split and subset chosen from the files' names as the
//! Hub lays them out (`data/train-00000-of-00002.parquet`, `<subset>/train/0000.parquet`),
//! each row's prompt (the first user message of a conversation, or a text column) and first
//! image (made a `data:` URL) becoming an `Item`. It never touches the network: a dataset
//! not in the cache is an error that names the command that fetches it. Never on the hot
//! path; never prints.

use super::dataset::Item;
use super::image;
use crate::plan::workload::{DatasetSpec, HfSpec};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::{Field, Row};
use parquet::schema::types::Type;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Prompt columns looked for, in this order, when `--hf-prompt-column` names none.
pub const PROMPT_COLUMNS: [&str; 6] = [
    "conversation",
    "conversations",
    "messages",
    "prompt",
    "text",
    "instruction",
];

/// Image columns looked for, in this order, when `--hf-image-column` names none.
pub const IMAGE_COLUMNS: [&str; 2] = ["images", "image"];

/// A Hugging Face dataset that cannot be used as given (bad input: exit code 2): the flag,
/// what it named, and what is wrong or what to do.
#[derive(Debug, thiserror::Error)]
#[error("{flag} {what}: {why}")]
pub struct HfError {
    /// The flag whose value is at fault (`--dataset-path`, `--hf-split`…).
    pub flag: &'static str,
    /// Its value, or the file and row.
    pub what: String,
    pub why: String,
}

fn err(flag: &'static str, what: impl std::fmt::Display, why: impl Into<String>) -> HfError {
    HfError {
        flag,
        what: what.to_string(),
        why: why.into(),
    }
}

/// The items read, and for people where they came from.
#[derive(Debug)]
pub struct HfLoaded {
    pub items: Vec<Item>,
    /// Like `split train, 2 Parquet files, 20 rows, 20 with an image`.
    pub described: String,
}

/// The first `limit` usable rows of the dataset `d.path` names (files in name order), as
/// items: each row's prompt and its first image. Rows without a prompt are skipped.
pub fn load(d: &DatasetSpec, hf: &HfSpec, limit: usize) -> Result<HfLoaded, HfError> {
    let (files, split) = files(&d.path, hf)?;
    let mut items = Vec::new();
    let mut with_image = 0;
    for f in &files {
        if items.len() >= limit {
            break;
        }
        read_file(f, hf, limit, &mut items, &mut with_image)?;
    }
    if items.is_empty() {
        return Err(err(
            "--dataset-path",
            d.path.display(),
            "no row with a prompt in its Parquet files (empty set)",
        ));
    }
    let described = format!(
        "{}{} Parquet file{}, {} rows read, {with_image} with an image",
        split.map_or(String::new(), |s| format!("split {s}, ")),
        files.len(),
        if files.len() == 1 { "" } else { "s" },
        items.len(),
    );
    Ok(HfLoaded { items, described })
}

/// The Hugging Face hub cache: `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
/// `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub` (huggingface_hub's
/// order), and which of these said so.
pub fn hub_cache() -> (PathBuf, &'static str) {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(p) = var("HF_HUB_CACHE") {
        return (p, "$HF_HUB_CACHE");
    }
    if let Some(p) = var("HF_HOME") {
        return (p.join("hub"), "$HF_HOME/hub");
    }
    if let Some(p) = var("XDG_CACHE_HOME") {
        return (p.join("huggingface/hub"), "$XDG_CACHE_HOME/huggingface/hub");
    }
    let home = var("HOME").unwrap_or_default();
    (
        home.join(".cache/huggingface/hub"),
        "~/.cache/huggingface/hub",
    )
}

/// Whether `s` reads as a Hub dataset id: `NAME` or `ORG/NAME`, each part letters, digits,
/// `-`, `_`, `.`, not starting with `.`.
fn is_repo_id(s: &str) -> bool {
    let parts: Vec<&str> = s.split('/').collect();
    parts.len() <= 2
        && parts.iter().all(|p| {
            !p.is_empty()
                && !p.starts_with('.')
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        })
        && !s.ends_with(".parquet")
}

/// The snapshot folder of dataset `id` in the hub cache (`refs/main`'s revision).
fn snapshot(id: &str) -> Result<PathBuf, HfError> {
    let (hub, from) = hub_cache();
    let repo = hub.join(format!("datasets--{}", id.replace('/', "--")));
    let fetch = || {
        err(
            "--dataset-path",
            id,
            format!(
                "not in the Hugging Face cache ({} from {from}), and ringbench never downloads: \
                 fetch it first with `huggingface-cli download --repo-type dataset {id}` (or \
                 give a local folder or Parquet file)",
                repo.display()
            ),
        )
    };
    let rev = std::fs::read_to_string(repo.join("refs/main")).map_err(|_| fetch())?;
    let snap = repo.join("snapshots").join(rev.trim());
    if rev.trim().is_empty() || !snap.is_dir() {
        return Err(fetch());
    }
    Ok(snap)
}

/// Every `.parquet` file under `dir`, in name order.
fn parquet_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    for p in entries {
        if p.is_dir() {
            parquet_files(&p, out)?;
        } else if p.extension().is_some_and(|e| e == "parquet") {
            out.push(p);
        }
    }
    Ok(())
}

/// A file's subset and split as the Hub lays them out, from its path under the dataset's
/// root: `data/train-00000-of-00002.parquet` and `train.parquet` are split `train` of the
/// default subset, `<subset>/train-00000-of-00001.parquet` and `<subset>/train/0000.parquet`
/// split `train` of `<subset>`.
pub fn split_of(rel: &Path) -> (Option<String>, String) {
    let dirs: Vec<String> = rel
        .parent()
        .map(|p| {
            p.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let stem = rel
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let numbered = !stem.is_empty() && stem.chars().all(|c| c.is_ascii_digit());
    if numbered && !dirs.is_empty() {
        let split = dirs[dirs.len() - 1].clone();
        let subset = (dirs.len() >= 2).then(|| dirs[dirs.len() - 2].clone());
        return (subset, split);
    }
    let split = stem.split('-').next().unwrap_or_default().to_string();
    let subset = dirs.first().filter(|d| *d != "data").cloned();
    (subset, split)
}

/// The Parquet files `path` names for `hf`'s split and subset, and the split read.
fn files(path: &Path, hf: &HfSpec) -> Result<(Vec<PathBuf>, Option<String>), HfError> {
    let shown = path.display().to_string();
    if path.is_file() {
        return Ok((vec![path.to_path_buf()], hf.split.clone()));
    }
    let root = if path.is_dir() {
        path.to_path_buf()
    } else if is_repo_id(&path.to_string_lossy()) {
        snapshot(&path.to_string_lossy())?
    } else {
        return Err(err(
            "--dataset-path",
            shown,
            "no such file or folder, and not a Hugging Face dataset id (ORG/NAME): give a \
             Parquet file, a folder of them, or a dataset in the local Hugging Face cache",
        ));
    };
    let mut all = vec![];
    parquet_files(&root, &mut all).map_err(|e| err("--dataset-path", &shown, e.to_string()))?;
    if all.is_empty() {
        return Err(err(
            "--dataset-path",
            shown,
            format!("no .parquet file under {}", root.display()),
        ));
    }
    let parts: Vec<(PathBuf, Option<String>, String)> = all
        .into_iter()
        .map(|f| {
            let (subset, split) = split_of(f.strip_prefix(&root).unwrap_or(&f));
            (f, subset, split)
        })
        .collect();
    let (files, split) = pick(parts, hf, &shown)?;
    Ok((files, Some(split)))
}

/// The files of `hf`'s subset and split among `parts` (each file's subset and split), and
/// the split.
#[allow(clippy::type_complexity)]
fn pick(
    parts: Vec<(PathBuf, Option<String>, String)>,
    hf: &HfSpec,
    shown: &str,
) -> Result<(Vec<PathBuf>, String), HfError> {
    let subsets = distinct(parts.iter().map(|p| p.1.as_deref().unwrap_or("default")));
    let subset = match &hf.subset {
        Some(c) if subsets.contains(c) => c.clone(),
        Some(c) => {
            return Err(err(
                "--hf-subset",
                c,
                format!(
                    "{shown} has no such subset (it has: {})",
                    subsets.join(", ")
                ),
            ))
        }
        None if subsets.iter().any(|s| s == "default") => "default".to_string(),
        None if subsets.len() == 1 => subsets[0].clone(),
        None => {
            return Err(err(
                "--hf-subset",
                "(not given)",
                format!(
                    "{shown} has several subsets: name one of {}",
                    subsets.join(", ")
                ),
            ))
        }
    };
    let of_subset: Vec<_> = parts
        .into_iter()
        .filter(|p| p.1.as_deref().unwrap_or("default") == subset)
        .collect();
    let splits = distinct(of_subset.iter().map(|p| p.2.as_str()));
    let split = match &hf.split {
        Some(s) if splits.contains(s) => s.clone(),
        Some(s) => {
            return Err(err(
                "--hf-split",
                s,
                format!(
                    "{shown} (subset {subset}) has no such split (it has: {})",
                    splits.join(", ")
                ),
            ))
        }
        None if splits.len() == 1 => splits[0].clone(),
        None => {
            return Err(err(
                "--hf-split",
                "(not given)",
                format!(
                    "{shown} has several splits: name one of {}",
                    splits.join(", ")
                ),
            ))
        }
    };
    let files = of_subset
        .into_iter()
        .filter(|p| p.2 == split)
        .map(|p| p.0)
        .collect();
    Ok((files, split))
}

/// The distinct values of `it`, in first-seen order.
fn distinct<'a>(it: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    for s in it {
        if !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    }
    out
}

/// The column named by `flag`'s value, or the first of `auto` the file has (`None` when it
/// has none of them and none is named).
fn column<'a>(
    root: &'a Type,
    named: Option<&str>,
    flag: &'static str,
    auto: &[&str],
    file: &Path,
) -> Result<Option<&'a Arc<Type>>, HfError> {
    let fields = root.get_fields();
    let find = |n: &str| fields.iter().find(|f| f.name() == n);
    match named {
        Some(n) => find(n).map(Some).ok_or_else(|| {
            let have: Vec<&str> = fields.iter().map(|f| f.name()).collect();
            err(
                flag,
                n,
                format!(
                    "no such column in {} (its columns: {})",
                    file.display(),
                    have.join(", ")
                ),
            )
        }),
        None => Ok(auto.iter().find_map(|n| find(n))),
    }
}

/// The columns read from `file`: the prompt's and the images' (when there is one).
fn columns(
    root: &Type,
    hf: &HfSpec,
    file: &Path,
) -> Result<(Arc<Type>, Option<Arc<Type>>), HfError> {
    let prompt = column(
        root,
        hf.prompt_column.as_deref(),
        "--hf-prompt-column",
        &PROMPT_COLUMNS,
        file,
    )?
    .ok_or_else(|| {
        let have: Vec<&str> = root.get_fields().iter().map(|f| f.name()).collect();
        err(
            "--hf-prompt-column",
            "(not given)",
            format!(
                "{} has none of the columns {} (its columns: {}): name the prompt's column",
                file.display(),
                PROMPT_COLUMNS.join(", "),
                have.join(", ")
            ),
        )
    })?;
    let image = column(
        root,
        hf.image_column.as_deref(),
        "--hf-image-column",
        &IMAGE_COLUMNS,
        file,
    )?;
    Ok((prompt.clone(), image.cloned()))
}

/// Reads `file`'s rows into `items` until there are `limit`.
fn read_file(
    file: &Path,
    hf: &HfSpec,
    limit: usize,
    items: &mut Vec<Item>,
    with_image: &mut usize,
) -> Result<(), HfError> {
    let bad = |e: parquet::errors::ParquetError| {
        err(
            "--dataset-path",
            file.display(),
            format!(
                "cannot be read as Parquet ({e}; ringbench reads uncompressed and Snappy files)"
            ),
        )
    };
    let f = std::fs::File::open(file)
        .map_err(|e| err("--dataset-path", file.display(), e.to_string()))?;
    let reader = SerializedFileReader::new(f).map_err(bad)?;
    let root = reader
        .metadata()
        .file_metadata()
        .schema_descr()
        .root_schema();
    let (prompt_col, image_col) = columns(root, hf, file)?;
    let prompt_name = prompt_col.name().to_string();
    let image_name = image_col.as_ref().map(|c| c.name().to_string());
    let mut fields = vec![prompt_col];
    fields.extend(image_col);
    let projection = Type::group_type_builder(root.name())
        .with_fields(fields)
        .build()
        .map_err(bad)?;
    let rows = reader.get_row_iter(Some(projection)).map_err(bad)?;
    for (n, row) in rows.enumerate() {
        if items.len() >= limit {
            break;
        }
        let row = row.map_err(bad)?;
        let at = format!("{} row {}", file.display(), n + 1);
        let names = (prompt_name.as_str(), image_name.as_deref());
        if let Some(item) = item_of(&row, names, &at)? {
            *with_image += usize::from(!item.images.is_empty());
            items.push(item);
        }
    }
    Ok(())
}

/// A row as an item: its prompt (from column `names.0`) and first image (from `names.1`);
/// `None` when it has no prompt. `at` names the file and row for errors.
fn item_of(row: &Row, names: (&str, Option<&str>), at: &str) -> Result<Option<Item>, HfError> {
    let (prompt_name, image_name) = names;
    let prompt = prompt_of(row_field(row, prompt_name))
        .map_err(|why| err("--hf-prompt-column", prompt_name, format!("{at}: {why}")))?;
    let image_err = |why: &str| {
        let name = image_name.unwrap_or_default();
        err("--hf-image-column", name, format!("{at}: {why}"))
    };
    let image = match image_name {
        Some(name) => image_of(row_field(row, name)).map_err(|why| image_err(&why))?,
        None => None,
    };
    let Some(prompt) = prompt.filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    let images = match image {
        Some(bytes) => vec![image::data_url(&bytes).map_err(image_err)?],
        None => vec![],
    };
    Ok(Some(Item {
        prompt: Some(prompt),
        messages: None,
        input_tokens: None,
        output_tokens: None,
        answer: None,
        images,
    }))
}

fn row_field<'a>(row: &'a Row, name: &str) -> &'a Field {
    row.get_column_iter()
        .find(|(n, _)| n.as_str() == name)
        .map(|(_, f)| f)
        .unwrap_or(&Field::Null)
}

/// What kind of value a field is, for messages.
fn kind(f: &Field) -> &'static str {
    match f {
        Field::Null => "null",
        Field::Bool(_) => "a boolean",
        Field::Str(_) => "a string",
        Field::Bytes(_) => "binary",
        Field::Group(_) => "a struct",
        Field::ListInternal(_) => "a list",
        Field::MapInternal(_) => "a map",
        _ => "a number or a date",
    }
}

/// A struct's field by one of `names`.
fn member<'a>(row: &'a Row, names: &[&str]) -> Option<&'a Field> {
    row.get_column_iter()
        .find(|(n, _)| names.contains(&n.as_str()))
        .map(|(_, f)| f)
}

/// A message's text: a string, or content parts' `text` joined by line breaks.
fn text_of(f: &Field) -> Option<String> {
    match f {
        Field::Str(s) => Some(s.clone()),
        Field::ListInternal(parts) => {
            let texts: Vec<String> = parts
                .elements()
                .iter()
                .filter_map(|p| match p {
                    Field::Group(g) => member(g, &["text"]).and_then(text_of),
                    Field::Str(s) => Some(s.clone()),
                    _ => None,
                })
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// The first user message of `elements` (messages `{role, content}` or ShareGPT turns
/// `{from, value}`, or lists of them: a conversation's turns), or the first string.
fn first_user(elements: &[Field]) -> Option<String> {
    elements.iter().find_map(|e| match e {
        Field::ListInternal(inner) => first_user(inner.elements()),
        Field::Str(s) => Some(s.clone()),
        Field::Group(m) => {
            let role = member(m, &["role", "from"]);
            let user = match role {
                Some(Field::Str(r)) => matches!(r.as_str(), "user" | "human"),
                _ => true,
            };
            user.then(|| member(m, &["content", "value", "text"]).and_then(text_of))
                .flatten()
        }
        _ => None,
    })
}

/// A row's prompt: a string column as it is, or a conversation's first user message.
/// `Ok(None)`: none in this row (null, or no user message).
fn prompt_of(f: &Field) -> Result<Option<String>, String> {
    match f {
        Field::Null => Ok(None),
        Field::Str(s) => Ok(Some(s.clone())),
        Field::ListInternal(l) => Ok(first_user(l.elements())),
        Field::Group(m) => Ok(first_user(&[Field::Group(m.clone())])),
        other => Err(format!(
            "{}, not a prompt (a string, or a list of messages {{role, content}} or turns \
             {{from, value}})",
            kind(other)
        )),
    }
}

/// A row's first image's bytes: from a `{bytes, path}` struct (the `datasets` library's
/// Image), a list of them, or a binary column. `Ok(None)`: the row has none.
fn image_of(f: &Field) -> Result<Option<Vec<u8>>, String> {
    let other = |f: &Field| {
        Err(format!(
            "{}, not an image (a {{bytes, path}} struct, a list of them, or binary)",
            kind(f)
        ))
    };
    match f {
        Field::Null => Ok(None),
        Field::Bytes(b) => Ok(Some(b.data().to_vec())),
        Field::ListInternal(l) => match l.elements().first() {
            None => Ok(None),
            Some(e @ (Field::Group(_) | Field::Bytes(_) | Field::Null)) => image_of(e),
            Some(e) => other(e),
        },
        Field::Group(g) => match member(g, &["bytes"]) {
            Some(Field::Bytes(b)) => Ok(Some(b.data().to_vec())),
            Some(Field::Null) => {
                let path = match member(g, &["path"]) {
                    Some(Field::Str(p)) => format!(" (only its path {p})"),
                    _ => String::new(),
                };
                Err(format!(
                    "the image has no bytes{path}: embed the images' bytes"
                ))
            }
            _ => other(f),
        },
        f => other(f),
    }
}

#[cfg(test)]
#[path = "hf_tests.rs"]
mod tests;
