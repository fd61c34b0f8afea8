//! Cassettes: traffic recorded from a loopback server replays with the server gone, a changed
//! prompt fails with a diff, nothing secret reaches disk, and re-recording gives the same bytes.

mod common;
use common::weather;

use kite::http::cassette::{Cassette, CassetteError, CassetteErrorKind, Mode, Rules};
use kite::http::{ReqwestTransport, RetryPolicy, Timeouts};
use kite::wire::openai_chat::Dialect;
use kite::{Agent, Event, Message, Model, OpenAiCompatible, Request, StreamExt};
use kite_testkit::{ReplayServer, Reply, fixture};
use std::path::{Path, PathBuf};
use std::time::Duration;

const KEY: &str = "sk-cassette-test-0123456789abcdefSECRET";

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

fn agent(m: OpenAiCompatible, system: &str) -> Agent {
    Agent::new(m, "gpt-5-nano").system(system).tool(weather())
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
    assert!(
        matches!(
            &err,
            kite::AgentError::Model(e)
                if CassetteError::of(e).map(|c| c.kind) == Some(CassetteErrorKind::Drift)
        ),
        "{err:?}"
    );
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
    assert!(
        err.contains(&dir.join("004-request.json").display().to_string()),
        "names the file to record: {err}"
    );
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

/// Audio bytes: a WAV header and noise, `seed` telling two files apart.
fn wav(len: usize, seed: u32) -> Vec<u8> {
    let mut b = b"RIFF\0\0\0\0WAVEfmt ".to_vec();
    let mut i = seed;
    while b.len() < len {
        i = i.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        b.push((i >> 16) as u8);
    }
    b
}

/// What four calls gave: an Anthropic stream, a Responses stream, a buffered Responses
/// call and an audio upload (streamed transcription).
#[derive(Debug, PartialEq)]
struct Outcome {
    anthropic: Vec<Event>,
    responses: Vec<Event>,
    buffered: kite::Response,
    transcript: Vec<kite::TranscriptEvent>,
}

async fn every_api(base: &str, c: &Cassette, audio: Vec<u8>) -> Result<Outcome, kite::Error> {
    let ask = |model: &str| {
        Request::new(model)
            .system("Be brief.")
            .message(Message::user("Hello"))
    };
    let anthropic = kite::Anthropic::new(base)
        .api_key(KEY)
        .transport(c.clone())
        .retry(RetryPolicy::none());
    let anthropic = anthropic
        .stream(&ask("claude-haiku-4-5"))
        .collect::<Vec<_>>()
        .await;
    let responses = kite::OpenAiResponses::new(base)
        .api_key(KEY)
        .transport(c.clone())
        .retry(RetryPolicy::none());
    let streamed = responses
        .stream(&ask("gpt-5-nano"))
        .collect::<Vec<_>>()
        .await;
    let buffered = responses.complete(&ask("gpt-5-nano")).await?;
    let transcriber = kite::Transcriber::new(base)
        .api_key(KEY)
        .transport(c.clone())
        .retry(RetryPolicy::none());
    let mut upload =
        kite::TranscriptionRequest::new("gpt-4o-transcribe", kite::Audio::new("ruby.wav", audio));
    upload.language = Some("en".into());
    let transcript = transcriber
        .transcribe_stream(&upload)
        .collect::<Vec<_>>()
        .await;
    Ok(Outcome {
        anthropic: anthropic.into_iter().collect::<Result<_, _>>()?,
        responses: streamed.into_iter().collect::<Result<_, _>>()?,
        buffered,
        transcript: transcript.into_iter().collect::<Result<_, _>>()?,
    })
}

#[tokio::test]
async fn every_api_and_an_upload_replay_with_the_server_gone() {
    let dir = scratch("every-api");
    let server = ReplayServer::start(vec![
        Reply::sse(fixture("anthropic/messages/stream-text/response.sse"))
            .chunked(40, Duration::from_millis(1)),
        Reply::sse(fixture("openai/responses/stream-text-basic/response.sse")),
        Reply::json(200, fixture("openai/responses/text-basic/response.json")),
        Reply::sse(fixture(
            "openai/audio-transcriptions/gpt-4o-transcribe-stream/response.sse",
        )),
    ])
    .await;
    let base = format!("{}/v1", server.url());
    let recorded = every_api(&base, &cassette(&dir, Mode::Auto), wav(4000, 1))
        .await
        .unwrap();
    assert_eq!(server.requests().len(), 4);
    drop(server);
    assert!(recorded.anthropic.len() > 3 && recorded.responses.len() > 3);
    assert!(matches!(
        recorded.transcript.last(),
        Some(kite::TranscriptEvent::Done(t)) if t.text.contains("Ruby")
    ));

    let replayed = every_api(&base, &cassette(&dir, Mode::Replay), wav(4000, 1))
        .await
        .unwrap();
    assert_eq!(replayed, recorded);

    // The upload is stored as its fields and a digest of the file, never the audio.
    let upload: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("004-request.json")).unwrap()).unwrap();
    assert_eq!(upload["fields"]["model"], "gpt-4o-transcribe");
    assert_eq!(upload["fields"]["language"], "en");
    assert_eq!(upload["fields"]["stream"], "true");
    assert_eq!(upload["files"]["file"]["filename"], "ruby.wav");
    assert_eq!(upload["files"]["file"]["bytes"], 4000);
    assert_eq!(
        upload["files"]["file"]["sha256"].as_str().map(str::len),
        Some(64)
    );
    assert!(!everything(&dir).contains("WAVEfmt"));
    let index = std::fs::read_to_string(dir.join("cassette.json")).unwrap();
    assert!(index.contains("anthropic-version"), "{index}");
    assert!(index.contains("/v1/audio/transcriptions"), "{index}");

    // Another recording of the same length: the digest shows the drift.
    let err = every_api(&base, &cassette(&dir, Mode::Replay), wav(4000, 2))
        .await
        .unwrap_err();
    assert_eq!(
        CassetteError::of(&err).map(|c| c.kind),
        Some(CassetteErrorKind::Drift),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("request 4 differs") && msg.contains("004-request.json"),
        "{msg}"
    );
    assert!(
        msg.contains("-      \"sha256\"") && msg.contains("+      \"sha256\""),
        "{msg}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The chunks of one streamed request through `c`, and when each came (from the start).
async fn chunks(c: &Cassette, url: &str) -> Vec<(Vec<u8>, Duration)> {
    use kite::http::{HttpRequest, Transport};
    let started = tokio::time::Instant::now();
    let req = HttpRequest::post_json(url, r#"{"model":"gpt-4o-mini","stream":true}"#);
    let mut body = c.send(req).await.unwrap().body;
    let mut out = Vec::new();
    while let Some(chunk) = body.next().await {
        out.push((chunk.unwrap().to_vec(), started.elapsed()));
    }
    out
}

#[test]
fn timing_replays_the_original_chunks_at_the_recorded_pace() {
    let dir = scratch("timing");
    let (plain, timed) = (dir.join("plain"), dir.join("timed"));
    let sse = fixture("openai/chat-completions/stream-text-with-usage/response.sse");
    let real = tokio::runtime::Runtime::new().unwrap();
    let (url, recorded) = real.block_on(async {
        let server = ReplayServer::start(vec![
            Reply::sse(sse.clone()).chunked(100, Duration::from_millis(25)),
            Reply::sse(sse.clone()).chunked(100, Duration::from_millis(25)),
        ])
        .await;
        let url = format!("{}/v1/chat/completions", server.url());
        let recorded = chunks(&cassette(&timed, Mode::Record).timing(true), &url).await;
        chunks(&cassette(&plain, Mode::Record), &url).await;
        (url, recorded)
    });
    drop(real);
    let pieces = |c: &[(Vec<u8>, Duration)]| c.iter().map(|p| p.0.clone()).collect::<Vec<_>>();
    assert_eq!(pieces(&recorded).concat(), sse);
    let timing: Vec<(usize, u64)> =
        serde_json::from_slice(&std::fs::read(timed.join("001-response.timing.json")).unwrap())
            .unwrap();
    assert_eq!(timing.len(), recorded.len());
    assert!(
        recorded.len() > 3,
        "recorded in several chunks: {}",
        recorded.len()
    );
    assert!(!plain.join("001-response.timing.json").exists());

    // On a clock that only moves when asked, so the pace is exact.
    let paused = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    paused.block_on(async {
        let paced = chunks(&cassette(&timed, Mode::Replay).timing(true), &url).await;
        assert_eq!(pieces(&paced), pieces(&recorded), "the original chunks");
        for ((_, at), (_, ms)) in paced.iter().zip(&timing) {
            assert_eq!(
                at.as_millis() as u64,
                *ms,
                "each chunk at its recorded time"
            );
        }
        assert!(timing.last().unwrap().1 >= 25 * (timing.len() as u64 - 1));

        let instant = chunks(&cassette(&timed, Mode::Replay), &url).await;
        assert_eq!(pieces(&instant), pieces(&recorded));
        assert!(
            instant.iter().all(|(_, at)| at.is_zero()),
            "no waiting unless asked"
        );

        // Without timing, a stream replays one event per chunk.
        let events = chunks(&cassette(&plain, Mode::Replay).timing(true), &url).await;
        let blank_lines = sse.windows(2).filter(|w| w == b"\n\n").count();
        assert_eq!(events.len(), blank_lines);
        assert!(events.iter().all(|(b, _)| b.ends_with(b"\n\n")));
        assert_eq!(pieces(&events).concat(), sse);
    });
    let _ = std::fs::remove_dir_all(&dir);
}
