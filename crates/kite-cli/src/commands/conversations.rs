//! `kite conversations`: list, show, delete and export the stored conversations.

use crate::config;
use crate::terminal::output::{errln, out, outln};
use clap::{Subcommand, ValueEnum};
use kite::store::{Store, StoredTurn};
use kite::{Error, Message, Part, Role};
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;

#[derive(Subcommand)]
pub(crate) enum ConversationsCommand {
    /// The stored conversations, most recent first.
    List {
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// A conversation's turns.
    Show {
        /// The conversation's id.
        id: String,
        /// The turns as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Deletes a conversation.
    Delete {
        /// The conversation's id.
        id: String,
    },
    /// Writes a conversation out, archived turns included.
    Export {
        /// The conversation's id.
        id: String,
        /// The format.
        #[arg(long, value_enum, default_value_t = Format::Markdown, ignore_case = true)]
        format: Format,
    },
}

/// How a conversation is exported.
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum Format {
    /// Readable Markdown.
    Markdown,
    /// The conversation and its turns as JSON.
    Json,
}

pub(crate) async fn run(cmd: ConversationsCommand, config: Option<&Path>) -> Result<(), ExitCode> {
    command(cmd, config).await.map_err(|e| {
        errln!("kite: {e}");
        ExitCode::FAILURE
    })
}

async fn command(cmd: ConversationsCommand, config: Option<&Path>) -> Result<(), Error> {
    let loaded = config::load(config)?;
    let store = crate::session::history::open(&loaded.config.store).await?;
    let store: &dyn Store = &*store;
    let err = Error::other;
    match cmd {
        ConversationsCommand::List { json } => {
            let all = store.list().await.map_err(err)?;
            if all.is_empty() && !json {
                errln!(
                    "kite: no conversations are stored yet (`kite ask` and `kite chat` keep theirs)"
                );
            }
            for c in all {
                if json {
                    outln!("{}", serde_json::to_string(&c).unwrap_or_default());
                } else {
                    outln!("{}", line(&c));
                }
            }
        }
        ConversationsCommand::Show { id, json } => {
            let id = crate::session::history::resolve(store, &id).await?;
            let turns = store.turns(&id).await.map_err(err)?;
            if json {
                outln!("{}", serde_json::to_string(&turns).unwrap_or_default());
            } else {
                let mut total = kite::Usage::default();
                for t in &turns {
                    show(t);
                    total += t.turn.usage;
                }
                outln!("total: {}", crate::terminal::output::usage_line(&total));
            }
        }
        ConversationsCommand::Delete { id } => {
            let id = crate::session::history::resolve(store, &id).await?;
            if !store.delete(&id).await.map_err(err)? {
                return Err(Error::Config(format!("no conversation {id}")));
            }
            outln!("deleted {id}");
        }
        ConversationsCommand::Export { id, format } => {
            let id = crate::session::history::resolve(store, &id).await?;
            let c = store.get(&id).await.map_err(err)?;
            let turns = store.turns(&id).await.map_err(err)?;
            match format {
                Format::Json => outln!(
                    "{}",
                    serde_json::to_string_pretty(&json!({"conversation": c, "turns": turns}))
                        .unwrap_or_default()
                ),
                Format::Markdown => {
                    outln!("# {}\n", c.title);
                    for t in &turns {
                        markdown(t);
                    }
                }
            }
        }
    }
    Ok(())
}

/// A turn as lines: who said what, tool calls and their results.
fn show(t: &StoredTurn) {
    let archived = if t.archived { " (archived)" } else { "" };
    outln!("--- turn {}{archived}", t.number);
    for m in &t.turn.messages {
        for line in lines(m, true) {
            outln!("{line}");
        }
    }
    if t.turn.cut_short {
        outln!("(the answer was cut short here; the tokens of its last call are not counted)");
    }
}

fn markdown(t: &StoredTurn) {
    for m in &t.turn.messages {
        let who = match m.role {
            Role::User => "You",
            Role::Assistant => "Assistant",
            Role::Tool => "Tools",
            _ => "System",
        };
        outln!("## {who}\n");
        for line in lines(m, false) {
            // A line of the conversation never passes for a heading of the export.
            for l in line.lines() {
                match l.starts_with('#') {
                    true => out!("\\{l}\n"),
                    false => out!("{l}\n"),
                }
            }
        }
        outln!();
    }
}

/// What a message says, a line per part, each after who said it when `named`.
fn lines(m: &Message, named: bool) -> Vec<String> {
    let who = match (named, m.role) {
        (false, _) => String::new(),
        (true, Role::User) => "user: ".into(),
        (true, Role::Assistant) => "assistant: ".into(),
        (true, Role::Tool) => "tool: ".into(),
        (true, _) => "system: ".into(),
    };
    m.parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } => Some(format!("{who}{text}")),
            Part::Refusal { text } => Some(format!("{who}(refused) {text}")),
            Part::ToolCall(c) => Some(format!("[tool] {}({})", c.name, c.arguments)),
            Part::ToolResult(r) => Some(match &r.name {
                Some(name) => format!("[tool] {name} -> {}", r.text_content()),
                None => format!("[tool] -> {}", r.text_content()),
            }),
            Part::Image { .. } => Some(format!("{who}[an image]")),
            Part::Document(d) => Some(format!(
                "{who}[a document{}]",
                d.title
                    .as_ref()
                    .map(|t| format!(": {t}"))
                    .unwrap_or_default()
            )),
            _ => None,
        })
        .collect()
}

/// A conversation in one line: its id, when it last changed, and its title.
pub(crate) fn line(c: &kite::store::Conversation) -> String {
    let when = chrono::DateTime::from_timestamp_millis(c.updated_ms)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_default();
    format!("{}  {when}  {}", c.id, c.title)
}
