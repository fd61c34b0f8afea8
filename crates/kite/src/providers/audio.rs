//! Audio transcription over HTTP: OpenAI's `/audio/transcriptions` and the providers that
//! serve the same endpoint (Mistral, OpenRouter, Groq).

use super::http_model::HttpModel;
use futures_util::{Stream, StreamExt};
use http::Method;
use kite_core::{Error, Transcript, TranscriptEvent, TranscriptionRequest};
use kite_wire::audio::{self, TranscriptStream, Transcriptions};
use std::pin::Pin;

/// A speech-to-text model.
///
/// ```no_run
/// # async fn demo() -> Result<(), kite::Error> {
/// use kite::{Audio, TranscriptionRequest, Transcriber};
/// let whisper = Transcriber::new("https://api.openai.com/v1").api_key("sk-...");
/// let audio = Audio::new("talk.wav", std::fs::read("talk.wav").unwrap());
/// let t = whisper.transcribe(&TranscriptionRequest::new("whisper-1", audio)).await?;
/// println!("{}", t.text);
/// # Ok(()) }
/// ```
pub type Transcriber = HttpModel<Transcriptions>;

/// The events of a streamed transcription.
pub type TranscriptEvents = Pin<Box<dyn Stream<Item = Result<TranscriptEvent, Error>> + Send>>;

impl Transcriber {
    /// A transcriber at `base_url` (the part before `/audio/transcriptions`).
    pub fn new(base_url: impl AsRef<str>) -> Self {
        Self::with_api(Transcriptions, base_url)
    }

    /// Transcribes the request's audio and returns the whole transcript.
    pub async fn transcribe(&self, req: &TranscriptionRequest) -> Result<Transcript, Error> {
        let form = audio::encode_request(req, false)?;
        let resp = self
            .call(
                Method::POST,
                "",
                Some((&form.content_type, form.body.into())),
            )
            .await?;
        let text = req.format.is_some_and(|f| f.is_text()) && !resp.is_json();
        audio::decode_response(&resp.bytes().await?, text)
    }

    /// Transcribes the request's audio as a stream of text deltas (or speaker segments),
    /// ending with the whole transcript. A model that cannot stream answers at once, as
    /// one final event.
    pub fn transcribe_stream(&self, req: &TranscriptionRequest) -> TranscriptEvents {
        let form = match audio::encode_request(req, true) {
            Ok(f) => f,
            Err(e) => return Box::pin(futures_util::stream::iter([Err(e)])),
        };
        let this = self.clone();
        let opened = async move {
            this.call(
                Method::POST,
                "",
                Some((&form.content_type, form.body.into())),
            )
            .await
        };
        Box::pin(
            futures_util::stream::once(opened).flat_map(|opened| -> TranscriptEvents {
                match opened {
                    Err(e) => Box::pin(futures_util::stream::iter([Err(e)])),
                    Ok(resp) if resp.is_json() => {
                        Box::pin(futures_util::stream::once(async move {
                            audio::decode_response(&resp.bytes().await?, false)
                                .map(TranscriptEvent::Done)
                        }))
                    }
                    Ok(resp) => decode(resp.body),
                }
            }),
        )
    }
}

/// Drives a response body through a [`TranscriptStream`].
fn decode(body: kite_http::ByteStream) -> TranscriptEvents {
    struct State {
        body: kite_http::ByteStream,
        dec: TranscriptStream,
        pending: std::collections::VecDeque<Result<TranscriptEvent, Error>>,
        done: bool,
    }
    let state = State {
        body,
        dec: TranscriptStream::new(),
        pending: Default::default(),
        done: false,
    };
    Box::pin(futures_util::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(item) = s.pending.pop_front() {
                return Some((item, s));
            }
            if s.done {
                return None;
            }
            let mut out = Vec::new();
            let r = match s.body.next().await {
                Some(Ok(bytes)) => s.dec.decode(&bytes, &mut out),
                Some(Err(e)) => Err(e),
                None => {
                    s.done = true;
                    s.dec.finish(&mut out)
                }
            };
            s.pending.extend(out.into_iter().map(Ok));
            if let Err(e) = r {
                s.pending.push_back(Err(e));
                s.done = true;
            }
        }
    }))
}
