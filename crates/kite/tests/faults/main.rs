//! Every provider API, streamed and whole, through every network fault
//! (`kite_testkit::FaultProxy`): as a client (`client.rs`), and at `kite serve`'s upstream
//! side (`gateway.rs`). Each case ends either with the whole recorded answer, perhaps after a
//! retry, or with a typed error within the configured deadlines: never a hang, a panic or a
//! partial answer shown as complete. The matrix's counts are printed at the end of each
//! test (`cargo test -p kite-llm --features serve --test faults -- --nocapture`).

mod client;
#[cfg(feature = "serve")]
mod gateway;

use kite::http::{ReqwestTransport, RetryPolicy, Timeouts};
use kite::wire::openai_chat::Dialect;
use kite::{Anthropic, Message, Model, OpenAiCompatible, OpenAiResponses, Request};
use kite_testkit::{Fault, Reply, fixture};
use std::sync::Arc;
use std::time::Duration;

pub(crate) const KEY: &str = "sk-test-faults-0123456789abcdefSECRET";

/// The deadlines every model in the matrix runs with.
pub(crate) fn timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(1),
        response: Duration::from_millis(1500),
        idle: Duration::from_millis(700),
    }
}

/// Two quick retries.
pub(crate) fn retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        rate_limit_base: Duration::from_millis(10),
        server_error_base: Duration::from_millis(10),
        transport_base: Duration::from_millis(10),
        max_delay: Duration::from_millis(200),
        give_up_after: None,
    }
}

/// The longest a failing case may take under those deadlines: three tries, each of a
/// connect, a response start and a quiet stretch, plus the slow faults' own time.
pub(crate) const DEADLINE: Duration = Duration::from_secs(12);

/// Anything slower is a hang.
pub(crate) const LIMIT: Duration = Duration::from_secs(30);

/// Cases run this many at a time across the file's tests, so the deadlines measure the
/// faults rather than two cores shared by hundreds of connections.
pub(crate) static SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(16);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Api {
    Chat,
    Messages,
    Responses,
}

impl Api {
    pub(crate) const ALL: [Api; 3] = [Api::Chat, Api::Messages, Api::Responses];

    fn fixture(self, whole: bool) -> &'static str {
        match (self, whole) {
            (Api::Chat, false) => "openai/chat-completions/stream-text-with-usage/response.sse",
            (Api::Chat, true) => "openai/chat-completions/text-basic/response.json",
            (Api::Messages, false) => "anthropic/messages/stream-text/response.sse",
            (Api::Messages, true) => "anthropic/messages/text-basic/response.json",
            (Api::Responses, false) => "openai/responses/stream-text-basic/response.sse",
            (Api::Responses, true) => "openai/responses/text-basic/response.json",
        }
    }

    /// The recorded answer, streamed or whole, sent in pieces of 512 bytes.
    pub(crate) fn reply(self, whole: bool) -> Reply {
        let body = fixture(self.fixture(whole));
        let reply = if whole {
            Reply::json(200, body)
        } else {
            Reply::sse(body)
        };
        reply.chunked(512, Duration::ZERO)
    }

    /// The byte after which the mid-answer faults strike: about half the answer in.
    pub(crate) fn halfway(self, whole: bool) -> usize {
        fixture(self.fixture(whole)).len() / 2
    }

    /// This API's model at `base` (the `/v1` root), under the matrix's deadlines and retries.
    pub(crate) fn model(self, base: &str) -> Arc<dyn Model> {
        let transport = ReqwestTransport::new(timeouts()).unwrap();
        match self {
            Api::Chat => Arc::new(
                OpenAiCompatible::new(base, Dialect::OpenAi)
                    .api_key(KEY)
                    .transport(transport)
                    .retry(retries()),
            ),
            Api::Messages => Arc::new(
                Anthropic::new(base)
                    .api_key(KEY)
                    .transport(transport)
                    .retry(retries()),
            ),
            Api::Responses => Arc::new(
                OpenAiResponses::new(base)
                    .api_key(KEY)
                    .transport(transport)
                    .retry(retries()),
            ),
        }
    }

    pub(crate) fn request(self) -> Request {
        let model = match self {
            Api::Messages => "claude-sonnet-4-0",
            _ => "gpt-5-nano",
        };
        Request::new(model).message(Message::user("Say something."))
    }
}

