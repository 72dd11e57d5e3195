//! Part of the worker (schedule → **worker** → http → …): one lane's connection, plain, TLS or
//! stamped (`--rx-timestamps`), and the exchange that sends a request on it and reads the
//! response: every step stamped on the run clock, whatever happens turned into exactly one
//! `Record` (a reused connection the server closed while idle is reopened once, not a
//! failure). Never prints.

use super::job::{ConnectGuard, Job};
use super::sink::{credit_empty_text, final_outcome, resolve_osl, RecordSink, StreamState};
use super::Ctx;
use crate::http::{Limits, Progress, ResponseError, ResponseParser};
use crate::plan::CancelAfter;
use crate::prepare::catalog::Entry;
use crate::record::{Outcome, Record, Spare, WarmupBy};
use crate::rt::timer::Timer;
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::TcpStream;
use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::task::Waker;
use std::time::Duration;

/// A read buffer's size: a coalesced response of ~60 events fits one read.
const READ_BUF_BYTES: usize = 16 * 1024;

/// Read buffers kept at a worker's start: more than a pass usually has reads in flight, so
/// steady state takes and gives back without allocating.
const READ_BUFS_AT_START: usize = 16;

/// A worker's read buffers. A kernel-stamped connection (the default for http://) waits for
/// readability holding none, takes one for its `recvmsg` and the parse of what it read, and
/// gives it back: an open stream waiting for its next event holds no read buffer, and the
/// buffers in use are the reads of one pass. A plain (`--no-rx-timestamps`) or TLS
/// connection's read waits with its buffer in the kernel's (or rustls') hands, so it takes
/// one when its first read starts and keeps it while it lives: `READ_BUF_BYTES` per open
/// stream there.
pub(crate) struct ReadBufs {
    free: std::cell::RefCell<Vec<Vec<u8>>>,
}

impl Default for ReadBufs {
    fn default() -> Self {
        Self::new()
    }
}

impl ReadBufs {
    pub(crate) fn new() -> Self {
        let free = (0..READ_BUFS_AT_START)
            .map(|_| Vec::with_capacity(READ_BUF_BYTES))
            .collect();
        ReadBufs {
            free: std::cell::RefCell::new(free),
        }
    }

    /// A free buffer, empty; a new one when every buffer is in use (the pool then keeps it).
    fn take(&self) -> Vec<u8> {
        let mut b = self.free.borrow_mut().pop().unwrap_or_default();
        if b.capacity() == 0 {
            b = Vec::with_capacity(READ_BUF_BYTES);
        }
        b.clear();
        b
    }

    fn give(&self, buf: Vec<u8>) {
        if buf.capacity() > 0 {
            self.free.borrow_mut().push(buf);
        }
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
enum Io {
    Plain(TcpStream),
    Stamped(TcpStream),
    #[cfg(feature = "tls")]
    Tls(Box<monoio_rustls::ClientTlsStream<TcpStream>>),
}

/// A lane's open connection: its `Io`, and what its close tells the worker's `NetWatch`
/// (its `TCP_INFO`, read in `drop` while the socket is still open; `slot`: its entry in the
/// watch's table of open connections, sampled mid-life).
pub(super) struct Stream {
    io: Io,
    fd: std::os::fd::RawFd,
    server: usize,
    slot: usize,
    net: Rc<super::netwatch::NetWatch>,
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.net.closed(self.server, self.fd, self.slot);
    }
}

/// What one read returned: its result, the buffer back, and the kernel's receive stamp
/// (`CLOCK_REALTIME` ns) when the connection is `Stamped` and the kernel gave one.
type ReadResult = (std::io::Result<usize>, Vec<u8>, Option<u64>);

impl Stream {
    /// A read into `buf`, or (an empty `buf`) into one `bufs` lends: a stamped connection
    /// takes it once readable, the others before the read starts.
    async fn read(&mut self, mut buf: Vec<u8>, bufs: &ReadBufs) -> ReadResult {
        if buf.capacity() == 0 && !matches!(self.io, Io::Stamped(_)) {
            buf = bufs.take();
        }
        let (res, buf) = match &mut self.io {
            Io::Plain(s) => s.read(buf).await,
            Io::Stamped(s) => return read_stamped(s, buf, bufs).await,
            #[cfg(feature = "tls")]
            Io::Tls(s) => s.read(buf).await,
        };
        (res, buf, None)
    }

