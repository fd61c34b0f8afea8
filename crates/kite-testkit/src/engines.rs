//! Real engines for the tests, started for each test in a folder of its own and stopped
//! when dropped: a throwaway Postgres cluster (initdb, then postgres on a Unix socket or on
//! loopback with TLS), a `redis-server` keeping nothing on disk, and haproxy in front of
//! several servers, round robin. `scripts/setup.sh --tests` installs all three from Debian; without
//! one, [`Postgres::start`], [`Redis::start`] and [`Haproxy::start`] say so and give
//! `None`, unless `KITE_REQUIRE_POSTGRES` or `KITE_REQUIRE_FLEET` (set by `.ci/run`) asks
//! for them, when they fail instead.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

static N: AtomicU32 = AtomicU32::new(0);

/// A free loopback port, as the system hands them out.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn missing(what: &str, required_by: &str) {
    assert!(
        std::env::var_os(required_by).is_none(),
        "{required_by} is set but {what} is not installed (scripts/setup.sh --tests)"
    );
    eprintln!("SKIPPED: {what} is not installed; run scripts/setup.sh --tests");
}

fn folder(kind: &str) -> PathBuf {
    let n = N.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("kite-{kind}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a folder for the engine");
    dir
}

fn is_root() -> bool {
    // `/proc/self` belongs to the process's own user.
    std::fs::metadata("/proc/self").is_ok_and(|m| {
        use std::os::unix::fs::MetadataExt;
        m.uid() == 0
    })
}

fn signal(child: &Child, name: &str) {
    let _ = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status();
}

/// Waits (10 s at most) until something listens on `port`.
fn wait_for(port: u16, what: &str) {
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{what} did not start listening on {port}");
}

/// A Postgres server of its own.
pub struct Postgres {
    dir: PathBuf,
    bin: PathBuf,
    /// Its port (on loopback with TLS, else the Unix socket's number).
    pub port: u16,
    server: Option<Child>,
    tls: bool,
}

/// The folder holding `initdb` and `postgres`: on PATH, or Debian's versioned folder.
fn postgres_bin() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .find(|d| d.join("initdb").is_file() && d.join("postgres").is_file())
    });
    on_path.or_else(|| {
        let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .flatten()
            .map(|e| e.path().join("bin"))
            .filter(|b| b.join("initdb").is_file())
            .collect();
        found.sort();
        found.pop()
    })
}

/// A Postgres program: as the `postgres` user when this is root (Postgres refuses to run
/// as root).
fn postgres_command(bin: &Path, program: &str) -> Command {
    match is_root() {
        true => {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(bin.join(program));
            c
        }
        false => Command::new(bin.join(program)),
    }
}

fn chown(paths: &[&Path]) {
    if is_root() {
        let _ = Command::new("chown").arg("postgres").args(paths).status();
    }
}

impl Postgres {
    /// A cluster on a Unix socket in its folder.
    pub fn start() -> Option<Self> {
        Self::start_with(None)
    }

