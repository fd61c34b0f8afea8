//! OpenAI's hosted web search through a gateway in front of OpenAI Responses: the search the
//! upstream made reaches the client as its own item, and, sent back in the history, goes
//! back upstream whole and in its place (OpenAI refuses a reasoning item without the item
//! that followed it).

use kite_core::Event;
use kite_wire::openai_responses::serve::{ClientTools, EventEncoder, decode_request};
use kite_wire::openai_responses::{Options, encode_request};
use serde_json::{Value, json};

fn search() -> Value {
    json!({"type": "web_search_call", "id": "ws_1", "status": "completed",
        "action": {"type": "search", "query": "kite rust"}})
}

#[test]
fn a_hosted_search_reaches_the_client_and_goes_back_in_its_place() {
    let mut enc = EventEncoder::new("resp_1", "m", 7, ClientTools::default());
    let mut sent = Vec::new();
    for e in [
        Event::Unknown {
            kind: "responses.output_item".into(),
            data: search(),
        },
        Event::text(1, "Found it."),
    ] {
        sent.extend(enc.event(&e));
    }
    sent.extend(enc.finish());
    let done: Vec<&Value> = sent
        .iter()
        .filter(|e| e["type"] == "response.output_item.done")
        .map(|e| &e["item"])
        .collect();
    assert_eq!(done[0], &search());
    assert_eq!(done[1]["type"], "message");
    let completed = sent.last().unwrap();
    assert_eq!(completed["response"]["output"][0], search());

    // The client sends its history back, reasoning and search and all.
    let reasoning = json!({"type": "reasoning", "id": "rs_1", "summary": [],
        "encrypted_content": "gAAAA"});
    let body = json!({"model": "m", "tools": [{"type": "web_search"}], "input": [
        {"role": "user", "content": "Search for kite."},
        reasoning, search(),
        {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "Found it.", "annotations": []}]},
        {"role": "user", "content": "And?"}]});
    let client = decode_request(body.to_string().as_bytes()).unwrap();
    let upstream: Value = serde_json::from_slice(
        &encode_request(&client.request, &Options::default(), false).unwrap(),
    )
    .unwrap();
    let input = upstream["input"].as_array().unwrap();
    assert_eq!(input[1], reasoning);
    assert_eq!(input[2], search());
}
