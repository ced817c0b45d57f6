//! [`Fleet`]: this replica's membership in the fleet, shared by the task that keeps it in step
//! (`run.rs`) and the operations API (its status and the fleet's breaker history).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio::time::Instant;

use super::follow::follow;
use super::opens::Opens;
use super::record::{SharedBreaker, StoredTransition, Write, instant_of};
use super::sql::SharedStore;
use crate::breaker::{Breaker, BreakerKey, BreakerRegistry};
use crate::clock;
use crate::store::{Db, StoreError};

/// How many transitions of the whole fleet each replica keeps at hand for the API.
pub const RECENT_TRANSITIONS: usize = 256;

/// How long after its open ran out a breaker still counts as rejecting (half-open, between
/// probes that fail), unless [`Fleet::set_rejecting_grace`] says otherwise: the alert rules'
/// grace (`telemetry::AlertRules::half_open_grace`), which `app::attach_fleet` hands over, so
/// the fleet's outage and a replica's alert clock end alike.
pub const REJECTING_GRACE: Duration = Duration::from_secs(60);

/// A new name for a replica, `replica-<12 hex digits>` (random bits of a UUIDv7), unique across
/// replicas and restarts.
pub fn replica_name() -> String {
    format!(
        "replica-{}",
        &uuid::Uuid::now_v7().simple().to_string()[20..]
    )
}

/// This replica's part in the fleet. Built once at start ([`Fleet::open`]), driven by
/// [`Fleet::run`], read by the operations API.
#[derive(Debug)]
pub struct Fleet {
    /// The fleet's tables in the shared database.
    pub(super) store: SharedStore,
    /// This process's name in the fleet: in the history it writes and the leases it holds.
    pub(super) replica: String,
    /// PostgreSQL: the state is shared with other replicas (notifications, probe leases).
    /// SQLite: one node, whose forced states and history outlive a restart.
    pub(super) shared: bool,
    /// Whether the last statement reached the database.
    connected: AtomicBool,
    /// The fleet's latest transitions, oldest first, merged by id from the store and from this
    /// replica's own (published or waiting to be). A short `std::sync::Mutex`: held for a copy.
    recent: Mutex<Vec<StoredTransition>>,
    /// Per breaker, the version of the shared row this replica applied (or wrote) last, and
    /// the breaker it was applied to: a breaker a reload removed and added again is another
    /// one, which has followed nothing yet.
    applied: Mutex<HashMap<BreakerKey, Applied>>,
    /// Forces that changed nothing on this replica and could not be written when asked for
    /// (`record_force` while the store is away), waiting for the task to take them into its
    /// writes. A short `std::sync::Mutex`: held for a push or a take.
    held: Mutex<Vec<Write>>,
    /// The fleet's opens of each breaker, as its row last said.
    pub(super) opens: Opens,
    /// An open written within this many milliseconds of the row's open-until goes on with its
    /// outage ([`REJECTING_GRACE`]).
    grace_ms: AtomicI64,
}

/// The row version a breaker holds.
#[derive(Debug)]
struct Applied {
    version: i64,
    /// The breaker that holds it; dangling (or another) once a reload replaced it.
    breaker: Weak<Breaker>,
}

impl Applied {
    /// Whether `breaker` is the one that holds this version.
    fn held_by(&self, breaker: &Arc<Breaker>) -> bool {
        std::ptr::eq(self.breaker.as_ptr(), Arc::as_ptr(breaker))
    }
}

/// What `/readyz` and the metrics say about the fleet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetStatus {
    /// This replica's name.
    pub replica: String,
    /// Whether the state is shared with other replicas (a PostgreSQL store).
    pub shared: bool,
    /// Whether the store answered the last statement.
    pub connected: bool,
}

impl Fleet {
    /// Joins the fleet kept in `db` under a new name ([`replica_name`]): creates its tables
    /// when missing. Fails when the database does not answer: a replica may refuse to start
    /// without it.
    pub async fn open(db: Db) -> Result<Arc<Fleet>, StoreError> {
        Self::open_as(db, replica_name()).await
    }

    /// [`Fleet::open`] under the name `replica`: the one `faregate serve` also gives its traces
    /// (`service.instance.id`), so a trace names the replica that `/readyz` and the job API name.
    pub async fn open_as(db: Db, replica: String) -> Result<Arc<Fleet>, StoreError> {
        let shared = db.is_postgres();
        let store = SharedStore { db };
        store.migrate(clock::epoch_ms()).await?;
        Ok(Arc::new(Fleet {
            store,
            replica,
            shared,
            connected: AtomicBool::new(true),
            recent: Mutex::new(Vec::new()),
            applied: Mutex::new(HashMap::new()),
            held: Mutex::new(Vec::new()),
            opens: Opens::default(),
            grace_ms: AtomicI64::new(millis(REJECTING_GRACE)),
        }))
    }

