//! Part of the record (… → extract → **record** → collector …): the per-request log as typed
//! Arrow columns, the schema of `DIR/requests.parquet` (`--records parquet`) and of the Python
//! package's `records()`. One row per record, warm-up included, the same fields as a line of
//! `requests.jsonl` (`jsonl`), typed instead of JSON text:
//!
//! - every stamp (`*_ns`) is `int64` nanoseconds on the run clock, null when it did not
//!   happen; `id`, `bytes` and `body_bytes` are `int64`; counts are `uint32`, `worker`,
//!   `endpoint` and `status` `uint16`, `warmup` a `bool`;
//! - `outcome`, `input_source`, `output_source`, `warmup_by`, `turn_end` are their
//!   `requests.jsonl` names as strings (Parquet's dictionary encoding stores each once);
//! - `request_id` and `server_request_id` are strings (null when none);
//! - `turn` is flattened into `turn_session`, `turn_index`, `turn_session_start_ns`,
//!   `turn_think_ns`, `turn_end` (null for an independent request), `failure` into
//!   `failure_content_type` (string) and `failure_body` (binary, the first bytes as received);
//! - `events` is a list of structs `{at_ns, tokens, server_ns, flags, text_tokens, user_ns}`
//!   in arrival order (the meaning of each as in `jsonl`).
//!
//! `Columns` gathers records into builders and hands a `RecordBatch` every `BATCH_ROWS`;
//! `read_batch` is its inverse. A test holds `read_batch(Columns(r)) == r` for arbitrary
//! records. Derives nothing: figures are recomputed from these as from `requests.jsonl`.

use super::{EventStamp, InputSource, OslSource, Outcome, Record, RequestId, Turn, WarmupBy};
use crate::plan::SessionEnd;
use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Int64Builder, ListBuilder, StringBuilder, StructBuilder,
    UInt16Builder, UInt32Builder, UInt8Builder,
};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt16Type, UInt32Type, UInt8Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use std::sync::Arc;

/// Records per `RecordBatch` handed on by `Columns` (a Parquet row group holds several).
pub const BATCH_ROWS: usize = 16_384;

/// A record's field as a typed column: its Arrow type, its builder, and the way back.
trait Kind {
    type Value;
    type Builder: arrow_array::builder::ArrayBuilder;
    const NULLABLE: bool;
    fn data_type() -> DataType;
    fn builder() -> Self::Builder;
    fn push(b: &mut Self::Builder, v: &Self::Value);
    fn get(a: &dyn Array, i: usize) -> Result<Self::Value, String>;
}

struct I64;
struct OptI64;
struct U32;
struct OptU32;
struct U16;
struct Bool;
struct Name<T>(std::marker::PhantomData<T>);

macro_rules! kind {
    ($k:ty, $v:ty, $b:ty, $null:expr, $dt:expr, |$bb:ident, $vv:ident| $push:expr, |$a:ident, $i:ident| $get:expr) => {
        impl Kind for $k {
            type Value = $v;
            type Builder = $b;
            const NULLABLE: bool = $null;
            fn data_type() -> DataType {
                $dt
            }
            fn builder() -> $b {
                <$b>::new()
            }
            fn push($bb: &mut $b, $vv: &$v) {
                $push
            }
            fn get($a: &dyn Array, $i: usize) -> Result<$v, String> {
                $get
            }
        }
    };
}

fn prim<T: arrow_array::ArrowPrimitiveType>(
    a: &dyn Array,
) -> Result<&arrow_array::PrimitiveArray<T>, String> {
    a.as_primitive_opt::<T>().ok_or_else(|| {
        format!(
            "a column of type {} where {} was expected",
            a.data_type(),
            T::DATA_TYPE
        )
    })
}

fn opt<T: arrow_array::ArrowPrimitiveType>(
    a: &dyn Array,
    i: usize,
) -> Result<Option<T::Native>, String> {
    let p = prim::<T>(a)?;
    Ok(p.is_valid(i).then(|| p.value(i)))
}

