//! Part of the run (wiring): where the requests go — the server's address and `Host:`, the
//! TLS client config for `https://`, or the in-process simulator when no URL was given — and
//! the model name, asked of `GET /v1/models` when the plan names none. All of it blocking and
//! before anything is timed; never prints.

use super::RunError;
use crate::plan::Plan;
use crate::worker;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

/// Where the requests go: every `--url`'s server, in order, or the built-in simulator.
pub(super) struct Endpoints {
    pub list: Vec<Endpoint>,
    /// The in-process simulator (the one endpoint) when no URL was given.
    pub sim: Option<crate::sim::SimHandle>,
}

/// One server: where to send, and what to send as `Host:`.
pub(super) struct Endpoint {
    pub addr: SocketAddr,
    pub host_header: String,
    /// Scheme, authority and path prefix, without a trailing `/`.
    pub base_url: String,
    /// The path prefix every route goes under (usually empty).
    pub base_path: String,
    /// `https://`: the client config and the name the certificate must carry.
    pub tls: Option<TlsTarget>,
}

pub(super) struct TlsTarget {
    config: Arc<crate::http::tls::ClientConfig>,
    host: String,
}

pub(super) fn resolve(plan: &Plan) -> Result<Endpoints, RunError> {
    if plan.targets.is_empty() {
        return start_sim(plan);
    }
    let list = plan
        .targets
        .iter()
        .map(|t| resolve_one(plan, t))
        .collect::<Result<_, _>>()?;
    Ok(Endpoints { list, sim: None })
}

fn resolve_one(plan: &Plan, t: &crate::plan::Target) -> Result<Endpoint, RunError> {
    let tls = match t.https {
        true => Some(TlsTarget {
            config: crate::http::tls::client_config(plan.cacert.as_deref(), plan.insecure)?,
            host: t.host.clone(),
        }),
        false => None,
    };
    let addr = (t.host.as_str(), t.port)
        .to_socket_addrs()
        .map_err(|e| e.to_string())
        .and_then(|mut a| a.next().ok_or_else(|| "no address".to_string()))
        .map_err(|reason| RunError::Resolve {
            host: t.host.clone(),
            port: t.port,
            reason,
        })?;
    Ok(Endpoint {
        addr,
        host_header: t.host_header(),
        base_url: t.url.trim_end_matches('/').to_string(),
        base_path: t.base_path.clone(),
        tls,
    })
}

fn start_sim(plan: &Plan) -> Result<Endpoints, RunError> {
    let cfg = crate::sim::SimConfig {
        io_driver: plan.io_driver,
        settings: plan.sim.clone().unwrap_or_default(),
        ..crate::sim::SimConfig::default()
    };
    let handle = crate::sim::start(cfg).map_err(RunError::Sim)?;
    let addr = handle.addr;
    let ep = Endpoint {
        addr,
        host_header: addr.to_string(),
        base_url: format!("http://{addr}"),
        base_path: String::new(),
        tls: None,
    };
    Ok(Endpoints {
        list: vec![ep],
        sim: Some(handle),
    })
}

