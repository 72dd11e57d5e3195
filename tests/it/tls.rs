//! TLS end to end on loopback: the simulator serves a certificate made at test time (rcgen),
//! the client verifies it through `--cacert`, refuses a wrong host, an expired certificate
//! and an unknown issuer (the system roots) with a clear message and kind before sending
//! anything, and with `--insecure` runs anyway and says so in the warnings. Issue 20 item 7:
//! a `CA:TRUE` self-signed certificate (what `openssl req -x509` makes) given in `--cacert`
//! and served as the server's own is taken, name and dates still checked. Runs are serialized.

use crate::support::common::{cpu_pair, lock, made_dir};
use ringbench::__private::http::tls::{HandshakeKind, TlsError};
use ringbench::plan::{Load, Plan, Stop};
use ringbench::RunError;
use std::path::{Path, PathBuf};

struct Certs {
    dir: PathBuf,
}

impl Certs {
    /// A self-signed certificate for `names`, valid now unless `expired`.
    fn make(tag: &str, names: &[&str], expired: bool) -> (Certs, PathBuf, PathBuf) {
        Certs::make_as(tag, names, expired, false)
    }

    /// The same, with `basicConstraints CA:TRUE` when `ca` (as `openssl req -x509` makes it).
    fn make_as(tag: &str, names: &[&str], expired: bool, ca: bool) -> (Certs, PathBuf, PathBuf) {
        let dir = made_dir(tag);
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params =
            rcgen::CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, format!("ringbench test {tag}"));
        if ca {
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        }
        if expired {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        let cert = params.self_signed(&key).unwrap();
        let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert_path, cert.pem()).unwrap();
        std::fs::write(&key_path, key.serialize_pem()).unwrap();
        (Certs { dir }, cert_path, key_path)
    }
}

impl Drop for Certs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn tls_sim(cert: &Path, key: &Path) -> ringbench::sim::SimHandle {
    ringbench::sim::start(ringbench::sim::SimConfig {
        tls: Some(ringbench::__private::http::tls::server_config(cert, key).unwrap()),
        settings: ringbench::plan::SimSettings {
            cpus: vec![cpu_pair().1],
            ..Default::default()
        },
        ..ringbench::sim::SimConfig::default()
    })
    .unwrap()
}

fn https_plan(port: u16, cacert: Option<&Path>, insecure: bool) -> Plan {
    https_plan_to("127.0.0.1", port, cacert, insecure)
}

fn https_plan_to(host: &str, port: u16, cacert: Option<&Path>, insecure: bool) -> Plan {
    let mut p = Plan::defaults();
    p.cpus = vec![cpu_pair().0];
    p.targets = vec![ringbench::plan::Target::parse(&format!("https://{host}:{port}")).unwrap()];
    p.sim = None;
    p.load = Load::Closed { concurrency: 4 };
    p.stop = Stop {
        request_count: Some(200),
        duration_ns: None,
    };
    p.cacert = cacert.map(Path::to_path_buf);
    p.insecure = insecure;
    p
}

#[test]
fn https_with_a_private_ca_measures_every_request() {
    let _g = lock();
    let (_c, cert, key) = Certs::make("ok", &["127.0.0.1", "localhost"], false);
    let sim = tls_sim(&cert, &key);
    // No --model: the model is discovered over TLS too.
    let mut p = https_plan(sim.addr.port(), Some(&cert), false);
    // Asked for, kernel receive stamps are not measured over TLS, and the summary says why.
    p.rx_timestamps = true;
    let s = ringbench::run(&p).expect("the https run completes");
    let s = serde_json::to_value(&s).unwrap();
    assert_eq!(s["counts"]["ok"], 200, "{}", s["counts"]);
    assert_eq!(s["tokens"]["output_total"], 200 * 16);
    assert_eq!(s["latency_ms"]["itl"]["count"], 200 * 15);
    let warnings = s["warnings"].to_string();
    assert!(!warnings.contains("--insecure"), "{warnings}");
    assert!(s["overhead"]["kernel_rx_delay_ms"].is_null());
    let why = s["overhead"]["kernel_rx_delay_null_reason"]
        .as_str()
        .unwrap();
    assert!(why.contains("TLS"), "{why}");
}

/// The run against a simulator serving `served` with `cacert` (or the system roots) must
/// stop before sending: the kind and the message.
fn refused_with(served: (&Path, &Path), cacert: Option<&Path>) -> (HandshakeKind, String) {
    let sim = tls_sim(served.0, served.1);
    let mut p = https_plan(sim.addr.port(), cacert, false);
    p.model = Some("m".into());
    let err = ringbench::run(&p).expect_err("the run must refuse");
    let msg = err.to_string();
    assert!(msg.contains("TLS handshake with 127.0.0.1 failed"), "{msg}");
    assert!(
        msg.contains("--insecure"),
        "the message names the way out: {msg}"
    );
    match err {
        RunError::Tls(TlsError::Handshake { kind, .. }) => (kind, msg),
        other => panic!("not a handshake refusal: {other:?}"),
    }
}

