//! One simulator connection (server side; the client flow schedule → worker → http → sse →
//! extract → record → collector → report is what talks to it): reads requests, keep-alive
//! and pipelining-safe (a read may end mid-request or hold several), and answers each in
//! turn on absolute deadlines (arrival + ttft + i·itl), coalescing whatever is due into one
//! write. Buffers are per connection and reused; formatting allocates nothing per event.
//! This module may not block the thread (other connections share it) beyond the timer
//! module's ≤ 10 µs spin, and may not let client input panic it.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;
use std::sync::Arc;

use monoio::net::TcpStream;

use super::board::TruthBoard;
use super::counter::bump;
use super::engine::{Engine, Seat};
use super::fault::FaultDraw;
use super::format::pool::{self, PoolReply};
use super::format::{self, Api, Pool, Reply, Status};
use super::mm_cache::{MmCache, MM_CACHE_ITEMS};
use super::request::{self, Head, HeadError, Job, PoolBatch, Route, ToolPick};
use super::stats::ThreadStats;
use super::tick::Ticker;
use super::tls_stream::SimStream;
use super::Settings;
use crate::plan::sim::{FaultKind, Flavor};
use crate::rt::clock::mono_ns;
use crate::rt::timer::{fire_now, Timer};

mod admit;
mod faulty;

/// First size of a connection's read buffer; it grows only for larger requests.
const READ_BUF_BYTES: usize = 16 * 1024;
/// Events due together are flushed early once this much is pending, so one response's
/// write buffer stays bounded however many tokens it asks for.
const FLUSH_BYTES: usize = 256 * 1024;

/// State shared by one thread's accept loop and its connections (never crosses threads).
pub(crate) struct Shared {
    pub settings: Arc<Settings>,
    pub stats: Arc<ThreadStats>,
    /// All threads' truth histograms, read only by `GET /sim/truth`.
    pub board: Arc<TruthBoard>,
    pub stopping: Cell<bool>,
    /// Open connections: socket fd and, once made, timer fd, so stop can wake them.
    pub live: RefCell<HashMap<u64, (RawFd, Option<RawFd>)>>,
    /// The thread's deadlines (`tick.rs`), made on first need.
    ticker: RefCell<Option<Rc<Ticker>>>,
    /// This replica's scheduler: slots, queue, KV cache (`engine/`).
    pub engine: RefCell<Engine>,
    /// This replica's multimodal cache (`mm_cache`).
    mm_cache: RefCell<MmCache>,
    next_conn: Cell<u64>,
    next_seq: Cell<u64>,
    /// Requests that drew for a tool call without an `x-request-id` to draw by.
    next_tool_draw: Cell<u64>,
    faults: FaultDraw,
}

impl Shared {
    pub(crate) fn new(
        settings: Arc<Settings>,
        stats: Arc<ThreadStats>,
        board: Arc<TruthBoard>,
        thread: u64,
    ) -> Self {
        Self {
            faults: FaultDraw::new(settings.faults.seed, thread),
            engine: RefCell::new(Engine::new(&settings.sim)),
            mm_cache: RefCell::new(MmCache::new(MM_CACHE_ITEMS)),
            settings,
            stats,
            board,
            stopping: Cell::new(false),
            live: RefCell::new(HashMap::new()),
            ticker: RefCell::new(None),
            next_conn: Cell::new(0),
            next_tool_draw: Cell::new(thread << 48),
            // Thread index in the top bits keeps response ids unique across threads.
            next_seq: Cell::new(thread << 48),
        }
    }

    /// Looks a request's images up in the multimodal cache, counting the queries and
    /// hits; an image beyond the hashed ones is a query that misses.
    fn mm_lookup(&self, media: &request::Media) {
        if media.images == 0 {
            return;
        }
        let mut cache = self.mm_cache.borrow_mut();
        let hits = media.hashes().iter().filter(|&&h| cache.query(h)).count();
        let m = &self.stats.prom;
        bump(&m.mm_queries, media.images.into());
        bump(&m.mm_hits, hits as u64);
    }

    /// Wakes every connection so it sees `stopping` and ends: reads get EOF, writes fail,
    /// timers fire now.
    pub(crate) fn wake_all_for_stop(&self) {
        self.stopping.set(true);
        for &(sock, timer) in self.live.borrow().values() {
            // SAFETY: `sock` is open while it is in `live` (removed before the socket drops).
            unsafe { libc::shutdown(sock, libc::SHUT_RDWR) };
            if let Some(timer) = timer {
                fire_now(timer);
            }
        }
        if let Some(ticker) = self.ticker.borrow().as_ref() {
            ticker.stop();
        }
    }

