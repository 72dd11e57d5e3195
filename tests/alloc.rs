//! Issue #18: once warm, a worker allocates nothing per request and nothing per event, over
//! the whole lane exchange — the catalog copy, the write, the reads, the parsing, the record,
//! its hand-off to the collector and its buffers coming back — not only the parsers (whose
//! own test is `it`'s `parser_fixtures::steady_state`).
//!
//! Its own test binary, for its own global allocator: a counter per thread, kept in a fixed
//! table by thread id (the worker is the library's thread, so a thread-local the test could
//! read does not exist). Each run goes through the library against the in-process simulator;
//! the observer (on the collector's thread) finds the worker's thread by its name and reads
//! its count when the warm-up's records are in and again `MEASURED` records later, while the
//! worker still runs. Between the two the worker sent and read ~`MEASURED` requests.

use ringbench::plan::{Arrival, IoDriver, Load, Plan, Stop};
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

thread_local! {
    /// This thread's slot in `TABLE` (`usize::MAX`: none yet).
    static MINE: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn gettid() -> i32 {
    // SAFETY: gettid takes no argument and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

fn count() {
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
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
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

/// Counts the worker's allocations between record `WARM` and record `WARM + MEASURED`, and
/// the events and reads of those records.
#[derive(Default)]
struct Watch {
    seen: u64,
    worker: Option<i32>,
    first: Option<u64>,
    last: Option<u64>,
    events: u64,
    reads: u64,
}

impl Observer for Watch {
    fn on_record(&mut self, rec: &Record) {
        self.seen += 1;
        if self.seen == WARM {
            self.worker = thread_named("ringbench-w0");
            self.first = self.worker.and_then(allocs_of);
        } else if self.seen > WARM && self.seen <= WARM + MEASURED {
            self.events += rec.events.len() as u64;
            self.reads += u64::from(rec.reads);
            if self.seen == WARM + MEASURED {
                self.last = self.worker.and_then(allocs_of);
            }
        }
    }
}

/// One run at a time: they share the machine's two cores.
static SERIAL: Mutex<()> = Mutex::new(());

/// Runs `load` against the in-process simulator (`itl_ms` between its events: 0 writes a
/// response at once, so one read holds many events) and returns the worker's allocations
/// over the measured records, with their events and reads.
fn worker_allocations(load: Load, itl_ms: f64, driver: IoDriver) -> (u64, u64, u64) {
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
        request_count: Some(WARM + MEASURED + AFTER),
        duration_ns: None,
    };
    let mut watch = Watch::default();
    let s = ringbench::run_with(&p, &std::sync::atomic::AtomicBool::new(false), &mut watch)
        .expect("the run completes");
    assert_eq!(s.counts.ok, WARM + MEASURED + AFTER, "every request ok");
    let worker = watch
        .worker
        .expect("the worker thread was found by its name");
    let (first, last) = (watch.first.unwrap(), watch.last.unwrap());
    println!(
        "{load:?}, itl {itl_ms} ms, {:?} (worker thread {worker}): {} allocations over {MEASURED} \
         requests, {} events, {} reads",
        s.overhead.io_driver,
        last - first,
        watch.events,
        watch.reads
    );
    (last - first, watch.events, watch.reads)
}

fn closed() -> Load {
    Load::Closed { concurrency: 8 }
}

fn open() -> Load {
    Load::Open {
        request_rate: 3_000.0,
        arrival: Arrival::Poisson,
        // Its lanes are all opened before the first arrival (warm lanes): a burst waits for
        // one (counted) instead of opening a new connection, which would allocate.
        max_concurrency: Some(8),
    }
}

#[test]
fn a_closed_loop_allocates_nothing_per_request_or_event_once_warm() {
    for driver in [IoDriver::Auto, IoDriver::Epoll] {
        let (allocs, events, reads) = worker_allocations(closed(), 0.0, driver);
        assert!(events >= 18 * MEASURED, "{events} events");
        assert!(reads < events / 4, "several events per read: {reads} reads");
        assert_eq!(
            allocs, 0,
            "{driver:?}: worker allocations over {MEASURED} requests"
        );
    }
}

#[test]
fn a_closed_loop_reading_one_event_at_a_time_allocates_nothing() {
    // 0.2 ms between events, 4 users: each event is written alone and read alone.
    let (allocs, events, reads) =
        worker_allocations(Load::Closed { concurrency: 4 }, 0.2, IoDriver::Auto);
    assert!(events >= 18 * MEASURED, "{events} events");
    assert!(
        reads * 2 > events,
        "about one event per read: {reads} reads"
    );
    assert_eq!(allocs, 0, "worker allocations over {MEASURED} requests");
}

#[test]
fn an_open_loop_allocates_nothing_per_request_or_event_once_warm() {
    for itl_ms in [0.0, 0.2] {
        let (allocs, events, _) = worker_allocations(open(), itl_ms, IoDriver::Auto);
        assert!(events >= 18 * MEASURED, "{events} events");
        assert_eq!(
            allocs, 0,
            "itl {itl_ms} ms: worker allocations over {MEASURED} requests"
        );
    }
}
