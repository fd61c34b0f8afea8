//! `kite mcp login NAME` and `kite mcp logout NAME`, and where logins are kept: one file
//! per server under kite's data folder (`mcp-logins/`, 0600 in a 0700 folder), read by
//! `kite ask`, `kite chat` and `kite serve`, which refresh their tokens but never ask a
//! person.
//!
//! The browser is sent back to a loopback port kite listens on for that one redirect: a
//! request line and headers read by hand (a few lines, within a size bound and a deadline)
//! rather than a web server started for one request.

use crate::config;
use crate::terminal::output::{errln, outln};
use kite::mcp::{Approval, Authorizer, FileTokens, OAuthOptions, Saved, TokenStore};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Where logins are kept: the OS keyring when one answers, else files under kite's data
/// folder; `KITE_MCP_LOGINS=file` or `keyring` chooses.
pub(crate) fn store() -> Option<Arc<dyn TokenStore>> {
    let asked = std::env::var("KITE_MCP_LOGINS").unwrap_or_default();
    if !matches!(asked.as_str(), "" | "file" | "keyring") {
        crate::terminal::output::errln!(
            "kite: KITE_MCP_LOGINS={asked:?} is neither `file` nor `keyring`: logins go where \
             they would with it unset"
        );
    }
    if asked != "file"
        && let Some(keyring) = kite::mcp::KeyringTokens::open()
    {
        return Some(Arc::new(keyring));
    }
    if asked == "keyring" {
        crate::terminal::output::errln!(
            "kite: KITE_MCP_LOGINS=keyring, but no OS keyring answers: logins go to files"
        );
    }
    let dir = config::data_dir()?.join("mcp-logins");
    tracing::debug!(asked, "MCP logins are kept in {}", dir.display());
    Some(Arc::new(FileTokens::new(dir)))
}

/// Where logins are kept, chosen when one is first asked for: a run with no server that
/// asks for OAuth never asks the OS keyring anything.
#[derive(Default)]
struct Chosen(std::sync::OnceLock<Option<Arc<dyn TokenStore>>>);

impl Chosen {
    fn store(&self) -> Option<&Arc<dyn TokenStore>> {
        self.0.get_or_init(store).as_ref()
    }
}

impl TokenStore for Chosen {
    fn load(&self, server: &str) -> Option<Saved> {
        self.store()?.load(server)
    }

    fn save(&self, server: &str, saved: &Saved) -> Result<(), String> {
        match self.store() {
            Some(s) => s.save(server, saved),
            None => Err("kite has no data folder (set HOME)".into()),
        }
    }

    fn clear(&self, server: &str) -> Result<bool, String> {
        self.store().map_or(Ok(false), |s| s.clear(server))
    }

    fn writable(&self) -> Result<(), String> {
        self.store().map_or(Ok(()), |s| s.writable())
    }

    fn place(&self) -> String {
        self.store().map_or_else(|| "nowhere".into(), |s| s.place())
    }
}

/// How `kite ask`, `chat` and `serve` get tokens: the kept logins, and no person asked;
/// every token, code and secret is hidden from the log and the output.
pub(crate) fn options() -> OAuthOptions {
    OAuthOptions {
        store: Some(Arc::new(Chosen::default())),
        on_secret: Some(Arc::new(|s: &str| {
            crate::terminal::secrets::passing_secret(s)
        })),
        ..OAuthOptions::default()
    }
}

/// The OAuth table of `server` in kite.toml (its defaults when it has none).
fn oauth_of(loaded: &config::Loaded, server: &str) -> kite::mcp::OAuthConfig {
    match loaded.config.mcp.servers.get(server).map(|s| &s.transport) {
        Some(kite::mcp::TransportConfig::Http { oauth: Some(o), .. }) => o.clone(),
        _ => kite::mcp::OAuthConfig::default(),
    }
}

/// What `kite mcp list` says of `server`'s login (its configured account's), if it has
/// one or needs one.
pub(crate) fn state(loaded: &config::Loaded, server: &str) -> Option<String> {
    let oauth = oauth_of(loaded, server);
    let saved = store()?.load(&oauth.kept_as(server))?;
    Some(describe(&oauth.login_args(server), &saved))
}

