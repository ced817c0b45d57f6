//! What a fleet shares about one breaker ([`SharedBreaker`]), one stored transition
//! ([`StoredTransition`]), one write waiting for the store ([`Write`]), and the conversions
//! between tokio instants and the epoch milliseconds that mean the same instant on every
//! replica.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::breaker::{BreakerKey, ForceMode};
use crate::clock;

/// The automatic state a replica last published for a breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AutoState {
    /// Nothing to follow (never opened, or an operator handed it back to the policy).
    Closed,
    /// Opened until this epoch millisecond.
    Open {
        /// The end of the open period, the same instant on every replica.
        until_ms: i64,
        /// Whether the recovery from it goes through the ramp: not after the provider's
        /// rate-limit pause (a quota that has reset serves at full rate), whichever replica
        /// probes at its end.
        ramp: bool,
    },
    /// The probes succeeded, into the ramp (`ramp`) or straight to closed.
    Recovered {
        /// Whether the recovery goes through the ramp.
        ramp: bool,
    },
}

/// One breaker's shared row: the operator's force, and the automatic state to follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SharedBreaker {
    /// Which breaker.
    pub(crate) key: BreakerKey,
    /// The operator's override, if any (`Open` or `Closed`).
    pub(crate) forced: Option<ForceMode>,
    /// The automatic state, followed when not forced.
    pub(crate) auto: AutoState,
    /// Grows by one on every write, so a replica applies each change once.
    pub(crate) version: i64,
    /// The replica that wrote it last.
    pub(crate) replica: String,
    /// While open: when the fleet's outage began (epoch ms), the first open of it on whichever
    /// replica, kept across its failed probes; `None` when not open or not known (a replica of
    /// an older version wrote the row last).
    pub(crate) opened_at_ms: Option<i64>,
    /// The fleet's automatic opens of this breaker so far (`None`: the row predates the count).
    pub(crate) times_opened: Option<u64>,
}

/// A transition as the store keeps it: the history every replica shows, across restarts.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTransition {
    /// Time-ordered, unique across the fleet.
    pub id: String,
    /// Which breaker.
    pub key: BreakerKey,
    /// The state before (`BreakerState::detail_str`).
    pub from: String,
    /// The state after.
    pub to: String,
    /// Why (`TransitionReason::as_str`).
    pub reason: String,
    /// When, in epoch milliseconds.
    pub at_ms: i64,
    /// Failures / calls of the deciding population.
    pub failure_rate: f64,
    /// Slow successes / calls of the same population.
    pub slow_rate: f64,
    /// Calls in that population.
    pub calls: u32,
    /// The replica whose breaker made the transition.
    pub replica: String,
}

/// One write to the store, waiting for its turn.
#[derive(Debug)]
pub(crate) enum Write {
    /// A transition for the history.
    Event(StoredTransition),
    /// An operator's force (or its end), asked for at this epoch millisecond: written only
    /// over an older force (`sql::FORCE`), since it may wait here past a later one elsewhere.
    Force(BreakerKey, ForceMode, i64),
    /// The automatic state the others follow, decided at this epoch millisecond (for an open,
    /// the open's time: the fleet's outage may begin there).
    Auto(BreakerKey, AutoState, i64),
    /// The end of this replica's half-open lease.
    DropLease(BreakerKey),
}

/// A notification's payload: the row just written, so a listener applies it without a read.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Payload {
    pub(crate) tool: String,
    pub(crate) provider: String,
    pub(crate) forced: Option<String>,
    pub(crate) auto_state: String,
    pub(crate) open_until: Option<i64>,
    pub(crate) ramp: bool,
    pub(crate) version: i64,
    pub(crate) replica: String,
    /// When the fleet's outage began, while open and known (`sql::OPENS`). A replica of an older
    /// version neither sends nor reads it, nor the count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) opened_at: Option<i64>,
    /// The fleet's automatic opens of the breaker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) times_opened: Option<i64>,
}

/// What a notification says: a row was written, or a call of a replica failed in a run.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Note {
    /// A breaker's shared row, as just written.
    Row(Payload),
    /// A call of `replica` to the breaker's provider failed while its breaker was closed.
    Failure {
        tool: String,
        provider: String,
        replica: String,
        /// The wait in milliseconds the failure named, when it was a 429 that named one. A
        /// replica of an older version sends none (its failure counts as any other) and
        /// ignores it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pause_ms: Option<u64>,
    },
}

/// The stored name of a force.
pub(crate) fn force_name(mode: ForceMode) -> Option<&'static str> {
    match mode {
        ForceMode::Open => Some("open"),
        ForceMode::Closed => Some("closed"),
        ForceMode::Auto => None,
    }
}

