//! Conversation state (`kite_store::State`): the bytes a program keeps for kite (in a
//! cookie, a row) come back to it from outside. Any bytes give a state or a typed reason to
//! discard them, never a panic; a state read writes out as bytes that read back as it.
//!
//! Bytes with a wrong digest are refused before their JSON is read, and libFuzzer cannot
//! forge a SHA-256, so the input is also read as a state's body: sealed with a good header
//! and digest (taken from what `to_bytes` writes), then decoded, which reaches the JSON.
#![no_main]

// The file itself, as `config` includes the CLI's settings: the store's backends (SQLite,
// Postgres) are not built for one pure function of bytes.
#[path = "../../crates/kite-store/src/state.rs"]
#[allow(dead_code)]
mod state;

use libfuzzer_sys::fuzz_target;
use sha2::{Digest, Sha256};
use state::State;
use std::sync::OnceLock;

/// The digest's length in the header (documented: SHA-256 cut to 8 bytes).
const DIGEST: usize = 8;

/// The header before the digest (`kite-state` and the format), as `to_bytes` writes it.
fn header() -> &'static [u8] {
    static HEADER: OnceLock<Vec<u8>> = OnceLock::new();
    HEADER.get_or_init(|| {
        let empty = State::default();
        let bytes = empty.to_bytes();
        let body = serde_json::to_vec(&empty).expect("a state as JSON");
        assert!(bytes.ends_with(&body), "the body is not last in the bytes");
        bytes[..bytes.len() - body.len() - DIGEST].to_vec()
    })
}

/// `body` with a good header and digest.
fn seal(body: &[u8]) -> Vec<u8> {
    let mut out = header().to_vec();
    out.extend_from_slice(&Sha256::digest(body)[..DIGEST]);
    out.extend_from_slice(body);
    out
}

fn check(bytes: &[u8]) {
    match State::try_from_bytes(bytes) {
        Ok(state) => {
            // What kite writes it reads back, as it was.
            let written = state.to_bytes();
            assert_eq!(State::try_from_bytes(&written).as_ref(), Ok(&state));
            assert_eq!(State::from_bytes(&written), state);
            // Provider pieces are dropped, not mangled: the result still round-trips.
            let moved = state.clone().for_provider("another");
            assert_eq!(State::try_from_bytes(&moved.to_bytes()), Ok(moved));
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
            // Discarded: the conversation starts fresh.
            assert_eq!(State::from_bytes(bytes), State::default());
        }
    }
}

fuzz_target!(|bytes: &[u8]| {
    check(bytes);
    check(&seal(bytes));
});
