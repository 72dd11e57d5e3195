//! What a refused handshake means and what to do about it, for the probe before the run
//! (`on.rs`) and the `/metrics` scraper (`scrape/get.rs`): rustls's error read for its
//! `HandshakeKind`, and the one step that fixes it. It may not print and keeps no state; it
//! runs only after a handshake failed, never on the hot path.

use super::{HandshakeKind, TlsError};
use rustls::{CertificateError, Error};

const INSECURE: &str = "(--insecure skips verification altogether)";

/// The error for a handshake with `host:port` that ended in `e` (what `complete_io` gave).
pub fn handshake_failure(host: &str, port: u16, e: &std::io::Error) -> TlsError {
    let tls = e.get_ref().and_then(|inner| inner.downcast_ref::<Error>());
    let (kind, fix) = match tls {
        Some(Error::InvalidCertificate(cert)) => certificate(cert, host, port),
        Some(Error::InvalidMessage(_)) => (
            HandshakeKind::Other,
            format!("does {host}:{port} serve TLS? For plain HTTP use an http:// URL"),
        ),
        _ => (
            HandshakeKind::Other,
            format!("check that {host}:{port} serves https and the URL's host {INSECURE}"),
        ),
    };
    TlsError::Handshake {
        host: host.to_string(),
        kind,
        why: e.to_string(),
        fix,
    }
}

fn certificate(e: &CertificateError, host: &str, port: u16) -> (HandshakeKind, String) {
    use HandshakeKind as K;
    let when = |t: &rustls::pki_types::UnixTime| crate::rt::clock::rfc3339(t.as_secs());
    match e {
        CertificateError::UnknownIssuer => (
            K::UnknownIssuer,
            format!(
                "no CA this client trusts signed the server's certificate: pass the CA that \
                 issued it, or the server's own self-signed certificate, with --cacert FILE \
                 (PEM) {INSECURE}"
            ),
        ),
        CertificateError::NotValidForName => (K::WrongName, wrong_name(host, port, &[])),
        CertificateError::NotValidForNameContext { presented, .. } => {
            (K::WrongName, wrong_name(host, port, presented))
        }
        CertificateError::Expired => (K::Expired, format!("renew it on the server {INSECURE}")),
        CertificateError::ExpiredContext { not_after, .. } => (
            K::Expired,
            format!(
                "the certificate expired at {}: renew it on the server {INSECURE}",
                when(not_after)
            ),
        ),
        CertificateError::NotValidYet => (K::NotYetValid, not_yet("later")),
        CertificateError::NotValidYetContext { not_before, .. } => {
            (K::NotYetValid, not_yet(&when(not_before)))
        }
        CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => (
            K::WrongUsage,
            format!(
                "the certificate's extended key usage leaves out serverAuth: remake it with \
                 it (openssl: -addext extendedKeyUsage=serverAuth) {INSECURE}"
            ),
        ),
        CertificateError::Other(other) if is_ca_used_as_end_entity(other) => (
            K::CaAsServer,
            format!(
                "the server presents a CA certificate (CA:TRUE, as `openssl req -x509` makes \
                 by default) as its own: to trust exactly that certificate, pass the file the \
                 server serves with --cacert {INSECURE}"
            ),
        ),
        _ => (
            K::Other,
            format!("check the server's certificate and --cacert {INSECURE}"),
        ),
    }
}

fn is_ca_used_as_end_entity(other: &rustls::OtherError) -> bool {
    matches!(
        other.0.downcast_ref::<webpki::Error>(),
        Some(webpki::Error::CaUsedAsEndEntity)
    )
}

fn not_yet(from: &str) -> String {
    format!(
        "the certificate is valid only from {from}: check this machine's clock and the \
         server's {INSECURE}"
    )
}

/// The fix for a name mismatch, naming the certificate's names (webpki gives them as
/// `DnsName("a.example")` / `IpAddress(10.0.0.1)`).
fn wrong_name(host: &str, port: u16, presented: &[String]) -> String {
    let names: Vec<&str> = presented.iter().map(|p| bare_name(p)).collect();
    let san = match host.parse::<std::net::IpAddr>() {
        Ok(_) => format!("IP:{host}"),
        Err(_) => format!("DNS:{host}"),
    };
    match names.first() {
        None => format!(
            "the certificate names no host in its subjectAltName (a CN alone is not \
             checked): remake it with one for {host} (openssl: -addext \
             subjectAltName={san}) {INSECURE}"
        ),
        Some(first) => format!(
            "the certificate is for {}, not {host}: use one of its names in the URL \
             (https://{first}:{port}/, resolving to this server), or give the server a \
             certificate whose subjectAltName includes {san} {INSECURE}",
            names.join(", ")
        ),
    }
}

fn bare_name(presented: &str) -> &str {
    presented
        .strip_prefix("DnsName(\"")
        .and_then(|s| s.strip_suffix("\")"))
        .or_else(|| {
            presented
                .strip_prefix("IpAddress(")
                .and_then(|s| s.strip_suffix(')'))
        })
        .unwrap_or(presented)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_wrong_name_names_the_certificate_s_names() {
        let presented = [
            "DnsName(\"a.example\")".to_string(),
            "IpAddress(10.0.0.1)".into(),
        ];
        let fix = wrong_name("127.0.0.1", 8443, &presented);
        assert!(
            fix.contains("for a.example, 10.0.0.1, not 127.0.0.1"),
            "{fix}"
        );
        assert!(fix.contains("https://a.example:8443/"), "{fix}");
        assert!(fix.contains("IP:127.0.0.1"), "{fix}");
        let fix = wrong_name("localhost", 8443, &[]);
        assert!(fix.contains("subjectAltName=DNS:localhost"), "{fix}");
    }
}
