//! What a question cost, through the real binary: `--usage` on stderr, `cost` in the JSON
//! usage line, the provider's own figure (OpenRouter) over the table's, "unknown" for a
//! model the table does not know, and `kite prices show`.

mod common;

use common::{KEY, kite, run};
use kite::{FinishReason, Message, Response, Usage};
use kite_testkit::render::{Shape, sse};
use kite_testkit::{ReplayServer, Reply, fixture};
use serde_json::Value;

fn answer_with_usage(input: u64, output: u64) -> Reply {
    let mut r = Response::empty(FinishReason::Stop);
    r.message = Message::assistant("Hello.");
    r.usage = Usage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: input + output,
        ..Usage::default()
    };
    Reply::sse(sse(Shape::Chat, &r, 1))
}

fn ask(
    server: &ReplayServer,
    provider: &str,
    model: &str,
    extra: &[&str],
) -> tokio::process::Command {
    let mut c = kite();
    c.env("OPENAI_API_KEY", KEY)
        .env("OPENROUTER_API_KEY", KEY)
        .args([
            "ask",
            "--no-store",
            "--provider",
            provider,
            "--model",
            model,
        ])
        .args(extra)
        .arg("--base-url")
        .arg(format!("{}/v1", server.url()))
        .arg("Say hello.");
    c
}

#[tokio::test]
async fn usage_and_json_say_what_the_answer_cost() {
    // gpt-4o: $2.50 in, $10 out per million tokens.
    let server = ReplayServer::start(vec![answer_with_usage(1000, 100)]).await;
    let r = run(&mut ask(&server, "openai", "gpt-4o", &["--usage"])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("kite: 1000 in / 100 out tokens, $0.0035"),
        "{}",
        r.stderr
    );

    let server = ReplayServer::start(vec![answer_with_usage(1000, 100)]).await;
    let r = run(&mut ask(&server, "openai", "gpt-4o", &["--json"])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let usage: Value = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "usage")
        .unwrap();
    assert!(
        (usage["cost"].as_f64().unwrap() - 0.0035).abs() < 1e-12,
        "{usage}"
    );

    // A model the table does not know: unknown, never a guess.
    let server = ReplayServer::start(vec![answer_with_usage(1000, 100)]).await;
    let r = run(&mut ask(
        &server,
        "openai",
        "my-private-finetune",
        &["--usage", "--json"],
    ))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("tokens, cost unknown"), "{}", r.stderr);
    assert!(r.stdout.contains(r#""cost":null"#), "{}", r.stdout);
}

#[tokio::test]
async fn openrouters_own_cost_wins_over_the_table() {
    // The recorded answer reports $0.00005 for 12 + 2 tokens of openai/gpt-4o.
    let server = ReplayServer::start(vec![Reply::sse(fixture(
        "openrouter/chat-completions/stream-gpt4o/response.sse",
    ))])
    .await;
    let r = run(&mut ask(
        &server,
        "openrouter",
        "openai/gpt-4o",
        &["--usage"],
    ))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("12 in / 2 out tokens, $0.000050"),
        "{}",
        r.stderr
    );
}

#[tokio::test]
async fn prices_show_gives_a_models_rates_and_fails_on_an_unknown_one() {
    let r = run(kite().args(["prices", "show", "openai", "gpt-4o"])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("$2.5000 per million tokens in, $10.0000 out"),
        "{}",
        r.stdout
    );
    let r = run(kite().args(["prices", "show", "openai", "no-such-model"])).await;
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("has no price for openai no-such-model"),
        "{}",
        r.stderr
    );
    // The local model costs nothing, as the book says.
    let r = run(kite().args(["prices", "show", "local", "smollm2"])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("costs nothing"), "{}", r.stdout);
    // For scripts: JSON.
    let r = run(kite().args(["prices", "show", "openai", "gpt-4o", "--json"])).await;
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        (
            v["input_per_million"].as_f64(),
            v["output_per_million"].as_f64()
        ),
        (Some(2.5), Some(10.0))
    );
}

#[tokio::test]
async fn prices_list_gives_every_model_of_a_provider() {
    let r = run(kite().args(["prices", "list", "openai", "--json"])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let models: Vec<serde_json::Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(models.len() > 20, "{}", models.len());
    assert!(models.iter().all(|m| m["provider"] == "openai"));
    let gpt = models.iter().find(|m| m["model"] == "gpt-4o").unwrap();
    assert_eq!(gpt["input_per_million"], 2.5);
    let r = run(kite().args(["prices", "list"])).await;
    assert!(r.stdout.lines().count() > 100, "{}", r.stderr);
    assert!(r.stdout.contains("anthropic"), "{}", r.stdout);
    // A provider the table does not know is said to be unknown, with those it knows.
    let r = run(kite().args(["prices", "list", "no-such-provider"])).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("no provider called no-such-provider") && r.stderr.contains("openai"),
        "{}",
        r.stderr
    );
    // The local model costs nothing, listed as shown.
    let r = run(kite().args(["prices", "list", "local"])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("costs nothing"), "{}", r.stdout);
    let r = run(kite().args(["prices", "list", "local", "--json"])).await;
    let local: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(local["input_per_million"], 0.0);
}

