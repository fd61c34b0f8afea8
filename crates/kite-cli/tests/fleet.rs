//! `kite serve` as a fleet: three replicas behind haproxy (round robin), sharing a real
//! Postgres (keys, teams, the ledger) and a real Redis (limits), all started by the test.
//! Limits hold across replicas; keys made or revoked anywhere work or stop everywhere
//! within 2 s; a team's budget is spent across replicas; usage is the same on every
//! replica; Redis and Postgres may go away and come back, and the fleet recovers by itself.

mod common;

use common::KEY;
use common::serve::{GATEWAY_KEY, Served, kite_serve, start};
use kite::{FinishReason, Message, Response, Usage};
use kite_testkit::engines::{Haproxy, Postgres, Redis};
use kite_testkit::render::{Shape, sse};
use kite_testkit::{ReplayServer, Reply};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const ADMIN: &str = "admin-key-for-the-fleet-0123456789";

/// An answer of "Hello." that used `tokens` in and as many out, streamed slowly when
/// `slow`.
fn hello(tokens: u64, slow: bool) -> Reply {
    let mut r = Response::empty(FinishReason::Stop);
    r.message = Message::assistant("Hello.");
    r.usage = Usage {
        input_tokens: tokens,
        output_tokens: tokens,
        total_tokens: 2 * tokens,
        ..Usage::default()
    };
    let reply = Reply::sse(sse(Shape::Chat, &r, 1));
    match slow {
        true => reply.chunked(64, Duration::from_millis(50)),
        false => reply,
    }
}

struct Fleet {
    replicas: Vec<Served>,
    proxy: Haproxy,
    redis: Redis,
    postgres: Postgres,
    _upstream: ReplayServer,
    config: tempfile::NamedTempFile,
    http: reqwest::Client,
}

impl Fleet {
    /// Three replicas in front of an upstream answering with `tokens` each way (slowly
    /// with `slow`), with `policy` while Redis is away; `None` when the engines are not
    /// installed.
    async fn start(tokens: u64, slow: bool, policy: &str) -> Option<Fleet> {
        Self::start_with(tokens, slow, policy, "").await
    }

    /// The same, with `more` in `[serve]`'s kite.toml.
    async fn start_with(tokens: u64, slow: bool, policy: &str, more: &str) -> Option<Fleet> {
        let postgres = Postgres::start()?;
        let redis = Redis::start()?;
        let upstream = ReplayServer::answering(move |_| hello(tokens, slow)).await;
        let mut config = tempfile::NamedTempFile::new().unwrap();
        use std::io::Write;
        write!(
            config,
            "[serve]\nadmin_keys = [\"{ADMIN}\"]\nlimits_unavailable = \"{policy}\"\n{more}"
        )
        .unwrap();
        let replicas: Vec<Served> = (0..3)
            .map(|_| {
                start(
                    kite_serve()
                        .env("KITE_LOG", "off")
                        .env("KITE_CONFIG", config.path())
                        .env("KITE_STORE_URL", postgres.url())
                        .env("KITE_REDIS_URL", redis.url())
                        .env("OPENAI_API_KEY", KEY)
                        .env("KITE_SERVE_API_KEY", GATEWAY_KEY)
                        .args(["--provider", "openai", "--model", "gpt-5-nano"])
                        .arg("--base-url")
                        .arg(format!("{}/v1", upstream.url())),
                )
            })
            .collect();
        let ports: Vec<u16> = replicas.iter().map(|r| port(&r.base)).collect();
        let proxy = Haproxy::start(&ports)?;
        let fleet = Fleet {
            replicas,
            proxy,
            redis,
            postgres,
            _upstream: upstream,
            config,
            http: reqwest::Client::new(),
        };
        // haproxy has found every replica ready.
        tokio::time::sleep(Duration::from_millis(800)).await;
        Some(fleet)
    }

    /// What `GET url` with `key` answers, as JSON.
    async fn get_json(&self, url: impl reqwest::IntoUrl, key: &str) -> Value {
        let r = self.http.get(url).bearer_auth(key).send().await.unwrap();
        r.json().await.unwrap()
    }

    /// What `POST url` of `body` with `key` answers, as JSON.
    async fn post_json(&self, url: impl reqwest::IntoUrl, key: &str, body: &Value) -> Value {
        let r = self.http.post(url).bearer_auth(key).json(body);
        r.send().await.unwrap().json().await.unwrap()
    }

