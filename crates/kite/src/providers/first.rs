//! A model with no setup: what kite's command line does when no flag names one.

use super::Provider;
use kite_core::{Error, Model};
use std::sync::Arc;

/// The model a program gets with no setup, as `kite ask` chooses one: the first provider
/// whose API key is set (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, ...; see
/// [`Provider::detect`]), at its default model; else, with the `local` feature, the
/// embedded local model (`KITE_LOCAL_MODEL`, or the one `kite model fetch` installs), in
/// this process, with no key and no network. Returns the model and the name to ask it by.
///
/// ```no_run
/// # async fn run() -> Result<(), kite::Error> {
/// let (model, name) = kite::model_from_env()?;
/// let answer = model.complete(&kite::Request::new(name).message(kite::Message::user("Hi"))).await?;
/// # Ok(()) }
/// ```
pub fn model_from_env() -> Result<(Arc<dyn Model>, String), Error> {
    if let Some(provider) = Provider::detect() {
        return Ok((provider.from_env()?, provider.default_model().to_owned()));
    }
    local()
}

#[cfg(feature = "local")]
fn local() -> Result<(Arc<dyn Model>, String), Error> {
    let path = kite_local::find_model().map_err(|e| {
        Error::Config(format!(
            "no provider's API key is set (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...), and {e}"
        ))
    })?;
    let model = kite_local::LocalModel::load(&path, kite_local::LocalConfig::default())?;
    let name = model.name().to_owned();
    Ok((Arc::new(model), name))
}

#[cfg(not(feature = "local"))]
fn local() -> Result<(Arc<dyn Model>, String), Error> {
    Err(Error::Config(
        "no provider's API key is set (OPENAI_API_KEY, ANTHROPIC_API_KEY, MISTRAL_API_KEY, \
         OPENROUTER_API_KEY or GROQ_API_KEY); with kite-llm's `local` feature, the embedded \
         local model answers instead"
            .into(),
    ))
}
