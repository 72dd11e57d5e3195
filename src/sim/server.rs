//! The simulator's listener threads (server side; the client flow schedule → worker → http
//! → sse → extract → record → collector → report runs elsewhere): one OS thread per CPU,
//! pinned, each with its own monoio runtime and its own `SO_REUSEPORT` listener, so the
//! kernel spreads connections and nothing is shared between threads but counters. This
//! module may not share state across threads except through `ThreadStats` and the stop bell.

use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use monoio::net::{ListenerOpts, TcpListener, TcpStream};

use super::board::TruthBoard;
use super::conn::{self, Shared};
use super::counter::bump;
use super::stats::ThreadStats;
use super::Settings;
use crate::plan::IoDriver;
use crate::rt::clock::thread_cpu_ns;
use crate::rt::driver::{DriverUsed, Ring};
use crate::rt::timer::{lower_timer_slack, BellSeed, BellWait};

/// How long stop waits for a thread's connections to notice and end.
const DRAIN_LIMIT: Duration = Duration::from_millis(500);

/// Everything a listener thread starts from.
pub(crate) struct ThreadSetup {
    pub index: u64,
    pub settings: Arc<Settings>,
    pub cpu: Option<usize>,
    pub addr: SocketAddr,
    pub driver: IoDriver,
    pub stop: BellSeed,
    pub stats: Arc<ThreadStats>,
    pub ready: mpsc::Sender<io::Result<(SocketAddr, DriverUsed)>>,
    /// Every thread's truth histograms, for `GET /sim/truth`.
    pub board: Arc<TruthBoard>,
}

/// The thread body: pin, build the runtime, listen, report ready, serve until stopped.
pub(crate) fn run_thread(setup: ThreadSetup) {
    if let Some(cpu) = setup.cpu {
        if !core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
            let msg = format!("cannot pin the simulator thread to CPU {cpu}");
            let _ = setup.ready.send(Err(io::Error::other(msg)));
            return;
        }
    }
    lower_timer_slack();
    let (mut rt, used) = match crate::rt::driver::build(setup.driver, Ring::Sleeping) {
        Ok(built) => built,
        Err(e) => {
            let _ = setup.ready.send(Err(e));
            return;
        }
    };
    let stats = setup.stats.clone();
    rt.block_on(listen_and_serve(setup, used));
    stats
        .final_cpu_ns
        .store(thread_cpu_ns(), std::sync::atomic::Ordering::Relaxed);
}

async fn listen_and_serve(setup: ThreadSetup, used: DriverUsed) {
    let opts = ListenerOpts::new().reuse_port(true).backlog(4096);
    // Everything that can fail happens before the thread says it is ready, so a listener
    // that could never accept is an error of `start`, not a thread that silently serves
    // nothing.
    let bound = TcpListener::bind_with_config(setup.addr, &opts).and_then(|listener| {
        set_nonblocking(&listener, true)?;
        let addr = listener.local_addr()?;
        Ok((listener, addr, setup.stop.into_wait()?))
    });
    let (listener, stop) = match bound {
        Ok((listener, addr, stop)) => {
            if setup.ready.send(Ok((addr, used))).is_err() {
                return;
            }
            (listener, stop)
        }
        Err(e) => {
            let _ = setup.ready.send(Err(e));
            return;
        }
    };
    let shared = Rc::new(Shared::new(
        setup.settings,
        setup.stats,
        setup.board,
        setup.index,
    ));
    accept_until_stopped(&listener, &stop, &shared, used).await;
    drop(listener);
    drain(&shared).await;
}

async fn accept_until_stopped(
    listener: &TcpListener,
    stop: &BellWait,
    shared: &Rc<Shared>,
    used: DriverUsed,
) {
    let mut stopped = std::pin::pin!(stop.wait());
    loop {
        monoio::select! {
            _ = &mut stopped => return,
            accepted = accept_ready(listener, used) => match accepted {
                Ok(stream) => {
                    bump(&shared.stats.connections, 1);
                    // Small writes are the product: never let Nagle hold an event back.
                    let _ = stream.set_nodelay(true);
                    monoio::spawn(conn::serve(stream, shared.clone()));
                }
                Err(_) => {
                    // Usually out of fds: back off a tick instead of spinning on accept.
                    bump(&shared.stats.accept_errors, 1);
                    monoio::time::sleep(Duration::from_millis(1)).await;
                }
            },
        }
    }
}

/// One connection, accepted with a plain non-blocking `accept4` once the listener is
/// readable. monoio's `accept` is an io_uring accept op, which on this kernel completed up
/// to a scheduler tick (4 ms) late at a run's start, and the first requests' TTFT with it.
/// The listener is non-blocking; the connection is blocking on io_uring, as its own accept
/// op would give it (the ring's ops expect that), non-blocking for epoll.
async fn accept_ready(listener: &TcpListener, used: DriverUsed) -> io::Result<TcpStream> {
    use std::os::fd::{AsRawFd, FromRawFd};
    loop {
        let flags = match used {
            DriverUsed::IoUring => libc::SOCK_CLOEXEC,
            DriverUsed::Epoll => libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        };
        // SAFETY: accept4 on our listening socket with null address pointers (not wanted).
        let fd = unsafe {
            libc::accept4(
                listener.as_raw_fd(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                flags,
            )
        };
        if fd >= 0 {
            // SAFETY: `fd` is a fresh connected socket owned by nothing else.
            let std_stream = unsafe { std::net::TcpStream::from_raw_fd(fd) };
            return TcpStream::from_std(std_stream);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::WouldBlock {
            return Err(e);
        }
        listener.readable(false).await?;
    }
}

fn set_nonblocking(listener: &TcpListener, on: bool) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = listener.as_raw_fd();
    // SAFETY: F_GETFL/F_SETFL on our own open listening socket.
    unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        let fl = if on {
            fl | libc::O_NONBLOCK
        } else {
            fl & !libc::O_NONBLOCK
        };
        if fl < 0 || libc::fcntl(fd, libc::F_SETFL, fl) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Wakes every connection and gives them a bounded time to end.
async fn drain(shared: &Rc<Shared>) {
    shared.wake_all_for_stop();
    let ticks = DRAIN_LIMIT.as_millis() as u32;
    for _ in 0..ticks {
        if shared.live.borrow().is_empty() {
            return;
        }
        monoio::time::sleep(Duration::from_millis(1)).await;
    }
}
