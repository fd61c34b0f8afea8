//! The model in process: loading, and generating on a thread of its own.

use crate::plan::Plan;
use crate::prompt::{self, TemplateMessage};
use kite_core::{Capabilities, Error, Event, EventStream, Model, Request};
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use std::path::Path;
use std::sync::{Arc, OnceLock, mpsc as std_mpsc};
use tokio::sync::mpsc;

/// How the local model runs. The defaults suit a small model on a small machine.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalConfig {
    /// Threads for generating tokens. Default 1: on a shared 2-core machine more threads are
    /// barely faster when idle and several times slower when anything else runs.
    pub threads: i32,
    /// Threads for reading the prompt. Default: up to 2, as the machine allows.
    pub threads_batch: i32,
    /// The most tokens (prompt and answer) a call may hold; capped by the model's own.
    pub context_size: u32,
    /// Answer length when the request sets none.
    pub max_tokens: u32,
    /// The system prompt when the request has none. Small models answer much worse with the
    /// prompt their template injects by default.
    pub system_prompt: String,
    /// Repetition penalty over the last 64 tokens (1.0 turns it off).
    pub repeat_penalty: f32,
    /// Conversations answered at once, batched in one context (continuous batching), whose
    /// cells are made for this many answers. Default 4; 1 answers them one after the other.
    pub parallel: u32,
    /// Keep each prompt's cells in the context once its answer ends, so a conversation that
    /// begins the same way (a chat's next turn) reads only what is new. Default true; answers are the same
    /// either way.
    pub keep_prefixes: bool,
}

impl Default for LocalConfig {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as i32;
        Self {
            threads: 1,
            threads_batch: cores.clamp(1, 2),
            context_size: 4096,
            max_tokens: 512,
            system_prompt: "You are a helpful assistant.".into(),
            repeat_penalty: 1.1,
            parallel: 4,
            keep_prefixes: true,
        }
    }
}

/// llama.cpp allows one backend per process.
pub(crate) fn backend() -> Result<&'static LlamaBackend, Error> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            let mut b = LlamaBackend::init().map_err(|e| e.to_string())?;
            b.void_logs();
            Ok(b)
        })
        .as_ref()
        .map_err(|e| Error::Engine(format!("cannot start llama.cpp: {e}")))
}

/// A GGUF model run in this process by llama.cpp. Clones share the loaded model and its
/// worker thread, which answers concurrent calls together, batched in one llama.cpp context
/// (`batching.rs`), and keeps that context from call to call, so only the first calls pay
/// for setting one up. Callers never block their async runtime.
#[derive(Clone)]
pub struct LocalModel {
    shared: Arc<Shared>,
    jobs: std_mpsc::Sender<Job>,
}

pub(crate) struct Shared {
    pub model: LlamaModel,
    pub name: String,
    pub template: Option<String>,
    pub bos: String,
    pub eos: String,
    pub config: LocalConfig,
}

impl Shared {
    /// The most tokens one call may hold, prompt and answer: the configured context size,
    /// at most what the model was trained with.
    pub(crate) fn context_window(&self) -> u32 {
        self.config
            .context_size
            .min(self.model.n_ctx_train())
            .max(1)
    }
}

/// A call for the worker: what it needs of the request (prepared on the caller's thread, so
/// the request itself is never copied), and where its events go.
pub(crate) struct Job {
    /// The conversation as chat templates take it.
    pub messages: Vec<TemplateMessage>,
    pub plan: Plan,
    pub events: Sender,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("name", &self.shared.name)
            .finish_non_exhaustive()
    }
}

impl LocalModel {
    /// Loads the GGUF file at `path`.
    pub fn load(path: impl AsRef<Path>, config: LocalConfig) -> Result<Self, Error> {
        Self::load_with_progress(path, config, |_| {})
    }

