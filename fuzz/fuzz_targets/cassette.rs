//! What a cassette reads from disk and from requests: its index, the normalizer (JSON,
//! multipart uploads, text) and the key scanner. Any bytes give a value or a typed error.
#![no_main]

use kite::http::cassette::{Recording, Rules, scan, scan_body};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|input: (u8, String, Vec<u8>)| {
    let (which, boundary, body) = input;
    match which % 4 {
        0 => {
            if let Ok(r) = Recording::from_json(Path::new("cassette"), &body) {
                // What an index accepts names plain files only.
                for ex in &r.exchanges {
                    for name in [&ex.request.body, &ex.response.body] {
                        assert!(!name.contains('/') && name != ".." && !name.is_empty());
                    }
                }
            }
        }
        1 => {
            let ct = format!("multipart/form-data; boundary={boundary}");
            let _ = Rules::default().normalize(Some(&ct), &body).pretty();
        }
        2 => {
            let ct = if boundary.len() % 2 == 0 {
                "application/json"
            } else {
                "text/plain"
            };
            let _ = Rules::default().normalize(Some(ct), &body).pretty();
        }
        _ => {
            let found = scan_body(&body);
            // Every key the plain scan sees is among what the body scan reports.
            for f in scan(&String::from_utf8_lossy(&body)) {
                assert!(found.contains(&f), "{f:?} missing from {found:?}");
            }
        }
    }
});
