//! A session: the agent a command talks through (its model, system prompt, built-in tools
//! and MCP servers), and the stored conversation its turns join. `kite ask` runs one turn,
//! `kite chat` many. Before a turn, a stored conversation past its `[compact]` policy is
//! compacted; after it, the turn is saved, as far as it is consistent when an error or
//! Ctrl-C cut it short.

mod agent;
pub(crate) mod attach;
pub(crate) mod history;
mod notices;

use crate::config::Loaded;
use crate::config::choose::{Chosen, SessionArgs, choose_model};
use crate::config::settings::CompactPolicy;
use crate::session::history::Thread;
use crate::terminal::output::{Output, errln};
use crate::terminal::waiting::Waiting;
use agent::{agent, check_tool_choice, say_servers};
use kite::agent::builtin;
use kite::skills::SkillRun;
use kite::store::Turn;
use kite::store::compact::{Compactor, DEFAULT_PROMPT, Policy};
use kite::{Agent, AgentError, AgentEvent, Error, Message, StopReason, StreamExt, Usage};
use std::future::Future;
use std::io::IsTerminal;
use std::time::Duration;

/// What compaction did.
pub(crate) enum Compaction {
    /// The older turns are summarized and archived.
    Done,
    /// The conversation is not stored (`--no-store`).
    NotStored,
    /// No turn yet.
    Empty,
    /// Its policy does not call for it.
    NotDue,
    /// No more turns than are kept verbatim.
    TooShort { keep: usize },
}

/// How a turn ended.
pub(crate) enum Ended {
    /// The model answered.
    Answered,
    /// The run stopped without an answer (the turn limit, a hook); said on stderr.
    Stopped,
    /// Interrupted; what was consistent is saved.
    Cancelled,
}

pub(crate) struct Session {
    pub args: SessionArgs,
    pub loaded: Loaded,
    pub agent: Agent,
    pub chosen: Chosen,
    hub: Option<kite::mcp::Hub>,
    /// The skills on offer, with the run's workspace (removed when the session ends).
    skills: Option<SkillRun>,
    pub thread: Thread,
    /// How long the model may stay silent.
    limit: Duration,
    /// Usage of this session's turns.
    pub usage: Usage,
    pub last_usage: Usage,
    /// Files attached (`/attach`) to the next question, read already.
    pub attached: Vec<(String, kite::Part)>,
}

impl Session {
    /// Sets up the model, the agent and its tools, and the stored conversation, for
    /// `command` (`kite ask`, `kite chat`: the route its spending is recorded under).
    pub(crate) async fn open(
        args: SessionArgs,
        loaded: Loaded,
        command: &'static str,
    ) -> Result<Self, Error> {
        let args = args.with_defaults(&loaded.config)?;
        let chosen = choose_model(&args, &loaded.config.http)?;
        // Configured MCP servers: their tools join the agent's, their sampling requests go
        // to the same model.
        let hub = match args.no_mcp {
            true => None,
            false => {
                let sampling = Some((chosen.model.clone(), chosen.name.clone()));
                Some(crate::commands::mcp::connect(&loaded, None, sampling, true).await?)
            }
        };
        let skills =
            crate::commands::skills::for_session(&args.skills, &loaded, chosen.local).await?;
        let agent = agent(&args, &chosen, None, skills.as_ref(), &loaded.config.prices)?;
        if args.tools || !args.tool.is_empty() {
            let cwd = std::env::current_dir()
                .map_err(|e| Error::Config(format!("cannot find the working directory: {e}")))?;
            let tools = builtin::all(&cwd, &crate::config::own_paths(&loaded))
                .map_err(|e| Error::Config(format!("cannot set up the file tools: {e}")))?;
            for t in tools {
                if args.tools || args.tool.iter().any(|n| n == &t.spec().name) {
                    agent.tools().add_arc(t);
                }
            }
        }
        if let Some(hub) = &hub {
            hub.bind(agent.tools());
            say_servers(hub);
        }
        check_tool_choice(&agent, &args)?;
        let limit = loaded
            .config
            .http
            .timeouts(args.at.timeout, args.at.idle_timeout)
            .response;
        let thread = match args.no_store {
            true => Thread::memory(),
            false => {
                let backend = crate::session::history::open_backend(&loaded.config.store).await?;
                let id = args.conversation.as_deref();
                Thread::begin(backend, command, args.continue_last, id).await?
            }
        };
        let session = Self {
            args,
            loaded,
            agent,
            chosen,
            hub,
            skills,
            thread,
            limit,
            usage: Usage::default(),
            last_usage: Usage::default(),
            attached: Vec::new(),
        };
        session.warn_of_crowded_context();
        session.say_if_another_model();
        Ok(session)
    }

