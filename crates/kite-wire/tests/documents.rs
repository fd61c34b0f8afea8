//! Documents (PDFs and text, inline or at a URL) from each API's clients, and to each
//! API's providers: Anthropic's `document` blocks, OpenAI's `file` and `input_file` parts.

use kite_core::{Document, DocumentSource, Message, Part, Request, ToolResult};
use kite_wire::anthropic;
use kite_wire::openai_chat;
use kite_wire::openai_responses::{self, Options};
use serde_json::{Value, json};

const PDF: &str = "JVBERi0xLjQKJcfs";

fn pdf_block() -> Value {
    json!({"type": "document", "title": "report.pdf", "context": "Q3 numbers",
        "citations": {"enabled": true}, "cache_control": {"type": "ephemeral"},
        "source": {"type": "base64", "media_type": "application/pdf", "data": PDF}})
}

#[test]
fn anthropic_documents_come_in_and_go_back_as_they_came() {
    let body = json!({"model": "m", "max_tokens": 100, "messages": [
        {"role": "user", "content": [
            pdf_block(),
            {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                "data": "Plain notes."}},
            {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
            {"type": "document", "source": {"type": "content",
                "content": [{"type": "text", "text": "One."}, {"type": "text", "text": "Two."}]}},
            {"type": "text", "text": "Summarize."}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read",
            "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
            "content": [pdf_block()]}]}]});
    let request = anthropic::serve::decode_request(&serde_json::to_vec(&body).unwrap())
        .unwrap()
        .request;
    let parts = &request.messages[0].parts;
    let Part::Document(pdf) = &parts[0] else {
        panic!("{parts:?}")
    };
    assert_eq!(pdf.title.as_deref(), Some("report.pdf"));
    assert!(matches!(&pdf.source, DocumentSource::Base64 { data, .. } if data == PDF));
    assert!(
        matches!(&parts[3], Part::Document(d) if d.as_text().as_deref() == Some("One.\n\nTwo."))
    );

    let sent: Value =
        serde_json::from_slice(&anthropic::encode_request(&request, false).unwrap()).unwrap();
    assert_eq!(sent["messages"][0]["content"][0], pdf_block());
    assert_eq!(
        sent["messages"][0]["content"][1],
        body["messages"][0]["content"][1]
    );
    assert_eq!(
        sent["messages"][0]["content"][2],
        body["messages"][0]["content"][2]
    );
    // Inside a tool's result too (Claude Code's Read gives a PDF this way).
    let result = &sent["messages"][2]["content"][0]["content"][0];
    assert_eq!(result["source"]["data"], PDF);
    assert_eq!(result["type"], "document");
}

fn with_document(source: DocumentSource) -> Request {
    let mut d = Document::new(source);
    d.title = Some("report.pdf".into());
    Request::new("m").message(Message::new(
        kite_core::Role::User,
        vec![Part::Document(d), Part::text("Summarize.")],
    ))
}

fn pdf() -> DocumentSource {
    DocumentSource::Base64 {
        media_type: "application/pdf".into(),
        data: PDF.into(),
    }
}

#[test]
fn openai_takes_documents_as_files() {
    let chat = |r: &Request| -> Result<Value, kite_core::Error> {
        let bytes = openai_chat::encode_request(r, openai_chat::Dialect::OpenAi, false)?;
        Ok(serde_json::from_slice(&bytes).unwrap())
    };
    let sent = chat(&with_document(pdf())).unwrap();
    assert_eq!(
        sent["messages"][0]["content"][0],
        json!({"type": "file", "file": {"filename": "report.pdf",
            "file_data": format!("data:application/pdf;base64,{PDF}")}})
    );
    let text = chat(&with_document(DocumentSource::Text {
        text: "Notes.".into(),
    }))
    .unwrap();
    assert_eq!(
        text["messages"][0]["content"][0],
        json!({"type": "text", "text": "report.pdf\n\nNotes."})
    );
    let url = DocumentSource::Url {
        url: "https://example.com/a.pdf".into(),
    };
    assert!(chat(&with_document(url.clone())).is_err());

    let responses = |r: &Request| -> Value {
        let bytes = openai_responses::encode_request(r, &Options::default(), false).unwrap();
        serde_json::from_slice(&bytes).unwrap()
    };
    let sent = responses(&with_document(pdf()));
    assert_eq!(
        sent["input"][0]["content"][0],
        json!({"type": "input_file", "filename": "report.pdf",
            "file_data": format!("data:application/pdf;base64,{PDF}")})
    );
    let sent = responses(&with_document(url));
    assert_eq!(
        sent["input"][0]["content"][0]["file_url"],
        "https://example.com/a.pdf"
    );
    // A PDF in a tool's result, which a tool message cannot hold, follows it in a user
    // message of its own.
    let result = Request::new("m").message(Message::tool_result(ToolResult {
        content: vec![Part::text("Here: "), Part::Document(Document::new(pdf()))],
        ..ToolResult::text("t1", "")
    }));
    let sent = chat(&result).unwrap();
    assert_eq!(
        sent["messages"][0],
        json!({"role": "tool", "tool_call_id": "t1",
            "content": "Here: [shown in the next message]"})
    );
    assert_eq!(sent["messages"][1]["role"], "user");
    assert_eq!(sent["messages"][1]["content"][0]["type"], "file");
}

#[test]
fn openai_clients_files_become_documents() {
    let data = format!("data:application/pdf;base64,{PDF}");
    let chat = json!({"model": "m", "messages": [{"role": "user", "content": [
        {"type": "file", "file": {"filename": "report.pdf", "file_data": data}},
        {"type": "text", "text": "Summarize."}]}]});
    let r = openai_chat::serve::decode_request(&serde_json::to_vec(&chat).unwrap()).unwrap();
    assert!(matches!(&r.request.messages[0].parts[0],
        Part::Document(d) if d.title.as_deref() == Some("report.pdf")
            && matches!(&d.source, DocumentSource::Base64 { data, .. } if data == PDF)));
    let by_id = json!({"model": "m", "messages": [{"role": "user", "content": [
        {"type": "file", "file": {"file_id": "file-1"}}]}]});
    let e = openai_chat::serve::decode_request(&serde_json::to_vec(&by_id).unwrap());
    assert!(format!("{e:?}").contains("file_id"), "{e:?}");

    let responses = json!({"model": "m", "input": [{"role": "user", "content": [
        {"type": "input_file", "filename": "report.pdf", "file_data": data},
        {"type": "input_file", "file_url": "https://example.com/a.pdf"},
        {"type": "input_text", "text": "Summarize."}]}]});
    let r =
        openai_responses::serve::decode_request(&serde_json::to_vec(&responses).unwrap()).unwrap();
    let parts = &r.request.messages[0].parts;
    assert!(matches!(&parts[0], Part::Document(d) if d.title.as_deref() == Some("report.pdf")));
    assert!(
        matches!(&parts[1], Part::Document(d) if matches!(&d.source, DocumentSource::Url { .. }))
    );
}