/// `u64`s are stored as `int64` (what pandas, polars and DuckDB take as a time in ns); a
/// value past `i64::MAX` (never a run-clock stamp) reads back as itself.
fn u64_of(v: i64) -> Result<u64, String> {
    Ok(v as u64)
}

kind!(
    I64,
    u64,
    Int64Builder,
    false,
    DataType::Int64,
    |b, v| b.append_value(*v as i64),
    |a, i| u64_of(prim::<Int64Type>(a)?.value(i))
);
kind!(
    OptI64,
    Option<u64>,
    Int64Builder,
    true,
    DataType::Int64,
    |b, v| b.append_option(v.map(|v| v as i64)),
    |a, i| opt::<Int64Type>(a, i)?.map(u64_of).transpose()
);
kind!(
    U32,
    u32,
    UInt32Builder,
    false,
    DataType::UInt32,
    |b, v| b.append_value(*v),
    |a, i| Ok(prim::<UInt32Type>(a)?.value(i))
);
kind!(
    OptU32,
    Option<u32>,
    UInt32Builder,
    true,
    DataType::UInt32,
    |b, v| b.append_option(*v),
    |a, i| opt::<UInt32Type>(a, i)
);
kind!(
    U16,
    u16,
    UInt16Builder,
    false,
    DataType::UInt16,
    |b, v| b.append_value(*v),
    |a, i| Ok(prim::<UInt16Type>(a)?.value(i))
);
kind!(
    Bool,
    bool,
    BooleanBuilder,
    false,
    DataType::Boolean,
    |b, v| b.append_value(*v),
    |a, i| a
        .as_boolean_opt()
        .map(|x| x.value(i))
        .ok_or_else(|| "a bool was expected".to_string())
);

/// An enum written as its `requests.jsonl` name (`None`: null).
trait Named: Sized {
    fn name_of(&self) -> Option<&'static str>;
    fn from_name(name: Option<&str>) -> Result<Self, String>;
}

/// Reads a unit variant back from its serde name (the `requests.jsonl` one).
fn serde_name<T: serde::de::DeserializeOwned>(name: Option<&str>) -> Result<T, String> {
    use serde::de::value::{Error, StrDeserializer};
    let name = name.ok_or("a name was expected, not null")?;
    T::deserialize(StrDeserializer::<Error>::new(name)).map_err(|e| format!("`{name}`: {e}"))
}

macro_rules! named {
    ($($t:ty),*) => {$(
        impl Named for $t {
            fn name_of(&self) -> Option<&'static str> {
                Some(self.name())
            }
            fn from_name(name: Option<&str>) -> Result<Self, String> {
                serde_name(name)
            }
        }
    )*};
}
named!(Outcome, InputSource, OslSource);

impl Named for WarmupBy {
    fn name_of(&self) -> Option<&'static str> {
        self.name()
    }
    fn from_name(name: Option<&str>) -> Result<Self, String> {
        WarmupBy::from_name(name).ok_or_else(|| format!("unknown warmup_by {name:?}"))
    }
}

fn string_at(a: &dyn Array, i: usize) -> Result<Option<&str>, String> {
    let s = a
        .as_string_opt::<i32>()
        .ok_or("a string column was expected")?;
    Ok(s.is_valid(i).then(|| s.value(i)))
}

impl<T: Named> Kind for Name<T> {
    type Value = T;
    type Builder = StringBuilder;
    const NULLABLE: bool = true;
    fn data_type() -> DataType {
        DataType::Utf8
    }
    fn builder() -> StringBuilder {
        StringBuilder::new()
    }
    fn push(b: &mut StringBuilder, v: &T) {
        b.append_option(v.name_of())
    }
    fn get(a: &dyn Array, i: usize) -> Result<T, String> {
        T::from_name(string_at(a, i)?)
    }
}

