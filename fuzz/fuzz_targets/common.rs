//! What the targets share: cutting input into the pieces a network might deliver.

/// `bytes` cut at each of `cuts` (positions taken modulo the length, in order).
pub fn pieces<'a>(bytes: &'a [u8], cuts: &[u16]) -> Vec<&'a [u8]> {
    let mut at: Vec<usize> = cuts
        .iter()
        .map(|c| usize::from(*c) % (bytes.len() + 1))
        .collect();
    at.sort_unstable();
    let mut out = Vec::with_capacity(at.len() + 1);
    let mut from = 0;
    for cut in at {
        out.push(&bytes[from..cut]);
        from = cut;
    }
    out.push(&bytes[from..]);
    out
}
