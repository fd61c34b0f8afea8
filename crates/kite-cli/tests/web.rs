//! The web chat of `kite serve`, in a real headless Chromium driven through its WebDriver
//! (Debian's `chromium` and `chromium-driver`, installed by `scripts/setup.sh --tests`), in front
//! of kite's loopback provider: a question with a tool call, the Markdown of the answer
//! (and nothing a hostile answer could inject), the conversation found again after a
//! reload, a slow answer stopped, an upstream error shown in the page, deleting, and a long
//! answer in many deltas.
//!
//! Each step's screenshot is kept in `target/tmp/web-chat/`.

mod common;

use common::serve::{kite_serve, start};
use common::{KEY, answer};
use fantoccini::{Client, ClientBuilder, Locator};
use kite::{FinishReason, Message, Part, Response, Role, ToolCall};
use kite_testkit::render::{Shape, sse};
use kite_testkit::{ReplayServer, Reply};
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;

/// chromedriver on a free port; killed when dropped.
struct Driver {
    child: std::process::Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn driver() -> Driver {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = std::process::Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("chromedriver runs (scripts/setup.sh --tests installs chromium-driver)");
    let url = format!("http://127.0.0.1:{port}");
    let driver = Driver { child, url };
    for _ in 0..100 {
        if reqwest::get(format!("{}/status", driver.url)).await.is_ok() {
            return driver;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("chromedriver did not start");
}

async fn browser(driver: &Driver) -> Client {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--window-size=1100,800"],
        }),
    );
    ClientBuilder::rustls()
        .unwrap()
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .expect("chromedriver starts a headless Chromium")
}

/// Where the screenshots go.
fn shots() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("web-chat");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn shot(c: &Client, name: &str) {
    let png = c.screenshot().await.unwrap();
    std::fs::write(shots().join(format!("{name}.png")), png).unwrap();
}

async fn wait_for(c: &Client, css: &str) -> fantoccini::elements::Element {
    c.wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no {css} in the page: {e}"))
}

async fn count(c: &Client, css: &str) -> usize {
    c.find_all(Locator::Css(css)).await.unwrap().len()
}

async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

async fn ask(c: &Client, text: &str) {
    let prompt = c.find(Locator::Css("#prompt")).await.unwrap();
    prompt.send_keys(text).await.unwrap();
    click(c, "#send").await;
}

