//! A command with the network reaches the internet and nothing of the host or of private
//! networks, as root and as an ordinary user. The internet is a test host with a public
//! address (TEST-NET-2) in a network namespace of its own beside a private one, joined to
//! the host by a veth pair: made as root, so these tests need root.

mod common;

use common::{as_nobody, root, sandboxed, text};
use kite_skills::SandboxOptions;
use kite_skills::sandbox::Cidr;
use std::io::Write;
use std::net::TcpListener;
use std::process::Command;

/// The "public" host and the private one, both in the test namespace.
const PUBLIC: &str = "198.51.100.10";
const PRIVATE: &str = "10.99.0.10";
/// Where the test hosts listen.
const PORT: u16 = 8080;

/// The test network, torn down when dropped.
struct Topology {
    ns: String,
    veth: String,
    server: std::process::Child,
}

fn ip(args: &str) {
    let ok = Command::new("ip")
        .args(args.split_whitespace())
        .status()
        .unwrap();
    assert!(ok.success(), "ip {args}");
}

impl Topology {
    /// The namespace, its addresses and routes, and a server on both test hosts that says
    /// which address it was reached on. Returns the host's own address on the veth.
    fn up() -> (Self, String) {
        let id = std::process::id() % 250 + 1;
        let (ns, veth) = (format!("kite-pub-{id}"), format!("kvh{id}"));
        let (host, peer) = (format!("10.213.{id}.1"), format!("10.213.{id}.2"));
        ip(&format!("netns add {ns}"));
        let topology = Self {
            server: Command::new("true").spawn().unwrap(),
            ns: ns.clone(),
            veth: veth.clone(),
        };
        ip(&format!("link add {veth} type veth peer name kvp{id}"));
        ip(&format!("link set kvp{id} netns {ns}"));
        ip(&format!("addr add {host}/30 dev {veth}"));
        ip(&format!("link set {veth} up"));
        let inside = |args: String| ip(&format!("-n {ns} {args}"));
        inside(format!("addr add {peer}/30 dev kvp{id}"));
        inside(format!("link set kvp{id} up"));
        inside("link set lo up".into());
        inside(format!("addr add {PUBLIC}/32 dev lo"));
        inside(format!("addr add {PRIVATE}/32 dev lo"));
        inside(format!("route add default via {host}"));
        ip(&format!("route add {PUBLIC}/32 via {peer}"));
        ip(&format!("route add {PRIVATE}/32 via {peer}"));
        let server = Command::new("ip")
            .args(["netns", "exec", &ns, "python3", "-c"])
            .arg(format!(
                "import socket\n\
                 s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n\
                 s.bind(('0.0.0.0', {PORT})); s.listen()\n\
                 while True:\n    c, _ = s.accept(); c.sendall(b'TESTHOST ' + c.getsockname()[0].encode()); c.close()"
            ))
            .spawn()
            .unwrap();
        let mut topology = topology;
        topology.server = server;
        std::thread::sleep(std::time::Duration::from_millis(300));
        (topology, host)
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
        for args in [
            format!("route del {PUBLIC}/32"),
            format!("route del {PRIVATE}/32"),
            format!("link del {}", self.veth),
            format!("netns del {}", self.ns),
        ] {
            let _ = Command::new("ip").args(args.split_whitespace()).status();
        }
    }
}

/// A listener of the host's that answers every connection, and whether anyone came.
fn host_listener(addr: &str) -> (u16, std::sync::Arc<std::sync::atomic::AtomicBool>) {
    let listener = TcpListener::bind(addr).unwrap();
    let port = listener.local_addr().unwrap().port();
    let reached = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = reached.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            let _ = (&stream).write_all(b"THE HOST");
        }
    });
    (port, reached)
}

