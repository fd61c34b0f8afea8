//! Habits users bring from other chat tools: files attached to the question with `-a`.

mod common;

use common::{kite, run};
use kite_testkit::{ReplayServer, Reply, fixture};

const TEXT: &str = "openai/chat-completions/stream-text-with-usage/response.sse";

#[tokio::test]
async fn attached_images_and_text_files_go_with_the_question() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("dot.PNG");
    std::fs::write(&png, b"\x89PNG\r\n\x1a\nfake").unwrap();
    let notes = dir.path().join("notes.md");
    std::fs::write(&notes, "- buy milk\n").unwrap();
    let server = ReplayServer::start(vec![Reply::sse(fixture(TEXT))]).await;
    let r = run(kite()
        .args(["ask", "--no-store", "--model", "m", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("-a")
        .arg(&png)
        .arg("--attach")
        .arg(&notes)
        .arg("What is this?"))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let body: serde_json::Value = serde_json::from_str(&server.requests()[0].body_text()).unwrap();
    let content = body["messages"][0]["content"].as_array().unwrap();
    assert_eq!(content[0]["text"], "What is this?");
    assert_eq!(
        content[1]["image_url"]["url"],
        "data:image/png;base64,iVBORw0KGgpmYWtl"
    );
    assert_eq!(content[2]["text"], "notes.md:\n- buy milk\n");
}

#[tokio::test]
async fn a_file_that_is_neither_image_nor_text_is_refused_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let blob = dir.path().join("data.bin");
    std::fs::write(&blob, [0xff, 0xfe, 0x00, 0x81]).unwrap();
    let server = ReplayServer::start(vec![Reply::sse(fixture(TEXT))]).await;
    for (file, why) in [
        (blob.clone(), "neither an image"),
        (dir.path().join("missing.txt"), "cannot attach"),
        (dir.path().to_path_buf(), "not a file"),
    ] {
        let r = run(kite()
            .args(["ask", "--no-store", "--model", "m", "--base-url"])
            .arg(format!("{}/v1", server.url()))
            .arg("-a")
            .arg(&file)
            .arg("What is this?"))
        .await;
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(r.stderr.contains(why), "{}", r.stderr);
    }
    assert_eq!(server.requests().len(), 0);
}
