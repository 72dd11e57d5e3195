//! `ringbench._native`: the PyO3 extension under the Python package `ringbench` (python/).
//! It holds no benchmark logic of its own: the binary's own code (src/main.rs with src/cli,
//! included by path) parses the flags, so `ringbench.run(**flags)` takes the CLI's flags with
//! the CLI's messages, and `ringbench.main(argv)` is the `ringbench` command itself. A run goes
//! on a thread of its own with the GIL released; the calling thread waits in slices of
//! `POLL_MS`, checking Python's signals, so Ctrl-C stops the run the way SIGINT stops the
//! binary (sending stops, in-flight requests get `--grace`, then the summary of what ran).
//! Records are gathered as Arrow columns (`ringbench::record::arrow`, the schema of
//! `requests.parquet`) and handed to pyarrow through the Arrow C data interface, no copy.

// The binary's modules, compiled into this crate as they are into `ringbench` (main.rs's
// `fn main` is not used here: `main` below calls its `main_with`).
#[allow(dead_code)]
#[path = "../../src/main.rs"]
mod app;
use app::cli;

use arrow_array::builder::{ArrayBuilder, Float64Builder};
use arrow_array::{Array, ArrayRef, RecordBatch, StructArray};
use arrow_schema::{DataType, Field, Schema};
use crossbeam_channel::{bounded, RecvTimeoutError};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use ringbench::record::arrow::{Columns, BATCH_ROWS};
use ringbench::{LiveCounts, Observer, Record};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pyo3::create_exception!(
    _native,
    UsageError,
    PyValueError,
    "A flag or value the `ringbench` command would refuse (exit 2), with its message."
);

/// How often the waiting thread looks at Python's signals (Ctrl-C).
const POLL_MS: u64 = 50;

/// Per-request durations beside the stamps in `records()`, float milliseconds: the column's
/// name and the record's own method (`Record::*_ns`).
const DURATIONS: [(&str, fn(&Record) -> Option<u64>); 7] = [
    ("ttft_ms", Record::ttft_ns),
    ("ttfb_ms", Record::ttfb_ns),
    ("e2e_ms", Record::e2e_ns),
    ("tpot_ms", Record::tpot_ns),
    ("upload_ms", Record::upload_ns),
    ("sched_lag_ms", Record::sched_lag_ns),
    ("max_stall_ms", Record::max_stall_ns),
];

/// The run's records as they are collected (on the collector's thread), and the progress
/// callback, called with the GIL taken at most once per `every`.
struct PyWatch {
    columns: Columns,
    durations: Vec<Float64Builder>,
    batches: Vec<RecordBatch>,
    callback: Option<Py<PyAny>>,
    callback_error: Option<PyErr>,
    stop: Arc<AtomicBool>,
}

impl PyWatch {
    fn batch(&mut self, records: RecordBatch) {
        let mut fields: Vec<Field> = records
            .schema()
            .fields()
            .iter()
            .map(|f| (**f).clone())
            .collect();
        let mut cols: Vec<ArrayRef> = records.columns().to_vec();
        for ((name, _), b) in DURATIONS.iter().zip(&mut self.durations) {
            fields.push(Field::new(*name, DataType::Float64, true));
            cols.push(ArrayBuilder::finish(b));
        }
        let schema = Arc::new(Schema::new(fields));
        self.batches
            .push(RecordBatch::try_new(schema, cols).expect("the durations match the rows"));
    }
}

impl Observer for PyWatch {
    fn on_record(&mut self, r: &Record) {
        for ((_, of), b) in DURATIONS.iter().zip(&mut self.durations) {
            b.append_option(of(r).map(|ns| ns as f64 / 1e6));
        }
        if let Some(b) = self.columns.push(r) {
            self.batch(b);
        }
    }

