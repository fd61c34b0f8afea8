//! The store contract against a real Postgres: a throwaway cluster made for the test run in a
//! temporary folder (initdb, then postgres on a Unix socket there), removed afterwards.
//! `scripts/setup.sh --tests` installs Postgres from Debian's packages; without it these tests say so
//! and pass, unless `KITE_REQUIRE_POSTGRES` is set (as `.ci/run` sets it).

mod suite;

use kite_store::{PostgresStore, Store};
use kite_testkit::engines::Postgres;
use std::path::PathBuf;
use std::time::Duration;

/// A certificate and its key, as PEM.
struct Pem {
    cert: String,
    key: String,
}

/// A store at `url`, once the server accepts connections (10 s at most).
async fn store_at(url: &str) -> PostgresStore {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_contract_holds_on_postgres() {
    let Some(cluster) = Postgres::start() else {
        return;
    };
    let store = store_at(&cluster.url()).await;
    suite::round_trip(&store).await;
    suite::a_stale_writer_is_refused(&store).await;
    suite::a_cut_turn_is_stored_as_far_as_it_is_consistent(&store).await;
    suite::compaction_archives_and_summarizes_in_one_step(&store).await;
    // Two writers with connections of their own, as two machines would have; the schema is
    // brought up to date once.
    let other = store_at(&cluster.url()).await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_restarts_is_used_again_once_back() {
    let Some(mut cluster) = Postgres::start() else {
        return;
    };
    let store = store_at(&cluster.url()).await;
    let c = store.create("before").await.unwrap();
    cluster.stop();
    let e = store.get(&c.id).await.unwrap_err().to_string();
    assert!(!e.is_empty());
    cluster.run();
    // The pool replaces the connection the server dropped: no new store is needed.
    let mut back = None;
    for _ in 0..50 {
        if let Ok(got) = store.get(&c.id).await {
            back = Some(got);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(back.map(|b| b.title), Some("before".to_owned()));
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
    let Some(cluster) = Postgres::start_with(Some((&server.cert, &server.key))) else {
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
    let store = store_at(&full).await;
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
