//! How the simulator serves an injected fault (server side; the client flow schedule →
//! worker → http → sse → extract → record → collector → report is what must survive it).
//! `fault.rs` decides which request gets which fault; this file writes the bytes (or the
//! silence, or the reset) that fault stands for. Faulted answers go out at once, without the
//! ttft/itl timing of normal ones, except where the fault is about time (stalls, slow head).
//! Mid-stream faults answer with a stream even when the request asked for none. Like the rest
//! of the connection code it may not block the thread nor panic on client input.

use super::*;

/// How long a reset waits after the bytes it follows, so the client has read them first and
/// sees a reset *after* the head rather than a connection that died before it.
const RESET_AFTER_BYTES_NS: u64 = 20_000_000;
/// `oversized_event`: twice the client's default event bound (1 MiB).
const OVERSIZED_EVENT_BYTES: usize = 2 << 20;
/// Pieces the head is trickled in by `slow_head`.
const SLOW_HEAD_PIECES: usize = 8;
/// `dribble`: one byte of body this often.
const DRIBBLE_GAP_NS: u64 = 10_000_000;
/// `stop_reading`: how often the silent connection checks whether the client left.
const PEER_CHECK_NS: u64 = 50_000_000;

/// `refuse`: decides per accepted connection; a refused one is reset before a byte is read.
pub(super) fn refused(stream: &TcpStream, shared: &Shared) -> bool {
    let refuse = shared.faults.pick(&shared.settings.faults, true) == Some(FaultKind::Refuse);
    if refuse {
        bump(&shared.stats.faults, 1);
        reset_on_close(stream.as_raw_fd());
    }
    refuse
}

/// `SO_LINGER` with a zero timeout: the close that follows sends RST instead of FIN.
fn reset_on_close(fd: RawFd) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: `fd` is an open socket owned by the caller; the option value is a valid,
    // correctly sized `linger`.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

impl Conn {
    /// Serves `plan` with fault `kind`. `Err(ConnEnd::Faulted)` ends the connection.
    pub(super) async fn faulted(
        &mut self,
        kind: FaultKind,
        plan: Plan,
        arrival: u64,
        close: bool,
    ) -> Result<(), ConnEnd> {
        bump(&self.shared.stats.faults, 1);
        let stall_ns = self.shared.settings.faults.stall_ms * 1_000_000;
        match kind {
            FaultKind::Refuse | FaultKind::ResetBeforeHead => self.reset(),
            FaultKind::Http500 | FaultKind::Http503 | FaultKind::Http429 => {
                http_error(&mut self.wbuf, kind, close);
                self.write_out().await
            }
            FaultKind::Html200 => {
                html_page(&mut self.wbuf, close);
                self.write_out().await
            }
            FaultKind::StallHead => {
                self.sleep_until(mono_ns() + stall_ns).await?;
                self.normal(plan, mono_ns(), close).await
            }
            FaultKind::CloseAfterResponse => {
                // The head says keep-alive; the close comes anyway (llama.cpp).
                self.normal(plan, arrival, false).await?;
                Err(ConnEnd::Faulted)
            }
            FaultKind::SlowHead => self.slow_head(plan).await,
            FaultKind::Dribble => self.dribble(close).await,
            _ => self.broken_stream(kind, plan, stall_ns).await,
        }
    }

    async fn normal(&mut self, plan: Plan, arrival: u64, close: bool) -> Result<(), ConnEnd> {
        if plan.stream {
            bump(&self.shared.stats.stream_requests, 1);
            self.stream_reply(plan, arrival, close).await
        } else {
            self.whole_reply(plan, arrival, close).await
        }
    }

    fn reset(&mut self) -> Result<(), ConnEnd> {
        reset_on_close(self.stream.as_raw_fd());
        Err(ConnEnd::Faulted)
    }

