//! One conversation's answer, as one sequence of the shared context: its prompt read in
//! chunks, then a token sampled each step until it stops, its events sent as they come.

use crate::engine::{Job, Sender, Shared, engine};
use crate::prompt::{self, CHATML};
use crate::split::Splitter;
use kite_core::{Error, Event, FinishReason, Usage};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;

/// A conversation being answered.
pub(crate) struct Sequence {
    /// Its sequence id in the context, once admitted.
    pub id: i32,
    tx: Sender,
    prompt: Vec<LlamaToken>,
    /// How many of the prompt's tokens the context has read.
    read: usize,
    n_prompt: u32,
    max_new: u32,
    generated: u32,
    /// The token sampled last, to be read at the next step.
    next: Option<LlamaToken>,
    /// How many of the prompt's tokens were found in the context already (a prefix kept).
    reused: u32,
    sampler: LlamaSampler,
    /// On `auto`, what samples once the model opens a call.
    on_call: Option<LlamaSampler>,
    decoder: encoding_rs::Decoder,
    splitter: Splitter,
    events: Vec<Event>,
    finish: FinishReason,
    /// Whether `Start` was sent.
    started: bool,
    /// Whether the answer is complete (or its caller gone).
    pub done: bool,
}

impl Sequence {
    /// The prompt tokenized and checked against the context's size, and the samplers made, so
    /// that a prompt too long or a grammar that does not compile fails before any text. An
    /// error goes to the caller; `None` then.
    pub(crate) fn new(shared: &Shared, job: Job) -> Option<Self> {
        match Self::prepare(shared, &job) {
            Ok((prompt, max_new, sampler, on_call)) => Some(Self {
                id: -1,
                n_prompt: prompt.len() as u32,
                prompt,
                read: 0,
                max_new,
                generated: 0,
                next: None,
                reused: 0,
                sampler,
                on_call,
                decoder: encoding_rs::UTF_8.new_decoder(),
                splitter: Splitter::new(job.plan.stop.clone()),
                events: Vec::new(),
                finish: FinishReason::Stop,
                started: false,
                done: false,
                tx: job.events,
            }),
            Err(e) => {
                let _ = job.events.send(Err(e));
                None
            }
        }
    }

    #[allow(clippy::type_complexity)]
    fn prepare(
        shared: &Shared,
        job: &Job,
    ) -> Result<(Vec<LlamaToken>, u32, LlamaSampler, Option<LlamaSampler>), Error> {
        let (bos, eos) = (&shared.bos, &shared.eos);
        let text = match &shared.template {
            Some(t) => prompt::render(t, &job.messages, bos, eos).or_else(|e| {
                tracing::warn!(error = %e, "the model's chat template failed; using ChatML");
                prompt::render(CHATML, &job.messages, bos, eos)
            })?,
            None => prompt::render(CHATML, &job.messages, bos, eos)?,
        };
        let tokens = shared.model.vocab().tokenize(text.as_bytes(), true, true);
        let n_prompt = tokens.len() as u32;
        if n_prompt == 0 {
            // Nothing to read, so nothing to answer from (and no logits to sample).
            return Err(Error::InvalidRequest(
                "the prompt is empty once written for the local model".into(),
            ));
        }
        let n_ctx_max = shared.context_window();
        if n_prompt >= n_ctx_max {
            return Err(Error::InvalidRequest(format!(
                "the prompt has {n_prompt} tokens; the local model holds {n_ctx_max} (at \
                 most {}, with --context-size): shorten it, or use a provider's model for \
                 prompts this long (a coding agent's are)",
                shared.model.n_ctx_train()
            )));
        }
        let max_new = job
            .plan
            .max_tokens
            .unwrap_or(shared.config.max_tokens)
            .min(n_ctx_max - n_prompt);
        let penalty = shared.config.repeat_penalty;
        let sampler = job.plan.sampler(&shared.model, penalty)?;
        let on_call = match job.plan.may_call() {
            true => Some(job.plan.call_sampler(&shared.model, penalty)?),
            false => None,
        };
        Ok((tokens, max_new, sampler, on_call))
    }

    /// The context cells the answer may take: its prompt and its longest answer.
    pub(crate) fn cells(&self) -> u32 {
        self.n_prompt + self.max_new
    }

    /// The prompt's tokens.
    pub(crate) fn prompt(&self) -> &[LlamaToken] {
        &self.prompt
    }

    /// The first `n` tokens of the prompt are in the sequence's cells already: they are not
    /// read again. At least the last one is read, for the logits the answer starts from.
    pub(crate) fn skip(&mut self, n: usize) {
        self.read = n.min(self.prompt.len() - 1);
        self.reused = self.read as u32;
    }

