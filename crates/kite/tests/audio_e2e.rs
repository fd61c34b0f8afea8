//! Transcription over the real transport: kite uploads audio as multipart, the loopback
//! server parses the upload with an independent parser and checks every part against the
//! recorded request, then answers with the recorded response.

use futures_util::StreamExt;
use kite::{Audio, Transcriber, TranscriptEvent, TranscriptFormat, TranscriptionRequest};
use kite_testkit::{ReplayServer, Reply};
use serde_json::Value;
use std::path::{Path, PathBuf};

const KEY: &str = "sk-audio-test-0123456789SECRET";
const SAID: &str = "Ruby is a programming language designed for developer happiness.";

fn case_dir(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/wire")
        .join(case)
}

/// Audio bytes of the recorded length: a WAV header and a tone.
fn wav(len: usize) -> Vec<u8> {
    let mut b = b"RIFF\0\0\0\0WAVEfmt ".to_vec();
    let mut i: u32 = 0;
    while b.len() < len {
        i = i.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        b.push((i >> 16) as u8);
    }
    b.truncate(len);
    b
}

/// One part of a multipart body as a server sees it.
#[derive(Debug, PartialEq)]
struct SeenPart {
    name: String,
    filename: Option<String>,
    content_type: Option<String>,
    data: Vec<u8>,
}

async fn parse_upload(content_type: &str, body: Vec<u8>) -> Vec<SeenPart> {
    let boundary = multer::parse_boundary(content_type).expect("a multipart content type");
    let stream = futures_util::stream::once(async move {
        Ok::<_, std::convert::Infallible>(bytes::Bytes::from(body))
    });
    let mut form = multer::Multipart::new(stream, boundary);
    let mut parts = Vec::new();
    while let Some(field) = form.next_field().await.expect("a well-formed upload") {
        parts.push(SeenPart {
            name: field.name().unwrap_or_default().to_owned(),
            filename: field.file_name().map(str::to_owned),
            content_type: field.content_type().map(|m| m.to_string()),
            data: field.bytes().await.unwrap().to_vec(),
        });
    }
    parts
}

/// The request the recorded client sent, rebuilt with kite; and whether it streamed.
fn request(form: &[Value]) -> (TranscriptionRequest, bool) {
    let mut req = TranscriptionRequest::default();
    let mut stream = false;
    for f in form {
        let value = f["value"].as_str().unwrap_or_default().to_owned();
        match f["name"].as_str().unwrap() {
            "model" => req.model = value,
            "file" => {
                req.audio = Audio::new(
                    f["filename"].as_str().unwrap(),
                    wav(f["bytes"].as_u64().unwrap() as usize),
                )
            }
            "response_format" => req.format = TranscriptFormat::parse(&value),
            "stream" => stream = value == "true",
            other => req.extra.push((other.to_owned(), value)),
        }
    }
    (req, stream)
}

