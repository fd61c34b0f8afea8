//! The whole-body decoders and error readers: any bytes give a value or a typed error.
#![no_main]

use kite::wire::{anthropic, audio, errors, openai_chat, openai_responses};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (u8, u16, Vec<u8>)| {
    let (which, status, body) = input;
    match which % 10 {
        0 => drop(openai_chat::decode_response(&body)),
        1 => drop(openai_chat::response_events(&body)),
        2 => drop(anthropic::decode_response(&body)),
        3 => drop(anthropic::response_events(&body)),
        4 => drop(openai_responses::decode_response(&body)),
        5 => drop(openai_responses::decode_stored(&body)),
        6 => drop(audio::decode_response(&body, status % 2 == 0)),
        7 => drop(errors::decode_error(status, &body)),
        8 => drop(errors::from_event(&body)),
        _ => {
            let text = String::from_utf8_lossy(&body);
            let _ = kite::http::parse_retry_after(&text, u64::from(status) * 1_000_000);
        }
    }
});
