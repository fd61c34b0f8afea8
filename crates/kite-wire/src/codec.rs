//! The contract every model API implements: [`Api`] says where requests go and how they are
//! authorized, [`Codec`] turns a [`Request`] into a body and the answer back into
//! [`Event`]s. Neither does I/O, so kite's HTTP model, a server speaking the formats back to
//! clients, and a program with its own HTTP client all drive the same code.
//!
//! A program with its own client encodes, posts and decodes:
//!
//! ```
//! use kite_core::{Message, Request, ResponseBuilder};
//! use kite_wire::{Api, Auth, Codec, StreamDecoder, openai_chat::ChatCompletions};
//!
//! async fn ask(base_url: &str, key: &str) -> Result<String, Box<dyn std::error::Error>> {
//!     let codec = ChatCompletions::default();
//!     let request = Request::new("gpt-4o-mini").message(Message::user("Say hi"));
//!
//!     let mut post = reqwest::Client::new()
//!         .post(format!("{base_url}{}", codec.path()))
//!         .header("content-type", "application/json")
//!         .body(codec.encode(&request, true)?);
//!     post = match codec.auth() {
//!         Auth::Bearer => post.bearer_auth(key),
//!         Auth::Header(name) => post.header(name, key),
//!     };
//!     for (name, value) in codec.headers() {
//!         post = post.header(name, value);
//!     }
//!     let mut answer = post.send().await?;
//!     if !answer.status().is_success() {
//!         let status = answer.status().as_u16();
//!         return Err(codec.decode_error(status, &answer.bytes().await?).into());
//!     }
//!
//!     let mut decoder = codec.stream_decoder();
//!     let mut events = Vec::new();
//!     while let Some(chunk) = answer.chunk().await? {
//!         decoder.decode(&chunk, &mut events)?;
//!     }
//!     decoder.finish(&mut events)?;
//!     Ok(ResponseBuilder::build(events)?.text())
//! }
//! # // Runs against a loopback server replaying a recorded OpenAI stream.
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! # use kite_testkit::{ReplayServer, Reply, fixture};
//! # let server = ReplayServer::start(vec![Reply::sse(fixture(
//! #     "openai/chat-completions/stream-text-with-usage/response.sse",
//! # ))]).await;
//! let text = ask(&server.url(), "sk-...").await.unwrap();
//! assert!(!text.is_empty());
//! # let sent = &server.requests()[0];
//! # assert_eq!(sent.header("authorization"), Some("Bearer sk-..."));
//! # assert!(sent.body_text().contains("\"stream\":true"));
//! # });
//! ```

use crate::errors;
use kite_core::{ApiError, Error, Event, Request, Response, ResponseBuilder};

/// How an API takes its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer KEY` (OpenAI and the servers like it).
    Bearer,
    /// The key alone in the named header (Anthropic's `x-api-key`).
    Header(&'static str),
}

/// An HTTP API: the path its requests go to under a base URL, and how they are authorized.
pub trait Api: Send + Sync + 'static {
    /// Appended to the base URL (`/chat/completions`).
    fn path(&self) -> &'static str;

    /// The provider's name as the OpenTelemetry GenAI conventions spell it
    /// (`gen_ai.provider.name`): `openai`, `anthropic`, `mistral_ai`, `groq`, `openrouter`,
    /// or `openai_compatible` for any other server speaking an OpenAI API.
    fn provider_name(&self) -> &'static str {
        "openai_compatible"
    }

    /// How the key travels.
    fn auth(&self) -> Auth {
        Auth::Bearer
    }

    /// Headers every request carries besides the key (an API version, beta features).
    fn headers(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// The headers of one request: [`headers`](Self::headers), and what the request offers
    /// this API in its own terms (Anthropic's beta features).
    fn request_headers(&self, request: &Request) -> Vec<(&'static str, String)> {
        let _ = request;
        self.headers()
    }

    /// The error an answer with an error `status` and `body` stands for. (kite-http's
    /// retries tell a spent quota from a passing rate limit with
    /// [`errors::decode_error`](crate::errors::decode_error), whatever this returns.)
    fn decode_error(&self, status: u16, body: &[u8]) -> ApiError {
        errors::decode_error(status, body)
    }
}

/// A model API's codec: a [`Request`] into a body, and the answer (streamed or whole, and
/// through [`Api::decode_error`] an error) back into kite's terms.
pub trait Codec: Api {
    /// The JSON body for `request`, asking for a stream when `stream` is true.
    fn encode(&self, request: &Request, stream: bool) -> Result<Vec<u8>, Error>;

    /// A decoder for one streamed answer.
    fn stream_decoder(&self) -> Box<dyn StreamDecoder>;

    /// The events a whole (non-streamed) JSON answer stands for, as if it had streamed.
    fn decode_whole(&self, body: &[u8]) -> Result<Vec<Event>, Error>;