    /// Talks to the model `name` from now on (same provider and settings).
    pub(crate) fn switch_model(&mut self, name: &str) -> Result<(), Error> {
        if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(Error::Config(format!("{name:?} is not a model's name")));
        }
        if self.chosen.local {
            return Err(Error::Config(
                "the local model is the only one here; name a provider (--provider) to choose \
                 between models"
                    .into(),
            ));
        }
        let mut args = self.args.clone();
        args.model = Some(name.to_owned());
        let chosen = choose_model(&args, &self.loaded.config.http)?;
        self.agent = agent(
            &args,
            &chosen,
            Some(&self.agent),
            self.skills.as_ref(),
            &self.loaded.config.prices,
        )?;
        (self.args, self.chosen) = (args, chosen);
        Ok(())
    }

    /// Gives the model new system instructions (none when empty; `{date}` is today's).
    pub(crate) fn set_system(&mut self, system: &str) -> Result<(), Error> {
        self.args.system = Some(system.to_owned()).filter(|s| !s.trim().is_empty());
        self.agent = agent(
            &self.args,
            &self.chosen,
            Some(&self.agent),
            self.skills.as_ref(),
            &self.loaded.config.prices,
        )?;
        Ok(())
    }

    /// Compacts the stored conversation: when `[compact]` says it is due, or always with
    /// `force`.
    pub(crate) async fn compact(&mut self, force: bool) -> Result<Compaction, Error> {
        let Some(store) = self.thread.store() else {
            return Ok(Compaction::NotStored);
        };
        let Some(id) = self.thread.conversation().map(|c| c.id.clone()) else {
            return Ok(Compaction::Empty);
        };
        let config = &self.loaded.config.compact;
        let kind = config.policy.unwrap_or_default();
        if kind == CompactPolicy::Off && !force {
            return Ok(Compaction::NotDue);
        }
        let keep = config.turns_kept();
        let window = u64::from(self.chosen.window.unwrap_or(128_000));
        // Three quarters of the window, in the policy's unit (about 4 bytes a token, and a
        // message of 200 tokens).
        let tokens = window * 3 / 4;
        let policy = match kind {
            CompactPolicy::Bytes => Policy::Bytes {
                max: config.max.unwrap_or(tokens * 4) as usize,
                keep,
            },
            CompactPolicy::Messages => Policy::Messages {
                max: config.max.unwrap_or(tokens / 200) as usize,
                keep,
            },
            CompactPolicy::Tokens | CompactPolicy::Off => Policy::Tokens {
                max: config.max.unwrap_or(tokens),
                keep,
            },
        };
        let prompt = self.loaded.config.prompts.summarize.as_deref();
        let say = || {
            errln!("kite: compacting the conversation (older turns are summarized and archived)")
        };
        let compacted = Compactor::new(policy)
            .prompt(prompt.unwrap_or(DEFAULT_PROMPT))
            .tokens(&*self.chosen.tokens)
            .on_start(&say)
            .run(store, &id, &*self.chosen.model, &self.chosen.name, force)
            .await
            .map_err(Error::other)?;
        Ok(match compacted {
            Some(_) => {
                self.thread.load(&id).await?;
                Compaction::Done
            }
            None if force => Compaction::TooShort { keep },
            None => Compaction::NotDue,
        })
    }

    /// One turn: `question` and everything it leads to, printed through `out` as it comes,
    /// until the model answers, the run stops, or `interrupt` resolves (then the turn is
    /// cancelled, compaction before it included). The turn is kept, as far as it is
    /// consistent, whatever the outcome.
    pub(crate) async fn turn(
        &mut self,
        question: Message,
        out: &mut Output,
        interrupt: impl Future<Output = ()>,
    ) -> Result<Ended, AgentError> {
        let mut interrupt = std::pin::pin!(interrupt);
        let started = std::time::Instant::now();
        if self
            .args
            .system
            .as_deref()
            .is_some_and(|s| s.contains("{date}"))
        {
            // The date moves on in a long chat.
            self.agent = agent(
                &self.args,
                &self.chosen,
                Some(&self.agent),
                self.skills.as_ref(),
                &self.loaded.config.prices,
            )?;
        }
        tokio::select! {
            compacted = self.compact(false) => if let Err(e) = compacted {
                errln!("kite: the conversation could not be compacted: {e}");
            },
            () = &mut interrupt => {
                // Cut short before the model was asked: the question is kept.
                self.thread.save(question, &[], Turn::default()).await?;
                return Ok(Ended::Cancelled);
            }
        }
        let mut history = self.thread.history.clone();
        history.push(question.clone());
        let mut stream = self.agent.run_stream((), history);
        let mut waiting = Waiting::new(std::io::stderr().is_terminal(), self.limit);
        // A run that does not end soon after it was cancelled (a tool that ignores it) is
        // dropped.
        let mut give_up = std::pin::pin!(tokio::time::sleep(Duration::MAX));
        let mut ticks = tokio::time::interval(Duration::from_millis(250));
        let mut interrupted = false;
        // The text shown of the model call under way, and how many calls began: an answer
        // cut short is kept as far as it was shown.
        let (mut shown, mut calls) = (String::new(), 0);
        let outcome = loop {
            tokio::select! {
                event = stream.next() => {
                    waiting.event(event.as_ref().and_then(|e| e.as_ref().ok()));
                    match event {
                        Some(Ok(AgentEvent::Done(run))) => break Ok(*run),
                        Some(Ok(e)) => {
                            match &e {
                                AgentEvent::Model(kite::Event::Start { .. }) => {
                                    shown.clear();
                                    calls += 1;
                                }
                                AgentEvent::Model(kite::Event::TextDelta { text, .. }) => {
                                    shown.push_str(text)
                                }
                                _ => {}
                            }
                            out.event(&e)
                        }
                        Some(Err(e)) => break Err(e),
                        None => break Err(Error::Cancelled.into()),
                    }
                    if crate::terminal::output::stdout_closed() {
                        // Dropping the stream cancels the model call.
                        break Err(Error::Cancelled.into());
                    }
                }
                () = &mut interrupt, if !interrupted => {
                    interrupted = true;
                    stream.cancel();
                    give_up.as_mut().reset(tokio::time::Instant::now() + Duration::from_secs(5));
                }
                () = &mut give_up => break Err(Error::Cancelled.into()),
                _ = ticks.tick() => if let Err(e) = waiting.tick(out.mid_line()) {
                    break Err(e.into());
                },
            }
        };
        let run = outcome.as_ref().ok();
        let failed = match run {
            Some(_) => None,
            None => stream.failed_run(),
        };
        drop(stream);
        let mut turn = Turn {
            provider: Some(self.chosen.model.origin().provider),
            model: Some(self.chosen.name.clone()),
            ..Turn::default()
        };
        let answers = match run.or(failed.as_ref()) {
            Some(run) => {
                turn.usage = run.usage();
                // The conversation's size at its last call, as the provider counted it.
                let last = run.last_call_usage();
                turn.context_tokens =
                    (last.input_tokens > 0).then_some(last.input_tokens + last.output_tokens);
                run.new_messages()
            }
            None => &[],
        };
        let mut answers = answers.to_vec();
        let cut = interrupted
            || failed.is_some()
            || run.is_some_and(|r| matches!(r.stop_reason(), Some(StopReason::Cancelled)));
        let said = answers
            .iter()
            .filter(|m| m.role == kite::Role::Assistant)
            .count();
        if cut && calls > said && !shown.is_empty() {
            answers.push(kite::Message::assistant(shown));
            turn.cut_short = true;
        }
        // The local model costs nothing, even for a call cut off before it counted.
        if self.chosen.local && turn.usage.cost.is_none() {
            turn.usage.cost = Some(0.0);
        }
        self.usage += turn.usage;
        self.last_usage = turn.usage;
        self.thread.spent(&turn, started.elapsed()).await;
        // A question that failed before any answer does not begin a conversation of its own
        // (one under way keeps it, as it keeps a cancelled one).
        let unanswered = answers.is_empty() && outcome.is_err() && !interrupted;
        if unanswered && self.thread.conversation().is_none() {
            return Err(outcome.err().unwrap_or_else(|| Error::Cancelled.into()));
        }
        if let Err(e) = self.thread.save(question, &answers, turn).await {
            errln!("kite: this turn could not be stored; the conversation keeps its earlier turns");
            return Err(e.into());
        }
        if let Some(c) = self.thread.conversation() {
            out.conversation(&c.id);
        }
        let run = match outcome {
            Err(AgentError::Model(Error::Cancelled)) if interrupted => {
                out.error(&Error::Cancelled.into());
                return Ok(Ended::Cancelled);
            }
            other => other?,
        };
        let answered = out.done(&run);
        if answered && self.chosen.local {
            self.say_if_ungrounded(&run);
        }
        Ok(match run.stop_reason() {
            Some(StopReason::Cancelled) => Ended::Cancelled,
            _ if answered => Ended::Answered,
            _ => Ended::Stopped,
        })
    }

    /// Says when the local model answered without calling any of the tools it was offered:
    /// what it said then is its own guess. (Not for an answer cut at the token limit, which
    /// is said already, and may have been cut inside its call.)
    fn say_if_ungrounded(&self, run: &kite::Run) {
        if let Some(StopReason::Finished {
            finish_reason: kite::FinishReason::Length,
        }) = run.stop_reason()
        {
            return;
        }
        let offered = self.agent.tools().specs();
        let called = run
            .new_messages()
            .iter()
            .flat_map(|m| &m.parts)
            .any(|p| matches!(p, kite::Part::ToolCall(_)));
        if !offered.is_empty() && !called {
            let names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
            errln!(
                "kite: the local model answered without calling a tool ({}), so the answer is \
                 its own guess; --tool-choice required makes it call one first",
                names.join(", ")
            );
        }
    }

    /// Ends the session: its MCP servers are closed.
    pub(crate) async fn close(self) {
        if let Some(hub) = self.hub {
            crate::commands::mcp::known::keep(&hub, &self.loaded.config.mcp.servers);
            hub.close().await;
        }
    }
}
