//! The TLS of a build with the `tls` feature: rustls with the ring provider.

use super::failure::handshake_failure;
use super::verify::CaCertVerifier;
use super::TlsError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring, verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
pub use rustls::{ClientConfig, ServerConfig};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring::default_provider())
}

/// The client config: system roots, or `cacert`'s only (each also trusted as itself when a
/// server presents it: `verify.rs`); `insecure` verifies nothing.
pub fn client_config(cacert: Option<&Path>, insecure: bool) -> Result<Arc<ClientConfig>, TlsError> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let mut config = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider())))
            .with_no_client_auth()
    } else {
        let (roots, exact) = roots(cacert)?;
        let verifier = CaCertVerifier::new(roots, exact, provider())
            .map_err(|e| TlsError::Config(e.to_string()))?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth()
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The roots for WebPKI, and the `--cacert` certificates to trust as themselves.
type Roots = (RootCertStore, Vec<CertificateDer<'static>>);

fn roots(cacert: Option<&Path>) -> Result<Roots, TlsError> {
    let mut store = RootCertStore::empty();
    let mut exact = Vec::new();
    match cacert {
        Some(path) => {
            let bad = |why: String| TlsError::CaCert {
                path: path.display().to_string(),
                why,
            };
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| bad(e.to_string()))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| bad(e.to_string()))?;
            if certs.is_empty() {
                return Err(bad("no certificate in it".into()));
            }
            for c in certs {
                store.add(c.clone()).map_err(|e| bad(e.to_string()))?;
                exact.push(c);
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                let why = found
                    .errors
                    .first()
                    .map_or("none found".into(), |e| e.to_string());
                return Err(TlsError::NoRoots(why));
            }
        }
    }
    Ok((store, exact))
}

/// The server name to send and verify: the URL's host (a name or an IP address).
pub fn server_name(host: &str) -> Result<ServerName<'static>, TlsError> {
    ServerName::try_from(host.to_string()).map_err(|_| TlsError::Name(host.to_string()))
}

/// The simulator's config from a PEM certificate chain and private key.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, TlsError> {
    let file_err = |flag, path: &Path, why: String| TlsError::ServerFile {
        flag,
        path: path.display().to_string(),
        why,
    };
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| file_err("--tls-cert", cert, e.to_string()))?;
    if chain.is_empty() {
        return Err(file_err("--tls-cert", cert, "no certificate in it".into()));
    }
    let key_der =
        PrivateKeyDer::from_pem_file(key).map_err(|e| file_err("--tls-key", key, e.to_string()))?;
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .map_err(|e| file_err("--tls-key", key, e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// One blocking handshake before the run, so that a certificate problem is one clear error.
/// Returns the open session (the caller may ask it for `/v1/models`).
pub fn probe(
    addr: SocketAddr,
    host: &str,
    config: Arc<ClientConfig>,
    timeout: Duration,
) -> Result<impl Read + Write, TlsError> {
    // A connect that fails has no certificate to blame (kind `Other`); a refused handshake
    // is read for its kind and fix.
    let fail = |e: std::io::Error| handshake_failure(host, addr.port(), &e);
    let name = server_name(host)?;
    let mut tcp = TcpStream::connect_timeout(&addr, timeout).map_err(fail)?;
    let _ = tcp.set_read_timeout(Some(timeout));
    let _ = tcp.set_write_timeout(Some(timeout));
    let mut conn =
        rustls::ClientConnection::new(config, name).map_err(|e| fail(std::io::Error::other(e)))?;
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp).map_err(fail)?;
    }
    Ok(rustls::StreamOwned::new(conn, tcp))
}

/// `--insecure`: accepts any certificate, still checks the handshake signatures.
#[derive(Debug)]
struct NoVerify(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
