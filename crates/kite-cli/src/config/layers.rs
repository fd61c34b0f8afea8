//! The personal kite.toml and a project's, read as one: the project's over the personal one,
//! table by table, so a project says what differs (its MCP servers, its model) and keeps
//! the user's keys, stores and prices. A value the project sets replaces the personal one;
//! a table is merged key by key, except an MCP server or a price, which the project's
//! replaces whole (half of one server and half of another would be neither); a list
//! (`[[serve.routes]]`, `skills.paths`) is the project's.
//!
//! Each file is made whole on its own first: its provider tables under kite's names, and
//! the paths it names relative to its own folder.

use kite::Error;
use std::path::Path;
use toml::{Table, Value};

/// Tables whose entries a project replaces whole.
const WHOLE: [&str; 2] = ["mcp.servers", "prices"];

/// `over` laid over `base`.
pub(crate) fn merge(base: &mut Table, over: Table) {
    merge_at(base, over, "");
}

fn merge_at(base: &mut Table, over: Table, at: &str) {
    let whole = WHOLE.contains(&at);
    for (key, value) in over {
        let here = match at {
            "" => key.clone(),
            _ => format!("{at}.{key}"),
        };
        match (base.get_mut(&key), value) {
            (Some(Value::Table(mine)), Value::Table(theirs)) if !whole => {
                merge_at(mine, theirs, &here);
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// The file at `path`'s table made whole on its own: its providers by kite's names, the
/// user's own in lowercase (a provider named twice is refused), and its skills' folders and
/// prompts file relative to its folder.
pub(crate) fn settle(path: &Path, table: &mut Table) -> Result<(), Error> {
    if let Some(Value::Table(providers)) = table.get_mut("providers") {
        let mut named = Table::new();
        for (name, value) in std::mem::take(providers) {
            // kite's providers by kite's names, the user's own in lowercase.
            let key = match kite::Provider::parse(&name) {
                Ok(p) => p.name().to_owned(),
                Err(_) => name.to_ascii_lowercase(),
            };
            if named.insert(key.clone(), value).is_some() {
                return Err(Error::Config(format!(
                    "{}: [providers.{name}] names {key} a second time",
                    path.display(),
                )));
            }
        }
        *providers = named;
    }
    let Some(dir) = path.parent() else {
        return Ok(());
    };
    let beside = |v: &mut Value| {
        if let Value::String(s) = v {
            *s = dir.join(&*s).to_string_lossy().into_owned();
        }
    };
    if let Some(Value::Table(skills)) = table.get_mut("skills")
        && let Some(Value::Array(paths)) = skills.get_mut("paths")
    {
        paths.iter_mut().for_each(beside);
    }
    if let Some(Value::Table(prompts)) = table.get_mut("prompts")
        && let Some(file) = prompts.get_mut("file")
    {
        beside(file);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn a_project_sets_what_differs_and_replaces_a_server_whole() {
        let mut base = table(
            "[defaults]\nprovider = \"openai\"\nmodel = \"gpt-5-nano\"\n\
             [store]\nurl = \"/home/me/kite.db\"\n\
             [mcp.servers.files]\ncommand = \"files\"\nreject = [\"rm\"]\n\
             [mcp.servers.mine]\ncommand = \"mine\"\n",
        );
        let over = table(
            "[defaults]\nmodel = \"gpt-5\"\n\
             [mcp.servers.files]\nurl = \"http://127.0.0.1:9/mcp\"\n",
        );
        merge(&mut base, over);
        assert_eq!(base["defaults"]["provider"].as_str(), Some("openai"));
        assert_eq!(base["defaults"]["model"].as_str(), Some("gpt-5"));
        assert_eq!(base["store"]["url"].as_str(), Some("/home/me/kite.db"));
        let files = base["mcp"]["servers"]["files"].as_table().unwrap();
        assert_eq!(files.keys().collect::<Vec<_>>(), ["url"]);
        assert!(base["mcp"]["servers"].get("mine").is_some());
    }

    #[test]
    fn each_file_names_providers_and_paths_its_own_way() {
        let mut t = table("[providers.OpenAI]\nbase_url = \"x\"\n[skills]\npaths = [\"s\"]\n");
        settle(Path::new("/p/kite.toml"), &mut t).unwrap();
        assert!(t["providers"].get("openai").is_some());
        assert_eq!(t["skills"]["paths"][0].as_str(), Some("/p/s"));
        let mut twice = table("[providers.OpenAI]\n[providers.openai]\n");
        let e = settle(Path::new("/p/kite.toml"), &mut twice).unwrap_err();
        assert!(e.to_string().contains("a second time"), "{e}");
    }
}
