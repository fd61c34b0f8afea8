//! The scanner and the normalizer see whatever was sent and received: they never panic, and
//! the scanner finds a key wherever it is planted.

use kite_http::cassette::{Rules, scan};
use proptest::prelude::*;

proptest! {
    #[test]
    fn scanning_any_text_never_panics(text in any::<String>()) {
        for f in scan(&text) {
            prop_assert!(f.offset + f.len <= text.len());
            prop_assert!(text[f.offset..].starts_with(f.kind));
        }
    }

    #[test]
    fn a_planted_key_is_found_anywhere(
        before in "[ -~]{0,40}",
        after in "[ -~]{0,40}",
        key in "[A-Za-z0-9]{24,60}",
    ) {
        let text = format!("{before} sk-proj-{key} {after}");
        let at = before.len() + 1;
        prop_assert!(scan(&text).iter().any(|f| f.offset == at && f.kind == "sk-"));
    }

    #[test]
    fn normalizing_any_body_never_panics(
        body in proptest::collection::vec(any::<u8>(), 0..400),
        multipart in any::<bool>(),
    ) {
        let ct = multipart.then_some("multipart/form-data; boundary=xyz");
        let _ = Rules::default().normalize(ct, &body).pretty();
    }
}
