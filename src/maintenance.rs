//! Maintenance windows: times an operator announced ahead, during which one breaker key
//! (tool × provider) acts forced open, as pure functions of wall-clock time.
//!
//! Why a schedule and not a hand-forced breaker: a provider announces its maintenance days ahead,
//! and an operator who must force the breaker open at 02:00 and back at 04:00 forgets one of the
//! two. A window opens and closes by itself, says why and until when, and is the same on every
//! replica because it is configuration, not state (nothing is stored, nothing is followed).
//!
//! A window is either one range (`start`, `end`, RFC 3339) or a weekly repeat (a day of the week,
//! a UTC time and how long it lasts, under a week). Everything here takes `now` as an argument and
//! reads no clock, so the rules are table-tested; the call path asks with `clock::utc_now()`,
//! which follows tokio's clock, so the gateway's behaviour is tested on a paused clock.

use std::time::Duration;

use chrono::{DateTime, Datelike, NaiveTime, TimeDelta, Utc, Weekday};

/// When a window is in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum When {
    /// Once, from `start` (included) to `end` (excluded).
    Once {
        /// The first instant of the window.
        start: DateTime<Utc>,
        /// The first instant after it.
        end: DateTime<Utc>,
    },
    /// Every week on `day` from `at` (UTC) for `lasts` (under a week).
    Weekly {
        /// The day of the week the window starts on.
        day: Weekday,
        /// The UTC time it starts at.
        at: NaiveTime,
        /// How long it lasts.
        lasts: Duration,
    },
}

/// One configured maintenance window of one breaker key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// The tool, e.g. `search_flights`.
    pub tool: String,
    /// The provider, e.g. `duffel`.
    pub provider: String,
    /// When it is in force.
    pub when: When,
    /// Why, as the operator wrote it (the model reads it).
    pub reason: String,
}

/// One occurrence of a window: from `start` (included) to `end` (excluded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Occurrence {
    /// The first instant.
    pub start: DateTime<Utc>,
    /// The first instant after it.
    pub end: DateTime<Utc>,
}

/// A key under maintenance now: until when, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Active {
    /// When the key admits calls again (back-to-back windows joined).
    pub until: DateTime<Utc>,
    /// The reason of the window in force now.
    pub reason: String,
}

impl Window {
    /// The occurrence in force at `now`, else the next one; `None` once a one-off window is over.
    pub fn current_or_next(&self, now: DateTime<Utc>) -> Option<Occurrence> {
        match &self.when {
            When::Once { start, end } => (now < *end).then_some(Occurrence {
                start: *start,
                end: *end,
            }),
            When::Weekly { day, at, lasts } => {
                let lasts = TimeDelta::from_std(*lasts).ok()?;
                let back = (i64::from(now.weekday().num_days_from_monday())
                    - i64::from(day.num_days_from_monday()))
                .rem_euclid(7);
                let date = now.date_naive() - TimeDelta::days(back);
                let mut start = date.and_time(*at).and_utc();
                if start > now {
                    start -= TimeDelta::weeks(1);
                }
                if start + lasts <= now {
                    start += TimeDelta::weeks(1);
                }
                Some(Occurrence {
                    start,
                    end: start + lasts,
                })
            }
        }
    }

    /// The occurrence in force at `now`, if one is.
    pub fn active_at(&self, now: DateTime<Utc>) -> Option<Occurrence> {
        self.current_or_next(now).filter(|o| o.start <= now)
    }
}

/// Every configured window, asked by key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Schedule {
    windows: Vec<Window>,
}

impl Schedule {
    /// A schedule of `windows` (validated by the configuration loader).
    pub fn new(windows: Vec<Window>) -> Self {
        Self { windows }
    }

    /// The windows, as configured.
    pub fn windows(&self) -> &[Window] {
        &self.windows
    }

    /// Whether `tool` on `provider` is under maintenance at `now`, until when and why. Windows
    /// of the key that overlap or follow each other without a gap count as one.
    pub fn active(&self, tool: &str, provider: &str, now: DateTime<Utc>) -> Option<Active> {
        let of_key = || {
            self.windows
                .iter()
                .filter(move |w| w.tool == tool && w.provider == provider)
        };
        let (first, occurrence) = of_key()
            .filter_map(|w| w.active_at(now).map(|o| (w, o)))
            .max_by_key(|(_, o)| o.end)?;
        let mut until = occurrence.end;
        // Each round moves `until` to a later end or stops, so the windows bound the rounds.
        for _ in 0..self.windows.len() {
            match of_key()
                .filter_map(|w| w.active_at(until))
                .map(|o| o.end)
                .max()
            {
                Some(end) if end > until => until = end,
                _ => break,
            }
        }
        Some(Active {
            until,
            reason: first.reason.clone(),
        })
    }

