//! Compaction against a scripted model: the summary request holds the older turns and the
//! prompt, tool calls stay with their results, the archived turns are still readable, and
//! each policy triggers at its size.

use kite_core::{Message, Part, Role, ToolCall, ToolResult, Usage};
use kite_store::compact::{Compactor, Policy};
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
    let done = Compactor::new(policy)
        .prompt("Summarize, please.")
        .run(&store, &c.id, &model, "m", false)
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
    let again = Compactor::new(policy)
        .run(&store, &c.id, &quiet, "m", false)
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
    assert!(!Compactor::new(Policy::Messages { max: 8, keep: 1 }).due(&four));
    assert!(Compactor::new(Policy::Messages { max: 7, keep: 1 }).due(&four));

    let bytes: usize = four
        .iter()
        .map(|t| serde_json::to_string(&t.turn.messages).unwrap().len())
        .sum();
    assert!(
        !Compactor::new(Policy::Bytes {
            max: bytes,
            keep: 1
        })
        .due(&four)
    );
    assert!(
        Compactor::new(Policy::Bytes {
            max: bytes - 1,
            keep: 1
        })
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
    assert!(!Compactor::new(Policy::Tokens { max: 1000, keep: 1 }).due(&turns));
    assert!(Compactor::new(Policy::Tokens { max: 940, keep: 1 }).due(&turns));

    // What came after the reported turn is counted by the tokenizer given.
    let mut later = (1..=3).map(qa).collect::<Vec<_>>();
    later[0].usage = Usage {
        input_tokens: 100,
        output_tokens: 10,
        total_tokens: 110,
        ..Usage::default()
    };
    let turns = live(later);
    let per_turn = |_: &str| 45u64;
    let policy = |max| Policy::Tokens { max, keep: 1 };
    assert!(!Compactor::new(policy(200)).tokens(&per_turn).due(&turns));
    assert!(Compactor::new(policy(199)).tokens(&per_turn).due(&turns));
}

#[test]
fn the_last_calls_size_counts_not_the_sum_nor_a_summarys() {
    // Five model calls summed to 5 000 input tokens; the last one saw 1 200.
    let mut turns = (1..=3).map(qa).collect::<Vec<_>>();
    turns[1].usage = Usage {
        input_tokens: 5_000,
        output_tokens: 100,
        total_tokens: 5_100,
        ..Usage::default()
    };
    turns[1].context_tokens = Some(1_200);
    // A summary's usage is its own call's.
    turns[2].summary = true;
    turns[2].usage = Usage {
        input_tokens: 90_000,
        ..Usage::default()
    };
    let turns = live(turns);
    let none = |_: &str| 0u64;
    let policy = |max| Compactor::new(Policy::Tokens { max, keep: 1 });
    assert!(!policy(1_200).tokens(&none).due(&turns));
    assert!(policy(1_199).tokens(&none).due(&turns));
}

#[cfg(feature = "tiktoken")]
#[test]
fn openai_models_are_counted_with_their_own_tokenizer() {
    use kite_store::{Estimate, Tiktoken, TokenCounter};
    let text = "internationalization ".repeat(50);
    let o200k = Tiktoken::for_model("gpt-4o").count(&text);
    assert!((40..=120).contains(&o200k), "{o200k}");
    assert_ne!(o200k, Estimate.count(&text));
    let cl100k = Tiktoken::for_model("gpt-4").count("hello world");
    assert_eq!(cl100k, 2);
}

#[tokio::test]
async fn a_conversation_no_longer_than_what_is_kept_is_left_alone() {
    let store = store("short").await;
    let c = store.create("short").await.unwrap();
    store.append(&c.id, 0, qa(1)).await.unwrap();
    let model = ScriptedModel::new();
    let r = Compactor::new(Policy::Messages { max: 0, keep: 2 })
        .run(&store, &c.id, &model, "m", true)
        .await
        .unwrap();
    assert_eq!(r, None);
}