    /// The thread's ticker, started on first need.
    fn ticker(&self) -> io::Result<Rc<Ticker>> {
        let mut slot = self.ticker.borrow_mut();
        match slot.as_ref() {
            Some(t) => Ok(t.clone()),
            None => Ok(slot.insert(Ticker::start()?).clone()),
        }
    }
}

/// Deadlines closer than this are met by a short busy wait instead of the thread's timer: a
/// timer wake-up costs more than this and would land later.
const SPIN_NS: u64 = 10_000;

fn spin_until(deadline_ns: u64) {
    while mono_ns() < deadline_ns {
        std::hint::spin_loop();
    }
}

/// Why a connection ended early (anything but a clean close).
#[derive(Debug, thiserror::Error)]
enum ConnEnd {
    #[error("socket: {0}")]
    Io(#[from] io::Error),
    #[error("simulator stopping")]
    Stopped,
    /// An injected fault ended the connection on purpose.
    #[error("fault injected")]
    Faulted,
}

/// Serves one accepted connection until the peer closes, asks to close, or stop.
pub(crate) async fn serve(tcp: TcpStream, shared: Rc<Shared>) {
    if faulty::refused(&tcp, &shared) {
        return;
    }
    let settings = &shared.settings;
    let accepted = SimStream::accept(tcp, settings.tls.as_ref(), settings.kernel_stamps).await;
    let Ok(stream) = accepted else {
        bump(&shared.stats.io_errors, 1);
        return;
    };
    let id = shared.next_conn.get();
    shared.next_conn.set(id + 1);
    shared
        .live
        .borrow_mut()
        .insert(id, (stream.as_raw_fd(), None));
    let mut conn = Conn::new(stream, shared.clone(), id);
    let ended = conn.run().await;
    // Sockets that stop itself shut down are not errors.
    if matches!(ended, Err(ConnEnd::Io(_))) && !shared.stopping.get() {
        bump(&shared.stats.io_errors, 1);
    }
    // Out of `live` before the socket closes, so stop never touches a reused fd number.
    shared.live.borrow_mut().remove(&id);
    if let Some(ticker) = shared.ticker.borrow().as_ref() {
        ticker.forget(id);
    }
    drop(conn);
}

/// What `serve_next` did with the bytes buffered so far.
enum Next {
    Served { close: bool },
    NeedMore,
}

/// A completion request's parameters, owned (the request bytes are released before any
/// await); the model name is kept in `Conn::model`.
#[derive(Clone, Copy)]
struct Plan {
    api: Api,
    stream: bool,
    max_tokens: u32,
    include_usage: bool,
    continuous_usage: bool,
    prompt_tokens: u32,
    flavor: Flavor,
    reasoning_tokens: u32,
    /// The answer is a call to the tool named in `Conn::tool_name`.
    tool: bool,
}

/// Most floats one embeddings answer may hold (inputs × `--embedding-dim`): bounds its bytes
/// (about 22 a float) to some 90 MB.
const MAX_EMBEDDING_FLOATS: u64 = 1 << 22;

struct Conn {
    stream: SimStream,
    timer: Option<Timer>,
    shared: Rc<Shared>,
    id: u64,
    /// Unparsed request bytes start at 0.
    rbuf: Vec<u8>,
    wbuf: Vec<u8>,
    /// One event's (or body's) bytes before chunk framing.
    ev: Vec<u8>,
    model: String,
    /// The tool a tool-call answer calls (its name as the request gave it).
    tool_name: String,
    /// The pooling request being answered: its texts, reused request after request.
    pool: PoolBatch,
    /// Scratch for a rerank answer's order.
    order: Vec<(usize, f64)>,
    /// The request being answered came in on `/v1/messages`: errors in Anthropic's shape.
    anthropic: bool,
    /// The `x-request-id` line every response to the request now served carries (empty:
    /// none, `request_id_headers` off).
    echo: Vec<u8>,
    /// A `100 Continue` went out for the request now being received.
    continued: bool,
    /// When the last read returned: every request served before the next read was
    /// completed by it. The start of the `*_user` truth figures (`truth.rs`).
    read_ns: u64,
    /// The kernel's receive stamp of that read's last segment, on the same clock; `None`
    /// when it carried none. The start of the truth figures.
    read_kernel_ns: Option<u64>,
    /// When the last write returned, and when its last byte left by the kernel's transmit
    /// stamp (`None`: no stamp, or transmit stamps off).
    wrote_ns: u64,
    left_ns: Option<u64>,
    /// This connection's place in the engine, reused request after request.
    seat: Rc<RefCell<Seat>>,
    /// Close once the current response is out (`--flavor llama-cpp` after a stream).
    close_after: bool,
    /// `stop_reading`'s draw for the request being read, made when its head arrived
    /// without its whole body.
    stop_drawn: Option<bool>,
}

impl Conn {
    fn new(stream: SimStream, shared: Rc<Shared>, id: u64) -> Self {
        let (block_size, blocks) = (
            shared.settings.sim.block_size,
            shared.settings.sim.kv_cache_blocks,
        );
        Self {
            seat: Rc::new(RefCell::new(Seat::new(block_size, blocks))),
            close_after: false,
            stop_drawn: None,
            stream,
            timer: None,
            shared,
            id,
            rbuf: Vec::with_capacity(READ_BUF_BYTES),
            wbuf: Vec::with_capacity(4096),
            ev: Vec::with_capacity(512),
            model: String::new(),
            tool_name: String::new(),
            pool: PoolBatch::default(),
            order: Vec::new(),
            anthropic: false,
            echo: Vec::new(),
            continued: false,
            read_ns: 0,
            read_kernel_ns: None,
            wrote_ns: 0,
            left_ns: None,
        }
    }

