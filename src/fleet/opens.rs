//! The fleet's opens of each breaker, as its shared row last said: how many times the fleet's
//! replicas opened it, and since when its outage in course has lasted.
//!
//! A replica's own breaker counts what that replica saw since it started: the opens it decided
//! and the ones it followed. Behind a balancer, two replicas asked the same question would give
//! two answers, and one started during a long outage would time it from its own start. The
//! shared row keeps both figures for the fleet (`sql::OPENS`); every row this replica reads,
//! hears of or writes is noted here, so the operations API and the alert rules ask this instead
//! of a replica's memory. Noted before the row is followed: the transition a followed open
//! makes reaches the alert rules later, and finds its outage's start here.

use std::collections::HashMap;
use std::sync::Mutex;

use super::record::{AutoState, SharedBreaker};
use crate::breaker::BreakerKey;

/// The figures of one breaker's row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RowOpens {
    /// The fleet's automatic opens (`None`: the row predates the count).
    pub(crate) times_opened: Option<u64>,
    /// While the row is open, when its outage began (epoch ms), when known.
    pub(crate) opened_at_ms: Option<i64>,
    /// While the row is open, its open-until (epoch ms).
    pub(crate) open_until_ms: Option<i64>,
}

/// Every breaker's [`RowOpens`] with the row version that said it, by key. A short
/// `std::sync::Mutex`: held for a copy.
#[derive(Debug, Default)]
pub(crate) struct Opens {
    rows: Mutex<HashMap<BreakerKey, (i64, RowOpens)>>,
}

impl Opens {
    /// Notes what `row` says, unless a newer version of it was noted already (a notification
    /// may arrive after the read that saw the next write).
    pub(crate) fn note(&self, row: &SharedBreaker) {
        let figures = RowOpens {
            times_opened: row.times_opened,
            opened_at_ms: row.opened_at_ms,
            open_until_ms: match row.auto {
                AutoState::Open { until_ms, .. } => Some(until_ms),
                _ => None,
            },
        };
        let mut rows = self.rows.lock().unwrap_or_else(|e| e.into_inner());
        let noted = rows
            .entry(row.key.clone())
            .or_insert((row.version, figures));
        if row.version >= noted.0 {
            *noted = (row.version, figures);
        }
    }

    /// What the row of `key` said last; `None` for a breaker with no row (never opened nor
    /// forced in the fleet).
    pub(crate) fn of(&self, key: &BreakerKey) -> Option<RowOpens> {
        let rows = self.rows.lock().unwrap_or_else(|e| e.into_inner());
        rows.get(key).map(|(_, figures)| *figures)
    }
}
