//! Stored Responses with a store: a conversation keeps each turn once (its own input and a
//! link back), not the whole of it again at every turn; a key keeps what its quota allows;
//! and a conversation whose earlier turn was deleted says so.

use kite_core::{Event, EventStream, FinishReason, Model, Request};
use kite_serve::{Gateway, Route, Sizes};
use kite_store::{Fleet, SqliteStore};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// Answers "ok", and keeps how many input messages each request had.
#[derive(Clone, Default)]
struct Counting(Arc<Mutex<Vec<usize>>>);

impl Model for Counting {
    fn stream(&self, request: &Request) -> EventStream {
        self.0.lock().unwrap().push(request.messages.len());
        Box::pin(futures_util::stream::iter([
            Ok(Event::text(0, "ok")),
            Ok(Event::Finish {
                reason: FinishReason::Stop,
            }),
        ]))
    }
}

async fn gateway(model: Counting, sizes: Sizes) -> (String, Arc<dyn Fleet>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Fleet> = Arc::new(SqliteStore::open(dir.path().join("s.db")).await.unwrap());
    let gateway = Gateway::new(vec![Route::new("m", Arc::new(model), "m")], false)
        .sizes(sizes)
        .fleet(store.clone(), None);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(kite_serve::serve(
        listener,
        Arc::new(gateway),
        std::future::pending(),
    ));
    (format!("http://{addr}/v1/responses"), store, dir)
}

async fn turn(url: &str, input: &str, previous: Option<&str>) -> (u16, Value) {
    let mut body = json!({"model": "m", "input": input});
    if let Some(p) = previous {
        body["previous_response_id"] = p.into();
    }
    let r = reqwest::Client::new()
        .post(url)
        .json(&body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

#[tokio::test]
async fn a_conversation_keeps_each_turn_once() {
    let model = Counting::default();
    let (url, store, _dir) = gateway(model.clone(), Sizes::default()).await;
    let words = "w".repeat(2_000);
    let mut previous: Option<String> = None;
    let mut kept = Vec::new();
    for _ in 0..30 {
        let (status, said) = turn(&url, &words, previous.as_deref()).await;
        assert_eq!(status, 200, "{said}");
        previous = said["id"].as_str().map(str::to_owned);
        kept.push(store.stored_bytes("-").await.unwrap());
    }
    // The model heard the whole conversation every turn...
    let heard = model.0.lock().unwrap().clone();
    assert_eq!(heard, (0..30).map(|n| 2 * n + 1).collect::<Vec<_>>());
    // ...but each turn kept about the same: what grows, grows as the turns, not their square.
    let first = kept[0];
    let growth: Vec<u64> = kept.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(growth.iter().all(|g| *g < 2 * first), "{kept:?}");
    assert!(kept[29] < 31 * first, "{kept:?}");
    // And the last turn's input items are still the whole conversation.
    let items: Value = reqwest::get(format!(
        "{url}/{}/input_items?limit=100&order=asc",
        previous.unwrap()
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(items["data"].as_array().unwrap().len(), 59, "{items}");
}

#[tokio::test]
async fn a_key_keeps_what_its_quota_allows_and_a_broken_chain_says_so() {
    let (url, store, _dir) = gateway(
        Counting::default(),
        Sizes {
            max_body: None,
            max_stored: Some(1 << 20),
        },
    )
    .await;
    let big = "b".repeat(400 << 10);
    let (status, first) = turn(&url, &big, None).await;
    assert_eq!(status, 200, "{first}");
    let (status, second) = turn(&url, &big, first["id"].as_str()).await;
    assert_eq!(status, 200, "{second}");
    let (status, refused) = turn(&url, &big, second["id"].as_str()).await;
    assert_eq!(status, 413, "{refused}");
    assert_eq!(refused["error"]["code"], "request_too_large", "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("store: false"),
        "{refused}"
    );
    // Sent with store: false, it is answered and nothing more is kept.
    let kept = store.stored_bytes("-").await.unwrap();
    let r = reqwest::Client::new()
        .post(&url)
        .json(&json!({"model": "m", "input": big, "store": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(store.stored_bytes("-").await.unwrap(), kept);
    // The first turn deleted, the conversation after it cannot go on as if it were there.
    let deleted = reqwest::Client::new()
        .delete(format!("{url}/{}", first["id"].as_str().unwrap()))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);
    let r = reqwest::Client::new()
        .post(&url)
        .json(&json!({"model": "m", "input": "hi", "store": false,
                      "previous_response_id": second["id"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let said: Value = r.json().await.unwrap();
    assert!(
        said["error"]["message"]
            .as_str()
            .unwrap()
            .contains("was deleted"),
        "{said}"
    );
}
