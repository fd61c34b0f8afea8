//! Retries with exponential backoff and jitter, for any transport.

use crate::{HttpRequest, HttpResponse, Transport, TransportFuture};
use kite_core::{ApiErrorKind, Error, TransportErrorKind};
use std::time::Duration;

/// When and how long to wait before sending a failed request again.
///
/// Retried: 408, 429 (but not when the quota is spent or the request alone is over the
/// limit), 500, 502, 503, 504 and the 52x of proxies and Anthropic's overload (not 501, 505
/// and the like, which say the request will never do), connections closed before the
/// response headers, and, once, a refused connection (a server restarting; one that is not
/// there is said at once).
/// A server that let the response deadline pass is not asked again, since that would only
/// double the wait. A response whose body has started streaming is never retried: the
/// retry happens before the caller sees anything.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt. Default 3.
    pub max_retries: u32,
    /// First delay after a 429. Default 5 s.
    pub rate_limit_base: Duration,
    /// First delay after a 408 or 5xx. Default 2 s.
    pub server_error_base: Duration,
    /// First delay after a connection failure. Default 1 s.
    pub transport_base: Duration,
    /// No single wait is longer; a `Retry-After` beyond it is not waited for. Default 60 s.
    pub max_delay: Duration,
    /// No retry begins whose wait would end later than this after the first attempt
    /// began: the last failure is returned instead, rather than a caller's deadline passing
    /// in a wait that says nothing of why. Default none; [`Endpoint`] sets it to the wait
    /// for an answer to start.
    ///
    /// [`Endpoint`]: https://docs.rs/kite/latest/kite/struct.Endpoint.html
    pub give_up_after: Option<Duration>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            rate_limit_base: Duration::from_secs(5),
            server_error_base: Duration::from_secs(2),
            transport_base: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
            give_up_after: None,
        }
    }
}

impl RetryPolicy {
    /// No retries.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// `base · 2^attempt`, capped, with jitter: a random point in its upper half.
    fn backoff(&self, base: Duration, attempt: u32) -> Duration {
        let exp = base
            .saturating_mul(1u32 << attempt.min(16))
            .min(self.max_delay);
        exp.mul_f64(0.5 + fastrand::f64() * 0.5)
    }
}

/// Wraps a transport with a [`RetryPolicy`].
#[derive(Clone, Debug)]
pub struct Retry<T> {
    inner: T,
    policy: RetryPolicy,
}

impl<T> Retry<T> {
    /// `inner` retried by `policy`.
    pub fn new(inner: T, policy: RetryPolicy) -> Self {
        Self { inner, policy }
    }
}

enum Verdict {
    Done(Result<HttpResponse, Error>),
    RetryAfter(Duration, Result<HttpResponse, Error>),
}

impl<T: Transport> Retry<T> {
    async fn judge(&self, result: Result<HttpResponse, Error>, attempt: u32) -> Verdict {
        let p = &self.policy;
        let resp = match result {
            Ok(resp) => resp,
            // A server that took the whole deadline without answering is not asked again:
            // the wait would only double.
            // A refused connection, once, soon.
            Err(Error::Transport(t)) if t.kind == TransportErrorKind::Connect => {
                if attempt > 0 {
                    return Verdict::Done(Err(Error::Transport(t)));
                }
                let delay = p.backoff(p.transport_base / 4, 0);
                return Verdict::RetryAfter(delay, Err(Error::Transport(t)));
            }
            Err(Error::Transport(t))
                if matches!(
                    t.kind,
                    TransportErrorKind::ConnectTimeout | TransportErrorKind::ConnectionClosed
                ) =>
            {
                let delay = p.backoff(p.transport_base, attempt);
                return Verdict::RetryAfter(delay, Err(Error::Transport(t)));
            }
            Err(e) => return Verdict::Done(Err(e)),
        };
        let status = resp.status;
        let base = match status {
            429 => p.rate_limit_base,
            408 | 500 | 502..=504 | 520..=529 => p.server_error_base,
            _ => return Verdict::Done(Ok(resp)),
        };
        let should_retry = resp.header("x-should-retry").map(|v| v.trim() == "true");
        let retry_after = resp.retry_after();
        let headers = resp.headers.clone();
        // Read the (small) error body to tell a spent quota, or a request too large for the
        // limit, from a passing rate limit; hand it on unchanged either way.
        let body = match resp.bytes_up_to(HttpResponse::MAX_ERROR_BODY).await {
            Ok(b) => b,
            Err(e) => return Verdict::RetryAfter(p.backoff(base, attempt), Err(e)),
        };
        let hopeless = matches!(
            kite_wire::errors::decode_error(status, &body).kind,
            ApiErrorKind::QuotaExceeded | ApiErrorKind::RequestTooLarge
        );
        let resp = HttpResponse::from_bytes(status, headers, body);
        if hopeless || should_retry == Some(false) {
            return Verdict::Done(Ok(resp));
        }
        let delay = match retry_after {
            Some(d) if d > p.max_delay => return Verdict::Done(Ok(resp)),
            Some(d) => d,
            None => p.backoff(base, attempt),
        };
        Verdict::RetryAfter(delay, Ok(resp))
    }
}

