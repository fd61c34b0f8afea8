//! Providers of the user's own: `[providers.NAME]` under a name kite does not know, an
//! OpenAI-compatible server with its base URL, key variable, headers and query parameters,
//! named by `--provider`, `[defaults] provider`, `kite models` and a gateway's route.

mod common;

use common::serve::{kite_serve, start};
use common::{kite, run};
use kite::{FinishReason, Message, Response};
use kite_testkit::render::{Shape, sse};
use kite_testkit::{ReplayServer, Reply};
use serde_json::Value;

const LAB_KEY: &str = "lab-key-0123456789abcdef";
const LAB_TOKEN: &str = "lab-token-fedcba9876543210";

fn answer(text: &str) -> Reply {
    let r = Response {
        message: Message::assistant(text),
        ..Response::empty(FinishReason::Stop)
    };
    Reply::sse(sse(Shape::Chat, &r, 1))
}

/// A kite.toml in a folder of its own naming provider `lab` at `server`, with `more`.
fn config(server: &ReplayServer, more: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kite.toml");
    std::fs::write(
        &path,
        format!(
            "{more}\n[providers.Lab]\nbase_url = \"{}/v1\"\nkey_env = \"LAB_KEY\"\n\
             model = \"lab-model\"\n\
             headers = {{ \"X-Team\" = \"search\", \"X-Lab-Token\" = \"${{LAB_TOKEN}}\" }}\n\
             query = {{ \"api-version\" = \"2026-01-01\" }}\n",
            server.url()
        ),
    )
    .unwrap();
    (dir, path)
}

fn with_lab(c: &mut tokio::process::Command, path: &std::path::Path) {
    c.env("LAB_KEY", LAB_KEY)
        .env("LAB_TOKEN", LAB_TOKEN)
        .arg("--config")
        .arg(path);
}

#[tokio::test]
async fn a_provider_of_ones_own_gets_its_key_headers_and_query() {
    let server = ReplayServer::start(vec![answer("From the lab."), answer("Again.")]).await;
    let (_dir, path) = config(&server, "");
    let mut c = kite();
    with_lab(&mut c, &path);
    let r = run(c.args(["-v", "ask", "--no-store", "--provider", "LAB", "Hello?"])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("From the lab."), "{}", r.stdout);
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions?api-version=2026-01-01");
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {LAB_KEY}").as_str())
    );
    assert_eq!(sent.header("x-team"), Some("search"));
    assert_eq!(sent.header("x-lab-token"), Some(LAB_TOKEN));
    let body: Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(body["model"], "lab-model");
    // Its key and its headers' values are secrets: never shown.
    for secret in [LAB_KEY, LAB_TOKEN] {
        assert!(
            !r.stderr.contains(secret) && !r.stdout.contains(secret),
            "{}",
            r.stderr
        );
    }

    // `[defaults] provider` names it as well.
    let (_dir, path) = config(&server, "[defaults]\nprovider = \"lab\"\n");
    let mut c = kite();
    with_lab(&mut c, &path);
    let r = run(c.args(["ask", "--no-store", "Hello?"])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Again."), "{}", r.stdout);
}

#[tokio::test]
async fn providers_that_cannot_work_are_refused_with_the_reason() {
    let server = ReplayServer::start(vec![]).await;
    let (_dir, path) = config(&server, "");
    let ask = |path: &std::path::Path, extra: &[&str]| {
        let mut c = kite();
        with_lab(&mut c, path);
        c.args(["ask", "--no-store"]).args(extra).arg("Hello?");
        c
    };
    // A name kite.toml does not hold.
    let r = run(&mut ask(&path, &["--provider", "nosuch"])).await;
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("[providers.nosuch]"), "{}", r.stderr);
    // The key variable unset.
    let mut c = ask(&path, &["--provider", "lab"]);
    c.env_remove("LAB_KEY");
    let r = run(&mut c).await;
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("key_env names LAB_KEY, which is not set"),
        "{}",
        r.stderr
    );
    // One of one's own with no address; one of kite's given what only one's own take.
    for (toml, says) in [
        (
            "[providers.mine]\nmodel = \"m\"\n",
            "one of your own needs base_url",
        ),
        (
            "[providers.openai]\nkey_env = \"LAB_KEY\"\n",
            "key_env, headers and query are for a provider of your own",
        ),
        (
            "[providers.\"a b\"]\nbase_url = \"http://x\"\n",
            "not a provider",
        ),
    ] {
        std::fs::write(&path, toml).unwrap();
        let r = run(&mut ask(&path, &[])).await;
        assert_eq!(r.code, 1, "{toml}");
        assert!(r.stderr.contains(says), "{toml}: {}", r.stderr);
    }
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn models_and_a_gateway_route_reach_ones_own_provider() {
    let listing = r#"{"object":"list","data":[{"id":"lab-model","object":"model"}]}"#;
    let server = ReplayServer::start(vec![Reply::json(200, listing), answer("Routed.")]).await;
    let (_dir, path) = config(
        &server,
        "[[serve.routes]]\nname = \"fast\"\nprovider = \"lab\"\n",
    );
    let mut c = kite();
    with_lab(&mut c, &path);
    let r = run(c.args(["models", "--provider", "lab"])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("lab lists 1 models") && r.stdout.contains("lab-model"),
        "{}",
        r.stdout
    );
    assert_eq!(
        server.requests()[0].path,
        "/v1/models?api-version=2026-01-01"
    );

    let served = start(
        kite_serve()
            .env("KITE_LOG", "off")
            .env("LAB_KEY", LAB_KEY)
            .env("LAB_TOKEN", LAB_TOKEN)
            .arg("--config")
            .arg(&path),
    );
    let asked: Value = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", served.site()))
        .bearer_auth(served.key())
        .json(
            &serde_json::json!({"model": "fast", "messages": [{"role": "user", "content": "Hi"}]}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        asked["choices"][0]["message"]["content"], "Routed.",
        "{asked}"
    );
    let sent = &server.requests()[1];
    assert_eq!(sent.header("x-lab-token"), Some(LAB_TOKEN));
    let body: Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(body["model"], "lab-model");
}
