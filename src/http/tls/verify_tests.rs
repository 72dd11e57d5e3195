//! Unit tests of `verify.rs` (the `--cacert` verifier), with certificates made by rcgen at
//! test time and the clock given, not read: a `CA:TRUE` self-signed certificate presented as
//! itself is taken for its own names and dates only; every other chain is WebPKI's call. They
//! may not open a socket (the end-to-end runs are in `tests/it/tls.rs`).

use super::verify::CaCertVerifier;
use rcgen::{BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, KeyPair};
use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, RootCertStore};
use std::sync::Arc;
use std::time::Duration;

/// 2026-06-01T00:00:00Z, inside every certificate's default validity below.
const NOW_S: u64 = 1_780_272_000;

fn at(secs: u64) -> UnixTime {
    UnixTime::since_unix_epoch(Duration::from_secs(secs))
}

fn params(cn: &str, names: &[&str], ca: bool) -> CertificateParams {
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let mut p = CertificateParams::new(names).unwrap();
    p.distinguished_name
        .push(rcgen::DnType::CommonName, cn.to_string());
    p.not_before = rcgen::date_time_ymd(2025, 1, 1);
    p.not_after = rcgen::date_time_ymd(2027, 1, 1);
    if ca {
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    }
    p
}

/// A self-signed certificate (what `openssl req -x509` makes when `ca`).
fn self_signed(p: &CertificateParams) -> CertificateDer<'static> {
    p.self_signed(&KeyPair::generate().unwrap())
        .unwrap()
        .der()
        .clone()
}

fn verifier(cacert: &[&CertificateDer<'static>]) -> CaCertVerifier {
    let mut roots = RootCertStore::empty();
    for c in cacert {
        roots.add((*c).clone()).unwrap();
    }
    let exact = cacert.iter().map(|c| (*c).clone()).collect();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    CaCertVerifier::new(roots, exact, provider).unwrap()
}

fn check(
    v: &CaCertVerifier,
    chain: &[CertificateDer<'static>],
    host: &str,
    now: UnixTime,
) -> Result<(), rustls::Error> {
    let name = ServerName::try_from(host.to_string()).unwrap();
    v.verify_server_cert(&chain[0], &chain[1..], &name, &[], now)
        .map(|_| ())
}

fn certificate_error(r: Result<(), rustls::Error>) -> CertificateError {
    match r {
        Err(rustls::Error::InvalidCertificate(e)) => e,
        other => panic!("expected a certificate error, got {other:?}"),
    }
}

#[test]
fn tls_ca_true_self_signed_is_trusted_as_itself() {
    let cert = self_signed(&params("localhost", &["localhost"], true));
    let v = verifier(&[&cert]);
    check(&v, std::slice::from_ref(&cert), "localhost", at(NOW_S)).unwrap();
}

#[test]
fn tls_ca_true_self_signed_still_needs_its_name() {
    let cert = self_signed(&params("localhost", &["localhost"], true));
    let v = verifier(&[&cert]);
    let e = certificate_error(check(&v, &[cert], "other.example", at(NOW_S)));
    match e {
        CertificateError::NotValidForNameContext { presented, .. } => {
            assert_eq!(presented, vec!["DnsName(\"localhost\")".to_string()]);
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn tls_ca_true_self_signed_still_needs_its_dates() {
    let cert = self_signed(&params("localhost", &["localhost"], true));
    let v = verifier(&[&cert]);
    let after = at(1_798_761_600 + 1); // 2027-01-01T00:00:01Z
    let e = certificate_error(check(&v, std::slice::from_ref(&cert), "localhost", after));
    assert!(
        matches!(e, CertificateError::ExpiredContext { not_after, .. } if not_after.as_secs() == 1_798_761_600),
        "{e:?}"
    );
    let before = at(1_735_689_600 - 1); // 2024-12-31T23:59:59Z
    let e = certificate_error(check(&v, std::slice::from_ref(&cert), "localhost", before));
    assert!(
        matches!(e, CertificateError::NotValidYetContext { .. }),
        "{e:?}"
    );
    // Both ends are inside, as in webpki.
    check(
        &v,
        std::slice::from_ref(&cert),
        "localhost",
        at(1_798_761_600),
    )
    .unwrap();
    check(&v, &[cert], "localhost", at(1_735_689_600)).unwrap();
}

#[test]
fn tls_a_certificate_for_clients_only_is_refused_as_a_server_s() {
    let mut p = params("localhost", &["localhost"], true);
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = self_signed(&p);
    let v = verifier(&[&cert]);
    let e = certificate_error(check(&v, &[cert], "localhost", at(NOW_S)));
    assert!(matches!(e, CertificateError::InvalidPurpose), "{e:?}");
}

#[test]
fn tls_another_ca_true_certificate_in_cacert_does_not_vouch() {
    let served = self_signed(&params("served", &["localhost"], true));
    let given = self_signed(&params("given", &["localhost"], true));
    let v = verifier(&[&given]);
    let e = certificate_error(check(&v, &[served], "localhost", at(NOW_S)));
    let CertificateError::Other(other) = e else {
        panic!("{e:?}")
    };
    assert!(
        matches!(
            other.0.downcast_ref::<webpki::Error>(),
            Some(webpki::Error::CaUsedAsEndEntity)
        ),
        "{other:?}"
    );
}

#[test]
fn tls_a_leaf_of_a_cacert_ca_goes_through_webpki() {
    let ca_key = KeyPair::generate().unwrap();
    let ca = rcgen::CertifiedIssuer::self_signed(params("ca", &[], true), ca_key).unwrap();
    let ca_der = ca.der().clone();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = params("leaf", &["localhost"], false)
        .signed_by(&leaf_key, &ca)
        .unwrap()
        .der()
        .clone();
    let v = verifier(&[&ca_der]);
    check(&v, &[leaf.clone(), ca_der.clone()], "localhost", at(NOW_S)).unwrap();
    // The chain is WebPKI's: its name check is the same.
    let e = certificate_error(check(
        &v,
        std::slice::from_ref(&leaf),
        "other.example",
        at(NOW_S),
    ));
    assert!(
        matches!(e, CertificateError::NotValidForNameContext { .. }),
        "{e:?}"
    );
    // And a leaf nothing in --cacert issued is an unknown issuer.
    let v = verifier(&[&self_signed(&params("other", &["x"], true))]);
    let e = certificate_error(check(&v, &[leaf], "localhost", at(NOW_S)));
    assert!(matches!(e, CertificateError::UnknownIssuer), "{e:?}");
}

#[test]
fn tls_handshake_signatures_are_webpki_s() {
    let cert = self_signed(&params("localhost", &["localhost"], true));
    let v = verifier(&[&cert]);
    let provider = rustls::crypto::ring::default_provider();
    assert_eq!(
        v.supported_verify_schemes(),
        provider
            .signature_verification_algorithms
            .supported_schemes()
    );
}
