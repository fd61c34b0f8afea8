//! `kite chat`: a conversation in the terminal. A line editor (reedline) with history kept
//! across sessions and multi-line input; every turn is stored and can be resumed
//! (`-c`, `--conversation ID`); Ctrl-C while the model answers cancels that turn, and
//! Ctrl-C on an empty line or Ctrl-D ends the chat. Lines starting with `/` are commands
//! (`chat/slash.rs`). With standard input not a terminal, each line read is a message.

mod slash;

use crate::config::choose::SessionArgs;
use crate::session::{Ended, Session};
use crate::terminal::output::{Output, errln, error_line};
use crate::terminal::signals::{Claim, Interrupt};
use clap::Args;
use kite::{Error, Message};
use reedline::{
    DefaultPrompt, DefaultPromptSegment, EditCommand, Emacs, FileBackedHistory, KeyCode,
    KeyModifiers, Reedline, ReedlineEvent, Signal, ValidationResult, Validator,
    default_emacs_keybindings,
};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct ChatArgs {
    #[command(flatten)]
    session: SessionArgs,
}

pub(crate) async fn run(args: ChatArgs, config: Option<&Path>) -> Result<(), ExitCode> {
    match chat(args, config).await {
        Ok(0) => Ok(()),
        Ok(status) => Err(ExitCode::from(status)),
        Err(e) => {
            errln!("kite: {e}");
            Err(ExitCode::FAILURE)
        }
    }
}

/// Chats until the user leaves; the exit status (0, or a signal's).
async fn chat(args: ChatArgs, config: Option<&Path>) -> Result<u8, Error> {
    let loaded = crate::config::load(config)?;
    let mut session = Session::open(args.session, loaded, "kite chat").await?;
    let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let mut input = match terminal {
        // With --no-store, what is typed is not kept either.
        true => Input::editor(!session.args.no_store)?,
        false => Input::Lines,
    };
    greet(&session);
    loop {
        let line = match input.read().await {
            Ok(Some(line)) => line,
            Ok(None) => {
                // Leave the shell's prompt a line of its own.
                if terminal {
                    crate::terminal::output::write_raw("\n");
                }
                break;
            }
            Err(e) => {
                errln!("kite: {e}");
                break;
            }
        };
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        if let Some(command) = text.strip_prefix('/') {
            // A command that calls the model (/compact) can be cancelled like a turn.
            let claim = Claim::new();
            let ran = tokio::select! {
                ran = slash::run(&mut session, command) => Some(ran),
                () = claim.interrupted() => None,
            };
            if let Some(signal) = leaving(claim.finish()) {
                session.close().await;
                return Ok(signal);
            }
            match ran {
                Some(Ok(slash::Flow::Exit)) => break,
                Some(Ok(slash::Flow::Go)) => {}
                Some(Err(e)) => errln!("kite: {e}"),
                None => errln!("kite: cancelled"),
            }
            continue;
        }
        let mut out = Output::new(false).markdown(terminal);
        let claim = Claim::new();
        // What was attached goes with this question, and only this one.
        let mut question = Message::user(line.trim_end());
        question.parts.extend(
            std::mem::take(&mut session.attached)
                .into_iter()
                .map(|(_, p)| p),
        );
        let ended = session.turn(question, &mut out, claim.interrupted()).await;
        if let Some(signal) = leaving(claim.finish()) {
            // The turn is stored; now leave.
            session.close().await;
            return Ok(signal);
        }
        match ended {
            Ok(Ended::Cancelled) => {
                errln!("kite: cancelled; the question is kept, ask the next one")
            }
            Ok(_) => {}
            Err(_) if crate::terminal::output::stdout_closed() => break,
            Err(e) => {
                out.error(&e);
                errln!("kite: {}", error_line(&e));
            }
        }
    }
    session.close().await;
    Ok(0)
}

/// For SIGTERM or SIGHUP, which end the chat once what it was doing is stored: the exit
/// status, said on stderr. Ctrl-C only cancels.
fn leaving(signal: Option<Interrupt>) -> Option<u8> {
    let signal = signal.filter(|s| *s != Interrupt::Int)?;
    errln!("kite: {}", signal.what());
    Some(signal.status())
}

