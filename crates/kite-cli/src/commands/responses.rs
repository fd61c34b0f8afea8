//! `kite responses`: reattach to responses OpenAI stores (background runs above all).

use crate::terminal::output::error_line;
use crate::terminal::output::{errln, outln};
use clap::{Args, Subcommand};
use kite::wire::openai_responses::Stored;
use kite::{Endpoint, Error, OpenAiResponses, PollPolicy, Provider, Response};
use serde_json::json;
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct ResponsesArgs {
    #[command(subcommand)]
    command: ResponsesCommand,
    /// Send requests here instead of OpenAI (a proxy or a compatible server).
    #[arg(long, env = "KITE_BASE_URL", global = true)]
    base_url: Option<String>,
    /// Print JSON, for scripts.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Subcommand)]
enum ResponsesCommand {
    /// Show a response's status, and its answer once it is done.
    Get { id: String },
    /// Wait until a response is done and print its answer.
    Wait {
        id: String,
        /// Give up after this many seconds.
        #[arg(long, value_name = "SECS", value_parser = crate::config::seconds)]
        timeout: Option<std::time::Duration>,
    },
    /// Cancel a background run.
    Cancel { id: String },
    /// Delete a stored response.
    Delete { id: String },
}

pub(crate) async fn run(args: ResponsesArgs) -> Result<(), ExitCode> {
    match command(&args).await {
        Ok(()) => Ok(()),
        Err(e) => {
            let e = kite::AgentError::from(e);
            if args.json {
                outln!("{}", json!({"type": "error", "message": error_line(&e)}));
            }
            errln!("kite: {}", error_line(&e));
            Err(ExitCode::FAILURE)
        }
    }
}

async fn command(args: &ResponsesArgs) -> Result<(), Error> {
    let model: OpenAiResponses = Provider::OpenAi.responses(
        "",
        &Endpoint {
            base_url: args.base_url.clone(),
            ..Endpoint::default()
        },
    )?;
    match &args.command {
        ResponsesCommand::Get { id } => show(args.json, model.get(id).await?),
        ResponsesCommand::Cancel { id } => show(args.json, model.cancel(id).await?),
        ResponsesCommand::Wait { id, timeout } => {
            let poll = PollPolicy {
                timeout: *timeout,
                ..PollPolicy::default()
            };
            let answer = model.wait(id, poll).await?;
            answer_out(args.json, id, "done", &answer);
            Ok(())
        }
        ResponsesCommand::Delete { id } => {
            model.delete(id).await?;
            if args.json {
                outln!("{}", json!({"id": id, "deleted": true}));
            } else {
                outln!("deleted {id}");
            }
            Ok(())
        }
    }
}

fn show(as_json: bool, stored: Stored) -> Result<(), Error> {
    match stored.result {
        Some(Ok(answer)) => answer_out(as_json, &stored.id, stored.status.as_str(), &answer),
        Some(Err(e)) => return Err(e),
        None if as_json => {
            outln!(
                "{}",
                json!({"id": stored.id, "status": stored.status.as_str()})
            )
        }
        None => outln!("{} {}", stored.id, stored.status.as_str()),
    }
    Ok(())
}

fn answer_out(as_json: bool, id: &str, status: &str, answer: &Response) {
    if as_json {
        outln!(
            "{}",
            json!({"id": id, "status": status, "text": answer.text(),
                   "finish_reason": answer.finish_reason, "usage": answer.usage})
        );
    } else {
        outln!("{}", answer.text());
        errln!(
            "kite: {id} {status} ({}, {} tokens in, {} out)",
            answer.finish_reason,
            answer.usage.input_tokens,
            answer.usage.output_tokens
        );
    }
}