/// A wheel named like genai-prices' holding `data` as its `data.py`.
fn wheel(dir: &std::path::Path, version: &str, data: &str) -> std::path::PathBuf {
    let path = dir.join(format!("genai_prices-{version}-py3-none-any.whl"));
    let script = "import sys, zipfile\n\
        v = sys.argv[3]\n\
        z = zipfile.ZipFile(sys.argv[1], 'w')\n\
        z.writestr('genai_prices/data.py', open(sys.argv[2]).read())\n\
        d = 'genai_prices-%s.dist-info/' % v\n\
        z.writestr(d + 'METADATA', 'Metadata-Version: 2.1\\nName: genai-prices\\nVersion: %s\\n' % v)\n\
        z.writestr(d + 'WHEEL', 'Wheel-Version: 1.0\\nGenerator: kite-tests\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n\
        z.writestr(d + 'RECORD', '')\n\
        z.close()";
    let source = dir.join(format!("data-{version}.py"));
    std::fs::write(&source, data).unwrap();
    let ok = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&path)
        .arg(&source)
        .arg(version)
        .status()
        .unwrap();
    assert!(ok.success());
    path
}

#[tokio::test]
async fn prices_update_reads_a_new_release_and_refuses_a_hostile_one() {
    let dir = tempfile::tempdir().unwrap();
    let data_home = dir.path().join("data");
    let models: String = (0..120)
        .map(|i| {
            format!(
                "        ModelInfo(id='m{i}', match=ClauseEquals(equals='m{i}'), \
                 prices=ModelPrice(input_mtok=Decimal('1'), output_mtok=Decimal('2'))),\n"
            )
        })
        .collect();
    let data = format!(
        "from .types import *\n\nproviders: list[Provider] = [\n    Provider(\n        \
         id='openai',\n        name='OpenAI',\n        api_pattern='https://api\\\\.openai\\\\.com',\n        \
         models=[\n{models}        ],\n    ),\n]\n"
    );
    let good = wheel(dir.path(), "9.9.9", &data);
    let update = |package: &std::path::Path| {
        let mut c = kite();
        c.env("XDG_DATA_HOME", &data_home)
            .env("KITE_PRICES_PACKAGE", package)
            .args(["prices", "update"]);
        c
    };
    let r = run(&mut update(&good)).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("genai-prices 9.9.9: 120 models priced"),
        "{}",
        r.stdout
    );
    let show = |model: &str| {
        let mut c = kite();
        c.env("XDG_DATA_HOME", &data_home)
            .args(["prices", "show", "openai", model]);
        c
    };
    let r = run(&mut show("m7")).await;
    assert!(
        r.stdout
            .contains("$1.0000 per million tokens in, $2.0000 out (genai-prices 9.9.9)"),
        "{} {}",
        r.stdout,
        r.stderr
    );

    // A data.py that would run a command if it were run: it is only read, and refused.
    let marker = dir.path().join("pwned");
    let hostile = format!(
        "providers = [__import__('os').system('touch {}')]\n",
        marker.display()
    );
    let evil = wheel(dir.path(), "6.6.6", &hostile);
    let r = run(&mut update(&evil)).await;
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(!marker.exists(), "the package's code ran");
    // The table in use is still the good one.
    let r = run(&mut show("m7")).await;
    assert!(r.stdout.contains("genai-prices 9.9.9"), "{}", r.stdout);
}

#[tokio::test]
async fn a_stored_conversation_adds_up_its_turns_costs() {
    let store = common::fresh_store();
    let server = ReplayServer::start(vec![
        answer_with_usage(1000, 100),
        answer_with_usage(1000, 100),
    ])
    .await;
    for extra in [&[][..], &["--continue"][..]] {
        let mut c = kite();
        c.env("OPENAI_API_KEY", KEY)
            .env("KITE_STORE_URL", &store)
            .args(["ask", "--provider", "openai", "--model", "gpt-4o"])
            .args(extra)
            .arg("--base-url")
            .arg(format!("{}/v1", server.url()))
            .arg("Say hello.");
        let r = run(&mut c).await;
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let listed =
        run(kite()
            .env("KITE_STORE_URL", &store)
            .args(["conversations", "list", "--json"]))
        .await;
    let id = serde_json::from_str::<Value>(listed.stdout.trim()).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let shown = run(kite()
        .env("KITE_STORE_URL", &store)
        .args(["conversations", "show", &id]))
    .await;
    assert!(
        shown
            .stdout
            .contains("total: 2000 in / 200 out tokens, $0.0070"),
        "{}",
        shown.stdout
    );
}

#[tokio::test]
async fn usage_totals_what_ask_spent_and_says_zero_of_an_empty_ledger() {
    let store = common::fresh_store();
    let usage = |args: &[&str]| {
        let mut c = kite();
        c.env("KITE_STORE_URL", &store).arg("usage").args(args);
        c
    };
    // Nothing yet: one total of nothing, in JSON too.
    let r = run(&mut usage(&["--json"])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let line: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(
        (line["requests"].as_i64(), line["cost"].as_f64()),
        (Some(0), Some(0.0))
    );

    // Two stored questions to gpt-4o: $0.0035 each.
    for _ in 0..2 {
        let server = ReplayServer::start(vec![answer_with_usage(1000, 100)]).await;
        let mut c = kite();
        c.env("KITE_STORE_URL", &store)
            .env("OPENAI_API_KEY", KEY)
            .args([
                "ask",
                "--provider",
                "openai",
                "--model",
                "gpt-4o",
                "--base-url",
            ])
            .arg(format!("{}/v1", server.url()))
            .arg("Say hello.");
        let r = run(&mut c).await;
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let r = run(&mut usage(&["--json"])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let line: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(line["requests"], 2, "{line}");
    assert_eq!(line["input_tokens"], 2000, "{line}");
    assert!(
        (line["cost"].as_f64().unwrap() - 0.007).abs() < 1e-12,
        "{line}"
    );
    let r = run(&mut usage(&["--by", "route"])).await;
    assert!(
        r.stdout.contains("kite ask") && r.stdout.contains("$0.0070"),
        "{}",
        r.stdout
    );
}
