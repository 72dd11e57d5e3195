//! The simulator's connection, plain, plain with kernel stamps, or TLS (server side; the
//! client flow schedule → worker → http → sse → extract → record → collector → report talks
//! to it). `conn.rs` reads and writes through this and never needs to know which; the TLS
//! handshake happens once per connection in `accept`. It may not block or print.
//!
//! A stamped connection (`--kernel-stamps`, plain `http://` only: rustls reads the socket
//! itself) reads with its own `recvmsg`, whose control message carries the kernel's receive
//! stamp (`rt::tstamp`). monoio 0.2.4 cannot carry it: its TCP read is an io_uring
//! `Read`/`Recv` op (epoll: `recv`) without a control buffer, and its op trait is private. So
//! a stamped read waits for readiness through monoio (`readable`: an io_uring `PollAdd`; on
//! epoll the cached readiness, rechecked by `poll(0)`) and then calls `recvmsg(MSG_DONTWAIT)`
//! itself: one more syscall per read than a plain one. With transmit stamps on, each write
//! is followed by reads of the socket's error queue until its own stamp is there, and a read
//! that finds nothing empties that queue first: a non-empty error queue raises `POLLERR`,
//! which would end every readiness wait at once.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use monoio::buf::{IoBuf, IoBufMut};
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::TcpStream;
use monoio::BufResult;

use crate::plan::sim::KernelStamps;
use crate::rt::tstamp::{self, Queued};

/// Most error-queue entries read after one write: more than one write's stamps can be there
/// only when earlier ones came late.
const DRAIN_LIMIT: usize = 64;

pub(crate) enum SimStream {
    Plain(TcpStream),
    /// Plain, with the kernel's receive stamps on every read and, with `tx`, its transmit
    /// stamps after every write; `sent` counts the bytes written, whose last one's offset is
    /// the key of a write's stamp.
    Stamped {
        tcp: TcpStream,
        tx: bool,
        sent: u64,
    },
    #[cfg(feature = "tls")]
    Tls(Box<monoio_rustls::ServerTlsStream<TcpStream>>, RawFd),
}

impl SimStream {
    /// Wraps an accepted socket, shaking hands first when the simulator serves TLS, asking
    /// for kernel stamps when `stamps` says so and the connection is plain (a socket that
    /// refuses them serves unstamped).
    pub(crate) async fn accept(
        tcp: TcpStream,
        tls: Option<&Arc<crate::http::tls::ServerConfig>>,
        stamps: KernelStamps,
    ) -> io::Result<Self> {
        let Some(config) = tls else {
            let want = tstamp::Want {
                rx: stamps.rx(),
                tx: stamps.tx(),
            };
            if want.rx && tstamp::enable(tcp.as_raw_fd(), want).is_ok() {
                return Ok(SimStream::Stamped {
                    tcp,
                    tx: want.tx,
                    sent: 0,
                });
            }
            return Ok(SimStream::Plain(tcp));
        };
        #[cfg(not(feature = "tls"))]
        match **config {}
        #[cfg(feature = "tls")]
        {
            let fd = tcp.as_raw_fd();
            let acceptor = monoio_rustls::TlsAcceptor::from(config.clone());
            let stream = acceptor.accept(tcp).await.map_err(io::Error::from)?;
            Ok(SimStream::Tls(Box::new(stream), fd))
        }
    }

    /// Reads into `buf` after its bytes (growing nothing: the caller leaves spare
    /// capacity). Returns what the read returned, the buffer, and on a stamped connection
    /// the kernel's receive stamp (`CLOCK_REALTIME` ns) of the segment carrying the last
    /// byte read, when the kernel gave one.
    pub(crate) async fn read_more(
        &mut self,
        mut buf: Vec<u8>,
    ) -> (io::Result<usize>, Vec<u8>, Option<u64>) {
        let len = buf.len();
        let (res, slice) = match self {
            SimStream::Plain(s) => s.read(buf.slice_mut(len..)).await,
            SimStream::Stamped { tcp, tx, .. } => loop {
                if let Err(e) = tcp.readable(false).await {
                    return (Err(e), buf, None);
                }
                match tstamp::recv(tcp.as_raw_fd(), &mut buf) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        if *tx {
                            drain(tcp.as_raw_fd(), None);
                        }
                    }
                    Err(e) => return (Err(e), buf, None),
                    Ok((n, stamp)) => return (Ok(n), buf, stamp),
                }
            },
            #[cfg(feature = "tls")]
            SimStream::Tls(s, _) => s.read(buf.slice_mut(len..)).await,
        };
        (res, slice.into_inner(), None)
    }

    pub(crate) async fn write_all<T: IoBuf>(&mut self, buf: T) -> BufResult<usize, T> {
        match self {
            SimStream::Plain(s) => s.write_all(buf).await,
            SimStream::Stamped { tcp, sent, .. } => {
                let (res, buf) = tcp.write_all(buf).await;
                if let Ok(n) = res {
                    *sent += n as u64;
                }
                (res, buf)
            }
            #[cfg(feature = "tls")]
            SimStream::Tls(s, _) => s.write_all(buf).await,
        }
    }

    /// After a write: the kernel's transmit stamp (`CLOCK_REALTIME` ns) of the last byte
    /// written so far, when transmit stamps are on and the error queue already holds it
    /// (older stamps found on the way are dropped).
    pub(crate) fn sent_stamp(&mut self) -> Option<u64> {
        match self {
            SimStream::Stamped {
                tcp,
                tx: true,
                sent,
            } if *sent > 0 => drain(tcp.as_raw_fd(), Some((*sent - 1) as u32)),
            _ => None,
        }
    }
}

/// Reads the error queue until the transmit stamp keyed `want` is found (returned) or the
/// queue is empty (`want` `None`: empties it).
fn drain(fd: RawFd, want: Option<u32>) -> Option<u64> {
    for _ in 0..DRAIN_LIMIT {
        match tstamp::next_tx(fd) {
            Ok(Some(Queued::Sent { key, rt_ns })) if Some(key) == want => return Some(rt_ns),
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => return None,
        }
    }
    None
}

impl AsRawFd for SimStream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            SimStream::Plain(s) | SimStream::Stamped { tcp: s, .. } => s.as_raw_fd(),
            #[cfg(feature = "tls")]
            SimStream::Tls(_, fd) => *fd,
        }
    }
}
