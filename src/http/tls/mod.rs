//! TLS for `https://` targets and for the simulator's `--tls-cert/--tls-key`, through rustls
//! with the ring provider (configs are built with `builder_with_provider`: the plain
//! `builder()` panics when rcgen's ring and ours are both compiled in). This file builds the
//! configs and checks the server once before the run (a clear message for a wrong host or
//! an expired certificate, instead of every request failing as `connect`); the handshake per
//! connection happens in the worker. It runs before the workers start and never on the hot
//! path, and it may not print.
//!
//! Roots: the operating system's store, read with `rustls-native-certs` (no network, and it
//! honours what the host trusts, corporate CAs included, which a compiled-in Mozilla list
//! like `webpki-roots` would not). `--cacert FILE` replaces them with a private CA, and a
//! `--cacert` certificate that a server presents as its own is trusted as exactly that
//! certificate, name and dates still checked (`verify.rs`), as curl does with a self-signed
//! `openssl req -x509` certificate. A handshake refused before the run is a `TlsError` of a
//! `HandshakeKind`, with what to do about it (`failure.rs`).
//!
//! Without the `tls` feature (`off`), the same names exist but no config can be made: every
//! way in refuses with `TlsError::NotBuilt`, so nothing past it needs its own switch.

#[cfg(feature = "tls")]
mod failure;
#[cfg(not(feature = "tls"))]
mod off;
#[cfg(feature = "tls")]
mod on;
#[cfg(feature = "tls")]
mod verify;
#[cfg(all(test, feature = "tls"))]
mod verify_tests;

#[cfg(feature = "tls")]
pub use failure::handshake_failure;
#[cfg(not(feature = "tls"))]
pub use off::*;
#[cfg(feature = "tls")]
pub use on::*;

/// Why TLS could not be set up for a target or for the simulator.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The `--cacert` file cannot be read or holds no usable certificate.
    #[error(
        "--cacert {path}: {why} (give a PEM file with the CA certificate, or with the \
         server's own self-signed one)"
    )]
    CaCert {
        /// The file, as given.
        path: String,
        /// What is wrong with it.
        why: String,
    },
    /// The system's certificate store gave no usable root certificate; the text says why.
    #[error("no trusted root certificates found on this system ({0}); give --cacert FILE")]
    NoRoots(String),
    /// The simulator's `--tls-cert` or `--tls-key` file cannot be used.
    #[error("{flag} {path}: {why}")]
    ServerFile {
        /// `--tls-cert` or `--tls-key`.
        flag: &'static str,
        /// The file, as given.
        path: String,
        /// What is wrong with it.
        why: String,
    },
    /// The URL's host is not a valid TLS server name.
    #[error("'{0}' is not a valid TLS server name (check --url)")]
    Name(String),
    /// The handshake before the run failed (wrong host name, untrusted or expired
    /// certificate, no TLS on the port, …).
    #[error("TLS handshake with {host} failed: {why}; {fix}")]
    Handshake {
        /// The host the handshake was made with.
        host: String,
        /// What kind of refusal it was.
        kind: HandshakeKind,
        /// What failed, as rustls put it.
        why: String,
        /// What to do about it (it always ends naming `--insecure`).
        fix: String,
    },
    /// rustls refused the configuration.
    #[error("TLS setup failed: {0}")]
    Config(String),
    /// This build has no `tls` feature.
    #[error(
        "https:// and --tls-cert need TLS, and this ringbench was built without its `tls` \
         feature (on by default): rebuild with it, or use http://"
    )]
    NotBuilt,
}

/// Why a handshake was refused, as far as the client can tell: each kind has its own fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandshakeKind {
    /// The certificate is signed by no CA the client trusts (the system's roots, or
    /// `--cacert`'s): give the CA that issued it, or the server's own certificate, with
    /// `--cacert`.
    UnknownIssuer,
    /// The certificate does not name the URL's host: connect by a name it carries, or
    /// give the server a certificate whose subjectAltName holds the host.
    WrongName,
    /// The certificate's notAfter has passed: renew it.
    Expired,
    /// The certificate's notBefore is still ahead: check the clocks, or wait.
    NotYetValid,
    /// The server presents a CA certificate (`CA:TRUE`) as its own, and it is not in
    /// `--cacert`: give that very certificate with `--cacert` to trust it as itself.
    CaAsServer,
    /// The certificate does not allow use by a TLS server (its extended key usage).
    WrongUsage,
    /// Anything else: the port serves no TLS, the connection was reset, a protocol error, …
    Other,
}
