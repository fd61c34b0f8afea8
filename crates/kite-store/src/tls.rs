//! TLS to Postgres, as libpq's `sslmode` and `sslrootcert` describe it:
//!
//! - `disable`: no TLS.
//! - `allow`, `prefer` (the default): TLS when the server offers it, its certificate not
//!   checked (as libpq does; a local server's snakeoil certificate is fine).
//! - `require`: TLS or nothing; the certificate is checked as with `verify-ca` when a root
//!   file is there (named, or `~/.postgresql/root.crt`), else not checked.
//! - `verify-ca`: the certificate must chain to the root file.
//! - `verify-full`: that, and it must name the host. `sslrootcert=system` uses the system's
//!   trusted roots instead, and only with `verify-full`.
//!
//! tokio-postgres knows only `disable`, `prefer` and `require` and refuses `sslrootcert`, so
//! both are taken out of the URL here and the checks are made by kite's certificate
//! verifiers; rustls does the rest. `PGSSLMODE` and `PGSSLROOTCERT` stand in for what the
//! URL does not say. Not supported: client certificates (`sslcert`, `sslkey`), revocation
//! lists (`sslcrl`), and, since webpki checks chains, a self-signed server certificate
//! that is its own root and marked as a CA (the quick `openssl req -x509` recipe); make a
//! CA and sign the server's certificate with it instead.

use crate::StoreError;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use std::sync::Arc;
use tokio_postgres_rustls::MakeRustlsConnect;

/// How much a certificate is checked.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Check {
    Nothing,
    Chain,
    ChainAndName,
}

/// `url` with `sslmode` and `sslrootcert` taken out (an `sslmode` tokio-postgres knows put
/// back), and the TLS connector that does what they asked.
pub(crate) fn prepare(url: &str) -> Result<(String, MakeRustlsConnect), StoreError> {
    let bad = |m: String| StoreError::Backend(m);
    let (rest, params) = take_params(url, &["sslmode", "sslrootcert"]);
    // libpq's environment variables stand in for what the URL does not say.
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let root = params[1].clone().or_else(|| env("PGSSLROOTCERT"));
    // The system's roots are for checking names: they mean verify-full, and nothing less.
    let default_mode = match root.as_deref() {
        Some("system") => "verify-full",
        _ => "prefer",
    };
    let mode = params[0]
        .clone()
        .or_else(|| env("PGSSLMODE"))
        .unwrap_or_else(|| default_mode.into());
    let (pg_mode, check) = match mode.as_str() {
        "disable" => ("disable", Check::Nothing),
        "allow" | "prefer" => ("prefer", Check::Nothing),
        "require" => ("require", Check::Nothing),
        "verify-ca" => ("require", Check::Chain),
        "verify-full" => ("require", Check::ChainAndName),
        other => {
            return Err(bad(format!(
                "sslmode={other:?} is not one of disable, allow, prefer, require, verify-ca, \
                 verify-full"
            )));
        }
    };
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let default_root = std::env::var_os("HOME")
        .map(|h| std::path::Path::new(&h).join(".postgresql/root.crt"))
        .filter(|p| p.is_file())
        .map(|p| p.to_string_lossy().into_owned());
    let root = root.or(default_root);
    // `require` with a root file is `verify-ca`, as in libpq.
    let check = match (check, &root) {
        (Check::Nothing, Some(_)) if pg_mode == "require" => Check::Chain,
        (check, _) => check,
    };
    let verifier: Arc<dyn ServerCertVerifier> = match (check, root.as_deref()) {
        (Check::Nothing, root) if root != Some("system") => Arc::new(Unchecked(provider.clone())),
        (Check::ChainAndName, Some("system")) => Arc::new(
            rustls_platform_verifier::Verifier::new(provider.clone())
                .map_err(|e| bad(format!("cannot load the system's certificates: {e}")))?,
        ),
        (Check::Nothing | Check::Chain, Some("system")) => {
            return Err(bad(format!(
                "sslrootcert=system checks the host's name too: use it with \
                 sslmode=verify-full, not {mode}"
            )));
        }
        (check, Some(path)) => {
            let mut roots = RootCertStore::empty();
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| bad(format!("cannot read sslrootcert {path}: {e}")))?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(bad(format!("sslrootcert {path} holds no certificate")));
            }
            let chain =
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .build()
                    .map_err(|e| bad(format!("cannot use sslrootcert {path}: {e}")))?;
            match check {
                Check::Chain => Arc::new(AnyName(chain)),
                _ => chain,
            }
        }
        (_, None) => {
            return Err(bad(format!(
                "sslmode={mode} checks the server's certificate, and there is no root \
                 certificate to check it against: name one with sslrootcert=PATH (or put it in \
                 ~/.postgresql/root.crt), use the system's with sslrootcert=system and \
                 sslmode=verify-full, or only encrypt with sslmode=require"
            )));
        }
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(format!("cannot set up TLS: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    let url = put_param(&rest, "sslmode", pg_mode);
    Ok((url, MakeRustlsConnect::new(config)))
}

/// `url` without the parameters `names`, and their values (the last of each), in a URL's
/// query (`postgres://h/db?sslmode=require`) or a key=value string (`host=h sslmode=require`).
fn take_params(url: &str, names: &[&str]) -> (String, Vec<Option<String>>) {
    let mut values = vec![None; names.len()];
    if url.contains("://") {
        let Some((base, query)) = url.split_once('?') else {
            return (url.to_owned(), values);
        };
        let kept: Vec<&str> = query
            .split('&')
            .filter(|pair| {
                let Some((k, v)) = pair.split_once('=') else {
                    return true;
                };
                let Some(i) = names.iter().position(|n| *n == k) else {
                    return true;
                };
                values[i] = Some(
                    percent_encoding::percent_decode_str(v)
                        .decode_utf8_lossy()
                        .into_owned(),
                );
                false
            })
            .collect();
        let rest = match kept.is_empty() {
            true => base.to_owned(),
            false => format!("{base}?{}", kept.join("&")),
        };
        return (rest, values);
    }
    // key=value form: the pairs named are cut out, the rest is left exactly as written.
    let mut rest = String::new();
    let mut from = 0;
    for (span, key, value) in pairs(url) {
        if let Some(i) = names.iter().position(|n| *n == key) {
            values[i] = Some(value);
            rest.push_str(&url[from..span.start]);
            from = span.end;
        }
    }
    rest.push_str(&url[from..]);
    (rest.trim().to_owned(), values)
}

/// The `key=value` pairs of a libpq connection string (values may be quoted with `'`, with
/// `\` escaping), each with its byte range, key, and value unquoted.
fn pairs(s: &str) -> Vec<(std::ops::Range<usize>, String, String)> {
    let b = s.as_bytes();
    let space = |i: usize| i < b.len() && b[i].is_ascii_whitespace();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while space(i) {
            i += 1;
        }
        if i >= b.len() {
            return out;
        }
        let start = i;
        while i < b.len() && b[i] != b'=' && !b[i].is_ascii_whitespace() {
            i += 1;
        }
        let key = s[start..i].to_owned();
        while space(i) {
            i += 1;
        }
        if i >= b.len() || b[i] != b'=' {
            // Not a pair: tokio-postgres will say what is wrong with it.
            out.push((start..i, key, String::new()));
            continue;
        }
        i += 1;
        while space(i) {
            i += 1;
        }
        let quoted = i < b.len() && b[i] == b'\'';
        if quoted {
            i += 1;
        }
        let mut value = Vec::new();
        while i < b.len()
            && (if quoted {
                b[i] != b'\''
            } else {
                !b[i].is_ascii_whitespace()
            })
        {
            if b[i] == b'\\' && i + 1 < b.len() {
                i += 1;
            }
            value.push(b[i]);
            i += 1;
        }
        if quoted && i < b.len() {
            i += 1;
        }
        out.push((start..i, key, String::from_utf8_lossy(&value).into_owned()));
    }
}

