//! Stopping: a server that cannot wait for the web chat's answers under way winds them
//! down (each ends as if its page had stopped it, and keeps the question and what was
//! said); while it drains, a request that comes (even on a connection taken before) gets a
//! 503 in its client's shape, and once nothing is under way it returns.

use futures_util::StreamExt;
use kite_core::{Event, EventStream, Model, Request};
use kite_serve::{Gateway, Route};
use kite_store::{SqliteStore, Store};
use std::sync::Arc;
use std::time::Duration;

/// Says a little, then nothing ever again; it runs here, as the local model does.
struct Stalls;

impl Model for Stalls {
    fn origin(&self) -> kite_core::trace::Origin {
        kite_core::trace::Origin::local(kite_core::trace::LOCAL_PROVIDER)
    }

    fn stream(&self, _: &Request) -> EventStream {
        Box::pin(
            futures_util::stream::iter([
                Ok(Event::Start {
                    id: None,
                    model: None,
                }),
                Ok(Event::text(0, "Once upon a time")),
            ])
            .chain(futures_util::stream::pending()),
        )
    }
}

#[tokio::test]
async fn answers_wound_down_keep_what_they_said() {
    let dir = std::env::temp_dir().join(format!("kite-wind-down-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("conversations.db");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).await.unwrap());
    let gateway = Arc::new(
        Gateway::new(vec![Route::new("story", Arc::new(Stalls), "story")], false)
            .store(store.clone()),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(kite_serve::serve(
        listener,
        gateway.clone(),
        std::future::pending(),
    ));
    let mut answer = reqwest::Client::new()
        .post(format!("http://{addr}/api/chat"))
        .json(&serde_json::json!({"conversation": null, "model": "story", "text": "A story?"}))
        .send()
        .await
        .unwrap();
    let mut said = String::new();
    while !said.contains("Once upon a time") {
        let chunk = answer.chunk().await.unwrap().expect("the answer goes on");
        said.push_str(&String::from_utf8_lossy(&chunk));
    }
    tokio::time::timeout(Duration::from_secs(10), gateway.wind_down())
        .await
        .expect("the answer under way ends");
    // The page is told why its answer ended.
    while let Some(chunk) = answer.chunk().await.unwrap() {
        said.push_str(&String::from_utf8_lossy(&chunk));
    }
    let error = said.find("event: error").expect(&said);
    assert!(said[error..].contains("the server stopped"), "{said}");
    assert!(
        said.find("event: done").is_some_and(|d| d > error),
        "{said}"
    );

    let all = store.list().await.unwrap();
    assert_eq!(all.len(), 1);
    let turns = store.turns(&all[0].id).await.unwrap();
    let texts: Vec<String> = turns[0].turn.messages.iter().map(|m| m.text()).collect();
    assert_eq!(texts, ["A story?", "Once upon a time"]);
    assert!(turns[0].turn.cut_short);
    // The local model costs nothing, though the call cut off never counted its tokens.
    assert_eq!(turns[0].turn.usage.cost, Some(0.0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn while_draining_new_requests_get_503_and_it_ends_once_nothing_is_under_way() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let gateway = Arc::new(Gateway::new(
        vec![Route::new("story", Arc::new(Stalls), "story")],
        false,
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(kite_serve::serve(listener, gateway.clone(), async move {
        let _ = stopped.await;
    }));
    // A stream under way, and a connection taken that has not said anything yet.
    let mut stream = reqwest::Client::new()
        .post(format!("http://{addr}/v1/chat/completions"))
        .json(&serde_json::json!({"model": "story", "stream": true,
            "messages": [{"role": "user", "content": "A story?"}]}))
        .send()
        .await
        .unwrap();
    let _ = stream.chunk().await.unwrap();
    let health = reqwest::get(format!("http://{addr}/health")).await.unwrap();
    assert_eq!(health.status(), 200);
    let ready = reqwest::get(format!("http://{addr}/ready")).await.unwrap();
    assert_eq!(ready.status(), 200);
    let mut waiting = tokio::net::TcpStream::connect(addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    waiting
        .write_all(
            b"POST /v1/messages HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n\
              content-length: 2\r\n\r\n{}",
        )
        .await
        .unwrap();
    let mut said = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), waiting.read_to_end(&mut said))
        .await
        .expect("the refused connection is closed")
        .unwrap();
    let said = String::from_utf8_lossy(&said);
    assert!(said.starts_with("HTTP/1.1 503"), "{said}");
    assert!(
        said.to_ascii_lowercase().contains("retry-after: 5"),
        "{said}"
    );
    assert!(said.contains("overloaded_error"), "{said}");
    // A load balancer asking after its health is told to send requests elsewhere.
    let health = reqwest::get(format!("http://{addr}/health")).await.unwrap();
    assert_eq!(health.status(), 503);
    assert_eq!(health.text().await.unwrap(), r#"{"status":"draining"}"#);
    let ready = reqwest::get(format!("http://{addr}/ready")).await.unwrap();
    assert_eq!(ready.status(), 503);
    // The stream under way keeps it serving; ended, it lets it return.
    assert!(!served.is_finished());
    gateway.wind_down().await;
    let mut rest = String::new();
    while let Some(chunk) = stream.chunk().await.unwrap() {
        rest.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(
        rest.contains("stopped before this answer was complete"),
        "{rest}"
    );
    assert!(rest.trim_end().ends_with("data: [DONE]"), "{rest}");
    tokio::time::timeout(Duration::from_secs(10), served)
        .await
        .expect("it returns once nothing is under way")
        .unwrap()
        .unwrap();
}

/// Never says anything.
struct Silent;

impl Model for Silent {
    fn stream(&self, _: &Request) -> EventStream {
        Box::pin(futures_util::stream::pending())
    }
}

#[tokio::test]
async fn a_request_still_waiting_for_its_answer_at_the_end_gets_503() {
    let gateway = Arc::new(Gateway::new(
        vec![Route::new("quiet", Arc::new(Silent), "quiet")],
        false,
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(kite_serve::serve(
        listener,
        gateway.clone(),
        std::future::pending(),
    ));
    let asked = tokio::spawn(
        reqwest::Client::new()
            .post(format!("http://{addr}/v1/messages"))
            .json(&serde_json::json!({"model": "quiet", "max_tokens": 10,
                "messages": [{"role": "user", "content": "Hi"}]}))
            .send(),
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    gateway.wind_down().await;
    let answer = tokio::time::timeout(Duration::from_secs(10), asked)
        .await
        .expect("answered")
        .unwrap()
        .unwrap();
    assert_eq!(answer.status(), 503);
    assert_eq!(answer.headers()["retry-after"], "5");
    let said: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(said["error"]["type"], "overloaded_error", "{said}");
}
