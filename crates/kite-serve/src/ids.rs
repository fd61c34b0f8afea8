//! Random ids and tokens, as hex: what tells apart requests, answers, keys and places
//! across replicas and restarts.

/// A new token: 32 random bytes as hex.
pub fn new_token() -> std::io::Result<String> {
    random_hex(32)
}

/// `n` random bytes as hex.
pub(crate) fn random_hex(n: usize) -> std::io::Result<String> {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(hex(&bytes))
}

/// `bytes` as lowercase hex (an id per request is made of it: no formatting per byte).
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_two_lowercase_digits_a_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(random_hex(12).unwrap().len(), 24);
    }
}