    async fn run(&mut self) -> Result<(), ConnEnd> {
        loop {
            let (n, kernel_rt_ns) = self.fill().await?;
            if n == 0 {
                return Ok(());
            }
            // One stamp per read: every request completed by it arrived then — when the
            // kernel received its last segment, or, without that stamp, when the read
            // returned. The deadlines count from there.
            self.read_ns = mono_ns();
            self.read_kernel_ns = kernel_rt_ns.and_then(|k| on_mono(k, self.read_ns));
            let mut arrival_ns = self.read_kernel_ns.unwrap_or(self.read_ns);
            loop {
                match self.serve_next(arrival_ns).await? {
                    Next::Served { close: true } => return Ok(()),
                    Next::Served { close: false } => arrival_ns = mono_ns(),
                    Next::NeedMore => break,
                }
            }
        }
    }

    /// Reads more request bytes after those buffered; 0 means the peer closed. With them,
    /// the kernel's receive stamp of the read (`CLOCK_REALTIME`), if it carried one.
    async fn fill(&mut self) -> Result<(usize, Option<u64>), ConnEnd> {
        if self.shared.stopping.get() {
            return Err(ConnEnd::Stopped);
        }
        if self.rbuf.len() == self.rbuf.capacity() {
            self.rbuf.reserve(READ_BUF_BYTES);
        }
        let (res, buf, stamp) = self.stream.read_more(std::mem::take(&mut self.rbuf)).await;
        self.rbuf = buf;
        Ok((res?, stamp))
    }

    async fn serve_next(&mut self, arrival_ns: u64) -> Result<Next, ConnEnd> {
        let head = match request::parse_head(&self.rbuf) {
            Ok(Some(head)) => head,
            Ok(None) => return Ok(Next::NeedMore),
            Err(e) => return self.refuse_head(e).await,
        };
        let total = head.head_len + head.body_len;
        if self.rbuf.len() < total {
            if self.stops_reading(&head) {
                return self
                    .stop_reading()
                    .await
                    .map(|()| Next::Served { close: true });
            }
            self.rbuf.reserve(total - self.rbuf.len());
            if head.expect_continue && !self.continued {
                self.continued = true;
                self.wbuf
                    .extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                self.write_out().await?;
            }
            return Ok(Next::NeedMore);
        }
        self.continued = false;
        self.stop_drawn = None;
        bump(&self.shared.stats.requests, 1);
        let close = head.close;
        self.dispatch(head, arrival_ns).await?;
        self.rbuf.drain(..total);
        // llama.cpp closes after every stream although its head says keep-alive.
        let close = close || std::mem::take(&mut self.close_after);
        Ok(Next::Served { close })
    }

    async fn refuse_head(&mut self, e: HeadError) -> Result<Next, ConnEnd> {
        bump(&self.shared.stats.requests, 1);
        bump(&self.shared.stats.parse_errors, 1);
        let status = match e {
            HeadError::TooLarge => Status::HeadersTooLarge,
            HeadError::BodyTooLarge => Status::PayloadTooLarge,
            _ => Status::BadRequest,
        };
        self.reply_error(status, &e.to_string(), true).await?;
        Ok(Next::Served { close: true })
    }