    /// A cluster on 127.0.0.1 with TLS, its certificate and key `pem` (PEM text); with
    /// none, on a Unix socket only.
    pub fn start_with(pem: Option<(&str, &str)>) -> Option<Self> {
        let Some(bin) = postgres_bin() else {
            missing("Postgres", "KITE_REQUIRE_POSTGRES");
            return None;
        };
        let dir = folder("pg");
        chown(&[&dir]);
        let ok = postgres_command(&bin, "initdb")
            .args(["-A", "trust", "-U", "kite", "-D"])
            .arg(dir.join("data"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("initdb runs")
            .success();
        assert!(ok, "initdb failed in {}", dir.display());
        if let Some((cert, key)) = pem {
            use std::os::unix::fs::PermissionsExt;
            let (c, k) = (dir.join("server.crt"), dir.join("server.key"));
            std::fs::write(&c, cert).unwrap();
            std::fs::write(&k, key).unwrap();
            std::fs::set_permissions(&k, std::fs::Permissions::from_mode(0o600)).unwrap();
            // Over TCP, TLS or nothing: a connection that works was encrypted.
            let hba = dir.join("data/pg_hba.conf");
            std::fs::write(
                &hba,
                "local all all trust\nhostssl all all 127.0.0.1/32 trust\n",
            )
            .unwrap();
            chown(&[&c, &k, &hba]);
        }
        let mut pg = Self {
            dir,
            bin,
            port: free_port(),
            server: None,
            tls: pem.is_some(),
        };
        pg.run();
        Some(pg)
    }

    /// Starts the server (again, after [`Postgres::stop`]), on the same port and data.
    pub fn run(&mut self) {
        let mut postgres = postgres_command(&self.bin, "postgres");
        postgres
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-p", &self.port.to_string(), "-k"])
            .arg(&self.dir);
        match self.tls {
            false => {
                postgres.args(["-c", "listen_addresses="]);
            }
            true => {
                postgres.args(["-c", "listen_addresses=127.0.0.1", "-c", "ssl=on"]);
                postgres.arg("-c").arg(format!(
                    "ssl_cert_file={}",
                    self.dir.join("server.crt").display()
                ));
                postgres.arg("-c").arg(format!(
                    "ssl_key_file={}",
                    self.dir.join("server.key").display()
                ));
            }
        }
        self.server = Some(
            postgres
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("postgres starts"),
        );
        // Accepting connections once its socket file is there.
        let socket = self.dir.join(format!(".s.PGSQL.{}", self.port));
        for _ in 0..200 {
            if socket.exists() {
                std::thread::sleep(Duration::from_millis(100));
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("postgres did not start in {}", self.dir.display());
    }

    /// Stops the server at once (a fast shutdown: its clients are cut off).
    pub fn stop(&mut self) {
        let Some(mut server) = self.server.take() else {
            return;
        };
        // The postmaster itself (runuser passes on no signal but SIGTERM, which waits for
        // every client to leave).
        let pid = std::fs::read_to_string(self.dir.join("data/postmaster.pid"))
            .ok()
            .and_then(|s| s.lines().next().map(str::to_owned));
        match pid {
            Some(pid) => {
                let _ = Command::new("kill").args(["-INT", &pid]).status();
            }
            None => signal(&server, "INT"),
        }
        let _ = server.wait();
    }

    /// The connection string: libpq's key=value form on the Unix socket, or a URL on
    /// loopback with TLS.
    pub fn url(&self) -> String {
        match self.tls {
            true => format!("postgres://kite@localhost:{}/postgres", self.port),
            false => format!(
                "host={} port={} user=kite dbname=postgres",
                self.dir.display(),
                self.port
            ),
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A `redis-server` of its own, keeping nothing on disk.
pub struct Redis {
    /// Its port on 127.0.0.1.
    pub port: u16,
    server: Option<Child>,
}

impl Redis {
    /// A server on a free loopback port, once it listens.
    pub fn start() -> Option<Self> {
        if Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_err()
        {
            missing("redis-server", "KITE_REQUIRE_FLEET");
            return None;
        }
        let mut redis = Self {
            port: free_port(),
            server: None,
        };
        redis.run();
        Some(redis)
    }

    /// Starts the server (again, after [`Redis::stop`]) on the same port, empty.
    pub fn run(&mut self) {
        let server = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.server = Some(server);
        wait_for(self.port, "redis-server");
    }

    /// Stops the server at once.
    pub fn stop(&mut self) {
        if let Some(mut server) = self.server.take() {
            let _ = server.kill();
            let _ = server.wait();
        }
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

/// haproxy in front of several HTTP servers, each request to the next (round robin),
/// skipping one whose `/ready` fails.
pub struct Haproxy {
    /// Its port on 127.0.0.1.
    pub port: u16,
    dir: PathBuf,
    server: Child,
}

impl Haproxy {
    /// haproxy in front of the servers on `ports` (on 127.0.0.1).
    pub fn start(ports: &[u16]) -> Option<Self> {
        if Command::new("haproxy")
            .arg("-v")
            .stdout(Stdio::null())
            .status()
            .is_err()
        {
            missing("haproxy", "KITE_REQUIRE_FLEET");
            return None;
        }
        let dir = folder("haproxy");
        let port = free_port();
        let mut config = format!(
            "global\n  maxconn 4096\n\ndefaults\n  mode http\n  timeout connect 2s\n  \
             timeout client 120s\n  timeout server 120s\n  option redispatch\n  retries 2\n\n\
             frontend gateway\n  bind 127.0.0.1:{port}\n  default_backend replicas\n\n\
             backend replicas\n  balance roundrobin\n  option httpchk GET /ready\n"
        );
        for (i, p) in ports.iter().enumerate() {
            config.push_str(&format!(
                "  server r{i} 127.0.0.1:{p} check inter 300ms fall 2 rise 1\n"
            ));
        }
        let file = dir.join("haproxy.cfg");
        std::fs::write(&file, config).unwrap();
        let server = Command::new("haproxy")
            .arg("-f")
            .arg(&file)
            .arg("-db")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("haproxy starts");
        wait_for(port, "haproxy");
        Some(Self { port, dir, server })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