    /// How long after its open ran out a breaker still counts as rejecting, so an open then
    /// goes on with the same outage ([`REJECTING_GRACE`] until said).
    pub fn set_rejecting_grace(&self, grace: Duration) {
        self.grace_ms.store(millis(grace), Ordering::Relaxed);
    }

    /// [`Fleet::set_rejecting_grace`]'s, in milliseconds.
    pub(super) fn grace_ms(&self) -> i64 {
        self.grace_ms.load(Ordering::Relaxed)
    }

    /// How many times the fleet's replicas opened `key`'s breaker, as its shared row last said
    /// (PostgreSQL; read again every second): the same answer on every replica, however long
    /// each has run; none for a breaker with no row. `None` on SQLite (one node, whose breaker
    /// counts its own opens) and for a row that predates the count (written only by replicas
    /// of an older version so far).
    pub fn times_opened(&self, key: &BreakerKey) -> Option<u64> {
        if !self.shared {
            return None;
        }
        match self.opens.of(key) {
            None => Some(0),
            Some(row) => row.times_opened,
        }
    }

    /// Since when the fleet's breaker `key` has been rejecting, as its shared row says: the
    /// first open of the outage in course, on whichever replica (or before this one's restart),
    /// kept across its failed probes. `None` unless the row says open and knows the time, and
    /// once its open ran out more than the rejecting grace ago: half-open with no failed probe
    /// since, the fleet's breaker rejects nothing, and its next failed probe starts a new
    /// outage (as a replica's alert clock counts it).
    pub fn rejecting_since(&self, key: &BreakerKey) -> Option<Instant> {
        let row = self.opens.of(key)?;
        let (since, until) = (row.opened_at_ms?, row.open_until_ms?);
        let rejecting = clock::epoch_ms() <= until.saturating_add(self.grace_ms());
        rejecting.then(|| instant_of(since))
    }

    /// Brings `breakers` to the shared state before the replica serves: forced states, opens
    /// still running, and the history.
    pub async fn restore(&self, breakers: &BreakerRegistry) -> Result<(), StoreError> {
        self.require_leases(breakers, self.shared);
        self.catch_up(breakers, &HashSet::new()).await
    }

    /// This replica's part in the fleet's configurations: PostgreSQL only (a SQLite store has
    /// one replica).
    pub fn replicas(&self) -> Option<super::Replicas> {
        super::Replicas::new(self.store.db.clone(), self.replica.clone())
    }

    /// This replica's standing in the fleet.
    pub fn status(&self) -> FleetStatus {
        FleetStatus {
            replica: self.replica.clone(),
            shared: self.shared,
            connected: self.connected.load(Ordering::Relaxed),
        }
    }

    /// The fleet's latest transitions of `key` (every breaker when `None`), newest first.
    pub fn recent_transitions(
        &self,
        key: Option<&BreakerKey>,
        limit: usize,
    ) -> Vec<StoredTransition> {
        self.recent()
            .iter()
            .rev()
            .filter(|t| key.is_none_or(|k| &t.key == k))
            .take(limit)
            .cloned()
            .collect()
    }

    /// Reads every shared row and the latest history, and follows what changed (but not the
    /// rows of the breakers in `forcing`: see [`Fleet::apply`]).
    pub(super) async fn catch_up(
        &self,
        breakers: &BreakerRegistry,
        forcing: &HashSet<BreakerKey>,
    ) -> Result<(), StoreError> {
        for shared in self.store.all().await? {
            self.apply(&shared, breakers, forcing);
        }
        let latest = self.store.latest(RECENT_TRANSITIONS as i64).await?;
        self.remember(latest);
        Ok(())
    }

