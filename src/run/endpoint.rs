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

/// Where to send, and what to send as `Host:`.
pub(super) struct Endpoint {
    pub addr: SocketAddr,
    pub host_header: String,
    pub base_url: String,
    pub sim: Option<crate::sim::SimHandle>,
    /// `https://`: the client config and the name the certificate must carry.
    pub tls: Option<TlsTarget>,
}

pub(super) struct TlsTarget {
    config: Arc<crate::http::tls::ClientConfig>,
    host: String,
}

pub(super) fn resolve(plan: &Plan) -> Result<Endpoint, RunError> {
    let Some(t) = &plan.target else {
        return start_sim(plan);
    };
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
        sim: None,
        tls,
    })
}

fn start_sim(plan: &Plan) -> Result<Endpoint, RunError> {
    let cfg = crate::sim::SimConfig {
        io_driver: plan.io_driver,
        settings: plan.sim.clone().unwrap_or_default(),
        ..crate::sim::SimConfig::default()
    };
    let handle = crate::sim::start(cfg).map_err(RunError::Sim)?;
    let addr = handle.addr;
    Ok(Endpoint {
        addr,
        host_header: addr.to_string(),
        base_url: format!("http://{addr}"),
        sim: Some(handle),
        tls: None,
    })
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// `GET /v1/models` before the run (blocking; not on the hot path): the first model's id.
fn discover_model(ep: &Endpoint, plan: &Plan) -> Result<String, RunError> {
    let fail = |why: String| RunError::Model(ep.base_url.clone(), why);
    let limit = Duration::from_nanos(plan.connect_timeout_ns);
    let mut s: Box<dyn ReadWrite> = match &ep.tls {
        Some(t) => Box::new(crate::http::tls::probe(
            ep.addr,
            &t.host,
            t.config.clone(),
            limit,
        )?),
        None => {
            let s = TcpStream::connect_timeout(&ep.addr, limit).map_err(|e| fail(e.to_string()))?;
            let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
            Box::new(s)
        }
    };
    let mut req = format!(
        "GET /v1/models HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
        ep.host_header
    );
    if let Some(key) = &plan.api_key {
        req.push_str(&format!("Authorization: Bearer {key}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes())
        .map_err(|e| fail(e.to_string()))?;
    let mut resp = Vec::new();
    match s.take(4 << 20).read_to_end(&mut resp) {
        // A TLS server that closes without close_notify (as the simulator and many do) after
        // a complete answer is not an error here: the body is parsed below.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !resp.is_empty() => {}
        Err(e) => return Err(fail(e.to_string())),
        Ok(_) => {}
    }
    model_from_response(&resp).ok_or_else(|| fail("no model id in the response".into()))
}

fn model_from_response(resp: &[u8]) -> Option<String> {
    let body_at = memchr::memmem::find(resp, b"\r\n\r\n")? + 4;
    let body = &resp[body_at..];
    // The body may be chunked: the JSON object starts at the first '{'.
    let start = memchr::memchr(b'{', body)?;
    let mut de =
        serde_json::Deserializer::from_slice(&body[start..]).into_iter::<serde_json::Value>();
    let v = de.next()?.ok()?;
    Some(v["data"][0]["id"].as_str()?.to_string())
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

/// The model the requests name: the plan's, or the first the server lists. With a model
/// given over `https://`, one handshake first, so a certificate problem is one clear error
/// before the run, not one per connection.
pub(super) fn model(ep: &Endpoint, plan: &Plan) -> Result<String, RunError> {
    let Some(m) = &plan.model else {
        return discover_model(ep, plan);
    };
    if let Some(t) = &ep.tls {
        let limit = Duration::from_nanos(plan.connect_timeout_ns);
        crate::http::tls::probe(ep.addr, &t.host, t.config.clone(), limit)?;
    }
    Ok(m.clone())
}

#[cfg(test)]
mod tests {
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
