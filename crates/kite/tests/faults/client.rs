//! kite as a client: each case streams (`Model::stream`) a recorded stream, or buffers
//! (`Model::complete`) a recorded whole answer, through the proxy.

use crate::{Api, Case, DEADLINE, LIMIT, Tally};
use kite::{Error, Event, ResponseBuilder, StreamExt, TransportErrorKind};
use kite_testkit::{Fault, ReplayServer};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// What one call gave.
struct Seen {
    /// The answer's text, when it ended as complete.
    text: Option<String>,
    error: Option<Error>,
    connections: usize,
    took: Duration,
}

/// Calls `api` at `base` as the case asks: streamed, or whole.
async fn call(api: Api, whole: bool, base: &str) -> (Option<String>, Option<Error>) {
    let model = api.model(base);
    let request = api.request();
    if whole {
        return match model.complete(&request).await {
            Ok(r) => (Some(r.text()), None),
            Err(e) => (None, Some(e)),
        };
    }
    let mut stream = model.stream(&request);
    let mut built = ResponseBuilder::new();
    let mut finished = false;
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => {
                finished |= matches!(event, Event::Finish { .. });
                built.push(event);
            }
            Err(e) => return (None, Some(e)),
        }
    }
    // A stream that ends with neither a finish nor an error is a silent truncation: the
    // builder's text is then not an answer, and the judge says so.
    let text = built.finish().ok().map(|r| r.text());
    match (finished, text) {
        (true, text) => (text, None),
        (false, text) => (
            None,
            Some(Error::Other(
                format!("the stream ended with no finish and no error, after {text:?}").into(),
            )),
        ),
    }
}

async fn run(case: Case) -> Result<Seen, String> {
    let (api, whole) = (case.api, case.whole);
    let server = ReplayServer::answering(move |_| api.reply(whole)).await;
    let proxy = case.proxy(&server.url()).await;
    let started = Instant::now();
    let (text, error) =
        tokio::time::timeout(LIMIT, call(api, whole, &format!("{}/v1", proxy.url())))
            .await
            .map_err(|_| format!("{case}: still going after {LIMIT:?}"))?;
    Ok(Seen {
        text,
        error,
        connections: proxy.connections(),
        took: started.elapsed(),
    })
}

fn judge(case: &Case, seen: Seen, expected: &str, tally: &mut Tally) {
    let wrong = |why: String| format!("{case}: {why}");
    match (seen.text, seen.error) {
        (Some(text), None) => {
            if text != expected {
                tally.wrong.push(wrong(format!(
                    "shown as complete but the text differs: {text:?}"
                )));
            } else if case.must_fail() {
                tally
                    .wrong
                    .push(wrong("answered although every try was cut".into()));
            } else {
                tally.whole += 1;
                tally.after_retry += usize::from(seen.connections > 1);
            }
        }
        (_, Some(error)) => {
            let kind = match &error {
                Error::Transport(t) => format!("transport: {:?}", t.kind),
                Error::Decode(_) => "decode".to_owned(),
                other => {
                    tally
                        .wrong
                        .push(wrong(format!("an untyped error: {other:?}")));
                    return;
                }
            };
            let deadline = match case.fault {
                Fault::StallAfter(0) => Some(TransportErrorKind::RequestTimeout),
                Fault::StallAfter(_) if !case.whole => Some(TransportErrorKind::IdleTimeout),
                _ => None,
            };
            if case.must_succeed() {
                tally.wrong.push(wrong(format!("failed: {error}")));
            } else if seen.took > DEADLINE {
                tally
                    .wrong
                    .push(wrong(format!("took {:?} to fail: {error}", seen.took)));
            } else if let (Some(want), Error::Transport(t)) = (deadline, &error)
                && !case.once
                && t.kind != want
            {
                tally
                    .wrong
                    .push(wrong(format!("ended by {:?}, not {want:?}", t.kind)));
            } else {
                *tally.typed.entry(kind).or_default() += 1;
            }
        }
        (None, None) => tally
            .wrong
            .push(wrong("neither an answer nor an error".into())),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_api_streamed_and_whole_through_every_fault() {
    // The answers as they come with no proxy in the way.
    let mut expected = HashMap::new();
    for api in Api::ALL {
        for whole in [false, true] {
            let server = ReplayServer::answering(move |_| api.reply(whole)).await;
            let (text, error) = call(api, whole, &format!("{}/v1", server.url())).await;
            let text = text.unwrap_or_else(|| panic!("{api:?} {whole}: {error:?}"));
            assert!(!text.is_empty(), "{api:?} {whole}");
            expected.insert((api, whole), text);
        }
    }

    let mut tally = Tally::default();
    for (case, seen) in crate::run_all(run).await {
        match seen {
            Ok(seen) => judge(&case, seen, &expected[&(case.api, case.whole)], &mut tally),
            Err(hung) => tally.wrong.push(hung),
        }
    }
    tally.report("kite as a client");
}
