//! TLS end to end on loopback: the simulator serves a certificate made at test time (rcgen),
//! the client verifies it through `--cacert`, refuses a wrong host, an expired certificate
//! and an unknown issuer (the system roots) with a clear message before sending anything,
//! and with `--insecure` runs anyway and says so in the warnings. Runs are serialized.

use crate::support::common::{cpu_pair, lock, made_dir};
use ringbench::plan::{Load, Plan, Stop};
use std::path::{Path, PathBuf};

struct Certs {
    dir: PathBuf,
}

impl Certs {
    /// A self-signed certificate for `names`, valid now unless `expired`.
    fn make(tag: &str, names: &[&str], expired: bool) -> (Certs, PathBuf, PathBuf) {
        let dir = made_dir(tag);
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params =
            rcgen::CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap();
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
        tls: Some(ringbench::http::tls::server_config(cert, key).unwrap()),
        settings: ringbench::plan::SimSettings {
            cpus: vec![cpu_pair().1],
            ..Default::default()
        },
        ..ringbench::sim::SimConfig::default()
    })
    .unwrap()
}

fn https_plan(port: u16, cacert: Option<&Path>, insecure: bool) -> Plan {
    let mut p = Plan::defaults();
    p.cpus = vec![cpu_pair().0];
    p.target = Some(ringbench::plan::Target::parse(&format!("https://127.0.0.1:{port}")).unwrap());
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

fn refused(tag: &str, names: &[&str], expired: bool, with_ca: bool) -> String {
    let (_c, cert, key) = Certs::make(tag, names, expired);
    let sim = tls_sim(&cert, &key);
    let mut p = https_plan(sim.addr.port(), with_ca.then_some(cert.as_path()), false);
    p.model = Some("m".into());
    let err = ringbench::run(&p).expect_err("the run must refuse");
    let msg = err.to_string();
    assert!(msg.contains("TLS handshake with 127.0.0.1 failed"), "{msg}");
    assert!(
        msg.contains("--insecure"),
        "the message names the way out: {msg}"
    );
    msg
}

#[test]
fn a_certificate_for_another_host_is_refused_clearly() {
    let _g = lock();
    let msg = refused("host", &["other.example"], false, true);
    assert!(msg.to_lowercase().contains("not valid for name"), "{msg}");
}

#[test]
fn an_expired_certificate_is_refused_clearly() {
    let _g = lock();
    let msg = refused("expired", &["127.0.0.1"], true, true);
    assert!(msg.to_lowercase().contains("expired"), "{msg}");
}

#[test]
fn a_self_signed_certificate_is_not_in_the_system_roots() {
    let _g = lock();
    let msg = refused("roots", &["127.0.0.1"], false, false);
    assert!(
        msg.contains("UnknownIssuer") || msg.contains("unknown issuer"),
        "{msg}"
    );
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