/// The record's own fields that map to one column each, in `requests.jsonl`'s order; the
/// rest (ids, turn, failure, events) are written by hand below.
macro_rules! scalars {
    ($($field:ident: $kind:ty),* $(,)?) => {
        struct Scalars {
            $($field: <$kind as Kind>::Builder,)*
        }

        impl Scalars {
            fn new() -> Self {
                Scalars { $($field: <$kind>::builder(),)* }
            }
            fn fields() -> Vec<Field> {
                vec![$(Field::new(stringify!($field), <$kind>::data_type(), <$kind>::NULLABLE),)*]
            }
            fn push(&mut self, r: &Record) {
                $(<$kind>::push(&mut self.$field, &r.$field);)*
            }
            fn finish(&mut self, out: &mut Vec<ArrayRef>) {
                use arrow_array::builder::ArrayBuilder;
                $(out.push(ArrayBuilder::finish(&mut self.$field));)*
            }
            fn read(b: &RecordBatch, out: &mut [Record]) -> Result<(), String> {
                $(
                    let col = column(b, stringify!($field))?;
                    for (i, r) in out.iter_mut().enumerate() {
                        r.$field = <$kind>::get(col, i)
                            .map_err(|e| format!("{}: {e}", stringify!($field)))?;
                    }
                )*
                Ok(())
            }
        }
    };
}

scalars! {
    id: I64,
    worker: U16,
    endpoint: U16,
    warmup: Bool,
    outcome: Name<Outcome>,
    status: U16,
    intended_ns: I64,
    sent_ns: OptI64,
    head_ns: OptI64,
    first_token_ns: OptI64,
    first_output_ns: OptI64,
    first_visible_ns: OptI64,
    last_token_ns: OptI64,
    done_ns: OptI64,
    first_token_user_ns: OptI64,
    done_user_ns: OptI64,
    input_tokens: U32,
    input_source: Name<InputSource>,
    output_tokens: U32,
    output_source: Name<OslSource>,
    usage_prompt_tokens: OptU32,
    usage_completion_tokens: OptU32,
    cached_tokens: OptU32,
    reads: U32,
    bytes: I64,
    events_dropped: U32,
    tool_calls: U32,
    items: U32,
    warmup_by: Name<WarmupBy>,
    body_bytes: I64,
    uploaded_ns: OptI64,
    images: U32,
    audio_ms: U32,
}

fn column<'a>(b: &'a RecordBatch, name: &str) -> Result<&'a dyn Array, String> {
    b.column_by_name(name)
        .map(|c| c.as_ref())
        .ok_or_else(|| format!("no column `{name}`"))
}

/// The fields of one event, in `requests.jsonl`'s array order.
fn event_fields() -> Fields {
    Fields::from(vec![
        Field::new("at_ns", DataType::Int64, false),
        Field::new("tokens", DataType::UInt32, false),
        Field::new("server_ns", DataType::Int64, true),
        Field::new("flags", DataType::UInt8, false),
        Field::new("text_tokens", DataType::UInt32, false),
        Field::new("user_ns", DataType::Int64, true),
    ])
}

/// The columns written by hand after the scalars: (name, type, nullable).
fn other_fields() -> Vec<Field> {
    let item = Field::new("item", DataType::Struct(event_fields()), true);
    vec![
        Field::new("request_id", DataType::Utf8, true),
        Field::new("server_request_id", DataType::Utf8, true),
        Field::new("turn_session", DataType::Int64, true),
        Field::new("turn_index", DataType::UInt32, true),
        Field::new("turn_session_start_ns", DataType::Int64, true),
        Field::new("turn_think_ns", DataType::Int64, true),
        Field::new("turn_end", DataType::Utf8, true),
        Field::new("failure_content_type", DataType::Utf8, true),
        Field::new("failure_body", DataType::Binary, true),
        Field::new("events", DataType::List(Arc::new(item)), false),
    ]
}

