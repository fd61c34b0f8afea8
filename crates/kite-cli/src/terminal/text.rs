//! Text as the terminal shows it: what came from outside made safe to print, and money.

/// `text` safe to show on a terminal: control characters other than newline and tab (the
/// start of escape sequences that retitle a window or clear a screen), and the bidi
/// overrides and isolates that make text read in another order than it is written
/// (U+202A–U+202E, U+2066–U+2069), are written as `\u{1b}`. For what comes from outside:
/// a model's text, cassettes, servers' names and errors.
pub(crate) fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    text.chars()
        .map(|c| {
            if unsafe_char(c) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Dollars as a person reads them: cents to four places, less with more.
pub(crate) fn dollars(d: f64) -> String {
    match d {
        d if !d.is_finite() || d < 0.0 => "cost unknown".to_owned(),
        0.0 => "$0".to_owned(),
        d if d < 0.0001 => format!("${d:.6}"),
        d if d < 1.0 => format!("${d:.4}"),
        d => format!("${d:.2}"),
    }
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn controls_and_bidi_overrides_are_shown_escaped() {
        // "abc" written to read as "cba": the override is shown, not obeyed.
        assert_eq!(printable("x\u{202e}cba\u{202c}"), "x\\u{202e}cba\\u{202c}");
        assert_eq!(printable("\u{2066}i\u{2069}"), "\\u{2066}i\\u{2069}");
        assert_eq!(printable("\u{1b}[2J"), "\\u{1b}[2J");
        // Right-to-left text itself, and the marks that only nudge it, stay as they are.
        assert_eq!(printable("שלום \u{200f}ok\n\t"), "שלום \u{200f}ok\n\t");
    }
}