/// What a sandboxed command reached of `targets` (`host:port`), one line each.
async fn probe(targets: &[String], allow: &[&str]) -> String {
    let options = SandboxOptions {
        network: true,
        allow_networks: allow.iter().map(|a| a.parse::<Cidr>().unwrap()).collect(),
        ..SandboxOptions::default()
    };
    let list = targets
        .iter()
        .map(|t| format!("'{t}'"))
        .collect::<Vec<_>>()
        .join(", ");
    let command = format!(
        "cat /etc/resolv.conf; python3 -c \"
import socket
for t in [{list}]:
    host, port = t.rsplit(':', 1)
    try:
        c = socket.create_connection((host, int(port)), 3)
        print('REACHED', t, c.recv(64).decode())
    except Exception as e:
        print('BLOCKED', t, e)
\""
    );
    let (out, _ws) = sandboxed(&command, options).await;
    text(&out)
}

fn line<'a>(said: &'a str, target: &str) -> &'a str {
    said.lines()
        .find(|l| l.split_whitespace().nth(1) == Some(target))
        .unwrap_or_else(|| panic!("{target} not tried: {said}"))
}

/// The checks, as whoever runs them: the targets come from the environment the root half
/// sets.
async fn reaches_the_internet_only() {
    let get = |k: &str| std::env::var(k).unwrap();
    let public = format!("{PUBLIC}:{PORT}");
    let private = format!("{PRIVATE}:{PORT}");
    let loopback = format!("127.0.0.1:{}", get("KITE_TEST_LOOPBACK_PORT"));
    let own = format!(
        "{}:{}",
        get("KITE_TEST_HOST_ADDR"),
        get("KITE_TEST_ANY_PORT")
    );
    let metadata = "169.254.169.254:80".to_owned();
    let targets = [
        public.clone(),
        private.clone(),
        loopback.clone(),
        own.clone(),
        metadata.clone(),
    ];
    let said = probe(&targets, &[]).await;
    println!("{said}");
    assert!(said.contains("nameserver 169.254.1.53"), "{said}");
    assert!(
        line(&said, &public).starts_with(&format!("REACHED {public} TESTHOST {PUBLIC}")),
        "{said}"
    );
    for blocked in [&private, &loopback, &own, &metadata] {
        assert!(line(&said, blocked).starts_with("BLOCKED"), "{said}");
    }
    assert!(!said.contains("THE HOST"), "{said}");
    // A private network the options name is reached; the rest stay out of reach.
    let said = probe(&targets, &[&format!("{PRIVATE}/32")]).await;
    assert!(line(&said, &private).starts_with("REACHED"), "{said}");
    assert!(line(&said, &loopback).starts_with("BLOCKED"), "{said}");
}

#[tokio::test]
async fn a_command_reaches_the_internet_and_nothing_of_the_host() {
    if std::env::var_os("KITE_TEST_SKILLS").is_some() {
        // The rerun as an ordinary user: the root half made the network.
        return reaches_the_internet_only().await;
    }
    if !root() {
        eprintln!("the test network is made as root: skipped");
        return;
    }
    let (_topology, host) = Topology::up();
    let (loopback_port, loopback_reached) = host_listener("127.0.0.1:0");
    let (any_port, any_reached) = host_listener("0.0.0.0:0");
    let env = [
        ("KITE_TEST_LOOPBACK_PORT", loopback_port.to_string()),
        ("KITE_TEST_ANY_PORT", any_port.to_string()),
        ("KITE_TEST_HOST_ADDR", host),
    ];
    for (k, v) in &env {
        // SAFETY: set before anything else in this test binary reads the environment, and
        // this binary has no other test that runs meanwhile.
        unsafe { std::env::set_var(k, v) };
    }
    reaches_the_internet_only().await;
    as_nobody(
        &["a_command_reaches_the_internet_and_nothing_of_the_host"],
        &env,
    );
    assert!(!loopback_reached.load(std::sync::atomic::Ordering::SeqCst));
    assert!(!any_reached.load(std::sync::atomic::Ordering::SeqCst));
}