/// The records' Arrow schema (see the module doc).
pub fn schema() -> SchemaRef {
    let mut fields = Scalars::fields();
    fields.extend(other_fields());
    Arc::new(Schema::new(fields))
}

/// Records gathered column by column; `push` hands a full batch every `BATCH_ROWS` records.
pub struct Columns {
    schema: SchemaRef,
    rows: usize,
    scalars: Scalars,
    request_id: StringBuilder,
    server_request_id: StringBuilder,
    turn_session: Int64Builder,
    turn_index: UInt32Builder,
    turn_session_start_ns: Int64Builder,
    turn_think_ns: Int64Builder,
    turn_end: StringBuilder,
    failure_content_type: StringBuilder,
    failure_body: BinaryBuilder,
    events: ListBuilder<StructBuilder>,
    /// `<run>-<n>` formatted here, reused.
    text: Vec<u8>,
}

impl Default for Columns {
    fn default() -> Self {
        Self::new()
    }
}

impl Columns {
    /// Empty builders.
    pub fn new() -> Self {
        let item = Field::new("item", DataType::Struct(event_fields()), true);
        let events =
            ListBuilder::new(StructBuilder::from_fields(event_fields(), 0)).with_field(item);
        Columns {
            schema: schema(),
            rows: 0,
            scalars: Scalars::new(),
            request_id: StringBuilder::new(),
            server_request_id: StringBuilder::new(),
            turn_session: Int64Builder::new(),
            turn_index: UInt32Builder::new(),
            turn_session_start_ns: Int64Builder::new(),
            turn_think_ns: Int64Builder::new(),
            turn_end: StringBuilder::new(),
            failure_content_type: StringBuilder::new(),
            failure_body: BinaryBuilder::new(),
            events,
            text: Vec::new(),
        }
    }

    /// Records gathered and not yet handed on.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Adds one record; returns a batch when `BATCH_ROWS` are gathered.
    pub fn push(&mut self, r: &Record) -> Option<RecordBatch> {
        self.scalars.push(r);
        self.text.clear();
        if let Some(id) = &r.request_id {
            id.write(&mut self.text);
        }
        append_text(&mut self.request_id, &self.text);
        append_text(&mut self.server_request_id, &r.server_request_id);
        let t = r.turn.as_ref();
        self.turn_session.append_option(t.map(|t| t.session as i64));
        self.turn_index.append_option(t.map(|t| t.index));
        self.turn_session_start_ns
            .append_option(t.map(|t| t.session_start_ns as i64));
        self.turn_think_ns
            .append_option(t.map(|t| t.think_ns as i64));
        self.turn_end
            .append_option(t.and_then(|t| t.end).map(SessionEnd::name));
        let f = (!r.failure.is_empty()).then_some(&r.failure);
        self.failure_content_type.append_option(
            f.filter(|f| !f.content_type.is_empty())
                .map(|f| String::from_utf8_lossy(&f.content_type)),
        );
        self.failure_body.append_option(f.map(|f| &f.body));
        self.push_events(&r.events);
        self.rows += 1;
        (self.rows >= BATCH_ROWS).then(|| self.finish())
    }

    fn push_events(&mut self, events: &[EventStamp]) {
        let s = self.events.values();
        for e in events {
            s.field_builder::<Int64Builder>(0)
                .expect("at_ns")
                .append_value(e.at_ns as i64);
            s.field_builder::<UInt32Builder>(1)
                .expect("tokens")
                .append_value(e.tokens);
            s.field_builder::<Int64Builder>(2)
                .expect("server_ns")
                .append_option(e.server_ns.map(|v| v as i64));
            s.field_builder::<UInt8Builder>(3)
                .expect("flags")
                .append_value(e.flags());
            s.field_builder::<UInt32Builder>(4)
                .expect("text_tokens")
                .append_value(e.text_tokens);
            s.field_builder::<Int64Builder>(5)
                .expect("user_ns")
                .append_option(e.user_ns.map(|v| v as i64));
            s.append(true);
        }
        self.events.append(true);
    }