    /// Whether the driver performs this stream's reads (io_uring completes them before it
    /// returns), not the lane itself (`Stamped`'s `recvmsg` after readiness).
    fn read_by_driver(&self) -> bool {
        !matches!(self.io, Io::Stamped(_))
    }

    /// Whether a waiting read holds its buffer (all but `Stamped`: see `ReadBufs`).
    fn keeps_read_buf(&self) -> bool {
        !matches!(self.io, Io::Stamped(_))
    }

    async fn write_all(&mut self, bytes: Vec<u8>) -> monoio::BufResult<usize, Vec<u8>> {
        match &mut self.io {
            Io::Plain(s) | Io::Stamped(s) => s.write_all(bytes).await,
            #[cfg(feature = "tls")]
            Io::Tls(s) => s.write_all(bytes).await,
        }
    }
}

/// Waits for readability through monoio, then reads with our own `recvmsg` to get the
/// control message (see `rxstamp` for why monoio's read cannot carry it). Readiness may be
/// stale (epoll caches it; `readable(false)` rechecks with `poll(0)`), so `WouldBlock` waits
/// again.
async fn read_stamped(s: &TcpStream, mut buf: Vec<u8>, bufs: &ReadBufs) -> ReadResult {
    use std::os::fd::AsRawFd;
    loop {
        if let Err(e) = s.readable(false).await {
            return (Err(e), buf, None);
        }
        if buf.capacity() == 0 {
            buf = bufs.take();
        }
        match super::rxstamp::recv(s.as_raw_fd(), &mut buf) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => return (Err(e), buf, None),
            Ok((n, stamp)) => return (Ok(n), buf, stamp),
        }
    }
}

/// A lane's connection state, reused across requests.
pub(super) struct Conn {
    /// The connection kept alive to `server`.
    stream: Option<Stream>,
    /// The server `stream` goes to (an index of the plan's targets).
    server: usize,
    /// A closed-loop user's kept-alive connections to the other servers, by server; empty
    /// for an open-loop lane, which holds one connection and closes it to go elsewhere.
    parked: Vec<Option<Stream>>,
    parser: ResponseParser,
    buf: Vec<u8>,
    /// The request being sent: its catalog entry copied, its own salt written in.
    out: Vec<u8>,
    cancel_slot: Rc<Cell<Option<Waker>>>,
    /// Cuts requests the client aborts by time (`--cancel-after D`); made on first need.
    cut_timer: Option<Timer>,
    /// A new lane's place in the connect gate, taken when the lane was opened and given
    /// back when its first connect ends.
    pub(super) opening: Option<ConnectGuard>,
}

impl Conn {
    /// `keep_all`: keep a connection to each server sent to (a closed-loop user), not only
    /// to the last one (an open-loop lane).
    pub(super) fn new(ctx: &Ctx, keep_all: bool) -> Self {
        // The payload scratch is the worker's (`Ctx::extractor`, text capture set there).
        let parser = ResponseParser::sharing(Limits::default(), ctx.extractor.clone());
        let servers = ctx.setup.dests.len();
        Conn {
            stream: None,
            server: 0,
            parked: match keep_all && servers > 1 {
                true => (0..servers).map(|_| None).collect(),
                false => Vec::new(),
            },
            parser,
            // Lent by `ReadBufs` at the first read.
            buf: Vec::new(),
            out: Vec::with_capacity(ctx.setup.catalog.max_request_bytes()),
            cancel_slot: ctx.cancel.slot(),
            cut_timer: None,
            opening: None,
        }
    }

    /// Makes server `to` the one the next exchange goes to: its kept connection (if any)
    /// becomes the current one; the current one is parked, or closed by a lane that keeps
    /// only one.
    pub(super) fn go_to(&mut self, to: usize) {
        if to == self.server {
            return;
        }
        let current = self.stream.take();
        if let Some(slot) = self.parked.get_mut(self.server) {
            *slot = current;
        }
        self.stream = self.parked.get_mut(to).and_then(Option::take);
        self.server = to;
    }