    async fn dispatch(&mut self, head: Head, arrival_ns: u64) -> Result<(), ConnEnd> {
        if self.shared.settings.sim.request_id_headers {
            let value = head
                .request_id
                .and_then(|(at, n)| self.rbuf.get(at..at + n));
            let seq = self.shared.next_seq.get();
            self.shared.next_seq.set(seq.wrapping_add(1));
            format::request_id_line(&mut self.echo, value, seq);
        }
        self.anthropic = head.route == Route::Completion(Api::Messages);
        match head.route {
            Route::Completion(api) => self.completion(api, head, arrival_ns).await,
            Route::Pool(pool) => self.pooling(pool, head, arrival_ns).await,
            Route::Models => {
                let created = unix_s();
                let s = &self.shared.settings;
                // vLLM lists the window with the model; llama.cpp tells it in `/props`.
                let window = match s.sim.flavor {
                    Flavor::Vllm => s.sim.max_model_len,
                    Flavor::LlamaCpp => 0,
                };
                format::models_body(&mut self.ev, &s.model, created, window);
                self.reply_ev(Status::Ok, head.close).await
            }
            Route::Version | Route::Props => self.about(head.route, head.close).await,
            Route::Health => {
                self.ev.clear();
                self.reply_ev(Status::Ok, head.close).await
            }
            Route::Truth | Route::TruthReset => {
                // Off the serving path: allocates and takes the board's lock.
                let board = &self.shared.board;
                if head.route == Route::TruthReset {
                    board.reset(mono_ns());
                }
                self.ev.clear();
                let _ = serde_json::to_writer(&mut self.ev, &board.window(mono_ns()));
                self.reply_ev(Status::Ok, head.close).await
            }
            Route::Arrivals => {
                // Off the serving path: allocates the stamps and their JSON.
                self.ev.clear();
                let stamps = self.shared.board.arrival_stamps();
                let _ = serde_json::to_writer(&mut self.ev, &stamps);
                self.reply_ev(Status::Ok, head.close).await
            }
            Route::Metrics => {
                // Off the serving path: allocates the page.
                let board = &self.shared.board;
                let replicas: Vec<_> = board.threads.iter().map(|t| &t.prom).collect();
                let s = &self.shared.settings;
                self.ev.clear();
                super::metrics::render(&mut self.ev, s.sim.flavor, &s.model, &replicas);
                format::typed_response(
                    &mut self.wbuf,
                    Status::Ok,
                    format::PROMETHEUS_TEXT,
                    &self.ev,
                    head.close,
                );
                self.write_out().await
            }
            Route::NotFound | Route::MethodNotAllowed => {
                bump(&self.shared.stats.not_found, 1);
                let (status, msg) = match head.route {
                    Route::NotFound => (Status::NotFound, "no such route"),
                    _ => (Status::MethodNotAllowed, "method not allowed on this route"),
                };
                self.reply_error(status, msg, head.close).await
            }
        }
    }

    async fn completion(&mut self, api: Api, head: Head, arrival: u64) -> Result<(), ConnEnd> {
        let stats = &self.shared.stats;
        stats.arrivals.record(self.read_kernel_ns, self.read_ns);
        if self.read_kernel_ns.is_none() && self.shared.settings.kernel_stamps.rx() {
            bump(&stats.unstamped_reads, 1);
        }
        let body = &self.rbuf[head.head_len..head.head_len + head.body_len];
        let plan = match request::parse_body(body) {
            Ok(job) => {
                let key = head
                    .request_id
                    .and_then(|(at, n)| body_key(&self.rbuf, at, n));
                self.shared.mm_lookup(&job.media);
                let tool = pick_tool(&job.tool, api, key, &self.shared);
                self.tool_name.clear();
                self.tool_name.push_str(tool.unwrap_or_default());
                plan_of(
                    api,
                    &job,
                    tool.is_some(),
                    &mut self.model,
                    &self.shared.settings,
                )
            }
            Err(e) => {
                bump(&self.shared.stats.parse_errors, 1);
                let msg = e.to_string();
                return self.reply_error(Status::BadRequest, &msg, head.close).await;
            }
        };
        let window = self.shared.settings.sim.max_model_len;
        if window > 0 && u64::from(plan.prompt_tokens) + u64::from(plan.max_tokens) > window.into()
        {
            // Off the serving path (a refusal): the message allocates.
            let flavor = self.shared.settings.sim.flavor;
            let msg = format::context_error(flavor, window, plan.prompt_tokens, plan.max_tokens);
            return self.reply_error(Status::BadRequest, &msg, head.close).await;
        }
        if self.shared.engine.borrow().caches() {
            let mut seat = self.seat.borrow_mut();
            // The body parsed once already: this pass cannot fail on it.
            let _ = request::hash_prompt(body, &mut seat.chain);
        }
        let faults = &self.shared.settings.faults;
        if let Some(kind) = self.shared.faults.pick(faults, false) {
            return self.faulted(kind, plan, arrival, head.close).await;
        }
        if plan.stream {
            bump(&self.shared.stats.stream_requests, 1);
            self.stream_reply(plan, arrival, head.close).await
        } else {
            self.whole_reply(plan, arrival, head.close).await
        }
    }

