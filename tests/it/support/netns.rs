//! A packet-level delay for tests (issue 40), where the kernel has no `netem`: two network
//! namespaces, the client's (10.40.0.1) and the server's (10.40.0.2), each with a veth whose
//! peer is in a third, the bridge's. There a thread per direction reads whole frames from one
//! peer (an `AF_PACKET` socket) and another writes them to the other when due: `fixed` +
//! uniform jitter in [0, `jitter`] per frame, in order (a frame never overtakes the one
//! before it), optionally capped to `bytes_per_s`, through a bounded queue (`QUEUE_FRAMES`;
//! a frame arriving at a full one is dropped and counted). ARP passes like any frame.
//!
//! Unlike `relay`, nothing ends TCP: the client's kernel sees the delayed path and its
//! `TCP_INFO` round trip is the bridge's. Offloads: veth passes TSO/GSO frames of up to
//! 64 KiB whose checksums are not yet computed; the sockets use `PACKET_VNET_HDR`, which
//! reads each frame with its virtio-net header (GSO size, checksum offsets) and writes it
//! back with it, so the kernel segments and checksums as if one veth had been crossed.
//! Without it (measured with `tools/netdelay --no-vnet-hdr`) even the SYN's partial checksum
//! is dropped and no connection opens. `tools/netdelay` is the same bridge as a script.
//!
//! Names carry the process id; the namespaces (and their veths with them) are deleted when
//! the `Netns` drops, a failing test's unwinding included. Needs root and `ip`.

use super::relay::Path;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, RecvTimeoutError, TrySendError};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// The client's and the server's addresses, on one /24 across the bridge.
pub const CLIENT: &str = "10.40.0.1";
pub const SERVER: &str = "10.40.0.2";
/// Frames each direction holds before it drops.
const QUEUE_FRAMES: usize = 4096;
const ETH_P_ALL: u16 = 0x0003;
const PACKET_VNET_HDR: libc::c_int = 15;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
/// The virtio-net header `PACKET_VNET_HDR` puts before each frame.
const VNET_HDR_BYTES: usize = 10;

/// What crossed the bridge, both directions together.
#[derive(Default, Debug)]
pub struct BridgeCount {
    pub frames: AtomicU64,
    pub dropped: AtomicU64,
    pub send_errors: AtomicU64,
    /// The largest frame (GSO frames exceed the 1,514-byte MTU frame).
    pub max_frame_bytes: AtomicU64,
}

/// The three namespaces and the bridge; torn down when dropped.
pub struct Netns {
    names: [String; 3],
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    pub count: Arc<BridgeCount>,
}

