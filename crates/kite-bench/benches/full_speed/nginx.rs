//! nginx on loopback answering every `POST /v1/chat/completions` with one fixed stream, so
//! the upstream costs next to nothing: one process (`master_process off`), no access log,
//! its files in a scratch folder removed at the end.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where nginx is: `$KITE_BENCH_NGINX`, else on `PATH` or in `/usr/sbin` (Debian's).
pub(crate) fn find() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("KITE_BENCH_NGINX") {
        return Some(PathBuf::from(bin)).filter(|b| b.exists());
    }
    super::on_path("nginx", &["/usr/sbin", "/usr/local/sbin", "/sbin"])
}

/// nginx, serving until dropped.
pub(crate) struct Nginx {
    child: std::process::Child,
    pub(crate) addr: SocketAddr,
    dir: PathBuf,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM lets it close its socket and remove its pid file; then it is waited for.
        let pid = self.child.id() as libc::pid_t;
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The configuration: `body` as the answer (`text/event-stream`) to `path`, on `addr`.
fn config(dir: &Path, addr: SocketAddr, path: &str, body: &str) -> String {
    let d = dir.display();
    // Each temporary path in the scratch folder, so nothing needs Debian's own folders.
    let temps = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]
        .map(|t| format!("  {t}_temp_path {d}/{t};\n"))
        .concat();
    format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
         error_log {d}/error.log warn;\nevents {{ worker_connections 16384; }}\nhttp {{\n\
         \x20 access_log off;\n{temps}  keepalive_requests 100000000;\n  keepalive_timeout 300s;\n\
         \x20 server {{\n    listen {addr} backlog=4096;\n    location = {path} {{\n\
         \x20     default_type text/event-stream;\n      return 200 '{body}';\n    }}\n  }}\n}}\n"
    )
}

impl Nginx {
    /// nginx answering `POST path` with `body`, once it accepts connections; an error
    /// says why it did not start.
    pub(crate) fn start(bin: &Path, path: &str, body: &str) -> Result<Nginx, String> {
        // nginx takes a quoted string's characters as they are, but for `'` and `\`.
        if body.contains(['\'', '\\']) {
            return Err("the answer has a quote or backslash nginx would read".into());
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let dir =
            std::env::temp_dir().join(format!("kite-bench-nginx-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let conf = dir.join("nginx.conf");
        std::fs::write(&conf, config(&dir, addr, path, body)).map_err(|e| e.to_string())?;
        let child = std::process::Command::new(bin)
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(&conf)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("{}: {e}", bin.display()))?;
        let mut nginx = Nginx { child, addr, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(addr).is_ok() {
                return Ok(nginx);
            }
            if let Ok(Some(status)) = nginx.child.try_wait() {
                let log = std::fs::read_to_string(nginx.dir.join("error.log")).unwrap_or_default();
                return Err(format!("nginx exited ({status}): {}", log.trim()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err("nginx did not listen within 10 s".into())
    }
}
