//! Continuous batching: the model's one worker thread answers every conversation under way
//! in one llama.cpp context, whose KV cache the conversations share, one sequence each.
//! Each step decodes one batch holding the token each answering conversation sampled last,
//! and as much of a new conversation's prompt as fits beside them; then each samples its
//! next token from its own logits. A conversation joins at the next step and leaves when its
//! answer ends, so none waits for another to finish.
//!
//! The context's cells are split among [`LocalConfig::parallel`](crate::LocalConfig)
//! sequences, each with cells of its own (not `kv_unified`): an answer's cells, and so its
//! arithmetic, are then the same whatever it is batched with, and greedy answers do not
//! change. The context is sized by demand: for `parallel` conversations the size of the
//! largest waiting (its prompt and its longest answer, at most `context_size`). A
//! conversation larger than a sequence's share waits; once none is under way, the context is
//! made again, larger. It is never made smaller, so only the first calls pay for making one.
//!
//! An answer that ends leaves its cells as they are: the next conversation to take its
//! sequence keeps the prefix it shares with them and reads only the rest (`prefix.rs`).

use crate::engine::{Job, Shared, backend, engine};
use crate::prefix::Prefixes;
use crate::sequence::Sequence;
use kite_core::Error;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::KvCacheType;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::sync::mpsc;

/// Tokens decoded in one step at most.
const BATCH: usize = 512;
/// llama.cpp's `LLAMA_FLASH_ATTN_TYPE_DISABLED`.
const FLASH_ATTENTION_OFF: i32 = 0;

