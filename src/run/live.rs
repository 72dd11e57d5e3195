//! Part of the run (wiring): `--metrics-listen`. A `std::net` listener on a thread of its own
//! serves, at `GET /metrics`, the last page the collector thread published
//! (`collector::exposition`: Prometheus text 0.0.4). The collector renders a page at most
//! every `PUBLISH_NS` and once more, final, when every record is in; the two threads share one
//! `Arc<str>` behind a mutex no worker ever takes. One connection at a time, its head bounded
//! (`MAX_HEAD_BYTES`) and read and written under `IO_TIMEOUT`, closed after the answer. The
//! listener opens before the first request is sent and closes when the run returns (after
//! `summary.json` is written). Never prints.

use super::workers::Started;
use crate::collector::exposition::LiveFacts;
use crate::collector::Collector;
use crate::worker::WorkerEnd;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::thread::JoinHandleExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The shortest time between two pages, ns: 4 a second at most.
const PUBLISH_NS: u64 = 250_000_000;
/// How often the listener looks for a connection and for the end of the run.
const ACCEPT_POLL: Duration = Duration::from_millis(20);
/// Deadline of each read and each write of one exchange.
const IO_TIMEOUT: Duration = Duration::from_secs(2);
/// Bound on a request's head.
const MAX_HEAD_BYTES: usize = 8 * 1024;

/// The listener, its thread and the collector's side of the page.
pub(super) struct LiveServer {
    /// Where it listens (port 0 resolved).
    pub addr: SocketAddr,
    page: Arc<Mutex<Arc<str>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// Run-clock time of the next page.
    next_ns: u64,
    buf: String,
    facts: LiveFacts,
}

impl LiveServer {
    /// Binds `addr` and starts serving an empty page; `facts` names the run (model, URL, id)
    /// and holds one `(cpu, 0)` per worker.
    pub fn start(addr: &str, facts: LiveFacts) -> io::Result<LiveServer> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let page: Arc<Mutex<Arc<str>>> = Arc::new(Mutex::new(Arc::from("")));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (page.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("ringbench-metrics".to_string())
            .spawn(move || serve(&listener, &p, &s))?;
        Ok(LiveServer {
            addr,
            page,
            stop,
            thread: Some(thread),
            next_ns: 0,
            buf: String::new(),
            facts,
        })
    }

    /// From the collector's loop: a new page when the last one is `PUBLISH_NS` old, with the
    /// workers' sends and CPU time read now.
    pub fn tick(&mut self, collector: &Collector, run: &Started, now_ns: u64) {
        if now_ns < self.next_ns {
            return;
        }
        self.next_ns = now_ns + PUBLISH_NS;
        self.facts.total_sent = run.shared.total_sent();
        for (slot, h) in self.facts.worker_cpu_ns.iter_mut().zip(&run.handles) {
            // An exited worker keeps its last reading.
            let ns = crate::rt::clock::other_thread_cpu_ns(h.as_pthread_t());
            slot.1 = slot.1.max(ns.unwrap_or(0));
        }
        self.publish(collector);
    }

    /// The final page, once every record is in and the workers are joined: their own CPU
    /// figure where it is above the last reading (a counter never goes back).
    pub fn finish(&mut self, collector: &Collector, total_sent: u64, ends: &[WorkerEnd]) {
        self.facts.total_sent = total_sent;
        let cpu = &mut self.facts.worker_cpu_ns;
        cpu.resize(ends.len(), (0, 0));
        for (slot, end) in cpu.iter_mut().zip(ends) {
            *slot = (end.stats.cpu, slot.1.max(end.stats.cpu_ns));
        }
        self.publish(collector);
    }

    fn publish(&mut self, collector: &Collector) {
        collector.exposition(&self.facts, &mut self.buf);
        let page: Arc<str> = Arc::from(self.buf.as_str());
        if let Ok(mut p) = self.page.lock() {
            *p = page;
        }
    }
}

impl Drop for LiveServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The listener's loop: one connection at a time until `stop`.
fn serve(listener: &TcpListener, page: &Mutex<Arc<str>>, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                // A client that goes away mid-answer costs its own answer only.
                let _ = answer(stream, page);
            }
            Err(_) => std::thread::sleep(ACCEPT_POLL),
        }
    }
}

/// Reads one request head and answers it: the page for `GET /metrics`, 404 for another
/// path, 405 for another method, 400 for a head that does not parse or is too long.
fn answer(mut stream: TcpStream, page: &Mutex<Arc<str>>) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut buf = [0u8; MAX_HEAD_BYTES];
    let mut n = 0;
    let route = loop {
        let got = stream.read(&mut buf[n..])?;
        if got == 0 {
            return Ok(());
        }
        n += got;
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf[..n]) {
            Ok(httparse::Status::Complete(_)) => break route(req.method, req.path),
            Ok(httparse::Status::Partial) if n < buf.len() => continue,
            _ => break Route::Bad,
        }
    };
    let (status, body): (&str, Arc<str>) = match route {
        Route::Page => ("200 OK", page.lock().map(|p| p.clone()).unwrap_or_default()),
        Route::NotFound => ("404 Not Found", Arc::from("only /metrics is served\n")),
        Route::Method => ("405 Method Not Allowed", Arc::from("GET /metrics only\n")),
        Route::Bad => ("400 Bad Request", Arc::from("bad request head\n")),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; version=0.0.4; charset=utf-8\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}

/// What a request head asks for.
#[derive(Debug, PartialEq, Eq)]
enum Route {
    Page,
    NotFound,
    Method,
    Bad,
}

fn route(method: Option<&str>, path: Option<&str>) -> Route {
    let path = path.unwrap_or("");
    let path = path.split('?').next().unwrap_or(path);
    match (method, path) {
        (Some("GET"), "/metrics") => Route::Page,
        (Some("GET"), _) => Route::NotFound,
        _ => Route::Method,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        answer
    }

    #[test]
    fn serves_the_last_page_at_metrics_only() {
        let mut server = LiveServer::start("127.0.0.1:0", LiveFacts::default()).unwrap();
        assert_ne!(server.addr.port(), 0);
        let c = Collector::new(&crate::plan::Plan::defaults(), None).unwrap();
        server.publish(&c);
        let page = get(server.addr, "GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n");
        assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "{page}");
        assert!(page.contains("text/plain; version=0.0.4"), "{page}");
        assert!(page.contains("\r\n\r\n# HELP ringbench_info "), "{page}");
        let other = get(server.addr, "GET /other HTTP/1.1\r\n\r\n");
        assert!(other.starts_with("HTTP/1.1 404 "), "{other}");
        let post = get(server.addr, "POST /metrics HTTP/1.1\r\n\r\n");
        assert!(post.starts_with("HTTP/1.1 405 "), "{post}");
        let bad = get(server.addr, "\x01\x02 nonsense\r\n\r\n");
        assert!(bad.starts_with("HTTP/1.1 400 "), "{bad}");
        let addr = server.addr;
        drop(server);
        assert!(TcpStream::connect(addr).is_err(), "closed when dropped");
    }
}
