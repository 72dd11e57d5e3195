//! A lane is one request task with its own keep-alive connection, read buffer and response
//! parser, reused request after request: the open loop dispatches arrivals to idle lanes and
//! opens a new lane only when none is idle (so steady state allocates nothing), a closed-loop
//! virtual user is a lane that feeds itself. The exchange stamps every step on the run clock
//! and turns whatever happens into exactly one `Record`.

use super::Ctx;
use crate::extract::EventInfo;
use crate::http::{Limits, Progress, ResponseError, ResponseParser, ResponseSink};
use crate::record::{EventStamp, OslSource, Outcome, Record};
use bytes::Bytes;
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::TcpStream;
use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::task::{Poll, Waker};
use std::time::Duration;

/// Read buffer per connection: a coalesced response of ~60 events fits one read, and 20k
/// connections stay within a few hundred MB.
const READ_BUF_BYTES: usize = 16 * 1024;
/// Events kept per record; more are counted in `events_dropped`, never silently lost.
const MAX_EVENTS_PER_RECORD: usize = 1 << 16;

#[derive(Clone, Copy, Debug)]
pub struct Job {
    pub id: u64,
    pub intended_ns: u64,
}

/// Connections a worker may be opening at once. Past this an arrival that needs a new lane
/// waits (and the wait shows as scheduling lag) instead of opening yet another one: a
/// server slow to accept otherwise gets a storm of connects from an open loop, each new
/// connect costs the client more (the kernel's ephemeral-port search, measured at 80% of
/// the worker's CPU with ~20k lanes) and the server's full accept queue drops the SYNs,
/// which retry for seconds: a collapse caused by the client, not the load. On loopback a
/// connect takes ~50 µs, so 256 at once is never the limit of a healthy run.
pub const MAX_CONNECTING: usize = 256;

/// Counts connections being opened on this worker; the open loop's dispatcher waits on it.
#[derive(Default)]
pub struct ConnectGate {
    pending: Cell<usize>,
    waiter: Cell<Option<Waker>>,
}

impl ConnectGate {
    /// Counts one connect until the guard drops (done, failed, or abandoned mid-way).
    pub fn enter(self: &Rc<Self>) -> ConnectGuard {
        self.pending.set(self.pending.get() + 1);
        ConnectGuard(self.clone())
    }

    pub fn is_full(&self) -> bool {
        self.pending.get() >= MAX_CONNECTING
    }
}

pub struct ConnectGuard(Rc<ConnectGate>);

impl Drop for ConnectGuard {
    fn drop(&mut self) {
        self.0.pending.set(self.0.pending.get() - 1);
        if let Some(w) = self.0.waiter.take() {
            w.wake();
        }
    }
}

/// One lane's mailbox: the pacer puts a job in and wakes the lane's task.
#[derive(Default)]
pub struct Lane {
    job: Cell<Option<Job>>,
    closed: Cell<bool>,
    waker: Cell<Option<Waker>>,
}

