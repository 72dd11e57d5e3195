//! A delay relay for tests (issue 40): listens on 127.0.0.1:0, opens a connection to the
//! server for each one it accepts, and forwards each direction after a delay drawn per read
//! (`fixed` + uniform jitter in [0, `jitter`]), in order (a chunk never overtakes the one
//! before it), optionally capped to `bytes_per_s`. Plain threads, no extra process: a reader
//! and a writer per direction, joined by a bounded channel (64 chunks of at most 16 KiB, so
//! a slow writer holds the reader back, as a full network path would).
//!
//! It terminates TCP: each side's kernel sees a loopback connection to the relay, so the
//! client's `TCP_INFO` round trip is the relay's first hop (microseconds), not the delay;
//! what the delay adds shows in the application's figures (TTFT = server's + round trip).
//! This kernel has no `netem`, which would delay the packets themselves.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// How each direction is delayed and capped.
#[derive(Clone, Copy, Debug)]
pub struct Path {
    /// One-way delay every chunk waits at least.
    pub fixed: Duration,
    /// Added to `fixed`, uniform in [0, jitter], drawn per chunk.
    pub jitter: Duration,
    /// Bandwidth cap per direction, bytes/s; `None`: none.
    pub bytes_per_s: Option<u64>,
}

/// A running relay; stops accepting when dropped (connections already relayed run on until
/// either side closes).
pub struct Relay {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    /// Connections accepted so far.
    pub accepted: Arc<AtomicU64>,
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop.
        let _ = TcpStream::connect(self.addr);
    }
}

/// Starts a relay to `server` delaying both directions as `path` says.
pub fn start(server: SocketAddr, path: Path) -> Relay {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the relay");
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let accepted = Arc::new(AtomicU64::new(0));
    let (stop2, accepted2) = (stop.clone(), accepted.clone());
    thread::spawn(move || {
        for (k, conn) in listener.incoming().enumerate() {
            if stop2.load(Ordering::Relaxed) {
                return;
            }
            let Ok(client) = conn else { continue };
            let Ok(upstream) = TcpStream::connect(server) else {
                continue;
            };
            accepted2.fetch_add(1, Ordering::Relaxed);
            let _ = client.set_nodelay(true);
            let _ = upstream.set_nodelay(true);
            let seed = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(k as u64 + 1);
            pump(
                client.try_clone().unwrap(),
                upstream.try_clone().unwrap(),
                path,
                seed,
            );
            pump(upstream, client, path, seed ^ 0xdead_beef);
        }
    });
    Relay {
        addr,
        stop,
        accepted,
    }
}

/// One direction: `from` → `to`, each read delivered at its delay.
fn pump(mut from: TcpStream, mut to: TcpStream, path: Path, seed: u64) {
    let (tx, rx): (SyncSender<(Instant, Vec<u8>)>, Receiver<_>) = sync_channel(64);
    thread::spawn(move || {
        let mut rng = seed | 1;
        let mut last = Instant::now();
        loop {
            let mut buf = vec![0u8; 16 * 1024];
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            buf.truncate(n);
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let u = (rng >> 11) as f64 / (1u64 << 53) as f64;
            let mut due = Instant::now() + path.fixed + path.jitter.mul_f64(u);
            if let Some(bw) = path.bytes_per_s {
                due = due.max(last + Duration::from_secs_f64(n as f64 / bw as f64));
            }
            // In order: never before the chunk ahead of it.
            due = due.max(last);
            last = due;
            if tx.send((due, buf)).is_err() {
                break;
            }
        }
    });
    thread::spawn(move || {
        for (due, buf) in rx {
            let now = Instant::now();
            if due > now {
                thread::sleep(due - now);
            }
            if to.write_all(&buf).is_err() {
                return;
            }
        }
        // The sender's side ended: pass the end on after the delay of what preceded it.
        let _ = to.shutdown(Shutdown::Write);
    });
}