#[tokio::test]
async fn every_recorded_upload_is_sent_part_for_part_and_its_answer_read() {
    let cases = [
        "openai/audio-transcriptions/whisper-json",
        "openai/audio-transcriptions/diarize-json",
        "openai/audio-transcriptions/diarize-stream",
        "openai/audio-transcriptions/gpt-4o-transcribe-stream",
        "mistral/audio-transcriptions/voxtral-json",
        "openrouter/audio-transcriptions/gpt-4o-mini-transcribe-json",
    ];
    for case in cases {
        let dir = case_dir(case);
        let form: Vec<Value> =
            serde_json::from_slice(&std::fs::read(dir.join("request.form.json")).unwrap()).unwrap();
        let reply = match std::fs::read(dir.join("response.sse")) {
            Ok(sse) => Reply::sse(sse).chunked(17, std::time::Duration::from_millis(1)),
            Err(_) => Reply::json(200, std::fs::read(dir.join("response.json")).unwrap()),
        };
        let server = ReplayServer::start(vec![reply]).await;
        let t = Transcriber::new(format!("{}/v1", server.url())).api_key(KEY);
        let (req, stream) = request(&form);

        let transcript = if stream {
            let events: Vec<TranscriptEvent> = t
                .transcribe_stream(&req)
                .map(|e| e.unwrap())
                .collect()
                .await;
            assert!(events.len() > 1, "{case}: streamed in pieces");
            match events.last() {
                Some(TranscriptEvent::Done(t)) => t.clone(),
                other => panic!("{case}: {other:?}"),
            }
        } else {
            t.transcribe(&req).await.unwrap()
        };
        assert_eq!(transcript.text, SAID, "{case}");

        let sent = &server.requests()[0];
        assert_eq!(sent.path, "/v1/audio/transcriptions", "{case}");
        assert_eq!(
            sent.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        let seen = parse_upload(sent.header("content-type").unwrap(), sent.body.clone()).await;
        assert_eq!(seen.len(), form.len(), "{case}: {seen:?}");
        // Part order carries no meaning; each recorded part must arrive once, unchanged.
        for want in &form {
            let name = want["name"].as_str().unwrap();
            let found: Vec<&SeenPart> = seen.iter().filter(|p| p.name == name).collect();
            assert_eq!(found.len(), 1, "{case}: {name}");
            let part = found[0];
            if part.name == "file" {
                assert_eq!(
                    part.filename.as_deref(),
                    want["filename"].as_str(),
                    "{case}"
                );
                assert_eq!(
                    part.content_type.as_deref(),
                    want["content_type"].as_str(),
                    "{case}"
                );
                assert_eq!(part.data, req.audio.bytes, "{case}: the file arrives whole");
            } else {
                assert_eq!(part.content_type, None, "{case}");
                assert_eq!(
                    String::from_utf8(part.data.clone()).unwrap(),
                    want["value"].as_str().unwrap(),
                    "{case}"
                );
            }
        }
    }
}

#[tokio::test]
async fn awkward_names_and_every_option_survive_the_upload() {
    let server =
        ReplayServer::start(vec![Reply::json(200, format!(r#"{{"text":"{SAID}"}}"#))]).await;
    let t = Transcriber::new(server.url()).api_key(KEY);
    // The audio holds the text a naive boundary could be.
    let mut bytes = b"--kite-\r\n--\r\nContent-Disposition: form-data".to_vec();
    bytes.extend(wav(3000));
    let mut req = TranscriptionRequest::new(
        "whisper-1",
        Audio::new("my \"talk\"\r\n.MP3", bytes.clone()),
    );
    req.language = Some("en".into());
    req.prompt = Some("Ruby, \"Matz\"\r\nand more".into());
    req.format = Some(TranscriptFormat::VerboseJson);
    req.temperature = Some(0.2);
    req.timestamp_granularities = vec!["word".into(), "segment".into()];
    assert_eq!(t.transcribe(&req).await.unwrap().text, SAID);

    let sent = &server.requests()[0];
    let seen = parse_upload(sent.header("content-type").unwrap(), sent.body.clone()).await;
    let names: Vec<&str> = seen.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "model",
            "file",
            "language",
            "prompt",
            "response_format",
            "temperature",
            "timestamp_granularities[]",
            "timestamp_granularities[]"
        ]
    );
    assert_eq!(seen[1].data, bytes);
    assert_eq!(seen[1].content_type.as_deref(), Some("audio/mpeg"));
    assert_eq!(seen[1].filename.as_deref(), Some("my %22talk%22%0D%0A.MP3"));
    assert_eq!(seen[3].data, b"Ruby, \"Matz\"\r\nand more");
    assert_eq!(seen[4].data, b"verbose_json");
    assert_eq!(seen[6].data, b"word");

    // The same request gives the same bytes (recordings of uploads stay stable).
    let again = kite::wire::audio::encode_request(&req, false).unwrap();
    assert_eq!(again.body, sent.body);
}

#[tokio::test]
async fn text_answers_errors_and_empty_audio() {
    let server = ReplayServer::start(vec![
        Reply::status(200).header("content-type", "text/plain").body(format!("{SAID}\n")),
        Reply::json(400, br#"{"error":{"message":"Invalid file format. Supported formats: ['flac', 'mp3']","type":"invalid_request_error","param":"file","code":"invalid_value"}}"#.to_vec()),
    ])
    .await;
    let t = Transcriber::new(server.url()).api_key(KEY);
    let mut req = TranscriptionRequest::new("whisper-1", Audio::new("a.wav", wav(100)));
    req.format = Some(TranscriptFormat::Text);
    assert_eq!(t.transcribe(&req).await.unwrap().text, SAID);
    let err = t.transcribe(&req).await.unwrap_err();
    let api = err.api().unwrap();
    assert_eq!(
        (api.status, api.param.as_deref()),
        (Some(400), Some("file"))
    );
    assert!(!format!("{err:?}{t:?}").contains(KEY));

    let empty = TranscriptionRequest::new("whisper-1", Audio::new("a.wav", Vec::new()));
    assert!(matches!(
        t.transcribe(&empty).await,
        Err(kite::Error::InvalidRequest(_))
    ));
    assert_eq!(server.requests().len(), 2, "nothing sent for empty audio");
}