    pub(super) async fn exchange(&mut self, ctx: &Ctx, job: Job) -> Record {
        let catalog = &ctx.setup.catalog;
        let payload = Payload::of(catalog.write(job.id, job.to, &mut self.out), 0);
        let warmup_by = ctx.warmup_by(job.id, job.intended_ns);
        self.exchange_written(ctx, job, payload, warmup_by).await
    }

    /// The send buffer, for a caller that writes the request itself (`session`).
    pub(super) fn out_mut(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    /// `exchange` of the request already in the send buffer (`out_mut`), which carries
    /// `payload`, under the warm-up rules `warmup_by`.
    pub(super) async fn exchange_written(
        &mut self,
        ctx: &Ctx,
        job: Job,
        payload: Payload,
        warmup_by: WarmupBy,
    ) -> Record {
        let s = &ctx.setup;
        let cut = s
            .plan
            .cancel
            .filter(|c| c.cancels(s.plan.seed, job.id))
            .map(|c| c.after);
        self.go_to(job.to);
        let ask = Ask {
            job,
            payload,
            warmup_by,
        };
        let mut rec = ask.record(ctx, ctx.spare());
        ctx.counters.borrow_mut().requests += 1;
        let limit = Duration::from_nanos(s.plan.request_timeout_ns);
        let slot = self.cancel_slot.clone();
        let ended = {
            let work = monoio::time::timeout(limit, self.send(ctx, &mut rec, &ask, cut));
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
        match rec.outcome.is_failure() {
            true => rec.failure.settle(),
            false => rec.failure.clear(),
        }
        resolve_osl(&mut rec);
        rec
    }

    /// Drops a connection whose exchange was cut off (timeout, cancel).
    fn abandon(&mut self, outcome: Outcome) -> Outcome {
        self.stream = None;
        self.opening = None;
        // The cut-off read took the buffer with it; the next read borrows one (`ReadBufs`).
        outcome
    }

    /// Sends on the kept-alive connection (or a new one), retrying once on a fresh
    /// connection when the kept one was found closed.
    async fn send(
        &mut self,
        ctx: &Ctx,
        rec: &mut Record,
        ask: &Ask,
        cut: Option<CancelAfter>,
    ) -> Outcome {
        for attempt in 0..2 {
            let reused = self.stream.is_some();
            if !reused {
                if let Err(outcome) = self.connect(ctx, attempt > 0).await {
                    return outcome;
                }
            }
            if attempt > 0 {
                // Forget what the stale attempt left: the record as it was before it was
                // sent, its buffers emptied and kept (no allocation).
                *rec = ask.record(ctx, rec.take_spare());
            }
            match self.attempt(ctx, rec, attempt == 0, cut).await {
                Attempt::Finished(outcome) => return outcome,
                Attempt::Stale if reused => self.stream = None,
                Attempt::Stale => return Outcome::ResetBeforeHead,
            }
        }
        Outcome::ResetBeforeHead
    }

    pub(super) async fn connect(&mut self, ctx: &Ctx, reconnect: bool) -> Result<(), Outcome> {
        use std::os::fd::AsRawFd;
        let s = &ctx.setup;
        let limit = Duration::from_nanos(s.plan.connect_timeout_ns);
        let _counted = self.opening.take().unwrap_or_else(|| ctx.connects.enter());
        let began_ns = s.clock.now_ns();
        let stream =
            match monoio::time::timeout(limit, TcpStream::connect_addr(s.dests[self.server].addr))
                .await
            {
                Ok(Ok(stream)) => stream,
                Ok(Err(_)) | Err(_) => return Err(Outcome::Connect),
            };
        let tcp_ns = s.clock.now_ns().saturating_sub(began_ns);
        let _ = stream.set_nodelay(true);
        let fd = stream.as_raw_fd();
        let io = match &s.dests[self.server].tls {
            None if s.plan.rx_timestamps => stamped(ctx, stream),
            None => Io::Plain(stream),
            // The handshake is part of connecting: bounded by the same timeout, and a
            // failure (a certificate the pre-run check accepted, then not) is `connect`.
            #[cfg(feature = "tls")]
            Some(tls) => {
                match monoio::time::timeout(limit, tls.connector.connect(tls.name.clone(), stream))
                    .await
                {
                    Ok(Ok(tls_stream)) => Io::Tls(Box::new(tls_stream)),
                    Ok(Err(_)) | Err(_) => return Err(Outcome::Connect),
                }
            }
            #[cfg(not(feature = "tls"))]
            Some(tls) => match *tls {},
        };
        let now_ns = s.clock.now_ns();
        let tls_ns =
            (s.dests[self.server].tls.is_some()).then(|| now_ns.saturating_sub(began_ns + tcp_ns));
        let slot = ctx.net.opened(self.server, fd, now_ns, tcp_ns, tls_ns);
        let mut c = ctx.counters.borrow_mut();
        c.connections_opened += 1;
        c.reconnects += u64::from(reconnect);
        self.stream = Some(Stream {
            io,
            fd,
            server: self.server,
            slot,
            net: ctx.net.clone(),
        });
        Ok(())
    }

    /// The next read into the connection's buffer or one `bufs` lends (handed back with the
    /// result), or `None` when the client's cut by time came first: the read went with the
    /// buffer, and the next read borrows another.
    async fn read_next(
        &mut self,
        stream: &mut Stream,
        cut: &Cut,
        bufs: &ReadBufs,
    ) -> Option<ReadResult> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        let Some(at) = cut.deadline_mono_ns else {
            return Some(stream.read(buf, bufs).await);
        };
        read_or_cut(stream, buf, bufs, &mut self.cut_timer, at).await
    }

    async fn attempt(
        &mut self,
        ctx: &Ctx,
        rec: &mut Record,
        first: bool,
        cut: Option<CancelAfter>,
    ) -> Attempt {
        let s = &ctx.setup;
        let mut stream = self.stream.take().expect("connected before the attempt");
        self.parser.reset();
        let sent_ns = stamp_send(ctx, rec, first);
        // The buffer comes back with the result; a write cut off (timeout, cancel) keeps it,
        // and the next request grows a new one (`Catalog::write`).
        let (res, out) = stream.write_all(std::mem::take(&mut self.out)).await;
        self.out = out;
        if res.is_err() {
            return Attempt::Stale;
        }
        rec.uploaded_ns = Some(stamp_written(ctx, sent_ns));
        let mut state = StreamState::default();
        let cut = Cut::new(cut, s.clock.origin_mono_ns() + sent_ns);
        let attempt = self.receive(ctx, rec, stream, &mut state, cut).await;
        if state.text_cut {
            ctx.counters.borrow_mut().texts_cut += 1;
        }
        attempt
    }

    /// Reads the response to the request just written on `stream`, into `rec`; the stream
    /// is kept for the next request when the response allows.
    async fn receive(
        &mut self,
        ctx: &Ctx,
        rec: &mut Record,
        mut stream: Stream,
        stream_state: &mut StreamState,
        mut cut: Cut,
    ) -> Attempt {
        let s = &ctx.setup;
        let mut got_bytes = false;
        loop {
            // A cut by time: the connection closes as `stream` drops here.
            let read = self.read_next(&mut stream, &cut, &ctx.read_bufs).await;
            let Some((res, buf, kernel_rt_ns)) = read else {
                return Attempt::Finished(Outcome::CancelledByClient);
            };
            self.buf = buf;
            let (at_ns, user_ns) = read_stamps(ctx, &stream, &res, kernel_rt_ns).await;
            let n = match res {
                Ok(n) => n,
                Err(_) if !got_bytes => return Attempt::Stale,
                Err(_) => return Attempt::Finished(io_outcome(&self.parser)),
            };
            let mut sink = RecordSink::new(
                rec,
                stream_state,
                at_ns,
                s.clock.origin_mono_ns(),
                s.plan.stream,
            )
            .with_user_stamp(user_ns);
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
            if !stream.keeps_read_buf() {
                // Parsed: the buffer goes back before the stream waits again.
                ctx.read_bufs.give(std::mem::take(&mut self.buf));
            }
            match step {
                Ok(Progress::NeedMore) if cut.reached(rec) => {
                    // Enough tokens arrived: the connection closes as `stream` drops here.
                    rec.done_ns = Some(at_ns);
                    rec.done_user_ns = user_ns;
                    return Attempt::Finished(Outcome::CancelledByClient);
                }
                Ok(Progress::NeedMore) => continue,
                Ok(Progress::Done { keep_alive }) => {
                    if keep_alive && n > 0 {
                        self.stream = Some(stream);
                    }
                    rec.done_ns = Some(at_ns);
                    rec.done_user_ns = user_ns;
                    credit_empty_text(rec);
                    return Attempt::Finished(final_outcome(rec, stream_state));
                }
                Err(e) => return Attempt::Finished(parse_outcome(e)),
            }
        }
    }
}

/// A read's stamp on the run clock, taken before any lane of this pass parses (see `pass`),
/// and the lane's own stamp of it when that is not the same: on a kernel-stamped connection
/// the kernel's receive stamp is the read's stamp and the lane's is kept beside it
/// (`rxstamp`).
async fn read_stamps(
    ctx: &Ctx,
    stream: &Stream,
    res: &std::io::Result<usize>,
    kernel_rt_ns: Option<u64>,
) -> (u64, Option<u64>) {
    let clock = &ctx.setup.clock;
    let own_ns = match ctx.driver_reads && stream.read_by_driver() {
        true => ctx.pass.completed(clock),
        false => ctx.pass.performed(clock).await,
    };
    match stream.io {
        Io::Stamped(_) => {
            let origin = clock.origin_mono_ns();
            let kernel = ctx
                .kernel_rx
                .read(res, kernel_rt_ns, origin + own_ns, origin);
            (kernel.unwrap_or(own_ns), Some(own_ns))
        }
        _ => (own_ns, None),
    }
}

/// The send's stamp, taken just before the write: in the record, the pass, and (the first
/// attempt only) the worker's live count of requests sent.
fn stamp_send(ctx: &Ctx, rec: &mut Record, first: bool) -> u64 {
    let s = &ctx.setup;
    let sent_ns = s.clock.now_ns();
    rec.sent_ns = Some(sent_ns);
    ctx.pass.sent(sent_ns);
    if first {
        s.shared.sent[s.index].0.fetch_add(1, Ordering::Relaxed);
    }
    sent_ns
}

/// The stamp of the request's last write's completion, never before its send. io_uring
/// completes the write before the driver returns: the pass's stamp (taken before any lane
/// of the pass parses, `pass`), as a read's; epoll's write ran in the lane just now.
fn stamp_written(ctx: &Ctx, sent_ns: u64) -> u64 {
    let clock = &ctx.setup.clock;
    let at = match ctx.driver_reads {
        true => ctx.pass.stamp(clock),
        false => clock.now_ns(),
    };
    at.max(sent_ns)
}

/// What a request carries, known before it is sent: its prompt tokens, body bytes, images
/// and audio.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Payload {
    pub input_tokens: u32,
    pub body_bytes: u64,
    pub images: u32,
    pub audio_ms: u32,
}

