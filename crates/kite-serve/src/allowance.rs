//! What a request may weigh: the largest body a key may send and the stored responses it
//! may keep ([`Sizes`], each key's own or the gateway's), and the bytes of request bodies
//! the whole gateway decodes at once ([`Decoding`]).
//!
//! Decoding a request costs many times its body: its JSON as values, the conversation as
//! kite's types, the body written again for the provider. A tool-heavy 15 MiB body once
//! took about 245 MiB, so 32 of them at once took 5 GiB. Each request holds its body's
//! bytes of [`Decoding`]'s allowance from once its body is read (a body sent slowly holds
//! none) until its answer has begun (the provider's first event: by then what decoding
//! made is gone), and waits [`WAIT`] at most for them before a 503 in its API's shape says
//! to come back.

use crate::errors::{Api, Kind, error};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The most bytes of request bodies decoded at once, by default.
pub const MAX_DECODING: usize = 64 * 1024 * 1024;

/// What a key's stored responses may hold together, by default.
pub const MAX_STORED: u64 = 256 * 1024 * 1024;

/// How long a request waits for its share of the decoding allowance.
const WAIT: Duration = Duration::from_secs(3);

/// What one key may send and keep (none: the gateway's default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sizes {
    /// The largest request body, in bytes.
    pub max_body: Option<u64>,
    /// The most its stored responses may hold together, in bytes.
    pub max_stored: Option<u64>,
}

impl Sizes {
    /// `self`, with what it leaves unset taken from `default`.
    pub fn or(self, default: Sizes) -> Sizes {
        Sizes {
            max_body: self.max_body.or(default.max_body),
            max_stored: self.max_stored.or(default.max_stored),
        }
    }

    /// The largest body, in bytes, within the gateway's own limit.
    pub(crate) fn body_limit(&self) -> usize {
        self.max_body
            .and_then(|b| usize::try_from(b).ok())
            .unwrap_or(crate::MAX_BODY)
            .min(crate::MAX_BODY)
    }
}

/// The bytes of request bodies decoded at once, across the gateway, in KiB.
pub(crate) struct Decoding {
    permits: Arc<Semaphore>,
    /// Its size in KiB: a body larger than the whole allowance waits for all of it.
    total: u32,
}

impl Decoding {
    /// An allowance of `bytes`.
    pub(crate) fn new(bytes: usize) -> Self {
        let total = u32::try_from(bytes.div_ceil(1024).max(1)).unwrap_or(u32::MAX >> 4);
        Self {
            permits: Arc::new(Semaphore::new(total as usize)),
            total,
        }
    }

    /// Holds `bytes` of the allowance for a request of `api`, or refuses it with a 503 once
    /// they could not be had within [`WAIT`].
    pub(crate) async fn hold(&self, api: Api, bytes: usize) -> Result<Held, Box<Response>> {
        let kib = u32::try_from(bytes.div_ceil(1024))
            .unwrap_or(u32::MAX)
            .clamp(1, self.total);
        let permit = self.permits.clone().acquire_many_owned(kib);
        match tokio::time::timeout(WAIT, permit).await {
            Ok(Ok(permit)) => Ok(Held(Arc::new(Mutex::new(Some(permit))))),
            _ => {
                let mut refused = error(
                    api,
                    StatusCode::SERVICE_UNAVAILABLE,
                    "this gateway is decoding as many large requests as it may at once; try \
                     again in a moment",
                    Kind::Unavailable,
                );
                refused
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
                Err(Box::new(refused))
            }
        }
    }
}

/// A request's share of the decoding allowance, given back by [`Held::release`] once its
/// answer has begun, or when the last of its clones goes.
#[derive(Clone, Debug)]
pub(crate) struct Held(Arc<Mutex<Option<OwnedSemaphorePermit>>>);

impl Held {
    /// Gives the share back.
    pub(crate) fn release(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_allowance_is_shared_and_refused_past_its_wait_then_given_back() {
        let decoding = Decoding::new(4 << 20);
        let first = decoding.hold(Api::Chat, 3 << 20).await.unwrap();
        // A body larger than the whole allowance waits for all of it, not for ever.
        let refused = decoding.hold(Api::Chat, 64 << 20).await.unwrap_err();
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(refused.headers()[header::RETRY_AFTER], "2");
        let small = decoding.hold(Api::Chat, 512 << 10).await.unwrap();
        first.release();
        let whole = decoding.hold(Api::Chat, 64 << 20);
        drop(small);
        assert!(whole.await.is_ok());
    }

    #[test]
    fn a_keys_sizes_fall_back_to_the_gateways_within_its_limit() {
        let key = Sizes {
            max_body: Some(1 << 20),
            max_stored: None,
        };
        let gateway = Sizes {
            max_body: Some(4 << 20),
            max_stored: Some(8 << 20),
        };
        let sizes = key.or(gateway);
        assert_eq!(sizes.body_limit(), 1 << 20);
        assert_eq!(sizes.max_stored, Some(8 << 20));
        let huge = Sizes {
            max_body: Some(u64::MAX),
            max_stored: None,
        };
        assert_eq!(huge.body_limit(), crate::MAX_BODY);
    }
}
