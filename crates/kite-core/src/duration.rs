//! Durations read from files and flags, checked before use: a number of seconds that is not
//! finite, not above zero, or absurdly large is refused with a message naming the setting.

use std::time::Duration;

/// The longest duration a setting may ask for: one week.
pub(crate) const MAX_SECS: f64 = 7.0 * 24.0 * 3600.0;
/// The shortest: a millisecond (anything shorter is a typo, and fails every call).
pub(crate) const MIN_SECS: f64 = 0.001;

/// `secs` seconds as a duration, or a message naming `what` when it is not a number of
/// seconds from a millisecond to a week.
///
/// ```
/// use kite_core::duration_from_secs;
/// assert_eq!(duration_from_secs("timeout", 2.5).unwrap().as_millis(), 2500);
/// assert!(duration_from_secs("timeout", 1e300).unwrap_err().contains("timeout"));
/// ```
pub fn duration_from_secs(what: &str, secs: f64) -> Result<Duration, String> {
    if secs.is_finite() && (MIN_SECS..=MAX_SECS).contains(&secs) {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err(format!(
            "{what} must be a number of seconds from {MIN_SECS} to {MAX_SECS} (a week), not {secs:?}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_finite_positive_durations_up_to_a_week_pass() {
        for bad in [
            0.0,
            -1.0,
            f64::NAN,
            f64::INFINITY,
            1e300,
            MAX_SECS + 1.0,
            1e-300,
        ] {
            let e = duration_from_secs("`timeout_secs`", bad).unwrap_err();
            assert!(e.starts_with("`timeout_secs` must be"), "{e}");
            assert!(e.len() < 120, "a short message, not 300 digits: {e}");
        }
        assert_eq!(
            duration_from_secs("t", MAX_SECS).unwrap(),
            Duration::from_secs(604_800)
        );
        assert_eq!(
            duration_from_secs("t", 0.001).unwrap(),
            Duration::from_millis(1)
        );
    }
}
