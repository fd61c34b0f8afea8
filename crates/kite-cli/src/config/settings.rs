//! What `kite.toml` may say, and the checks on it: the file's schema, apart from where the
//! file is found (`config`), so that it can be read (and fuzzed) on its own.

// By path, so that the fuzz targets that take this file by path find it too.
#[path = "settings/skills.rs"]
mod skills;
#[path = "settings/toml_error.rs"]
mod toml_error;

use kite::http::Timeouts;
use kite::mcp::McpConfig;
use serde::Deserialize;
pub(crate) use skills::SkillsConfig;
use std::time::Duration;

/// Everything `kite.toml` may say.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Config {
    /// `[mcp.servers.NAME]`: MCP servers whose tools `kite ask` offers.
    #[serde(default)]
    pub mcp: McpConfig,
    /// `[http]`: how long calls to providers may take.
    #[serde(default)]
    pub http: HttpConfig,
    /// `[store]`: where conversations are kept.
    #[serde(default)]
    pub store: StoreConfig,
    /// `[defaults]`: what `kite ask` and `kite chat` use when no flag says otherwise.
    #[serde(default)]
    pub defaults: Defaults,
    /// `[providers.NAME]`: a provider's own base URL and model.
    #[serde(default)]
    pub providers: std::collections::BTreeMap<String, ProviderDefaults>,
    /// `[prompts]`: the default system prompt, the summary prompt and named roles.
    #[serde(default)]
    pub prompts: Prompts,
    /// `[compact]`: when a stored conversation is compacted before a turn.
    #[serde(default)]
    pub compact: CompactConfig,
    /// `[skills]`: where Agent Skills are found, and what their scripts may do.
    #[serde(default)]
    pub skills: SkillsConfig,
    /// `[serve]`: what `kite serve` serves, where, and to whom.
    #[serde(default)]
    pub serve: ServeConfig,
    /// `[prices."PROVIDER/MODEL"]` (or `[prices.MODEL]`, for any provider): what a model
    /// the price table lacks costs, or what one costs here instead.
    #[serde(default)]
    pub prices: std::collections::BTreeMap<String, kite::prices::Rate>,
}

/// The `[serve]` table. Flags win over it.
///
/// ```toml
/// [serve]
/// addr = "0.0.0.0:8080"
/// keys = ["${GATEWAY_KEY}"]          # ${NAME} is read from the environment
/// requests_per_minute = 60           # per key
/// tokens_per_minute = 100000         # per key
/// max_parallel = 8                   # requests at once, per key
/// hosted_tools = "drop"              # or "refuse": OpenAI's hosted tools (web_search...)
///                                    # for a provider that cannot run them
/// redis_url = "redis://10.0.0.5:6379" # limits shared by every replica (KITE_REDIS_URL)
/// limits_unavailable = "deny"        # or "allow" (per replica) while Redis is away
/// admin_keys = ["${ADMIN_KEY}"]      # may manage keys and teams under /v1/admin
/// max_body_mb = 16                   # the largest request body, per key
/// max_stored_mb = 256                # what a key's stored responses may hold
/// max_decoding_mb = 64               # request bodies decoded at once, in all
///
/// [serve.cache]                      # answers kept and given again (off unless set)
/// ttl_secs = 300
/// max_entry_bytes = 1048576
/// max_bytes = 67108864               # in this process, with no Redis
/// scope = "key"                      # or "shared": one key's answers for every key
///
/// [[serve.routes]]
/// name = "fast"                      # the model name clients ask for
/// provider = "groq"                  # any provider, or "local"
/// model = "llama-3.3-70b-versatile"  # default: the provider's
/// base_url = "https://..."           # optional
/// fallbacks = ["steady"]             # tried in turn when this one fails before answering
/// timeout_secs = 30                  # until its answer starts (default: [http], else 60)
/// idle_timeout_secs = 30             # silence once it has started (default: [http])
/// ```
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServeConfig {
    /// `HOST:PORT`, where the host is an address or a name (`localhost:8080`).
    pub addr: Option<String>,
    #[serde(default)]
    pub keys: Vec<String>,
    pub requests_per_minute: Option<u32>,
    pub tokens_per_minute: Option<u64>,
    pub max_parallel: Option<u32>,
    /// The Redis (or Valkey) that holds every replica's limits.
    pub redis_url: Option<String>,
    /// What happens while Redis cannot be reached.
    #[serde(default)]
    pub limits_unavailable: LimitsUnavailable,
    /// Keys that may manage keys and teams (`/v1/admin`).
    #[serde(default)]
    pub admin_keys: Vec<String>,
    /// The largest request body, in bytes, of a key that sets none (`max_body_mb`).
    #[serde(default, rename = "max_body_mb", deserialize_with = "megabytes")]
    pub max_body: Option<u64>,
    /// What a key's stored responses may hold, in bytes (`max_stored_mb`).
    #[serde(default, rename = "max_stored_mb", deserialize_with = "megabytes")]
    pub max_stored: Option<u64>,
    /// The bytes of request bodies decoded at once (`max_decoding_mb`).
    #[serde(
        default,
        rename = "max_decoding_mb",
        deserialize_with = "megabytes_usize"
    )]
    pub max_decoding: Option<usize>,
    /// The response cache (off unless set).
    pub cache: Option<CacheConfig>,
    /// What becomes of hosted tools a route's provider cannot run.
    #[serde(default)]
    pub hosted_tools: HostedTools,
    #[serde(default)]
    pub routes: Vec<RouteConfig>,
}

