//! The TLS of a build without the `tls` feature: the names the rest of the crate uses, and no
//! way to make a config. The types are uninhabited, so the code that would use one is never
//! reached and needs no switch of its own.

use super::TlsError;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Stands in for rustls's client config: there is none.
#[derive(Debug)]
pub enum ClientConfig {}

/// Stands in for rustls's server config: there is none.
#[derive(Debug)]
pub enum ServerConfig {}

/// Refused: this build has no TLS.
pub fn client_config(_: Option<&Path>, _: bool) -> Result<Arc<ClientConfig>, TlsError> {
    Err(TlsError::NotBuilt)
}

/// Refused: this build has no TLS.
pub fn server_config(_: &Path, _: &Path) -> Result<Arc<ServerConfig>, TlsError> {
    Err(TlsError::NotBuilt)
}

/// Never called: no client config exists to call it with.
pub fn probe(
    _: SocketAddr,
    _: &str,
    config: Arc<ClientConfig>,
    _: Duration,
) -> Result<std::net::TcpStream, TlsError> {
    match *config {}
}
