//! Issue #18: once warm, a worker allocates nothing per request and nothing per event, over
//! the whole lane exchange — the catalog copy, the write, the reads, the parsing, the record,
//! its hand-off to the collector and its buffers coming back — not only the parsers (whose
//! own test is `it`'s `parser_fixtures::steady_state`); for chat streams and (issue 33) for
//! 8-input embeddings answers, floats and base64.
//!
//! Its own test binary, for its own global allocator: a counter per thread, kept in a fixed
//! table by thread id (the worker is the library's thread, so a thread-local the test could
//! read does not exist). Each run goes through the library against the in-process simulator;
//! the observer (on the collector's thread) finds the worker's thread by its name and reads
//! its count when the warm-up's records are in, and again `MEASURED` and `2 * MEASURED`
//! records later, while the worker still runs: two windows of ~`MEASURED` requests each.
//! Both must be empty (see `Window::check`); the sizes of what was allocated are kept for
//! the failure's message.

use ringbench::plan::{Arrival, EncodingFormat, Endpoint, IoDriver, Load, Plan, Stop};
use ringbench::{Observer, Record};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Threads the table can tell apart over the whole binary.
const SLOTS: usize = 4096;

struct Slot {
    tid: AtomicI32,
    allocs: AtomicU64,
}

static TABLE: [Slot; SLOTS] = [const {
    Slot {
        tid: AtomicI32::new(0),
        allocs: AtomicU64::new(0),
    }
}; SLOTS];
static TAKEN: AtomicUsize = AtomicUsize::new(0);