/// `[serve.cache]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CacheConfig {
    pub ttl_secs: Option<u64>,
    pub max_entry_bytes: Option<usize>,
    pub max_bytes: Option<usize>,
    #[serde(default)]
    pub scope: CacheScope,
}

/// `scope`: `key` (each key's own answers) or `shared`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum CacheScope {
    #[default]
    Key,
    Shared,
}

/// `limits_unavailable`: `deny` (the default: 503 while Redis is away) or `allow` (limits
/// held per replica meanwhile).
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LimitsUnavailable {
    #[default]
    Deny,
    Allow,
}

/// `hosted_tools`: `drop` (the default: left out, said once in the log) or `refuse` (400).
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum HostedTools {
    #[default]
    Drop,
    Refuse,
}

/// One `[[serve.routes]]` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RouteConfig {
    pub name: String,
    pub provider: String,
    pub model: Option<String>,
    pub base_url: Option<String>,
    #[serde(default)]
    pub fallbacks: Vec<String>,
    /// Built-in tools the gateway runs itself for clients that send no tools.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Configured MCP servers (by name) whose tools the gateway runs itself.
    #[serde(default)]
    pub mcp: Vec<String>,
    /// Folders (or archives) of skills the gateway offers and runs itself.
    #[serde(default)]
    pub skills: Vec<std::path::PathBuf>,
    /// Seconds until the answer starts: past them, the next fallback is tried.
    pub timeout_secs: Option<f64>,
    /// Seconds of silence allowed once the answer has started.
    pub idle_timeout_secs: Option<f64>,
}

/// The `[defaults]` table. Flags and `KITE_*` variables win over it.
///
/// ```toml
/// [defaults]
/// provider = "anthropic"
/// model = "claude-haiku-4-5"
/// system = "Answer in one paragraph."   # or role = "NAME" from [prompts.roles]
/// tools = ["now", "calculate"]          # or true for every built-in tool
/// max_turns = 10
/// ```
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Defaults {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub system: Option<String>,
    pub role: Option<String>,
    pub tools: Option<ToolsDefault>,
    pub max_turns: Option<u32>,
}

/// `tools` in `[defaults]`: all built-in tools, none, or those named.
#[derive(Debug, Deserialize)]
#[serde(
    untagged,
    expecting = "true, false, or a list of built-in tools' names (now, calculate, read_file, list_files)"
)]
pub(crate) enum ToolsDefault {
    All(bool),
    Named(Vec<String>),
}

/// A `[providers.NAME]` table: for a provider kite knows, where to reach it and its default
/// model; under a name of the user's own, an OpenAI-compatible server (`config/own.rs`),
/// which needs `base_url` and may say where its key is and what to send it besides.
///
/// ```toml
/// [providers.openai]
/// base_url = "https://gateway.internal/v1"
/// model = "gpt-4.1-mini"
///
/// [providers.lab]
/// base_url = "https://llm.lab.example/v1"
/// key_env = "LAB_API_KEY"
/// headers = { "X-Team" = "search" }
/// query = { "api-version" = "2026-01-01" }
/// ```
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProviderDefaults {
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// A provider of the user's own: the variable holding its API key (sent as a bearer
    /// token); none sends no key.
    pub key_env: Option<String>,
    /// Headers sent with every request; `${VAR}` in a value takes the variable's value.
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
    /// Query parameters put on every request's URL; `${VAR}` as in `headers`.
    #[serde(default)]
    pub query: std::collections::BTreeMap<String, String>,
}

/// The `[prompts]` table, or the prompts file it names (`file`, relative to kite.toml;
/// default `kite/prompts.toml` in the XDG config folder), which holds the same keys. What
/// kite.toml says wins over the file.
///
/// ```toml
/// [prompts]
/// system = "You are terse. Today is {date}."
/// summarize = "Summarize the conversation as notes."
/// [prompts.roles]
/// reviewer = "You review Rust code for bugs."
/// ```
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Prompts {
    pub file: Option<std::path::PathBuf>,
    pub system: Option<String>,
    pub summarize: Option<String>,
    #[serde(default)]
    pub roles: std::collections::BTreeMap<String, String>,
}