impl Lane {
    pub fn dispatch(&self, job: Job) {
        self.job.set(Some(job));
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    fn close(&self) {
        self.closed.set(true);
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    async fn next_job(&self) -> Option<Job> {
        poll_fn(|cx| {
            if let Some(job) = self.job.take() {
                return Poll::Ready(Some(job));
            }
            if self.closed.get() {
                return Poll::Ready(None);
            }
            self.waker.set(Some(cx.waker().clone()));
            Poll::Pending
        })
        .await
    }
}

/// The open loop's lanes: idle ones on a stack, at most `cap` in all.
pub struct Lanes {
    ctx: Rc<Ctx>,
    cap: usize,
    state: Rc<LanesState>,
    tasks: RefCell<Vec<monoio::task::JoinHandle<()>>>,
}

#[derive(Default)]
struct LanesState {
    idle: RefCell<Vec<Rc<Lane>>>,
    all: RefCell<Vec<Rc<Lane>>>,
    busy: Cell<usize>,
    /// The pacer, waiting for a lane to come back (at the cap, or draining).
    waiter: Cell<Option<Waker>>,
}

impl LanesState {
    fn release(&self, lane: Rc<Lane>) {
        self.idle.borrow_mut().push(lane);
        self.busy.set(self.busy.get() - 1);
        if let Some(w) = self.waiter.take() {
            w.wake();
        }
    }
}

impl Lanes {
    pub fn new(ctx: Rc<Ctx>, cap: usize) -> Self {
        Lanes {
            ctx,
            cap,
            state: Rc::new(LanesState::default()),
            tasks: RefCell::new(Vec::new()),
        }
    }

    /// An idle lane, a new one below the cap, or the first one to come back.
    ///
    /// Before opening a lane it lets the ready completions run once: when the worker is behind,
    /// every due arrival comes here without the loop yielding, so answers already waiting in
    /// the kernel were not read, their lanes not released, and each arrival opened a new
    /// connection (CPU on both ends), which put the worker further behind. At 40,000 req/s a
    /// 1–3 ms preemption grew that way to 17,000 connections and seconds of lag.
    pub async fn acquire(&self) -> Rc<Lane> {
        let mut passed = false;
        loop {
            if let Some(lane) = self.state.idle.borrow_mut().pop() {
                self.state.busy.set(self.state.busy.get() + 1);
                return lane;
            }
            if !passed && self.state.busy.get() > 0 {
                passed = true;
                self.ctx.pacer.pass().await;
                continue;
            }
            let below_cap = self.state.all.borrow().len() < self.cap;
            if below_cap && !self.ctx.connects.is_full() {
                self.state.busy.set(self.state.busy.get() + 1);
                return self.spawn_lane(false);
            }
            {
                let mut c = self.ctx.counters.borrow_mut();
                if below_cap {
                    c.connect_waits += 1;
                } else {
                    c.cap_waits += 1;
                }
            }
            self.wait_for_release().await;
        }
    }

    /// Opens `n` lanes (at most the cap and `MAX_CONNECTING`) that connect at once and wait
    /// idle, before the schedule starts: the first connects of a run are the slow ones
    /// (io_uring's connect op completed 4 ms late at a run's start), and without warm lanes
    /// the first arrivals of a fast schedule each waited for one: a burst at start-up.
    pub fn warm(&self, n: usize) {
        for _ in 0..n.min(self.cap).min(MAX_CONNECTING) {
            self.state.busy.set(self.state.busy.get() + 1);
            self.spawn_lane(true);
        }
    }

    fn spawn_lane(&self, warm: bool) -> Rc<Lane> {
        let lane = Rc::new(Lane::default());
        self.state.all.borrow_mut().push(lane.clone());
        // Counted from now, not from when the task first runs: a burst of due arrivals
        // opens lanes faster than their tasks start.
        let opening = self.ctx.connects.enter();
        let state = self.state.clone();
        let task = lane_task(self.ctx.clone(), lane.clone(), state, opening, warm);
        self.tasks.borrow_mut().push(monoio::spawn(task));
        lane
    }

    async fn wait_for_release(&self) {
        let before = self.state.idle.borrow().len();
        let gate = &self.ctx.connects;
        let was_full = gate.is_full();
        poll_fn(|cx| {
            let idle_grew = self.state.idle.borrow().len() > before;
            if idle_grew || self.state.busy.get() == 0 || (was_full && !gate.is_full()) {
                return Poll::Ready(());
            }
            self.state.waiter.set(Some(cx.waker().clone()));
            gate.waiter.set(Some(cx.waker().clone()));
            Poll::Pending
        })
        .await
    }

    /// Waits for every in-flight request, then closes all lanes and their connections.
    pub async fn drain(self) {
        while self.state.busy.get() > 0 {
            self.wait_for_release().await;
        }
        for lane in self.state.all.borrow().iter() {
            lane.close();
        }
        for t in self.tasks.take() {
            t.await;
        }
    }
}

async fn lane_task(
    ctx: Rc<Ctx>,
    lane: Rc<Lane>,
    state: Rc<LanesState>,
    opening: ConnectGuard,
    warm: bool,
) {
    let mut conn = Conn::new(&ctx);
    conn.opening = Some(opening);
    if warm {
        // A failed warm connect is not a request's failure: the first job connects again
        // and records what happens then.
        let _ = conn.connect(&ctx, false).await;
        state.release(lane.clone());
    }
    while let Some(job) = lane.next_job().await {
        let rec = conn.exchange(&ctx, job).await;
        ctx.emit(rec);
        state.release(lane.clone());
    }
}

/// A closed-loop virtual user: claims the next id, sends, waits for the whole response,
/// and goes again until the request count or the duration is reached.
pub async fn virtual_user(ctx: Rc<Ctx>) {
    let s = &ctx.setup;
    let total = s
        .plan
        .stop
        .request_count
        .map(|c| c + s.plan.warmup_requests);
    let end_ns = s
        .plan
        .stop
        .duration_ns
        .map(|d| s.start_ns + s.plan.warmup_duration_ns + d);
    let mut conn = Conn::new(&ctx);
    loop {
        let now = s.clock.now_ns();
        if s.shared.stop.load(Ordering::Relaxed) || end_ns.is_some_and(|e| now >= e) {
            break;
        }
        let id = s.shared.claimed.fetch_add(1, Ordering::Relaxed);
        if total.is_some_and(|t| id >= t) {
            break;
        }
        let rec = conn
            .exchange(
                &ctx,
                Job {
                    id,
                    intended_ns: now,
                },
            )
            .await;
        ctx.emit(rec);
    }
}

/// How often a worker looks at the run's cancel flag. Only the end of a grace period waits
/// on it, so 10 ms costs nothing on the hot path and bounds how late a cancel lands.
const CANCEL_POLL: Duration = Duration::from_millis(10);

/// One worker's cancel signal: a flag and one waker slot per lane (bounded by the lanes, so
/// waiting on it allocates nothing per request).
#[derive(Default)]
pub struct CancelBell {
    cancelled: Cell<bool>,
    finished: Cell<bool>,
    slots: RefCell<Vec<Rc<Cell<Option<Waker>>>>>,
}

impl CancelBell {
    fn slot(&self) -> Rc<Cell<Option<Waker>>> {
        let slot = Rc::new(Cell::new(None));
        self.slots.borrow_mut().push(slot.clone());
        slot
    }

    fn ring(&self) {
        self.cancelled.set(true);
        for slot in self.slots.borrow().iter() {
            if let Some(w) = slot.take() {
                w.wake();
            }
        }
    }

    /// The worker's work is done: the watcher may end.
    pub fn finish(&self) {
        self.finished.set(true);
    }

    async fn wait(&self, slot: &Cell<Option<Waker>>) {
        poll_fn(|cx| {
            if self.cancelled.get() {
                return Poll::Ready(());
            }
            slot.set(Some(cx.waker().clone()));
            Poll::Pending
        })
        .await
    }
}

/// Per-worker task: turns the run's cancel flag into wake-ups of every lane in flight.
pub async fn watch_cancel(ctx: Rc<Ctx>) {
    while !ctx.cancel.finished.get() {
        if ctx.setup.shared.cancel.load(Ordering::Relaxed) {
            ctx.cancel.ring();
            return;
        }
        monoio::time::sleep(CANCEL_POLL).await;
    }
}

/// How one exchange ended, before it becomes an outcome.
enum Ended {
    Done(Outcome),
    TimedOut,
    Cancelled,
}

/// How one attempt on a connection ended.
enum Attempt {
    Finished(Outcome),
    /// A reused keep-alive connection turned out closed before any response byte: the server
    /// closed it while idle. Reopen and send again; not a failure of this request.
    Stale,
}

/// One connection, plain or TLS: the cases of the hot path's read and write. `Stamped` is a
/// plain connection whose reads return the kernel's receive stamp (`--rx-timestamps`).
enum Stream {
    Plain(TcpStream),
    Stamped(TcpStream),
    Tls(Box<monoio_rustls::ClientTlsStream<TcpStream>>),
}

/// What one read returned: its result, the buffer back, and the kernel's receive stamp
/// (`CLOCK_REALTIME` ns) when the connection is `Stamped` and the kernel gave one.
type ReadResult = (std::io::Result<usize>, Vec<u8>, Option<u64>);

impl Stream {
    async fn read(&mut self, buf: Vec<u8>) -> ReadResult {
        let (res, buf) = match self {
            Stream::Plain(s) => s.read(buf).await,
            Stream::Stamped(s) => return read_stamped(s, buf).await,
            Stream::Tls(s) => s.read(buf).await,
        };
        (res, buf, None)
    }

    async fn write_all(&mut self, bytes: Bytes) -> monoio::BufResult<usize, Bytes> {
        match self {
            Stream::Plain(s) | Stream::Stamped(s) => s.write_all(bytes).await,
            Stream::Tls(s) => s.write_all(bytes).await,
        }
    }
}

/// Waits for readability through monoio, then reads with our own `recvmsg` to get the
/// control message (see `rxstamp` for why monoio's read cannot carry it). Readiness may be
/// stale (epoll caches it; `readable(false)` rechecks with `poll(0)`), so `WouldBlock` waits
/// again.
async fn read_stamped(s: &TcpStream, mut buf: Vec<u8>) -> ReadResult {
    use std::os::fd::AsRawFd;
    loop {
        if let Err(e) = s.readable(false).await {
            return (Err(e), buf, None);
        }
        match super::rxstamp::recv(s.as_raw_fd(), &mut buf) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => return (Err(e), buf, None),
            Ok((n, stamp)) => return (Ok(n), buf, stamp),
        }
    }
}

/// A lane's connection state, reused across requests.
struct Conn {
    stream: Option<Stream>,
    parser: ResponseParser,
    buf: Vec<u8>,
    cancel_slot: Rc<Cell<Option<Waker>>>,
    /// A new lane's place in the connect gate, taken when the lane was opened and given
    /// back when its first connect ends.
    opening: Option<ConnectGuard>,
}

impl Conn {
    fn new(ctx: &Ctx) -> Self {
        let mut parser = ResponseParser::new(Limits::default());
        // The collector counts output tokens from the text only when there is a tokenizer;
        // otherwise the text is never copied.
        parser.capture_text(ctx.setup.plan.workload.tokenizer.is_some());
        Conn {
            stream: None,
            parser,
            buf: Vec::with_capacity(READ_BUF_BYTES),
            cancel_slot: ctx.cancel.slot(),
            opening: None,
        }
    }