    /// `kite ARGS` on the fleet's store.
    fn kite(&self, args: &[&str]) -> common::Run {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_kite"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", std::env::temp_dir())
            .env("KITE_CONFIG", self.config.path())
            .env("KITE_STORE_URL", self.postgres.url())
            .args(args)
            .output()
            .unwrap();
        common::Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Makes a key with `kite keys create NAME ARGS`; returns it.
    fn create_key(&self, name: &str, args: &[&str]) -> String {
        let run = self.kite(&[&["keys", "create", name], args].concat());
        assert_eq!(run.code, 0, "{}", run.stderr);
        let key = run.stdout.trim().to_owned();
        assert!(key.starts_with("kite_sk_"), "{key}");
        key
    }

    /// The gateway behind haproxy.
    fn base(&self) -> String {
        format!("{}/v1", self.proxy.url())
    }

    /// A chat completion through `base` with `key`.
    async fn ask(&self, base: &str, key: &str) -> reqwest::Response {
        self.http
            .post(format!("{base}/chat/completions"))
            .bearer_auth(key)
            .json(&json!({"model": "gpt-5-nano", "messages": [{"role": "user", "content": "Hi"}]}))
            .send()
            .await
            .unwrap()
    }
}

fn port(base: &str) -> u16 {
    base.trim_end_matches("/v1")
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

async fn body(r: reqwest::Response) -> (u16, Option<String>, Value) {
    let status = r.status().as_u16();
    let retry = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, retry, r.json().await.unwrap_or_default())
}

/// Sends `n` requests at once through haproxy; their statuses and `Retry-After`s.
async fn at_once(fleet: &Fleet, key: &str, n: usize) -> Vec<(u16, Option<String>, Value)> {
    let base = fleet.base();
    let asks = (0..n).map(|_| async { body(fleet.ask(&base, key).await).await });
    futures_util::future::join_all(asks).await
}

