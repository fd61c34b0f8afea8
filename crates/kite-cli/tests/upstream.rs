//! `kite serve` in front of a provider's server as providers run theirs: HTTPS, HTTP/2
//! offered beside HTTP/1.1, and a cap on the streams one HTTP/2 connection carries at once.
//! Answers are long streams, so a stream that waits for another's slot waits for its whole
//! answer: every stream must run from the moment it is asked.

mod common;

use common::KEY;
use common::serve::{GATEWAY_KEY, kite_serve, start};
use kite_testkit::TlsStreamServer;
use std::time::{Duration, Instant};

/// The stream the upstream sends: `WORDS` deltas, the finish, `[DONE]`.
fn events() -> Vec<Vec<u8>> {
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        let c = serde_json::json!({"id": "c", "object": "chat.completion.chunk", "created": 0,
            "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {c}\n\n").into_bytes()
    };
    let mut all: Vec<Vec<u8>> = (0..WORDS)
        .map(|i| chunk(serde_json::json!({"content": format!("w{i} ")}), None))
        .collect();
    all.push(chunk(serde_json::json!({}), Some("stop")));
    all.push(b"data: [DONE]\n\n".to_vec());
    all
}

const WORDS: usize = 6;
const STREAMS: usize = 6;
const CAP: u32 = 2;

#[tokio::test]
async fn streams_past_a_servers_cap_on_one_connection_run_at_once() {
    let upstream = TlsStreamServer::start(CAP, events(), Duration::from_millis(400)).await;
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("upstream.pem");
    std::fs::write(&cert, upstream.cert_pem()).unwrap();
    let served = start(
        kite_serve()
            .env("KITE_LOG", "off")
            .env("OPENAI_API_KEY", KEY)
            // The upstream's certificate is the one the machine trusts.
            .env("SSL_CERT_FILE", &cert)
            .args(["--provider", "openai", "--model", "m"])
            .args(["--api-key", GATEWAY_KEY])
            .arg("--base-url")
            .arg(format!("{}/v1", upstream.url())),
    );
    let client = reqwest::Client::new();
    let started = Instant::now();
    let asks = (0..STREAMS).map(|i| {
        let (client, base) = (client.clone(), served.base.clone());
        tokio::spawn(async move {
            let body = serde_json::json!({"model": "m", "stream": true,
                "messages": [{"role": "user", "content": format!("question {i}")}]});
            let r = client
                .post(format!("{base}/chat/completions"))
                .bearer_auth(GATEWAY_KEY)
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            let text = r.text().await.unwrap();
            (text, started.elapsed())
        })
    });
    let answers = futures_util::future::join_all(asks).await;
    let expected: String = (0..WORDS).map(|i| format!("w{i} ")).collect();
    for answer in answers {
        let (text, took) = answer.unwrap();
        let said: String = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
            .filter_map(|c| {
                c["choices"][0]["delta"]["content"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect();
        assert_eq!(said, expected, "{text}");
        // One answer takes WORDS + 2 intervals (3.2 s); waiting for a slot would double it.
        assert!(took < Duration::from_secs(6), "an answer took {took:?}");
    }
    assert_eq!(
        upstream.most_in_flight(),
        STREAMS,
        "every stream runs from the start (connections h2, h1: {:?})",
        upstream.connections()
    );
}

#[tokio::test]
async fn a_gateway_whose_provider_is_itself_is_refused_before_it_listens() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // As when OPENAI_BASE_URL, set for the gateway's clients, is read by the gateway too.
    let r = common::run(
        common::kite()
            .env("OPENAI_API_KEY", KEY)
            .env("OPENAI_BASE_URL", format!("http://localhost:{port}/v1"))
            .args(["serve", "--provider", "openai", "--addr"])
            .arg(format!("127.0.0.1:{port}")),
    )
    .await;
    assert_ne!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("would send its requests to this gateway itself"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains(KEY), "{}", r.stderr);
}
