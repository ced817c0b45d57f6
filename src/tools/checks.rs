//! Semantic argument checks that a JSON Schema cannot express, shared by the tools.
//!
//! The schema already enforces shapes (three upper-case letters, `YYYY-MM-DD`); these checks add
//! meaning: a date that exists and is not in the past, a check-out after the check-in. Each
//! failure becomes one [`FieldError`] that says what is expected.

use chrono::NaiveDate;

use super::FieldError;

/// Collects field errors for one call's arguments.
#[derive(Debug, Default)]
pub struct Errors(Vec<FieldError>);

impl Errors {
    /// Records that `field` is wrong and what is expected instead.
    pub fn push(&mut self, field: &str, message: impl Into<String>) {
        self.0.push(FieldError {
            field: field.to_string(),
            message: message.into(),
        });
    }

    /// The errors, or `Ok` when none.
    pub fn finish(self) -> Result<(), Vec<FieldError>> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(self.0)
        }
    }
}

/// Parses a `YYYY-MM-DD` date that must be `today` or later.
pub fn date_not_past(
    errors: &mut Errors,
    field: &str,
    value: &str,
    today: NaiveDate,
) -> Option<NaiveDate> {
    match iso_date(value) {
        Ok(d) if d < today => {
            errors.push(
                field,
                format!("{value} is in the past; expected {today} or a later date"),
            );
            None
        }
        Ok(d) => Some(d),
        Err(_) => {
            errors.push(
                field,
                format!("\"{value}\" is not a calendar date; expected YYYY-MM-DD, e.g. {today}"),
            );
            None
        }
    }
}

/// Parses a `YYYY-MM-DD` date with no constraint (birth dates).
pub fn date(errors: &mut Errors, field: &str, value: &str) -> Option<NaiveDate> {
    match iso_date(value) {
        Ok(d) => Some(d),
        Err(_) => {
            errors.push(
                field,
                format!("\"{value}\" is not a calendar date; expected YYYY-MM-DD"),
            );
            None
        }
    }
}

/// `value` as a `YYYY-MM-DD` date: chrono's `%Y-%m-%d` reading, with the common shape (ten
/// bytes, four digits, two, two) read directly. `parse_from_str` interprets its format string
/// on every call, about 1.2k instructions, once per date of every call (BENCHMARKS.md,
/// fast-fail); anything else, and a date that does not exist, goes to chrono as before, so
/// what is accepted and refused is unchanged.
fn iso_date(value: &str) -> chrono::ParseResult<NaiveDate> {
    let digits = |range: std::ops::Range<usize>| {
        value.as_bytes()[range].iter().try_fold(0u32, |n, b| {
            b.is_ascii_digit().then(|| n * 10 + u32::from(b - b'0'))
        })
    };
    let b = value.as_bytes();
    if b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && let (Some(y), Some(m), Some(d)) = (digits(0..4), digits(5..7), digits(8..10))
        // Four digits: at most 9999, well inside i32 and chrono's range.
        && let Some(date) = i32::try_from(y)
            .ok()
            .and_then(|y| NaiveDate::from_ymd_opt(y, m, d))
    {
        return Ok(date);
    }
    NaiveDate::parse_from_str(value, "%Y-%m-%d")
}

/// Checks that a person's names (`{person}.given_name`, `{person}.family_name`) are not blank:
/// the schema's minimum length lets a name of spaces through, and a provider books no one by it.
pub fn names(errors: &mut Errors, person: &str, given_name: &str, family_name: &str) {
    for (field, value) in [("given_name", given_name), ("family_name", family_name)] {
        if value.trim().is_empty() {
            errors.push(&format!("{person}.{field}"), "must not be blank");
        }
    }
}

/// True for a three-letter upper-case IATA code.
pub fn is_iata(code: &str) -> bool {
    code.len() == 3 && code.bytes().all(|b| b.is_ascii_uppercase())
}

/// Checks a three-letter IATA airport or city code.
pub fn iata(errors: &mut Errors, field: &str, value: &str) {
    if !is_iata(value) {
        let hint = if value.len() == 3 && value.bytes().all(|b| b.is_ascii_alphabetic()) {
            format!(" (did you mean \"{}\"?)", value.to_ascii_uppercase())
        } else {
            String::new()
        };
        errors.push(
            field,
            format!(
                "\"{value}\" is not an IATA code; expected 3 upper-case letters such as \"JFK\"{hint}"
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 11, 30).unwrap_or_default()
    }

    #[test]
    fn past_dates_are_refused_with_today_named() {
        let mut e = Errors::default();
        assert!(date_not_past(&mut e, "departure_date", "2026-11-29", today()).is_none());
        let errs = e.finish().unwrap_err();
        assert_eq!(errs[0].field, "departure_date");
        assert!(
            errs[0].message.contains("2026-11-30"),
            "{}",
            errs[0].message
        );
    }

    #[test]
    fn today_is_accepted_and_impossible_dates_are_not() {
        let mut e = Errors::default();
        assert!(date_not_past(&mut e, "d", "2026-11-30", today()).is_some());
        assert!(date_not_past(&mut e, "d", "2026-02-30", today()).is_none());
        let errs = e.finish().unwrap_err();
        assert_eq!(errs.len(), 1);
        assert!(errs[0].message.contains("not a calendar date"));
    }

    #[test]
    fn the_direct_date_reading_accepts_and_refuses_what_chrono_does() {
        let texts = [
            "2026-11-30",
            "2028-02-29",
            "2026-02-29",
            "2026-02-30",
            "2026-13-01",
            "2026-00-10",
            "2026-04-31",
            "0000-01-01",
            "9999-12-31",
            "2026-1-05",
            "2026-01-5 ",
            " 2026-01-05",
            "+2026-01-05",
            "12026-01-05",
            "2026/01/05",
            "2026-01-0x",
            "2026-٠١-05",
            "",
        ];
        for text in texts {
            assert_eq!(
                iso_date(text).ok(),
                NaiveDate::parse_from_str(text, "%Y-%m-%d").ok(),
                "{text:?}"
            );
        }
        assert_eq!(
            iso_date("2026-03-07").ok(),
            NaiveDate::from_ymd_opt(2026, 3, 7)
        );
    }

    #[test]
    fn lower_case_iata_gets_a_suggestion() {
        let mut e = Errors::default();
        iata(&mut e, "origin", "jfk");
        iata(&mut e, "destination", "LHR");
        let errs = e.finish().unwrap_err();
        assert_eq!(errs.len(), 1);
        assert!(errs[0].message.contains("\"JFK\"?"), "{}", errs[0].message);
    }
}
