//! The unit tests of the parent module.

use super::*;

#[test]
fn pkce_verifiers_are_long_enough_and_challenges_are_their_s256() {
    use sha2::Digest;
    let (verifier, challenge) = pkce().unwrap();
    assert_eq!(verifier.len(), 43);
    assert_eq!(
        challenge,
        URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()))
    );
    assert_ne!(pkce().unwrap().0, verifier);
}

#[test]
fn lifetimes_are_read_as_servers_write_them() {
    let read = |v: &str| {
        let t: Tokens =
            serde_json::from_str(&format!(r#"{{"access_token":"a","expires_in":{v}}}"#)).unwrap();
        t.expires_in
    };
    assert_eq!(read("3600"), Some(3600));
    assert_eq!(read("\"3600\""), Some(3600));
    assert_eq!(read("3600.5"), Some(3600));
    assert_eq!(read("1e300"), Some(u64::MAX));
    assert_eq!(read("-5"), None);
    assert_eq!(read("null"), None);
    assert_eq!(read("\"soon\""), None);
}

#[test]
fn a_secret_is_sent_as_the_metadata_allows() {
    let mut meta = ServerMetadata::default();
    assert_eq!(method_for(&meta, false), "none");
    assert_eq!(method_for(&meta, true), "client_secret_basic");
    meta.token_endpoint_auth_methods_supported = vec!["client_secret_post".into()];
    assert_eq!(method_for(&meta, true), "client_secret_post");
}

#[test]
fn assertions_are_signed_jwts_naming_the_client_to_the_issuer() {
    let rng = ring::rand::SystemRandom::new();
    let der = ring::signature::EcdsaKeyPair::generate_pkcs8(
        &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
        &rng,
    )
    .unwrap();
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        STANDARD.encode(der.as_ref())
    );
    let jwt = assertion(&AssertionKey(pem), "me", "https://as.example").unwrap();
    let parts: Vec<&str> = jwt.split('.').collect();
    assert_eq!(parts.len(), 3);
    let claims: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    assert_eq!(claims["iss"], "me");
    assert_eq!(claims["aud"], "https://as.example");
    assert_eq!(URL_SAFE_NO_PAD.decode(parts[2]).unwrap().len(), 64);
    assert!(assertion(&AssertionKey("nonsense".into()), "me", "a").is_err());
}