/// A login, said: `login` is what `kite mcp login` takes to make it again.
fn describe(login: &str, saved: &Saved) -> String {
    if saved.refused || saved.access_token.is_none() {
        return format!("token refused: run `kite mcp login {login}`");
    }
    let who = saved
        .account
        .as_deref()
        .map(|a| format!(" as {a}"))
        .unwrap_or_default();
    let until = match saved.expires_at_ms {
        Some(ms) => chrono::DateTime::from_timestamp_millis(ms)
            .map(|t| {
                let t = t.with_timezone(&chrono::Local);
                format!(" until {}", t.format("%Y-%m-%d %H:%M"))
            })
            .unwrap_or_default(),
        None => String::new(),
    };
    let renewable = match saved.refresh_token {
        Some(_) => ", renewed by itself",
        None => "",
    };
    format!("logged in{who}{until}{renewable}")
}

/// `kite mcp login NAME [--account WHO]`: forgets that login's tokens, connects with a
/// person to approve, and says who is logged in.
pub(crate) async fn login(
    loaded: &config::Loaded,
    name: &str,
    account: Option<String>,
    no_browser: bool,
) -> Result<(), ExitCode> {
    let fail = |message: String| {
        errln!("kite: {message}");
        ExitCode::FAILURE
    };
    let Some(mut server) = loaded.config.mcp.servers.get(name).cloned() else {
        return Err(fail(format!("no MCP server {name:?} in kite.toml")));
    };
    let mut chosen = oauth_of(loaded, name);
    if account.is_some() {
        chosen.account = account;
    }
    server = server.oauth(chosen.clone());
    let kept_as = chosen.kept_as(name);
    let kite::mcp::TransportConfig::Http {
        oauth,
        bearer_token,
        bearer_token_env,
        ..
    } = &server.transport
    else {
        return Err(fail(format!(
            "{name} is a stdio server: kite starts it, and it needs no login"
        )));
    };
    if bearer_token.is_some() || bearer_token_env.is_some() {
        return Err(fail(format!(
            "{name} is given a bearer token in kite.toml, which it is sent instead of a \
             login: leave the token out to log in"
        )));
    }
    let port = oauth.as_ref().and_then(|o| o.redirect_port).unwrap_or(0);
    let store = store().ok_or_else(|| fail("kite has no data folder (set HOME)".into()))?;
    // The kept login is replaced only once the new one is made.
    let before = store.load(&kept_as);
    let browser = Browser::bind(port, !no_browser)
        .await
        .map_err(|e| fail(format!("cannot listen for the login's redirect: {e}")))?;
    let hub = kite::mcp::Hub::with_options(kite::mcp::HubOptions {
        oauth: OAuthOptions {
            store: Some(store.clone()),
            authorizer: Some(Arc::new(browser)),
            fresh: true,
            ..options()
        },
        // A person may take minutes to approve.
        startup_timeout: Duration::from_secs(330),
        ..kite::mcp::HubOptions::default()
    });
    let added = hub.add(name, server).await;
    hub.close().await;
    added.map_err(|e| fail(e.to_string()))?;
    match store.load(&kept_as).filter(|s| s.access_token.is_some()) {
        Some(saved) if Some(&saved) != before.as_ref() => {
            outln!("{name}: {}", describe(&chosen.login_args(name), &saved));
            Ok(())
        }
        // Kept as before: nothing was asked, or what was got could not be kept.
        _ => match store.writable() {
            Ok(()) => {
                outln!("{name}: it asks for no login");
                Ok(())
            }
            Err(e) => Err(fail(format!("the login cannot be kept: {e}"))),
        },
    }
}

/// `kite mcp logout NAME [--account WHO]`.
pub(crate) fn logout(name: &str, account: Option<String>) -> Result<(), ExitCode> {
    let Some(store) = store() else {
        errln!("kite: kite has no data folder (set HOME)");
        return Err(ExitCode::FAILURE);
    };
    let chosen = kite::mcp::OAuthConfig {
        account,
        ..kite::mcp::OAuthConfig::default()
    };
    match store.clear(&chosen.kept_as(name)) {
        Ok(true) => {
            outln!("{name}: logged out");
            Ok(())
        }
        Ok(false) => {
            outln!("{name}: no login was kept");
            Ok(())
        }
        Err(e) => {
            errln!("kite: {e}");
            Err(ExitCode::FAILURE)
        }
    }
}

