//! Decodes the OpenAI stream corpus in a loop, for profilers.
use kite_wire::StreamDecoder;
use kite_wire::openai_chat::ChatStreamDecoder;

fn main() {
    let bodies = kite_bench::chat_streams("openai");
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    let mut out = Vec::new();
    let mut n = 0;
    for _ in 0..rounds {
        for (_, body) in &bodies {
            out.clear();
            let mut dec = ChatStreamDecoder::new();
            let _ = dec.decode(body, &mut out);
            let _ = dec.finish(&mut out);
            n += out.len();
        }
    }
    println!("{n}");
}
