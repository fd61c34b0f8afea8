//! The store contract against SQLite, and what is SQLite's own: the file, its schema, and a
//! file that is no database.

mod suite;

use kite_store::{SqliteStore, Store, StoreError};
use std::path::PathBuf;

fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kite-store-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

async fn fresh(name: &str) -> SqliteStore {
    SqliteStore::open(folder(name).join("conversations.db"))
        .await
        .unwrap()
}

#[tokio::test]
async fn round_trip() {
    suite::round_trip(&fresh("round-trip").await).await;
}

#[tokio::test]
async fn the_fleets_state_is_kept() {
    let store = fresh("fleet").await;
    suite::fleet::keys_and_teams(&store).await;
    suite::fleet::the_ledger(&store).await;
    suite::fleet::stored_responses(&store).await;
    suite::fleet::owners_see_only_their_own(
        &store.owned_by("key_a"),
        &store.owned_by("key_b"),
        &store,
    )
    .await;
}

#[tokio::test]
async fn a_stale_writer_is_refused() {
    suite::a_stale_writer_is_refused(&fresh("stale").await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_writers_neither_lose_nor_interleave() {
    // Two connections to one file, as two processes would have.
    let a = fresh("two-writers").await;
    let b = SqliteStore::open(a.path()).await.unwrap();
    suite::two_writers_neither_lose_nor_interleave(&a, &b).await;
}

#[tokio::test]
async fn a_cut_turn_is_stored_as_far_as_it_is_consistent() {
    suite::a_cut_turn_is_stored_as_far_as_it_is_consistent(&fresh("cut").await).await;
}

#[tokio::test]
async fn compaction_archives_and_summarizes_in_one_step() {
    suite::compaction_archives_and_summarizes_in_one_step(&fresh("compact").await).await;
}

#[tokio::test]
async fn the_file_is_in_wal_mode_and_keeps_what_was_written() {
    let store = fresh("reopen").await;
    let c = store.create("kept").await.unwrap();
    store
        .append(
            &c.id,
            0,
            kite_store::Turn::new(vec![kite_core::Message::user("hi")]),
        )
        .await
        .unwrap();
    let path = store.path().to_path_buf();
    drop(store);
    let again = SqliteStore::open(&path).await.unwrap();
    assert_eq!(again.get(&c.id).await.unwrap().version, 1);
    let conn = rusqlite_mode(&path);
    assert_eq!(conn, "wal");
}

fn rusqlite_mode(path: &std::path::Path) -> String {
    // The journal mode is written in the file's header: bytes 18 and 19 are 2 in WAL mode.
    let bytes = std::fs::read(path).unwrap();
    if bytes[18] == 2 && bytes[19] == 2 {
        "wal".into()
    } else {
        "rollback".into()
    }
}

#[tokio::test]
async fn a_file_that_is_no_database_is_named_with_what_to_do() {
    let dir = folder("corrupt");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("conversations.db");
    std::fs::write(&path, vec![0x5a; 8192]).unwrap();
    match SqliteStore::open(&path).await {
        Err(e @ StoreError::Corrupt { .. }) => {
            let shown = e.to_string();
            assert!(shown.contains(&path.display().to_string()), "{shown}");
            assert!(shown.contains("move it aside"), "{shown}");
        }
        other => panic!("{other:?}"),
    }
    // Nothing of it was changed.
    assert_eq!(std::fs::read(&path).unwrap(), vec![0x5a; 8192]);
}

#[tokio::test]
async fn a_store_from_a_newer_kite_is_refused() {
    let store = fresh("too-new").await;
    let path = store.path().to_path_buf();
    drop(store);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
    }
    assert!(matches!(
        SqliteStore::open(&path).await,
        Err(StoreError::TooNew { found: 99, .. })
    ));
}

#[tokio::test]
async fn a_new_store_is_readable_by_its_user_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = folder("private");
    let store = SqliteStore::open(dir.join("deep/er/conversations.db"))
        .await
        .unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(store.path()), 0o600);
    assert_eq!(mode(&dir.join("deep/er")), 0o700);
    assert_eq!(mode(&dir.join("deep")), 0o700);
}
