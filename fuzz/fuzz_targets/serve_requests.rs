//! The gateway's request decoders (`kite serve`: Chat Completions, Messages, Responses), fed
//! the same bytes. Whatever a client sends gives a request or an `InvalidRequest` naming
//! what is wrong, never a panic. A request one decodes goes on to any provider, so every
//! client encoder takes it or refuses it with a typed error; and written back out in its own
//! API by kite's client encoder, it decodes again, to the same request once the encoder has
//! settled it.
#![no_main]

use kite::wire::openai_chat::{self, Dialect};
use kite::wire::{anthropic, openai_responses};
use kite::{Error, Request};
use libfuzzer_sys::fuzz_target;

#[derive(Clone, Copy, Debug)]
enum Api {
    Chat,
    Messages,
    Responses,
}

/// The request a client's body asks for, and whether it wants a stream.
fn decode(api: Api, body: &[u8]) -> Result<(Request, bool), Error> {
    match api {
        Api::Chat => openai_chat::serve::decode_request(body).map(|c| (c.request, c.stream)),
        Api::Messages => anthropic::serve::decode_request(body).map(|c| (c.request, c.stream)),
        Api::Responses => {
            openai_responses::serve::decode_request(body).map(|c| (c.request, c.stream))
        }
    }
}

/// `request` as kite's own client writes it in `api`.
fn encode(api: Api, request: &Request, stream: bool) -> Result<Vec<u8>, Error> {
    match api {
        Api::Chat => openai_chat::encode_request(request, Dialect::Compatible, stream),
        Api::Messages => anthropic::encode_request(request, stream),
        Api::Responses => {
            let options = openai_responses::Options::default();
            openai_responses::encode_request(request, &options, stream)
        }
    }
}

/// `request` written in `api` by kite's client encoder and decoded again by the gateway's
/// (`None` when the encoder refuses it). What kite writes, the gateway must read.
fn round(api: Api, request: &Request, stream: bool) -> Option<Request> {
    let body = encode(api, request, stream).ok()?;
    match decode(api, &body) {
        Ok((back, back_stream)) => {
            assert_eq!(back_stream, stream, "{api:?}: `stream` changed");
            Some(back)
        }
        // The one known exception: an encoder leaves out what its API cannot carry (another
        // provider's reasoning, empty texts), and when that is all the conversation says,
        // the gateway refuses what is left as an empty conversation.
        Err(Error::InvalidRequest(m)) if m.contains("there is nothing to answer") => None,
        Err(e) => panic!(
            "{api:?}: kite's own encoding of a request it decoded is refused: {e}\n{}",
            String::from_utf8_lossy(&body)
        ),
    }
}

/// A refusal is a typed error a client is answered 400 with.
fn refused(what: &str, e: &Error) {
    assert!(
        matches!(e, Error::InvalidRequest(m) if !m.is_empty()),
        "{what}: {e:?} is not an InvalidRequest"
    );
}

fuzz_target!(|body: &[u8]| {
    for api in [Api::Chat, Api::Messages, Api::Responses] {
        let (request, stream) = match decode(api, body) {
            Ok(decoded) => decoded,
            Err(e) => {
                refused(&format!("{api:?} decoder"), &e);
                continue;
            }
        };
        // The route may name any provider.
        for dialect in [
            Dialect::OpenAi,
            Dialect::Mistral,
            Dialect::OpenRouter,
            Dialect::Groq,
            Dialect::Compatible,
        ] {
            if let Err(e) = openai_chat::encode_request(&request, dialect, stream) {
                refused(&format!("{dialect:?} encoder"), &e);
            }
        }
        for other in [Api::Messages, Api::Responses] {
            if let Err(e) = encode(other, &request, stream) {
                refused(&format!("{other:?} encoder"), &e);
            }
        }
        // Sent on in its own API, it reads back. The encoder may settle some of it once (a
        // strict schema is made strict), so it is the second round that must change nothing.
        let Some(once) = round(api, &request, stream) else {
            continue;
        };
        if let Some(twice) = round(api, &once, stream) {
            assert_eq!(
                twice, once,
                "{api:?}: the request changed on its second way round"
            );
        }
    }
});