    async fn exchange(&mut self, ctx: &Ctx, job: Job) -> Record {
        let s = &ctx.setup;
        let entry = s.catalog.get(job.id);
        let warmup_by = ctx.warmup_by(job.id, job.intended_ns);
        let spare = ctx.spare();
        let mut rec = Record {
            id: job.id,
            worker: s.index as u16,
            warmup: warmup_by.any(),
            warmup_by,
            intended_ns: job.intended_ns,
            input_tokens: entry.input_tokens,
            events: spare.events,
            text: spare.text,
            ..Default::default()
        };
        ctx.counters.borrow_mut().requests += 1;
        let limit = Duration::from_nanos(s.plan.request_timeout_ns);
        let bytes = entry.bytes.clone();
        let slot = self.cancel_slot.clone();
        let ended = {
            let work = monoio::time::timeout(limit, self.send(ctx, bytes, &mut rec));
            let cancel = ctx.cancel.wait(&slot);
            monoio::select! {
                r = work => r.map_or(Ended::TimedOut, Ended::Done),
                _ = cancel => Ended::Cancelled,
            }
        };
        rec.outcome = match ended {
            Ended::Done(outcome) => outcome,
            Ended::TimedOut => self.abandon(Outcome::Timeout),
            Ended::Cancelled => self.abandon(Outcome::Cancelled),
        };
        if rec.outcome != Outcome::Ok {
            rec.done_ns.get_or_insert(s.clock.now_ns());
        }
        resolve_osl(&mut rec);
        rec
    }

