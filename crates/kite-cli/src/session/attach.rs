//! `-a FILE`: files attached to the question. An image goes as an image part, base64 with its
//! media type; a PDF as a document, for the providers that read one (the others say they
//! do not); any other file must be text, and goes as a text part naming the file.

use kite::{Error, Message, Part, Role};
use std::path::Path;

/// The most an attachment may hold: far above what a provider accepts in one message.
const MAX: u64 = 20 * 1024 * 1024;

/// The user's question with its attachments.
pub(crate) fn question(prompt: String, files: &[std::path::PathBuf]) -> Result<Message, Error> {
    let mut parts = vec![Part::text(prompt)];
    for f in files {
        parts.push(part(f)?);
    }
    Ok(Message::new(Role::User, parts))
}

pub(crate) fn part(path: &Path) -> Result<Part, Error> {
    let cannot = |why: String| Error::Config(format!("cannot attach {}: {why}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| cannot(e.to_string()))?;
    if !meta.is_file() {
        return Err(cannot("not a file".into()));
    }
    if meta.len() > MAX {
        return Err(cannot(format!("larger than {} MiB", MAX >> 20)));
    }
    let bytes = std::fs::read(path).map_err(|e| cannot(e.to_string()))?;
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let image = match ext.as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "webp" => Some("image/webp"),
        _ => None,
    };
    use base64::Engine;
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    if let Some(media_type) = image {
        let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
        return Ok(Part::image_base64(media_type, data));
    }
    if ext == "pdf" || bytes.starts_with(b"%PDF-") {
        if !bytes.starts_with(b"%PDF-") {
            return Err(cannot("its name says PDF, and it is not one".into()));
        }
        let mut document = kite::Document::new(kite::DocumentSource::Base64 {
            media_type: "application/pdf".into(),
            data: base64::engine::general_purpose::STANDARD.encode(&bytes),
        });
        document.title = Some(name);
        return Ok(Part::Document(document));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| cannot("neither an image (png, jpeg, gif, webp), a PDF nor text".into()))?;
    Ok(Part::text(format!("{name}:\n{text}")))
}
