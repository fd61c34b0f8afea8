//! Budgets bind: a key with a budget is refused a model kite cannot price, and requests at
//! once on one replica each hold their worst case against it, so together they pass it by
//! at most one request.

use kite_core::{Event, EventStream, FinishReason, Model, Request, Usage};
use kite_serve::{Admin, Gateway, NewKey, Route};
use kite_store::fleet::{Budget, Period};
use kite_store::{Fleet, SqliteStore};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// Answers after a moment, reporting 1,000 tokens in and 1,000 out.
struct Thousand;

impl Model for Thousand {
    fn stream(&self, _: &Request) -> EventStream {
        Box::pin(
            futures_util::stream::once(async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                Ok(Event::text(0, "ok"))
            })
            .chain_usage(),
        )
    }
}

trait ChainUsage {
    fn chain_usage(
        self,
    ) -> futures_util::stream::BoxStream<'static, Result<Event, kite_core::Error>>;
}

impl<S> ChainUsage for S
where
    S: futures_util::Stream<Item = Result<Event, kite_core::Error>> + Send + 'static,
{
    fn chain_usage(
        self,
    ) -> futures_util::stream::BoxStream<'static, Result<Event, kite_core::Error>> {
        use futures_util::StreamExt;
        let usage = Usage {
            input_tokens: 1_000,
            output_tokens: 1_000,
            total_tokens: 2_000,
            ..Usage::default()
        };
        self.chain(futures_util::stream::iter([
            Ok(Event::Usage { usage }),
            Ok(Event::Finish {
                reason: FinishReason::Stop,
            }),
        ]))
        .boxed()
    }
}

/// A gateway with a store, the routes `priced` ($5 a million tokens either way: a cent a
/// request) and `unknown` (no price), and a key with a budget of `usd` in all.
async fn gateway(
    usd: f64,
) -> (
    String,
    String,
    Arc<dyn Fleet>,
    Arc<Gateway>,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Fleet> = Arc::new(SqliteStore::open(dir.path().join("s.db")).await.unwrap());
    let (_, key) = Admin::new(store.clone())
        .create_key(NewKey {
            name: "spender".into(),
            budget: Some(Budget {
                usd,
                period: Period::Total,
            }),
            ..NewKey::default()
        })
        .await
        .unwrap();
    let pricer: kite_serve::Pricer = Arc::new(|_, model: &str, u: &Usage| {
        (model == "priced").then(|| (u.input_tokens + u.output_tokens) as f64 * 5.0 / 1e6)
    });
    let gateway = Arc::new(
        Gateway::new(
            vec![
                Route::new("priced", Arc::new(Thousand), "priced"),
                Route::new("unknown", Arc::new(Thousand), "unknown"),
            ],
            false,
        )
        .pricer(pricer)
        .fleet(store.clone(), None),
    );
    gateway.refresh().await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(kite_serve::serve(
        listener,
        gateway.clone(),
        std::future::pending(),
    ));
    (
        format!("http://{addr}/v1/chat/completions"),
        key,
        store,
        gateway,
        dir,
    )
}

fn ask(model: &str) -> Value {
    json!({"model": model, "max_tokens": 1000, "messages": [{"role": "user", "content": "Hi"}]})
}

#[tokio::test]
async fn a_key_with_a_budget_is_refused_a_model_kite_cannot_price() {
    let (url, key, _store, _gw, _dir) = gateway(1.0).await;
    let client = reqwest::Client::new();
    let refused = client
        .post(&url)
        .bearer_auth(&key)
        .json(&ask("unknown"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    let said: Value = refused.json().await.unwrap();
    let message = said["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("no price") && message.contains("[prices."),
        "{said}"
    );
    let priced = client
        .post(&url)
        .bearer_auth(&key)
        .json(&ask("priced"))
        .send()
        .await
        .unwrap();
    assert_eq!(priced.status(), 200);
}

#[tokio::test]
async fn requests_at_once_pass_a_budget_by_at_most_one() {
    // Five cents: five requests of a cent each.
    let (url, key, store, gateway, _dir) = gateway(0.05).await;
    let client = reqwest::Client::new();
    let all = (0..50).map(|_| {
        let (client, url, key) = (client.clone(), url.clone(), key.clone());
        async move {
            client
                .post(&url)
                .bearer_auth(&key)
                .json(&ask("priced"))
                .send()
                .await
                .unwrap()
                .status()
        }
    });
    let statuses = futures_util::future::join_all(all).await;
    let answered = statuses.iter().filter(|s| s.as_u16() == 200).count();
    let refused = statuses.iter().filter(|s| s.as_u16() == 429).count();
    assert_eq!(answered + refused, 50, "{statuses:?}");
    assert!(
        (5..=6).contains(&answered),
        "{answered} answered: {statuses:?}"
    );
    // What the ledger counts is within a request of the budget.
    gateway.finish(Duration::from_secs(5)).await;
    let spent: f64 = store
        .spend(vec!["total".into()])
        .await
        .unwrap()
        .iter()
        .filter(|s| s.subject.starts_with("key:"))
        .map(|s| s.cost)
        .sum();
    assert!(spent <= 0.05 + 0.01 + 1e-9, "spent {spent}");
}
