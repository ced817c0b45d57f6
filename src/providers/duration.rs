//! ISO-8601 durations as providers write them (`PT07H05M`, `PT2H25M`, `P1DT2H`).

/// Minutes in an ISO-8601 duration such as `PT07H05M` or `P1DT2H`; seconds are dropped.
/// A duration too long for `u32` minutes (a provider's garbage, e.g. `P9999999D`) is `None`,
/// like any other unreadable duration.
pub(crate) fn iso_minutes(d: &str) -> Option<u32> {
    let rest = d.strip_prefix('P')?;
    let (date, time) = rest.split_once('T').unwrap_or((rest, ""));
    let mut minutes: u32 = 0;
    let mut num = String::new();
    for c in date.chars() {
        if c.is_ascii_digit() {
            num.push(c);
        } else if c == 'D' {
            let days: u32 = num.parse().ok()?;
            minutes = minutes.checked_add(days.checked_mul(24 * 60)?)?;
            num.clear();
        } else {
            return None;
        }
    }
    for c in time.chars() {
        if c.is_ascii_digit() {
            num.push(c);
        } else {
            let n: u32 = num.parse().ok()?;
            num.clear();
            let add = match c {
                'H' => n.checked_mul(60)?,
                'M' => n,
                'S' => 0,
                _ => return None,
            };
            minutes = minutes.checked_add(add)?;
        }
    }
    num.is_empty().then_some(minutes)
}

#[cfg(test)]
mod tests {
    use super::iso_minutes;

    #[test]
    fn iso_durations_become_minutes() {
        assert_eq!(iso_minutes("PT07H05M"), Some(425));
        assert_eq!(iso_minutes("PT2H25M"), Some(145));
        assert_eq!(iso_minutes("P1DT2H"), Some(26 * 60));
        assert_eq!(iso_minutes("PT45M"), Some(45));
        assert_eq!(iso_minutes("7h"), None);
        assert_eq!(iso_minutes("PT7"), None);
    }

    /// Found while fuzzing provider answers (`fuzz/`, target `provider_responses`; input
    /// `fuzz/corpus/provider_responses/duffel_duration_overflow`): a Duffel segment duration
    /// of `P9999999D` overflowed the multiplication, a panic in debug builds and a wrong
    /// number in release ones.
    #[test]
    fn durations_too_long_for_u32_minutes_are_unreadable_not_a_panic() {
        assert_eq!(iso_minutes("P9999999D"), None);
        assert_eq!(iso_minutes("PT99999999H"), None);
        assert_eq!(iso_minutes("P2982616DT5H"), None);
        assert_eq!(iso_minutes("P2982616DT1H"), Some(4_294_967_100));
        assert_eq!(iso_minutes("PT4294967295M"), Some(u32::MAX));
        assert_eq!(iso_minutes("PT4294967295M1M"), None);
    }
}
