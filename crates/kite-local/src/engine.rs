//! The model in process: loading, and generating on a thread of its own.

use crate::plan::Plan;
use crate::prompt::{self, CHATML, TemplateMessage};
use crate::split::Splitter;
use kite_core::{Capabilities, Error, Event, EventStream, FinishReason, Model, Request, Usage};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use std::num::NonZeroU32;
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
        }
    }
}

/// llama.cpp allows one backend per process.
fn backend() -> Result<&'static LlamaBackend, Error> {
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
/// worker thread, which serves calls one at a time (two would only share the same cores) and
/// keeps its llama.cpp context from call to call, so only the first call pays for setting one
/// up. Callers never block their async runtime.
#[derive(Clone)]
pub struct LocalModel {
    shared: Arc<Shared>,
    jobs: std_mpsc::Sender<Job>,
}

struct Shared {
    model: LlamaModel,
    name: String,
    template: Option<String>,
    bos: String,
    eos: String,
    config: LocalConfig,
}

/// A call for the worker: what it needs of the request (prepared on the caller's thread, so
/// the request itself is never copied), and where its events go.
struct Job {
    /// The conversation as chat templates take it.
    messages: Vec<TemplateMessage>,
    plan: Plan,
    events: Sender,
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
            .spawn(move || worker.serve(queue))
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
        self.shared
            .config
            .context_size
            .min(self.shared.model.n_ctx_train())
            .max(1)
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

type Sender = mpsc::Sender<Result<Event, Error>>;

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
        let (events, mut rx) = mpsc::channel(64);
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

/// Sends an event; false when the caller is gone (and generation should stop).
fn send(tx: &Sender, e: Event) -> bool {
    tx.blocking_send(Ok(e)).is_ok()
}

pub(crate) fn engine<E: std::fmt::Display>(what: &str) -> impl Fn(E) -> Error + '_ {
    move |e| Error::Engine(format!("{what}: {e}"))
}

/// The worker's context, kept between calls, and how many tokens it holds.
type Slot<'m> = Option<(LlamaContext<'m>, u32)>;

impl Shared {
    /// The worker thread: serves calls in order until every handle to the model is gone,
    /// then drops its context (before the model, which the context borrows).
    fn serve(self: Arc<Self>, queue: std_mpsc::Receiver<Job>) {
        let mut slot: Slot<'_> = None;
        for job in queue {
            if job.events.is_closed() {
                continue;
            }
            if let Err(e) = self.generate(&job, &mut slot) {
                let _ = job.events.blocking_send(Err(e));
            }
        }
        drop(slot);
    }

