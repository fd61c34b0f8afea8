//! What a keyless gateway on loopback refuses: a body that is not JSON (what a web page can
//! send across sites without a preflight) and a `Host` that is not this machine (DNS
//! rebinding); and what it takes.

mod common;

use kite_core::{Event, EventStream, FinishReason, Model, Request};

struct Hello;

impl Model for Hello {
    fn stream(&self, _: &Request) -> EventStream {
        Box::pin(futures_util::stream::iter([
            Ok(Event::text(0, "Hello.")),
            Ok(Event::Finish {
                reason: FinishReason::Stop,
            }),
        ]))
    }
}

#[tokio::test]
async fn a_web_page_cannot_drive_a_keyless_gateway() {
    let addr = common::serve_one("hello", Hello).await;
    let url = format!("http://{addr}/v1/chat/completions");
    let body = r#"{"model": "hello", "messages": [{"role": "user", "content": "Hi"}]}"#;
    let client = reqwest::Client::new();

    // What a cross-site form or no-cors fetch sends.
    let plain = client
        .post(&url)
        .header("content-type", "text/plain")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), 415);

    // A rebound name pointing at 127.0.0.1.
    let rebound = client
        .post(&url)
        .header("content-type", "application/json")
        .header("host", "attacker.example")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status(), 403);

    let ok = client
        .post(&url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let named = client
        .post(&url)
        .header("content-type", "application/json; charset=utf-8")
        .header("host", format!("localhost:{}", addr.port()))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(named.status(), 200);
}

#[tokio::test]
async fn unknown_paths_and_methods_answer_in_json() {
    let addr = common::serve_one("hello", Hello).await;
    let client = reqwest::Client::new();
    let missing = client
        .get(format!("http://{addr}/v1/nothing-here"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let body: serde_json::Value = missing.json().await.unwrap();
    assert_eq!(body["error"]["message"], "no such endpoint", "{body}");
    let wrong = client
        .get(format!("http://{addr}/v1/chat/completions"))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 405);
    let body: serde_json::Value = wrong.json().await.unwrap();
    assert!(body["error"]["message"].is_string(), "{body}");
}

#[tokio::test]
async fn a_body_past_the_limit_is_refused_in_the_clients_shape() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = common::serve_one("hello", Hello).await;
    // A body past the limit, written while the answer is read: the refusal can come
    // before the body is all sent, and the server may stop reading it.
    let socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut socket, mut writer) = socket.into_split();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n",
        kite_serve::MAX_BODY + 1
    );
    tokio::spawn(async move {
        writer.write_all(head.as_bytes()).await?;
        let chunk = vec![b'a'; 64 * 1024];
        for _ in 0..=(kite_serve::MAX_BODY / chunk.len()) {
            writer.write_all(&chunk).await?;
        }
        Ok::<_, std::io::Error>(())
    });
    let mut answer = Vec::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        let mut buf = [0u8; 4096];
        // Until the JSON body is whole (the connection may stay open).
        while !String::from_utf8_lossy(&answer).trim_end().ends_with('}') {
            let n = socket.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&buf[..n]);
        }
    })
    .await;
    assert!(
        read.is_ok(),
        "no refusal in 10 s: {}",
        String::from_utf8_lossy(&answer)
    );
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("application/json"), "{answer}");
    assert!(answer.contains("larger than 16 MiB"), "{answer}");
}

#[tokio::test]
async fn a_flag_that_is_not_true_or_false_is_refused() {
    let addr = common::serve_one("hello", Hello).await;
    let client = reqwest::Client::new();
    for (path, body) in [
        (
            "chat/completions",
            r#"{"model": "hello", "stream": "yes", "messages": [{"role": "user", "content": "Hi"}]}"#,
        ),
        (
            "responses",
            r#"{"model": "hello", "stream": 1, "input": "Hi"}"#,
        ),
        (
            "messages",
            r#"{"model": "hello", "max_tokens": 9, "stream": "no", "messages": [{"role": "user", "content": "Hi"}]}"#,
        ),
    ] {
        let refused = client
            .post(format!("http://{addr}/v1/{path}"))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 400, "{path}");
        let said: serde_json::Value = refused.json().await.unwrap();
        let message = said["error"]["message"].as_str().unwrap();
        assert!(message.contains("`stream` must be true or false"), "{said}");
    }
}

