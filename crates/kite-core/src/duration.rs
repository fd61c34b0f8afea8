//! Durations read from files and flags, checked before use: a number of seconds that is not
//! finite, not above zero, or absurdly large is refused with a message naming the setting.

use std::time::Duration;

/// The longest duration a setting may ask for: one week.
pub const MAX_SECS: f64 = 7.0 * 24.0 * 3600.0;

/// `secs` seconds as a duration, or a message naming `what` when it is not a number of
/// seconds above 0 and at most a week.
///
/// ```
/// use kite_core::duration_from_secs;
/// assert_eq!(duration_from_secs("timeout", 2.5).unwrap().as_millis(), 2500);
/// assert!(duration_from_secs("timeout", 1e300).unwrap_err().contains("timeout"));
/// ```
pub fn duration_from_secs(what: &str, secs: f64) -> Result<Duration, String> {
    if secs.is_finite() && secs > 0.0 && secs <= MAX_SECS {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err(format!(
            "{what} must be a number of seconds above 0 and at most {MAX_SECS} (a week), not {secs}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_finite_positive_durations_up_to_a_week_pass() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e300, MAX_SECS + 1.0] {
            let e = duration_from_secs("`timeout_secs`", bad).unwrap_err();
            assert!(e.starts_with("`timeout_secs` must be"), "{e}");
        }
        assert_eq!(
            duration_from_secs("t", MAX_SECS).unwrap(),
            Duration::from_secs(604_800)
        );
        assert_eq!(
            duration_from_secs("t", 1e-9).unwrap(),
            Duration::from_nanos(1)
        );
    }
}