impl Prompts {
    /// These prompts, with what `other` (the prompts file) says where these are silent.
    pub(crate) fn or(mut self, other: Prompts) -> Prompts {
        self.system = self.system.or(other.system);
        self.summarize = self.summarize.or(other.summarize);
        for (name, text) in other.roles {
            self.roles.entry(name).or_insert(text);
        }
        self
    }
}

/// The `[compact]` table: when a stored conversation is compacted before a turn.
///
/// ```toml
/// [compact]
/// policy = "tokens"   # tokens (default), bytes, messages, or off
/// max = 50000         # default: three quarters of the model's context window
/// keep = 4            # turns kept verbatim
/// ```
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CompactConfig {
    pub policy: Option<CompactPolicy>,
    pub max: Option<u64>,
    pub keep: Option<usize>,
}

impl CompactConfig {
    /// The turns kept verbatim: `keep`, else 4.
    pub(crate) fn turns_kept(&self) -> usize {
        self.keep.unwrap_or(4)
    }
}

/// What `[compact] policy` measures.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum CompactPolicy {
    #[default]
    Tokens,
    Bytes,
    Messages,
    Off,
}

/// A size in MiB (at least 1, at most 1 TiB) as bytes.
fn megabytes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let mb = Option::<u64>::deserialize(d)?;
    match mb {
        None => Ok(None),
        Some(mb @ 1..=1_048_576) => Ok(Some(mb << 20)),
        Some(_) => Err(serde::de::Error::custom(
            "a size in MiB must be from 1 to 1048576",
        )),
    }
}

fn megabytes_usize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    megabytes(d)?
        .map(|b| usize::try_from(b).map_err(|_| serde::de::Error::custom("too large here")))
        .transpose()
}

/// The `[store]` table: where conversations are kept. `KITE_STORE_URL` overrides it.
///
/// ```toml
/// [store]
/// url = "postgres://kite@db.internal/kite"   # or a SQLite file's path
/// ```
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StoreConfig {
    /// A `postgres://` URL, or the path of a SQLite file. Default: `conversations.db` in
    /// kite's XDG data folder.
    pub url: Option<String>,
}

/// The `[http]` table: deadlines of calls to providers, in seconds.
///
/// ```toml
/// [http]
/// connect_timeout_secs = 10   # reaching the server
/// timeout_secs = 600          # until the answer starts (reasoning models think first)
/// idle_timeout_secs = 120     # silence once the answer has started
/// ```
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, try_from = "RawHttp")]
pub(crate) struct HttpConfig {
    pub connect: Option<Duration>,
    pub timeout: Option<Duration>,
    pub idle: Option<Duration>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHttp {
    connect_timeout_secs: Option<f64>,
    timeout_secs: Option<f64>,
    idle_timeout_secs: Option<f64>,
}

impl TryFrom<RawHttp> for HttpConfig {
    type Error = String;

    fn try_from(raw: RawHttp) -> Result<Self, String> {
        let secs =
            |what: &str, s: Option<f64>| s.map(|s| kite::duration_from_secs(what, s)).transpose();
        Ok(Self {
            connect: secs("`connect_timeout_secs`", raw.connect_timeout_secs)?,
            timeout: secs("`timeout_secs`", raw.timeout_secs)?,
            idle: secs("`idle_timeout_secs`", raw.idle_timeout_secs)?,
        })
    }
}

impl HttpConfig {
    /// The deadlines: `timeout` and `idle` from flags first, then this table, then the
    /// defaults.
    pub(crate) fn timeouts(&self, timeout: Option<Duration>, idle: Option<Duration>) -> Timeouts {
        let default = Timeouts::default();
        Timeouts {
            connect: self.connect.unwrap_or(default.connect),
            response: timeout.or(self.timeout).unwrap_or(default.response),
            idle: idle.or(self.idle).unwrap_or(default.idle),
        }
    }
}

/// A flag's number of seconds, checked: `--timeout 1e300` is refused, not a panic.
pub(crate) fn seconds(s: &str) -> Result<Duration, String> {
    let n: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    kite::duration_from_secs("it", n)
}

/// The configuration in `text` (a `kite.toml`), or what is wrong with it.
pub(crate) fn parse(text: &str) -> Result<Config, String> {
    toml::from_str(text).map_err(|e| toml_error::wrong(text, &e))
}

/// The file's text as a TOML table, or what is wrong with it (as [`parse`] says it). A
/// whole number past 2^63 - 1, which no setting takes, is refused here.
pub(crate) fn parse_table(text: &str) -> Result<toml::Table, String> {
    toml::from_str(text).map_err(|e| toml_error::wrong(text, &e))
}

/// The prompts file's content (`text`), or what is wrong with it.
pub(crate) fn parse_prompts(text: &str) -> Result<Prompts, String> {
    let prompts: Prompts = toml::from_str(text).map_err(|e| toml_error::wrong(text, &e))?;
    match prompts.file {
        Some(_) => Err("a prompts file cannot name another (`file`)".into()),
        None => Ok(prompts),
    }
}