/// One case of the matrix.
#[derive(Clone, Debug)]
pub(crate) struct Case {
    pub api: Api,
    pub whole: bool,
    pub fault: Fault,
    /// The fault strikes the first connection only, so a retry may get past it.
    pub once: bool,
}

impl Case {
    /// Every API, streamed and whole, through every fault, lasting and once.
    pub(crate) fn all() -> Vec<Case> {
        let mut cases = Vec::new();
        for api in Api::ALL {
            for whole in [false, true] {
                for fault in Fault::all(api.halfway(whole)) {
                    for once in [false, true] {
                        // A certificate or a name is wrong on every try, or not at all.
                        if once && matches!(fault, Fault::SelfSignedTls | Fault::Dns) {
                            continue;
                        }
                        cases.push(Case {
                            api,
                            whole,
                            fault: fault.clone(),
                            once,
                        });
                    }
                }
            }
        }
        cases
    }

    /// Whether the whole answer must come through: the fault only slows it, or closes the
    /// first connection before its first byte, where a retry is safe. (A server silent
    /// past the response deadline is not asked again: `RetryPolicy`.)
    pub(crate) fn must_succeed(&self) -> bool {
        self.fault.only_slows()
            || (self.once && matches!(self.fault, Fault::ResetAfter(0) | Fault::HalfCloseAfter(0)))
    }

    /// Whether no answer may come through: the fault strikes every try before the end.
    pub(crate) fn must_fail(&self) -> bool {
        !self.once && !self.fault.only_slows() && self.fault != Fault::TruncatedChunked
    }

    pub(crate) async fn proxy(&self, upstream: &str) -> kite_testkit::FaultProxy {
        if self.once {
            kite_testkit::FaultProxy::start_first(upstream, self.fault.clone(), 1).await
        } else {
            kite_testkit::FaultProxy::start(upstream, self.fault.clone()).await
        }
    }
}

impl std::fmt::Display for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:?} {} through {:?}{}",
            self.api,
            if self.whole { "whole" } else { "streamed" },
            self.fault,
            if self.once { " once" } else { "" }
        )
    }
}

/// Runs every case of the matrix, [`SLOTS`] at a time, and hands each case with how it
/// ended, in the order they end.
pub(crate) async fn run_all<F, Fut, T>(run: F) -> Vec<(Case, T)>
where
    F: Fn(Case) -> Fut,
    Fut: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let mut running = tokio::task::JoinSet::new();
    for case in Case::all() {
        let ended = run(case.clone());
        running.spawn(async move {
            let _slot = SLOTS.acquire().await.unwrap();
            (case, ended.await)
        });
    }
    let mut all = Vec::new();
    while let Some(done) = running.join_next().await {
        all.push(done.expect("a case panicked"));
    }
    all
}

/// How the matrix's cases ended, for the report.
#[derive(Default)]
pub(crate) struct Tally {
    pub whole: usize,
    pub after_retry: usize,
    pub typed: std::collections::BTreeMap<String, usize>,
    pub wrong: Vec<String>,
}

impl Tally {
    pub(crate) fn report(&self, what: &str) {
        let typed: usize = self.typed.values().sum();
        println!(
            "{what}: {} cases; {} whole answers ({} after a retry); {typed} typed errors {:?}; {} wrong",
            self.whole + typed + self.wrong.len(),
            self.whole,
            self.after_retry,
            self.typed,
            self.wrong.len()
        );
        assert!(
            self.wrong.is_empty(),
            "{} of the cases went wrong:\n{}",
            self.wrong.len(),
            self.wrong.join("\n")
        );
    }
}