/// A person approving in a browser: the authorization URL is opened (or printed), and the
/// redirect taken on a loopback port.
struct Browser {
    listener: tokio::sync::Mutex<tokio::net::TcpListener>,
    redirect: String,
    open: bool,
}

/// The largest request the redirect may be.
const MAX_REQUEST: usize = 16 * 1024;

impl Browser {
    async fn bind(port: u16, open: bool) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let port = listener.local_addr()?.port();
        Ok(Self {
            listener: tokio::sync::Mutex::new(listener),
            redirect: format!("http://127.0.0.1:{port}/callback"),
            open,
        })
    }

    /// Opens `url` in the desktop's browser; false when there is no desktop.
    fn opened(&self, url: &str) -> bool {
        let desktop = std::env::var_os("DISPLAY").is_some()
            || std::env::var_os("WAYLAND_DISPLAY").is_some()
            || cfg!(target_os = "macos");
        if !self.open || !desktop {
            return false;
        }
        let opener = if cfg!(target_os = "macos") {
            "open"
        } else {
            "xdg-open"
        };
        std::process::Command::new(opener)
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .is_ok()
    }

    /// The approval that comes back for the login of `state`: requests for other paths
    /// get 404, and redirects of another login 400, each connection on its own.
    async fn redirected(&self, state: &str) -> Result<Approval, String> {
        let listener = self.listener.lock().await;
        let (told, mut came) = tokio::sync::mpsc::channel(4);
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let (stream, _) = accepted.map_err(|e| e.to_string())?;
                    let (told, redirect, state) =
                        (told.clone(), self.redirect.clone(), state.to_owned());
                    tokio::spawn(async move {
                        if let Some(answer) = callback(stream, &redirect, &state).await {
                            let _ = told.send(answer).await;
                        }
                    });
                }
                Some(answer) = came.recv() => return answer,
            }
        }
    }
}

/// What one connection to the loopback port brings: the login's answer, when it is the
/// redirect of the login of `state`.
async fn callback(
    mut stream: tokio::net::TcpStream,
    redirect: &str,
    state: &str,
) -> Option<Result<Approval, String>> {
    let read = tokio::time::timeout(Duration::from_secs(5), async {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 2048];
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < MAX_REQUEST {
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        Ok::<_, std::io::Error>(buf)
    })
    .await;
    let Ok(Ok(request)) = read else { return None };
    let line = String::from_utf8_lossy(&request);
    let target = line
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("GET "))
        .and_then(|l| l.split(' ').next())
        .unwrap_or_default()
        .to_owned();
    let reply = |status: &str, page: &str| {
        let page = page.replace('<', "&lt;");
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
            page.len()
        )
    };
    let origin = redirect.trim_end_matches("/callback");
    let came = format!("{origin}{target}");
    let ours = target.split('?').next() == Some("/callback")
        && Approval::query_value(&came, "state").as_deref() == Some(state);
    if !ours {
        let _ = stream
            .write_all(
                reply(
                    "404 Not Found",
                    "This is not the login kite is waiting for.",
                )
                .as_bytes(),
            )
            .await;
        return None;
    }
    let approved = Approval::from_redirect(redirect, &came);
    let page = match &approved {
        Ok(_) => {
            "kite has the login's answer and finishes it in the terminal. You may close this tab."
                .to_owned()
        }
        Err(e) => format!("kite is not logged in: {e}"),
    };
    let _ = stream.write_all(reply("200 OK", &page).as_bytes()).await;
    Some(approved)
}

impl Authorizer for Browser {
    fn redirect_uri(&self) -> String {
        self.redirect.clone()
    }

    fn approve<'a>(
        &'a self,
        server: &'a str,
        url: &'a str,
    ) -> futures_util::future::BoxFuture<'a, Result<Approval, String>> {
        Box::pin(async move {
            match self.opened(url) {
                true => errln!(
                    "kite: log in to {server} in the browser that opened (or open this):\n  {url}"
                ),
                false => errln!("kite: to log in to {server}, open this in a browser:\n  {url}"),
            }
            let state = Approval::query_value(url, "state").unwrap_or_default();
            self.redirected(&state).await
        })
    }
}
