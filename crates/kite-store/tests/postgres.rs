//! The store contract against a real Postgres: a throwaway cluster made for the test run in a
//! temporary folder (initdb, then postgres on a Unix socket there), removed afterwards.
//! `scripts/setup.sh` installs Postgres from Debian's packages; without it these tests say so
//! and pass, unless `KITE_REQUIRE_POSTGRES` is set (as `.ci/run` sets it).

mod suite;

use kite_store::{PostgresStore, Store};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// A Postgres server of its own, stopped and removed when dropped.
struct Cluster {
    dir: PathBuf,
    port: u16,
    server: Child,
    /// Listening on 127.0.0.1 with TLS, not on a Unix socket.
    tls: bool,
}

/// A certificate and its key, as PEM.
struct Pem {
    cert: String,
    key: String,
}

/// The folder holding `initdb` and `postgres`: on PATH, or Debian's versioned folder.
fn bin_dir() -> Option<PathBuf> {
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

/// Runs a Postgres program: as the `postgres` user when this is root (Postgres refuses
/// to run as root).
fn command(bin: &Path, program: &str) -> Command {
    // `/proc/self` belongs to the process's own user.
    let is_root = std::fs::metadata("/proc/self").is_ok_and(|m| {
        use std::os::unix::fs::MetadataExt;
        m.uid() == 0
    });
    if is_root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin.join(program));
        c
    } else {
        Command::new(bin.join(program))
    }
}

impl Cluster {
    fn start() -> Option<Cluster> {
        Self::start_with(None)
    }

