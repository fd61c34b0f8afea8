//! What is wrong with a TOML file, said without its values: kite.toml and the prompts
//! file hold keys and passwords.

/// What is wrong with a TOML file, and where: never its text, which may hold keys and
/// passwords, nor a value the message quotes (between its first and last double quote, or
/// an unknown variant's name).
pub(super) fn wrong(text: &str, e: &toml::de::Error) -> String {
    let message = elide(e.message().trim_end(), "\"", "\"", "\"");
    let message = elide(&message, "unknown variant `", "`, expected", "`");
    let Some(span) = e.span() else {
        return message;
    };
    let before = text.get(..span.start).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    // The key or table of that line, when it is one: names, never values.
    let here = text.lines().nth(line - 1).unwrap_or_default();
    let named = match here.trim_start().starts_with('[') {
        true => Some(here.trim()),
        false => here
            .contains('=')
            .then(|| here.split('=').next().unwrap_or("").trim()),
    };
    let named = named
        .filter(|k| !k.is_empty() && k.len() <= 80)
        .filter(|k| {
            k.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.[] ".contains(c))
        })
        .map(|k| format!(" (`{k}`)"))
        .unwrap_or_default();
    format!("line {line}{named}, column {column}: {message}")
}

/// `message` with what lies between the first `open` and the last `close` after it
/// replaced by an ellipsis (`open`, the ellipsis and `quote`, that is).
fn elide(message: &str, open: &str, close: &str, quote: &str) -> String {
    let Some(start) = message.find(open) else {
        return message.to_owned();
    };
    let from = start + open.len();
    match message[from..].rfind(close) {
        Some(end) => format!(
            "{}{open}…{quote}{}",
            &message[..start],
            &message[from + end + quote.len()..]
        ),
        None => format!("{}{open}…{quote}", &message[..start]),
    }
}
