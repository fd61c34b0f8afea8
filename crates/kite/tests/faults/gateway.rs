//! `kite serve`'s upstream side: a client asks the gateway in each API's own shape, and the
//! gateway's model reaches the recorded answer through the proxy. A fault upstream must
//! reach the client as an error in its API's shape (an error status, or a stream ended
//! cleanly after an error event), never as a silent truncation.

use crate::{Api, Case, DEADLINE, LIMIT, Tally};
use kite::serve::{Gateway, Route};
use kite_testkit::ReplayServer;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A gateway serving `model` as `m`, for as long as the test runs.
async fn gateway(api: Api, upstream: &str) -> String {
    let model = api.model(&format!("{upstream}/v1"));
    let route = Route::new("m", model, api.request().model);
    let gateway = Gateway::new(vec![route], false);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(kite::serve::serve(
        listener,
        Arc::new(gateway),
        std::future::pending(),
    ));
    format!("http://{addr}")
}

/// What the client got: the status and the whole body, or how reading it failed.
async fn ask(api: Api, whole: bool, gateway: &str) -> Result<(u16, String), String> {
    let (path, body) = match api {
        Api::Chat => (
            "/v1/chat/completions",
            json!({"model": "m", "messages": [{"role": "user", "content": "Say something."}]}),
        ),
        Api::Messages => (
            "/v1/messages",
            json!({"model": "m", "max_tokens": 256,
                   "messages": [{"role": "user", "content": "Say something."}]}),
        ),
        Api::Responses => (
            "/v1/responses",
            json!({"model": "m", "input": "Say something."}),
        ),
    };
    let mut body = body;
    body["stream"] = json!(!whole);
    let answer = reqwest::Client::new()
        .post(format!("{gateway}{path}"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| format!("the gateway did not answer: {e}"))?;
    let status = answer.status().as_u16();
    let text = answer
        .text()
        .await
        .map_err(|e| format!("the gateway's answer was cut, with no error in it: {e:?}"))?;
    Ok((status, text))
}

/// How an answer ended, in its API's terms.
enum Ending {
    /// Complete, with this text.
    Whole(String),
    /// An error the client can read: a status, or an error event.
    Error(String),
    /// Neither: cut short.
    Cut(String),
}

fn error_in(api: Api, v: &Value) -> Option<String> {
    let message = match api {
        Api::Messages if v["type"] == "error" => v["error"]["message"].as_str(),
        Api::Responses if v["type"] == "response.failed" => {
            v["response"]["error"]["message"].as_str()
        }
        Api::Responses if v["type"] == "error" => v["message"].as_str(),
        Api::Responses if v["status"] == "failed" => v["error"]["message"].as_str(),
        Api::Chat | Api::Responses => v["error"]["message"].as_str(),
        _ => None,
    };
    message.map(str::to_owned)
}

fn ending(api: Api, whole: bool, status: u16, body: &str) -> Ending {
    if status != 200 {
        return match serde_json::from_str::<Value>(body)
            .ok()
            .and_then(|v| error_in(api, &v))
        {
            Some(m) => Ending::Error(format!("status {status}: {m}")),
            None => Ending::Cut(format!(
                "status {status} with a body not in the API's shape: {body}"
            )),
        };
    }
    if whole {
        let Ok(v) = serde_json::from_str::<Value>(body) else {
            return Ending::Cut(format!("a body that is not JSON: {body}"));
        };
        if let Some(m) = error_in(api, &v) {
            return Ending::Error(format!("a failed answer: {m}"));
        }
        let text = match api {
            Api::Chat => v["choices"][0]["message"]["content"]
                .as_str()
                .map(str::to_owned),
            Api::Messages => Some(texts(&v["content"], "text")),
            Api::Responses => Some(
                v["output"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|item| texts(&item["content"], "output_text"))
                    .collect(),
            ),
        };
        return text.map_or_else(|| Ending::Cut(format!("no text in {body}")), Ending::Whole);
    }
    let mut text = String::new();
    let mut ended = false;
    for line in body.lines() {
        let Some(data) = line.strip_prefix("data:").map(str::trim) else {
            continue;
        };
        if data == "[DONE]" {
            ended |= api == Api::Chat;
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(data) else {
            return Ending::Cut(format!("an event that is not JSON: {data}"));
        };
        if let Some(m) = error_in(api, &v) {
            return Ending::Error(format!("an error event: {m}"));
        }
        match api {
            Api::Chat => text.push_str(v["choices"][0]["delta"]["content"].as_str().unwrap_or("")),
            Api::Messages => {
                text.push_str(v["delta"]["text"].as_str().unwrap_or(""));
                ended |= v["type"] == "message_stop";
            }
            Api::Responses => {
                if v["type"] == "response.output_text.delta" {
                    text.push_str(v["delta"].as_str().unwrap_or(""));
                }
                ended |= v["type"] == "response.completed";
            }
        }
    }
    if ended {
        Ending::Whole(text)
    } else {
        Ending::Cut(format!(
            "a stream that stopped with no end and no error after {text:?}"
        ))
    }
}

fn texts(content: &Value, kind: &str) -> String {
    content
        .as_array()
        .into_iter()
        .flatten()
        .filter(|part| part["type"] == kind)
        .filter_map(|part| part["text"].as_str())
        .collect()
}

async fn run(case: Case) -> Result<(Ending, Duration, usize), String> {
    let (api, whole) = (case.api, case.whole);
    let server = ReplayServer::answering(move |_| api.reply(whole)).await;
    let proxy = case.proxy(&server.url()).await;
    let gateway = gateway(api, &proxy.url()).await;
    let started = Instant::now();
    let (status, body) = tokio::time::timeout(LIMIT, ask(api, whole, &gateway))
        .await
        .map_err(|_| format!("{case}: still going after {LIMIT:?}"))?
        .map_err(|cut| format!("{case}: {cut}"))?;
    let took = started.elapsed();
    Ok((ending(api, whole, status, &body), took, proxy.connections()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_upstream_reaches_the_client_in_its_apis_shape() {
    let mut expected = HashMap::new();
    for api in Api::ALL {
        for whole in [false, true] {
            let server = ReplayServer::answering(move |_| api.reply(whole)).await;
            let gateway = gateway(api, &server.url()).await;
            let (status, body) = ask(api, whole, &gateway).await.unwrap();
            let Ending::Whole(text) = ending(api, whole, status, &body) else {
                panic!("{api:?} whole={whole}: {status} {body}");
            };
            assert!(!text.is_empty(), "{api:?} whole={whole}: {body}");
            expected.insert((api, whole), text);
        }
    }

    let mut tally = Tally::default();
    for (case, ended) in crate::run_all(run).await {
        let wrong = |why: String| format!("{case}: {why}");
        match ended {
            Err(why) => tally.wrong.push(why),
            Ok((Ending::Cut(why), ..)) => tally.wrong.push(wrong(why)),
            Ok((Ending::Whole(text), _, connections)) => {
                if text != expected[&(case.api, case.whole)] {
                    tally
                        .wrong
                        .push(wrong(format!("complete with another text: {text:?}")));
                } else if case.must_fail() {
                    tally
                        .wrong
                        .push(wrong("answered although every try was cut".into()));
                } else {
                    tally.whole += 1;
                    tally.after_retry += usize::from(connections > 1);
                }
            }
            Ok((Ending::Error(what), took, _)) => {
                if case.must_succeed() {
                    tally.wrong.push(wrong(format!("failed: {what}")));
                } else if took > DEADLINE {
                    tally
                        .wrong
                        .push(wrong(format!("took {took:?} to fail: {what}")));
                } else {
                    let kind = what.split(':').next().unwrap_or_default().to_owned();
                    *tally.typed.entry(kind).or_default() += 1;
                }
            }
        }
    }
    tally.report("kite serve's upstream side");
}
