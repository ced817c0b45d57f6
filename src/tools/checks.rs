//! Semantic argument checks that a JSON Schema cannot express, shared by the tools.
//!
//! The schema already enforces shapes (three upper-case letters, `YYYY-MM-DD`); these checks add
//! meaning: a date that exists and is not in the past, a check-out after the check-in, a name
//! with letters and nothing invisible in it. Each failure becomes one [`FieldError`] that says
//! what is expected.

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

/// Parses a `YYYY-MM-DD` date that must be `today` or later: `today` is the earliest date it is
/// anywhere (UTC−12), so the text asks for today where the trip starts, as the provider checks.
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
                format!(
                    "{value} is in the past; expected today's date where the trip starts, or a later one (nowhere on Earth is it before {today} now)"
                ),
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

/// Checks that a person's names (`{person}.given_name`, `{person}.family_name`) are names a
/// provider can book and a model can read back: not blank (the schema's minimum length lets a
/// name of spaces through), with no control, line-break or invisible formatting character (a
/// zero-width space passes a blank check, a bidi override reverses the text around it, and a
/// line break is carried into the confirmation the model reads), and with at least one letter.
/// Accents, apostrophes, hyphens, spaces and every script's letters are names: "Zoë
/// O'Brien-Núñez", "李", "Özil".
pub fn names(errors: &mut Errors, person: &str, given_name: &str, family_name: &str) {
    for (field, value) in [("given_name", given_name), ("family_name", family_name)] {
        if let Some(problem) = name_problem(value) {
            errors.push(&format!("{person}.{field}"), problem);
        }
    }
}

/// What is wrong with one name, in words that say what to change; `None` for a good name.
fn name_problem(value: &str) -> Option<String> {
    if value.trim().is_empty() {
        return Some("must not be blank".into());
    }
    if let Some(c) = value.chars().find(|&c| c.is_control() || is_line_break(c)) {
        return Some(format!(
            "has a line break or another control character ({}); write the name on one line, in letters, as on the passport",
            code_point(c)
        ));
    }
    if let Some(c) = value.chars().find(|&c| is_format(c)) {
        return Some(format!(
            "has an invisible formatting character ({}, such as a zero-width space or a text-direction mark); remove it and write the name as on the passport",
            code_point(c)
        ));
    }
    if !value.chars().any(char::is_alphabetic) {
        return Some(
            "has no letter; expected the name as on the passport, e.g. \"Zoë O'Brien-Núñez\""
                .into(),
        );
    }
    None
}

/// `U+200B`: a character named without printing it.
fn code_point(c: char) -> String {
    format!("U+{:04X}", u32::from(c))
}

/// The line and paragraph separators (categories Zl and Zp): line breaks that
/// [`char::is_control`] does not count.
fn is_line_break(c: char) -> bool {
    matches!(c, '\u{2028}' | '\u{2029}')
}

/// Unicode's format characters (category Cf, as of Unicode 16): invisible, yet they change how
/// text around them is shown or compared. The standard library has no test for the category,
/// and the list is short and grows rarely, so it is written out rather than taken from a crate:
/// soft hyphen, Arabic and Syriac number and end marks, the Mongolian vowel separator,
/// zero-width space, non-joiner and joiner, the direction marks, embeddings, overrides and
/// isolates, the word joiner and invisible operators, the byte order mark, the interlinear
/// annotation marks, and a few of Kaithi, Egyptian hieroglyphs, shorthand, musical notation and
/// the tag characters.
fn is_format(c: char) -> bool {
    matches!(
        u32::from(c),
        0x00AD
            | 0x0600..=0x0605
            | 0x061C
            | 0x06DD
            | 0x070F
            | 0x0890..=0x0891
            | 0x08E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    )
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
        assert_eq!(
            errs[0].message,
            "2026-11-29 is in the past; expected today's date where the trip starts, or a later one (nowhere on Earth is it before 2026-11-30 now)",
            "not \"expected 2026-11-30\": at UTC-12 that date is already past where most trips start, and the provider refuses it"
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

    fn name_errors(given_name: &str, family_name: &str) -> Vec<FieldError> {
        let mut e = Errors::default();
        names(&mut e, "guests[0]", given_name, family_name);
        e.finish().err().unwrap_or_default()
    }

    #[test]
    fn real_names_in_any_script_are_accepted() {
        for (given, family) in [
            ("Zoë", "O'Brien-Núñez"),
            ("Mesut", "Özil"),
            ("小龙", "李"),
            ("Ana María", "de la Cruz"),
            ("Σωκράτης", "Παπαδόπουλος"),
            ("Анна", "Каренина"),
            ("محمد", "عبد الله"),
            ("J.", "D'Arcy"),
        ] {
            assert_eq!(name_errors(given, family), vec![], "{given} {family}");
        }
    }

    #[test]
    fn control_invisible_and_letterless_names_are_refused_by_field() {
        let errs = name_errors("A\u{0}\n\u{202e}", "\u{200b}");
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["guests[0].given_name", "guests[0].family_name"]);
        assert!(
            errs[0].message.contains("control character (U+0000)"),
            "{}",
            errs[0].message
        );
        assert!(
            errs[1]
                .message
                .contains("invisible formatting character (U+200B"),
            "{}",
            errs[1].message
        );
        assert!(
            errs.iter()
                .all(|e| !e.message.contains(['\0', '\n', '\u{200b}']))
        );

        for (name, expected) in [
            ("Ana\nMaria", "control character (U+000A)"),
            ("Ana\tMaria", "control character (U+0009)"),
            ("Ana\u{2028}Maria", "line break"),
            ("Ana\u{85}", "control character (U+0085)"),
            ("An\u{ad}a", "invisible formatting character (U+00AD"),
            ("\u{202e}anA", "invisible formatting character (U+202E"),
            ("A\u{2066}na", "invisible formatting character (U+2066"),
            ("\u{feff}Ana", "invisible formatting character (U+FEFF"),
            ("Ana\u{e0041}", "invisible formatting character (U+E0041"),
            ("...", "has no letter"),
            ("- '", "has no letter"),
            ("007", "has no letter"),
            ("   ", "must not be blank"),
        ] {
            let errs = name_errors("Ana", name);
            assert_eq!(errs.len(), 1, "{name:?}");
            assert_eq!(errs[0].field, "guests[0].family_name");
            assert!(
                errs[0].message.contains(expected),
                "{name:?}: {}",
                errs[0].message
            );
        }
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
