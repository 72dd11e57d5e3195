//! The client's certificate check for `https://` (built by `on.rs`; every handshake goes
//! through it: the probe before the run, the workers' connections and the `/metrics`
//! scraper). It wraps rustls's WebPKI verifier and changes one thing: a certificate given in
//! `--cacert` that a server presents as its own end-entity certificate (byte for byte the
//! same DER) is trusted as exactly that certificate, its host name, dates and extended key
//! usage still checked. That is the everyday `openssl req -x509` certificate, which carries
//! `CA:TRUE` and which WebPKI refuses as `CaUsedAsEndEntity` while curl takes it.
//!
//! It may not accept anything else the WebPKI verifier refuses: every other chain, and every
//! handshake signature (TLS 1.2 and 1.3), is the WebPKI verifier's call. It may not print.
//! Names are checked by webpki (`EndEntityCert::verify_is_valid_for_subject_name`), dates
//! and key usage read by x509-parser (webpki does not expose them); nothing here parses
//! ASN.1 by hand.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, DigitallySignedStruct, DistinguishedName, OtherError, RootCertStore,
    SignatureScheme,
};
use std::sync::Arc;
use std::time::Duration;

/// WebPKI, plus the `--cacert` certificates trusted as themselves.
#[derive(Debug)]
pub(super) struct CaCertVerifier {
    webpki: Arc<WebPkiServerVerifier>,
    /// The `--cacert` certificates (none with the system's roots).
    exact: Vec<CertificateDer<'static>>,
}

impl CaCertVerifier {
    /// `roots` for WebPKI; `exact`, the certificates a server may present as themselves.
    pub(super) fn new(
        roots: RootCertStore,
        exact: Vec<CertificateDer<'static>>,
        provider: Arc<CryptoProvider>,
    ) -> Result<CaCertVerifier, rustls::client::VerifierBuilderError> {
        let webpki =
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider).build()?;
        Ok(CaCertVerifier { webpki, exact })
    }
}

impl ServerCertVerifier for CaCertVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self.exact.iter().any(|c| c.as_ref() == end_entity.as_ref()) {
            return verify_as_itself(end_entity, server_name, now);
        }
        self.webpki
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }

    fn root_hint_subjects(&self) -> Option<&[DistinguishedName]> {
        self.webpki.root_hint_subjects()
    }
}

/// A certificate trusted because it is itself in `--cacert`: what is left to check is that
/// it is for this host, valid now, and allowed for a TLS server. The errors are rustls's
/// own, with the context WebPKI would give, so they read the same as its refusals.
fn verify_as_itself(
    cert: &CertificateDer<'_>,
    name: &ServerName<'_>,
    now: UnixTime,
) -> Result<ServerCertVerified, rustls::Error> {
    let parsed = webpki::EndEntityCert::try_from(cert).map_err(from_webpki)?;
    parsed
        .verify_is_valid_for_subject_name(name)
        .map_err(from_webpki)?;
    let (_, x509) =
        x509_parser::parse_x509_certificate(cert).map_err(|_| CertificateError::BadEncoding)?;
    let validity = x509.validity();
    let (not_before, not_after) = (
        validity.not_before.timestamp(),
        validity.not_after.timestamp(),
    );
    let t = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
    // As webpki: valid from notBefore through notAfter, both included.
    if t < not_before {
        let not_before = unix(not_before);
        return Err(CertificateError::NotValidYetContext {
            time: now,
            not_before,
        }
        .into());
    }
    if t > not_after {
        let not_after = unix(not_after);
        return Err(CertificateError::ExpiredContext {
            time: now,
            not_after,
        }
        .into());
    }
    match x509.extended_key_usage() {
        Ok(None) => {}
        Ok(Some(eku)) if eku.value.server_auth || eku.value.any => {}
        Ok(Some(_)) => return Err(CertificateError::InvalidPurpose.into()),
        Err(_) => return Err(CertificateError::BadEncoding.into()),
    }
    Ok(ServerCertVerified::assertion())
}

fn unix(secs: i64) -> UnixTime {
    UnixTime::since_unix_epoch(Duration::from_secs(u64::try_from(secs).unwrap_or(0)))
}

/// webpki's refusal as rustls's, the way rustls's WebPKI verifier converts the same ones.
fn from_webpki(e: webpki::Error) -> rustls::Error {
    match e {
        webpki::Error::CertNotValidForName(cx) => CertificateError::NotValidForNameContext {
            expected: cx.expected,
            presented: cx.presented,
        }
        .into(),
        webpki::Error::BadDer | webpki::Error::BadDerTime | webpki::Error::TrailingData(_) => {
            CertificateError::BadEncoding.into()
        }
        other => CertificateError::Other(OtherError(Arc::new(other))).into(),
    }
}
