//! ISO-8601 durations as providers write them (`PT07H05M`, `PT2H25M`, `P1DT2H`).

/// Minutes in an ISO-8601 duration such as `PT07H05M` or `P1DT2H`; seconds are dropped.
pub(crate) fn iso_minutes(d: &str) -> Option<u32> {
    let rest = d.strip_prefix('P')?;
    let (date, time) = rest.split_once('T').unwrap_or((rest, ""));
    let mut minutes: u32 = 0;
    let mut num = String::new();
    for c in date.chars() {
        if c.is_ascii_digit() {
            num.push(c);
        } else if c == 'D' {
            minutes += num.parse::<u32>().ok()? * 24 * 60;
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
            minutes += match c {
                'H' => n * 60,
                'M' => n,
                'S' => 0,
                _ => return None,
            };
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
}
