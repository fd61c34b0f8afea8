//! The store contract, as tests any backend must pass: each takes a fresh store.

pub(crate) mod fleet;

use kite_core::{Message, Part, Role, ToolCall, ToolResult, Usage};
use kite_store::{Store, StoreError, Turn};

fn turn(question: &str, answer: &str) -> Turn {
    let mut t = Turn::new(vec![Message::user(question), Message::assistant(answer)]);
    t.usage = Usage {
        input_tokens: 3,
        output_tokens: 2,
        total_tokens: 5,
        ..Usage::default()
    };
    t.provider = Some("openai".into());
    t.model = Some("gpt-4o-mini".into());
    t
}

/// Create, append, read back, list, delete.
pub(crate) async fn round_trip(store: &dyn Store) {
    let c = store.create("  Trip\nto   Lisbon ").await.unwrap();
    assert_eq!((c.title.as_str(), c.version), ("Trip to Lisbon", 0));
    let v = store
        .append(&c.id, 0, turn("Where to eat?", "Alfama."))
        .await
        .unwrap();
    let v = store
        .append(&c.id, v, turn("And to sleep?", "Baixa."))
        .await
        .unwrap();
    assert_eq!(v, 2);
    let got = store.get(&c.id).await.unwrap();
    assert_eq!(got.version, 2);
    assert_eq!(got.model.as_deref(), Some("gpt-4o-mini"));
    let turns = store.turns(&c.id).await.unwrap();
    assert_eq!(turns.iter().map(|t| t.number).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(turns[1].turn, turn("And to sleep?", "Baixa."));
    assert!(!turns[0].archived);

    let other = store.create("Other").await.unwrap();
    store.append(&other.id, 0, turn("q", "a")).await.unwrap();
    let listed: Vec<String> = store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(listed.len(), 2);
    assert!(listed.contains(&c.id) && listed.contains(&other.id));

    assert!(store.delete(&c.id).await.unwrap());
    assert!(!store.delete(&c.id).await.unwrap());
    assert!(matches!(
        store.get(&c.id).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.turns(&c.id).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.append(&c.id, 2, turn("q", "a")).await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(store.list().await.unwrap().len(), 1);
}

/// A writer that saw an old version is refused, and nothing of its turn is written.
pub(crate) async fn a_stale_writer_is_refused(store: &dyn Store) {
    let c = store.create("race").await.unwrap();
    store.append(&c.id, 0, turn("first", "one")).await.unwrap();
    match store.append(&c.id, 0, turn("late", "two")).await {
        Err(StoreError::Conflict {
            expected, found, ..
        }) => assert_eq!((expected, found), (0, 1)),
        other => panic!("{other:?}"),
    }
    let turns = store.turns(&c.id).await.unwrap();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].turn.messages[0].text(), "first");
}

/// Two writers appending to one conversation at once, each reading again when refused:
/// every turn is there once, whole, numbered without gaps.
pub(crate) async fn two_writers_neither_lose_nor_interleave(a: &dyn Store, b: &dyn Store) {
    let c = a.create("shared").await.unwrap();
    let (_, _) = tokio::join!(write_25(a, &c.id, "a"), write_25(b, &c.id, "b"));
    let turns = a.turns(&c.id).await.unwrap();
    assert_eq!(turns.len(), 50);
    assert!(
        turns
            .iter()
            .enumerate()
            .all(|(i, t)| t.number == i as i64 + 1)
    );
    for who in ["a", "b"] {
        let mine: Vec<String> = turns
            .iter()
            .map(|t| t.turn.messages[0].text())
            .filter(|q| q.starts_with(who))
            .collect();
        let want: Vec<String> = (0..25).map(|i| format!("{who} {i}")).collect();
        assert_eq!(mine, want, "{who}'s turns, in order");
    }
    for t in &turns {
        let q = t.turn.messages[0].text();
        assert_eq!(t.turn.messages[1].text(), format!("{q} answered"));
    }
}

/// Appends 25 turns, reading the version again whenever another writer got there first;
/// returns how often that happened.
async fn write_25(store: &dyn Store, id: &str, who: &str) -> usize {
    let mut conflicts = 0;
    for i in 0..25 {
        loop {
            let version = store.get(id).await.unwrap().version;
            let t = turn(&format!("{who} {i}"), &format!("{who} {i} answered"));
            match store.append(id, version, t).await {
                Ok(_) => break,
                Err(StoreError::Conflict { .. }) => conflicts += 1,
                Err(e) => panic!("{e}"),
            }
        }
    }
    conflicts
}

/// A turn cut off before a tool's result is stored without the unanswered call.
pub(crate) async fn a_cut_turn_is_stored_as_far_as_it_is_consistent(store: &dyn Store) {
    let c = store.create("cut").await.unwrap();
    let calls = Message::new(
        Role::Assistant,
        vec![
            Part::text("Checking."),
            Part::ToolCall(ToolCall::new("c1", "now", "{}")),
            Part::ToolCall(ToolCall::new("c2", "weather", "{}")),
        ],
    );
    let results = Message::new(
        Role::Tool,
        vec![Part::ToolResult(ToolResult::text("c1", "noon"))],
    );
    let lonely = Message::new(
        Role::Assistant,
        vec![Part::ToolCall(ToolCall::new("c3", "now", "{}"))],
    );
    let t = Turn::new(vec![Message::user("go"), calls, results, lonely]);
    store.append(&c.id, 0, t).await.unwrap();
    let stored = &store.turns(&c.id).await.unwrap()[0].turn;
    assert_eq!(stored.messages.len(), 3, "{stored:?}");
    let ids: Vec<&str> = stored
        .messages
        .iter()
        .flat_map(|m| m.tool_calls())
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(ids, ["c1"]);
    assert_eq!(stored.messages[1].text(), "Checking.");
}

/// Compaction archives the older turns and adds the summary in one step, refused when stale.
pub(crate) async fn compaction_archives_and_summarizes_in_one_step(store: &dyn Store) {
    let c = store.create("compact").await.unwrap();
    let mut v = 0;
    for n in 0..3 {
        v = store
            .append(&c.id, v, turn(&format!("q{n}"), &format!("a{n}")))
            .await
            .unwrap();
    }
    let summary = Turn::new(vec![Message::user("summary of q0 and q1")]);
    assert!(matches!(
        store.compact(&c.id, 2, 2, summary.clone()).await,
        Err(StoreError::Conflict { .. })
    ));
    assert_eq!(store.compact(&c.id, v, 2, summary).await.unwrap(), 4);
    let turns = store.turns(&c.id).await.unwrap();
    let archived: Vec<bool> = turns.iter().map(|t| t.archived).collect();
    assert_eq!(archived, [true, true, false, false]);
    assert!(turns[3].turn.summary);
    let sent: Vec<String> = kite_store::history(&turns)
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(sent, ["summary of q0 and q1", "q2", "a2"]);
}
