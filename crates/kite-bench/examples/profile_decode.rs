//! Decodes the OpenAI stream corpus in a loop, for profilers and instruction counters
//! (`valgrind --tool=callgrind`), which are steadier than wall time on a shared machine.
//!
//! `profile_decode [kite|async-openai|floor] [ROUNDS]`

use async_openai::types::chat::CreateChatCompletionStreamResponse;
use futures::StreamExt;
use kite_wire::StreamDecoder;
use kite_wire::openai_chat::ChatStreamDecoder;

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "kite".into());
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let bodies = kite_bench::chat_streams("openai");
    let payloads: Vec<String> = bodies
        .iter()
        .flat_map(|(_, b)| kite_bench::payloads(b))
        .filter(|p| p != "[DONE]")
        .collect();
    let mut out = Vec::new();
    let mut n = 0;
    for _ in 0..rounds {
        match mode.as_str() {
            "kite" => {
                for (_, body) in &bodies {
                    out.clear();
                    let mut dec = ChatStreamDecoder::new();
                    let _ = dec.decode(body, &mut out);
                    let _ = dec.finish(&mut out);
                    n += out.len();
                }
            }
            "async-openai" => {
                for (_, body) in &bodies {
                    let bytes = bytes::Bytes::copy_from_slice(body);
                    let stream =
                        eventsource_stream::Eventsource::eventsource(futures::stream::iter([
                            Ok::<_, std::io::Error>(bytes),
                        ]));
                    futures::executor::block_on(async {
                        futures::pin_mut!(stream);
                        while let Some(Ok(ev)) = stream.next().await {
                            if ev.data == "[DONE]" {
                                break;
                            }
                            if let Ok(c) =
                                serde_json::from_str::<CreateChatCompletionStreamResponse>(&ev.data)
                            {
                                n += c.choices.len();
                            }
                        }
                    });
                }
            }
            _ => {
                for p in &payloads {
                    if serde_json::from_str::<serde::de::IgnoredAny>(p).is_ok() {
                        n += 1;
                    }
                }
            }
        }
    }
    println!("{n}");
}
