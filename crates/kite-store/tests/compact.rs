//! Compaction against a scripted model: the summary request holds the older turns and the
//! prompt, tool calls stay with their results, the archived turns are still readable, and
//! each policy triggers at its size.

use kite_core::{Message, Part, Role, ToolCall, ToolResult, Usage};
use kite_store::compact::{DEFAULT_PROMPT, Policy, compact};
use kite_store::{SqliteStore, Store, StoredTurn, Turn, history};
use kite_testkit::ScriptedModel;

async fn store(name: &str) -> SqliteStore {
    let dir = std::env::temp_dir().join(format!("kite-compact-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    SqliteStore::open(dir.join("c.db")).await.unwrap()
}

fn qa(n: usize) -> Turn {
    Turn::new(vec![
        Message::user(format!("question {n}")),
        Message::assistant(format!("answer {n}")),
    ])
}

fn with_tool(n: usize) -> Turn {
    Turn::new(vec![
        Message::user(format!("question {n}")),
        Message::new(
            Role::Assistant,
            vec![Part::ToolCall(ToolCall::new(format!("c{n}"), "now", "{}"))],
        ),
        Message::new(
            Role::Tool,
            vec![Part::ToolResult(ToolResult::text(format!("c{n}"), "noon"))],
        ),
        Message::assistant(format!("answer {n}")),
    ])
}

#[tokio::test]
async fn older_turns_are_summarized_and_archived_and_the_last_kept_verbatim() {
    let store = store("summary").await;
    let c = store.create("long").await.unwrap();
    let mut v = 0;
    for n in 1..=6 {
        let t = if n == 5 { with_tool(n) } else { qa(n) };
        v = store.append(&c.id, v, t).await.unwrap();
    }
    let model = ScriptedModel::new()
        .expect(|r| {
            let asked = r.messages[0].text();
            r.system.as_deref() == Some("Summarize, please.")
                && (1..=4).all(|n| asked.contains(&format!("question {n}")))
                && !asked.contains("question 5")
        })
        .text("The user asked four questions.");
    let policy = Policy::Messages { max: 8, keep: 2 };
    let done = compact(
        &store,
        &c.id,
        &model,
        "m",
        &policy,
        "Summarize, please.",
        false,
    )
    .await
    .unwrap();
    assert_eq!(done, Some(7));

    let turns = store.turns(&c.id).await.unwrap();
    let archived: Vec<i64> = turns
        .iter()
        .filter(|t| t.archived)
        .map(|t| t.number)
        .collect();
    assert_eq!(archived, [1, 2, 3, 4]);
    // The archived turns are still there, whole.
    assert_eq!(turns[0].turn.messages[1].text(), "answer 1");
    let sent = history(&turns);
    assert!(
        sent[0].text().contains("The user asked four questions."),
        "{sent:?}"
    );
    // Turn 5's tool call and result stay together, after the summary.
    let texts: Vec<String> = sent.iter().skip(1).map(Message::text).collect();
    assert_eq!(texts[0], "question 5");
    assert!(sent[2].tool_calls().any(|c| c.id == "c5"));
    assert!(matches!(&sent[3].parts[0], Part::ToolResult(r) if r.call_id == "c5"));
    assert_eq!(sent.last().unwrap().text(), "answer 6");

    // Not due any more: nothing happens, and the model is not asked.
    let quiet = ScriptedModel::new();
    let again = compact(&store, &c.id, &quiet, "m", &policy, DEFAULT_PROMPT, false)
        .await
        .unwrap();
    assert_eq!(again, None);
}

fn live(turns: Vec<Turn>) -> Vec<StoredTurn> {
    turns
        .into_iter()
        .enumerate()
        .map(|(i, turn)| StoredTurn {
            number: i as i64 + 1,
            created_ms: 0,
            archived: false,
            turn,
        })
        .collect()
}

#[test]
fn each_policy_triggers_at_its_size() {
    let four = live((1..=4).map(qa).collect());
    assert!(!Policy::Messages { max: 8, keep: 1 }.due(&four));
    assert!(Policy::Messages { max: 7, keep: 1 }.due(&four));

    let bytes: usize = four
        .iter()
        .map(|t| serde_json::to_string(&t.turn.messages).unwrap().len())
        .sum();
    assert!(
        !Policy::Bytes {
            max: bytes,
            keep: 1
        }
        .due(&four)
    );
    assert!(
        Policy::Bytes {
            max: bytes - 1,
            keep: 1
        }
        .due(&four)
    );

    // Reported usage counts where known; what came after it is estimated.
    let mut reported = (1..=2).map(qa).collect::<Vec<_>>();
    reported[1].usage = Usage {
        input_tokens: 900,
        output_tokens: 50,
        total_tokens: 950,
        ..Usage::default()
    };
    let turns = live(reported);
    assert!(!Policy::Tokens { max: 1000, keep: 1 }.due(&turns));
    assert!(Policy::Tokens { max: 940, keep: 1 }.due(&turns));
}

#[tokio::test]
async fn a_conversation_no_longer_than_what_is_kept_is_left_alone() {
    let store = store("short").await;
    let c = store.create("short").await.unwrap();
    store.append(&c.id, 0, qa(1)).await.unwrap();
    let model = ScriptedModel::new();
    let r = compact(
        &store,
        &c.id,
        &model,
        "m",
        &Policy::Messages { max: 0, keep: 2 },
        DEFAULT_PROMPT,
        true,
    )
    .await
    .unwrap();
    assert_eq!(r, None);
}
