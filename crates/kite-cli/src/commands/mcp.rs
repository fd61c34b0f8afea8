//! MCP servers from `kite.toml`: connected for `kite ask`, `kite mcp list|call` for
//! quick checks, and `kite mcp login|logout` for those that ask for OAuth.

pub(crate) mod known;
mod login;
mod sampling;

use crate::config;
use crate::terminal::output::{err, errln, outln};
use crate::terminal::text::printable;
use clap::Subcommand;
use kite::mcp::{ElicitAnswer, Elicitation, Elicitor, Hub, HubOptions, ServerReport, ServerStatus};
use kite::{Error, Model};
use serde_json::{Map, Value, json};
use std::future::Future;
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Subcommand)]
pub(crate) enum McpCommand {
    /// Connect to every configured server and show its status and tools.
    List {
        /// One JSON object per server.
        #[arg(long)]
        json: bool,
    },
    /// Log in to a server that asks for OAuth: the browser opens (or the URL is printed),
    /// and the login is kept for `kite ask`, `chat` and `serve`.
    Login {
        /// The server's name in kite.toml.
        server: String,
        /// Keep this login apart, under a name of yours (`account = "WHO"` in the server's
        /// `oauth` table uses it); by default the server's one login.
        #[arg(long, value_name = "WHO")]
        account: Option<String>,
        /// Print the URL to open instead of opening a browser.
        #[arg(long)]
        no_browser: bool,
    },
    /// Forget the login kept for a server.
    Logout {
        /// The server's name in kite.toml.
        server: String,
        /// The account whose login to forget.
        #[arg(long, value_name = "WHO")]
        account: Option<String>,
    },
    /// Call one tool of one configured server and print what it returns.
    Call {
        /// The server's name in kite.toml.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// The arguments, as a JSON object.
        #[arg(default_value = "{}")]
        arguments: String,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// A hub with every server of the configuration, connected (those that fail are reported
/// on stderr and retried in the background); `soon`: servers whose tools are known from
/// before (`known.rs`) are connected in the background instead, their tools offered at
/// once. Servers' sampling requests go to `sampler` once a person allows each
/// (`sampling.rs`), within `[mcp.sampling]`'s limits; their questions go to the terminal.
pub(crate) async fn connect(
    loaded: &config::Loaded,
    only: Option<&str>,
    sampler: Option<(Arc<dyn Model>, String)>,
    soon: bool,
) -> Result<Hub, Error> {
    let mut servers = loaded.config.mcp.servers.clone();
    if let Some(name) = only {
        let Some(server) = servers.remove(name) else {
            let known: Vec<&String> = servers.keys().collect();
            return Err(Error::Config(match &loaded.path {
                Some(p) => format!(
                    "no MCP server {name:?} in {} (it has {known:?})",
                    p.display()
                ),
                None => format!("no MCP server {name:?}: no kite.toml was found"),
            }));
        };
        servers = [(name.to_owned(), server)].into();
    }
    let hub = Hub::with_options(HubOptions {
        sampler: sampler.map(|(model, name)| {
            let price = crate::commands::prices::pricer(&loaded.config.prices);
            let ask = loaded.config.mcp.sampling.ask.unwrap_or(true);
            Arc::new(sampling::Approving::new(model, name, price, ask))
                as Arc<dyn kite::mcp::Sampler>
        }),
        sampling: loaded.config.mcp.sampling.limits(),
        elicitor: Some(Arc::new(Terminal)),
        roots: std::env::current_dir()
            .ok()
            .map(|d| vec![(format!("file://{}", d.display()), None)])
            .unwrap_or_default(),
        oauth: login::options(),
        ..HubOptions::default()
    });
    let mut now = Vec::new();
    for (id, server) in servers {
        match soon.then(|| known::load(&id, &server)).flatten() {
            Some(tools) => hub.add_known(id, server, tools),
            None => now.push((id, server)),
        }
    }
    let adds = now.into_iter().map(|(id, server)| {
        let hub = hub.clone();
        async move { hub.add(id, server).await }
    });
    for result in futures_util::future::join_all(adds).await {
        if let Err(e) = result {
            errln!("kite: {e}; its tools are not offered until it is back");
        }
    }
    Ok(hub)
}

pub(crate) async fn run(command: McpCommand, config: Option<&Path>) -> Result<(), ExitCode> {
    let fail = |e: Error| {
        errln!("kite: {e}");
        ExitCode::FAILURE
    };
    match command {
        McpCommand::Login {
            server,
            account,
            no_browser,
        } => {
            let loaded = config::load(config).map_err(fail)?;
            login::login(&loaded, &server, account, no_browser).await
        }
        McpCommand::Logout { server, account } => login::logout(&server, account),
        McpCommand::List { json } => {
            let loaded = config::load(config).map_err(fail)?;
            let hub = connect(&loaded, None, None, false).await.map_err(fail)?;
            let servers = hub.servers();
            if servers.is_empty() {
                errln!(
                    "kite: no MCP servers are configured (see `[mcp.servers.NAME]` in kite.toml)"
                );
            }
            for s in &servers {
                if json {
                    outln!("{}", report_json(&loaded, s));
                } else {
                    print_report(&loaded, s);
                }
            }
            hub.close().await;
            let down = servers
                .iter()
                .any(|s| matches!(s.status, ServerStatus::Down { .. }));
            if down { Err(ExitCode::FAILURE) } else { Ok(()) }
        }
        McpCommand::Call {
            server,
            tool,
            arguments,
            json,
        } => {
            let args: Value = serde_json::from_str(&arguments)
                .map_err(|e| fail(Error::Config(format!("the arguments are not JSON: {e}"))))?;
            if !args.is_object() {
                return Err(fail(Error::Config(
                    "the arguments must be a JSON object".into(),
                )));
            }
            let loaded = config::load(config).map_err(fail)?;
            let hub = connect(&loaded, Some(&server), None, false)
                .await
                .map_err(fail)?;
            let result = hub.call(&server, &tool, args).await;
            hub.close().await;
            let result = result.map_err(|e| {
                errln!("kite: {e}");
                ExitCode::FAILURE
            })?;
            if json {
                outln!(
                    "{}",
                    json!({"content": result.content, "structuredContent": result.structured, "isError": result.is_error})
                );
            } else {
                for block in &result.content {
                    match block["type"].as_str() {
                        Some("text") => outln!("{}", block["text"].as_str().unwrap_or_default()),
                        Some("image" | "audio") => outln!(
                            "[{} {}, {} base64 characters]",
                            block["type"].as_str().unwrap_or_default(),
                            block["mimeType"].as_str().unwrap_or("?"),
                            block["data"].as_str().map_or(0, str::len)
                        ),
                        _ => outln!("{block}"),
                    }
                }
                if let Some(s) = &result.structured
                    && result.content.is_empty()
                {
                    outln!("{s}");
                }
            }
            if result.is_error {
                errln!("kite: the tool {tool:?} reported an error");
                return Err(ExitCode::FAILURE);
            }
            Ok(())
        }
    }
}

fn print_report(loaded: &config::Loaded, s: &ServerReport) {
    match &s.status {
        ServerStatus::Up {
            protocol,
            name,
            pid,
        } => {
            let pid = pid.map(|p| format!(", pid {p}")).unwrap_or_default();
            outln!(
                "{}: up ({name:?}, protocol {protocol}{pid}), {} tools",
                s.id,
                s.tools.len()
            );
        }
        ServerStatus::Starting => outln!("{}: starting, {} tools known", s.id, s.tools.len()),
        ServerStatus::Down { error } => outln!("{}: down: {}", s.id, printable(error)),
    }
    if let Some(state) = login::state(loaded, &s.id) {
        outln!("  login: {state}");
    }
    for (exposed, remote) in &s.tools {
        if exposed == remote {
            outln!("  {exposed}");
        } else {
            outln!("  {exposed} (on the server: {})", printable(remote));
        }
    }
}

fn report_json(loaded: &config::Loaded, s: &ServerReport) -> Value {
    let tools: Vec<Value> = s
        .tools
        .iter()
        .map(|(exposed, remote)| json!({"name": exposed, "remote": remote}))
        .collect();
    let mut v = match &s.status {
        ServerStatus::Up {
            protocol,
            name,
            pid,
        } => {
            json!({"server": s.id, "status": "up", "protocol": protocol, "name": name, "pid": pid, "tools": tools})
        }
        ServerStatus::Starting => json!({"server": s.id, "status": "starting", "tools": tools}),
        ServerStatus::Down { error } => {
            json!({"server": s.id, "status": "down", "error": error, "tools": tools})
        }
    };
    if let Some(state) = login::state(loaded, &s.id) {
        v["login"] = state.into();
    }
    v
}

/// Servers' questions (elicitation), asked on the terminal: each field in turn, Enter
/// for its default. Without a terminal the question is declined.
struct Terminal;

impl Elicitor for Terminal {
    fn elicit(
        &self,
        server: &str,
        request: Elicitation,
    ) -> Pin<Box<dyn Future<Output = ElicitAnswer> + Send + 'static>> {
        let server = server.to_owned();
        Box::pin(async move {
            if !std::io::stdin().is_terminal() {
                errln!(
                    "kite: MCP server {server:?} asks: {} (declined: no terminal to ask on)",
                    request.message
                );
                return ElicitAnswer::Decline;
            }
            tokio::task::spawn_blocking(move || ask(&server, &request))
                .await
                .unwrap_or(ElicitAnswer::Cancel)
        })
    }
}

fn ask(server: &str, request: &Elicitation) -> ElicitAnswer {
    let stdin = std::io::stdin();
    let read = || {
        let mut line = String::new();
        match stdin.lock().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim().to_owned()),
        }
    };
    errln!("\nkite: MCP server {server:?} asks: {}", request.message);
    err!("answer? [y]es, [n]o, [c]ancel: ");
    let _ = std::io::stderr().flush();
    match read().as_deref() {
        Some("y" | "yes" | "") => {}
        Some("n" | "no") => return ElicitAnswer::Decline,
        _ => return ElicitAnswer::Cancel,
    }
    let mut answer = Map::new();
    for (name, property) in request.schema["properties"]
        .as_object()
        .into_iter()
        .flatten()
    {
        // What the server wrote is shown, never obeyed: no control characters reach the
        // terminal from it.
        let label = printable(property["title"].as_str().unwrap_or(name)).into_owned();
        let hint = property["description"]
            .as_str()
            .map(|d| format!(" ({})", printable(d)))
            .unwrap_or_default();
        let default = property
            .get("default")
            .map(|d| format!(" [{}]", printable(&d.to_string())))
            .unwrap_or_default();
        loop {
            err!("  {label}{hint}{default}: ");
            let _ = std::io::stderr().flush();
            let Some(line) = read() else {
                return ElicitAnswer::Cancel;
            };
            if line.is_empty() {
                break;
            }
            match typed(property, &line) {
                Ok(v) => {
                    answer.insert(name.clone(), v);
                    break;
                }
                Err(why) => errln!("  {why}"),
            }
        }
    }
    ElicitAnswer::Accept(answer)
}

/// A typed-in answer as the schema's type.
fn typed(property: &Value, line: &str) -> Result<Value, String> {
    match property["type"].as_str() {
        Some("integer") => line
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "a whole number, please".into()),
        Some("number") => line
            .parse::<f64>()
            .map(Value::from)
            .map_err(|_| "a number, please".into()),
        Some("boolean") => match line {
            "y" | "yes" | "true" => Ok(Value::Bool(true)),
            "n" | "no" | "false" => Ok(Value::Bool(false)),
            _ => Err("yes or no, please".into()),
        },
        Some("array") => Ok(Value::Array(
            line.split(',').map(|s| Value::from(s.trim())).collect(),
        )),
        _ => Ok(Value::from(line)),
    }
}