impl Payload {
    /// What `entry` carries as the catalog wrote it, with `more_body` bytes added to its
    /// body (a conversation turn's history), and the images and audio the catalog put in it.
    pub(super) fn of(entry: &Entry, more_body: usize) -> Payload {
        Payload {
            input_tokens: entry.input_tokens,
            body_bytes: (body_len(entry) + more_body) as u64,
            images: entry.images.into(),
            audio_ms: entry.audio_ms,
        }
    }
}

/// `entry`'s body length as the catalog built it: what follows the head's blank line (at
/// `head_end`, two bytes).
pub(super) fn body_len(entry: &Entry) -> usize {
    entry.byte_len() - entry.head_end as usize - 2
}

/// How one request the client aborts is cut (`--cancel-after`): at a deadline, or once
/// enough tokens arrived. An empty `Cut` (every other request) costs one test per read.
struct Cut {
    deadline_mono_ns: Option<u64>,
    tokens: Option<u32>,
    /// Events of the record already counted, and the tokens they carried.
    counted: usize,
    seen: u32,
}

impl Cut {
    fn new(after: Option<CancelAfter>, sent_mono_ns: u64) -> Self {
        let (deadline_mono_ns, tokens) = match after {
            None => (None, None),
            Some(CancelAfter::Time { ns }) => (Some(sent_mono_ns + ns), None),
            Some(CancelAfter::Tokens { n }) => (None, Some(n)),
        };
        Cut {
            deadline_mono_ns,
            tokens,
            counted: 0,
            seen: 0,
        }
    }