/// One line saying who the chat is with, and which conversation it continues.
fn greet(session: &Session) {
    let thread = &session.thread;
    let continuing = thread.conversation().map(|c| (c, thread.history.len()));
    match continuing {
        Some((c, messages)) => errln!(
            "kite: chatting with {}, continuing “{}” ({messages} messages). /help for \
             commands, Ctrl-D to leave.",
            session.chosen.name,
            c.title
        ),
        None => errln!(
            "kite: chatting with {}. /help for commands, Ctrl-D to leave.",
            session.chosen.name
        ),
    }
}

/// Where lines come from: the line editor on a terminal, else standard input's lines.
enum Input {
    Editor(Option<Box<Reedline>>),
    Lines,
}

impl Input {
    /// The line editor, with its history in kite's data folder when `keep`.
    fn editor(keep: bool) -> Result<Self, Error> {
        let mut keys = default_emacs_keybindings();
        // Ctrl-C comes back to kite, which clears a line or, on an empty one, leaves.
        keys.add_binding(
            KeyModifiers::CONTROL,
            KeyCode::Char('c'),
            ReedlineEvent::ExecuteHostCommand(CTRL_C.into()),
        );
        // Alt-Enter starts a new line in the message.
        keys.add_binding(
            KeyModifiers::ALT,
            KeyCode::Enter,
            ReedlineEvent::Edit(vec![EditCommand::InsertNewline]),
        );
        let mut editor = Reedline::create()
            .with_edit_mode(Box::new(Emacs::new(keys)))
            .with_validator(Box::new(Multiline))
            // A paste is one message, its control characters text, not keys.
            .use_bracketed_paste(true);
        if let Some(path) = history_path().filter(|_| keep) {
            match FileBackedHistory::with_file(1000, path.clone()) {
                Ok(h) => editor = editor.with_history(Box::new(h)),
                Err(e) => errln!(
                    "kite: the chat history {} cannot be used ({e}); this chat's lines are \
                     not kept",
                    path.display()
                ),
            }
        }
        Ok(Input::Editor(Some(Box::new(editor))))
    }

    /// The next line, or `None` at the end (Ctrl-D, Ctrl-C on an empty line, end of input).
    async fn read(&mut self) -> Result<Option<String>, Error> {
        match self {
            Input::Lines => {
                crate::terminal::blocking::off_runtime("reading standard input", || {
                    let mut line = String::new();
                    match std::io::stdin().read_line(&mut line) {
                        Ok(0) => Ok(None),
                        Ok(_) => Ok(Some(line)),
                        Err(e) => Err(Error::Config(format!("cannot read standard input: {e}"))),
                    }
                })
                .await?
            }
            Input::Editor(slot) => loop {
                let Some(mut editor) = slot.take() else {
                    return Ok(None);
                };
                let (editor, signal) =
                    crate::terminal::blocking::off_runtime("the line editor", move || {
                        let prompt = DefaultPrompt::new(
                            DefaultPromptSegment::Basic("kite".into()),
                            DefaultPromptSegment::Empty,
                        );
                        let signal = editor.read_line(&prompt);
                        (editor, signal)
                    })
                    .await?;
                let signal =
                    signal.map_err(|e| Error::Config(format!("the line editor failed: {e}")))?;
                let empty = editor.current_buffer_contents().trim().is_empty();
                *slot = Some(editor);
                match signal {
                    Signal::Success(line) => return Ok(Some(line.replace("\\\n", "\n"))),
                    Signal::HostCommand(c) if c == CTRL_C && !empty => {
                        if let Some(editor) = slot.as_mut() {
                            editor.run_edit_commands(&[EditCommand::Clear]);
                        }
                    }
                    Signal::HostCommand(c) if c == CTRL_C => return Ok(None),
                    Signal::CtrlD | Signal::CtrlC => return Ok(None),
                    _ => {}
                }
            },
        }
    }
}

/// What Ctrl-C sends back from the line editor.
const CTRL_C: &str = "kite:ctrl-c";

/// A message goes on over several lines while a line ends with `\` or a ``` block is open;
/// Alt-Enter also starts a new line.
struct Multiline;

impl Validator for Multiline {
    fn validate(&self, line: &str) -> ValidationResult {
        let fences = line
            .lines()
            .filter(|l| l.trim_start().starts_with("```"))
            .count();
        if line.ends_with('\\') || fences % 2 == 1 {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Complete
        }
    }
}

/// `chat_history` in kite's data folder, private to the user.
fn history_path() -> Option<PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = crate::config::private_data_dir().ok()?.join("chat_history");
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&path)
        .ok()?;
    Some(path)
}
