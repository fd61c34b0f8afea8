//! Audio transcription (`POST /audio/transcriptions`, OpenAI and the servers that copy it:
//! Mistral, OpenRouter, Groq): the multipart request, JSON and text answers, and streamed
//! transcript events.
//!
//! The `multipart/form-data` body is written here rather than by the HTTP client, so that it
//! stays sans-IO and its bytes are the same for the same request (its boundary is derived
//! from the content): recordings of uploads then compare equal from one run to the next.

use crate::errors;
use crate::sse::SseDecoder;
use kite_core::{
    Error, Segment, Transcript, TranscriptEvent, TranscriptionRequest, TransportErrorKind, Usage,
    Word,
};
use serde_json::Value;

/// The transcription [`Api`](crate::Api): where uploads go, with a bearer key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Transcriptions;

impl crate::Api for Transcriptions {
    fn path(&self) -> &'static str {
        "/audio/transcriptions"
    }
}

/// A `multipart/form-data` body and the content type naming its boundary.
#[derive(Clone, Debug)]
pub struct Multipart {
    /// The `Content-Type` header: `multipart/form-data` with its boundary.
    pub content_type: String,
    /// The encoded form.
    pub body: Vec<u8>,
}

/// The multipart form of a transcription request. With `stream`, the answer is asked for
/// as an event stream (models that support it: `gpt-4o-transcribe` and later).
pub fn encode_request(req: &TranscriptionRequest, stream: bool) -> Result<Multipart, Error> {
    if req.model.is_empty() {
        return Err(Error::InvalidRequest("no model named".into()));
    }
    if req.audio.bytes.is_empty() {
        return Err(Error::InvalidRequest("the audio file is empty".into()));
    }
    let mut fields: Vec<(String, String)> = vec![("model".into(), req.model.clone())];
    let mut put = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            fields.push((k.into(), v));
        }
    };
    put("language", req.language.clone());
    put("prompt", req.prompt.clone());
    put("response_format", req.format.map(|f| f.as_str().to_owned()));
    put("temperature", req.temperature.map(|t| t.to_string()));
    for g in &req.timestamp_granularities {
        fields.push(("timestamp_granularities[]".into(), g.clone()));
    }
    fields.extend(req.extra.iter().cloned());
    if stream {
        fields.push(("stream".into(), "true".into()));
    }

    let media_type = if req.audio.media_type.is_empty() {
        "application/octet-stream"
    } else {
        &req.audio.media_type
    };
    if media_type.contains(['\r', '\n']) {
        return Err(Error::InvalidRequest(
            "the audio's media type holds a line break".into(),
        ));
    }
    let filename = if req.audio.filename.is_empty() {
        "audio"
    } else {
        &req.audio.filename
    };
    // Disposition, content type and content of each part. The file goes second, after the
    // model, as the reference clients send it.
    let (model, rest) = fields.split_at(1);
    let file = (
        format!("name=\"file\"; filename=\"{}\"", quote(filename)),
        Some(media_type),
        &req.audio.bytes[..],
    );
    let parts = model
        .iter()
        .map(field)
        .chain([file])
        .chain(rest.iter().map(field));

    let boundary = boundary(&fields, &req.audio.bytes);
    let mut body = Vec::with_capacity(req.audio.bytes.len() + 256 * (fields.len() + 1));
    for (disposition, content_type, content) in parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        body.extend_from_slice(
            format!("Content-Disposition: form-data; {disposition}\r\n").as_bytes(),
        );
        if let Some(ct) = content_type {
            body.extend_from_slice(format!("Content-Type: {ct}\r\n").as_bytes());
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(content);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    Ok(Multipart {
        content_type: format!("multipart/form-data; boundary={boundary}"),
        body,
    })
}

/// A plain form field as a part: disposition, no content type, content.
fn field((name, value): &(String, String)) -> (String, Option<&str>, &[u8]) {
    (format!("name=\"{}\"", quote(name)), None, value.as_bytes())
}

/// A name or file name inside a quoted header parameter (as browsers write them).
fn quote(s: &str) -> String {
    s.replace('"', "%22")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A boundary found in none of the parts, derived from them (FNV-1a) so that the same
/// request gives the same bytes.
fn boundary(fields: &[(String, String)], file: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for (k, v) in fields {
        eat(k.as_bytes());
        eat(v.as_bytes());
    }
    eat(file);
    loop {
        let b = format!("kite-{h:016x}");
        let found = |hay: &[u8]| memchr::memmem::find(hay, b.as_bytes()).is_some();
        if !found(file)
            && !fields
                .iter()
                .any(|(k, v)| found(k.as_bytes()) || found(v.as_bytes()))
        {
            return b;
        }
        h = h.wrapping_add(1);
    }
}

/// Decodes a whole transcription answer: JSON, or plain text when `text` (the request asked
/// for text, SRT or VTT).
pub fn decode_response(body: &[u8], text: bool) -> Result<Transcript, Error> {
    if text {
        return Ok(Transcript {
            text: String::from_utf8_lossy(body).trim_end().to_owned(),
            ..Transcript::default()
        });
    }
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| Error::decode(format!("transcription is not valid JSON: {e}"), body))?;
    if let Some(e) = errors::from_value(None, &v) {
        return Err(e.into());
    }
    let Some(text) = v.get("text").and_then(Value::as_str) else {
        return Err(Error::decode("transcription has no text", body));
    };
    let mut t = Transcript {
        text: text.to_owned(),
        language: v["language"].as_str().map(str::to_owned),
        duration: v["duration"].as_f64(),
        segments: v["segments"]
            .as_array()
            .into_iter()
            .flatten()
            .map(segment)
            .collect(),
        words: v["words"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|w| Word {
                word: w["word"].as_str().unwrap_or_default().to_owned(),
                start: w["start"].as_f64().unwrap_or(0.0),
                end: w["end"].as_f64().unwrap_or(0.0),
            })
            .collect(),
        ..Transcript::default()
    };
    usage(&v["usage"], &mut t);
    Ok(t)
}