    /// A whole JSON answer as a [`Response`].
    fn decode_response(&self, body: &[u8]) -> Result<Response, Error> {
        ResponseBuilder::build(self.decode_whole(body)?)
    }

    /// The body that asks the API to count `request`'s input tokens, posted to its URL
    /// followed by `/count_tokens`, for APIs that count them (Anthropic's); `None` for the
    /// others.
    fn count_tokens_body(&self, request: &Request) -> Option<Result<Vec<u8>, Error>> {
        let _ = request;
        None
    }

    /// The count in the API's answer to [`count_tokens_body`](Self::count_tokens_body).
    fn decode_count(&self, body: &[u8]) -> Result<u64, Error> {
        let _ = body;
        Err(Error::InvalidRequest(
            "this API does not count tokens".into(),
        ))
    }

    /// The path, relative to the API's URL, that continues a dropped stream from `point`,
    /// for APIs that can resume one (see [`StreamDecoder::resume_point`]).
    fn resume_path(&self, point: &ResumePoint) -> Option<String> {
        let _ = point;
        None
    }
}

/// A decoder for one streamed response: bytes in, events out.
pub trait StreamDecoder: Send {
    /// Decodes `bytes`, appending complete events to `out`. An error ends the stream; events
    /// decoded before it are still in `out`.
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), Error>;

    /// Called once when the connection closed: flushes what is pending, or reports a stream
    /// that ended before the provider said it was complete.
    fn finish(&mut self, out: &mut Vec<Event>) -> Result<(), Error>;

    /// Where the stream can be picked up on a new connection after this one dropped, when
    /// the provider can resume it.
    fn resume_point(&self) -> Option<ResumePoint> {
        None
    }

    /// A new connection continues the stream from [`resume_point`](Self::resume_point):
    /// framing left over from the dropped one is discarded.
    fn resumed(&mut self) {}
}

/// Where a dropped stream resumes: after event `after` of the provider's response `id`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResumePoint {
    /// The provider's response id.
    pub id: String,
    /// The sequence number of the last event received.
    pub after: u64,
}

impl<T: StreamDecoder + ?Sized> StreamDecoder for Box<T> {
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), Error> {
        (**self).decode(bytes, out)
    }

    fn finish(&mut self, out: &mut Vec<Event>) -> Result<(), Error> {
        (**self).finish(out)
    }

    fn resume_point(&self) -> Option<ResumePoint> {
        (**self).resume_point()
    }

    fn resumed(&mut self) {
        (**self).resumed()
    }
}

/// A sampling setting of a [`Request`](kite_core::Request) that not every provider takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Setting {
    Seed,
    FrequencyPenalty,
    PresencePenalty,
    TopK,
}

impl Setting {
    fn name(self) -> &'static str {
        match self {
            Setting::Seed => "seed",
            Setting::FrequencyPenalty => "frequency_penalty",
            Setting::PresencePenalty => "presence_penalty",
            Setting::TopK => "top_k",
        }
    }

    fn is_set(self, req: &kite_core::Request) -> bool {
        match self {
            Setting::Seed => req.seed.is_some(),
            Setting::FrequencyPenalty => req.frequency_penalty.is_some(),
            Setting::PresencePenalty => req.presence_penalty.is_some(),
            Setting::TopK => req.top_k.is_some(),
        }
    }
}

/// Refuses `req` when it sets one of `lacking`, which `api` has no place for: dropped, it
/// would change the answer unseen.
pub(crate) fn refuse_lacking(
    req: &kite_core::Request,
    api: &str,
    lacking: &[Setting],
) -> Result<(), kite_core::Error> {
    match lacking.iter().find(|s| s.is_set(req)) {
        Some(s) => Err(kite_core::Error::InvalidRequest(format!(
            "`{}` is not taken by {api}; leave it out for this model",
            s.name()
        ))),
        None => Ok(()),
    }
}

/// Refuses `req` when it asks another API than `own`'s for something in that API's terms
/// ([`Request::provider_options`](kite_core::Request)): left out, the answer would not be
/// what was asked for.
pub(crate) fn refuse_foreign(
    req: &kite_core::Request,
    own: &str,
    api: &str,
) -> Result<(), kite_core::Error> {
    match req.foreign_option(own, api) {
        Some(why) => Err(kite_core::Error::InvalidRequest(why)),
        None => Ok(()),
    }
}

/// The longest end-user id OpenAI takes (`user`, `safety_identifier`).
const MAX_END_USER: usize = 64;

/// An end-user id as OpenAI takes it: as given, or, when longer than it takes (Claude
/// Code's is a JSON object of device and session ids), a hash of it that stays the same
/// for the same user and shows nothing of it.
pub(crate) fn end_user(id: &str) -> String {
    match id.len() <= MAX_END_USER {
        true => id.to_owned(),
        false => format!("kite-{:016x}", fnv1a(id)),
    }
}

/// FNV-1a, 64 bits: a hash that is the same in every build and on every machine.
pub(crate) fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