fn count(answers: &[(u16, Option<String>, Value)], status: u16) -> usize {
    answers.iter().filter(|a| a.0 == status).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_hold_across_replicas() {
    let Some(fleet) = Fleet::start(1000, false, "deny").await else {
        return;
    };
    // Requests per minute: exactly 10 of 30 at once, whichever replicas they reach.
    let key = fleet.create_key("rpm", &["--rpm", "10"]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let answers = at_once(&fleet, &key, 30).await;
    assert_eq!(count(&answers, 200), 10, "{answers:?}");
    assert_eq!(count(&answers, 429), 20, "{answers:?}");
    for (status, retry, body) in &answers {
        if *status == 429 {
            let wait: u64 = retry.as_deref().unwrap().parse().unwrap();
            assert!((1..=60).contains(&wait), "{wait}");
            assert_eq!(body["error"]["type"], "rate_limit_error");
        }
    }
    // With admin keys, the metrics are theirs alone.
    let metrics = format!("{}/metrics", fleet.replicas[0].site());
    let client = fleet.http.get(&metrics).bearer_auth(GATEWAY_KEY).send();
    assert_eq!(client.await.unwrap().status(), 401);
    // Each replica counted its own refusals; together, all of them.
    let (mut refused, mut named) = (0.0, 0.0);
    for replica in &fleet.replicas {
        let text = fleet
            .http
            .get(format!("{}/metrics", replica.site()))
            .bearer_auth(ADMIN)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        refused += text
            .lines()
            .filter_map(|l| l.strip_prefix("kite_limit_refusals_total{kind=\"requests\"} "))
            .map(|v| v.parse::<f64>().unwrap())
            .sum::<f64>();
        // Refusals are counted under the key refused.
        named += text
            .lines()
            .filter(|l| l.starts_with("kite_requests_total{"))
            .filter(|l| l.contains("key=\"rpm\"") && l.contains("status=\"429\""))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>();
    }
    assert_eq!(refused, 20.0);
    assert_eq!(named, 20.0);

    // Tokens per minute: 2,000 a request against 3,000 a minute lets two through.
    let key = fleet.create_key("tpm", &["--tpm", "3000"]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let (status, _, _) = body(fleet.ask(&fleet.base(), &key).await).await;
        statuses.push(status);
        // The tokens are counted once the answer ends.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(statuses, [200, 200, 429, 429]);

    // A team's limit binds its keys together, on every replica.
    let run = fleet.kite(&["teams", "create", "pair", "--rpm", "3"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let a = fleet.create_key("pair-a", &["--team", "pair"]);
    let b = fleet.create_key("pair-b", &["--team", "pair"]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (left, right) = tokio::join!(at_once(&fleet, &a, 4), at_once(&fleet, &b, 4));
    let answered = count(&left, 200) + count(&right, 200);
    assert_eq!(answered, 3, "{left:?} {right:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_at_once_are_limited_across_replicas() {
    let Some(fleet) = Fleet::start(10, true, "deny").await else {
        return;
    };
    let key = fleet.create_key("two", &["--max-parallel", "2"]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let answers = at_once(&fleet, &key, 6).await;
    assert_eq!(count(&answers, 200), 2, "{answers:?}");
    assert_eq!(count(&answers, 429), 4, "{answers:?}");
    // Their places are given back once they end (a moment after their clients have them).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let answers = at_once(&fleet, &key, 2).await;
    assert_eq!(count(&answers, 200), 2, "{answers:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_made_or_revoked_anywhere_hold_everywhere_within_two_seconds() {
    let Some(fleet) = Fleet::start(10, false, "deny").await else {
        return;
    };
    let made = Instant::now();
    let key = fleet.create_key("alice", &["--models", "gpt-5-nano"]);
    for replica in &fleet.replicas {
        loop {
            let status = fleet.ask(&replica.base, &key).await.status().as_u16();
            if status == 200 {
                break;
            }
            assert!(made.elapsed() < Duration::from_secs(2), "{status}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // Revoked over the admin API of one replica: refused by all within 2 s.
    let admin = format!("{}/admin/keys/alice", fleet.replicas[1].base);
    let denied = fleet
        .http
        .delete(&admin)
        .bearer_auth(GATEWAY_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(denied.status(), 401, "a client key is no admin key");
    let revoked = fleet
        .http
        .delete(&admin)
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), 200);
    let view: Value = revoked.json().await.unwrap();
    assert_eq!(view["state"], "revoked");
    assert!(view.get("digest").is_none() && view.get("key").is_none());
    let since = Instant::now();
    for replica in &fleet.replicas {
        loop {
            let status = fleet.ask(&replica.base, &key).await.status().as_u16();
            if status == 401 {
                break;
            }
            assert!(since.elapsed() < Duration::from_secs(2), "{status}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // With its only key revoked, the fleet does not fall back to asking for no key.
    let keyless = fleet
        .http
        .post(format!("{}/chat/completions", fleet.base()))
        .header("host", "localhost")
        .json(&json!({"model": "gpt-5-nano", "messages": [{"role": "user", "content": "Hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(keyless.status(), 401);
    // The admin API asks for its key before it reads a body, and reads small ones only:
    // either the refusal comes back, or the connection is closed on the body unread.
    let big = "x".repeat(1 << 20);
    let admin = format!("{}/admin/keys", fleet.replicas[0].base);
    let refused = |r: Result<reqwest::Response, reqwest::Error>, status: u16| match r {
        Ok(r) => assert_eq!(r.status(), status),
        Err(e) => assert!(e.is_request(), "{e}"),
    };
    let anonymous = fleet
        .http
        .post(&admin)
        .header("content-type", "application/json");
    refused(anonymous.body(big.clone()).send().await, 401);
    let with_key = fleet.http.post(&admin).bearer_auth(ADMIN);
    let with_key = with_key.header("content-type", "application/json");
    refused(with_key.body(big).send().await, 413);
    // A key made over HTTP may ask only for its models.
    let made = fleet
        .http
        .post(format!("{}/admin/keys", fleet.base()))
        .bearer_auth(ADMIN)
        .json(&json!({"name": "bob", "models": ["other"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 201);
    let bob = made.json::<Value>().await.unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (status, _, body) = body(fleet.ask(&fleet.base(), &bob).await).await;
    assert_eq!(status, 403, "{body}");
    // Nor does it see the others listed.
    let listed = fleet
        .get_json(format!("{}/models", fleet.base()), &bob)
        .await;
    assert_eq!(listed["data"], json!([]), "{listed}");
    let listed = fleet
        .get_json(format!("{}/models", fleet.base()), GATEWAY_KEY)
        .await;
    assert!(listed["data"][0]["id"].is_string(), "{listed}");
    // What the admin API cannot keep, it refuses.
    for wrong in [
        json!({"name": "carol", "budget": {"usd": 1, "period": "day", "cap": 2}}),
        json!({"name": "carol", "expires_ms": i64::MAX}),
    ] {
        let r = fleet
            .http
            .post(format!("{}/admin/keys", fleet.base()))
            .bearer_auth(ADMIN)
            .json(&wrong)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{wrong}");
    }
    // Nor through the web chat.
    let chat = fleet
        .http
        .post(format!("{}/api/chat", fleet.proxy.url()))
        .bearer_auth(&bob)
        .json(&json!({"model": "gpt-5-nano", "text": "Hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(chat.status(), 403);
    let listed = fleet.kite(&["keys", "list", "--json"]);
    assert!(listed.stdout.contains("\"bob\"") && listed.stdout.contains("\"revoked\""));
    assert!(!listed.stdout.contains(&bob), "a key is shown once only");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_budget_is_spent_across_replicas_then_refused_as_insufficient_quota() {
    let Some(fleet) = Fleet::start(100_000, false, "deny").await else {
        return;
    };
    // gpt-5-nano's price makes each answer cost some cents: a budget of a few answers.
    let run = fleet.kite(&[
        "teams", "create", "lab", "--budget", "0.1", "--period", "day",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let key = fleet.create_key("lab-key", &["--team", "lab"]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut answered = 0;
    let refusal = loop {
        let (status, _, body) = body(fleet.ask(&fleet.base(), &key).await).await;
        match status {
            200 => answered += 1,
            429 => break body,
            other => panic!("{other}: {body}"),
        }
        assert!(answered < 30, "the budget was never reached");
        tokio::time::sleep(Duration::from_millis(700)).await;
    };
    assert_eq!(refusal["error"]["type"], "insufficient_quota", "{refusal}");
    assert_eq!(refusal["error"]["code"], "insufficient_quota");
    // Every replica refuses it now.
    for replica in &fleet.replicas {
        let (status, _, _) = body(fleet.ask(&replica.base, &key).await).await;
        assert_eq!(status, 429);
    }
    let shown = fleet.kite(&["teams", "show", "lab", "--json"]);
    let shown: Value = serde_json::from_str(shown.stdout.trim()).unwrap();
    let spent = shown["spent"].as_f64().unwrap();
    let each = spent / answered as f64;
    assert!(spent >= 0.1, "{spent}");
    assert!(
        spent < 0.1 + 2.0 * each,
        "spent {spent} over {answered} answers"
    );
    // Requests one after another on one replica, with no pause: only the one that reaches
    // the budget goes past it, though the store's totals are read only twice a second.
    let solo = fleet.create_key("solo", &["--budget", "0.1", "--period", "day"]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let replica = &fleet.replicas[0].base;
    let mut answered = 0;
    loop {
        let (status, _, body) = body(fleet.ask(replica, &solo).await).await;
        match status {
            200 => answered += 1,
            429 => break,
            other => panic!("{other}: {body}"),
        }
        assert!(answered < 30, "the budget was never reached");
    }
    // The last answer's row is written within a quarter of a second.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let shown = fleet.kite(&["keys", "show", "solo", "--json"]);
    let shown: Value = serde_json::from_str(shown.stdout.trim()).unwrap();
    let spent = shown["spent"].as_f64().unwrap();
    assert!(
        spent >= 0.1 && spent - each < 0.1,
        "spent {spent} over {answered} answers of {each}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_is_the_same_on_every_replica_and_survives_a_replica_killed_midway() {
    let Some(mut fleet) = Fleet::start(50, true, "deny").await else {
        return;
    };
    let key = fleet.create_key("counted", &[]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // Streams under way on every replica when one is killed.
    let base = fleet.base();
    let mut streams = Vec::new();
    for _ in 0..9 {
        let r = fleet
            .http
            .post(format!("{base}/chat/completions"))
            .bearer_auth(&key)
            .json(&json!({"model": "gpt-5-nano", "stream": true,
                "messages": [{"role": "user", "content": "Hi"}]}))
            .send()
            .await
            .unwrap();
        streams.push(r);
    }
    let mut victim = fleet.replicas.remove(0);
    victim.child.kill().unwrap();
    victim.child.wait().unwrap();
    let mut whole = 0;
    for r in streams {
        let text = r.text().await.unwrap_or_default();
        whole += usize::from(text.contains("[DONE]"));
    }
    assert!(
        whole >= 6,
        "the other replicas' streams ended whole ({whole})"
    );
    // The others go on.
    for _ in 0..4 {
        assert_eq!(fleet.ask(&fleet.base(), &key).await.status(), 200);
    }
    // Every replica left says the same once each has written its rows (every
    // LEDGER_FLUSH), and it counts what was answered whole.
    tokio::time::sleep(2 * kite::serve::LEDGER_FLUSH).await;
    let mut said = Vec::new();
    for replica in &fleet.replicas {
        let used: Value = fleet
            .get_json(format!("{}/usage", replica.base), &key)
            .await;
        said.push(used["usage"].clone());
    }
    assert_eq!(said[0], said[1]);
    let requests = said[0]["requests"].as_i64().unwrap();
    // The killed replica's rows of its last quarter second may be lost, and no more.
    assert!(
        (whole as i64 + 4..=13).contains(&requests),
        "{requests} rows for {whole} whole streams and 4 answers"
    );
    assert_eq!(said[0]["input_tokens"].as_i64().unwrap(), 50 * requests);
    let run = fleet.kite(&["usage", "--key", "counted", "--json"]);
    let lines: Vec<Value> = (run.stdout.lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "one object a line: {}", run.stdout);
    assert_eq!(lines[0]["requests"].as_i64(), Some(requests));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_away_deny_refuses_in_the_clients_shape_and_recovers() {
    let Some(mut fleet) = Fleet::start(10, false, "deny").await else {
        return;
    };
    let key = fleet.create_key("limited", &["--rpm", "1000"]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(fleet.ask(&fleet.base(), &key).await.status(), 200);
    fleet.redis.stop();
    let replica = fleet.replicas[0].base.clone();
    let (status, retry, body) = body(fleet.ask(&replica, &key).await).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(retry.as_deref(), Some("1"));
    assert_eq!(body["error"]["code"], "service_unavailable");
    let messages = fleet
        .http
        .post(format!("{replica}/messages"))
        .header("x-api-key", &key)
        .json(&json!({"model": "gpt-5-nano", "max_tokens": 10,
            "messages": [{"role": "user", "content": "Hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(messages.status(), 503);
    let said: Value = messages.json().await.unwrap();
    assert_eq!(said["type"], "error", "Anthropic's shape: {said}");
    let ready = fleet
        .http
        .get(format!("{}/ready", replica.trim_end_matches("/v1")))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 503);
    fleet.redis.run();
    // Ready again at the first check once Redis is back.
    let ready = fleet
        .http
        .get(format!("{}/ready", replica.trim_end_matches("/v1")))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
    let since = Instant::now();
    while fleet.ask(&replica, &key).await.status() != 200 {
        assert!(since.elapsed() < Duration::from_secs(10), "no recovery");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_away_allow_answers_within_each_replicas_limits() {
    let Some(mut fleet) = Fleet::start(10, false, "allow").await else {
        return;
    };
    let key = fleet.create_key("lenient", &["--rpm", "2"]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    fleet.redis.stop();
    let replica = fleet.replicas[0].base.clone();
    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(fleet.ask(&replica, &key).await.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 429], "this replica's own limits hold");
    // It can serve, so it stays ready.
    let ready = fleet
        .http
        .get(format!("{}/ready", fleet.replicas[0].site()));
    assert_eq!(ready.send().await.unwrap().status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_postgres_away_answers_go_on_and_the_ledger_catches_up() {
    // Slow answers: a background run ends while the store is away.
    let Some(mut fleet) = Fleet::start(10, true, "deny").await else {
        return;
    };
    let key = fleet.create_key("steady", &[]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(fleet.ask(&fleet.base(), &key).await.status(), 200);
    let started: Value = fleet
        .post_json(
            format!("{}/responses", fleet.replicas[0].base),
            &key,
            &json!({"model": "gpt-5-nano", "input": "Slowly.", "background": true}),
        )
        .await;
    assert_eq!(started["status"], "queued", "{started}");
    let background = started["id"].as_str().unwrap().to_owned();
    fleet.postgres.stop();
    // Keys as last read still work (asked of the replicas themselves: haproxy takes them
    // out while their store is away); what needs the store says it is away, in the
    // client's shape.
    for replica in &fleet.replicas {
        assert_eq!(fleet.ask(&replica.base, &key).await.status(), 200);
    }
    let usage = fleet
        .http
        .get(format!("{}/usage", fleet.replicas[0].base))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(usage.status(), 503);
    let ready = fleet
        .http
        .get(format!("{}/ready", fleet.replicas[2].site()))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 503);
    // A response to keep is refused before anything is spent; one not to keep is answered.
    let respond = |store: bool| {
        fleet
            .http
            .post(format!("{}/responses", fleet.replicas[0].base))
            .bearer_auth(&key)
            .json(&json!({"model": "gpt-5-nano", "input": "Hi", "store": store}))
            .send()
    };
    assert_eq!(respond(true).await.unwrap().status(), 503);
    assert_eq!(respond(false).await.unwrap().status(), 200);
    // A replica stopped meanwhile keeps its rows for the store, within its grace.
    let mut stopping = fleet.replicas.remove(2);
    stopping.terminate();
    tokio::time::sleep(Duration::from_secs(1)).await;
    fleet.postgres.run();
    let status = stopping.child.wait().unwrap();
    assert!(status.success(), "{status}");
    let since = Instant::now();
    loop {
        let r = fleet
            .http
            .get(format!("{}/usage", fleet.replicas[1].base))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap();
        if r.status() == 200 {
            let used: Value = r.json().await.unwrap();
            // One before, three while away, one not kept, and the background run's.
            if used["usage"]["requests"] == 6 {
                break;
            }
        }
        assert!(since.elapsed() < Duration::from_secs(15), "no recovery");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // The background run's end, come while the store was away, is kept once it is back.
    let since = Instant::now();
    loop {
        let r = fleet
            .http
            .get(format!("{}/responses/{background}", fleet.replicas[1].base))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap();
        if r.status() == 200 {
            let r: Value = r.json().await.unwrap();
            if r["status"] == "completed" {
                break;
            }
            assert!(
                ["queued", "in_progress"].contains(&r["status"].as_str().unwrap()),
                "{r}"
            );
        }
        assert!(since.elapsed() < Duration::from_secs(15), "not kept");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_are_kept_and_continued_on_any_replica_and_only_for_their_key() {
    let Some(fleet) = Fleet::start(10, false, "deny").await else {
        return;
    };
    let key = fleet.create_key("ada", &[]);
    let other = fleet.create_key("eve", &[]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut cmd = std::process::Command::new(kite_testkit::mcp::python());
    cmd.arg(kite_testkit::mcp::own("openai_responses_state.py"))
        .arg(fleet.base())
        .args([&key, &other])
        .arg(&fleet.replicas[0].base)
        .arg(&fleet.replicas[1].base);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = common::serve::by_check(
        stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    );
    assert_eq!(said["first"]["status"], "completed");
    assert_eq!(said["first"]["text"], "Hello.");
    assert_eq!(said["second"]["status"], "completed");
    assert_eq!(said["streamed"]["status"], "completed");
    assert_eq!(said["streamed"]["next_status"], "completed");
    assert_eq!(said["retrieved"]["id"], said["first"]["id"]);
    assert_eq!(said["retrieved"]["text"], "Hello.");
    // The third response's input: each turn asked and each answer given, in order.
    let texts = said["items"]["texts"].as_array().unwrap();
    let texts: Vec<&str> = texts.iter().map(|t| t.as_str().unwrap()).collect();
    assert_eq!(
        texts,
        [
            "My name is Ada.",
            "Hello.",
            "What is my name?",
            "Hello.",
            "And my surname?",
            "Hello.",
            "Thanks."
        ]
    );
    for check in ["other_retrieve", "other_continue", "other_delete"] {
        assert_eq!(said[check]["status"], 404, "{check}");
    }
    assert_eq!(said["background"]["first_status"], "queued");
    assert_eq!(said["background"]["status"], "completed");
    assert_eq!(said["background"]["text"], "Hello.");
    assert_eq!(said["deleted"]["status"], 404);
    // The upstream was sent the earlier turns.
    let asked: Vec<String> = fleet
        ._upstream
        .requests()
        .iter()
        .map(|r| r.body_text())
        .collect();
    let continued = asked
        .iter()
        .find(|b| b.contains("What is my name?"))
        .unwrap();
    assert!(continued.contains("My name is Ada.") && continued.contains("Hello."));
    assert!(
        !asked.iter().any(|b| b.contains("Who am I?")),
        "another key's continuation"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_response_whose_replica_dies_ends_failed() {
    let Some(mut fleet) = Fleet::start(10, true, "deny").await else {
        return;
    };
    let key = fleet.create_key("patient", &[]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let started: Value = fleet
        .post_json(
            format!("{}/responses", fleet.replicas[0].base),
            &key,
            &json!({"model": "gpt-5-nano", "input": "Slowly.", "background": true}),
        )
        .await;
    assert_eq!(started["status"], "queued", "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut victim = fleet.replicas.remove(0);
    victim.child.kill().unwrap();
    victim.child.wait().unwrap();
    let since = Instant::now();
    let ended = loop {
        let r: Value = fleet
            .get_json(format!("{}/responses/{id}", fleet.replicas[0].base), &key)
            .await;
        if !["queued", "in_progress"].contains(&r["status"].as_str().unwrap()) {
            break r;
        }
        assert!(since.elapsed() < Duration::from_secs(45), "still {r}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(ended["status"], "failed", "{ended}");
    assert_eq!(ended["error"]["code"], "server_error");

    // A cancel asked of one replica stops a run on another.
    let started: Value = fleet
        .post_json(
            format!("{}/responses", fleet.replicas[0].base),
            &key,
            &json!({"model": "gpt-5-nano", "input": "Slowly.", "background": true}),
        )
        .await;
    let id = started["id"].as_str().unwrap().to_owned();
    let cancelled = fleet
        .http
        .post(format!("{}/responses/{id}/cancel", fleet.replicas[1].base))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(cancelled.status(), 200);
    let since = Instant::now();
    loop {
        let r: Value = fleet
            .get_json(format!("{}/responses/{id}", fleet.replicas[1].base), &key)
            .await;
        if r["status"] == "cancelled" {
            break;
        }
        assert!(since.elapsed() < Duration::from_secs(10), "still {r}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    // A response deleted while it runs stays deleted when its run ends.
    let started: Value = fleet
        .post_json(
            format!("{}/responses", fleet.replicas[0].base),
            &key,
            &json!({"model": "gpt-5-nano", "input": "Slowly.", "background": true}),
        )
        .await;
    let id = started["id"].as_str().unwrap().to_owned();
    let deleted = fleet
        .http
        .delete(format!("{}/responses/{id}", fleet.replicas[1].base))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);
    for _ in 0..10 {
        let r = fleet
            .http
            .get(format!("{}/responses/{id}", fleet.replicas[0].base))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    // A replica asked to stop lets its background runs finish within its grace.
    let started: Value = fleet
        .post_json(
            format!("{}/responses", fleet.replicas[0].base),
            &key,
            &json!({"model": "gpt-5-nano", "input": "Slowly.", "background": true}),
        )
        .await;
    let id = started["id"].as_str().unwrap().to_owned();
    let mut stopping = fleet.replicas.remove(0);
    stopping.terminate();
    let status = stopping.child.wait().unwrap();
    assert!(status.success(), "{status}");
    let r: Value = fleet
        .get_json(format!("{}/responses/{id}", fleet.replicas[0].base), &key)
        .await;
    assert_eq!(r["status"], "completed", "{r}");
}

/// A chat completion of `body` through `base` with `key` and `headers`: its status, its
/// `x-kite-cache`, and its body's text.
async fn asked(
    fleet: &Fleet,
    key: &str,
    body: Value,
    headers: &[(&str, &str)],
) -> (u16, Option<String>, String) {
    let mut r = fleet
        .http
        .post(format!("{}/chat/completions", fleet.base()))
        .bearer_auth(key)
        .json(&body);
    for (n, v) in headers {
        r = r.header(*n, *v);
    }
    let r = r.send().await.unwrap();
    let cache = r
        .headers()
        .get("x-kite-cache")
        .map(|v| v.to_str().unwrap().to_owned());
    (r.status().as_u16(), cache, r.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_request_is_answered_once_from_redis_on_any_replica() {
    let cache = "\n[serve.cache]\nttl_secs = 60\n";
    let Some(fleet) = Fleet::start_with(100, false, "deny", cache).await else {
        return;
    };
    let key = fleet.create_key("cached", &[]);
    let other = fleet.create_key("apart", &[]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let upstream = || fleet._upstream.requests().len();
    let hi = json!({"model": "gpt-5-nano", "messages": [{"role": "user", "content": "Hi"}]});
    let (status, said, first) = asked(&fleet, &key, hi.clone(), &[]).await;
    assert_eq!((status, said.as_deref()), (200, Some("miss")));
    // The answer is kept once it ends (a moment after the client has it).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, said, again) = asked(&fleet, &key, hi.clone(), &[]).await;
    assert_eq!((status, said.as_deref()), (200, Some("hit")));
    let text = |body: &str| {
        let v: Value = serde_json::from_str(body).unwrap();
        v["choices"][0]["message"]["content"].clone()
    };
    assert_eq!(text(&first), text(&again));
    assert_eq!(upstream(), 1);

    // Streamed: kept and replayed as a stream.
    let mut streamed = hi.clone();
    streamed["stream"] = true.into();
    streamed["messages"][0]["content"] = "Stream it".into();
    let (_, said, first) = asked(&fleet, &key, streamed.clone(), &[]).await;
    assert_eq!(said.as_deref(), Some("miss"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, said, again) = asked(&fleet, &key, streamed.clone(), &[]).await;
    assert_eq!(said.as_deref(), Some("hit"));
    let deltas = |body: &str| kite_testkit::render::chat_stream_text(body);
    assert_eq!(deltas(&first), deltas(&again));
    assert_eq!(deltas(&again), "Hello.");
    assert!(again.contains("data: [DONE]"));
    assert_eq!(upstream(), 2);

    // Another temperature, another key, or no-cache: asked afresh.
    let mut warmer = hi.clone();
    warmer["temperature"] = 0.9.into();
    assert_eq!(
        asked(&fleet, &key, warmer, &[]).await.1.as_deref(),
        Some("miss")
    );
    assert_eq!(
        asked(&fleet, &other, hi.clone(), &[]).await.1.as_deref(),
        Some("miss")
    );
    let fresh = [("cache-control", "no-cache")];
    assert_eq!(asked(&fleet, &key, hi.clone(), &fresh).await.0, 200);
    assert_eq!(upstream(), 5);

    // A hit costs nothing and is marked in the ledger.
    tokio::time::sleep(2 * kite::serve::LEDGER_FLUSH).await;
    let run = fleet.kite(&["usage", "--key", "cached", "--json"]);
    let lines: Vec<Value> = (run.stdout.lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["requests"], 6);
    assert_eq!(lines[0]["cached"], 2);
    let each = lines[0]["cost"].as_f64().unwrap() / 4.0;
    assert!(each > 0.0, "the four asked upstream cost something");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_redis_the_cache_is_the_processs_own() {
    let upstream = ReplayServer::answering(|_| hello(10, false)).await;
    let mut config = tempfile::NamedTempFile::new().unwrap();
    use std::io::Write;
    write!(config, "[serve.cache]\nscope = \"shared\"\n").unwrap();
    let served = start(
        kite_serve()
            .env("KITE_LOG", "off")
            .env("KITE_CONFIG", config.path())
            .env("OPENAI_API_KEY", KEY)
            .args([
                "--api-key",
                GATEWAY_KEY,
                "--api-key",
                "second-key-0123456789",
            ])
            .args(["--provider", "openai", "--model", "gpt-5-nano"])
            .arg("--base-url")
            .arg(format!("{}/v1", upstream.url())),
    );
    let http = reqwest::Client::new();
    let hi = json!({"model": "gpt-5-nano", "messages": [{"role": "user", "content": "Hi"}]});
    let mut said = Vec::new();
    for key in [GATEWAY_KEY, GATEWAY_KEY, "second-key-0123456789"] {
        let r = http
            .post(format!("{}/chat/completions", served.base))
            .bearer_auth(key)
            .json(&hi)
            .send()
            .await
            .unwrap();
        said.push(r.headers()["x-kite-cache"].to_str().unwrap().to_owned());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Shared: the second key is given the first's answer.
    assert_eq!(said, ["miss", "hit", "hit"]);
    assert_eq!(upstream.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_before_the_usage_still_pays_an_estimate() {
    let Some(fleet) = Fleet::start(10, true, "deny").await else {
        return;
    };
    let key = fleet.create_key("leaver", &[]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut r = fleet
        .http
        .post(format!("{}/chat/completions", fleet.replicas[0].base))
        .bearer_auth(&key)
        .json(&json!({"model": "gpt-5-nano", "stream": true,
            "messages": [{"role": "user", "content": "Tell me a long story, please."}]}))
        .send()
        .await
        .unwrap();
    // The first words, then gone before the usage comes at the end.
    let first = r.chunk().await.unwrap().unwrap();
    assert!(!first.is_empty());
    drop(r);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let used: Value = fleet
        .get_json(format!("{}/usage", fleet.replicas[0].base), &key)
        .await;
    assert_eq!(used["usage"]["requests"], 1, "{used}");
    assert!(
        used["usage"]["input_tokens"].as_i64().unwrap() > 0,
        "{used}"
    );
    assert!(used["usage"]["cost"].as_f64().unwrap() > 0.0, "{used}");
    // The same for a whole answer its client gave up on.
    let gave_up = fleet
        .http
        .post(format!("{}/chat/completions", fleet.replicas[0].base))
        .bearer_auth(&key)
        .timeout(Duration::from_millis(400))
        .json(&json!({"model": "gpt-5-nano",
            "messages": [{"role": "user", "content": "Tell me a long story, please."}]}))
        .send()
        .await;
    assert!(
        gave_up.is_err(),
        "the answer takes longer than the client waits"
    );
    tokio::time::sleep(Duration::from_millis(600)).await;
    let used: Value = fleet
        .get_json(format!("{}/usage", fleet.replicas[0].base), &key)
        .await;
    assert_eq!(used["usage"]["requests"], 2, "{used}");
}
