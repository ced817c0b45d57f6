//! `[[maintenance]]`: both forms load, and every broken entry is named with its key.

use chrono::{NaiveTime, Weekday};

use super::*;
use crate::maintenance::When;

fn with_windows(text: &str) -> MapFiles {
    let base = MapFiles::defaults();
    let main = base
        .0
        .get(Path::new("/cfg/faregate.toml"))
        .cloned()
        .unwrap_or_default();
    base.put("faregate.toml", &format!("{main}\n{text}"))
}

#[test]
fn one_off_and_weekly_windows_load() {
    let config = with_windows(
        r#"
[[maintenance]]
tool = "search_flights"
provider = "duffel"
start = "2026-12-05T03:00:00+01:00"
end = "2026-12-05T04:00:00Z"
reason = "Duffel's announced API upgrade"

[[maintenance]]
tool = "book_flight"
provider = "duffel"
weekly = "Sun"
at = "02:30"
lasts = "90m"
reason = "weekly maintenance"
"#,
    )
    .load()
    .unwrap_or_else(|e| panic!("{e}"));
    let [once, weekly] = &config.maintenance[..] else {
        panic!("two windows: {:?}", config.maintenance);
    };
    assert_eq!(once.tool, "search_flights");
    let When::Once { start, end } = &once.when else {
        panic!("{once:?}")
    };
    assert_eq!(start.to_rfc3339(), "2026-12-05T02:00:00+00:00", "in UTC");
    assert_eq!(end.to_rfc3339(), "2026-12-05T04:00:00+00:00");
    assert_eq!(
        weekly.when,
        When::Weekly {
            day: Weekday::Sun,
            at: NaiveTime::from_hms_opt(2, 30, 0).expect("a time"),
            lasts: Duration::from_secs(90 * 60),
        }
    );
    assert_eq!(weekly.reason, "weekly maintenance");
}

/// A window over before now loads (a reload must not fail because time passed), with a warning
/// naming its end: it holds nothing, and is most likely a mistyped year.
#[test]
fn a_window_that_has_ended_loads_with_a_warning() {
    let files = with_windows(
        r#"
[[maintenance]]
tool = "search_flights"
provider = "duffel"
start = "2016-12-05T02:00:00Z"
end = "2016-12-05T04:00:00Z"
reason = "a year mistyped"

[[maintenance]]
tool = "book_flight"
provider = "duffel"
start = "2016-12-05T02:00:00Z"
end = "2999-12-05T04:00:00Z"
reason = "long"
"#,
    );
    let (config, warnings) = files.load_warned();
    assert_eq!(config.maintenance.len(), 2);
    let said: Vec<&String> = warnings
        .iter()
        .filter(|w| w.contains("maintenance["))
        .collect();
    assert_eq!(said.len(), 1, "{said:#?}");
    assert!(
        said[0].contains("maintenance[0].end")
            && said[0].contains("2016-12-05T04:00:00+00:00 has passed"),
        "{said:#?}"
    );
}

#[test]
fn every_broken_window_is_listed_with_its_key() {
    let errors = errors_of(with_windows(
        r#"
[[maintenance]]
tool = "search_flights"
provider = "duffel"
start = "2026-12-05T04:00:00Z"
end = "2026-12-05T02:00:00Z"
reason = "backwards"

[[maintenance]]
tool = "search_trains"
provider = "duffel"
start = "2026-12-05T02:00:00Z"
end = "2026-12-05T04:00:00Z"
reason = "no such tool"

[[maintenance]]
tool = "book_flight"
provider = "amadeus"
weekly = "sunday"
at = "02:00"
lasts = "1h"
reason = "not its provider"

[[maintenance]]
tool = "book_flite"
provider = "duffel"
weekly = "funday"
at = "25:00"
lasts = "8d"
reason = "bad tool, weekday, time and length"

[[maintenance]]
tool = "book_flight"
provider = "duffel"
start = "tomorrow"
end = "2026-12-05T04:00:00Z"
reason = ""

[[maintenance]]
tool = "book_flight"
provider = "duffel"
start = "2026-12-05T02:00:00Z"
end = "2026-12-05T04:00:00Z"
weekly = "sunday"
reason = "both forms"

[[maintenance]]
tool = "book_flight"
provider = "duffel"
reason = "no time at all"
"#,
    ));
    let expect = [
        ("maintenance[0].end", "is not after start"),
        (
            "maintenance[1].tool",
            "search_trains/duffel: \"search_trains\" is not a configured tool",
        ),
        (
            "maintenance[2].provider",
            "book_flight/amadeus: book_flight is not served by \"amadeus\"; its providers are: duffel",
        ),
        (
            "maintenance[3].weekly",
            "\"funday\" is not a day of the week",
        ),
        ("maintenance[3].at", "\"25:00\" is not a time of day"),
        // Its times wrong too, the tool is still checked.
        (
            "maintenance[3].tool",
            "book_flite/duffel: \"book_flite\" is not a configured tool",
        ),
        ("maintenance[3].lasts", "shorter than a week"),
        (
            "maintenance[4].start",
            "\"tomorrow\" is not an RFC 3339 time",
        ),
        ("maintenance[4].reason", "is empty"),
        ("maintenance[5]:", "not both"),
        ("maintenance[6]:", "say when"),
    ];
    for (key, says) in expect {
        assert!(
            errors.iter().any(|e| e.contains(key) && e.contains(says)),
            "no error at {key} saying {says:?} in {errors:#?}"
        );
    }
    assert_eq!(errors.len(), expect.len(), "{errors:#?}");
}
