//! The `kite.toml` and prompts-file readers: any text gives a configuration or a message,
//! never a panic (a duration of 1e300 seconds once did).
#![no_main]

#[path = "../../crates/kite-cli/src/config/settings.rs"]
#[allow(dead_code)]
mod settings;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(config) = settings::parse(text) {
        let _ = config.http.timeouts(None, None);
        for server in config.mcp.servers.values() {
            let _ = format!("{server:?}");
        }
        let _ = config.prompts.or(Default::default());
        let _ = config.compact.turns_kept();
    }
    let _ = settings::parse_prompts(text);
});