impl Payload {
    /// The typed record, or `None` for a row this version does not understand.
    pub(crate) fn into_record(self) -> Option<SharedBreaker> {
        let forced = match self.forced.as_deref() {
            None => None,
            Some("open") => Some(ForceMode::Open),
            Some("closed") => Some(ForceMode::Closed),
            Some(_) => return None,
        };
        let auto = match (self.auto_state.as_str(), self.open_until) {
            ("closed", _) => AutoState::Closed,
            ("open", Some(until_ms)) => AutoState::Open {
                until_ms,
                ramp: self.ramp,
            },
            ("recovered", _) => AutoState::Recovered { ramp: self.ramp },
            _ => return None,
        };
        Some(SharedBreaker {
            key: BreakerKey::new(self.tool, self.provider),
            forced,
            version: self.version,
            replica: self.replica,
            opened_at_ms: self
                .opened_at
                .filter(|_| matches!(auto, AutoState::Open { .. })),
            times_opened: self.times_opened.map(|n| u64::try_from(n).unwrap_or(0)),
            auto,
        })
    }
}

/// `at` as epoch milliseconds.
pub(crate) fn epoch_ms_of(at: Instant) -> i64 {
    let now = clock::now();
    let now_ms = clock::epoch_ms();
    if at >= now {
        now_ms.saturating_add(millis(at - now))
    } else {
        now_ms.saturating_sub(millis(now - at))
    }
}

/// The local instant of epoch millisecond `ms` (never before the process's clock can say).
pub(crate) fn instant_of(ms: i64) -> Instant {
    let now = clock::now();
    let offset = ms.saturating_sub(clock::epoch_ms());
    let span = Duration::from_millis(offset.unsigned_abs());
    if offset >= 0 {
        now + span
    } else {
        now.checked_sub(span).unwrap_or(now)
    }
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::{Note, Payload};

    /// A row's note as a replica of the version before the fleet's opens wrote and read it.
    #[derive(Debug, Deserialize)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    enum OlderRow {
        Row { tool: String, version: i64 },
    }

    #[test]
    fn a_rows_opens_are_read_by_either_version_and_missing_from_an_older_ones() {
        let row = |opened_at, times_opened| {
            Note::Row(Payload {
                tool: "search_flights".into(),
                provider: "duffel".into(),
                forced: None,
                auto_state: "open".into(),
                open_until: Some(2_000),
                ramp: true,
                version: 3,
                replica: "a".into(),
                opened_at,
                times_opened,
            })
        };
        let counted = serde_json::to_string(&row(Some(1_000), Some(2))).unwrap_or_default();
        let older: Result<OlderRow, _> = serde_json::from_str(&counted);
        assert!(
            matches!(&older, Ok(OlderRow::Row { tool, version: 3 }) if tool == "search_flights"),
            "an older replica ignores the opens: {older:?}"
        );
        let plain = serde_json::to_string(&row(None, None)).unwrap_or_default();
        assert!(
            !plain.contains("opened_at") && !plain.contains("times_opened"),
            "{plain}"
        );
        let read = |text: &str| match serde_json::from_str::<Note>(text) {
            Ok(Note::Row(p)) => p.into_record().map(|r| (r.times_opened, r.opened_at_ms)),
            _ => None,
        };
        assert_eq!(read(&counted), Some((Some(2), Some(1_000))));
        assert_eq!(read(&plain), Some((None, None)), "an older replica's row");
    }

    /// A failure's note as a replica of the version before `pause_ms` wrote and read it.
    #[derive(Debug, Deserialize)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    enum OlderNote {
        Failure {
            tool: String,
            provider: String,
            replica: String,
        },
    }

    fn failure(pause_ms: Option<u64>) -> Note {
        Note::Failure {
            tool: "search_flights".into(),
            provider: "duffel".into(),
            replica: "a".into(),
            pause_ms,
        }
    }

    #[test]
    fn a_failures_wait_is_read_by_either_version_and_missing_from_an_older_ones() {
        let plain = serde_json::to_string(&failure(None)).unwrap_or_default();
        assert_eq!(
            plain,
            r#"{"kind":"failure","tool":"search_flights","provider":"duffel","replica":"a"}"#,
            "a failure without a wait is written as before"
        );
        let paused = serde_json::to_string(&failure(Some(10_000))).unwrap_or_default();
        let older: Result<OlderNote, _> = serde_json::from_str(&paused);
        let Ok(OlderNote::Failure {
            tool,
            provider,
            replica,
        }) = older
        else {
            panic!("an older replica ignores the wait: {older:?}");
        };
        assert_eq!(
            [tool.as_str(), provider.as_str(), replica.as_str()],
            ["search_flights", "duffel", "a"]
        );
        let read: Result<Note, _> = serde_json::from_str(&plain);
        assert!(
            matches!(read, Ok(Note::Failure { pause_ms: None, .. })),
            "{read:?}"
        );
        let read: Result<Note, _> = serde_json::from_str(&paused);
        assert!(
            matches!(
                read,
                Ok(Note::Failure {
                    pause_ms: Some(10_000),
                    ..
                })
            ),
            "{read:?}"
        );
    }
}