    /// A stream that starts well (head, role, two tokens) and then goes wrong as `kind` says.
    async fn broken_stream(
        &mut self,
        kind: FaultKind,
        plan: Plan,
        stall_ns: u64,
    ) -> Result<(), ConnEnd> {
        let (model, tool) = self.take_names();
        let per = self.shared.settings.tokens_per_chunk;
        let reply = reply_of(&plan, &model, &tool, self.next_seq(), None, per);
        self.stream_start(&plan, &reply, 2);
        let end = self.stream_fault(kind, &reply);
        self.put_names(model, tool);
        self.write_out().await?;
        match end {
            StreamEnd::Clean => Ok(()),
            StreamEnd::Close => Err(ConnEnd::Faulted),
            StreamEnd::Stall => {
                self.sleep_until(mono_ns() + stall_ns).await?;
                Err(ConnEnd::Faulted)
            }
            StreamEnd::Reset => {
                self.sleep_until(mono_ns() + RESET_AFTER_BYTES_NS).await?;
                self.reset()
            }
        }
    }

    /// The stream head, the chat role event and `tokens` one-token events, into `wbuf`.
    fn stream_start(&mut self, plan: &Plan, reply: &Reply<'_>, tokens: u32) {
        let now = mono_ns();
        format::stream_head(&mut self.wbuf, false, reply.flavor, &self.echo);
        self.push_open(reply, now);
        for i in 0..tokens.min(plan.max_tokens) {
            format::content_event(&mut self.ev, reply, i, 1, now);
            self.push_event();
        }
    }

    /// Appends the faulty part of a broken stream, in the reply's API's shape; says how the
    /// connection then ends.
    fn stream_fault(&mut self, kind: FaultKind, reply: &Reply<'_>) -> StreamEnd {
        let ev = &mut self.ev;
        ev.clear();
        let (open, close) = format::text_event_ends(reply.api);
        let mut coin = false;
        let end = match kind {
            FaultKind::ResetMidStream => return StreamEnd::Reset,
            FaultKind::StallMid => return StreamEnd::Stall,
            FaultKind::TruncatedChunk => {
                // Declares 1024 bytes, carries 15, then the connection closes.
                self.wbuf.extend_from_slice(b"400\r\n");
                self.wbuf.extend_from_slice(&open[..15]);
                return StreamEnd::Close;
            }
            FaultKind::ErrorEvent => {
                coin = self.shared.faults.coin();
                if !format::error_event(ev, reply, coin, mono_ns()) {
                    ev.extend_from_slice(
                        b"data: {\"error\":{\"message\":\"simulated failure mid-stream\",\
\"type\":\"InternalServerError\",\"param\":null,\"code\":500}}\n\n",
                    );
                }
                StreamEnd::Clean
            }
            FaultKind::BadJson | FaultKind::BadUtf8 | FaultKind::OversizedEvent => {
                ev.extend_from_slice(open);
                match kind {
                    // The text's string ends, then a comma and nothing.
                    FaultKind::BadJson => ev.extend_from_slice(b" x\",\n\n"),
                    FaultKind::BadUtf8 => ev.extend_from_slice(b"\xff\xfe\xfd"),
                    _ => ev.resize(ev.len() + OVERSIZED_EVENT_BYTES, b'a'),
                }
                if kind != FaultKind::BadJson {
                    ev.extend_from_slice(close);
                }
                StreamEnd::Clean
            }
            _ => StreamEnd::Clean,
        };
        self.push_event();
        match kind {
            // Responses and Messages end at their error (no closing events); half of chat's
            // error events end the stream without `[DONE]`, as some servers do.
            FaultKind::ErrorEvent if !reply.api.done_marker() || coin => {
                format::stream_end(&mut self.wbuf)
            }
            _ => self.push_tail(reply, mono_ns()),
        }
        end
    }

    /// `dribble`: the stream's head, then one body byte every 10 ms (each its own chunk, the
    /// bytes making SSE comment lines `:\n`), until a write fails (the client left) or the
    /// simulator stops.
    async fn dribble(&mut self, close: bool) -> Result<(), ConnEnd> {
        format::stream_head(
            &mut self.wbuf,
            close,
            self.shared.settings.sim.flavor,
            &self.echo,
        );
        self.write_out().await?;
        let mut colon = true;
        loop {
            self.sleep_until(mono_ns() + DRIBBLE_GAP_NS).await?;
            let chunk: &[u8] = if colon { b"1\r\n:\r\n" } else { b"1\r\n\n\r\n" };
            self.wbuf.extend_from_slice(chunk);
            colon = !colon;
            self.write_out().await?;
        }
    }