    fn on_progress(&mut self, live: &LiveCounts, elapsed_s: f64) {
        let Some(cb) = &self.callback else { return };
        let called = Python::attach(|py| -> PyResult<()> {
            let d = PyDict::new(py);
            d.set_item("elapsed_s", elapsed_s)?;
            d.set_item("records", live.records())?;
            d.set_item("sent", live.tally.sent)?;
            d.set_item("ok", live.tally.ok)?;
            d.set_item("failed", live.tally.failed)?;
            d.set_item("cancelled", live.tally.cancelled)?;
            d.set_item("not_sent", live.tally.not_sent)?;
            d.set_item("in_flight", live.in_flight)?;
            d.set_item("ttft_p50_ms", live.ttft_p50_ns.map(|ns| ns as f64 / 1e6))?;
            cb.call1(py, (d,))?;
            Ok(())
        });
        if let Err(e) = called {
            // The callback's exception ends the run and is raised when it has stopped.
            self.callback = None;
            self.callback_error.get_or_insert(e);
            self.stop.store(true, Ordering::SeqCst);
        }
    }
}

/// A finished run: the summary as JSON text, its records as Arrow batches.
#[pyclass(module = "ringbench._native", frozen)]
struct RunOutput {
    #[pyo3(get)]
    summary_json: String,
    #[pyo3(get)]
    interrupted_by_python: bool,
    batches: Mutex<Vec<RecordBatch>>,
}

#[pymethods]
impl RunOutput {
    /// The records as a list of `pyarrow.RecordBatch`, handed over through the Arrow C data
    /// interface (pyarrow takes the buffers; nothing is copied).
    fn record_batches(&self, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
        let import = py
            .import("pyarrow")?
            .getattr("RecordBatch")?
            .getattr("_import_from_c")?;
        let batches = self
            .batches
            .lock()
            .map_err(|_| PyRuntimeError::new_err("poisoned"))?;
        batches
            .iter()
            .map(|b| {
                let data = StructArray::from(b.clone()).into_data();
                let array = arrow_data::ffi::FFI_ArrowArray::new(&data);
                let schema = arrow_schema::ffi::FFI_ArrowSchema::try_from(data.data_type())
                    .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
                let (a, s) = (Box::new(array), Box::new(schema));
                let (pa, ps) = (Box::into_raw(a), Box::into_raw(s));
                let out = import.call1((pa as usize, ps as usize));
                // pyarrow moved the release callbacks out; the emptied structs are ours.
                // SAFETY: both pointers came from Box::into_raw just above.
                unsafe {
                    drop(Box::from_raw(pa));
                    drop(Box::from_raw(ps));
                }
                out.map(Bound::unbind)
            })
            .collect()
    }

    /// The Arrow schema's field names, in column order (no pyarrow needed).
    fn column_names(&self) -> Vec<String> {
        let mut names: Vec<String> = ringbench::record::arrow::schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        names.extend(DURATIONS.iter().map(|(n, _)| n.to_string()));
        names
    }
}

fn usage_err(e: anyhow::Error) -> PyErr {
    match e.downcast::<app::Usage>() {
        Ok(u) => UsageError::new_err(u.0),
        Err(e) => PyRuntimeError::new_err(format!("{e:#}")),
    }
}

/// The argv's `run` flags, parsed by the CLI's own parser.
fn run_args(argv: Vec<String>) -> PyResult<Box<cli::RunArgs>> {
    match cli::parse(argv) {
        Ok(cli::Cli {
            command: cli::Command::Run(args),
        }) => Ok(args),
        Ok(_) => Err(UsageError::new_err("not a `run` command line")),
        Err(cli::ParseError::Clap(e, said)) => {
            let mut text = e.render().to_string();
            if let Some(n) = said {
                text.push_str(&format!("\nnote: {n}"));
            }
            Err(UsageError::new_err(text.trim_end().to_string()))
        }
        Err(cli::ParseError::Usage(e)) => Err(UsageError::new_err(e.to_string())),
    }
}

