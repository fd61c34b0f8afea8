//! `kite serve`: the OpenAI-compatible gateway (`kite-serve`) in front of the model the
//! same flags as `kite ask` choose (the local model when no key is set). Every model name a
//! client asks for goes to that provider.

use crate::choose::{SessionArgs, choose_model};
use crate::output::errln;
use clap::Args;
use kite::serve::{Gateway, Route};
use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Args)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    session: SessionArgs,
    /// Where to listen.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// A key clients must send (`Authorization: Bearer KEY`); repeatable. With none, the
    /// gateway listens on loopback only and asks for no key.
    #[arg(long = "api-key", value_name = "KEY", env = "KITE_SERVE_API_KEY")]
    api_keys: Vec<String>,
    /// Requests per minute each key may make (answered with 429 and Retry-After past it).
    #[arg(long, value_name = "N", requires = "api_keys")]
    rpm: Option<u32>,
    /// Tokens (in and out) per minute each key may use.
    #[arg(long, value_name = "N", requires = "api_keys")]
    tpm: Option<u64>,
}

pub(crate) async fn run(args: ServeArgs, config: Option<&Path>) -> Result<(), ExitCode> {
    let fail = |e: String| {
        errln!("kite: {e}");
        ExitCode::FAILURE
    };
    for key in &args.api_keys {
        crate::logging::secret(key);
    }
    let loaded = crate::config::load(config).map_err(|e| fail(e.to_string()))?;
    let session = args
        .session
        .with_defaults(&loaded.config)
        .map_err(|e| fail(e.to_string()))?;
    let chosen = choose_model(&session, &loaded.config.http).map_err(|e| fail(e.to_string()))?;
    let route = Route {
        name: chosen.name.clone(),
        model: chosen.model.clone(),
        upstream: chosen.name.clone(),
    };
    let mut gateway = Gateway::new(vec![route], true);
    let limits = kite::serve::Limits {
        requests_per_minute: args.rpm,
        tokens_per_minute: args.tpm,
    };
    for key in args.api_keys.iter().filter(|k| !k.trim().is_empty()) {
        gateway = gateway.key_with(key.trim(), limits);
    }
    gateway.check_addr(&args.addr).map_err(fail)?;
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .map_err(|e| fail(format!("cannot listen on {}: {e}", args.addr)))?;
    let addr = listener.local_addr().map_err(|e| fail(e.to_string()))?;
    errln!(
        "kite: serving {} on http://{addr}/v1 (chat/completions, models; /health)",
        chosen.name
    );
    // Ctrl-C or SIGTERM stops taking requests and lets those under way finish, for at most
    // GRACE; a second signal ends kite at once.
    let claim = Arc::new(crate::signals::Claim::new());
    let (stopping, mut stopped) = tokio::sync::watch::channel(false);
    let watcher = claim.clone();
    let shutdown = async move {
        watcher.interrupted().await;
        let _ = stopping.send(true);
    };
    let serving = kite::serve::serve(listener, Arc::new(gateway), shutdown);
    let result = tokio::select! {
        r = serving => r.map_err(|e| fail(e.to_string())),
        _ = async {
            let _ = stopped.wait_for(|s| *s).await;
            tokio::time::sleep(GRACE).await;
        } => {
            errln!("kite: requests still under way after {} s are cut off", GRACE.as_secs());
            Ok(())
        }
    };
    let signal = Arc::try_unwrap(claim).ok().and_then(|c| c.finish());
    match (result, signal) {
        (Err(code), _) => Err(code),
        (Ok(()), Some(signal)) => {
            errln!("kite: {}; stopped serving", signal.what());
            Err(ExitCode::from(signal.status()))
        }
        (Ok(()), None) => Ok(()),
    }
}

/// How long requests under way may take to finish once kite is asked to stop.
const GRACE: std::time::Duration = std::time::Duration::from_secs(30);
