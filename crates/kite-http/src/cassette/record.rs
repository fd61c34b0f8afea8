//! Recording an exchange: the request is sent on, the response passed back as it arrives
//! and written beside the index once complete, after a scan for anything like a key.

use super::error::{CassetteErrorKind, cassette_error};
use super::key_scan::scan_body;
use super::recording::{
    self, Chunk, Exchange, INDEX, StoredRequest, StoredResponse, io_error, timing_text,
};
use super::{Normalized, Shared};
use crate::{ByteStream, HttpRequest, HttpResponse};
use bytes::Bytes;
use futures_util::StreamExt;
use http::HeaderMap;
use kite_core::Error;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use tokio::time::Instant;

/// Request headers worth keeping (never credentials).
const REQUEST_HEADERS: &[&str] = &[
    "content-type",
    "accept",
    "anthropic-version",
    "anthropic-beta",
    "openai-beta",
];
/// Response headers worth keeping.
const RESPONSE_HEADERS: &[&str] = &["content-type", "retry-after", "x-should-retry"];

impl Shared {
    pub(super) async fn record(
        self: Arc<Self>,
        n: usize,
        request: HttpRequest,
        timing: bool,
    ) -> Result<HttpResponse, Error> {
        let normalized = self.normalize(&request);
        let ext = match normalized {
            Normalized::Json(_) => "json",
            Normalized::Text(_) => "txt",
        };
        let stored_request = StoredRequest {
            method: request.method.to_string(),
            url: request.url.clone(),
            headers: keep(&request.headers, REQUEST_HEADERS),
            body: format!("{n:03}-request.{ext}"),
        };
        let request_text = normalized.pretty();
        self.check_writable()?;
        let sent = Instant::now();
        let resp = self.transport.send(request).await?;
        let headers = keep(&resp.headers, RESPONSE_HEADERS);
        let ext = match headers.get("content-type").map(String::as_str) {
            Some(ct) if ct.starts_with("text/event-stream") => "sse",
            Some(ct) if ct.contains("json") => "json",
            _ => "txt",
        };
        let stored = Exchange {
            request: stored_request,
            response: StoredResponse {
                status: resp.status,
                headers,
                body: format!("{n:03}-response.{ext}"),
                timing: None,
            },
        };
        // The body is passed on as it arrives and written once it is complete.
        let mut upstream = resp.body;
        let this = self.clone();
        let body: ByteStream = Box::pin(async_stream(move |tx| async move {
            let mut all = Vec::new();
            let mut chunks = Vec::new();
            while let Some(chunk) = upstream.next().await {
                match chunk {
                    Ok(b) => {
                        all.extend_from_slice(&b);
                        if timing && !b.is_empty() {
                            chunks.push(Chunk {
                                end: all.len(),
                                at_ms: sent.elapsed().as_millis() as u64,
                            });
                        }
                        if tx.send(Ok(b)).await.is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        return;
                    }
                }
            }
            let chunks = timing.then_some(chunks);
            if let Err(e) = this.write(n, stored, &request_text, &all, chunks) {
                let _ = tx.send(Err(e)).await;
            }
        }));
        Ok(HttpResponse {
            status: resp.status,
            headers: resp.headers,
            body,
        })
    }

    /// Fails before a request is paid for when its recording could not be written.
    fn check_writable(&self) -> Result<(), Error> {
        if self.lock().writable {
            return Ok(());
        }
        let dir = &self.dir;
        // A folder that is a link would have recording write (and clear old exchanges)
        // wherever it points.
        if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(cassette_error(
                CassetteErrorKind::Invalid,
                format!(
                    "cassette {}: the folder is a link; record into a real folder",
                    dir.display()
                ),
            ));
        }
        std::fs::create_dir_all(dir).map_err(|e| io_error("create", dir, e))?;
        let probe = recording::fresh(dir, INDEX, |_| Ok(()))?;
        let _ = std::fs::remove_file(&probe);
        self.lock().writable = true;
        Ok(())
    }

    /// Writes exchange `n` and the index, after checking that nothing looks like a key.
    fn write(
        &self,
        n: usize,
        mut ex: Exchange,
        request: &str,
        response: &[u8],
        chunks: Option<Vec<Chunk>>,
    ) -> Result<(), Error> {
        let headers = format!(
            "{:?}{:?}{}",
            ex.request.headers, ex.response.headers, ex.request.url
        );
        for (what, text) in [
            ("request body", request.as_bytes()),
            ("response body", response),
            ("headers or URL", headers.as_bytes()),
        ] {
            if let Some(f) = scan_body(text).first() {
                return Err(cassette_error(
                    CassetteErrorKind::Secret,
                    format!(
                        "cassette {}: refusing to write exchange {n}: its {what} holds what \
                         looks like a key ({}…, {} characters, at byte {}); mask it with a rule",
                        self.dir.display(),
                        f.kind,
                        f.len,
                        f.offset
                    ),
                ));
            }
        }
        let dir = &self.dir;
        let put = |file: &str, bytes: &[u8]| recording::write_file(dir, file, bytes);
        std::fs::create_dir_all(dir).map_err(|e| io_error("create", dir, e))?;
        if n == 1 {
            remove_exchange_files(dir)?;
        }
        put(
            &ex.request.body,
            format!("{}\n", request.trim_end()).as_bytes(),
        )?;
        put(&ex.response.body, response)?;
        if let Some(chunks) = chunks {
            let file = format!("{n:03}-response.timing.json");
            put(&file, timing_text(&chunks).as_bytes())?;
            ex.response.timing = Some(file);
        }
        let recording = {
            let mut st = self.lock();
            st.recording.kite_cassette = recording::FORMAT;
            st.recording.exchanges.truncate(n - 1);
            st.recording.exchanges.push(ex);
            st.recording.clone()
        };
        recording.write(dir)
    }
}

/// Removes the exchange files (`001-…`) of an earlier recording, which a new one replaces.
fn remove_exchange_files(dir: &Path) -> Result<(), Error> {
    let entries = std::fs::read_dir(dir).map_err(|e| io_error("read", dir, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.as_encoded_bytes();
        let ours = name.len() > 4 && name[..3].iter().all(u8::is_ascii_digit) && name[3] == b'-';
        if ours {
            std::fs::remove_file(entry.path()).map_err(|e| io_error("remove", &entry.path(), e))?;
        }
    }
    Ok(())
}

/// A stream fed by a task through a channel (the body is copied and written as it passes).
fn async_stream<F, Fut>(f: F) -> impl futures_core::Stream<Item = Result<Bytes, Error>> + Send
where
    F: FnOnce(tokio::sync::mpsc::Sender<Result<Bytes, Error>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    tokio::spawn(f(tx));
    futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|x| (x, rx)) })
}

fn keep(headers: &HeaderMap, names: &[&str]) -> BTreeMap<String, String> {
    names
        .iter()
        .filter_map(|n| Some((n.to_string(), headers.get(*n)?.to_str().ok()?.to_owned())))
        .collect()
}