    /// What is gathered as one batch (possibly empty); the builders start again.
    pub fn finish(&mut self) -> RecordBatch {
        use arrow_array::builder::ArrayBuilder;
        let mut cols = Vec::with_capacity(self.schema.fields().len());
        self.scalars.finish(&mut cols);
        cols.push(ArrayBuilder::finish(&mut self.request_id));
        cols.push(ArrayBuilder::finish(&mut self.server_request_id));
        cols.push(ArrayBuilder::finish(&mut self.turn_session));
        cols.push(ArrayBuilder::finish(&mut self.turn_index));
        cols.push(ArrayBuilder::finish(&mut self.turn_session_start_ns));
        cols.push(ArrayBuilder::finish(&mut self.turn_think_ns));
        cols.push(ArrayBuilder::finish(&mut self.turn_end));
        cols.push(ArrayBuilder::finish(&mut self.failure_content_type));
        cols.push(ArrayBuilder::finish(&mut self.failure_body));
        cols.push(ArrayBuilder::finish(&mut self.events));
        self.rows = 0;
        RecordBatch::try_new(self.schema.clone(), cols).expect("the columns match the schema")
    }
}

fn append_text(b: &mut StringBuilder, v: &[u8]) {
    // Visible ASCII by construction (`request_id::keep_echo`, `RunId`).
    b.append_option((!v.is_empty()).then(|| String::from_utf8_lossy(v)));
}

/// The records of one batch, in row order (the inverse of `Columns`).
pub fn read_batch(b: &RecordBatch) -> Result<Vec<Record>, String> {
    let mut out = vec![Record::default(); b.num_rows()];
    Scalars::read(b, &mut out)?;
    let c = Others::of(b)?;
    for (i, r) in out.iter_mut().enumerate() {
        c.read(i, r)?;
    }
    Ok(out)
}

/// The hand-written columns of one batch, looked up once.
struct Others<'a> {
    request_id: &'a dyn Array,
    server_request_id: &'a dyn Array,
    turn: [&'a dyn Array; 5],
    failure_content_type: &'a dyn Array,
    failure_body: &'a arrow_array::BinaryArray,
    events: Events<'a>,
}

impl<'a> Others<'a> {
    fn of(b: &'a RecordBatch) -> Result<Self, String> {
        let turn = [
            "turn_session",
            "turn_index",
            "turn_session_start_ns",
            "turn_think_ns",
            "turn_end",
        ];
        let mut t = [column(b, turn[0])?; 5];
        for (slot, name) in t.iter_mut().zip(turn) {
            *slot = column(b, name)?;
        }
        Ok(Others {
            request_id: column(b, "request_id")?,
            server_request_id: column(b, "server_request_id")?,
            turn: t,
            failure_content_type: column(b, "failure_content_type")?,
            failure_body: column(b, "failure_body")?
                .as_binary_opt::<i32>()
                .ok_or("failure_body: a binary column was expected")?,
            events: Events::of(column(b, "events")?)?,
        })
    }

    fn read(&self, i: usize, r: &mut Record) -> Result<(), String> {
        r.request_id = string_at(self.request_id, i)?
            .map(RequestId::parse)
            .transpose()?;
        r.server_request_id = string_at(self.server_request_id, i)?
            .unwrap_or_default()
            .as_bytes()
            .to_vec();
        let [session, index, start, think, end] = self.turn;
        r.turn = match OptI64::get(session, i)? {
            None => None,
            Some(session) => Some(Turn {
                session,
                index: OptU32::get(index, i)?.unwrap_or(0),
                session_start_ns: OptI64::get(start, i)?.unwrap_or(0),
                think_ns: OptI64::get(think, i)?.unwrap_or(0),
                end: string_at(end, i)?
                    .map(|n| serde_name::<SessionEnd>(Some(n)))
                    .transpose()?,
            }),
        };
        let ct = string_at(self.failure_content_type, i)?;
        r.failure.content_type = ct.unwrap_or_default().as_bytes().to_vec();
        let body = self.failure_body;
        r.failure.body = match body.is_valid(i) {
            true => body.value(i).to_vec(),
            false => Vec::new(),
        };
        r.events = self.events.read(i)?;
        Ok(())
    }
}