    /// Drops a connection whose exchange was cut off (timeout, cancel).
    fn abandon(&mut self, outcome: Outcome) -> Outcome {
        self.stream = None;
        self.opening = None;
        // The cut-off read took the buffer with it; a zero-capacity buffer would read as
        // end-of-stream on the next request.
        if self.buf.capacity() == 0 {
            self.buf = Vec::with_capacity(READ_BUF_BYTES);
        }
        outcome
    }

    /// Sends on the kept-alive connection (or a new one), retrying once on a fresh
    /// connection when the kept one was found closed.
    async fn send(&mut self, ctx: &Ctx, bytes: Bytes, rec: &mut Record) -> Outcome {
        for attempt in 0..2 {
            let reused = self.stream.is_some();
            if !reused {
                if let Err(outcome) = self.connect(ctx, attempt > 0).await {
                    return outcome;
                }
            }
            clear_response(rec);
            match self.attempt(ctx, bytes.clone(), rec, attempt == 0).await {
                Attempt::Finished(outcome) => return outcome,
                Attempt::Stale if reused => self.stream = None,
                Attempt::Stale => return Outcome::ResetBeforeHead,
            }
        }
        Outcome::ResetBeforeHead
    }

    async fn connect(&mut self, ctx: &Ctx, reconnect: bool) -> Result<(), Outcome> {
        let s = &ctx.setup;
        let limit = Duration::from_nanos(s.plan.connect_timeout_ns);
        let _counted = self.opening.take().unwrap_or_else(|| ctx.connects.enter());
        let stream = match monoio::time::timeout(limit, TcpStream::connect_addr(s.addr)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(_)) | Err(_) => return Err(Outcome::Connect),
        };
        let _ = stream.set_nodelay(true);
        let stream = match &s.tls {
            None if s.plan.rx_timestamps => stamped(ctx, stream),
            None => Stream::Plain(stream),
            // The handshake is part of connecting: bounded by the same timeout, and a
            // failure (a certificate the pre-run check accepted, then not) is `connect`.
            Some(tls) => {
                match monoio::time::timeout(limit, tls.connector.connect(tls.name.clone(), stream))
                    .await
                {
                    Ok(Ok(tls_stream)) => Stream::Tls(Box::new(tls_stream)),
                    Ok(Err(_)) | Err(_) => return Err(Outcome::Connect),
                }
            }
        };
        let mut c = ctx.counters.borrow_mut();
        c.connections_opened += 1;
        c.reconnects += u64::from(reconnect);
        self.stream = Some(stream);
        Ok(())
    }