/// A Chat Completions stream of `words`, one event each, sent slowly.
fn slow(words: usize) -> Reply {
    let mut body = String::new();
    for n in 0..words {
        let chunk = json!({"id": "slow", "object": "chat.completion.chunk", "created": 0,
            "model": "gpt-5-nano",
            "choices": [{"index": 0, "delta": {"content": format!("word{n} ")}, "finish_reason": null}]});
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    let each = body.len() / words;
    Reply::sse(body).chunked(each, Duration::from_millis(100))
}

#[tokio::test]
async fn the_web_chat_streams_shows_tools_keeps_conversations_and_stops() {
    let mut call = Response::empty(FinishReason::ToolCalls);
    call.message = Message::new(
        Role::Assistant,
        vec![Part::ToolCall(ToolCall::new("call_1", "now", "{}"))],
    );
    let hostile = "It is **noon** now.\n\n- one\n- two\n\n\
                   <img src=x onerror=alert(1)> [click](javascript:alert(1))";
    let upstream = ReplayServer::start(vec![
        Reply::sse(sse(Shape::Chat, &call, 1)),
        answer(hostile, 2),
        slow(300),
        Reply::json(
            400,
            r#"{"error": {"message": "The upstream refuses this question", "type": "invalid_request_error"}}"#,
        ),
    ])
    .await;
    let served = start(
        kite_serve()
            .env("KITE_LOG", "off")
            .env("OPENAI_API_KEY", KEY)
            .args([
                "--provider",
                "openai",
                "--model",
                "gpt-5-nano",
                "--tool",
                "now",
            ])
            .arg("--base-url")
            .arg(format!("{}/v1", upstream.url())),
    );
    let page = served.page();
    let driver = driver().await;
    let c = browser(&driver).await;

    // A question: the tool call shows with its result, then the answer, as Markdown.
    c.goto(&page).await.unwrap();
    wait_for(&c, "body[data-state='idle']").await;
    let models = c.find(Locator::Css("#model")).await.unwrap();
    assert_eq!(
        models.prop("value").await.unwrap().as_deref(),
        Some("gpt-5-nano")
    );
    shot(&c, "1-empty").await;
    ask(&c, "What time is it?").await;
    let result = wait_for(&c, ".tool-call pre.result").await;
    assert!(result.text().await.unwrap().contains("utc"));
    let name = c.find(Locator::Css(".tool-call .name")).await.unwrap();
    assert_eq!(name.text().await.unwrap(), "now");
    let strong = wait_for(&c, ".message.assistant .content strong").await;
    assert_eq!(strong.text().await.unwrap(), "noon");
    wait_for(&c, "body[data-state='idle']").await;
    assert_eq!(count(&c, ".message.assistant .content li").await, 2);
    assert_eq!(
        count(&c, "#messages img").await,
        0,
        "no image from the answer"
    );
    assert_eq!(count(&c, "#messages a[href^='javascript']").await, 0);
    let answers = c
        .find_all(Locator::Css(".message.assistant .content"))
        .await
        .unwrap();
    let answer_text = answers.last().unwrap().text().await.unwrap();
    assert!(
        answer_text.contains("<img src=x"),
        "shown as text: {answer_text}"
    );
    shot(&c, "2-answer-with-tool").await;

    // After a reload the conversation is in the list, and opening it shows it again.
    c.refresh().await.unwrap();
    wait_for(&c, "body[data-state='idle']").await;
    let listed = wait_for(&c, "li.conversation .title").await;
    assert_eq!(listed.text().await.unwrap(), "What time is it?");
    listed.click().await.unwrap();
    wait_for(&c, ".message.assistant .content strong").await;
    wait_for(&c, ".tool-call pre.result").await;
    assert_eq!(count(&c, ".message.user").await, 1);
    shot(&c, "3-reloaded").await;

    // A slow answer, stopped: the page is free again at once, with what came so far.
    click(&c, "#new").await;
    ask(&c, "Tell me a long story.").await;
    wait_for(&c, "body[data-state='streaming']").await;
    let text = wait_for(&c, ".message.assistant .content").await;
    while !text.text().await.unwrap().contains("word2") {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    click(&c, "#stop").await;
    wait_for(&c, "body[data-state='idle']").await;
    wait_for(&c, ".stopped").await;
    let cut = text.text().await.unwrap();
    assert!(!cut.contains("word299"), "stopped before the end: {cut}");
    shot(&c, "4-stopped").await;

    // An upstream error is shown in the page.
    click(&c, "#new").await;
    ask(&c, "Something the upstream refuses.").await;
    let error = wait_for(&c, "#error:not([hidden])").await;
    wait_for(&c, "body[data-state='idle']").await;
    assert!(
        error
            .text()
            .await
            .unwrap()
            .contains("refuses this question"),
        "{}",
        error.text().await.unwrap()
    );
    shot(&c, "5-error").await;

    // Three conversations; deleting one leaves two, in the page and in the store.
    c.refresh().await.unwrap();
    wait_for(&c, "body[data-state='idle']").await;
    assert_eq!(count(&c, "li.conversation").await, 3);
    click(&c, "li.conversation button.delete").await;
    for _ in 0..100 {
        if count(&c, "li.conversation").await == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(count(&c, "li.conversation").await, 2);
    shot(&c, "6-deleted").await;
    let api = |path: String| {
        reqwest::Client::new()
            .get(format!("{}{path}", served.site()))
            .bearer_auth(served.key())
            .send()
    };
    let stored: serde_json::Value = api("/api/conversations".into())
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stored["conversations"].as_array().unwrap().len(), 2);
    // The stopped answer kept what the page showed of it.
    let story = stored["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["title"] == "Tell me a long story.")
        .expect("the stopped conversation is kept");
    let kept: serde_json::Value = api(format!(
        "/api/conversations/{}",
        story["id"].as_str().unwrap()
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let said = kept["messages"][1]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(said.starts_with("word0 word1 word2"), "{kept}");
    c.close().await.unwrap();
    // Every reply was asked for: the stopped answer did not go on to another call.
    assert_eq!(upstream.requests().len(), 4);
}

#[tokio::test]
async fn the_web_chat_works_with_the_local_model_and_no_key() {
    let Some(served) = common::serve::serve_local() else {
        return;
    };
    let page = served.page();
    let driver = driver().await;
    let c = browser(&driver).await;
    c.goto(&page).await.unwrap();
    wait_for(&c, "body[data-state='idle']").await;
    ask(&c, "What is the capital of France?").await;
    wait_for(&c, ".message.assistant .content").await;
    wait_for(&c, ".usage").await;
    wait_for(&c, "body[data-state='idle']").await;
    let answer = c
        .find(Locator::Css(".message.assistant .content"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(answer.contains("Paris"), "{answer}");
    shot(&c, "7-local-model").await;
    c.close().await.unwrap();
}

#[tokio::test]
async fn with_keys_the_page_asks_for_one_and_refuses_a_wrong_one() {
    let upstream = ReplayServer::start(vec![answer("Hello, key holder.", 1)]).await;
    let served = start(
        kite_serve()
            .env("KITE_LOG", "off")
            .env("OPENAI_API_KEY", KEY)
            .args(["--provider", "openai", "--model", "gpt-5-nano"])
            .args(["--api-key", common::serve::GATEWAY_KEY, "--base-url"])
            .arg(format!("{}/v1", upstream.url())),
    );
    let page = served.page();
    let driver = driver().await;
    let c = browser(&driver).await;
    c.goto(&page).await.unwrap();
    let key = wait_for(&c, "#key-form:not([hidden]) #key").await;
    assert_eq!(
        count(&c, "body[data-state='idle']").await,
        0,
        "nothing loads without a key"
    );
    key.send_keys("sk-wrong-key").await.unwrap();
    click(&c, "#key-form button[type='submit']").await;
    let error = wait_for(&c, "#error:not([hidden])").await;
    assert!(!error.text().await.unwrap().is_empty());
    let key = wait_for(&c, "#key-form:not([hidden]) #key").await;
    key.clear().await.unwrap();
    key.send_keys(common::serve::GATEWAY_KEY).await.unwrap();
    click(&c, "#key-form button[type='submit']").await;
    wait_for(&c, "body[data-state='idle']").await;
    ask(&c, "Hello?").await;
    let answer = wait_for(&c, ".message.assistant .content p").await;
    assert_eq!(answer.text().await.unwrap(), "Hello, key holder.");
    shot(&c, "8-with-a-key").await;
    c.close().await.unwrap();
    assert_eq!(upstream.requests().len(), 1);
}

#[tokio::test]
async fn the_web_chat_renders_tables_as_the_terminal_does() {
    let text = "Results:\n\n| Name | Score |\n|:-----|------:|\n| **ada** | 12 |\n| <b>bob</b> | 7 |\n\nDone.";
    let upstream = ReplayServer::start(vec![answer(text, 1)]).await;
    let served = start(
        kite_serve()
            .env("KITE_LOG", "off")
            .env("OPENAI_API_KEY", KEY)
            .args([
                "--provider",
                "openai",
                "--model",
                "gpt-5-nano",
                "--base-url",
            ])
            .arg(format!("{}/v1", upstream.url())),
    );
    let driver = driver().await;
    let c = browser(&driver).await;
    c.goto(&served.page()).await.unwrap();
    wait_for(&c, "body[data-state='idle']").await;
    ask(&c, "Scores?").await;
    wait_for(&c, ".message.assistant .content table").await;
    wait_for(&c, "body[data-state='idle']").await;
    let cell = |css: &'static str| {
        let c = c.clone();
        async move {
            c.find(Locator::Css(css))
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        }
    };
    assert_eq!(cell(".content table th:nth-child(2)").await, "Score");
    assert_eq!(cell(".content table tbody tr:first-child td").await, "ada");
    // Escaped first: markup in a cell is text.
    assert_eq!(
        cell(".content table tbody tr:nth-child(2) td").await,
        "<b>bob</b>"
    );
    assert_eq!(count(&c, ".content table td.align-right").await, 2);
    assert_eq!(count(&c, ".content table strong").await, 1);
    shot(&c, "9-table").await;
    c.close().await.unwrap();
}

#[tokio::test]
async fn a_long_answer_in_many_deltas_does_not_hang_the_page() {
    // About 120 KB of Markdown in 3,000 deltas: the page once drew all of the answer so far
    // again for each delta, and hung for over a minute.
    let sections = 450;
    let mut text = String::new();
    for n in 1..=sections {
        text.push_str(&format!(
            "## Part {n}\n\nSome **bold**, some _italic_ and `code` in part {n}, with words enough \
             for a long answer: lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do \
             eiusmod tempor incididunt ut labore et dolore magna aliqua.\n\n\
             - one\n- two\n\n```rust\nlet part = {n};\n```\n\n"
        ));
    }
    text.push_str("The last paragraph.");
    let chars: Vec<char> = text.chars().collect();
    let deltas = chars
        .chunks(chars.len().div_ceil(3000))
        .map(|c| Part::text(c.iter().collect::<String>()))
        .collect();
    let mut long = Response::empty(FinishReason::Stop);
    long.message = Message::new(Role::Assistant, deltas);
    let upstream = ReplayServer::start(vec![Reply::sse(sse(Shape::Chat, &long, 1))]).await;
    let served = start(
        kite_serve()
            .env("KITE_LOG", "off")
            .env("OPENAI_API_KEY", KEY)
            .args([
                "--provider",
                "openai",
                "--model",
                "gpt-5-nano",
                "--base-url",
            ])
            .arg(format!("{}/v1", upstream.url())),
    );
    let driver = driver().await;
    let c = browser(&driver).await;
    c.goto(&served.page()).await.unwrap();
    wait_for(&c, "body[data-state='idle']").await;
    ask(&c, "A long answer, please.").await;
    // The deadline is only so that a page that hangs fails the test instead of stalling it
    // (a busy page holds the driver's commands up too): it is far above the time the page
    // takes, well under a second. Speed is measured, not asserted.
    tokio::time::timeout(
        Duration::from_secs(20),
        wait_for(&c, "body[data-state='idle']"),
    )
    .await
    .expect("the page does not hang on a long answer");
    assert_eq!(count(&c, ".message.assistant .content pre").await, sections);
    let last = c
        .find(Locator::Css(".message.assistant .content > p:last-child"))
        .await
        .unwrap();
    assert_eq!(last.text().await.unwrap(), "The last paragraph.");
    // Drawn in pieces as it came, the answer is what drawing it whole gives.
    let whole = c
        .execute(
            "const whole = document.createElement('div');
             whole.className = 'content';
             whole.innerHTML = md(arguments[0]);
             return whole.isEqualNode(document.querySelector('.message.assistant .content'));",
            vec![json!(text)],
        )
        .await
        .unwrap();
    assert_eq!(whole, json!(true));
    shot(&c, "10-long-answer").await;
    c.close().await.unwrap();
    assert_eq!(upstream.requests().len(), 1);
}