fn segment(s: &Value) -> Segment {
    Segment {
        id: match &s["id"] {
            Value::String(id) => Some(id.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        },
        start: s["start"].as_f64().unwrap_or(0.0),
        end: s["end"].as_f64().unwrap_or(0.0),
        text: s["text"].as_str().unwrap_or_default().to_owned(),
        speaker: s["speaker"].as_str().map(str::to_owned),
    }
}

/// Usage in any of its shapes: tokens (OpenAI, OpenRouter with a cost), duration
/// (`whisper-1`), or Mistral's prompt/completion tokens with audio seconds.
fn usage(u: &Value, t: &mut Transcript) {
    let n = |a: &str, b: &str| u[a].as_u64().or_else(|| u[b].as_u64()).unwrap_or(0);
    let input_tokens = n("input_tokens", "prompt_tokens");
    let output_tokens = n("output_tokens", "completion_tokens");
    t.usage = Usage {
        input_tokens,
        output_tokens,
        total_tokens: u["total_tokens"]
            .as_u64()
            .unwrap_or(input_tokens + output_tokens),
        cost: u["cost"].as_f64(),
        ..Usage::default()
    };
    t.audio_seconds = u["seconds"]
        .as_f64()
        .or_else(|| u["prompt_audio_seconds"].as_f64());
}

/// Decodes a streamed transcription (`transcript.text.delta`, `transcript.text.segment`,
/// `transcript.text.done`; Mistral's `transcription.*` alike).
#[derive(Debug, Default)]
pub struct TranscriptStream {
    sse: SseDecoder,
    text: String,
    language: Option<String>,
    segments: Vec<Segment>,
    done: bool,
}

impl TranscriptStream {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes `bytes`, appending complete events to `out`.
    pub fn decode(&mut self, bytes: &[u8], out: &mut Vec<TranscriptEvent>) -> Result<(), Error> {
        if self.done {
            return Ok(());
        }
        self.sse.feed(bytes);
        self.drain(out)
    }

    /// The stream ended: an error unless the transcription was complete.
    pub fn finish(&mut self, out: &mut Vec<TranscriptEvent>) -> Result<(), Error> {
        if !self.done {
            self.sse.end();
            self.drain(out)?;
        }
        if self.done {
            return Ok(());
        }
        Err(Error::transport(
            TransportErrorKind::ConnectionClosed,
            "the stream ended before the transcription was complete",
        ))
    }

    fn drain(&mut self, out: &mut Vec<TranscriptEvent>) -> Result<(), Error> {
        while !self.done {
            let Some(frame) = self.sse.next_frame() else {
                break;
            };
            let data = frame.data.trim_ascii();
            if data == b"[DONE]" || data.is_empty() {
                continue;
            }
            let v: Value = serde_json::from_slice(data)
                .map_err(|e| Error::decode(format!("event is not valid JSON: {e}"), data))?;
            let kind = v["type"].as_str().unwrap_or(frame.event);
            match kind {
                "error" => return Err(errors::from_event(data)),
                k if k.ends_with(".delta") => {
                    let text = v["delta"]
                        .as_str()
                        .or_else(|| v["text"].as_str())
                        .unwrap_or_default()
                        .to_owned();
                    self.text.push_str(&text);
                    out.push(TranscriptEvent::TextDelta { text });
                }
                k if k.ends_with(".segment") => {
                    let s = segment(&v);
                    self.segments.push(s.clone());
                    out.push(TranscriptEvent::Segment(s));
                }
                "transcription.language" => {
                    self.language = v["audio_language"].as_str().map(str::to_owned);
                }
                k if k.ends_with(".done") => {
                    let mut t = Transcript {
                        text: v["text"]
                            .as_str()
                            .map(str::to_owned)
                            .unwrap_or_else(|| std::mem::take(&mut self.text)),
                        language: v["language"]
                            .as_str()
                            .map(str::to_owned)
                            .or(self.language.take()),
                        segments: std::mem::take(&mut self.segments),
                        ..Transcript::default()
                    };
                    usage(&v["usage"], &mut t);
                    self.done = true;
                    out.push(TranscriptEvent::Done(t));
                }
                _ => {}
            }
        }
        Ok(())
    }
}
