//! The prompt: kite's messages rendered with the model's own chat template.
//!
//! The template is the GGUF's `tokenizer.chat_template`, a Jinja program, run with
//! minijinja (llama.cpp's own template function only recognises well-known formats and does
//! not run the Jinja). Tools are described in the system message in the Hermes format that
//! most open models are trained on: `<tools>` signatures in, `<tool_call>` JSON out.

use kite_core::{Error, Message, Part, Request, Role, ToolChoice};
use serde::Serialize;
use serde_json::json;

/// ChatML, for models whose file carries no template.
pub(crate) const CHATML: &str = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// One message as chat templates expect it.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct TemplateMessage {
    pub role: &'static str,
    pub content: String,
}

/// The text a tool call is written as, in the model's turn.
pub(crate) fn tool_call_text(name: &str, arguments: &serde_json::Value) -> String {
    format!(
        "<tool_call>\n{}\n</tool_call>",
        json!({"name": name, "arguments": arguments})
    )
}

/// The messages to render: a system message (the request's, or `default_system`), with the
/// tools described when the model may call them, then the history.
pub(crate) fn messages(request: &Request, default_system: &str) -> Vec<TemplateMessage> {
    let mut system = request
        .system
        .clone()
        .unwrap_or_else(|| default_system.to_owned());
    let offer_tools = !request.tools.is_empty() && request.tool_choice != Some(ToolChoice::None);
    if offer_tools {
        system.push_str(
            "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n\
             You are provided with function signatures within <tools></tools> XML tags:\n<tools>",
        );
        for t in &request.tools {
            let sig = json!({"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.parameters}});
            system.push('\n');
            system.push_str(&sig.to_string());
        }
        system.push_str(
            "\n</tools>\n\nFor each function call, return a json object with function name and \
             arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n\
             {\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>",
        );
    }
    let mut out = vec![TemplateMessage {
        role: "system",
        content: system,
    }];
    for m in &request.messages {
        convert(m, &mut out);
    }
    out
}

fn convert(m: &Message, out: &mut Vec<TemplateMessage>) {
    let mut content = String::new();
    let mut results = Vec::new();
    for p in &m.parts {
        match p {
            Part::Text { text } | Part::Refusal { text } => content.push_str(text),
            Part::Image { .. } => content.push_str("[an image the model cannot see]"),
            Part::Document(d) => match d.as_text() {
                Some(text) => content.push_str(&text),
                None => content.push_str("[a document the model cannot read]"),
            },
            Part::ToolCall(c) => {
                if !content.is_empty() {
                    content.push('\n');
                }
                let args = c
                    .parse_arguments()
                    .unwrap_or_else(|_| serde_json::Value::String(c.arguments.clone()));
                content.push_str(&tool_call_text(&c.name, &args));
            }
            Part::ToolResult(r) => results.push(format!(
                "<tool_response>\n{}\n</tool_response>",
                r.text_content()
            )),
            // Reasoning is not shown to the model again, nor parts it cannot read.
            _ => {}
        }
    }
    if !results.is_empty() {
        out.push(TemplateMessage {
            role: "tool",
            content: results.join("\n"),
        });
    }
    let role = match m.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => return,
    };
    if !content.is_empty() || m.role == Role::Assistant {
        out.push(TemplateMessage { role, content });
    }
}

/// Renders `messages` with `template`, ending with the assistant's turn opened.
pub(crate) fn render(
    template: &str,
    messages: &[TemplateMessage],
    bos: &str,
    eos: &str,
) -> Result<String, Error> {
    let mut env = minijinja::Environment::new();
    minijinja_raise(&mut env);
    env.add_template("chat", template)
        .map_err(|e| Error::Engine(format!("the model's chat template does not parse: {e}")))?;
    let t = env
        .get_template("chat")
        .map_err(|e| Error::Engine(e.to_string()))?;
    t.render(minijinja::context! {
        messages => minijinja::value::Serde(messages),
        add_generation_prompt => true,
        bos_token => bos,
        eos_token => eos,
    })
    .map_err(|e| Error::Engine(format!("the model's chat template failed: {e}")))
}

fn minijinja_raise(env: &mut minijinja::Environment<'_>) {
    env.add_function(
        "raise_exception",
        |msg: String| -> Result<String, minijinja::Error> {
            Err(minijinja::Error::new(
                minijinja::ErrorKind::InvalidOperation,
                msg,
            ))
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use kite_core::{ToolCall, ToolResult, ToolSpec};

    /// SmolLM2-135M-Instruct's template, as its GGUF carries it.
    const SMOLLM: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

    #[test]
    fn a_conversation_renders_as_chatml_with_kites_system_prompt() {
        let req = Request::new("m").message(Message::user("Hi"));
        let out = render(
            SMOLLM,
            &messages(&req, "You are a helpful assistant."),
            "",
            "",
        )
        .unwrap();
        assert_eq!(
            out,
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
        // The same with the ChatML fallback.
        assert_eq!(
            out,
            render(
                CHATML,
                &messages(&req, "You are a helpful assistant."),
                "",
                ""
            )
            .unwrap()
        );
    }

    #[test]
    fn tools_calls_and_results_are_written_in_the_hermes_format() {
        let mut req = Request::new("m")
            .system("Be exact.")
            .tool(ToolSpec::new(
                "calculate",
                "Arithmetic",
                json!({"type": "object"}),
            ))
            .message(Message::user("2+2?"))
            .message(Message::new(
                Role::Assistant,
                vec![Part::ToolCall(ToolCall::new(
                    "c1",
                    "calculate",
                    r#"{"expression":"2+2"}"#,
                ))],
            ))
            .message(Message::tool_result(ToolResult::text("c1", "4")));
        let msgs = messages(&req, "unused");
        assert!(msgs[0].content.starts_with("Be exact.\n\n# Tools"));
        assert!(msgs[0].content.contains(r#"{"type":"function","function":{"name":"calculate","description":"Arithmetic","parameters":{"type":"object"}}}"#));
        assert_eq!(
            msgs[2].content,
            "<tool_call>\n{\"name\":\"calculate\",\"arguments\":{\"expression\":\"2+2\"}}\n</tool_call>"
        );
        assert_eq!(
            msgs[3],
            TemplateMessage {
                role: "tool",
                content: "<tool_response>\n4\n</tool_response>".into()
            }
        );
        req.tool_choice = Some(ToolChoice::None);
        assert!(!messages(&req, "x")[0].content.contains("<tools>"));
    }

    #[test]
    fn a_broken_template_is_a_typed_error() {
        let err = render("{% for %}", &[], "", "").unwrap_err();
        assert!(matches!(err, Error::Engine(m) if m.contains("does not parse")));
        let err = render("{{ raise_exception('no tools here') }}", &[], "", "").unwrap_err();
        assert!(matches!(err, Error::Engine(m) if m.contains("no tools here")));
    }
}