impl<T: Transport> Transport for Retry<T> {
    fn send(&self, request: HttpRequest) -> TransportFuture<'_> {
        Box::pin(async move {
            let began = tokio::time::Instant::now();
            let mut attempt = 0;
            loop {
                let result = self.inner.send(request.clone()).await;
                match self.judge(result, attempt).await {
                    Verdict::Done(r) => return r,
                    Verdict::RetryAfter(_, r) if attempt >= self.policy.max_retries => return r,
                    Verdict::RetryAfter(delay, r)
                        if self
                            .policy
                            .give_up_after
                            .is_some_and(|limit| began.elapsed() + delay > limit) =>
                    {
                        return r;
                    }
                    Verdict::RetryAfter(delay, r) => {
                        let why = match &r {
                            Ok(resp) => format!("HTTP {}", resp.status),
                            Err(e) => e.to_string(),
                        };
                        tracing::warn!(attempt = attempt + 1, ?delay, %why, "retrying request");
                        tokio::time::sleep(delay).await;
                        attempt += 1;
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_within_jitter_and_caps() {
        let p = RetryPolicy::default();
        for attempt in 0..3 {
            let full = Duration::from_secs(2) * (1 << attempt);
            for _ in 0..50 {
                let d = p.backoff(Duration::from_secs(2), attempt);
                assert!(d >= full / 2 && d <= full, "{d:?} for attempt {attempt}");
            }
        }
        assert!(p.backoff(Duration::from_secs(5), 10) <= p.max_delay);
    }

    /// A transport whose every connection fails with `kind`, counting its attempts.
    struct Refused(std::sync::atomic::AtomicU32, TransportErrorKind);

    impl Transport for Refused {
        fn send(&self, _: HttpRequest) -> TransportFuture<'_> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let kind = self.1;
            Box::pin(async move { Err(Error::transport(kind, "it failed")) })
        }
    }

    /// How many attempts, and after how long the failure came back, under `give_up_after`,
    /// for connections closed before an answer.
    fn attempts(give_up_after: Option<Duration>) -> (u32, Duration, Error) {
        attempts_of(TransportErrorKind::ConnectionClosed, give_up_after)
    }

    fn attempts_of(
        kind: TransportErrorKind,
        give_up_after: Option<Duration>,
    ) -> (u32, Duration, Error) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(async {
            let policy = RetryPolicy {
                give_up_after,
                ..RetryPolicy::default()
            };
            let refused = Refused(0.into(), kind);
            let began = tokio::time::Instant::now();
            let retry = Retry::new(&refused, policy);
            let err = match retry
                .send(HttpRequest::new(http::Method::GET, "http://x/"))
                .await
            {
                Ok(_) => panic!("a refused connection succeeded"),
                Err(e) => e,
            };
            (refused.0.into_inner(), began.elapsed(), err)
        })
    }

    #[test]
    fn retries_stop_before_a_wait_would_pass_the_limit() {
        // 1 s base: waits in [0.5, 1], [1, 2], [2, 4] s.
        let (all, took, _) = attempts(None);
        assert_eq!(all, 4);
        assert!(took >= Duration::from_millis(3500), "{took:?}");
        // The first wait alone may end past 0.4 s: one attempt, its own error, at once.
        let (one, took, err) = attempts(Some(Duration::from_millis(400)));
        assert_eq!((one, took), (1, Duration::ZERO));
        assert!(
            matches!(&err, Error::Transport(t) if t.kind == TransportErrorKind::ConnectionClosed),
            "{err:?}"
        );
        // Past 1 s, the first wait fits and the third cannot: two or three attempts, all
        // within the limit.
        let (some, took, _) = attempts(Some(Duration::from_secs(3)));
        assert!((2..=3).contains(&some), "{some} attempts");
        assert!(took <= Duration::from_secs(3), "{took:?}");
    }

    #[test]
    fn a_refused_connection_is_tried_once_more_soon() {
        let (all, took, err) = attempts_of(TransportErrorKind::Connect, None);
        assert_eq!(all, 2);
        assert!(took <= Duration::from_millis(250), "{took:?}");
        assert!(matches!(&err, Error::Transport(t) if t.kind == TransportErrorKind::Connect));
    }

    /// A transport that answers every request with `status`, counting them.
    struct Answers(std::sync::atomic::AtomicU32, u16);

    impl Transport for Answers {
        fn send(&self, _: HttpRequest) -> TransportFuture<'_> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let status = self.1;
            Box::pin(async move {
                Ok(HttpResponse::from_bytes(
                    status,
                    http::HeaderMap::new(),
                    bytes::Bytes::from_static(b"{}"),
                ))
            })
        }
    }

    #[test]
    fn a_status_that_says_never_is_not_asked_again() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        for (status, tries) in [(501, 1), (505, 1), (400, 1), (503, 4), (529, 4)] {
            let answers = Answers(0.into(), status);
            rt.block_on(async {
                let retry = Retry::new(&answers, RetryPolicy::default());
                let got = retry
                    .send(HttpRequest::new(http::Method::GET, "http://x/"))
                    .await
                    .unwrap();
                assert_eq!(got.status, status);
            });
            assert_eq!(answers.0.into_inner(), tries, "HTTP {status}");
        }
    }
}