    /// The tokens whose cells are worth keeping, from position 0: the prompt as far as it
    /// was read. The answer's cells are not: made a token at a time, their numbers differ in
    /// the last bits from those of the same tokens read in one piece, as the next turn's
    /// prompt read whole would read them, and greedy answers would drift apart. The next
    /// turn reads the answer again, with its new question.
    pub(crate) fn held(&self) -> Vec<LlamaToken> {
        self.prompt[..self.read].to_vec()
    }

    /// Whether the caller has gone.
    pub(crate) fn abandoned(&self) -> bool {
        self.tx.is_closed()
    }

    /// Whether the prompt is still being read.
    pub(crate) fn reading(&self) -> bool {
        self.read < self.prompt.len()
    }

    /// Puts the token sampled last into `batch`; its logits' index in the batch, if any.
    pub(crate) fn feed_token(&mut self, batch: &mut LlamaBatch) -> Result<Option<i32>, Error> {
        let Some(token) = self.next.take() else {
            return Ok(None);
        };
        let pos = (self.n_prompt + self.generated - 1) as i32;
        batch
            .add(token, pos, &[self.id], true)
            .map_err(engine("cannot batch a token"))?;
        Ok(Some(batch.n_tokens() - 1))
    }

    /// Puts up to `room` more of the prompt into `batch`; the index of the logits to sample
    /// from once its last token is in.
    pub(crate) fn feed_prompt(
        &mut self,
        batch: &mut LlamaBatch,
        room: usize,
    ) -> Result<Option<i32>, Error> {
        let end = (self.read + room).min(self.prompt.len());
        let last = self.prompt.len() - 1;
        for i in self.read..end {
            batch
                .add(self.prompt[i], i as i32, &[self.id], i == last)
                .map_err(engine("cannot batch the prompt"))?;
        }
        self.read = end;
        Ok((end == self.prompt.len()).then(|| batch.n_tokens() - 1))
    }

    /// After a decode: the next token from the logits at `idx`, its text sent. Sets
    /// [`done`](Self::done) when the answer is complete.
    pub(crate) fn sampled(&mut self, shared: &Shared, ctx: &LlamaContext<'_>, idx: i32) {
        if !self.started {
            // The prompt is read: the answer starts.
            self.started = true;
            let start = Event::Start {
                id: None,
                model: Some(shared.name.clone()),
            };
            if !self.send(start) {
                return;
            }
        }
        if self.generated >= self.max_new {
            self.finish = FinishReason::Length;
            return self.end();
        }
        let vocab = shared.model.vocab();
        let token = self.sampler.sample(ctx, idx);
        if vocab.is_eog(token) {
            return self.end();
        }
        self.generated += 1;
        let bytes = vocab.token_to_piece(token, false, None);
        let mut piece = String::with_capacity(
            self.decoder
                .max_utf8_buffer_length(bytes.len())
                .unwrap_or(bytes.len() * 3),
        );
        let _ = self.decoder.decode_to_string(&bytes, &mut piece, false);
        self.splitter.push(&piece, &mut self.events);
        if self.splitter.in_call()
            && let Some(call) = self.on_call.take()
        {
            // The model opened a call: from here the grammar keeps it well-formed (and ends
            // generation once the call closes: one call per answer on `auto`). What the piece
            // held past the tag is dropped; the call is the grammar's alone.
            self.splitter.restart_call();
            self.sampler = call;
        }
        let events = std::mem::take(&mut self.events);
        for e in events {
            if !self.send(e) {
                return;
            }
        }
        if self.splitter.stopped {
            return self.end();
        }
        self.next = Some(token);
    }

    /// The answer's last text, its usage and its finish.
    fn end(&mut self) {
        let mut tail = String::with_capacity(16);
        let _ = self.decoder.decode_to_string(&[], &mut tail, true);
        let mut events = Vec::new();
        self.splitter.push(&tail, &mut events);
        self.splitter
            .finish(&mut events, self.finish == FinishReason::Length);
        if self.splitter.calls() > 0 && self.finish == FinishReason::Stop {
            self.finish = FinishReason::ToolCalls;
        }
        events.push(Event::Usage {
            usage: Usage {
                input_tokens: self.n_prompt.into(),
                // Read from the context's cells, not again: as a provider's prompt cache.
                cached_input_tokens: self.reused.into(),
                output_tokens: self.generated.into(),
                total_tokens: u64::from(self.n_prompt) + u64::from(self.generated),
                ..Usage::default()
            },
        });
        events.push(Event::Finish {
            reason: self.finish.clone(),
        });
        for e in events {
            if !self.send(e) {
                break;
            }
        }
        self.done = true;
    }

    /// Fails the answer with `error`.
    pub(crate) fn fail(&mut self, error: Error) {
        let _ = self.tx.send(Err(error));
        self.done = true;
    }

    /// Sends an event; false (and done) when the caller is gone.
    fn send(&mut self, e: Event) -> bool {
        let sent = self.tx.send(Ok(e)).is_ok();
        self.done |= !sent;
        sent
    }
}