#[tokio::test]
async fn sampling_settings_of_the_wrong_type_or_range_are_refused() {
    let addr = common::serve_one("hello", Hello).await;
    let client = reqwest::Client::new();
    let hi = r#""messages": [{"role": "user", "content": "Hi"}]"#;
    for (path, body, named) in [
        (
            "chat/completions",
            format!(r#"{{"model": "hello", "max_tokens": "5", {hi}}}"#),
            "max_tokens",
        ),
        (
            "chat/completions",
            format!(r#"{{"model": "hello", "max_tokens": 0, {hi}}}"#),
            "max_tokens",
        ),
        (
            "chat/completions",
            format!(r#"{{"model": "hello", "temperature": -5, {hi}}}"#),
            "temperature",
        ),
        (
            "responses",
            r#"{"model": "hello", "max_output_tokens": -1, "input": "Hi"}"#.to_owned(),
            "max_output_tokens",
        ),
        (
            "responses",
            r#"{"model": "hello", "top_p": "x", "input": "Hi"}"#.to_owned(),
            "top_p",
        ),
        (
            "messages",
            format!(r#"{{"model": "hello", "max_tokens": "5", {hi}}}"#),
            "max_tokens",
        ),
    ] {
        let refused = client
            .post(format!("http://{addr}/v1/{path}"))
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 400, "{body}");
        let said: serde_json::Value = refused.json().await.unwrap();
        let message = said["error"]["message"].as_str().unwrap();
        assert!(message.contains(&format!("`{named}`")), "{body}: {said}");
    }
    // Within range, the same settings pass.
    let ok = client
        .post(format!("http://{addr}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(format!(
            r#"{{"model": "hello", "max_tokens": 5, "temperature": 0.2, {hi}}}"#
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
}

/// Says the upstream's key, split between two deltas.
struct Leaks;

const UPSTREAM_KEY: &str = "sk-upstream-SECRET-0123456789";

impl Model for Leaks {
    fn stream(&self, _: &Request) -> EventStream {
        let (a, b) = UPSTREAM_KEY.split_at(12);
        Box::pin(futures_util::stream::iter([
            Ok(Event::text(0, format!("The key is {a}"))),
            Ok(Event::text(0, format!("{b}, keep it."))),
            Ok(Event::Finish {
                reason: FinishReason::Stop,
            }),
        ]))
    }
}

#[tokio::test]
async fn the_upstreams_key_never_reaches_a_client_however_the_model_splits_it() {
    let gateway = kite_serve::Gateway::new(
        vec![kite_serve::Route::new(
            "leaks",
            std::sync::Arc::new(Leaks),
            "leaks",
        )],
        false,
    )
    .secrets(kite_core::redact::Secrets::of(&[UPSTREAM_KEY]));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(kite_serve::serve(
        listener,
        std::sync::Arc::new(gateway),
        std::future::pending(),
    ));
    let client = reqwest::Client::new();
    for (path, body) in [
        (
            "chat/completions",
            serde_json::json!({"model": "leaks", "stream": true,
                "messages": [{"role": "user", "content": "key?"}]}),
        ),
        (
            "chat/completions",
            serde_json::json!({"model": "leaks",
                "messages": [{"role": "user", "content": "key?"}]}),
        ),
        (
            "messages",
            serde_json::json!({"model": "leaks", "stream": true, "max_tokens": 20,
                "messages": [{"role": "user", "content": "key?"}]}),
        ),
        (
            "responses",
            serde_json::json!({"model": "leaks", "stream": true, "input": "key?"}),
        ),
    ] {
        let said = client
            .post(format!("http://{addr}/v1/{path}"))
            .json(&body)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(!said.contains(UPSTREAM_KEY), "{path}: {said}");
        assert!(said.contains("[redacted]"), "{path}: {said}");
        assert!(said.contains("keep it."), "{path}: {said}");
    }
}

/// A model whose upstream says a secret in its error: before anything (`first`), or midway.
struct SaysInError {
    first: bool,
}

impl Model for SaysInError {
    fn stream(&self, _: &Request) -> EventStream {
        let said = kite_core::ApiError::new(
            Some(400),
            format!("bad request from {UPSTREAM_KEY} and {ADMIN_KEY}"),
        );
        let mut events = vec![Ok(Event::text(0, "so far"))];
        if self.first {
            events.clear();
        }
        events.push(Err(kite_core::Error::Api(Box::new(said))));
        Box::pin(futures_util::stream::iter(events))
    }
}

const ADMIN_KEY: &str = "kite-admin-key-0123456789abcdef";

#[tokio::test]
async fn no_secret_of_the_gateway_reaches_a_client_in_an_upstreams_error() {
    let route = |name: &str, first| {
        kite_serve::Route::new(name, std::sync::Arc::new(SaysInError { first }), name)
    };
    let gateway =
        kite_serve::Gateway::new(vec![route("first", true), route("midway", false)], false)
            .secrets(kite_core::redact::Secrets::of(&[UPSTREAM_KEY, ADMIN_KEY]));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(kite_serve::serve(
        listener,
        std::sync::Arc::new(gateway),
        std::future::pending(),
    ));
    let client = reqwest::Client::new();
    for model in ["first", "midway"] {
        for (path, stream) in [
            ("chat/completions", true),
            ("chat/completions", false),
            ("messages", true),
            ("messages", false),
            ("responses", true),
            ("responses", false),
        ] {
            let body = match path {
                "responses" => serde_json::json!({"model": model, "stream": stream, "input": "hi"}),
                _ => serde_json::json!({"model": model, "stream": stream, "max_tokens": 20,
                    "messages": [{"role": "user", "content": "hi"}]}),
            };
            let said = client
                .post(format!("http://{addr}/v1/{path}"))
                .json(&body)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            let at = format!("{model} {path} stream={stream}");
            assert!(said.contains("bad request from"), "{at}: {said}");
            assert!(!said.contains(UPSTREAM_KEY), "{at}: {said}");
            assert!(!said.contains(ADMIN_KEY), "{at}: {said}");
        }
    }
}

/// A caller with no key is told it gave none, one with a wrong key that it is wrong.
#[tokio::test]
async fn no_key_and_a_wrong_key_are_told_apart() {
    let gateway = kite_serve::Gateway::new(Vec::new(), false).key("sk-right-key-0123456789");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(kite_serve::serve(
        listener,
        std::sync::Arc::new(gateway),
        std::future::pending(),
    ));
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/v1/models");
    let none: serde_json::Value = client.get(&url).send().await.unwrap().json().await.unwrap();
    let said = none["error"]["message"].as_str().unwrap();
    assert!(said.starts_with("No API key provided"), "{said}");
    let wrong = client
        .get(&url)
        .bearer_auth("sk-wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let wrong: serde_json::Value = wrong.json().await.unwrap();
    let said = wrong["error"]["message"].as_str().unwrap();
    assert!(said.starts_with("Incorrect API key"), "{said}");
}

#[tokio::test]
async fn one_tenant_never_sees_anothers_keys_in_the_metrics() {
    let (alice, bob) = ("sk-alice-key-0123456789", "sk-bob-key-0123456789");
    let gateway = kite_serve::Gateway::new(
        vec![kite_serve::Route::new(
            "hello",
            std::sync::Arc::new(Hello),
            "hello",
        )],
        false,
    )
    .key(alice)
    .key(bob);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(kite_serve::serve(
        listener,
        std::sync::Arc::new(gateway),
        std::future::pending(),
    ));
    let client = reqwest::Client::new();
    let body =
        serde_json::json!({"model": "hello", "messages": [{"role": "user", "content": "Hi"}]});
    for key in [alice, bob] {
        let r = client
            .post(format!("http://{addr}/v1/chat/completions"))
            .bearer_auth(key)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    let seen = |key: &'static str| {
        let client = client.clone();
        async move {
            client
                .get(format!("http://{addr}/metrics"))
                .bearer_auth(key)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        }
    };
    let by_alice = seen(alice).await;
    assert!(by_alice.contains("key=\"key-1\""), "{by_alice}");
    assert!(!by_alice.contains("key=\"key-2\""), "{by_alice}");
    let by_bob = seen(bob).await;
    assert!(
        by_bob.contains("key=\"key-2\"") && !by_bob.contains("key=\"key-1\""),
        "{by_bob}"
    );
}

#[tokio::test]
async fn a_request_that_cannot_be_read_is_told_why_in_json() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = common::serve_one("hello", Hello).await;
    let huge = format!("X-Big: {}\r\n", "a".repeat(1 << 20));
    for (request, status, says) in [
        (
            "GET /v1/models HTTP/1.1\r\nHost: localhost\r\nno colon here\r\n\r\n".to_owned(),
            "400",
            "could not be read",
        ),
        (
            format!("GET /v1/models HTTP/1.1\r\nHost: localhost\r\n{huge}\r\n"),
            "431",
            "headers are larger",
        ),
    ] {
        let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
        let _ = socket.write_all(request.as_bytes()).await;
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            socket.read_to_end(&mut answer),
        )
        .await;
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status}")),
            "{answer}"
        );
        assert!(
            answer.contains("content-type: application/json"),
            "{answer}"
        );
        let body: serde_json::Value =
            serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert!(
            body["error"]["message"].as_str().unwrap().contains(says),
            "{body}"
        );
    }
}
