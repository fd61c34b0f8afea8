//! Conversation state as bytes: what round-trips, and what is discarded.

use kite_core::{Message, Metadata, Part, Reasoning, Role, ToolCall};
use kite_store::{State, StateError};
use proptest::prelude::*;
use serde_json::json;

fn sample() -> State {
    let mut call = ToolCall::new("c1", "now", "{}");
    call.metadata = Metadata::with("responses", "item_id", json!("fc_1"));
    let answer = Message::new(
        Role::Assistant,
        vec![
            Part::Reasoning(Reasoning {
                text: "thinking".into(),
                metadata: Metadata::with("anthropic", "signature", json!("sig")),
            }),
            Part::ToolCall(call),
        ],
    );
    let mut s = State::new(
        Some("anthropic".into()),
        vec![Message::user("time?"), answer],
    );
    s.note("the user opened the clock page");
    s
}

#[test]
fn state_round_trips_through_bytes() {
    let s = sample();
    assert_eq!(State::try_from_bytes(&s.to_bytes()), Ok(s.clone()));
    assert_eq!(State::from_bytes(&s.to_bytes()), s);
    assert_eq!(
        s.messages.last().unwrap().text(),
        "the user opened the clock page"
    );
}

#[test]
fn bad_bytes_are_discarded_and_the_conversation_starts_fresh() {
    let good = sample().to_bytes();
    let mut flipped = good.clone();
    let last = flipped.len() - 3;
    flipped[last] ^= 0x20;
    let mut future = good.clone();
    future[b"kite-state".len()] = 9;
    for (bytes, why) in [
        (Vec::new(), StateError::NotState),
        (b"{\"messages\":[]}".to_vec(), StateError::NotState),
        (good[..good.len() / 2].to_vec(), StateError::Damaged),
        (good[..11].to_vec(), StateError::Damaged),
        (flipped, StateError::Damaged),
        (future, StateError::UnknownFormat(9)),
    ] {
        assert_eq!(State::try_from_bytes(&bytes), Err(why.clone()), "{why}");
        assert_eq!(State::from_bytes(&bytes), State::default());
    }
}

#[test]
fn provider_pieces_stay_with_their_provider_and_go_when_it_changes() {
    let same = sample().for_provider("anthropic");
    assert_eq!(same, sample());
    let moved = sample().for_provider("openai");
    assert_eq!(moved.provider.as_deref(), Some("openai"));
    let parts: Vec<&Part> = moved.messages.iter().flat_map(|m| &m.parts).collect();
    assert!(!parts.iter().any(|p| matches!(p, Part::Reasoning(_))));
    let call = moved.messages[1].tool_calls().next().unwrap();
    assert!(call.metadata.is_empty());
    assert_eq!(moved.messages.len(), 3);
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = State::from_bytes(&bytes);
    }

    #[test]
    fn any_change_to_good_bytes_is_caught(at in 0usize..10_000, bit in 0u8..8) {
        let good = sample().to_bytes();
        let mut bad = good.clone();
        let i = at % bad.len();
        bad[i] ^= 1 << bit;
        prop_assert_ne!(State::try_from_bytes(&bad), Ok(sample()));
    }
}
