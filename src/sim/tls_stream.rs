//! The simulator's connection, plain or TLS (server side; the client flow schedule → worker
//! → http → sse → extract → record → collector → report talks to it). `conn.rs` reads and
//! writes through this and never needs to know which; the TLS handshake happens once per
//! connection in `accept`. It may not block or print.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use monoio::buf::{IoBuf, IoBufMut};
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::TcpStream;
use monoio::BufResult;

pub(crate) enum SimStream {
    Plain(TcpStream),
    #[cfg(feature = "tls")]
    Tls(Box<monoio_rustls::ServerTlsStream<TcpStream>>, RawFd),
}

impl SimStream {
    /// Wraps an accepted socket, shaking hands first when the simulator serves TLS.
    pub(crate) async fn accept(
        tcp: TcpStream,
        tls: Option<&Arc<crate::http::tls::ServerConfig>>,
    ) -> io::Result<Self> {
        let Some(config) = tls else {
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

    pub(crate) async fn read<T: IoBufMut>(&mut self, buf: T) -> BufResult<usize, T> {
        match self {
            SimStream::Plain(s) => s.read(buf).await,
            #[cfg(feature = "tls")]
            SimStream::Tls(s, _) => s.read(buf).await,
        }
    }

    pub(crate) async fn write_all<T: IoBuf>(&mut self, buf: T) -> BufResult<usize, T> {
        match self {
            SimStream::Plain(s) => s.write_all(buf).await,
            #[cfg(feature = "tls")]
            SimStream::Tls(s, _) => s.write_all(buf).await,
        }
    }
}

impl AsRawFd for SimStream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            SimStream::Plain(s) => s.as_raw_fd(),
            #[cfg(feature = "tls")]
            SimStream::Tls(_, fd) => *fd,
        }
    }
}