/// Whether this host can make namespaces (root, `ip`); `Err` says why not.
pub fn available() -> Result<(), String> {
    // SAFETY: plain syscall.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root".into());
    }
    match Command::new("ip").args(["netns", "list"]).output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "`ip netns list` failed: {}",
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(e) => Err(format!("no `ip` ({e})")),
    }
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("ip runs");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Netns {
    /// The namespaces, their veths and the bridge delaying each direction as `path` says.
    pub fn start(path: Path) -> Netns {
        let pid = std::process::id();
        let names = [
            format!("rb40c{pid}"),
            format!("rb40s{pid}"),
            format!("rb40b{pid}"),
        ];
        let mut ns = Netns {
            names,
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
            count: Arc::default(),
        };
        // From here a failure unwinds through `drop`, which deletes what was made.
        let [c, s, b] = ns.names.clone();
        for n in &ns.names {
            ip(&["netns", "add", n]);
            ip(&["-n", n, "link", "set", "lo", "up"]);
            let off = "/proc/sys/net/ipv6/conf/all/disable_ipv6";
            // IPv6 off: no router solicitations or address checks cross the bridge.
            let _ = ns.within(n, || std::fs::write(off, "1"));
        }
        for (side, peer, addr) in [(c.as_str(), "c0", CLIENT), (s.as_str(), "s0", SERVER)] {
            let link = ["-n", b.as_str(), "link", "add", peer, "type", "veth"];
            ip(&[&link[..], &["peer", "name", "eth0", "netns", side]].concat());
            let cidr = format!("{addr}/24");
            ip(&["-n", side, "addr", "add", cidr.as_str(), "dev", "eth0"]);
            ip(&["-n", side, "link", "set", "eth0", "up"]);
            ip(&["-n", b.as_str(), "link", "set", peer, "up"]);
        }
        let (cs, ss) = ns.within(&b, || (packet_socket("c0"), packet_socket("s0")));
        let (cs, ss) = (Arc::new(cs), Arc::new(ss));
        for (k, (from, to)) in [(cs.clone(), ss.clone()), (ss, cs)].into_iter().enumerate() {
            let seed = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(k as u64 + 1);
            ns.direction(from, to, path, seed);
        }
        ns
    }

    /// Runs `f` on a thread of its own in namespace `name` (threads it starts stay there).
    fn within<T: Send>(&self, name: &str, f: impl FnOnce() -> T + Send) -> T {
        thread::scope(|scope| {
            scope
                .spawn(|| {
                    let file = std::fs::File::open(format!("/run/netns/{name}"))
                        .expect("the namespace's file");
                    // SAFETY: a namespace fd; only this (scoped) thread moves.
                    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
                    assert_eq!(rc, 0, "setns {name}: {}", std::io::Error::last_os_error());
                    f()
                })
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e))
        })
    }

    /// `f` in the client's namespace.
    pub fn in_client<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        self.within(&self.names[0], f)
    }

    /// `f` in the server's namespace.
    pub fn in_server<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        self.within(&self.names[1], f)
    }

    /// One direction: a reader stamps each frame's due time, a writer sends it then.
    fn direction(&mut self, from: Arc<OwnedFd>, to: Arc<OwnedFd>, path: Path, seed: u64) {
        let (tx, rx) = sync_channel::<(Instant, Vec<u8>)>(QUEUE_FRAMES);
        let (stop, count) = (self.stop.clone(), self.count.clone());
        self.threads.push(thread::spawn(move || {
            let mut rng = seed | 1;
            let mut last = Instant::now();
            let mut buf = vec![0u8; 1 << 17];
            while !stop.load(Ordering::Relaxed) {
                let Some(n) = recv(from.as_raw_fd(), &mut buf) else {
                    continue;
                };
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let u = (rng >> 11) as f64 / (1u64 << 53) as f64;
                let mut due = Instant::now() + path.fixed + path.jitter.mul_f64(u);
                let wire = (n - VNET_HDR_BYTES) as u64;
                if let Some(bw) = path.bytes_per_s {
                    due = due.max(last + Duration::from_secs_f64(wire as f64 / bw as f64));
                }
                due = due.max(last);
                match tx.try_send((due, buf[..n].to_vec())) {
                    Ok(()) => last = due,
                    Err(TrySendError::Full(_)) => {
                        count.dropped.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(TrySendError::Disconnected(_)) => return,
                }
                count.max_frame_bytes.fetch_max(wire, Ordering::Relaxed);
            }
        }));
        let (stop, count) = (self.stop.clone(), self.count.clone());
        self.threads.push(thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let (due, frame) = match rx.recv_timeout(Duration::from_millis(50)) {
                    Ok(f) => f,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => return,
                };
                let now = Instant::now();
                if due > now {
                    thread::sleep(due - now);
                }
                // SAFETY: `frame` is valid for its length; `to` is a bound packet socket.
                let sent =
                    unsafe { libc::send(to.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
                match sent < 0 {
                    true => count.send_errors.fetch_add(1, Ordering::Relaxed),
                    false => count.frames.fetch_add(1, Ordering::Relaxed),
                };
            }
        }));
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
    }
}

/// A raw packet socket on `ifname` (of the calling thread's namespace), every protocol, its
/// own sends not read back, frames with their virtio-net header, reads that give up after
/// 50 ms (so the reader sees `stop`).
fn packet_socket(ifname: &str) -> OwnedFd {
    let proto = ETH_P_ALL.to_be();
    // SAFETY: plain syscalls on a descriptor owned here; each result is checked.
    unsafe {
        let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, libc::c_int::from(proto));
        assert!(fd >= 0, "AF_PACKET: {}", std::io::Error::last_os_error());
        let fd = OwnedFd::from_raw_fd(fd);
        let on: libc::c_int = 1;
        for opt in [PACKET_VNET_HDR, PACKET_IGNORE_OUTGOING] {
            let rc = libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                opt,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
            assert_eq!(
                rc,
                0,
                "packet option {opt}: {}",
                std::io::Error::last_os_error()
            );
        }
        let tv = libc::timeval {
            tv_sec: 0,
            tv_usec: 50_000,
        };
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        );
        let name = CString::new(ifname).unwrap();
        let index = libc::if_nametoindex(name.as_ptr());
        assert!(index > 0, "no interface {ifname}");
        let mut addr: libc::sockaddr_ll = std::mem::zeroed();
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = proto;
        addr.sll_ifindex = index as i32;
        let rc = libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        );
        assert_eq!(rc, 0, "bind {ifname}: {}", std::io::Error::last_os_error());
        fd
    }
}

/// One frame (with its virtio-net header) into `buf`; `None` on a timeout or error.
fn recv(fd: RawFd, buf: &mut [u8]) -> Option<usize> {
    // SAFETY: `buf` is valid for its length.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
    (n > VNET_HDR_BYTES as isize).then_some(n as usize)
}