    /// Streams `plan`: head + role + first content at admission + prefill + ttft, then one
    /// event per itl; each loop pass writes every event already due in one write.
    async fn stream_reply(&mut self, plan: Plan, arrival: u64, close: bool) -> Result<(), ConnEnd> {
        let Some(mut run) = self.admit(&plan, arrival, close).await? else {
            return Ok(());
        };
        let s = self.shared.settings.clone();
        let per = s.tokens_per_chunk;
        let events = plan.max_tokens.div_ceil(per);
        let (ttft_ns, itl_ns, _in_flight) = s.load.admit(s.ttft_ns, s.itl_ns);
        let first_ns = run.at_ns + run.prefill_ns + ttft_ns;
        let (model, tool) = self.take_names();
        let reply = reply_of(
            &plan,
            &model,
            &tool,
            self.next_seq(),
            run.cached_tokens,
            per,
        );
        let due = |event: u32| first_ns + u64::from(event) * itl_ns;
        let mut next = 0u32;
        let mut first_written = false;
        while next < events {
            self.sleep_until(due(next)).await?;
            let now = mono_ns();
            if next == 0 {
                format::stream_head(&mut self.wbuf, close, reply.flavor, &self.echo);
                self.push_open(&reply, now);
            }
            while next < events && due(next) <= now && self.wbuf.len() < FLUSH_BYTES {
                format::content_event(&mut self.ev, &reply, next * per, per, now);
                self.push_event();
                next += 1;
            }
            if next == events {
                self.push_tail(&reply, now);
            }
            if let Err(e) = self.write_out().await {
                if matches!(e, ConnEnd::Io(_)) {
                    bump(&self.shared.stats.aborted_mid_stream, 1);
                }
                return Err(e);
            }
            // The first write carries content (its deadline has passed); one pair of stamps
            // serves both figures when it is also the last.
            let wrote_ns = self.wrote_ns;
            run.wrote((next * per).min(plan.max_tokens), wrote_ns);
            if !first_written || next == events {
                let last = next == events;
                self.truth(!first_written, last);
                first_written = true;
                if last {
                    run.finished(wrote_ns);
                }
            }
        }
        self.put_names(model, tool);
        self.close_after = plan.flavor == Flavor::LlamaCpp;
        Ok(())
    }

    /// The non-streaming answer, sent when the last token would have been.
    async fn whole_reply(&mut self, plan: Plan, arrival: u64, close: bool) -> Result<(), ConnEnd> {
        let Some(mut run) = self.admit(&plan, arrival, close).await? else {
            return Ok(());
        };
        let s = self.shared.settings.clone();
        let last = u64::from(plan.max_tokens.saturating_sub(1));
        let (ttft_ns, itl_ns, _in_flight) = s.load.admit(s.ttft_ns, s.itl_ns);
        self.sleep_until(run.at_ns + run.prefill_ns + ttft_ns + last * itl_ns)
            .await?;
        let (model, tool) = self.take_names();
        let per = s.tokens_per_chunk;
        let reply = reply_of(
            &plan,
            &model,
            &tool,
            self.next_seq(),
            run.cached_tokens,
            per,
        );
        format::whole_body(&mut self.ev, &reply, mono_ns());
        self.put_names(model, tool);
        self.reply_ev(Status::Ok, close).await?;
        let now = mono_ns();
        run.wrote(plan.max_tokens, now);
        run.finished(now);
        Ok(())
    }