    /// Loads the GGUF file at `path`, reporting progress from 0.0 to 1.0.
    pub fn load_with_progress(
        path: impl AsRef<Path>,
        config: LocalConfig,
        mut progress: impl FnMut(f32) + 'static,
    ) -> Result<Self, Error> {
        let path = path.as_ref();
        check_file(path)?;
        let backend = backend()?;
        let params = LlamaModelParams::default().with_progress_callback(move |p| {
            progress(p);
            true
        });
        let model = LlamaModel::load_from_file(backend, path, &params).map_err(|e| {
            Error::Config(format!(
                "{} could not be loaded as a model ({e}); {}",
                path.display(),
                crate::FETCH_HINT
            ))
        })?;
        let template = model.meta_val_str("tokenizer.chat_template").ok();
        let name = model
            .meta_val_str("general.basename")
            .or_else(|_| model.meta_val_str("general.name"))
            .unwrap_or_else(|_| {
                path.file_stem()
                    .map_or("local".into(), |s| s.to_string_lossy().into_owned())
            });
        let token_text = |t| {
            model
                .vocab()
                .text(t)
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let bos = token_text(model.vocab().bos());
        let eos = token_text(model.vocab().eos());
        let shared = Arc::new(Shared {
            model,
            name,
            template,
            bos,
            eos,
            config,
        });
        let (jobs, queue) = std_mpsc::channel::<Job>();
        let worker = shared.clone();
        let handle = std::thread::Builder::new()
            .name("kite-local".into())
            .spawn(move || crate::batching::serve(&worker, queue))
            .map_err(|e| Error::Engine(format!("cannot start the model's thread: {e}")))?;
        crate::workers::register(handle);
        Ok(Self { shared, jobs })
    }

    /// The model's name, from its file.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// How many tokens `text` takes in the model's own tokenizer (the GGUF's). Safe to call
    /// while the model generates: tokenizing only reads the vocabulary.
    pub fn count_tokens(&self, text: &str) -> usize {
        self.shared
            .model
            .vocab()
            .tokenize(text.as_bytes(), false, true)
            .len()
    }

    /// The most tokens one call may hold, prompt and answer: the configured context size,
    /// at most what the model was trained with.
    pub fn context_window(&self) -> u32 {
        self.shared.context_window()
    }
}

/// Refuses files that cannot be a GGUF model before llama.cpp sees them.
fn check_file(path: &Path) -> Result<(), Error> {
    use std::io::Read;
    let mut magic = [0u8; 4];
    let read = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic));
    match read {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::Config(format!(
            "no model file at {}; {}",
            path.display(),
            crate::FETCH_HINT
        ))),
        Err(e) => Err(Error::Config(format!(
            "cannot read the model file {}: {e}; {}",
            path.display(),
            crate::FETCH_HINT
        ))),
        Ok(()) if &magic != b"GGUF" => Err(Error::Config(format!(
            "{} is not a GGUF model file; {}",
            path.display(),
            crate::FETCH_HINT
        ))),
        Ok(()) => Ok(()),
    }
}

/// Where a call's events go. Unbounded, so that a slow reader of one answer never holds up
/// the others the worker batches with it; an answer has at most its token limit of events.
pub(crate) type Sender = mpsc::UnboundedSender<Result<Event, Error>>;

impl Model for LocalModel {
    fn stream(&self, request: &Request) -> EventStream {
        kite_core::trace::model_call(request, &self.origin(), self.events(request))
    }

    fn origin(&self) -> kite_core::trace::Origin {
        kite_core::trace::Origin::local(kite_core::trace::LOCAL_PROVIDER)
    }

    fn capabilities(&self) -> Capabilities {
        let mut c = Capabilities::default();
        c.parallel_tool_calls = false;
        c
    }
}

impl LocalModel {
    /// The answer to `request`, from the worker thread.
    fn events(&self, request: &Request) -> EventStream {
        let plan = match Plan::of(request) {
            Ok(p) => p,
            Err(e) => return Box::pin(futures_util::stream::iter([Err(e)])),
        };
        let (events, mut rx) = mpsc::unbounded_channel();
        let job = Job {
            messages: prompt::messages(request, &self.shared.config.system_prompt),
            plan,
            events,
        };
        if self.jobs.send(job).is_err() {
            return Box::pin(futures_util::stream::iter([Err(Error::Engine(
                "the model's thread has stopped".into(),
            ))]));
        }
        Box::pin(futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)))
    }
}

pub(crate) fn engine<E: std::fmt::Display>(what: &str) -> impl Fn(E) -> Error + '_ {
    move |e| Error::Engine(format!("{what}: {e}"))
}
