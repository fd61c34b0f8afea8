//! Crash safety: a child process appends turns and says after each commit which turn it
//! wrote; it is killed with SIGKILL at random moments, again and again. Afterwards every turn
//! it reported is there, every stored turn is whole, and the turns are numbered without a
//! gap: a crash leaves the whole turn or none of it.
//!
//! The child is this test binary itself, run again with `KITE_STORE_CHILD` set.

use kite_core::Message;
use kite_store::{SqliteStore, Store, Turn};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

const TRIALS: usize = 1000;

/// The child: appends turns to the conversation named in `KITE_STORE_CHILD` forever.
#[test]
fn child() {
    let Ok(spec) = std::env::var("KITE_STORE_CHILD") else {
        return;
    };
    let (path, id) = spec.split_once('|').unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = SqliteStore::open(path).await.unwrap();
        let mut out = std::io::stdout().lock();
        loop {
            let version = store.get(id).await.unwrap().version;
            let n = version + 1;
            // A turn of several messages, so a torn write would show.
            let turn = Turn::new(vec![
                Message::user(format!("q{n}")),
                Message::assistant(format!("a{n} {}", "x".repeat(200))),
                Message::user(format!("note{n}")),
            ]);
            let got = store.append(id, version, turn).await.unwrap();
            writeln!(out, "committed {got}").unwrap();
            out.flush().unwrap();
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_writers_leave_whole_turns_or_none() {
    let dir = std::env::temp_dir().join(format!("kite-store-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("conversations.db");
    let store = SqliteStore::open(&path).await.unwrap();
    let id = store.create("crash").await.unwrap().id;
    drop(store);

    let exe = std::env::current_exe().unwrap();
    let mut reported = 0i64;
    let mut killed_with_turns = 0;
    for _ in 0..TRIALS {
        let mut child = Command::new(&exe)
            .args(["--exact", "child", "--nocapture", "--test-threads=1"])
            .env("KITE_STORE_CHILD", format!("{}|{id}", path.display()))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut last = 0i64;
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(n) = line.strip_prefix("committed ") {
                    last = n.trim().parse().unwrap_or(last);
                }
            }
            last
        });
        tokio::time::sleep(Duration::from_micros(fastrand::u64(2_000..40_000))).await;
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let last = reader.join().unwrap();
        if last > reported {
            reported = last;
            killed_with_turns += 1;
        }
    }

    let store = SqliteStore::open(&path).await.unwrap();
    let turns = store.turns(&id).await.unwrap();
    let stored = turns.len() as i64;
    let lost = (reported - stored).max(0);
    eprintln!(
        "{TRIALS} children killed ({killed_with_turns} while writing); {reported} turns \
         reported committed, {stored} stored, {lost} lost"
    );
    assert_eq!(lost, 0, "turns reported committed are missing");
    assert!(reported > 0, "no child ever committed a turn");
    for (i, t) in turns.iter().enumerate() {
        let n = i as i64 + 1;
        assert_eq!(t.number, n, "a gap in the turns");
        let texts: Vec<String> = t.turn.messages.iter().map(Message::text).collect();
        assert_eq!(texts.len(), 3, "turn {n} is not whole: {texts:?}");
        assert_eq!(texts[0], format!("q{n}"));
        assert_eq!(texts[1], format!("a{n} {}", "x".repeat(200)));
        assert_eq!(texts[2], format!("note{n}"));
    }
    assert_eq!(store.get(&id).await.unwrap().version, stored);
    let _ = std::fs::remove_dir_all(&dir);
}