    async fn attempt(&mut self, ctx: &Ctx, bytes: Bytes, rec: &mut Record, first: bool) -> Attempt {
        let s = &ctx.setup;
        let mut stream = self.stream.take().expect("connected before the attempt");
        self.parser.reset();
        rec.sent_ns = Some(s.clock.now_ns());
        if first {
            s.shared.sent[s.index].0.fetch_add(1, Ordering::Relaxed);
        }
        let (res, _) = stream.write_all(bytes).await;
        if res.is_err() {
            return Attempt::Stale;
        }
        let mut got_bytes = false;
        let mut stream_state = StreamState::default();
        loop {
            let mut buf = std::mem::take(&mut self.buf);
            buf.clear();
            let (res, buf, kernel_rt_ns) = stream.read(buf).await;
            self.buf = buf;
            let at_ns = s.clock.now_ns();
            if matches!(stream, Stream::Stamped(_)) {
                ctx.kernel_rx
                    .read(&res, kernel_rt_ns, s.clock.origin_mono_ns() + at_ns);
            }
            let n = match res {
                Ok(n) => n,
                Err(_) if !got_bytes => return Attempt::Stale,
                Err(_) => return Attempt::Finished(io_outcome(&self.parser)),
            };
            let mut sink = RecordSink::new(rec, &mut stream_state, at_ns, s);
            let step = if n == 0 {
                if !got_bytes {
                    return Attempt::Stale;
                }
                self.parser.eof(&mut sink)
            } else {
                got_bytes = true;
                count_read(ctx, sink.rec, n);
                self.parser.feed(&self.buf[..n], &mut sink)
            };
            let events = sink.events;
            ctx.counters.borrow_mut().events += events;
            match step {
                Ok(Progress::NeedMore) => continue,
                Ok(Progress::Done { keep_alive }) => {
                    if keep_alive && n > 0 {
                        self.stream = Some(stream);
                    }
                    rec.done_ns = Some(at_ns);
                    return Attempt::Finished(final_outcome(rec, stream_state.error_event));
                }
                Err(e) => return Attempt::Finished(parse_outcome(e)),
            }
        }
    }
}

/// A plain connection whose reads will carry kernel receive stamps, or a plain one (counted)
/// when the socket refuses the option.
fn stamped(ctx: &Ctx, stream: TcpStream) -> Stream {
    use std::os::fd::AsRawFd;
    match super::rxstamp::enable(stream.as_raw_fd()) {
        Ok(()) => Stream::Stamped(stream),
        Err(e) => {
            ctx.kernel_rx.refused(&e);
            Stream::Plain(stream)
        }
    }
}

fn count_read(ctx: &Ctx, rec: &mut Record, n: usize) {
    rec.reads += 1;
    rec.bytes += n as u64;
    let mut c = ctx.counters.borrow_mut();
    c.reads += 1;
    c.bytes += n as u64;
}

fn io_outcome(parser: &ResponseParser) -> Outcome {
    if parser.head_seen() {
        Outcome::ResetMidStream
    } else {
        Outcome::ResetBeforeHead
    }
}

fn parse_outcome(e: ResponseError) -> Outcome {
    e.outcome()
}

/// Forgets what a stale attempt left in the record before the request is sent again.
fn clear_response(rec: &mut Record) {
    rec.status = 0;
    rec.head_ns = None;
    rec.first_token_ns = None;
    rec.first_output_ns = None;
    rec.last_token_ns = None;
    rec.done_ns = None;
    rec.usage_prompt_tokens = None;
    rec.usage_completion_tokens = None;
    rec.cached_tokens = None;
    rec.events.clear();
    rec.events_dropped = 0;
    rec.text.clear();
}

