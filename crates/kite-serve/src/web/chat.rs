//! `POST /api/chat`: a question from the page, run through the route's tool loop, its
//! events streamed to the page as they happen, and its turn kept in the caller's store.

use super::{bad, store_error};
use crate::Gateway;
use crate::agentic;
use crate::errors::{Api, Kind, told, unknown_model, upstream_error};
use crate::keys::Caller;
use axum::body::Bytes;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::Response;
use futures_util::StreamExt;
use kite_agent::AgentEvent;
use kite_core::{Event, Message, Request};
use kite_store::{StoreError, Turn};
use serde_json::{Value, json};
use std::sync::Arc;
use tracing::Instrument;

/// A question from the page.
#[derive(serde::Deserialize)]
struct Ask {
    conversation: Option<String>,
    model: String,
    text: String,
}

fn sse(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

pub(super) async fn chat(
    State(gw): State<Arc<Gateway>>,
    Extension(caller): Extension<Caller>,
    slot: Option<Extension<Arc<crate::limits::Slot>>>,
    body: Bytes,
) -> Response {
    let ask: Ask = match serde_json::from_slice(&body) {
        Ok(a) => a,
        Err(e) => {
            return bad(
                StatusCode::BAD_REQUEST,
                &format!("bad question: {e}"),
                Kind::Invalid,
            );
        }
    };
    if ask.model.trim().is_empty() {
        return bad(StatusCode::BAD_REQUEST, "choose a model", Kind::Invalid);
    }
    if ask.text.trim().is_empty() {
        return bad(
            StatusCode::BAD_REQUEST,
            "the question is empty",
            Kind::Invalid,
        );
    }
    let Some((route, upstream)) = gw.route(&ask.model) else {
        return unknown_model(Api::Chat, &ask.model);
    };
    if let Caller::Key(k) = &caller
        && !k.may_use(&ask.model)
    {
        return crate::errors::not_allowed(Api::Chat, &ask.model);
    }
    // The agent first: a conversation is made only for a question that can be asked.
    let (agent, kit) = match agentic::agent(&gw, route, Request::new(upstream.clone())) {
        Ok(made) => made,
        Err(e) => return upstream_error(Api::Chat, &e, &gw.secrets.all()),
    };
    let store = gw.store_for(&caller);
    let (conversation, mut history) = match open(
        store.as_deref(),
        ask.conversation.as_deref(),
        &title(&ask.text, &gw.secrets.all()),
    )
    .await
    {
        Ok(opened) => opened,
        Err(refused) => return *refused,
    };
    history.push(Message::user(ask.text.clone()));
    let provider = route.model.origin().provider;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(64);
    if let Some(c) = &conversation {
        let _ = tx.try_send(sse("conversation", json!({"id": c.id, "title": c.title})));
    }
    let events = agent.run_stream((), history);
    let kept = Kept {
        store,
        conversation,
        question: ask.text,
        provider,
        model: upstream,
        secrets: gw.secrets.clone(),
    };
    let (runs, stop) = (gw.runs.clone(), gw.stop.clone());
    let (route_name, came, started) = (
        route.name.clone(),
        crate::admin::now_ms(),
        std::time::Instant::now(),
    );
    let talk = async move {
        // The request's kit lives as long as its run, and its slot (its place among those
        // at once).
        let _kit = kit;
        let slot = slot.map(|Extension(s)| s);
        let Some(ended) = relay(events, &tx, &stop, &gw.secrets.all()).await else {
            return;
        };
        let run = &ended.run;
        let usage = run.usage();
        gw.charge(&caller, &usage);
        if let Some(slot) = &slot {
            slot.used(usage.input_tokens.saturating_add(usage.output_tokens));
        }
        if let Some(ledger) = &gw.ledger {
            let tally = crate::answer::Tally {
                usage,
                cost: usage.cost.unwrap_or(0.0),
                unpriced: usage.cost.is_none(),
            };
            let answered = crate::handlers::Answered {
                route: route_name,
                key: gw.keys.label(&caller),
                caller: caller.clone(),
                provider: kept.provider.clone(),
                model: kept.model.clone(),
                tally: Arc::new(std::sync::Mutex::new(tally)),
                cached: false,
            };
            let id = gw.next_id("web_");
            ledger.record(crate::ledger::row(
                &answered,
                id,
                came,
                200,
                None,
                started.elapsed(),
            ));
        }
        // The turn is kept before the page hears it is done, so a reload finds it.
        if let Err(e) = kept.keep(&ended).await {
            let message = format!("the answer was not kept: {e}");
            let _ = tx.send(sse("error", json!({"message": message}))).await;
        }
        let stop = run.stop_reason().map_or("failed", |s| s.name());
        let usage = json!({"input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens, "cost": usage.cost});
        let _ = tx
            .send(sse("done", json!({"stop": stop, "usage": usage})))
            .await;
    };
    // The model calls' spans stay children of this request's.
    runs.spawn(talk.instrument(tracing::Span::current()));
    let body = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
        .map(Ok::<_, std::convert::Infallible>);
    crate::handlers::event_stream(body)
}

/// Tells the page what the run does, as it happens, until it ends: the run, and the text
/// of the answer under way when it ended (shown, but in no message of the run when it was
/// stopped). When the page goes away (its stop button), or the server winds down, the run
/// is cancelled and ends.
async fn relay(
    mut events: kite_agent::AgentStream<()>,
    tx: &tokio::sync::mpsc::Sender<String>,
    stop: &tokio_util::sync::CancellationToken,
    secrets: &[String],
) -> Option<Ended> {
    let mut shown = String::new();
    let mut calls = 0;
    let mut stopping = false;
    // No upstream key reaches the page, even split between two deltas.
    let mut hide = kite_core::redact::StreamRedactor::new(secrets);
    let whole = |text: &str| kite_core::redact::redact_all(text, secrets);
    loop {
        let item = tokio::select! {
            item = events.next() => item,
            _ = tx.closed() => { events.cancel(); events.next().await }
            // The server cannot wait any longer: as if the page had stopped it.
            _ = stop.cancelled(), if !stopping => {
                // Said once, never waited on (a page that stopped reading cannot hold the
                // end up); the page keeps what it was shown.
                stopping = true;
                events.cancel();
                let _ = tx.try_send(sse("error", json!({"message":
                    "the server stopped before this answer was complete"})));
                events.next().await
            }
        };
        if !matches!(&item, Some(Ok(AgentEvent::Model(Event::TextDelta { .. })))) {
            let rest = hide.finish();
            if !rest.is_empty() {
                shown.push_str(&rest);
                let _ = tx.send(sse("text", json!({"text": rest}))).await;
            }
        }
        let said = match item {
            Some(Ok(AgentEvent::Model(Event::TextDelta { text, .. }))) => {
                let text = hide.push(&text);
                if text.is_empty() {
                    continue;
                }
                shown.push_str(&text);
                sse("text", json!({"text": text}))
            }
            Some(Ok(AgentEvent::Model(Event::Start { .. }))) => {
                shown.clear();
                calls += 1;
                continue;
            }
            Some(Ok(AgentEvent::ToolStarted { call })) => sse(
                "tool_call",
                json!({"id": call.id, "name": call.name, "arguments": whole(&call.arguments)}),
            ),
            Some(Ok(AgentEvent::ToolFinished { record })) => sse(
                "tool_result",
                json!({"id": record.call.id, "name": record.call.name,
                       "output": whole(&record.result.text_content()), "error": record.result.is_error}),
            ),
            Some(Ok(AgentEvent::Done(run))) => {
                return Some(Ended {
                    run: *run,
                    shown,
                    calls,
                });
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => {
                let _ = tx
                    .send(sse(
                        "error",
                        json!({"message": told(&agentic::model_error(e), secrets)}),
                    ))
                    .await;
                // What was shown of the answer that failed stays, as when it is stopped.
                return events.failed_run().map(|run| Ended { run, shown, calls });
            }
            None => return None,
        };
        if tx.send(said).await.is_err() {
            events.cancel();
        }
    }
}

/// How a run ended: the run, the text shown of its last call, and how many calls began.
struct Ended {
    run: kite_agent::Run,
    shown: String,
    calls: usize,
}

/// Where a question's turn is kept, and what it says of itself.
struct Kept {
    store: Option<Arc<dyn kite_store::Store>>,
    conversation: Option<kite_store::Conversation>,
    question: String,
    provider: String,
    model: String,
    /// What the turn is kept without, whoever said it.
    secrets: kite_core::redact::Secrets,
}

/// A new conversation's title: its question, with no secret in it.
fn title(question: &str, secrets: &[String]) -> String {
    kite_core::redact::redact_all(question, secrets)
}

impl Kept {
    /// Appends the turn the run made (with the text shown of an answer cut off before the
    /// run took it in), trying once more on the conversation's newer version when another
    /// tab got there first.
    async fn keep(self, ended: &Ended) -> Result<(), StoreError> {
        let run = &ended.run;
        let (Some(store), Some(c)) = (self.store, self.conversation) else {
            return Ok(());
        };
        let mut messages = vec![Message::user(self.question)];
        messages.extend(run.new_messages().iter().cloned());
        // Each call the run took in is one assistant message; a call that began and is not
        // among them was cut off (stopped, or failed), and the page showed its text.
        let answers = run
            .new_messages()
            .iter()
            .filter(|m| m.role == kite_core::Role::Assistant)
            .count();
        let cut_short = ended.calls > answers && !ended.shown.is_empty();
        if cut_short {
            messages.push(Message::assistant(ended.shown.clone()));
        }
        for m in &mut messages {
            self.secrets.redact_message(m);
        }
        let mut usage = run.usage();
        // The local model costs nothing, even for a call cut off before it counted.
        if usage.cost.is_none() && self.provider == kite_core::trace::LOCAL_PROVIDER {
            usage.cost = Some(0.0);
        }
        let turn = Turn {
            usage,
            provider: Some(self.provider),
            model: Some(self.model),
            cut_short,
            ..Turn::new(messages)
        }
        .settled();
        match store.append(&c.id, c.version, turn.clone()).await {
            Err(StoreError::Conflict { .. }) => {
                let now = store.get(&c.id).await?;
                store.append(&c.id, now.version, turn).await.map(drop)
            }
            other => other.map(drop),
        }
    }
}

/// The conversation a question goes on (a new one, titled by it, when `id` is none) and
/// its history; with no store, no conversation and no history.
async fn open(
    store: Option<&dyn kite_store::Store>,
    id: Option<&str>,
    text: &str,
) -> Result<(Option<kite_store::Conversation>, Vec<Message>), Box<Response>> {
    let Some(store) = store else {
        return Ok((None, Vec::new()));
    };
    let fail = |e| Box::new(store_error(e));
    match id {
        Some(id) => {
            let c = store.get(id).await.map_err(fail)?;
            let turns = store.turns(id).await.map_err(fail)?;
            Ok((Some(c), kite_store::history(&turns)))
        }
        None => Ok((Some(store.create(text).await.map_err(fail)?), Vec::new())),
    }
}