/// The events column of one batch: the list's offsets and the struct's columns.
struct Events<'a> {
    offsets: &'a [i32],
    at: &'a arrow_array::Int64Array,
    tokens: &'a arrow_array::UInt32Array,
    server: &'a dyn Array,
    flags: &'a arrow_array::UInt8Array,
    text_tokens: &'a arrow_array::UInt32Array,
    user: &'a dyn Array,
}

impl<'a> Events<'a> {
    fn of(a: &'a dyn Array) -> Result<Self, String> {
        let list = a
            .as_list_opt::<i32>()
            .ok_or("events: a list column was expected")?;
        let s = list
            .values()
            .as_struct_opt()
            .ok_or("events: a list of structs was expected")?;
        let col = |n: &str| {
            s.column_by_name(n)
                .map(|c| c.as_ref())
                .ok_or_else(|| format!("events: no `{n}`"))
        };
        Ok(Events {
            offsets: list.value_offsets(),
            at: prim::<Int64Type>(col("at_ns")?)?,
            tokens: prim::<UInt32Type>(col("tokens")?)?,
            server: col("server_ns")?,
            flags: prim::<UInt8Type>(col("flags")?)?,
            text_tokens: prim::<UInt32Type>(col("text_tokens")?)?,
            user: col("user_ns")?,
        })
    }

    fn read(&self, i: usize) -> Result<Vec<EventStamp>, String> {
        let (lo, hi) = (self.offsets[i] as usize, self.offsets[i + 1] as usize);
        (lo..hi)
            .map(|k| {
                let flags = self.flags.value(k);
                Ok(EventStamp {
                    at_ns: self.at.value(k) as u64,
                    server_ns: OptI64::get(self.server, k)?,
                    tokens: self.tokens.value(k),
                    reasoning: flags & EventStamp::FLAG_REASONING != 0,
                    output: flags & EventStamp::FLAG_OUTPUT != 0,
                    text_tokens: self.text_tokens.value(k),
                    user_ns: OptI64::get(self.user, k)?,
                    ..EventStamp::default()
                })
            })
            .collect()
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::jsonl::tests::arb_record;
    use proptest::prelude::*;

    proptest! {
        /// Every field of arbitrary records survives the columns and back (the schema of
        /// `requests.parquet` is the record, typed).
        #[test]
        fn arrow_columns_read_back_to_the_records(rs in proptest::collection::vec(arb_record(), 0..24)) {
            let mut c = Columns::new();
            for r in &rs {
                prop_assert!(c.push(r).is_none());
            }
            let b = c.finish();
            prop_assert_eq!(b.num_rows(), rs.len());
            prop_assert_eq!(read_batch(&b).unwrap(), rs);
        }
    }

    #[test]
    fn a_batch_is_handed_on_every_batch_rows_records() {
        let mut c = Columns::new();
        let full: Vec<_> = (0..2 * BATCH_ROWS as u64 + 3)
            .filter_map(|id| {
                c.push(&Record {
                    id,
                    ..Record::default()
                })
            })
            .collect();
        assert_eq!(full.len(), 2);
        assert_eq!(full[1].num_rows(), BATCH_ROWS);
        let ids = read_batch(&full[1]).unwrap();
        assert_eq!(ids[0].id, BATCH_ROWS as u64);
        assert_eq!(c.rows(), 3);
        assert_eq!(c.finish().num_rows(), 3);
        assert_eq!(c.rows(), 0);
    }
}
