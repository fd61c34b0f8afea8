//! The gateway's part of the sweep: `kite serve` with the sweep's kite.toml, asked on every
//! endpoint and every route, streamed and whole.

use crate::Sweep;
use crate::world::key;
use serde_json::json;

/// `kite serve` with the sweep's kite.toml, asked on every endpoint.
pub(crate) async fn gateway(sweep: &mut Sweep) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_kite"));
    let template = sweep.kite(&[]);
    for (var, value) in template.as_std().get_envs() {
        match value {
            Some(v) => cmd.env(var, v),
            None => cmd.env_remove(var),
        };
    }
    cmd.current_dir(&sweep.root)
        .args(["serve", "-v", "--addr", "127.0.0.1:0"])
        .stderr(std::process::Stdio::piped());
    let mut served = crate::common::serve::start(&mut cmd);
    // Its log, at trace, is read all along: a full pipe would stop the gateway.
    let mut stderr = std::mem::replace(
        &mut served.stderr,
        std::io::BufReader::new(std::process::ChildStderr::from(std::os::fd::OwnedFd::from(
            std::fs::File::open("/dev/null").unwrap(),
        ))),
    );
    let log = std::thread::spawn(move || {
        let mut log = String::new();
        use std::io::Read;
        let _ = stderr.read_to_string(&mut log);
        log
    });
    // `served.base` ends in `/v1`.
    let base = served.base.trim_end_matches("/v1").to_owned();
    let http = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .unwrap();
    let gateway_key = key("GATEWAY_KEY");
    let admin_key = key("ADMIN_KEY");
    let mut answers = Vec::new();
    for model in ["chat", "responses", "claude", "mistral", "router", "groq"] {
        for stream in [false, true] {
            let asks = [
                (
                    "/v1/chat/completions",
                    json!({"model": model, "stream": stream,
                    "messages": [{"role": "user", "content": "hello"}]}),
                ),
                (
                    "/v1/responses",
                    json!({"model": model, "stream": stream, "input": "hello"}),
                ),
                (
                    "/v1/messages",
                    json!({"model": model, "stream": stream, "max_tokens": 64,
                    "messages": [{"role": "user", "content": "hello"}]}),
                ),
            ];
            for (path, body) in asks {
                let r = http
                    .post(format!("{base}{path}"))
                    .bearer_auth(gateway_key)
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                let status = r.status();
                let text = r.text().await.unwrap_or_default();
                assert!(status.is_success(), "{path} {model}: {status} {text}");
                answers.push((format!("gateway {path} {model} stream={stream}"), text));
            }
        }
    }
    // A provider that repeats its key, in an answer the gateway stores and one it streams.
    for (path, body) in [
        (
            "/v1/responses",
            json!({"model": "chat", "input": "repeat-the-key"}),
        ),
        (
            "/v1/responses",
            json!({"model": "claude", "input": "repeat-the-key", "stream": true}),
        ),
        (
            "/v1/chat/completions",
            json!({"model": "groq", "stream": true,
            "messages": [{"role": "user", "content": "repeat-the-key"}]}),
        ),
    ] {
        let r = http
            .post(format!("{base}{path}"))
            .bearer_auth(gateway_key)
            .json(&body)
            .send()
            .await
            .unwrap();
        let text = r.text().await.unwrap_or_default();
        assert!(text.contains("The key you sent is"), "{path}: {text}");
        answers.push((format!("gateway {path} repeating its key"), text));
    }
    // The web chat: a question whose answer repeats the key, kept in the store, then the
    // conversations it lists and shows.
    let chat = json!({"conversation": null, "model": "claude", "text": "repeat-the-key"});
    let chat = said(
        http.post(format!("{base}/api/chat"))
            .bearer_auth(gateway_key)
            .json(&chat),
    )
    .await;
    assert!(chat.contains("The key you sent is"), "{chat}");
    answers.push(("the web chat's /api/chat".into(), chat));
    let listed = said(
        http.get(format!("{base}/api/conversations"))
            .bearer_auth(gateway_key),
    )
    .await;
    let id = serde_json::from_str::<serde_json::Value>(&listed)
        .ok()
        .and_then(|v| v["conversations"][0]["id"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no conversation listed: {listed}"));
    let shown = said(
        http.get(format!("{base}/api/conversations/{id}"))
            .bearer_auth(gateway_key),
    )
    .await;
    answers.push((
        "the web chat's conversations".into(),
        format!("{listed}\n{shown}"),
    ));
    // A wrong key, a key in the wrong header, and the other endpoints.
    for (method, path, key) in [
        ("GET", "/v1/models", gateway_key),
        ("GET", "/v1/models/chat", gateway_key),
        ("GET", "/v1/usage", gateway_key),
        ("POST", "/v1/messages/count_tokens", gateway_key),
        (
            "GET",
            "/v1/models",
            "sk-proj-not-a-key-of-this-gateway-0000",
        ),
        ("GET", "/metrics", admin_key),
        ("GET", "/v1/admin/keys", admin_key),
        ("GET", "/health", ""),
        ("GET", "/ready", ""),
        ("GET", "/", ""),
    ] {
        let mut req = http.request(method.parse().unwrap(), format!("{base}{path}"));
        if !key.is_empty() {
            req = req.bearer_auth(key);
        }
        if method == "POST" {
            req = req
                .json(&json!({"model": "claude", "messages": [{"role": "user", "content": "hi"}]}));
        }
        answers.push((format!("gateway {method} {path}"), said(req).await));
    }
    let site = served.site();
    answers.push(("the web chat".into(), said(http.get(&site)).await));
    served.terminate();
    let _ = served.child.wait();
    let log = log.join().unwrap();
    answers.push(("kite serve: stderr".into(), format!("{}{log}", served.said)));
    sweep.seen.extend(answers);
}

/// Sends `request` and returns its answer's body (empty when reading it fails).
async fn said(request: reqwest::RequestBuilder) -> String {
    request
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap_or_default()
}