    /// A pooling request (embeddings, rerank, score): through the engine like a completion
    /// (its prompt tokens are every text it scores), then one answer at admission + prefill +
    /// ttft. Faults that need a stream to break are not drawn for it.
    async fn pooling(&mut self, pool: Pool, head: Head, arrival: u64) -> Result<(), ConnEnd> {
        let stats = &self.shared.stats;
        stats.arrivals.record(self.read_kernel_ns, self.read_ns);
        let body = &self.rbuf[head.head_len..head.head_len + head.body_len];
        let s = self.shared.settings.clone();
        let mut batch = std::mem::take(&mut self.pool);
        let checked = match request::parse_pool(body, &mut batch) {
            Ok(job) => {
                self.model.clear();
                self.model
                    .push_str(job.model.as_deref().unwrap_or(&s.model));
                let floats = batch.items.len() as u64 * u64::from(s.sim.embedding_dim);
                match pool::check(pool, &batch) {
                    Ok(_) if pool == Pool::Embeddings && floats > MAX_EMBEDDING_FLOATS => Err(
                        format!(
                            "{} inputs × --embedding-dim {} is over {MAX_EMBEDDING_FLOATS} floats;                              send fewer inputs",
                            batch.items.len(),
                            s.sim.embedding_dim
                        ),
                    ),
                    Ok(tokens) => Ok((tokens, job.base64, job.top_n, job.tei)),
                    Err(msg) => Err(msg.to_string()),
                }
            }
            Err(e) => Err(e.to_string()),
        };
        let (tokens, base64, top_n, tei) = match checked {
            Ok(fields) => fields,
            Err(msg) => {
                self.pool = batch;
                bump(&self.shared.stats.parse_errors, 1);
                return self.reply_error(Status::BadRequest, &msg, head.close).await;
            }
        };
        if self.shared.engine.borrow().caches() {
            let mut seat = self.seat.borrow_mut();
            let _ = request::hash_prompt(body, &mut seat.chain);
        }
        let plan = Plan {
            // The engine reads only the sizes; a pooling answer generates nothing.
            api: Api::Completions,
            stream: false,
            max_tokens: 0,
            include_usage: false,
            continuous_usage: false,
            prompt_tokens: tokens.clamp(1, u64::from(u32::MAX)) as u32,
            flavor: s.sim.flavor,
            reasoning_tokens: 0,
            tool: false,
        };
        let fault = self.shared.faults.pick(&s.faults, false);
        let served = match fault {
            Some(kind @ (FaultKind::Http500 | FaultKind::Http503 | FaultKind::Http429)) => {
                self.faulted(kind, plan, arrival, head.close).await
            }
            Some(kind @ (FaultKind::ResetBeforeHead | FaultKind::Refuse)) => {
                self.faulted(kind, plan, arrival, head.close).await
            }
            _ => {
                let at = match fault {
                    Some(FaultKind::StallHead) => {
                        bump(&self.shared.stats.faults, 1);
                        self.sleep_until(mono_ns() + s.faults.stall_ms * 1_000_000)
                            .await?;
                        mono_ns()
                    }
                    _ => arrival,
                };
                self.pool_reply(pool, plan, at, head.close, &batch, (base64, top_n, tei))
                    .await
            }
        };
        self.pool = batch;
        served
    }

    async fn pool_reply(
        &mut self,
        pool: Pool,
        plan: Plan,
        arrival: u64,
        close: bool,
        batch: &PoolBatch,
        (base64, top_n, tei): (bool, Option<u32>, bool),
    ) -> Result<(), ConnEnd> {
        let Some(mut run) = self.admit(&plan, arrival, close).await? else {
            return Ok(());
        };
        let s = self.shared.settings.clone();
        let (ttft_ns, _, _) = s.load.admit(s.ttft_ns, s.itl_ns);
        self.sleep_until(run.at_ns + run.prefill_ns + ttft_ns)
            .await?;
        let r = PoolReply {
            seq: self.next_seq(),
            created_s: unix_s(),
            model: &self.model,
            flavor: s.sim.flavor,
        };
        let tokens = u64::from(plan.prompt_tokens);
        let now = mono_ns();
        match pool {
            Pool::Embeddings => {
                let dim = s.sim.embedding_dim;
                pool::embeddings_body(&mut self.ev, &r, batch, tokens, dim, base64, now)
            }
            Pool::Rerank => {
                let order = &mut self.order;
                pool::rerank_body(&mut self.ev, &r, batch, tokens, top_n, tei, order, now)
            }
            Pool::Score => pool::score_body(&mut self.ev, &r, batch, tokens, now),
        }
        // TEI's bare array has no room for the stamp: it goes in a header of its own.
        let echoed = self.echo.len();
        if tei {
            format::stamp_line(&mut self.echo, now);
        }
        let sent = self.reply_ev(Status::Ok, close).await;
        self.echo.truncate(echoed);
        sent?;
        let now = mono_ns();
        run.wrote(0, now);
        run.finished(now);
        Ok(())
    }

    fn push_event(&mut self) {
        format::chunk(&mut self.wbuf, &self.ev);
        bump(&self.shared.stats.events, 1);
    }

    /// The events before the first content (chat's role event, Responses' and Messages'
    /// openings, a chat tool call's head).
    fn push_open(&mut self, reply: &Reply<'_>, now: u64) {
        let mut k = 0;
        while format::open_event(&mut self.ev, reply, k, now) {
            self.push_event();
            k += 1;
        }
    }

    /// The model name and tool name out of `self` while a reply borrows them.
    fn take_names(&mut self) -> (String, String) {
        (
            std::mem::take(&mut self.model),
            std::mem::take(&mut self.tool_name),
        )
    }