    /// A cluster on 127.0.0.1 with TLS, its certificate `pem`.
    fn start_with(pem: Option<&Pem>) -> Option<Cluster> {
        let Some(bin) = bin_dir() else {
            assert!(
                std::env::var_os("KITE_REQUIRE_POSTGRES").is_none(),
                "KITE_REQUIRE_POSTGRES is set but no Postgres is installed (scripts/setup.sh)"
            );
            eprintln!("SKIPPED: no Postgres installed; run scripts/setup.sh");
            return None;
        };
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("kite-pg-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let _ = Command::new("chown").arg("postgres").arg(&dir).status();
        let ok = command(&bin, "initdb")
            .args(["-A", "trust", "-U", "kite", "-D"])
            .arg(dir.join("data"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(ok, "initdb failed in {}", dir.display());
        let port = match pem {
            // A free loopback port, as the system hands them out.
            Some(_) => std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port(),
            None => 20_000 + (std::process::id() % 20_000) as u16 + n as u16 * 7,
        };
        let mut postgres = command(&bin, "postgres");
        postgres
            .arg("-D")
            .arg(dir.join("data"))
            .args(["-p", &port.to_string(), "-k"])
            .arg(&dir);
        match pem {
            None => {
                postgres.args(["-c", "listen_addresses="]);
            }
            Some(pem) => {
                use std::os::unix::fs::PermissionsExt;
                let (cert, key) = (dir.join("server.crt"), dir.join("server.key"));
                std::fs::write(&cert, &pem.cert).unwrap();
                std::fs::write(&key, &pem.key).unwrap();
                std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
                let _ = Command::new("chown")
                    .arg("postgres")
                    .arg(&cert)
                    .arg(&key)
                    .status();
                // Over TCP, TLS or nothing: a connection that works was encrypted.
                let hba = dir.join("data/pg_hba.conf");
                std::fs::write(
                    &hba,
                    "local all all trust\nhostssl all all 127.0.0.1/32 trust\n",
                )
                .unwrap();
                let _ = Command::new("chown").arg("postgres").arg(&hba).status();
                postgres.args(["-c", "listen_addresses=127.0.0.1", "-c", "ssl=on"]);
                postgres
                    .arg("-c")
                    .arg(format!("ssl_cert_file={}", cert.display()));
                postgres
                    .arg("-c")
                    .arg(format!("ssl_key_file={}", key.display()));
            }
        }
        let server = postgres
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Some(Cluster {
            dir,
            port,
            server,
            tls: pem.is_some(),
        })
    }

    fn url(&self) -> String {
        match self.tls {
            true => format!("postgres://kite@localhost:{}/postgres", self.port),
            false => format!(
                "host={} port={} user=kite dbname=postgres",
                self.dir.display(),
                self.port
            ),
        }
    }

    /// A store on this cluster, once the server accepts connections (10 s at most).
    async fn store(&self) -> PostgresStore {
        self.store_at(&self.url()).await
    }

    /// A store at `url`, once the server accepts connections (10 s at most).
    async fn store_at(&self, url: &str) -> PostgresStore {
        let mut last = None;
        for _ in 0..100 {
            match PostgresStore::connect(url).await {
                Ok(s) => return s,
                Err(e) => last = Some(e),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("Postgres did not start: {last:?}");
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // SIGTERM: a smart shutdown; then the folder goes.
        let _ = Command::new("kill")
            .arg(self.server.id().to_string())
            .status();
        let _ = self.server.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_contract_holds_on_postgres() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let store = cluster.store().await;
    suite::round_trip(&store).await;
    suite::a_stale_writer_is_refused(&store).await;
    suite::a_cut_turn_is_stored_as_far_as_it_is_consistent(&store).await;
    suite::compaction_archives_and_summarizes_in_one_step(&store).await;
    // Two writers with connections of their own, as two machines would have; the schema is
    // brought up to date once.
    let other = cluster.store().await;
    suite::two_writers_neither_lose_nor_interleave(&store, &other).await;
    assert!(!store.list().await.unwrap().is_empty());
    suite::fleet::keys_and_teams(&store).await;
    suite::fleet::the_ledger(&store).await;
    suite::fleet::stored_responses(&store).await;
    suite::fleet::owners_see_only_their_own(
        &store.owned_by("key_a"),
        &other.owned_by("key_b"),
        &other,
    )
    .await;
}

#[tokio::test]
async fn a_server_that_never_answers_is_given_up_on() {
    let silent = kite_testkit::SilentServer::start().await;
    let port = silent
        .url()
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_owned();
    let started = std::time::Instant::now();
    let url = format!("host=127.0.0.1 port={port} user=kite password=hunter2 dbname=x");
    let err = PostgresStore::connect(&url).await.unwrap_err().to_string();
    assert!(err.contains("no answer"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(30));
}

/// A CA, and a certificate for `localhost` it signed.
fn certificates() -> (Pem, Pem) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let ca = Pem {
        cert: ca_cert.pem(),
        key: ca_key.serialize_pem(),
    };
    let key = KeyPair::generate().unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let cert = CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let server = Pem {
        cert: cert.pem(),
        key: key.serialize_pem(),
    };
    (ca, server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_follows_sslmode_and_sslrootcert_as_libpq_does() {
    let (ca, server) = certificates();
    let Some(cluster) = Cluster::start_with(Some(&server)) else {
        return;
    };
    let dir = tempfile_dir();
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, &ca.cert).unwrap();
    let (other_ca, _) = certificates();
    let other_file = dir.join("other-ca.pem");
    std::fs::write(&other_file, &other_ca.cert).unwrap();
    let url = |params: &str| format!("{}?{params}", cluster.url());

    // The certificate chains to the CA named and names the host.
    let full = url(&format!(
        "sslmode=verify-full&sslrootcert={}",
        ca_file.display()
    ));
    let store = cluster.store_at(&full).await;
    suite::round_trip(&store).await;

    // The default encrypts without checking, as libpq does (the server takes nothing else).
    let e = PostgresStore::connect(&url("sslmode=disable"))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("no encryption") || e.contains("pg_hba"), "{e}");
    PostgresStore::connect(&cluster.url()).await.unwrap();
    PostgresStore::connect(&url("sslmode=require"))
        .await
        .unwrap();

    // Another CA, or none, is refused when the chain is checked.
    for refused in [
        url(&format!(
            "sslmode=verify-ca&sslrootcert={}",
            other_file.display()
        )),
        url(&format!(
            "sslmode=require&sslrootcert={}",
            other_file.display()
        )),
        url("sslmode=verify-full"),
        url("sslmode=verify-full&sslrootcert=system"),
    ] {
        let e = PostgresStore::connect(&refused)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("certificate") && e.contains("sslrootcert"),
            "{refused}: {e}"
        );
    }

    // The system's roots check names too, so only with verify-full.
    let e = PostgresStore::connect(&url("sslmode=verify-ca&sslrootcert=system"))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("verify-full"), "{e}");

    // verify-ca checks the chain only: 127.0.0.1 is not the certificate's name.
    let by_ip = format!(
        "postgres://kite@127.0.0.1:{}/postgres?sslmode=verify-ca&sslrootcert={}",
        cluster.port,
        ca_file.display()
    );
    PostgresStore::connect(&by_ip).await.unwrap();
    let e = PostgresStore::connect(&by_ip.replace("verify-ca", "verify-full"))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("certificate"), "{e}");

    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kite-pg-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
