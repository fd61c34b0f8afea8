//! The chat's commands: lines starting with `/`.

use crate::session::{Compaction, Session};
use crate::terminal::output::{errln, outln, write_raw};
use kite::Error;

/// What the chat does after a command.
pub(crate) enum Flow {
    Go,
    Exit,
}

/// The commands and what they do, for `/help`.
const HELP: &[(&str, &str)] = &[
    ("/help", "this list"),
    (
        "/exit, /quit",
        "leave (also Ctrl-D, or Ctrl-C on an empty line)",
    ),
    ("/clear", "clear the screen"),
    ("/reset", "start a new conversation"),
    (
        "/model [NAME]",
        "show the model, or talk to NAME from now on",
    ),
    (
        "/system [TEXT]",
        "show the system prompt, or set it (`/system -` removes it)",
    ),
    ("/tools", "the tools the model may call"),
    (
        "/conversations [all]",
        "the latest stored conversations, or all of them",
    ),
    ("/load ID", "continue the stored conversation ID"),
    (
        "/attach [FILE]",
        "attach FILE (an image, a PDF, text) to the next question; alone, list them; `-` drops them",
    ),
    ("/compact", "summarize the older turns now"),
    ("/usage", "tokens used in this chat, and what they cost"),
];

/// Runs `line` (a command, without its `/`).
pub(crate) async fn run(session: &mut Session, line: &str) -> Result<Flow, Error> {
    let (name, rest) = line
        .trim()
        .split_once(char::is_whitespace)
        .map_or((line.trim(), ""), |(n, r)| (n, r.trim()));
    match name {
        "help" | "?" => help(),
        "exit" | "quit" | "q" => return Ok(Flow::Exit),
        "clear" => write_raw("\x1b[2J\x1b[3J\x1b[H"),
        "reset" => {
            session.thread.reset();
            errln!("kite: a new conversation begins");
        }
        "model" if rest.is_empty() => outln!("{}", session.chosen.name),
        "model" => {
            session.switch_model(rest)?;
            errln!("kite: now talking to {}", session.chosen.name);
        }
        "system" if rest.is_empty() => match &session.args.system {
            Some(s) => outln!("{s}"),
            None => errln!("kite: no system prompt"),
        },
        "system" => {
            session.set_system(if rest == "-" { "" } else { rest })?;
            errln!("kite: the system prompt is set for the next turns");
        }
        "tools" => tools(session),
        "attach" if rest.is_empty() => match session.attached.is_empty() {
            true => errln!("kite: nothing is attached (/attach FILE)"),
            false => {
                for (name, _) in &session.attached {
                    outln!("{}", crate::terminal::text::printable(name));
                }
            }
        },
        "attach" if rest == "-" => {
            session.attached.clear();
            errln!("kite: nothing is attached now");
        }
        "attach" => {
            let path = std::path::Path::new(rest);
            let part = crate::session::attach::part(path)?;
            session.attached.push((rest.to_owned(), part));
            errln!(
                "kite: {} goes with the next question",
                crate::terminal::text::printable(rest)
            );
        }
        "conversations" => conversations(session, rest == "all").await?,
        "load" if rest.is_empty() => {
            return Err(Error::Config(
                "/load needs a conversation's id (see /conversations)".into(),
            ));
        }
        "load" => {
            session.thread.load(rest).await?;
            session.say_if_another_model();
            let id = session.thread.conversation().map(|c| c.id.clone());
            errln!(
                "kite: continuing {} ({} messages)",
                id.as_deref().unwrap_or(rest),
                session.thread.history.len()
            );
        }
        "compact" => match session.compact(true).await? {
            Compaction::Done => errln!("kite: compacted"),
            Compaction::NotStored => errln!("kite: this chat is not stored (--no-store)"),
            Compaction::Empty | Compaction::NotDue => errln!("kite: nothing to compact yet"),
            Compaction::TooShort { keep } => errln!(
                "kite: nothing to compact: the last {keep} turns stay verbatim ([compact] keep)"
            ),
        },
        "usage" => {
            let (all, last) = (&session.usage, &session.last_usage);
            outln!(
                "this chat: {}\nlast turn: {}",
                crate::terminal::output::usage_line(all),
                crate::terminal::output::usage_line(last)
            );
        }
        other => {
            let names: Vec<&str> = HELP.iter().map(|(n, _)| *n).collect();
            return Err(Error::Config(format!(
                "unknown command /{other}; the commands are {}",
                names.join(" ")
            )));
        }
    }
    Ok(Flow::Go)
}

fn help() {
    for (name, what) in HELP {
        outln!("  {name:<16} {what}");
    }
    outln!("  Alt-Enter, a line ending in \\, or an open ``` block goes on to a new line.");
}

fn tools(session: &Session) {
    let specs = session.agent.tools().specs();
    if specs.is_empty() {
        errln!("kite: no tools (offer some with --tools, --tool NAME or kite.toml)");
    }
    for t in specs {
        let first = t.description.lines().next().unwrap_or_default();
        outln!("  {:<24} {first}", t.name);
    }
}

/// How many conversations `/conversations` shows, the latest first.
const LATEST: usize = 10;

async fn conversations(session: &Session, all: bool) -> Result<(), Error> {
    let Some(store) = session.thread.store() else {
        return Err(Error::Config("this chat is not stored (--no-store)".into()));
    };
    let current = session.thread.conversation().map(|c| c.id.clone());
    let stored = store.list().await.map_err(Error::other)?;
    if stored.is_empty() {
        errln!("kite: no conversations are stored yet");
    }
    let shown = if all { stored.len() } else { LATEST };
    for c in stored.iter().take(shown) {
        let mark = if Some(&c.id) == current.as_ref() {
            "*"
        } else {
            " "
        };
        outln!("{mark} {}", crate::commands::conversations::line(c));
    }
    if stored.len() > shown {
        errln!(
            "kite: {} older conversations not shown (/conversations all shows them; /load \
             takes the start of an id)",
            stored.len() - shown
        );
    }
    Ok(())
}
