//! Test support: small Parquet files in the shapes Hugging Face datasets have, written with
//! the parquet crate's column writers (nested lists and structs by their definition and
//! repetition levels, as pyarrow lays them out, Snappy-compressed as `datasets` writes them),
//! and a real PNG made with the `png` crate. Shared by `src/prepare/hf.rs`'s unit tests and
//! `tests/it/hf_datasets.rs`; it writes files only where it is told.
#![allow(dead_code)]

use parquet::basic::Compression;
use parquet::data_type::{ByteArray, ByteArrayType};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use std::path::Path;
use std::sync::Arc;

/// VisionArena-Chat's columns: `conversation` (turns, each a list of `{role, content}`) and
/// `images` (a list of `{bytes, path}`), plus a column nobody reads.
pub const VISION_ARENA: &str = "message schema {
  optional binary question_id (STRING);
  optional group conversation (LIST) {
    repeated group list {
      optional group element (LIST) {
        repeated group list {
          optional group element {
            optional binary content (STRING);
            optional binary role (STRING);
          }
        }
      }
    }
  }
  optional group images (LIST) {
    repeated group list {
      optional group element {
        optional binary bytes;
        optional binary path (STRING);
      }
    }
  }
}";

/// One leaf column's values with their definition and repetition levels.
pub struct Leaf {
    pub values: Vec<Vec<u8>>,
    pub def: Vec<i16>,
    pub rep: Vec<i16>,
}

/// Writes `leaves` (in the schema's leaf order, every leaf a byte array) as one row group.
pub fn write(path: &Path, schema: &str, leaves: Vec<Leaf>) {
    let schema = Arc::new(parse_message_type(schema).expect("the schema parses"));
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut w = SerializedFileWriter::new(file, schema, Arc::new(props)).unwrap();
    let mut rg = w.next_row_group().unwrap();
    let mut leaves = leaves.into_iter();
    while let Some(mut col) = rg.next_column().unwrap() {
        let leaf = leaves.next().expect("a leaf per column");
        let values: Vec<ByteArray> = leaf.values.into_iter().map(ByteArray::from).collect();
        col.typed::<ByteArrayType>()
            .write_batch(&values, Some(&leaf.def), Some(&leaf.rep))
            .unwrap();
        col.close().unwrap();
    }
    rg.close().unwrap();
    w.close().unwrap();
}

/// One VisionArena row: its conversation's turns of `(role, content)` and its images.
pub struct ArenaRow {
    pub turns: Vec<Vec<(String, String)>>,
    pub images: Vec<Vec<u8>>,
}

/// A VisionArena-Chat-shaped file of `rows`.
pub fn write_vision_arena(path: &Path, rows: &[ArenaRow]) {
    let leaf = || Leaf {
        values: vec![],
        def: vec![],
        rep: vec![],
    };
    let (mut id, mut content, mut role, mut bytes, mut name) =
        (leaf(), leaf(), leaf(), leaf(), leaf());
    for (i, r) in rows.iter().enumerate() {
        id.values.push(format!("q{i}").into_bytes());
        id.def.push(1);
        id.rep.push(0);
        let mut first = true;
        for (t, turn) in r.turns.iter().enumerate() {
            for (m, (ro, co)) in turn.iter().enumerate() {
                let rep = match (first, m) {
                    (true, _) => 0,
                    (false, 0) => 1,
                    _ => 2,
                };
                first = false;
                let _ = t;
                for (l, v) in [(&mut content, co), (&mut role, ro)] {
                    l.values.push(v.clone().into_bytes());
                    l.def.push(6);
                    l.rep.push(rep);
                }
            }
        }
        assert!(!first, "a row has a message");
        if r.images.is_empty() {
            for l in [&mut bytes, &mut name] {
                l.def.push(1);
                l.rep.push(0);
            }
        }
        for (k, img) in r.images.iter().enumerate() {
            let rep = i16::from(k > 0);
            bytes.values.push(img.clone());
            bytes.def.push(4);
            bytes.rep.push(rep);
            name.values.push(format!("row{i}-{k}.png").into_bytes());
            name.def.push(4);
            name.rep.push(rep);
        }
    }
    write(path, VISION_ARENA, vec![id, content, role, bytes, name]);
}

/// A file of one optional string column `name` (`None` values are nulls).
pub fn write_strings(path: &Path, name: &str, values: &[Option<&str>]) {
    let schema = format!("message schema {{ optional binary {name} (STRING); }}");
    let leaf = Leaf {
        values: values
            .iter()
            .flatten()
            .map(|s| s.as_bytes().to_vec())
            .collect(),
        def: values.iter().map(|v| i16::from(v.is_some())).collect(),
        rep: vec![0; values.len()],
    };
    write(path, &schema, vec![leaf]);
}

/// A file of one column `name` of messages: each row a list of structs whose fields are
/// `keys` (`("role", "content")`, ShareGPT's `("from", "value")`).
pub fn write_messages(path: &Path, name: &str, keys: (&str, &str), rows: &[Vec<(&str, &str)>]) {
    let schema = format!(
        "message schema {{ optional group {name} (LIST) {{ repeated group list {{ optional group \
         element {{ optional binary {} (STRING); optional binary {} (STRING); }} }} }} }}",
        keys.0, keys.1
    );
    let leaf = |second: bool| {
        let mut l = Leaf {
            values: vec![],
            def: vec![],
            rep: vec![],
        };
        for row in rows {
            for (k, m) in row.iter().enumerate() {
                let v = if second { m.1 } else { m.0 };
                l.values.push(v.as_bytes().to_vec());
                l.def.push(4);
                l.rep.push(i16::from(k > 0));
            }
        }
        l
    };
    write(path, &schema, vec![leaf(false), leaf(true)]);
}

/// A `prompt` column and an `image` column of plain strings (an image column of another
/// type).
pub fn write_prompt_and_string_image(path: &Path, rows: &[(&str, &str)]) {
    let schema =
        "message schema { optional binary prompt (STRING); optional binary image (STRING); }";
    let col = |second: bool| Leaf {
        values: rows
            .iter()
            .map(|r| if second { r.1 } else { r.0 }.as_bytes().to_vec())
            .collect(),
        def: vec![1; rows.len()],
        rep: vec![0; rows.len()],
    };
    write(path, schema, vec![col(false), col(true)]);
}

/// A small real PNG, `w` × `h` RGB pixels of one colour `seed` picks.
#[cfg(feature = "plot")]
pub fn png(w: u32, h: u32, seed: u8) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header().unwrap();
        let pixels: Vec<u8> = (0..w * h)
            .flat_map(|i| [seed, (i % 251) as u8, seed.wrapping_mul(3)])
            .collect();
        writer.write_image_data(&pixels).unwrap();
    }
    out
}