/// The thread whose allocation sizes are being kept (0: none), and the first `SIZES_KEPT`
/// of them, so a failure says what was allocated.
static SIZED_TID: AtomicI32 = AtomicI32::new(0);
const SIZES_KEPT: usize = 32;
static SIZES: [AtomicUsize; SIZES_KEPT] = [const { AtomicUsize::new(0) }; SIZES_KEPT];
static SIZED: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's slot in `TABLE` (`usize::MAX`: none yet).
    static MINE: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn gettid() -> i32 {
    // SAFETY: gettid takes no argument and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

fn count(bytes: usize) {
    // try_with: the slot index may be gone while a thread is torn down.
    let _ = MINE.try_with(|mine| {
        let mut i = mine.get();
        if i == usize::MAX {
            i = TAKEN.fetch_add(1, Ordering::Relaxed);
            if i >= SLOTS {
                return;
            }
            TABLE[i].tid.store(gettid(), Ordering::Release);
            mine.set(i);
        }
        TABLE[i].allocs.fetch_add(1, Ordering::Relaxed);
        if TABLE[i].tid.load(Ordering::Relaxed) == SIZED_TID.load(Ordering::Relaxed) {
            let k = SIZED.fetch_add(1, Ordering::Relaxed);
            if k < SIZES_KEPT {
                SIZES[k].store(bytes, Ordering::Relaxed);
            }
        }
    });
}

/// Allocations so far by thread `tid` (its newest slot: thread ids are reused).
fn allocs_of(tid: i32) -> Option<u64> {
    let taken = TAKEN.load(Ordering::Acquire).min(SLOTS);
    TABLE[..taken]
        .iter()
        .rev()
        .find(|s| s.tid.load(Ordering::Acquire) == tid)
        .map(|s| s.allocs.load(Ordering::Relaxed))
}

struct Counting;

// SAFETY: every call forwards unchanged to the system allocator; counting touches only
// const-initialised statics and a const thread-local Cell, and never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The id of this process's live thread named `name`.
fn thread_named(name: &str) -> Option<i32> {
    std::fs::read_dir("/proc/self/task")
        .ok()?
        .flatten()
        .find_map(|t| {
            let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
            (comm.trim_end() == name).then(|| t.file_name().to_str()?.parse().ok())?
        })
}

/// Records before the first count (warm-up: lanes, buffers, pools grow to their size).
const WARM: u64 = 1_500;
/// Records between the two counts.
const MEASURED: u64 = 3_000;
/// Records after the second count, so the worker is still in its steady state when it is read.
const AFTER: u64 = 1_000;

/// Counts the worker's allocations at records `WARM`, `WARM + MEASURED` and
/// `WARM + 2 * MEASURED` (two windows), and the events and reads of the first window's records.
#[derive(Default)]
struct Watch {
    seen: u64,
    worker: Option<i32>,
    /// The worker's allocation count at each window edge.
    edges: Vec<u64>,
    /// How many sizes had been kept when the second window began.
    sized_at_second: usize,
    events: u64,
    reads: u64,
}

impl Watch {
    fn edge(&mut self) {
        if let Some(n) = self.worker.and_then(allocs_of) {
            self.edges.push(n);
        }
    }
}

impl Observer for Watch {
    fn on_record(&mut self, rec: &Record) {
        self.seen += 1;
        if self.seen == WARM {
            self.worker = thread_named("ringbench-w0");
            self.edge();
            SIZED.store(0, Ordering::Relaxed);
            SIZED_TID.store(self.worker.unwrap_or(0), Ordering::Relaxed);
        } else if self.seen > WARM && self.seen <= WARM + MEASURED {
            self.events += rec.events.len() as u64;
            self.reads += u64::from(rec.reads);
            if self.seen == WARM + MEASURED {
                self.edge();
                self.sized_at_second = SIZED.load(Ordering::Relaxed).min(SIZES_KEPT);
            }
        } else if self.seen == WARM + 2 * MEASURED {
            self.edge();
            SIZED_TID.store(0, Ordering::Relaxed);
        }
    }
}

/// One run at a time: they share the machine's two cores.
static SERIAL: Mutex<()> = Mutex::new(());

/// What one run's worker did over two consecutive windows of `MEASURED` records.
struct Window {
    /// The worker's allocations in each window.
    allocs: [u64; 2],
    /// The sizes of the first `SIZES_KEPT` allocations of each window, bytes.
    sizes: [Vec<usize>; 2],
    /// Record buffers the worker allocated because none had come back from the collector in
    /// time (`event_vecs_allocated`, over the whole run): the library's own count of a
    /// collector the machine did not run for a while.
    counted_spares: u64,
    /// Events and reads of the first window's records.
    events: u64,
    reads: u64,
}

impl Window {
    /// Nothing allocated in either window, unless the library counted record buffers it had
    /// to allocate because the collector did not run for a while (a loaded machine): then at
    /// most three per counted buffer (events, echoed id, text), and those a burst's worth.
    /// Any other allocation fails, once or per request; the sizes printed say what it was
    /// (this is how a lane's first parse growing simd-json's vectors mid-run was found).
    fn check(&self, what: &str) {
        let [a, b] = self.allocs;
        let counted = self.counted_spares;
        assert!(
            a + b == 0 || (a + b <= 3 * counted && counted * 20 <= MEASURED),
            "{what}: worker allocations over two windows of {MEASURED} requests: {a} and {b} \
             ({counted} record buffers counted over the run); sizes of the first: {:?}",
            self.sizes
        );
    }
}

/// Runs `load` against the in-process simulator (`itl_ms` between its events: 0 writes a
/// response at once, so one read holds many events) and returns what the worker did over
/// the measured records.
fn worker_allocations(load: Load, itl_ms: f64, driver: IoDriver) -> Window {
    worker_allocations_of(load, itl_ms, driver, |_| {})
}

/// `worker_allocations`, with `tune` changing the plan (the endpoint, its batch) first.
fn worker_allocations_of(
    load: Load,
    itl_ms: f64,
    driver: IoDriver,
    tune: impl FnOnce(&mut Plan),
) -> Window {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cpus = ringbench::host::online_cpus();
    let mut p = Plan::defaults();
    p.progress = false;
    p.cpus = vec![cpus[0]];
    p.io_driver = driver;
    let sim = p.sim.as_mut().unwrap();
    sim.cpus = vec![cpus[cpus.len() - 1]];
    sim.itl_ms = itl_ms;
    p.load = load.clone();
    p.stop = Stop {
        request_count: Some(WARM + 2 * MEASURED + AFTER),
        duration_ns: None,
    };
    tune(&mut p);
    let mut watch = Watch::default();
    let s = ringbench::run_with(&p, &std::sync::atomic::AtomicBool::new(false), &mut watch)
        .expect("the run completes");
    assert_eq!(
        s.counts.tally.ok,
        WARM + 2 * MEASURED + AFTER,
        "every request ok"
    );
    let worker = watch
        .worker
        .expect("the worker thread was found by its name");
    let e = &watch.edges;
    assert_eq!(
        e.len(),
        3,
        "the worker's count was read at each window edge"
    );
    let kept = SIZED.load(Ordering::Relaxed).min(SIZES_KEPT);
    let sizes = |r: std::ops::Range<usize>| -> Vec<usize> {
        SIZES[r].iter().map(|s| s.load(Ordering::Relaxed)).collect()
    };
    let w = Window {
        allocs: [e[1] - e[0], e[2] - e[1]],
        sizes: [
            sizes(0..watch.sized_at_second),
            sizes(watch.sized_at_second..kept),
        ],
        counted_spares: s.overhead.workers[0].counts.event_vecs_allocated,
        events: watch.events,
        reads: watch.reads,
    };
    println!(
        "{load:?}, itl {itl_ms} ms, {:?} (worker thread {worker}): {:?} allocations over two \
         windows of {MEASURED} requests; {} events, {} reads in the first; {} spare buffers \
         counted over the run; sizes: {:?}",
        s.overhead.io_driver, w.allocs, w.events, w.reads, w.counted_spares, w.sizes
    );
    w
}

fn closed() -> Load {
    Load::Closed { concurrency: 8 }
}

fn open() -> Load {
    Load::Open {
        request_rate: 3_000.0,
        arrival: Arrival::Poisson,
        // Every lane is opened before the first arrival: the worker warms the arrivals of the
        // schedule's first 2 ms plus one (7 at 3,000/s), at most the cap. A burst at the cap
        // waits for a lane (counted) instead of opening a new connection, which would
        // allocate; with a cap of 8, the eighth lane opened at the first burst of 8, once,
        // mid-run (14 allocations: its task, buffers and connect, seen here).
        max_concurrency: Some(6),
    }
}

#[test]
fn a_closed_loop_allocates_nothing_per_request_or_event_once_warm() {
    for driver in [IoDriver::Auto, IoDriver::Epoll] {
        let w = worker_allocations(closed(), 0.0, driver);
        assert!(w.events >= 18 * MEASURED, "{} events", w.events);
        assert!(
            w.reads < w.events / 4,
            "several events per read: {} reads",
            w.reads
        );
        w.check(&format!("{driver:?}"));
    }
}

#[test]
fn a_closed_loop_reading_one_event_at_a_time_allocates_nothing() {
    // 0.2 ms between events, 4 users: each event is written alone and, on a quiet machine,
    // read alone (a loaded one batches a few per read: 1 read in 4 events was seen).
    let w = worker_allocations(Load::Closed { concurrency: 4 }, 0.2, IoDriver::Auto);
    assert!(w.events >= 18 * MEASURED, "{} events", w.events);
    assert!(
        w.reads * 8 > w.events,
        "few events per read: {} reads",
        w.reads
    );
    w.check("one event per read");
}

#[test]
fn an_open_loop_allocates_nothing_per_request_or_event_once_warm() {
    for itl_ms in [0.0, 0.2] {
        let w = worker_allocations(open(), itl_ms, IoDriver::Auto);
        assert!(w.events >= 18 * MEASURED, "{} events", w.events);
        w.check(&format!("itl {itl_ms} ms"));
    }
}

#[test]
fn an_embeddings_run_of_8_inputs_allocates_nothing_per_request_once_warm() {
    // 8 inputs a request, 1,024 floats a vector: ~170 KB answers read in many slices by the
    // pooling scanner, one event each.
    for encoding in [EncodingFormat::Float, EncodingFormat::Base64] {
        let w = worker_allocations_of(closed(), 0.0, IoDriver::Auto, |p| {
            p.endpoint = Endpoint::Embeddings;
            p.stream = false;
            p.api.batch_size = 8;
            p.api.encoding_format = encoding;
        });
        assert_eq!(w.events, MEASURED, "one event an answer");
        if encoding == EncodingFormat::Float {
            assert!(w.reads >= 4 * MEASURED, "many reads an answer: {}", w.reads);
        }
        w.check(&format!("embeddings x8 {encoding:?}"));
    }
}

/// Salted media: every request's images and clip get their salt written into the lane's own
/// copy (a tail rewritten and base64-encoded in place), with no allocation.
#[test]
fn salted_images_and_audio_allocate_nothing_per_request() {
    use ringbench::plan::workload::{ImageFormat, ImageSize, LengthDist, SizeWeight};
    let w = worker_allocations_of(closed(), 0.0, IoDriver::Auto, |p| {
        let m = &mut p.workload.media;
        m.image_count = Some(LengthDist::Fixed { tokens: 2 });
        let size = |width, height| SizeWeight {
            width,
            height,
            weight: 1.0,
        };
        m.image_size = ImageSize::Sizes {
            sizes: vec![size(64, 48), size(40, 40)],
        };
        m.image_format = ImageFormat::Random;
        m.audio_ms = Some(LengthDist::Fixed { tokens: 300 });
    });
    assert!(w.events >= 18 * MEASURED, "{} events", w.events);
    w.check("salted images and audio");
}
