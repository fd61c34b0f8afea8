//! What of a client's own strings the gateway keeps (the ledger) and says back (errors):
//! short, and on one line.

/// The most bytes kept or repeated of a string a client chose (a model's name): an 8 MiB
/// model name once went into the ledger whole, and back in a 404.
pub(crate) const MAX_SHOWN: usize = 200;

/// `text` as the gateway keeps or repeats it: at most [`MAX_SHOWN`] bytes (cut where a character ends,
/// marked with `…`), control characters (a newline that would forge a line of `kite usage`)
/// as `\u{..}` escapes.
pub(crate) fn shown(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_SHOWN));
    for c in text.chars() {
        let piece = match c.is_control() {
            true => c.escape_unicode().to_string(),
            false => c.to_string(),
        };
        if out.len() + piece.len() > MAX_SHOWN - '…'.len_utf8() {
            out.push('…');
            return out;
        }
        out.push_str(&piece);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clients_string_is_kept_short_and_on_one_line() {
        assert_eq!(shown("gpt-5-nano"), "gpt-5-nano");
        assert_eq!(shown("a\nb\r"), "a\\u{a}b\\u{d}");
        let huge = shown(&"é".repeat(8 << 20));
        assert!(
            huge.len() <= MAX_SHOWN && huge.ends_with('…'),
            "{}",
            huge.len()
        );
    }
}
