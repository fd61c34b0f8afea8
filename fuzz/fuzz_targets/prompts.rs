//! The prompts file (`kite/prompts.toml`, or the one `[prompts] file` names): any text gives
//! the prompts or a message, never a panic. A prompts file never names another, and what it
//! says fills in where kite.toml's `[prompts]` is silent without losing a role.
#![no_main]

#[path = "../../crates/kite-cli/src/config/settings.rs"]
#[allow(dead_code)]
mod settings;

use libfuzzer_sys::fuzz_target;
use settings::Prompts;

fuzz_target!(|text: &str| {
    match settings::parse_prompts(text) {
        Ok(file) => {
            assert!(file.file.is_none(), "a prompts file named another");
            let roles = file.roles.clone();
            let (system, summarize) = (file.system.clone(), file.summarize.clone());
            let merged = Prompts::default().or(file);
            assert_eq!(merged.roles, roles);
            assert_eq!((merged.system, merged.summarize), (system, summarize));
        }
        Err(message) => assert!(!message.is_empty()),
    }
});
