//! Prefixes kept: the prompt each sequence's cells of the shared context still hold once its
//! answer has ended (`Sequence::held` says why the answer's cells are not kept), so a
//! conversation that begins the same way (the next turn of a chat: its whole history, then
//! a new question) reads only what is new. It is llama-server's `cache_prompt`, here for
//! every conversation.
//!
//! When the context is made again, larger, the prefixes are copied into it (llama.cpp's
//! sequence state). Nothing is held beyond the context's own cells: a kept prefix is the
//! cells a finished answer leaves in its sequence, and a conversation that takes the
//! sequence over keeps what it shares and drops the rest. The memory bound is the
//! context's size: at most one prefix a sequence, [`LocalConfig::parallel`](crate::LocalConfig)
//! of them.
//!
//! A new conversation takes the free sequence whose prefix it goes on from, else an empty
//! one, else the one used least recently, so that the prefixes of other conversations are
//! kept as long as possible.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::session::{LlamaStateSeqFlags, SeqState};
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

/// Whether `model`'s cells can be kept for a later conversation: not when it attends over a
/// sliding window (Gemma 2 and 3, among others), whose cache drops the cells that fall out of
/// the window as an answer grows, and so the cells the next turn, going on from the end of
/// the prompt, would need.
pub(crate) fn can_keep(model: &LlamaModel) -> bool {
    let window = model
        .meta_val_str("general.architecture")
        .and_then(|arch| model.meta_val_str(&format!("{arch}.attention.sliding_window")));
    match window {
        Err(_) => true,
        Ok(w) => w.trim().parse::<u64>() == Ok(0),
    }
}

/// A prefix on its way from one context to another: its sequence, cells and tokens.
pub(crate) type Moving = (usize, SeqState, Vec<LlamaToken>);

/// The prefix each sequence holds, with when it was last used.
pub(crate) struct Prefixes {
    held: Vec<(Vec<LlamaToken>, u64)>,
    clock: u64,
}

impl Prefixes {
    /// Nothing kept, for `parallel` sequences.
    pub(crate) fn new(parallel: usize) -> Self {
        Self {
            held: vec![(Vec::new(), 0); parallel],
            clock: 0,
        }
    }

    /// How many sequences there are.
    pub(crate) fn len(&self) -> usize {
        self.held.len()
    }

    /// Every prefix's cells, copied out of `ctx`, which is about to be made again larger:
    /// they are forgotten here until [`put_in`](Self::put_in) puts them back.
    pub(crate) fn take_out(&mut self, ctx: &LlamaContext<'_>) -> Vec<Moving> {
        let mut out = Vec::new();
        for (id, (tokens, _)) in self.held.iter_mut().enumerate() {
            if tokens.is_empty() {
                continue;
            }
            let tokens = std::mem::take(tokens);
            if let Ok(state) = ctx.state_seq_get(id as i32, LlamaStateSeqFlags::empty()) {
                out.push((id, state, tokens));
            }
        }
        out
    }

    /// Puts prefixes taken out of the last context into `ctx`, each into its sequence; one
    /// that does not fit is left out (its conversation reads its prompt whole).
    pub(crate) fn put_in(&mut self, ctx: &mut LlamaContext<'_>, moving: Vec<Moving>) {
        for (id, state, tokens) in moving {
            match ctx.state_seq_set(&state, id as i32) {
                Ok(()) => self.keep(id, tokens),
                Err(_) => {
                    let _ = ctx.clear_kv_cache_seq(Some(id as u32), None, None);
                    self.forget(id);
                }
            }
        }
    }

    /// Of the sequences `free`, the one for `prompt`: the one whose prefix `prompt` goes on
    /// from (sharing at least half of it: every prompt shares its template's first tokens
    /// and the system prompt, which alone say nothing of the conversation), the longest
    /// such; else the one used least recently, an empty one first. With how many tokens of
    /// its prefix `prompt` shares.
    pub(crate) fn choose(
        &self,
        free: impl Iterator<Item = usize>,
        prompt: &[LlamaToken],
    ) -> Option<(usize, usize)> {
        let seen: Vec<(usize, usize, usize, u64)> = free
            .map(|id| {
                let (tokens, used) = &self.held[id];
                let shared = tokens
                    .iter()
                    .zip(prompt)
                    .take_while(|(a, b)| a == b)
                    .count();
                (id, shared, tokens.len(), *used)
            })
            .collect();
        let goes_on = seen
            .iter()
            .filter(|(_, shared, held, _)| *shared > 0 && shared * 2 >= *held)
            .max_by_key(|(_, shared, _, _)| *shared);
        let oldest = || {
            seen.iter()
                .min_by_key(|(_, _, held, used)| (*held > 0, *used))
        };
        goes_on
            .or_else(oldest)
            .map(|(id, shared, _, _)| (*id, *shared))
    }

    /// Sequence `id` now holds `tokens` (from position 0).
    pub(crate) fn keep(&mut self, id: usize, tokens: Vec<LlamaToken>) {
        self.clock += 1;
        self.held[id] = (tokens, self.clock);
    }

    /// Sequence `id` holds nothing that can be used (taken over, or its cells cleared).
    pub(crate) fn forget(&mut self, id: usize) {
        self.clock += 1;
        self.held[id] = (Vec::new(), self.clock);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ids: &[i32]) -> Vec<LlamaToken> {
        ids.iter().map(|&i| LlamaToken(i)).collect()
    }

    #[test]
    fn the_conversation_a_prompt_goes_on_from_wins_else_the_least_recently_used() {
        let mut p = Prefixes::new(3);
        p.keep(0, t(&[1, 2, 3]));
        p.keep(1, t(&[1, 2, 3, 4, 5]));
        // Both go on to [1, 2, 3, 4, 9]; slot 1 shares more.
        assert_eq!(p.choose(0..3, &t(&[1, 2, 3, 4, 9])), Some((1, 4)));
        // With slot 1 busy, slot 0 shares three.
        assert_eq!(
            p.choose([0, 2].into_iter(), &t(&[1, 2, 3, 4])),
            Some((0, 3))
        );
        // Nothing shared: the empty slot 2.
        assert_eq!(p.choose(0..3, &t(&[7])), Some((2, 0)));
        p.forget(2);
        // The empty slot still comes first, however recently it was emptied.
        assert_eq!(p.choose(0..3, &t(&[7])), Some((2, 0)));
        p.keep(2, t(&[8]));
        // None empty: the least recently used, slot 0, with what it shares.
        assert_eq!(p.choose(0..3, &t(&[1, 7])), Some((0, 1)));
        assert_eq!(p.choose(std::iter::empty(), &t(&[1])), None);
    }

    #[test]
    fn two_chats_with_one_system_prompt_keep_a_sequence_each() {
        // The template and system prompt are tokens 1..=4; chat A asks 10, chat B asks 20.
        let system = [1, 2, 3, 4];
        let turn = |chat: &[i32]| t(&[&system[..], chat].concat());
        let mut p = Prefixes::new(2);
        p.keep(0, turn(&[10, 11, 12, 13, 14]));
        // Chat B's first turn shares only the system prompt with A's: it takes the empty
        // sequence, and A's is kept.
        assert_eq!(p.choose(0..2, &turn(&[20, 21])), Some((1, 0)));
        p.keep(1, turn(&[20, 21]));
        // Each chat's next turn finds its own.
        assert_eq!(
            p.choose(0..2, &turn(&[10, 11, 12, 13, 14, 15, 16])),
            Some((0, 9))
        );
        assert_eq!(p.choose(0..2, &turn(&[20, 21, 22])), Some((1, 6)));
    }
}