/// The outcome of a response that ended cleanly by its framing.
fn final_outcome(rec: &Record, error_event: bool) -> Outcome {
    if !(200..300).contains(&rec.status) {
        Outcome::HttpStatus
    } else if error_event {
        Outcome::ErrorEvent
    } else {
        Outcome::Ok
    }
}

/// OSL: the server's `usage.completion_tokens` when reported, else the tokens counted on
/// events (metrics.md); the source is recorded.
fn resolve_osl(rec: &mut Record) {
    if let Some(n) = rec.usage_completion_tokens {
        rec.output_tokens = n;
        rec.output_source = OslSource::Usage;
    } else {
        rec.output_tokens = rec.events.iter().map(|e| e.tokens).sum();
        rec.output_source = OslSource::Events;
    }
}

/// Turns parser callbacks into stamps on the record. Every event completed by one read gets
/// that read's stamp.
/// What must survive from one read's events to the next within a response.
#[derive(Default)]
struct StreamState {
    error_event: bool,
    /// Output tokens counted so far (to turn cumulative usage into per-event counts).
    tokens: u32,
}

struct RecordSink<'a> {
    rec: &'a mut Record,
    state: &'a mut StreamState,
    at_ns: u64,
    origin_mono_ns: u64,
    streaming: bool,
    events: u64,
    /// The last `event` was stored (its `text` may follow).
    stored_last: bool,
}

impl<'a> RecordSink<'a> {
    fn new(
        rec: &'a mut Record,
        state: &'a mut StreamState,
        at_ns: u64,
        s: &super::WorkerSetup,
    ) -> Self {
        RecordSink {
            rec,
            state,
            at_ns,
            origin_mono_ns: s.clock.origin_mono_ns(),
            streaming: s.plan.stream,
            events: 0,
            stored_last: false,
        }
    }

    /// Tokens carried: exact when the server streams cumulative usage on every chunk
    /// (vLLM `continuous_usage_stats`), else one per token-bearing event.
    fn tokens_of(&self, ev: &EventInfo) -> u32 {
        if !ev.carries_token() {
            return 0;
        }
        match ev.usage.and_then(|u| u.completion_tokens) {
            Some(cumulative) => cumulative.saturating_sub(self.state.tokens).max(1),
            None => 1,
        }
    }

    fn stamp_tokens(&mut self, ev: &EventInfo) {
        let at = self.at_ns;
        if ev.carries_token() && self.streaming {
            self.rec.first_token_ns.get_or_insert(at);
            self.rec.last_token_ns = Some(at);
        }
        if ev.content_bytes > 0 && self.streaming {
            self.rec.first_output_ns.get_or_insert(at);
        }
    }
}

impl ResponseSink for RecordSink<'_> {
    fn head(&mut self, status: u16, _streaming: bool) {
        self.rec.status = status;
        self.rec.head_ns = Some(self.at_ns);
    }

    fn event(&mut self, ev: &EventInfo) {
        self.events += 1;
        self.state.error_event |= ev.error;
        let tokens = if self.streaming {
            self.tokens_of(ev)
        } else {
            0
        };
        self.state.tokens += tokens;
        self.stamp_tokens(ev);
        if let Some(u) = ev.usage {
            self.rec.usage_prompt_tokens = u.prompt_tokens.or(self.rec.usage_prompt_tokens);
            self.rec.usage_completion_tokens =
                u.completion_tokens.or(self.rec.usage_completion_tokens);
            self.rec.cached_tokens = u.cached_tokens.or(self.rec.cached_tokens);
        }
        self.stored_last = false;
        if self.rec.events.len() >= MAX_EVENTS_PER_RECORD {
            self.rec.events_dropped += 1;
            return;
        }
        self.rec.events.push(EventStamp {
            at_ns: self.at_ns,
            server_ns: ev
                .server_mono_ns
                .map(|m| m.saturating_sub(self.origin_mono_ns)),
            tokens,
            reasoning: ev.reasoning_bytes > 0,
            output: ev.content_bytes > 0,
            ..Default::default()
        });
        self.stored_last = true;
    }

    /// The text of the event just stored (never of a dropped one, so the offsets line up).
    fn text(&mut self, text: &[u8]) {
        if !self.stored_last {
            return;
        }
        self.rec.text.extend_from_slice(text);
        if let Some(e) = self.rec.events.last_mut() {
            e.text_bytes = u32::try_from(text.len()).unwrap_or(u32::MAX);
        }
    }
}