impl Endpoint {
    /// The request line and `Host:` of a POST to `route` on this server: what the catalog's
    /// requests start with when they go here.
    pub(super) fn request_head(&self, route: crate::plan::Endpoint) -> Vec<u8> {
        crate::prepare::catalog::request_head(route, &self.base_path, &self.host_header)
    }
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// Why a `get` failed: setting up the connection (a TLS handshake refused: a fix to name), or
/// the exchange itself (connect, write, read).
pub(super) enum GetFailed {
    Setup(crate::http::tls::TlsError),
    Io(String),
}

/// `GET path` on a connection of its own (TLS for `https://`), `Connection: close`, blocking:
/// the whole response, at most 4 MiB. Not on the hot path.
pub(super) fn get(ep: &Endpoint, plan: &Plan, path: &str) -> Result<Vec<u8>, GetFailed> {
    let limit = Duration::from_nanos(plan.connect_timeout_ns);
    let io = |e: std::io::Error| GetFailed::Io(e.to_string());
    let mut s: Box<dyn ReadWrite> = match &ep.tls {
        Some(t) => Box::new(
            crate::http::tls::probe(ep.addr, &t.host, t.config.clone(), limit)
                .map_err(GetFailed::Setup)?,
        ),
        None => {
            let s = TcpStream::connect_timeout(&ep.addr, limit).map_err(io)?;
            let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
            Box::new(s)
        }
    };
    let mut req = format!(
        "GET {}{path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
        ep.base_path, ep.host_header
    );
    if let Some(key) = &plan.api_key {
        req.push_str(&format!("Authorization: Bearer {key}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).map_err(io)?;
    let mut resp = Vec::new();
    match s.take(4 << 20).read_to_end(&mut resp) {
        // A TLS server that closes without close_notify (as the simulator and many do) after
        // a complete answer is not an error here.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !resp.is_empty() => {}
        Err(e) => return Err(io(e)),
        Ok(_) => {}
    }
    Ok(resp)
}

/// `GET /v1/models` before the run (blocking; not on the hot path): the first model's id,
/// and the listing it came from (which may say more of the model: `max_model_len`).
fn discover_model(ep: &Endpoint, plan: &Plan) -> Result<(String, serde_json::Value), RunError> {
    let fail = |why: String| RunError::Model(ep.base_url.clone(), why);
    let resp = match get(ep, plan, "/v1/models") {
        Ok(r) => r,
        Err(GetFailed::Setup(e)) => return Err(e.into()),
        Err(GetFailed::Io(why)) => return Err(fail(why)),
    };
    let listing = json_of(&resp);
    let id = listing.as_ref().and_then(|v| v["data"][0]["id"].as_str());
    match id {
        Some(id) => Ok((id.to_string(), listing.clone().unwrap_or_default())),
        None => Err(fail("no model id in the response".into())),
    }
}

/// How often `wait_ready` asks, and how often it says it is still waiting.
const READY_POLL: Duration = Duration::from_millis(500);
const READY_NOTE_EVERY: Duration = Duration::from_secs(5);

/// `--wait-ready` for every server, one after the other, all within `limit_ns`.
pub(super) fn wait_all_ready(
    eps: &Endpoints,
    plan: &Plan,
    limit_ns: u64,
    interrupt: &std::sync::atomic::AtomicBool,
    note: &mut dyn FnMut(&str),
) -> Result<(), RunError> {
    let start = std::time::Instant::now();
    for ep in &eps.list {
        let spent = start.elapsed().as_nanos() as u64;
        wait_ready(ep, plan, limit_ns.saturating_sub(spent), interrupt, note)?;
    }
    Ok(())
}

/// `--wait-ready`: asks `GET /health`, and where that is not served (404, 405) `GET
/// /v1/models`, every `READY_POLL` until one answers 200, for at most `limit_ns`; a line to
/// `note` every `READY_NOTE_EVERY` while it waits. Refused connections, resets and other
/// statuses (503 while a model loads) are "not yet".
pub(super) fn wait_ready(
    ep: &Endpoint,
    plan: &Plan,
    limit_ns: u64,
    interrupt: &std::sync::atomic::AtomicBool,
    note: &mut dyn FnMut(&str),
) -> Result<(), RunError> {
    let start = std::time::Instant::now();
    let limit = Duration::from_nanos(limit_ns);
    let mut next_note = READY_NOTE_EVERY;
    loop {
        let last = match ask_ready(ep, plan) {
            Ok(()) => {
                if start.elapsed() >= READY_POLL {
                    note(&format!(
                        "{} is ready after {:.1} s",
                        ep.base_url,
                        start.elapsed().as_secs_f64()
                    ));
                }
                return Ok(());
            }
            Err(why) => why,
        };
        let waited = start.elapsed();
        let interrupted = interrupt.load(std::sync::atomic::Ordering::Relaxed);
        if waited >= limit || interrupted {
            return Err(RunError::NotReady {
                url: ep.base_url.clone(),
                waited_s: waited.as_secs_f64(),
                last: if interrupted {
                    format!("{last} (interrupted while waiting)")
                } else {
                    last
                },
            });
        }
        if waited >= next_note {
            note(&format!(
                "waiting for {} to be ready: {last} ({:.0} s of {:.0} s, --wait-ready)",
                ep.base_url,
                waited.as_secs_f64(),
                limit.as_secs_f64()
            ));
            next_note += READY_NOTE_EVERY;
        }
        std::thread::sleep(READY_POLL.min(limit.saturating_sub(waited)));
    }
}

/// One round of `wait_ready`: `Ok` on a 200 from `/health`, or from `/v1/models` where
/// `/health` is not served; else what the server said, for the message.
fn ask_ready(ep: &Endpoint, plan: &Plan) -> Result<(), String> {
    let status = |path: &str| -> Result<u16, String> {
        match get(ep, plan, path) {
            Ok(resp) => status_of(&resp).ok_or_else(|| format!("GET {path}: no HTTP status")),
            Err(GetFailed::Setup(e)) => Err(format!("GET {path}: {e}")),
            Err(GetFailed::Io(why)) => Err(format!("GET {path}: {why}")),
        }
    };
    match status("/health")? {
        200 => Ok(()),
        404 | 405 => match status("/v1/models")? {
            200 => Ok(()),
            code => Err(format!("GET /v1/models: {code}")),
        },
        code => Err(format!("GET /health: {code}")),
    }
}

/// The status code of a response's head.
fn status_of(resp: &[u8]) -> Option<u16> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut r = httparse::Response::new(&mut headers);
    match r.parse(resp) {
        Ok(_) => r.code,
        Err(_) => None,
    }
}

/// The JSON object a 200 answer's body holds; `None` for another status or no JSON.
pub(super) fn json_of(resp: &[u8]) -> Option<serde_json::Value> {
    if status_of(resp)? != 200 {
        return None;
    }
    let body_at = memchr::memmem::find(resp, b"\r\n\r\n")? + 4;
    let body = &resp[body_at..];
    // The body may be chunked: the JSON object starts at the first '{'.
    let start = memchr::memchr(b'{', body)?;
    let mut de =
        serde_json::Deserializer::from_slice(&body[start..]).into_iter::<serde_json::Value>();
    de.next()?.ok()
}

#[cfg(test)]
fn model_from_response(resp: &[u8]) -> Option<String> {
    Some(json_of(resp)?["data"][0]["id"].as_str()?.to_string())
}

/// The workers' TLS connector and server name, for an `https://` target.
pub(super) fn tls_connector(ep: &Endpoint) -> Result<Option<worker::TlsClient>, RunError> {
    let Some(t) = &ep.tls else {
        return Ok(None);
    };
    #[cfg(feature = "tls")]
    return Ok(Some(worker::TlsClient {
        connector: monoio_rustls::TlsConnector::from(t.config.clone()),
        name: crate::http::tls::server_name(&t.host)?,
    }));
    #[cfg(not(feature = "tls"))]
    match *t.config {}
}

/// The model the requests name: the plan's, or the first the first server lists (several
/// servers behind one benchmark serve the same model), with the listing it was read from.
/// With a model given, one handshake with each `https://` server first, so a certificate
/// problem is one clear error before the run, not one per connection.
pub(super) fn model(
    eps: &Endpoints,
    plan: &Plan,
) -> Result<(String, Option<serde_json::Value>), RunError> {
    let Some(m) = &plan.model else {
        let (id, listing) = discover_model(&eps.list[0], plan)?;
        return Ok((id, Some(listing)));
    };
    for ep in &eps.list {
        if let Some(t) = &ep.tls {
            let limit = Duration::from_nanos(plan.connect_timeout_ns);
            crate::http::tls::probe(ep.addr, &t.host, t.config.clone(), limit)?;
        }
    }
    Ok((m.clone(), None))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_status_and_the_base_path_are_read() {
        assert_eq!(
            super::status_of(b"HTTP/1.1 503 Service Unavailable\r\n\r\n"),
            Some(503)
        );
        assert_eq!(
            super::status_of(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"),
            Some(200)
        );
        assert_eq!(super::status_of(b"garbage"), None);
        assert_eq!(super::status_of(b""), None);
    }

    #[test]
    fn model_is_read_from_a_models_listing() {
        let resp = b"HTTP/1.1 200 OK\r\ncontent-length: 60\r\n\r\n{\"object\":\"list\",\"data\":[{\"id\":\"tiny-llama\",\"object\":\"model\"}]}";
        assert_eq!(
            super::model_from_response(resp).as_deref(),
            Some("tiny-llama")
        );
        assert_eq!(
            super::model_from_response(b"HTTP/1.1 404 x\r\n\r\nnope"),
            None
        );
    }
}