    fn put_names(&mut self, model: String, tool: String) {
        self.model = model;
        self.tool_name = tool;
    }

    fn push_tail(&mut self, reply: &Reply<'_>, now: u64) {
        if !reply.api.done_marker() {
            let mut k = 0;
            while format::close_event(&mut self.ev, reply, k, now) {
                self.push_event();
                k += 1;
            }
            format::stream_end(&mut self.wbuf);
            return;
        }
        if format::finish_event(&mut self.ev, reply, now) {
            self.push_event();
        }
        if reply.include_usage && format::usage_event(&mut self.ev, reply, now) {
            self.push_event();
        }
        format::stream_tail(&mut self.wbuf);
        bump(&self.shared.stats.events, 1);
    }

    async fn reply_error(&mut self, status: Status, msg: &str, close: bool) -> Result<(), ConnEnd> {
        match self.anthropic {
            true => format::messages_error_body(&mut self.ev, status.error_type(), msg),
            false => format::error_body(&mut self.ev, status, msg),
        }
        self.reply_ev(status, close).await
    }

    /// `GET /version` (vLLM flavour) or `GET /props` (llama.cpp flavour): what the server
    /// says it is; the other flavour's route is not found, as on the real servers.
    async fn about(&mut self, route: Route, close: bool) -> Result<(), ConnEnd> {
        let s = &self.shared.settings;
        match (route, s.sim.flavor) {
            (Route::Version, Flavor::Vllm) => format::version_body(&mut self.ev),
            (Route::Props, Flavor::LlamaCpp) => {
                let slots = s.sim.max_num_seqs.max(1);
                format::props_body(&mut self.ev, &s.model, s.sim.max_model_len, slots)
            }
            _ => return self.reply_error(Status::NotFound, "not found", close).await,
        }
        self.reply_ev(Status::Ok, close).await
    }

    /// Sends `self.ev` as a whole `Content-Length` body.
    async fn reply_ev(&mut self, status: Status, close: bool) -> Result<(), ConnEnd> {
        format::fixed_response(&mut self.wbuf, status, &self.ev, close, &self.echo);
        self.write_out().await
    }

    /// Records the truth of a stream's first content write and/or its last write, which
    /// just returned: from the request's arrival to its bytes' departure, by the kernel's
    /// stamps where there are some, and by the thread's own clock; and with the first, the
    /// thread's wake-up for the request.
    fn truth(&mut self, first: bool, last: bool) {
        let stats = &self.shared.stats;
        let arrived = self.read_kernel_ns.unwrap_or(self.read_ns);
        let left = self.left_ns.unwrap_or(self.wrote_ns);
        let (kernel, user) = (
            left.saturating_sub(arrived),
            self.wrote_ns.saturating_sub(self.read_ns),
        );
        if first {
            stats.ttft.record(kernel);
            stats.ttft_user.record(user);
            if let Some(k) = self.read_kernel_ns {
                stats.wake.record(self.read_ns - k);
            }
        }
        if last {
            stats.e2e.record(kernel);
            stats.e2e_user.record(user);
        }
        if self.left_ns.is_none() && self.shared.settings.kernel_stamps.tx() {
            bump(&stats.unstamped_writes, 1);
        }
    }

    /// Writes `wbuf` whole; stamps when the write returned (`wrote_ns`) and, with transmit
    /// stamps on, when its last byte left (`left_ns`).
    async fn write_out(&mut self) -> Result<(), ConnEnd> {
        // Counted when issued, so a peer that has the bytes also sees them counted.
        bump(&self.shared.stats.writes, 1);
        bump(&self.shared.stats.bytes_written, self.wbuf.len() as u64);
        let (res, buf) = self.stream.write_all(std::mem::take(&mut self.wbuf)).await;
        self.wrote_ns = mono_ns();
        self.left_ns = match res {
            Ok(_) => self
                .stream
                .sent_stamp()
                .and_then(|rt| on_mono(rt, self.wrote_ns)),
            Err(_) => None,
        };
        self.wbuf = buf;
        self.wbuf.clear();
        res?;
        Ok(())
    }

    /// Waits for an absolute deadline on the thread's ticker (`tick.rs`), woken with every
    /// connection due by then; one closer than `SPIN_NS` is met by a spin.
    async fn sleep_until(&mut self, deadline_ns: u64) -> Result<(), ConnEnd> {
        loop {
            if self.shared.stopping.get() {
                return Err(ConnEnd::Stopped);
            }
            if mono_ns() >= deadline_ns {
                return Ok(());
            }
            if deadline_ns - mono_ns() <= SPIN_NS {
                spin_until(deadline_ns);
                return Ok(());
            }
            self.shared.ticker()?.wait(self.id, deadline_ns).await;
        }
    }

