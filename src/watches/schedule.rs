//! When a watch runs: every `interval`, from its first instant, until its end (a time, a number
//! of runs, or the watched flight's departure). Pure: instants are epoch milliseconds passed in.
//!
//! Instants are fixed points on the watch's own grid (first + k × interval), not "interval after
//! the last run ended": the job of an instant is keyed by it, so two replicas that both see the
//! watch due create one job, and a run that waited out a provider outage does not shift the
//! grid. Instants missed meanwhile are skipped, not run in a burst once the provider is back.

use std::time::Duration;

/// How a watch ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct End {
    /// No instant at or after this time (epoch ms).
    pub at_ms: Option<i64>,
    /// No more than this many runs.
    pub runs: Option<u32>,
    /// Ends once the watched flight has departed (`get_flight_status` only); the departure is
    /// read from each result.
    pub departure: bool,
}

/// A watch's schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// Between two instants.
    pub interval: Duration,
    /// When it stops.
    pub end: End,
}

impl Schedule {
    fn interval_ms(&self) -> i64 {
        i64::try_from(self.interval.as_millis())
            .unwrap_or(i64::MAX)
            .max(1)
    }

    /// The instant after `done` (the instant whose run just ended) that is not before `now_ms`,
    /// or `None` when the watch has ended: `runs` runs made, past its end time, or past the
    /// flight's departure (`departure_ms`, as the last result said).
    pub fn next(
        &self,
        done: i64,
        now_ms: i64,
        runs: u32,
        departure_ms: Option<i64>,
    ) -> Option<i64> {
        if self.end.runs.is_some_and(|max| runs >= max) {
            return None;
        }
        // Instants missed while the run waited (an outage) are skipped.
        let next = catch_up(
            done.saturating_add(self.interval_ms()),
            now_ms,
            self.interval,
        );
        if self.end.at_ms.is_some_and(|end| next >= end) {
            return None;
        }
        if self.end.departure && departure_ms.is_some_and(|dep| next >= dep) {
            return None;
        }
        Some(next)
    }
}

/// The first instant of the grid through `at` (every `interval`) that is not before `now_ms`.
pub(super) fn catch_up(at: i64, now_ms: i64, interval: Duration) -> i64 {
    let step = i64::try_from(interval.as_millis())
        .unwrap_or(i64::MAX)
        .max(1);
    if at >= now_ms {
        return at;
    }
    let behind = (now_ms - at + step - 1) / step;
    at.saturating_add(behind.saturating_mul(step))
}

/// An RFC 3339 time, with or without seconds (flight-status times are written to the minute,
/// `2026-11-02T08:15+01:00`), as epoch milliseconds.
pub(super) fn epoch_ms_of(text: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(text)
        .or_else(|_| chrono::DateTime::parse_from_str(text, "%Y-%m-%dT%H:%M%:z"))
        .ok()
        .map(|t| t.timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    fn every(minutes: u64, end: End) -> Schedule {
        Schedule {
            interval: Duration::from_secs(minutes * 60),
            end,
        }
    }

    const OPEN: End = End {
        at_ms: None,
        runs: None,
        departure: false,
    };

    #[test]
    fn next_instant_per_end() {
        /// The schedule, the instant done, now, runs so far, the departure, the next instant
        /// expected, and why.
        type Case = (
            Schedule,
            i64,
            i64,
            u32,
            Option<i64>,
            Option<i64>,
            &'static str,
        );
        let cases: &[Case] = &[
            (
                every(5, OPEN),
                0,
                MIN,
                1,
                None,
                Some(5 * MIN),
                "on the grid",
            ),
            (
                every(5, OPEN),
                0,
                12 * MIN,
                1,
                None,
                Some(15 * MIN),
                "missed instants skipped",
            ),
            (
                every(5, OPEN),
                0,
                10 * MIN,
                1,
                None,
                Some(10 * MIN),
                "an instant exactly now runs",
            ),
            (
                every(
                    5,
                    End {
                        runs: Some(3),
                        ..OPEN
                    },
                ),
                10 * MIN,
                10 * MIN,
                3,
                None,
                None,
                "three runs made",
            ),
            (
                every(
                    5,
                    End {
                        runs: Some(3),
                        ..OPEN
                    },
                ),
                5 * MIN,
                5 * MIN,
                2,
                None,
                Some(10 * MIN),
                "two of three made",
            ),
            (
                every(
                    5,
                    End {
                        at_ms: Some(10 * MIN),
                        ..OPEN
                    },
                ),
                5 * MIN,
                5 * MIN,
                2,
                None,
                None,
                "the end time is not an instant",
            ),
            (
                every(
                    5,
                    End {
                        departure: true,
                        ..OPEN
                    },
                ),
                5 * MIN,
                5 * MIN,
                2,
                Some(8 * MIN),
                None,
                "the flight has departed by then",
            ),
            (
                every(
                    5,
                    End {
                        departure: true,
                        ..OPEN
                    },
                ),
                5 * MIN,
                5 * MIN,
                2,
                None,
                Some(10 * MIN),
                "departure unknown yet",
            ),
            (
                every(5, OPEN),
                0,
                MIN,
                1,
                Some(2 * MIN),
                Some(5 * MIN),
                "departure ignored without the end",
            ),
        ];
        for (schedule, done, now, runs, departure, expected, why) in cases {
            assert_eq!(
                schedule.next(*done, *now, *runs, *departure),
                *expected,
                "{why}"
            );
        }
    }

    #[test]
    fn flight_times_read_with_or_without_seconds() {
        assert_eq!(epoch_ms_of("1970-01-01T01:01+01:00"), Some(MIN));
        assert_eq!(epoch_ms_of("1970-01-01T00:01:00Z"), Some(MIN));
        assert_eq!(epoch_ms_of("soon"), None);
    }
}
