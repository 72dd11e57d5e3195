//! Part of the run (wiring): where the requests go — the server's address and `Host:`, the
//! TLS client config for `https://`, or the in-process simulator when no URL was given — and
//! the model name, asked of `GET /v1/models` when the plan names none. All of it blocking and
//! before anything is timed; never prints.

use super::RunError;
use crate::http::blocking::{Client, GetError, Origin, Request};
use crate::plan::Plan;
use crate::worker;
use std::net::{SocketAddr, ToSocketAddrs};
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

/// The most a `GET` before the run takes of a body.
const GET_MAX_BODY_BYTES: usize = 4 << 20;
/// What a `GET` before the run may take beyond `--connect-timeout` to answer.
const GET_ANSWER: Duration = Duration::from_secs(10);

/// `GET path` on a connection of its own (TLS for `https://`), `Connection: close`, through
/// the crate's blocking client: the status and the body (dechunked), at most 4 MiB, all
/// within `--connect-timeout` plus `GET_ANSWER`. Not on the hot path.
pub(super) fn get(ep: &Endpoint, plan: &Plan, path: &str) -> Result<(u16, Vec<u8>), GetError> {
    let origin = Origin {
        host: ep
            .tls
            .as_ref()
            .map_or_else(|| ep.addr.ip().to_string(), |t| t.host.clone()),
        port: ep.addr.port(),
        authority: ep.host_header.clone(),
        addr: Some(ep.addr),
        tls: ep.tls.as_ref().map(|t| t.config.clone()),
    };
    let auth = plan.api_key.as_ref().map(|key| format!("Bearer {key}"));
    let mut headers = vec![("Connection", "close")];
    headers.extend(auth.as_deref().map(|a| ("Authorization", a)));
    let full = format!("{}{path}", ep.base_path);
    let limit = Duration::from_nanos(plan.connect_timeout_ns) + GET_ANSWER;
    let mut client = Client::new(origin, GET_MAX_BODY_BYTES);
    let (status, body) = client.send(&Request::get(&full, &headers), limit, |_| true)?;
    Ok((status, body.to_vec()))
}

/// `GET /v1/models` before the run (blocking; not on the hot path): the first model's id,
/// and the listing it came from (which may say more of the model: `max_model_len`).
fn discover_model(ep: &Endpoint, plan: &Plan) -> Result<(String, serde_json::Value), RunError> {
    let fail = |why: String| RunError::Model(ep.base_url.clone(), why);
    let body = match get(ep, plan, "/v1/models") {
        Ok((200, body)) => body,
        Ok((status, _)) => return Err(fail(format!("HTTP {status}"))),
        Err(GetError::Tls(e)) => return Err(e.into()),
        Err(e) => return Err(fail(e.to_string())),
    };
    let listing: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let id = model_of(&listing).ok_or_else(|| fail("no model id in the response".into()))?;
    Ok((id, listing))
}

/// `GET path`'s JSON answer, when it is a 200 with a JSON body; `None` for anything else
/// (best effort: what a server may or may not say about itself).
pub(super) fn get_json(ep: &Endpoint, plan: &Plan, path: &str) -> Option<serde_json::Value> {
    match get(ep, plan, path) {
        Ok((200, body)) => serde_json::from_slice(&body).ok(),
        _ => None,
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
        get(ep, plan, path)
            .map(|(status, _)| status)
            .map_err(|e| format!("GET {path}: {e}"))
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

/// The first model's id in a `/v1/models` listing.
fn model_of(listing: &serde_json::Value) -> Option<String> {
    Some(listing["data"][0]["id"].as_str()?.to_string())
}

/// The first model's id in a `/v1/models` body (its tests read bytes).
#[cfg(test)]
fn model_from_body(body: &[u8]) -> Option<String> {
    model_of(&serde_json::from_slice(body).ok()?)
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
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    /// A server that answers one request with `pieces`, each in a write of its own; the
    /// endpoint that reaches it.
    fn serve(pieces: Vec<&'static [u8]>) -> Endpoint {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut conn, _) = l.accept().unwrap();
            let (mut got, mut buf) = (Vec::new(), [0u8; 4096]);
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            let _ = conn.set_nodelay(true);
            for p in pieces {
                let _ = conn.write_all(p);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Endpoint {
            addr,
            host_header: addr.to_string(),
            base_url: format!("http://{addr}"),
            base_path: String::new(),
            tls: None,
        }
    }

    #[test]
    fn a_chunk_boundary_inside_the_json_does_not_break_model_discovery() {
        // The second chunk starts inside the object, between `"id` and `"`: the JSON read
        // from the raw bytes at the first `{` (the old way) hits the chunk's size line there.
        let ep = serve(vec![
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"1d\r\n{\"object\":\"list\",\"data\":[{\"id\r\n",
            b"22\r\n\":\"tiny-llama\",\"object\":\"model\"}]}\r\n0\r\n\r\n",
        ]);
        let plan = Plan::defaults();
        assert_eq!(discover_model(&ep, &plan).unwrap().0, "tiny-llama");
    }

    #[test]
    fn a_status_but_200_or_a_listing_without_ids_is_no_model() {
        let ep = serve(vec![
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope",
        ]);
        let e = discover_model(&ep, &Plan::defaults())
            .unwrap_err()
            .to_string();
        assert!(e.contains("HTTP 404"), "{e}");
        assert_eq!(model_from_body(br#"{"object":"list","data":[]}"#), None);
        assert_eq!(
            model_from_body(br#"{"data":[{"id":"m"}]}"#).as_deref(),
            Some("m")
        );
    }

    #[test]
    fn readiness_is_a_200_from_health_or_from_models_where_health_is_not_served() {
        let ep = serve(vec![b"HTTP/1.1 503 Loading\r\nContent-Length: 0\r\n\r\n"]);
        let e = ask_ready(&ep, &Plan::defaults()).unwrap_err();
        assert_eq!(e, "GET /health: 503");
        let ep = serve(vec![b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"]);
        assert_eq!(ask_ready(&ep, &Plan::defaults()), Ok(()));
    }
}