    /// Whether the record's tokens so far reach the cut (token cuts only).
    fn reached(&mut self, rec: &Record) -> bool {
        let Some(n) = self.tokens else {
            return false;
        };
        let fresh = rec.events.get(self.counted..).unwrap_or(&[]);
        self.seen = fresh
            .iter()
            .fold(self.seen, |acc, e| acc.saturating_add(e.tokens));
        self.counted = rec.events.len();
        self.seen >= n
    }
}

/// A read, or `None` when `deadline_mono_ns` comes first (the read is dropped, its buffer
/// with it). The timer is made on first need; without a timerfd, the 1 ms wheel.
async fn read_or_cut(
    stream: &mut Stream,
    buf: Vec<u8>,
    bufs: &ReadBufs,
    timer: &mut Option<Timer>,
    deadline_mono_ns: u64,
) -> Option<ReadResult> {
    if timer.is_none() {
        *timer = Timer::new().ok();
    }
    let read = stream.read(buf, bufs);
    match timer {
        Some(t) => {
            let cut = t.sleep_until(deadline_mono_ns);
            monoio::select! {
                r = read => Some(r),
                _ = cut => None,
            }
        }
        None => {
            let left = deadline_mono_ns.saturating_sub(crate::rt::clock::mono_ns());
            let cut = monoio::time::sleep(Duration::from_nanos(left));
            monoio::select! {
                r = read => Some(r),
                _ = cut => None,
            }
        }
    }
}

