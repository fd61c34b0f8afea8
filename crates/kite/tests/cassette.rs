//! Cassettes: traffic recorded from a loopback server replays with the server gone, a changed
//! prompt fails with a diff, nothing secret reaches disk, and re-recording gives the same bytes.

use kite::http::cassette::{Cassette, Mode, Rules};
use kite::http::{ReqwestTransport, RetryPolicy, Timeouts};
use kite::wire::openai_chat::Dialect;
use kite::{Agent, Event, Message, Model, OpenAiCompatible, Request, StreamExt, tool};
use kite_testkit::{ReplayServer, Reply};
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

const KEY: &str = "sk-cassette-test-0123456789abcdefSECRET";

fn fixture(path: &str) -> Vec<u8> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/wire");
    std::fs::read(root.join(path)).unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kite-cassette-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn cassette(dir: &Path, mode: Mode) -> Cassette {
    let real = ReqwestTransport::new(Timeouts::default()).unwrap();
    Cassette::with_mode(dir, mode, Rules::default(), real).unwrap()
}

fn model(base: &str, c: Cassette) -> OpenAiCompatible {
    OpenAiCompatible::new(base, Dialect::OpenAi)
        .api_key(KEY)
        .transport(c)
        .retry(RetryPolicy::none())
}

#[derive(Deserialize, JsonSchema)]
struct Coordinates {
    latitude: String,
    longitude: String,
}

fn agent(m: OpenAiCompatible, system: &str) -> Agent {
    let weather = tool(
        "weather",
        "Gets current weather for a location",
        |c: Coordinates, _| async move {
            Ok(format!(
                "Current weather at {}, {}: 15°C, Wind: 10 km/h",
                c.latitude, c.longitude
            )
            .into())
        },
    );
    Agent::new(m, "gpt-5-nano").system(system).tool(weather)
}

fn replies() -> Vec<Reply> {
    vec![
        Reply::sse(fixture(
            "openai/chat-completions/stream-tool-call-fragments/response.sse",
        ))
        .chunked(64, Duration::from_millis(1)),
        Reply::sse(fixture(
            "openai/chat-completions/stream-after-tool-result/response.sse",
        )),
        Reply::json(
            200,
            fixture("openai/chat-completions/text-basic/response.json"),
        ),
    ]
}

/// A tool loop (two streamed calls) and one buffered call: events, text, history.
async fn session(
    base: &str,
    c: Cassette,
    system: &str,
) -> Result<(Vec<String>, String, Vec<Event>), kite::AgentError> {
    let run = agent(model(base, c.clone()), system)
        .ask("Weather in Berlin (52.5200, 13.4050)?")
        .await?;
    let history: Vec<String> = run
        .messages()
        .iter()
        .map(|m| format!("{:?}", m.parts))
        .collect();
    let req = Request::new("gpt-4o-mini").message(Message::user("Hello"));
    let events: Vec<Event> = model(base, c)
        .stream(&req)
        .map(|e| e.map_err(kite::AgentError::from))
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_, _>>()?;
    Ok((history, run.text(), events))
}

#[tokio::test]
async fn recorded_traffic_replays_with_the_server_gone() {
    let dir = scratch("replay");
    let server = ReplayServer::start(replies()).await;
    let base = format!("{}/v1", server.url());
    let recorded = session(&base, cassette(&dir, Mode::Auto), "Be brief.")
        .await
        .unwrap();
    assert_eq!(server.requests().len(), 3);
    drop(server);

    let replayed = session(&base, cassette(&dir, Mode::Replay), "Be brief.")
        .await
        .unwrap();
    assert_eq!(replayed, recorded);
    assert!(recorded.1.contains("15"), "{}", recorded.1);

    // The files a person reviews: an index, the normalized requests, the bodies as sent.
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "001-request.json",
            "001-response.sse",
            "002-request.json",
            "002-response.sse",
            "003-request.json",
            "003-response.json",
            "cassette.json",
        ]
    );
    let sse = std::fs::read(dir.join("001-response.sse")).unwrap();
    assert_eq!(
        sse,
        fixture("openai/chat-completions/stream-tool-call-fragments/response.sse")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_changed_prompt_fails_with_a_diff_that_shows_it() {
    let dir = scratch("drift");
    let server = ReplayServer::start(replies()).await;
    let base = format!("{}/v1", server.url());
    session(&base, cassette(&dir, Mode::Auto), "Be brief.")
        .await
        .unwrap();
    drop(server);

    let err = session(&base, cassette(&dir, Mode::Replay), "Be concise.")
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("request 1 differs from the recording"),
        "{msg}"
    );
    assert!(msg.contains("-") && msg.contains("Be brief."), "{msg}");
    assert!(msg.contains("+") && msg.contains("Be concise."), "{msg}");
    assert!(
        msg.contains(&dir.display().to_string()),
        "names what to delete: {msg}"
    );

    // A request past the recording is an error naming how to record it.
    let c = cassette(&dir, Mode::Replay);
    let m = model(&base, c);
    let req = Request::new("gpt-4o-mini").message(Message::user("Hello"));
    for _ in 0..3 {
        let _ = m.complete(&req).await;
    }
    let err = m.complete(&req).await.unwrap_err().to_string();
    assert!(err.contains("no recording of request 4"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every byte under `dir`, as text.
fn everything(dir: &Path) -> String {
    let mut all = String::new();
    for e in std::fs::read_dir(dir).into_iter().flatten() {
        all.push_str(&String::from_utf8_lossy(
            &std::fs::read(e.unwrap().path()).unwrap(),
        ));
    }
    all
}

#[tokio::test]
async fn nothing_secret_reaches_disk() {
    let dir = scratch("secrets");
    let server = ReplayServer::start(vec![
        Reply::json(
            200,
            fixture("openai/chat-completions/text-basic/response.json"),
        ),
        Reply::json(
            200,
            fixture("openai/chat-completions/text-basic/response.json"),
        ),
    ])
    .await;
    let base = format!("{}/v1", server.url());
    let m = model(&base, cassette(&dir, Mode::Auto));
    // The key goes in the Authorization header: the exchange is written without it.
    m.complete(&Request::new("gpt-4o-mini").message(Message::user("Hello")))
        .await
        .unwrap();
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert!(dir.join("cassette.json").exists());
    assert!(!everything(&dir).contains(KEY));
    assert!(!everything(&dir).to_lowercase().contains("authorization"));

    // A key inside the body: the recording is refused, and nothing of it is written.
    let planted = "sk-proj-PLANTEDabcdefghijklmnopqrstuvwxyz012345";
    let err = m
        .complete(
            &Request::new("gpt-4o-mini").message(Message::user(format!("my key is {planted}"))),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("refusing to write exchange 2"), "{err}");
    assert!(
        !err.contains(planted),
        "the error does not repeat the key: {err}"
    );
    assert!(!everything(&dir).contains("PLANTED"));
    assert!(!dir.join("002-request.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn recording_again_from_the_same_server_gives_the_same_bytes() {
    let (a, b) = (scratch("stable-a"), scratch("stable-b"));
    let mut twice = replies();
    twice.extend(replies());
    let server = ReplayServer::start(twice).await;
    let base = format!("{}/v1", server.url());
    session(&base, cassette(&a, Mode::Record), "Be brief.")
        .await
        .unwrap();
    session(&base, cassette(&b, Mode::Record), "Be brief.")
        .await
        .unwrap();
    let names: Vec<_> = std::fs::read_dir(&a)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 7);
    for name in names {
        assert_eq!(
            std::fs::read(a.join(&name)).unwrap(),
            std::fs::read(b.join(&name)).unwrap(),
            "{name:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}
