//! TLS to Postgres, as libpq's `sslmode` and `sslrootcert` describe it, so a URL that works
//! with `psql` works with kite:
//!
//! - `disable`: no TLS.
//! - `allow`, `prefer` (the default): TLS when the server offers it, its certificate not
//!   checked (as libpq does; a local server's snakeoil certificate is fine).
//! - `require`: TLS or nothing; the certificate checked against `sslrootcert` when one is
//!   named, else not checked.
//! - `verify-ca`: the certificate must chain to `sslrootcert` (else to the system's roots).
//! - `verify-full`: that, and it must name the host.
//!
//! tokio-postgres knows only `disable`, `prefer` and `require` and refuses `sslrootcert`, so
//! both are taken out of the URL here and the checks are made by kite's certificate
//! verifier; rustls does the rest.

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
    let mode = params[0].clone().unwrap_or_else(|| "prefer".into());
    let root = params[1].clone();
    let (pg_mode, check) = match mode.as_str() {
        "disable" => ("disable", Check::Nothing),
        "allow" | "prefer" => ("prefer", Check::Nothing),
        "require" if root.is_some() => ("require", Check::Chain),
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
    let verifier: Arc<dyn ServerCertVerifier> = match (check, &root) {
        (Check::Nothing, _) => Arc::new(Unchecked(provider.clone())),
        (_, Some(path)) => {
            let mut roots = RootCertStore::empty();
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| bad(format!("cannot read sslrootcert {path}: {e}")))?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(bad(format!("sslrootcert {path} holds no certificate")));
            }
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .map_err(|e| bad(format!("cannot use sslrootcert {path}: {e}")))?
        }
        (_, None) => Arc::new(
            rustls_platform_verifier::Verifier::new(provider.clone())
                .map_err(|e| bad(format!("cannot load the system's certificates: {e}")))?,
        ),
    };
    let verifier = match check {
        Check::Chain => Arc::new(AnyName(verifier)),
        _ => verifier,
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
    let mut take = |pair: &str| -> bool {
        let Some((k, v)) = pair.split_once('=') else {
            return false;
        };
        match names.iter().position(|n| *n == k.trim()) {
            Some(i) => {
                values[i] = Some(percent_decode(v.trim().trim_matches('\'')));
                true
            }
            None => false,
        }
    };
    if url.contains("://") {
        let Some((base, query)) = url.split_once('?') else {
            return (url.to_owned(), values);
        };
        let kept: Vec<&str> = query.split('&').filter(|p| !take(p)).collect();
        let rest = match kept.is_empty() {
            true => base.to_owned(),
            false => format!("{base}?{}", kept.join("&")),
        };
        (rest, values)
    } else {
        let kept: Vec<&str> = url.split_whitespace().filter(|p| !take(p)).collect();
        (kept.join(" "), values)
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

/// `%2F` and the like, as a URL's query writes a path.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
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

/// Checks the chain as the inner verifier does, whatever name the certificate holds:
/// `verify-ca`.
#[derive(Debug)]
struct AnyName(Arc<dyn ServerCertVerifier>);

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
        let (rest, v) = take_params("host=h sslmode=require dbname=d", &["sslmode"]);
        assert_eq!(
            (rest.as_str(), v[0].as_deref()),
            ("host=h dbname=d", Some("require"))
        );
        let (rest, v) = take_params("postgres://h/db", &["sslmode"]);
        assert_eq!((rest.as_str(), v[0].as_deref()), ("postgres://h/db", None));
        assert_eq!(
            put_param("postgres://h/db", "sslmode", "prefer"),
            "postgres://h/db?sslmode=prefer"
        );
        assert_eq!(percent_decode("%zz%2"), "%zz%2");
    }

    #[test]
    fn unknown_modes_and_missing_roots_are_refused() {
        let e = prepare("postgres://h/db?sslmode=sometimes").err().unwrap();
        assert!(e.to_string().contains("sslmode=\"sometimes\""), "{e}");
        let e = prepare("postgres://h/db?sslmode=verify-ca&sslrootcert=/nonexistent/ca.pem")
            .err()
            .unwrap();
        assert!(e.to_string().contains("cannot read sslrootcert"), "{e}");
    }
}