    /// Every window's occurrence in force at `now` or next, soonest first (over windows left
    /// out).
    pub fn upcoming(&self, now: DateTime<Utc>) -> Vec<(&Window, Occurrence)> {
        let mut out: Vec<_> = self
            .windows
            .iter()
            .filter_map(|w| w.current_or_next(now).map(|o| (w, o)))
            .collect();
        out.sort_by_key(|(w, o)| (o.start, w.tool.clone(), w.provider.clone()));
        out
    }
}

/// The time from `now` to `until`, zero once it has passed.
pub fn left(now: DateTime<Utc>, until: DateTime<Utc>) -> Duration {
    (until - now).to_std().unwrap_or(Duration::ZERO)
}

/// A weekday as an operator writes it (`monday`, `mon`; any case).
pub fn parse_weekday(text: &str) -> Option<Weekday> {
    let lower = text.trim().to_ascii_lowercase();
    [
        Weekday::Mon,
        Weekday::Tue,
        Weekday::Wed,
        Weekday::Thu,
        Weekday::Fri,
        Weekday::Sat,
        Weekday::Sun,
    ]
    .into_iter()
    .find(|d| {
        let full = weekday_name(*d);
        lower == full || lower == full[..3]
    })
}

/// A weekday's full lower-case English name, as configuration and `/v1/breakers` write it.
pub fn weekday_name(day: Weekday) -> &'static str {
    match day {
        Weekday::Mon => "monday",
        Weekday::Tue => "tuesday",
        Weekday::Wed => "wednesday",
        Weekday::Thu => "thursday",
        Weekday::Fri => "friday",
        Weekday::Sat => "saturday",
        Weekday::Sun => "sunday",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn once(tool: &str, start: &str, end: &str, reason: &str) -> Window {
        Window {
            tool: tool.into(),
            provider: "duffel".into(),
            when: When::Once {
                start: t(start),
                end: t(end),
            },
            reason: reason.into(),
        }
    }

    /// Sundays 02:00–04:00 UTC.
    fn sundays() -> Window {
        Window {
            tool: "search_flights".into(),
            provider: "duffel".into(),
            when: When::Weekly {
                day: Weekday::Sun,
                at: NaiveTime::from_hms_opt(2, 0, 0).unwrap(),
                lasts: Duration::from_secs(2 * 3600),
            },
            reason: "weekly upgrade".into(),
        }
    }

    #[test]
    fn a_one_off_window_opens_at_start_and_closes_at_end() {
        let w = once(
            "search_flights",
            "2026-12-05T02:00:00Z",
            "2026-12-05T04:00:00Z",
            "r",
        );
        let occ = Occurrence {
            start: t("2026-12-05T02:00:00Z"),
            end: t("2026-12-05T04:00:00Z"),
        };
        // (now, active, current or next)
        let table = [
            ("2026-12-01T00:00:00Z", None, Some(occ)),
            ("2026-12-05T01:59:59Z", None, Some(occ)),
            ("2026-12-05T02:00:00Z", Some(occ), Some(occ)),
            ("2026-12-05T03:59:59Z", Some(occ), Some(occ)),
            ("2026-12-05T04:00:00Z", None, None),
            ("2027-01-01T00:00:00Z", None, None),
        ];
        for (now, active, next) in table {
            assert_eq!(w.active_at(t(now)), active, "active at {now}");
            assert_eq!(w.current_or_next(t(now)), next, "next at {now}");
        }
    }

    #[test]
    fn a_weekly_window_repeats_on_its_day() {
        let w = sundays();
        // 2026-12-06 is a Sunday.
        let sun = |d: &str| Occurrence {
            start: t(&format!("{d}T02:00:00Z")),
            end: t(&format!("{d}T04:00:00Z")),
        };
        let table = [
            ("2026-12-02T06:45:00Z", None, sun("2026-12-06")), // a Wednesday
            ("2026-12-06T01:59:59Z", None, sun("2026-12-06")),
            (
                "2026-12-06T02:00:00Z",
                Some(sun("2026-12-06")),
                sun("2026-12-06"),
            ),
            (
                "2026-12-06T03:30:00Z",
                Some(sun("2026-12-06")),
                sun("2026-12-06"),
            ),
            ("2026-12-06T04:00:00Z", None, sun("2026-12-13")),
            ("2026-12-06T23:00:00Z", None, sun("2026-12-13")),
            (
                "2026-12-13T02:00:00Z",
                Some(sun("2026-12-13")),
                sun("2026-12-13"),
            ),
        ];
        for (now, active, next) in table {
            assert_eq!(w.active_at(t(now)), active, "active at {now}");
            assert_eq!(w.current_or_next(t(now)), Some(next), "next at {now}");
        }
    }

    #[test]
    fn a_weekly_window_may_run_past_midnight_into_the_next_week() {
        let w = Window {
            when: When::Weekly {
                day: Weekday::Sun,
                at: NaiveTime::from_hms_opt(23, 0, 0).unwrap(),
                lasts: Duration::from_secs(3 * 3600),
            },
            ..sundays()
        };
        // Monday 01:00 is inside Sunday 23:00 + 3 h.
        let occ = w.active_at(t("2026-12-07T01:00:00Z")).unwrap();
        assert_eq!(occ.start, t("2026-12-06T23:00:00Z"));
        assert_eq!(occ.end, t("2026-12-07T02:00:00Z"));
        assert_eq!(w.active_at(t("2026-12-07T02:00:00Z")), None);
    }

    #[test]
    fn only_the_windows_key_is_under_maintenance() {
        let s = Schedule::new(vec![sundays()]);
        let now = t("2026-12-06T03:00:00Z");
        let active = s.active("search_flights", "duffel", now).unwrap();
        assert_eq!(active.until, t("2026-12-06T04:00:00Z"));
        assert_eq!(active.reason, "weekly upgrade");
        assert_eq!(s.active("search_flights", "amadeus", now), None);
        assert_eq!(s.active("book_flight", "duffel", now), None);
        assert_eq!(
            s.active("search_flights", "duffel", t("2026-12-06T04:00:00Z")),
            None
        );
    }

    #[test]
    fn windows_back_to_back_or_overlapping_count_as_one() {
        let s = Schedule::new(vec![
            sundays(),
            once(
                "search_flights",
                "2026-12-06T04:00:00Z",
                "2026-12-06T05:00:00Z",
                "data migration",
            ),
            once(
                "search_flights",
                "2026-12-06T04:30:00Z",
                "2026-12-06T06:00:00Z",
                "reindex",
            ),
            once(
                "search_flights",
                "2026-12-06T07:00:00Z",
                "2026-12-06T08:00:00Z",
                "later, after a gap",
            ),
        ]);
        let active = s
            .active("search_flights", "duffel", t("2026-12-06T02:30:00Z"))
            .unwrap();
        assert_eq!(active.until, t("2026-12-06T06:00:00Z"));
        assert_eq!(active.reason, "weekly upgrade");
    }

    #[test]
    fn upcoming_lists_current_and_next_occurrences_soonest_first() {
        let s = Schedule::new(vec![
            sundays(),
            once(
                "book_flight",
                "2026-12-03T00:00:00Z",
                "2026-12-03T01:00:00Z",
                "r",
            ),
            once(
                "book_flight",
                "2026-11-01T00:00:00Z",
                "2026-11-01T01:00:00Z",
                "over",
            ),
        ]);
        let up = s.upcoming(t("2026-12-02T06:45:00Z"));
        let tools: Vec<_> = up.iter().map(|(w, _)| w.tool.as_str()).collect();
        assert_eq!(tools, ["book_flight", "search_flights"]);
    }

    #[test]
    fn weekdays_read_in_full_or_short_in_any_case() {
        assert_eq!(parse_weekday("Sunday"), Some(Weekday::Sun));
        assert_eq!(parse_weekday("mon"), Some(Weekday::Mon));
        assert_eq!(parse_weekday(" WED "), Some(Weekday::Wed));
        assert_eq!(parse_weekday("funday"), None);
        assert_eq!(parse_weekday("su"), None);
    }
}
