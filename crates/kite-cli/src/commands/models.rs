//! `kite models`: the embedded local model, then the models kite knows for each provider,
//! with their context windows, and the provider's own list when its key is set; with
//! `--base-url` alone, the list of the server named (keyed only by `KITE_API_KEY`).

use crate::config::choices::SessionProvider;
use crate::config::endpoint::{EndpointArgs, compatible};
use crate::terminal::output::{errln, outln};
use clap::Args;
use kite::wire::openai_chat::Dialect;
use kite::{OpenAiCompatible, Provider};
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct ModelsArgs {
    /// Only this provider (`local`: the embedded model; or one of yours in kite.toml).
    #[arg(long, value_parser = SessionProvider::parse)]
    provider: Option<SessionProvider>,
    #[command(flatten)]
    at: EndpointArgs,
    /// One JSON object per provider, for scripts.
    #[arg(long)]
    json: bool,
}

/// How long a provider may take to list its models, unless `--timeout` says otherwise.
const LIST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

pub(crate) async fn run(args: ModelsArgs, config: Option<&Path>) -> Result<(), ExitCode> {
    let fail = |e: kite::Error| {
        errln!("kite: {e}");
        ExitCode::FAILURE
    };
    let loaded = crate::config::load(config).map_err(fail)?;
    let mut at = args.at.clone();
    at.timeout = at.timeout.or(Some(LIST_TIMEOUT));
    if let (Some(url), None) = (&at.base_url, &args.provider) {
        // A server named alone gets only KITE_API_KEY, as with `kite ask --base-url`.
        let endpoint = at.endpoint(&loaded.config.http).map_err(fail)?;
        let m = OpenAiCompatible::new(url, Dialect::Compatible);
        let m = compatible(m, &endpoint).map_err(fail)?;
        let listed = within(m.list_models()).await.map_err(fail)?;
        match args.json {
            true => outln!("{}", json!({"server": url, "listed": listed})),
            false => {
                outln!("{url} lists {} models:", listed.len());
                listed.iter().for_each(|id| outln!("  {id}"));
            }
        }
        return Ok(());
    }
    if matches!(args.provider, None | Some(SessionProvider::Local)) {
        print_local(args.json);
    }
    if let Some(SessionProvider::Own(name)) = &args.provider {
        // A provider of the user's own lists what its server lists.
        let Some(table) = loaded.config.providers.get(name) else {
            return Err(fail(kite::Error::Config(format!(
                "kite.toml has no [providers.{name}]"
            ))));
        };
        let endpoint = at.endpoint(&loaded.config.http).map_err(fail)?;
        let m = crate::config::own::model(name, table, &endpoint).map_err(fail)?;
        let listed = within(m.list_models()).await.map_err(fail)?;
        match args.json {
            true => outln!("{}", json!({"provider": name, "listed": listed})),
            false => {
                outln!("{name} lists {} models:", listed.len());
                listed.iter().for_each(|id| outln!("  {id}"));
            }
        }
        return Ok(());
    }
    let providers: Vec<Provider> = match args.provider {
        Some(SessionProvider::Local | SessionProvider::Own(_)) => Vec::new(),
        Some(SessionProvider::Named(p)) => vec![p],
        // OpenAI's two APIs serve the same models.
        None => Provider::ALL
            .into_iter()
            .filter(|p| *p != Provider::OpenAiResponses)
            .collect(),
    };
    let mut failed = false;
    for p in providers {
        let mut at = at.clone();
        if at.base_url.is_none() {
            at.base_url = loaded
                .config
                .providers
                .get(p.name())
                .and_then(|o| o.base_url.clone());
        }
        let key_set = std::env::var(p.key_var()).is_ok_and(|k| !k.trim().is_empty());
        let listed = match key_set {
            false => None,
            true => Some(match at.endpoint(&loaded.config.http) {
                Ok(endpoint) => within(p.list_models(&endpoint)).await,
                Err(e) => Err(e),
            }),
        };
        if let Some(Err(e)) = &listed {
            errln!("kite: {} could not list its models: {e}", p.name());
            failed = true;
        }
        let listed = listed.and_then(Result::ok);
        print(p, listed.as_deref(), key_set, args.json);
    }
    match failed {
        true => Err(ExitCode::FAILURE),
        false => Ok(()),
    }
}

/// `listing`, given up on after the deadline even when the server trickles bytes.
async fn within(
    listing: impl std::future::Future<Output = Result<Vec<String>, kite::Error>>,
) -> Result<Vec<String>, kite::Error> {
    tokio::time::timeout(LIST_TIMEOUT, listing)
        .await
        .unwrap_or_else(|_| {
            Err(kite::Error::Config(format!(
                "no list of models within {} s",
                LIST_TIMEOUT.as_secs()
            )))
        })
}

/// The embedded model: the file kite would load, or how to install one. Nothing is loaded.
fn print_local(as_json: bool) {
    let found = kite::local::find_model();
    if as_json {
        let (path, error) = match &found {
            Ok(path) => (Some(path.display().to_string()), None),
            Err(e) => (None, Some(e.to_string())),
        };
        outln!(
            "{}",
            json!({"provider": "local", "key_var": null, "key_set": false,
                   "path": path, "installed": found.is_ok(), "error": error,
                   "context_window": kite::local::LocalConfig::default().context_size})
        );
        return;
    }
    outln!("local (no key: the embedded model, run in this process with --local)");
    match found {
        Ok(path) => {
            let name = path.file_stem().unwrap_or_default().to_string_lossy();
            let window = kite::local::LocalConfig::default().context_size;
            outln!("  {name:<28} {window:>9} tokens  (used when no key is set)");
            outln!("    {}", path.display());
        }
        Err(e) => outln!("  none installed: {e}"),
    }
}

fn print(p: Provider, listed: Option<&[String]>, key_set: bool, as_json: bool) {
    let known = p.known_models();
    if as_json {
        let known: Vec<_> = known
            .iter()
            .map(|k| json!({"name": k.name, "context_window": k.context_window}))
            .collect();
        outln!(
            "{}",
            json!({"provider": p.name(), "key_var": p.key_var(), "key_set": key_set,
                   "default": p.default_model(), "known": known, "listed": listed})
        );
        return;
    }
    let key = match key_set {
        true => "set",
        false => "not set",
    };
    outln!("{} ({} {key})", p.name(), p.key_var());
    for k in known {
        let default = match k.name == p.default_model() {
            true => "  (default)",
            false => "",
        };
        outln!("  {:<28} {:>9} tokens{default}", k.name, k.context_window);
    }
    if let Some(listed) = listed {
        outln!("  {} lists {} models:", p.name(), listed.len());
        for id in listed {
            outln!("    {id}");
        }
    }
}