fn refused(tag: &str, names: &[&str], expired: bool) -> String {
    let (_c, cert, key) = Certs::make(tag, names, expired);
    refused_with((&cert, &key), Some(&cert)).1
}

#[test]
fn a_certificate_for_another_host_is_refused_clearly() {
    let _g = lock();
    let msg = refused("host", &["other.example"], false);
    assert!(msg.to_lowercase().contains("not valid for name"), "{msg}");
}

#[test]
fn an_expired_certificate_is_refused_clearly() {
    let _g = lock();
    let msg = refused("expired", &["127.0.0.1"], true);
    assert!(msg.to_lowercase().contains("expired"), "{msg}");
}

#[test]
fn a_self_signed_certificate_is_not_in_the_system_roots() {
    let _g = lock();
    let (_c, cert, key) = Certs::make("roots", &["127.0.0.1"], false);
    let (kind, msg) = refused_with((&cert, &key), None);
    assert_eq!(kind, HandshakeKind::UnknownIssuer, "{msg}");
    assert!(
        msg.contains("UnknownIssuer") || msg.contains("unknown issuer"),
        "{msg}"
    );
    assert!(msg.contains("with --cacert FILE"), "says what to do: {msg}");
}

#[test]
fn insecure_runs_against_a_wrong_host_and_says_so() {
    let _g = lock();
    let (_c, cert, key) = Certs::make("insecure", &["other.example"], true);
    let sim = tls_sim(&cert, &key);
    let mut p = https_plan(sim.addr.port(), None, true);
    p.stop.request_count = Some(50);
    let s = ringbench::run(&p).expect("--insecure runs");
    let s = serde_json::to_value(&s).unwrap();
    assert_eq!(s["counts"]["ok"], 50, "{}", s["counts"]);
    let warnings = s["warnings"].to_string();
    assert!(
        warnings.contains("--insecure") && warnings.contains("NOT verified"),
        "{warnings}"
    );
}

/// What `openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -addext
/// subjectAltName=DNS:localhost` makes: self-signed, `CA:TRUE`, SAN localhost.
fn openssl_like(tag: &str, names: &[&str], expired: bool) -> (Certs, PathBuf, PathBuf) {
    Certs::make_as(tag, names, expired, true)
}

#[test]
fn issue20_ca_true_self_signed_certificate_is_trusted_through_cacert() {
    let _g = lock();
    let (_c, cert, key) = openssl_like("ca-ok", &["localhost"], false);
    let sim = tls_sim(&cert, &key);
    let mut p = https_plan_to("localhost", sim.addr.port(), Some(&cert), false);
    p.stop.request_count = Some(100);
    let s = ringbench::run(&p).expect("a CA:TRUE certificate given as itself is taken");
    let s = serde_json::to_value(&s).unwrap();
    assert_eq!(s["counts"]["ok"], 100, "{}", s["counts"]);
    assert_eq!(s["counts"]["failed"], 0, "{}", s["counts"]);
    assert!(!s["warnings"].to_string().contains("--insecure"));
}

#[test]
fn issue20_ca_true_certificate_for_another_host_is_refused() {
    let _g = lock();
    let (_c, cert, key) = openssl_like("ca-host", &["other.example"], false);
    let (kind, msg) = refused_with((&cert, &key), Some(&cert));
    assert_eq!(kind, HandshakeKind::WrongName, "{msg}");
    assert!(msg.contains("not valid for name"), "{msg}");
    assert!(
        msg.contains("the certificate is for other.example, not 127.0.0.1"),
        "names the host and the certificate's names: {msg}"
    );
}

#[test]
fn issue20_expired_ca_true_certificate_is_refused() {
    let _g = lock();
    let (_c, cert, key) = openssl_like("ca-expired", &["127.0.0.1"], true);
    let (kind, msg) = refused_with((&cert, &key), Some(&cert));
    assert_eq!(kind, HandshakeKind::Expired, "{msg}");
    assert!(
        msg.contains("expired at 2021-01-01T00:00:00Z: renew it"),
        "{msg}"
    );
}

#[test]
fn issue20_another_ca_true_certificate_in_cacert_is_refused() {
    let _g = lock();
    let (_s, served, key) = openssl_like("ca-served", &["127.0.0.1"], false);
    let (_g2, given, _) = openssl_like("ca-given", &["127.0.0.1"], false);
    let (kind, msg) = refused_with((&served, &key), Some(&given));
    assert_eq!(kind, HandshakeKind::CaAsServer, "{msg}");
    assert!(msg.contains("CaUsedAsEndEntity"), "{msg}");
    assert!(
        msg.contains("pass the file the server serves with --cacert"),
        "{msg}"
    );
}