/// `ringbench run ARGV...` as the command line would, quietly; the GIL released while it runs,
/// Ctrl-C stopping it (partial results). `progress` is called from the collector thread about
/// once a second with a dict of live counts.
#[pyfunction]
#[pyo3(signature = (argv, progress=None))]
fn run(py: Python<'_>, argv: Vec<String>, progress: Option<Py<PyAny>>) -> PyResult<RunOutput> {
    let args = run_args(argv)?;
    let (plan, _demo) = app::checked_plan(&args).map_err(usage_err)?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut watch = PyWatch {
        columns: Columns::new(),
        durations: DURATIONS
            .iter()
            .map(|_| Float64Builder::with_capacity(BATCH_ROWS))
            .collect(),
        batches: Vec::new(),
        callback: progress,
        callback_error: None,
        stop: stop.clone(),
    };
    let (tx, rx) = bounded(1);
    let flag = stop.clone();
    std::thread::Builder::new()
        .name("ringbench-run".into())
        .spawn(move || {
            let result = ringbench::run_with(&plan, &flag, &mut watch);
            // The last batch, even empty: `records()` has a schema with no record.
            let b = watch.columns.finish();
            watch.batch(b);
            let _ = tx.send((result, watch));
        })
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    let mut interrupted = None;
    let (result, watch) = loop {
        match py.detach(|| rx.recv_timeout(Duration::from_millis(POLL_MS))) {
            Ok(done) => break done,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err(
                    "the run's thread ended without a result",
                ))
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        if interrupted.is_none() {
            if let Err(e) = py.check_signals() {
                stop.store(true, Ordering::SeqCst);
                interrupted = Some(e);
            }
        }
    };
    if let Some(e) = watch.callback_error {
        return Err(e);
    }
    let summary = result.map_err(|e| match e {
        e if e.is_usage() => UsageError::new_err(e.to_string()),
        e => PyRuntimeError::new_err(e.to_string()),
    })?;
    if let Some(e) =
        interrupted.filter(|e| !e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py))
    {
        return Err(e);
    }
    let summary_json =
        serde_json::to_string(&summary).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    Ok(RunOutput {
        summary_json,
        interrupted_by_python: summary.interrupted,
        batches: Mutex::new(watch.batches),
    })
}

/// The built-in simulator, started with `ringbench sim`'s flags (`argv` without `sim`).
#[pyclass(module = "ringbench._native")]
struct Sim {
    handle: Option<ringbench::sim::SimHandle>,
    #[pyo3(get)]
    url: String,
}

#[pymethods]
impl Sim {
    /// Stops the simulator (idempotent).
    fn stop(&mut self, py: Python<'_>) {
        if let Some(h) = self.handle.take() {
            py.detach(move || drop(h.stop()));
        }
    }
}

#[pyfunction]
fn sim_start(py: Python<'_>, argv: Vec<String>) -> PyResult<Sim> {
    let args = match cli::parse(argv) {
        Ok(cli::Cli {
            command: cli::Command::Sim(args),
        }) => args,
        Ok(_) => return Err(UsageError::new_err("not a `sim` command line")),
        Err(cli::ParseError::Clap(e, _)) => {
            return Err(UsageError::new_err(
                e.render().to_string().trim_end().to_string(),
            ))
        }
        Err(cli::ParseError::Usage(e)) => return Err(UsageError::new_err(e.to_string())),
    };
    let cfg = args
        .config()
        .map_err(|e| UsageError::new_err(e.to_string()))?;
    ringbench::host::raise_fd_limit();
    let handle = py
        .detach(|| ringbench::sim::start(cfg))
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    let url = format!("http://{}", handle.addr);
    Ok(Sim {
        handle: Some(handle),
        url,
    })
}

/// The `ringbench` command: `argv` is the whole command line (`argv[0]` first); returns the
/// exit status. Runs with the GIL released; its SIGINT handling is the binary's own.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| app::main_with(argv.into_iter().map(Into::into)))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(sim_start, m)?)?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_class::<RunOutput>()?;
    m.add_class::<Sim>()?;
    m.add("UsageError", m.py().get_type::<UsageError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