    /// Whether the request whose head is read, and not yet its whole body, is one the
    /// simulator stops reading now: drawn once per request, and due once half the body is in.
    pub(super) fn stops_reading(&mut self, head: &request::Head) -> bool {
        let drawn = *self.stop_drawn.get_or_insert_with(|| {
            self.shared
                .faults
                .stops_reading(&self.shared.settings.faults)
        });
        drawn && self.rbuf.len() >= head.head_len + head.body_len / 2
    }

    /// `stop_reading`: reads nothing more and answers nothing; checks every 50 ms whether the
    /// client is still there (`TCP_INFO`'s state: a closed or reset peer ends it), so a
    /// connection the client gave up on does not stay parked.
    pub(super) async fn stop_reading(&mut self) -> Result<(), ConnEnd> {
        bump(&self.shared.stats.faults, 1);
        let fd = self.stream.as_raw_fd();
        loop {
            self.sleep_until(mono_ns() + PEER_CHECK_NS).await?;
            let state = crate::rt::netcount::tcp_info(fd).map(|i| i.state);
            if state != Some(crate::rt::netcount::TCP_ESTABLISHED) {
                return Err(ConnEnd::Faulted);
            }
        }
    }

    /// The head trickled out over `slow_head_ms`, then the whole answer at once.
    async fn slow_head(&mut self, plan: Plan) -> Result<(), ConnEnd> {
        let head = format::STREAM_HEAD;
        let total_ns = self.shared.settings.faults.slow_head_ms * 1_000_000;
        let piece = head.len().div_ceil(SLOW_HEAD_PIECES);
        let start = mono_ns();
        for (i, bytes) in head.chunks(piece).enumerate() {
            self.sleep_until(start + total_ns * (i as u64 + 1) / SLOW_HEAD_PIECES as u64)
                .await?;
            self.wbuf.extend_from_slice(bytes);
            self.write_out().await?;
        }
        let (model, tool) = self.take_names();
        let per = self.shared.settings.tokens_per_chunk;
        let reply = reply_of(&plan, &model, &tool, self.next_seq(), None, per);
        let now = mono_ns();
        self.push_open(&reply, now);
        for first in (0..plan.max_tokens).step_by(per as usize) {
            format::content_event(&mut self.ev, &reply, first, per, now);
            self.push_event();
        }
        self.push_tail(&reply, now);
        self.put_names(model, tool);
        self.write_out().await
    }
}

enum StreamEnd {
    /// The stream was ended by its framing; the connection stays usable.
    Clean,
    Close,
    Stall,
    Reset,
}

/// `html_200`: what a proxy in front of the server answers with, a 200 HTML page.
const HTML_PAGE: &str =
    "<!DOCTYPE html>\n<html><head><title>Sign in - Example Proxy</title></head>\n\
<body><h1>Sign in</h1><p>Your session has expired.</p></body></html>\n";

fn html_page(out: &mut Vec<u8>, close: bool) {
    out.extend_from_slice(
        b"HTTP/1.1 200 OK\r\nserver: ringbench-sim\r\ncontent-type: text/html; charset=utf-8\r\n",
    );
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(format!("content-length: {}\r\n\r\n", HTML_PAGE.len()).as_bytes());
    out.extend_from_slice(HTML_PAGE.as_bytes());
}

/// An OpenAI-style error answer; 429 and 503 carry `Retry-After` as real servers' do.
fn http_error(out: &mut Vec<u8>, kind: FaultKind, close: bool) {
    let (line, code, retry): (&[u8], &[u8], bool) = match kind {
        FaultKind::Http429 => (b"HTTP/1.1 429 Too Many Requests\r\n", b"429", true),
        FaultKind::Http503 => (b"HTTP/1.1 503 Service Unavailable\r\n", b"503", true),
        _ => (b"HTTP/1.1 500 Internal Server Error\r\n", b"500", false),
    };
    let mut body = Vec::with_capacity(128);
    body.extend_from_slice(b"{\"error\":{\"message\":\"simulated error\",\"type\":\"ServerError\",\"param\":null,\"code\":");
    body.extend_from_slice(code);
    body.extend_from_slice(b"}}");
    out.extend_from_slice(line);
    out.extend_from_slice(b"server: ringbench-sim\r\ncontent-type: application/json\r\n");
    if retry {
        out.extend_from_slice(b"retry-after: 1\r\n");
    }
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(format!("content-length: {}\r\n\r\n", body.len()).as_bytes());
    out.extend_from_slice(&body);
}