/// A plain connection whose reads will carry kernel receive stamps, or a plain one (counted)
/// when the socket refuses the option.
fn stamped(ctx: &Ctx, stream: TcpStream) -> Io {
    use std::os::fd::AsRawFd;
    match super::rxstamp::enable(stream.as_raw_fd()) {
        Ok(()) => Io::Stamped(stream),
        Err(e) => {
            ctx.kernel_rx.refused(&e);
            Io::Plain(stream)
        }
    }
}

fn count_read(ctx: &Ctx, rec: &mut Record, n: usize) {
    rec.reads = rec.reads.saturating_add(1);
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

/// One request as the lane asks for it: the job, what it carries, its warm-up rules.
#[derive(Clone, Copy)]
struct Ask {
    job: Job,
    payload: Payload,
    warmup_by: WarmupBy,
}

impl Ask {
    /// The record before any response: the request as scheduled, everything the response
    /// fills at its default, and the (empty) buffers of `spare`. The one place a record is
    /// begun, for the first attempt and for a retry alike.
    fn record(&self, ctx: &Ctx, spare: Spare) -> Record {
        let s = &ctx.setup;
        let (job, payload) = (self.job, self.payload);
        Record {
            id: job.id,
            endpoint: job.to as u16,
            worker: s.index as u16,
            warmup: self.warmup_by.any(),
            warmup_by: self.warmup_by,
            intended_ns: job.intended_ns,
            input_tokens: payload.input_tokens,
            input_source: s.catalog.input_source,
            body_bytes: payload.body_bytes,
            images: payload.images,
            audio_ms: payload.audio_ms,
            request_id: s.catalog.request_id(job.id),
            events: spare.events,
            text: spare.text,
            server_request_id: spare.server_request_id,
            failure: spare.failure,
            ..Default::default()
        }
    }
}