    /// Follows `shared` unless its breaker holds it already (it applied it, or this replica
    /// wrote it from that breaker).
    ///
    /// A breaker in `forcing` has a force of this replica still to be written, which will
    /// replace the row whole: following the row first would undo the force on this replica
    /// only (the others follow it once written), so the row is left for a later read.
    ///
    /// A breaker a reload added (again) follows the row even when this replica wrote it: it is
    /// a new breaker, which a restart would have brought to the row too, so a force made
    /// before the reload holds after it, as the store says.
    pub(super) fn apply(
        &self,
        shared: &SharedBreaker,
        breakers: &BreakerRegistry,
        forcing: &HashSet<BreakerKey>,
    ) {
        // Noted first: the transition the row may cause finds its outage's start here.
        self.opens.note(shared);
        // A row of a breaker this replica does not serve is not applied: a reload that adds the
        // breaker has it follow the row at the next read.
        let Some(breaker) = breakers.get(&shared.key) else {
            return;
        };
        if forcing.contains(&shared.key) {
            return;
        }
        {
            let mut applied = self.applied.lock().unwrap_or_else(|e| e.into_inner());
            let held = applied
                .get(&shared.key)
                .filter(|a| a.held_by(&breaker))
                .map(|a| a.version);
            let version = held.map_or(shared.version, |v| v.max(shared.version));
            applied.insert(
                shared.key.clone(),
                Applied {
                    version,
                    breaker: Arc::downgrade(&breaker),
                },
            );
            if held.is_some_and(|v| shared.replica == self.replica || v >= shared.version) {
                return;
            }
        }
        follow(&breaker, shared, clock::now());
    }

    /// Follows a row this replica wrote, as the store kept it (another replica's later
    /// open-until rather than this replica's).
    pub(super) fn follow_written(&self, written: &SharedBreaker, breakers: &BreakerRegistry) {
        self.opens.note(written);
        if let Some(breaker) = breakers.get(&written.key) {
            follow(&breaker, written, clock::now());
        }
    }

    /// Forgets which version of `key`'s row was applied, so the next read follows the row.
    pub(super) fn forget(&self, key: &BreakerKey) {
        let mut applied = self.applied.lock().unwrap_or_else(|e| e.into_inner());
        applied.remove(key);
    }

    /// Notes that this replica wrote version `version` of `key`'s row itself, from its breaker
    /// in `breakers`.
    pub(super) fn wrote(&self, key: &BreakerKey, version: i64, breakers: &BreakerRegistry) {
        let Some(breaker) = breakers.get(key) else {
            return;
        };
        let mut applied = self.applied.lock().unwrap_or_else(|e| e.into_inner());
        let version = applied
            .get(key)
            .filter(|a| a.held_by(&breaker))
            .map_or(version, |a| a.version.max(version));
        applied.insert(
            key.clone(),
            Applied {
                version,
                breaker: Arc::downgrade(&breaker),
            },
        );
    }

    /// Merges `transitions` into the history at hand (by id; the latest kept).
    pub(super) fn remember(&self, transitions: Vec<StoredTransition>) {
        let mut recent = self.recent();
        for t in transitions {
            if !recent.iter().any(|r| r.id == t.id) {
                recent.push(t);
            }
        }
        recent.sort_by(|a, b| (a.at_ms, &a.id).cmp(&(b.at_ms, &b.id)));
        let excess = recent.len().saturating_sub(RECENT_TRANSITIONS);
        recent.drain(..excess);
    }

    /// Records whether the store answered; says so once per change, and hands probing back to
    /// the local breakers while the fleet is away (or back to the lease when it returns).
    pub(super) fn set_connected(&self, connected: bool, breakers: &BreakerRegistry) {
        if self.connected.swap(connected, Ordering::Relaxed) == connected {
            return;
        }
        self.require_leases(breakers, connected && self.shared);
        if connected {
            tracing::info!(
                replica = %self.replica,
                "fleet: the store answers again; rejoined the shared breaker state"
            );
        } else {
            tracing::warn!(
                replica = %self.replica,
                "fleet: the store does not answer; serving with this replica's own breakers until it returns"
            );
        }
    }

    /// Keeps `write` for the task, which writes it with its own when the store answers.
    pub(super) fn hold(&self, write: Write) {
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(write);
    }

    /// The writes held for the task, oldest first.
    pub(super) fn take_held(&self) -> Vec<Write> {
        std::mem::take(&mut *self.held.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Whether the store answered the last statement (what [`Fleet::status`] says, without
    /// copying the name).
    pub fn is_connected(&self) -> bool {
        self.connected.load(Ordering::Relaxed)
    }

    /// Half-open probes of every breaker need the fleet's lease (`needed`) or not.
    pub(super) fn require_leases(&self, breakers: &BreakerRegistry, needed: bool) {
        for breaker in breakers.all() {
            breaker.require_probe_lease(needed);
        }
    }

    fn recent(&self) -> MutexGuard<'_, Vec<StoredTransition>> {
        // Poisoning needs a panic while copying; the list is still whole.
        self.recent.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