/// The worker thread: serves calls until every handle to the model is gone, then drops its
/// context (before the model, which the context borrows).
pub(crate) fn serve(shared: &Shared, queue: mpsc::Receiver<Job>) {
    // llama.cpp holds at most 256 sequences in a context.
    let parallel = shared.config.parallel.clamp(1, 256) as usize;
    let mut pool: Option<(LlamaContext<'_>, u32)> = None;
    let mut waiting: VecDeque<Sequence> = VecDeque::new();
    let mut active: Vec<Sequence> = Vec::new();
    let mut batch = LlamaBatch::new(BATCH, 1);
    let mut prefixes = Prefixes::new(parallel);
    let keep = shared.config.keep_prefixes && crate::prefix::can_keep(&shared.model);
    loop {
        if active.is_empty() && waiting.is_empty() {
            // Nothing under way: sleep until a call comes, or end with the last handle.
            match queue.recv() {
                Ok(job) => waiting.extend(Sequence::new(shared, job)),
                Err(_) => break,
            }
        }
        while let Ok(job) = queue.try_recv() {
            waiting.extend(Sequence::new(shared, job));
        }
        waiting.retain(|s| !s.abandoned());
        let admitted = admit(shared, &mut pool, &mut prefixes, &mut waiting, &mut active);
        if let Err(e) = admitted {
            // No context for them: each waiting caller hears why.
            for mut s in waiting.drain(..) {
                s.fail(Error::Engine(e.to_string()));
            }
        }
        let Some((ctx, _)) = pool.as_mut() else {
            continue;
        };
        // In the order of their ids: llama.cpp decodes in one pass only tokens whose
        // sequences follow one another in the batch, each sequence having cells of its own.
        active.sort_by_key(|s| s.id);
        let stepped = step(shared, ctx, &mut batch, &mut active);
        if let Err(e) = &stepped {
            for s in &mut active {
                s.fail(Error::Engine(e.to_string()));
            }
        }
        for s in active.iter().filter(|s| s.done || s.abandoned()) {
            // Its cells are kept for a conversation that begins as it did; after a failed
            // step what they hold is not known, and they are cleared.
            let id = s.id as usize;
            match keep && stepped.is_ok() {
                true => prefixes.keep(id, s.held()),
                false => {
                    let _ = ctx.clear_kv_cache_seq(Some(s.id as u32), None, None);
                    prefixes.forget(id);
                }
            }
        }
        active.retain(|s| !s.done && !s.abandoned());
    }
    drop(active);
    drop(pool);
}

/// Lets in the waiting conversations that fit, in order, making the context again when none
/// is under way and the next does not fit.
fn admit<'m>(
    shared: &'m Shared,
    pool: &mut Option<(LlamaContext<'m>, u32)>,
    prefixes: &mut Prefixes,
    waiting: &mut VecDeque<Sequence>,
    active: &mut Vec<Sequence>,
) -> Result<(), Error> {
    let parallel = prefixes.len();
    while let Some(next) = waiting.front() {
        if active.len() >= parallel {
            return Ok(());
        }
        // Each sequence has cells of its own: a share of the context.
        let size = pool.as_ref().map_or(0, |(_, size)| *size);
        if next.cells() > size / parallel as u32 {
            if !active.is_empty() {
                // It waits for cells to come free.
                return Ok(());
            }
            // Room for `parallel` conversations the size of the largest waiting, so that
            // those that come while these are answered find room too (`most` holds any one
            // conversation: none is larger than the context window).
            let largest = waiting.iter().map(Sequence::cells).max().unwrap_or(0);
            let most = shared.context_window().saturating_mul(parallel as u32);
            let size = largest
                .next_multiple_of(256)
                .saturating_mul(parallel as u32)
                .min(most)
                .max(size);
            // The prefixes kept go with it into the new context (none is under way).
            let moving = match pool.take() {
                Some((old, _)) => prefixes.take_out(&old),
                None => Vec::new(),
            };
            let mut made = context(shared, size, parallel)?;
            prefixes.put_in(&mut made, moving);
            *pool = Some((made, size));
            continue;
        }
        let Some((ctx, _)) = pool.as_mut() else {
            return Ok(());
        };
        let mut s = waiting.pop_front().expect("checked above");
        let free = (0..parallel).filter(|id| active.iter().all(|a| a.id != *id as i32));
        let (id, shared_len) = prefixes
            .choose(free, s.prompt())
            .expect("fewer conversations than sequences");
        s.id = id as i32;
        s.skip(shared_len);
        let kept = s.held().len() as u32;
        // The cells past what it shares go; a model whose cells cannot be cut (a recurrent
        // one) reads its prompt whole.
        if !ctx
            .clear_kv_cache_seq(Some(id as u32), Some(kept), None)
            .unwrap_or(false)
        {
            let _ = ctx.clear_kv_cache_seq(Some(id as u32), None, None);
            s.skip(0);
        }
        prefixes.forget(id);
        active.push(s);
    }
    Ok(())
}

fn context(shared: &Shared, size: u32, parallel: usize) -> Result<LlamaContext<'_>, Error> {
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(size))
        .with_n_batch(BATCH as u32)
        .with_n_ubatch(BATCH as u32)
        .with_n_seq_max(parallel as u32)
        // Cells of its own for each sequence, so that an answer is the same number for
        // number whatever it is batched with: its cells, and so its attention's sums, are
        // laid out as they would be alone.
        .with_kv_unified(false)
        // Without flash attention: llama.cpp's CPU flash attention sums a prompt read in
        // one piece (tiled) and one read a token or a few at a time in different orders, so
        // a prefix kept from an earlier answer would make later answers drift from those of
        // the prompt read whole. Its plain attention gives every token the same numbers
        // however the prompt is cut; with cells of 32-bit floats, for its products lose
        // too much in 16 bits (the small model, asked the capital of France, answers in
        // French about something else; llama-server with `-fa off` does the same).
        .with_flash_attention_policy(FLASH_ATTENTION_OFF)
        .with_type_k(KvCacheType::F32)
        .with_type_v(KvCacheType::F32)
        .with_n_threads(shared.config.threads)
        .with_n_threads_batch(shared.config.threads_batch);
    shared
        .model
        .new_context(backend()?, params)
        .map_err(engine("cannot make a context"))
}

/// One decode: each answering conversation's last token, then prompts as far as they fit;
/// then each conversation whose logits came samples its next token.
fn step(
    shared: &Shared,
    ctx: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch,
    active: &mut [Sequence],
) -> Result<(), Error> {
    batch.clear();
    let mut sample_at: Vec<(usize, i32)> = Vec::with_capacity(active.len());
    for (i, s) in active.iter_mut().enumerate() {
        if let Some(idx) = s.feed_token(batch)? {
            sample_at.push((i, idx));
        }
    }
    for (i, s) in active.iter_mut().enumerate() {
        let room = BATCH - batch.n_tokens() as usize;
        if room == 0 {
            break;
        }
        if s.reading()
            && let Some(idx) = s.feed_prompt(batch, room)?
        {
            sample_at.push((i, idx));
        }
    }
    if batch.n_tokens() == 0 {
        return Ok(());
    }
    ctx.decode(batch).map_err(engine("cannot generate"))?;
    for (i, idx) in sample_at {
        active[i].sampled(shared, ctx, idx);
    }
    Ok(())
}