/// `url` with `name=value` added.
fn put_param(url: &str, name: &str, value: &str) -> String {
    match (url.contains("://"), url.contains('?')) {
        (true, true) => format!("{url}&{name}={value}"),
        (true, false) => format!("{url}?{name}={value}"),
        (false, _) => format!("{url} {name}={value}"),
    }
}

/// Encrypts without checking who is at the other end: libpq's `prefer` and `require`. The
/// handshake's signatures are still checked, so the session is the certificate holder's.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Checks the chain as webpki does, whatever name the certificate holds: `verify-ca`.
/// webpki reports a name that does not match only once the chain has been found good.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssl_parameters_are_taken_out_of_urls_and_key_value_strings() {
        let (rest, v) = take_params(
            "postgres://u:p@h/db?sslmode=verify-full&application_name=kite&sslrootcert=%2Ftmp%2Fca.pem",
            &["sslmode", "sslrootcert"],
        );
        assert_eq!(rest, "postgres://u:p@h/db?application_name=kite");
        assert_eq!(v, [Some("verify-full".into()), Some("/tmp/ca.pem".into())]);
        let (rest, v) = take_params(
            "host=h sslmode = require password='a  b\\'c' sslrootcert='/x y/ca.pem'",
            &["sslmode", "sslrootcert"],
        );
        // The other pairs are left as written, quotes and spaces and all.
        assert_eq!(rest, "host=h  password='a  b\\'c'");
        assert_eq!(v[0].as_deref(), Some("require"));
        assert_eq!(v[1].as_deref(), Some("/x y/ca.pem"));
        let (rest, v) = take_params("postgres://h/db", &["sslmode"]);
        assert_eq!((rest.as_str(), v[0].as_deref()), ("postgres://h/db", None));
        assert_eq!(
            put_param("postgres://h/db", "sslmode", "prefer"),
            "postgres://h/db?sslmode=prefer"
        );
    }

    #[test]
    fn unknown_modes_and_missing_roots_are_refused() {
        let e = prepare("postgres://h/db?sslmode=sometimes").err().unwrap();
        assert!(e.to_string().contains("sslmode=\"sometimes\""), "{e}");
        let e = prepare("postgres://h/db?sslmode=verify-ca&sslrootcert=/nonexistent/ca.pem")
            .err()
            .unwrap();
        assert!(e.to_string().contains("cannot read sslrootcert"), "{e}");
        // The system's roots mean verify-full: alone, or refused with a weaker mode.
        for weaker in ["prefer", "require", "verify-ca"] {
            let url = format!("postgres://h/db?sslrootcert=system&sslmode={weaker}");
            let e = prepare(&url).err().unwrap();
            assert!(e.to_string().contains("verify-full"), "{weaker}: {e}");
        }
        let (url, _) = prepare("postgres://h/db?sslrootcert=system").unwrap();
        assert_eq!(url, "postgres://h/db?sslmode=require");
    }
}
