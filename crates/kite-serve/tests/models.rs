//! The model list in the shape of the client's API: OpenAI's, or Anthropic's with its
//! paging, and a bad page asked for in the client's error shape.

use kite_core::{Event, EventStream, Model, Request};
use serde_json::{Value, json};
use std::sync::Arc;

struct Silent;

impl Model for Silent {
    fn stream(&self, _: &Request) -> EventStream {
        Box::pin(futures_util::stream::iter(Vec::<Result<Event, _>>::new()))
    }
}

async fn serve() -> std::net::SocketAddr {
    let routes = ["a", "b", "c"]
        .into_iter()
        .map(|n| kite_serve::Route::new(n, Arc::new(Silent), n))
        .collect();
    let gateway = kite_serve::Gateway::new(routes, false).key("sk-models-test-0123456789");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(kite_serve::serve(
        listener,
        Arc::new(gateway),
        std::future::pending(),
    ));
    addr
}

async fn list(addr: std::net::SocketAddr, query: &str, anthropic: bool) -> (u16, Value) {
    let mut r = reqwest::Client::new().get(format!("http://{addr}/v1/models{query}"));
    r = match anthropic {
        true => r
            .header("x-api-key", "sk-models-test-0123456789")
            .header("anthropic-version", "2023-06-01"),
        false => r.bearer_auth("sk-models-test-0123456789"),
    };
    let r = r.send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

fn ids(v: &Value) -> Vec<&str> {
    v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn each_client_gets_the_list_in_its_apis_shape_and_paged() {
    let addr = serve().await;
    let (_, openai) = list(addr, "", false).await;
    assert_eq!(openai["object"], "list");
    assert_eq!(ids(&openai), ["a", "b", "c"]);
    assert_eq!(openai["data"][0]["owned_by"], "kite");

    let (_, page) = list(addr, "?limit=2", true).await;
    assert_eq!(ids(&page), ["a", "b"]);
    assert_eq!(
        (&page["has_more"], &page["first_id"], &page["last_id"]),
        (&json!(true), &json!("a"), &json!("b"))
    );
    assert_eq!(page["data"][0]["type"], "model");
    let (_, next) = list(addr, "?limit=2&after_id=b", true).await;
    assert_eq!((ids(&next), &next["has_more"]), (vec!["c"], &json!(false)));
    let (_, back) = list(addr, "?limit=1&before_id=c", true).await;
    assert_eq!((ids(&back), &back["has_more"]), (vec!["b"], &json!(true)));

    for (query, status) in [
        ("?limit=abc", 400),
        ("?limit=0", 400),
        ("?after_id=zzz", 404),
    ] {
        let (got, said) = list(addr, query, true).await;
        assert_eq!(got, status, "{query}: {said}");
        assert_eq!(said["type"], "error", "{query}: {said}");
    }
}