    fn timer(&mut self) -> io::Result<&Timer> {
        let timer = match self.timer.take() {
            Some(timer) => timer,
            None => {
                let timer = Timer::new()?;
                if let Some(entry) = self.shared.live.borrow_mut().get_mut(&self.id) {
                    entry.1 = Some(timer.raw_fd());
                }
                timer
            }
        };
        Ok(self.timer.insert(timer))
    }

    fn next_seq(&self) -> u64 {
        let seq = self.shared.next_seq.get();
        self.shared.next_seq.set(seq.wrapping_add(1));
        seq
    }
}

/// The bytes a request's tool-call draw is keyed by: its `x-request-id` value.
fn body_key(buf: &[u8], at: usize, n: usize) -> Option<u64> {
    buf.get(at..at + n).map(request::text_hash)
}

/// Whether the request is answered with a tool call, and to which tool: always for
/// `required` or a named tool, never without tools or with `none`, else with
/// `--tool-call-rate`'s probability — drawn from the seed and the request's `x-request-id`
/// (else the thread's count of draws), so the same request draws the same way.
fn pick_tool<'a>(
    pick: &'a ToolPick<'_>,
    api: Api,
    key: Option<u64>,
    shared: &Shared,
) -> Option<&'a str> {
    if api == Api::Completions {
        return None;
    }
    let rate = shared.settings.sim.tool_call_rate;
    match pick {
        ToolPick::Never => None,
        ToolPick::Always(name) => Some(name),
        ToolPick::Auto(_) if rate <= 0.0 => None,
        ToolPick::Auto(name) => {
            let key = key.unwrap_or_else(|| {
                let n = shared.next_tool_draw.get();
                shared.next_tool_draw.set(n.wrapping_add(1));
                n
            });
            let h = crate::plan::workload::splitmix64(
                shared.settings.faults.seed ^ crate::plan::workload::splitmix64(key ^ TOOL_TAG),
            );
            let draw = (h >> 11) as f64 / (1u64 << 53) as f64;
            (draw < rate).then_some(name)
        }
    }
}

/// Keeps the tool draws apart from the fault draws of the same seed.
const TOOL_TAG: u64 = 0x7001_ca11_0000_0001;

fn plan_of(api: Api, job: &Job<'_>, tool: bool, model: &mut String, s: &Settings) -> Plan {
    let default_model = s.model.as_str();
    model.clear();
    model.push_str(job.model.as_deref().unwrap_or(default_model));
    Plan {
        api,
        stream: job.stream,
        max_tokens: job.max_tokens,
        include_usage: job.include_usage,
        continuous_usage: job.continuous_usage,
        prompt_tokens: (u64::from(job.prompt_tokens)
            + job
                .media
                .tokens(s.sim.image_tokens, s.sim.audio_tokens_per_s))
        .min(u64::from(u32::MAX)) as u32,
        flavor: s.sim.flavor,
        reasoning_tokens: match api {
            Api::Chat if !tool => s.sim.reasoning_tokens.min(job.max_tokens),
            _ => 0,
        },
        tool,
    }
}

fn reply_of<'a>(
    plan: &Plan,
    model: &'a str,
    tool: &'a str,
    seq: u64,
    cached_tokens: Option<u32>,
    tokens_per_event: u32,
) -> Reply<'a> {
    Reply {
        api: plan.api,
        seq,
        created_s: unix_s(),
        model,
        prompt_tokens: plan.prompt_tokens,
        completion_tokens: plan.max_tokens,
        include_usage: plan.include_usage,
        continuous_usage: plan.continuous_usage,
        cached_tokens,
        flavor: plan.flavor,
        reasoning_tokens: plan.reasoning_tokens,
        tool: plan.tool.then_some(tool),
        tokens_per_event,
    }
}

/// A kernel stamp (`CLOCK_REALTIME` ns, taken before `now_mono_ns`) on the monotonic clock:
/// `now_mono_ns` less how long ago it was by the realtime clock read now. Reading the
/// realtime clock beside each stamp, instead of an offset taken once, keeps a clock step
/// from skewing every later stamp; a stamp that comes out later than now (a step between
/// the two reads) is no stamp.
fn on_mono(stamp_rt_ns: u64, now_mono_ns: u64) -> Option<u64> {
    let ago = crate::rt::clock::realtime_ns().checked_sub(stamp_rt_ns)?;
    now_mono_ns.checked_sub(ago)
}

fn unix_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