    /// A context for `needed` tokens: the kept one, emptied, or a larger new one.
    fn context<'m, 's>(
        &'m self,
        slot: &'s mut Slot<'m>,
        needed: u32,
        max: u32,
    ) -> Result<&'s mut LlamaContext<'m>, Error> {
        if slot.as_ref().is_some_and(|(_, size)| *size >= needed) {
            let (ctx, _) = slot.as_mut().expect("checked above");
            ctx.clear_kv_cache();
            return Ok(ctx);
        }
        *slot = None;
        let size = needed.next_multiple_of(1024).min(max);
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(size))
            .with_n_batch(512)
            .with_n_ubatch(512)
            .with_n_threads(self.config.threads)
            .with_n_threads_batch(self.config.threads_batch);
        let ctx = self
            .model
            .new_context(backend()?, params)
            .map_err(engine("cannot make a context"))?;
        Ok(&mut slot.insert((ctx, size)).0)
    }

    fn generate<'m>(&'m self, job: &Job, slot: &mut Slot<'m>) -> Result<(), Error> {
        let (messages, plan, tx) = (&job.messages, &job.plan, &job.events);
        let text = match &self.template {
            Some(t) => prompt::render(t, messages, &self.bos, &self.eos).or_else(|e| {
                tracing::warn!(error = %e, "the model's chat template failed; using ChatML");
                prompt::render(CHATML, messages, &self.bos, &self.eos)
            })?,
            None => prompt::render(CHATML, messages, &self.bos, &self.eos)?,
        };
        let vocab = self.model.vocab();
        let tokens = vocab.tokenize(text.as_bytes(), true, true);
        let n_prompt = tokens.len() as u32;
        let n_ctx_max = self
            .config
            .context_size
            .min(self.model.n_ctx_train())
            .max(1);
        if n_prompt >= n_ctx_max {
            return Err(Error::InvalidRequest(format!(
                "the prompt has {n_prompt} tokens; the local model holds {n_ctx_max} (at \
                 most {}, with --context-size): shorten it, or use a provider's model for \
                 prompts this long (a coding agent's are)",
                self.model.n_ctx_train()
            )));
        }
        let max_new = plan
            .max_tokens
            .unwrap_or(self.config.max_tokens)
            .min(n_ctx_max - n_prompt);
        let ctx = self.context(slot, n_prompt + max_new, n_ctx_max)?;

        let mut batch = LlamaBatch::new(512, 1);
        let last = tokens.len().saturating_sub(1);
        for (c, chunk) in tokens.chunks(512).enumerate() {
            if tx.is_closed() {
                // The caller is gone: stop between chunks of a long prompt too.
                return Ok(());
            }
            batch.clear();
            for (j, t) in chunk.iter().enumerate() {
                let i = c * 512 + j;
                batch
                    .add(*t, i as i32, &[0], i == last)
                    .map_err(engine("cannot batch the prompt"))?;
            }
            ctx.decode(&mut batch)
                .map_err(engine("cannot read the prompt"))?;
        }

        let mut sampler = plan.sampler(&self.model, self.config.repeat_penalty)?;
        // On `auto`, what samples once the model opens a call, made now so a grammar that
        // does not compile is an error before any text.
        let mut on_call = match plan.may_call() {
            true => Some(plan.call_sampler(&self.model, self.config.repeat_penalty)?),
            false => None,
        };
        if !send(
            tx,
            Event::Start {
                id: None,
                model: Some(self.name.clone()),
            },
        ) {
            return Ok(());
        }
        let mut decoder = encoding_rs::UTF_8.new_decoder();
        let mut splitter = Splitter::new(plan.stop.clone());
        let mut events = Vec::new();
        let mut generated = 0u32;
        let mut pos = n_prompt as i32;
        let mut finish = FinishReason::Stop;
        loop {
            if generated >= max_new {
                finish = FinishReason::Length;
                break;
            }
            let token = sampler.sample(ctx, batch.n_tokens() - 1);
            if vocab.is_eog(token) {
                break;
            }
            generated += 1;
            let bytes = vocab.token_to_piece(token, false, None);
            let mut piece = String::with_capacity(
                decoder
                    .max_utf8_buffer_length(bytes.len())
                    .unwrap_or(bytes.len() * 3),
            );
            let _ = decoder.decode_to_string(&bytes, &mut piece, false);
            splitter.push(&piece, &mut events);
            if splitter.in_call()
                && let Some(call) = on_call.take()
            {
                // The model opened a call: from here the grammar keeps it well-formed (and
                // ends generation once the call closes: one call per answer on `auto`). What
                // the piece held past the tag is dropped; the call is the grammar's alone.
                splitter.restart_call();
                sampler = call;
            }
            for e in events.drain(..) {
                if !send(tx, e) {
                    return Ok(());
                }
            }
            if splitter.stopped {
                break;
            }
            batch.clear();
            batch
                .add(token, pos, &[0], true)
                .map_err(engine("cannot batch a token"))?;
            pos += 1;
            ctx.decode(&mut batch).map_err(engine("cannot generate"))?;
        }
        let mut tail = String::with_capacity(16);
        let _ = decoder.decode_to_string(&[], &mut tail, true);
        splitter.push(&tail, &mut events);
        splitter.finish(&mut events);
        if splitter.calls() > 0 && finish == FinishReason::Stop {
            finish = FinishReason::ToolCalls;
        }
        events.push(Event::Usage {
            usage: Usage {
                input_tokens: n_prompt.into(),
                output_tokens: generated.into(),
                total_tokens: u64::from(n_prompt) + u64::from(generated),
                ..Usage::default()
            },
        });
        events.push(Event::Finish { reason: finish });
        for e in events {
            if !send(tx, e) {
                break;
            }
        }
        Ok(())
    }
}
