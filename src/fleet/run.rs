//! The task that keeps this replica in step with the fleet, beside the server and off the call
//! path: it publishes this replica's own transitions, follows the others' (notified at once,
//! and read again every second in case a notification was missed), holds the half-open probe
//! lease while this replica probes (and lets it lapse when it has no callers, so a replica that
//! has takes it), notices when the store stops answering, and trims the stored history to its
//! newest transitions once a minute.
//!
//! Calls never wait for it: a breaker's transition is a broadcast event this task receives
//! later, so a healthy call's path makes no database round trip, and a store that is away
//! delays nothing but the fleet's view. What could not be written waits here, in order, and is
//! written when the store answers again.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use super::handle::Fleet;
use super::record::{AutoState, Note, Payload, StoredTransition, Write, epoch_ms_of, instant_of};
use super::sql::{KEEP_EVENTS, TRIM_BATCH};
use crate::breaker::{
    BreakerKey, BreakerRegistry, BreakerState, ForceMode, Origin, RunFailure, TransitionEvent,
    TransitionReason,
};
use crate::clock;
use crate::store::{Db, StoreError};

/// The notification channel of shared breaker rows.
const TOPIC: &str = "faregate_breakers";

/// How often leases are taken or renewed, and whether the store is back is asked.
const TICK: Duration = Duration::from_millis(250);

/// Every this many ticks, the shared rows and the history are read again.
const CATCH_UP_TICKS: u64 = 4;

/// How long a probe lease lasts unless renewed; the holder renews it every tick while it probes
/// (a probe in flight, or a caller asking within this long), so a replica that dies or has no
/// callers hands the probes to another one within this.
const LEASE: Duration = Duration::from_secs(3);

/// How often the stored history is trimmed to its newest transitions ([`KEEP_EVENTS`]).
pub(super) const TRIM_EVERY: Duration = Duration::from_secs(60);

/// The most writes that wait for a store that is away; the oldest are dropped beyond it.
const MAX_PENDING: usize = 4096;

/// What the listener hands the task.
#[derive(Debug)]
enum Heard {
    /// A row another replica wrote.
    Row(String),
    /// The listener (re)connected, and may have missed notifications: read everything again.
    Reconnected,
}

/// The task's own state.
#[derive(Debug, Default)]
struct Pending {
    writes: VecDeque<Write>,
    /// Breakers whose probe lease this replica holds.
    leases: HashSet<BreakerKey>,
}

impl Pending {
    /// The breakers with a force of this replica still to be written.
    fn forcing(&self) -> HashSet<BreakerKey> {
        let forces = self.writes.iter().filter_map(|w| match w {
            Write::Force(key, _, _) => Some(key.clone()),
            _ => None,
        });
        forces.collect()
    }
}

impl Fleet {
    /// Keeps this replica in step with the fleet until `stop`.
    pub async fn run(self: Arc<Self>, breakers: &BreakerRegistry, stop: CancellationToken) {
        let mut events = breakers.subscribe();
        let (heard_tx, mut heard) = mpsc::channel(256);
        let listener = self
            .shared
            .then(|| tokio::spawn(listen(self.store.db.clone(), heard_tx, stop.clone())));
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut pending = Pending::default();
        let mut ticks = 0u64;
        let mut trimmed_at: Option<tokio::time::Instant> = None;
        // In a PostgreSQL fleet every breaker tells of its failures in a run, for the others, and
        // probes only under the fleet's lease while the store answers; asked again on every
        // catch-up, so a breaker a configuration reload added joins within seconds.
        let (failures_tx, mut failures) = mpsc::unbounded_channel();
        let share_failures = |breakers: &BreakerRegistry| {
            if self.shared {
                let connected = self.is_connected();
                for breaker in breakers.all() {
                    breaker.share_failures(failures_tx.clone());
                    breaker.require_probe_lease(connected);
                }
            }
        };
        share_failures(breakers);
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                event = events.recv() => match event {
                    Ok(e) => {
                        self.publish(&e, breakers, &mut pending);
                        self.flush(breakers, &mut pending).await;
                    }
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(missed = n, "fleet: breaker transitions were not published");
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                },
                Some(failure) = failures.recv() => self.tell_failure(&failure).await,
                Some(h) = heard.recv() => match h {
                    Heard::Row(payload) => self.heard(&payload, breakers, &pending),
                    Heard::Reconnected => self.refresh(breakers, &mut pending).await,
                },
                _ = tick.tick() => {
                    ticks += 1;
                    if !self.is_connected() || ticks.is_multiple_of(CATCH_UP_TICKS) {
                        self.refresh(breakers, &mut pending).await;
                        share_failures(breakers);
                    }
                    if self.is_connected() && self.shared {
                        self.leases(breakers, &mut pending).await;
                    }
                    let now = clock::now();
                    if self.is_connected()
                        && trimmed_at.is_none_or(|at| now - at >= TRIM_EVERY)
                    {
                        trimmed_at = Some(now);
                        self.trim_history().await;
                    }
                }
            }
        }
        if let Some(listener) = listener {
            listener.abort();
        }
        // The last transitions (a force just before a shutdown) still reach the store.
        while let Ok(e) = events.try_recv() {
            self.publish(&e, breakers, &mut pending);
        }
        self.flush(breakers, &mut pending).await;
        for key in pending.leases.drain() {
            let _ = self.store.drop_lease(&key, &self.replica).await;
        }
    }

    /// Queues what a local transition changes in the store.
    fn publish(&self, e: &TransitionEvent, breakers: &BreakerRegistry, pending: &mut Pending) {
        if e.origin != Origin::Local {
            return;
        }
        let stored = StoredTransition {
            id: uuid::Uuid::now_v7().to_string(),
            key: e.key.clone(),
            from: e.from.detail_str().to_string(),
            to: e.to.detail_str().to_string(),
            reason: e.reason.as_str().to_string(),
            at_ms: epoch_ms_of(e.at),
            failure_rate: e.failure_rate,
            slow_rate: e.slow_rate,
            calls: e.calls,
            replica: self.replica.clone(),
        };
        self.remember(vec![stored.clone()]);
        pending.writes.push_back(Write::Event(stored));
        let key = e.key.clone();
        match (e.from, e.to, e.reason) {
            (_, _, TransitionReason::Forced(mode)) => {
                let asked_at = epoch_ms_of(e.at);
                pending
                    .writes
                    .push_back(Write::Force(key.clone(), mode, asked_at));
            }
            (_, BreakerState::Open, _) => {
                let snapshot = breakers.get(&key).map(|b| b.snapshot(clock::now()));
                if let Some((until, quota_pause)) =
                    snapshot.and_then(|s| Some((s.open_until?, s.quota_pause)))
                {
                    let auto = AutoState::Open {
                        until_ms: epoch_ms_of(until),
                        ramp: !quota_pause,
                    };
                    let at_ms = epoch_ms_of(e.at);
                    pending
                        .writes
                        .push_back(Write::Auto(key.clone(), auto, at_ms));
                }
            }
            (BreakerState::HalfOpen, to, TransitionReason::ProbesSucceeded) => {
                let ramp = to == BreakerState::Ramp;
                let auto = AutoState::Recovered { ramp };
                let at_ms = epoch_ms_of(e.at);
                pending
                    .writes
                    .push_back(Write::Auto(key.clone(), auto, at_ms));
            }
            _ => {}
        }
        // After the state it leads to, so no replica takes the lease of a period that ended.
        if e.from == BreakerState::HalfOpen && pending.leases.remove(&key) {
            pending.writes.push_back(Write::DropLease(key));
        }
        let excess = pending.writes.len().saturating_sub(MAX_PENDING);
        if excess > 0 {
            pending.writes.drain(..excess);
            tracing::warn!(
                dropped = excess,
                "fleet: the store is away too long; oldest writes dropped"
            );
        }
    }

    /// Writes what waits, in order, while the store answers.
    async fn flush(&self, breakers: &BreakerRegistry, pending: &mut Pending) {
        pending.writes.extend(self.take_held());
        if !self.is_connected() {
            return;
        }
        if let Err(e) = self.write_pending(breakers, pending).await {
            tracing::debug!(error = %e, "fleet: a write did not reach the store");
            self.set_connected(false, breakers);
            pending.leases.clear();
        }
    }

    /// Records an operator's force, asked for now, that changed nothing on this replica (its
    /// breaker was so already, so no transition tells the task): the store may still hold
    /// another (a force of another replica not followed yet), and `auto` must end it for the
    /// whole fleet and for the next start, as the operator was told.
    ///
    /// While the store is away (or when this write fails) the force is held and written with
    /// the task's other writes when it answers again, as a force that changed the breaker is;
    /// the error says that it was held.
    pub async fn record_force(
        &self,
        key: &BreakerKey,
        mode: ForceMode,
        breakers: &BreakerRegistry,
    ) -> Result<(), StoreError> {
        let write = Write::Force(key.clone(), mode, clock::epoch_ms());
        let failed = if self.is_connected() {
            match self.write(&write, breakers).await {
                Ok(()) => return Ok(()),
                Err(e) => e,
            }
        } else {
            StoreError("the store does not answer".to_string())
        };
        self.hold(write);
        Err(failed)
    }

    /// Writes what waits, in order, up to the first write the store does not take.
    async fn write_pending(
        &self,
        breakers: &BreakerRegistry,
        pending: &mut Pending,
    ) -> Result<(), StoreError> {
        while let Some(write) = pending.writes.front() {
            self.write(write, breakers).await?;
            pending.writes.pop_front();
        }
        Ok(())
    }

    pub(super) async fn write(
        &self,
        write: &Write,
        breakers: &BreakerRegistry,
    ) -> Result<(), StoreError> {
        let now_ms = clock::epoch_ms();
        let row = match write {
            Write::Event(t) => return self.store.record(t).await,
            Write::DropLease(key) => return self.store.drop_lease(key, &self.replica).await,
            Write::Force(key, mode, asked_at) => {
                let row = self
                    .store
                    .force(key, *mode, &self.replica, now_ms, *asked_at);
                match row.await? {
                    Some(row) => Some(row),
                    None => return self.adopt_newer_force(key, breakers).await,
                }
            }
            Write::Auto(key, auto, at_ms) => {
                let grace_ms = self.grace_ms();
                let row = self
                    .store
                    .set_auto(key, *auto, *at_ms, &self.replica, now_ms, grace_ms);
                let row = row.await?;
                if row.is_none() {
                    // A recovery refused: the row holds an open of another replica that this
                    // one has not followed yet; the next catch-up reads it.
                    self.forget(key);
                }
                row
            }
        };
        let Some(row) = row else {
            return Ok(());
        };
        let key = BreakerKey::new(row.tool.clone(), row.provider.clone());
        self.wrote(&key, row.version, breakers);
        // A row always serializes; the payload is a few hundred bytes.
        let payload = serde_json::to_string(&Note::Row(row.clone())).unwrap_or_default();
        let written = row.into_record();
        if let Some(written) = &written {
            // The fleet's count and outage, with this replica's write in them.
            self.opens.note(written);
        }
        if let (Write::Auto(_, asked, _), Some(written)) = (write, written)
            && (written.auto != *asked || written.forced.is_some())
        {
            // The store kept what another replica wrote: a later open-until, or an operator's
            // force (an automatic write never sets one) made while this replica was away. The
            // row is now this replica's, so no read will tell it: it follows the row here.
            self.follow_written(&written, breakers);
        }
        if self.shared {
            // The row is written already: a notification that does not go out is caught up by
            // the others' next read, so it is not retried.
            let notify = self.store.db.notify(TOPIC, &payload);
            match tokio::time::timeout(super::sql::DB_TIMEOUT, notify).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::debug!(error = %e, "fleet: a notification did not go out"),
                Err(_) => tracing::debug!("fleet: a notification did not go out in time"),
            }
        }
        Ok(())
    }

    /// Follows the force the store kept instead of this replica's older one (a later force of
    /// another replica, made while this one was away): the operator's latest word is the
    /// fleet's, so this replica gives up its own here and now rather than at the next read.
    async fn adopt_newer_force(
        &self,
        key: &BreakerKey,
        breakers: &BreakerRegistry,
    ) -> Result<(), StoreError> {
        let stored = self.store.one(key).await?.and_then(Payload::into_record);
        let Some(stored) = stored else {
            // Nothing this version can read: the next read decides.
            self.forget(key);
            return Ok(());
        };
        tracing::info!(
            breaker = %key,
            "fleet: a force made on this replica was older than one made since on the fleet; following the newer one"
        );
        self.follow_written(&stored, breakers);
        self.wrote(key, stored.version, breakers);
        Ok(())
    }

    /// Tells the others that a call of this replica failed in a run (a notification only:
    /// news that could not go out now is stale later, so it is not kept).
    async fn tell_failure(&self, failure: &RunFailure) {
        if !self.is_connected() {
            return;
        }
        let note = Note::Failure {
            tool: failure.key.tool.clone(),
            provider: failure.key.provider.clone(),
            replica: self.replica.clone(),
            pause_ms: failure
                .pause
                .map(|p| u64::try_from(p.as_millis()).unwrap_or(u64::MAX)),
        };
        let payload = serde_json::to_string(&note).unwrap_or_default();
        let notify = self.store.db.notify(TOPIC, &payload);
        if !matches!(
            tokio::time::timeout(super::sql::DB_TIMEOUT, notify).await,
            Ok(Ok(()))
        ) {
            tracing::debug!("fleet: a failure was not told to the others");
        }
    }

    /// Follows a notified row, or counts a peer's failure.
    fn heard(&self, payload: &str, breakers: &BreakerRegistry, pending: &Pending) {
        match serde_json::from_str::<Note>(payload) {
            Ok(Note::Row(row)) => match row.into_record() {
                Some(shared) => self.apply(&shared, breakers, &pending.forcing()),
                None => tracing::debug!("fleet: a row this version cannot read"),
            },
            Ok(Note::Failure {
                tool,
                provider,
                replica,
                pause_ms,
            }) => {
                if replica != self.replica
                    && let Some(breaker) = breakers.get(&BreakerKey::new(tool, provider))
                {
                    let pause = pause_ms.map(Duration::from_millis);
                    breaker.note_peer_failure(pause, clock::now());
                }
            }
            Err(_) => tracing::debug!("fleet: a notification this version cannot read"),
        }
    }

    /// Reads the shared state again; the store answering (or not) sets the connection state,
    /// and a store that answers again gets what waited, before it is read: read first, a
    /// peer's row would undo here a force this replica made while away, which every other
    /// replica then follows when it is written. What the store keeps instead of a write (a
    /// later open-until, an open that a recovery may not end) is followed from the write's
    /// answer or from the read after it.
    async fn refresh(&self, breakers: &BreakerRegistry, pending: &mut Pending) {
        pending.writes.extend(self.take_held());
        let rejoining = !self.is_connected();
        if rejoining && let Err(e) = self.write_pending(breakers, pending).await {
            tracing::debug!(error = %e, "fleet: the store did not answer");
            pending.leases.clear();
            return;
        }
        match self.catch_up(breakers, &pending.forcing()).await {
            Ok(()) => {
                self.set_connected(true, breakers);
                if !rejoining {
                    // New breakers (first seen since) need the lease too.
                    self.require_leases(breakers, self.shared);
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, "fleet: the store did not answer");
                self.set_connected(false, breakers);
                pending.leases.clear();
            }
        }
    }

    /// Deletes stored transitions beyond the newest [`KEEP_EVENTS`], one batch (a backlog goes
    /// over the next trims). A store that does not answer is asked again at the next trim.
    async fn trim_history(&self) {
        match self.store.trim_events(KEEP_EVENTS, TRIM_BATCH).await {
            Ok(0) => {}
            Ok(trimmed) => tracing::debug!(trimmed, "fleet: old breaker transitions deleted"),
            Err(e) => tracing::debug!(error = %e, "fleet: old breaker transitions not deleted"),
        }
    }

    /// Takes the probe lease of each breaker that waits for one, and renews the ones held
    /// while this replica probes; an idle one lapses (it is not dropped: this replica may still
    /// admit a probe until then).
    async fn leases(&self, breakers: &BreakerRegistry, pending: &mut Pending) {
        let now = clock::now();
        for breaker in breakers.all() {
            let key = breaker.key().clone();
            let renew = breaker.keeps_probe_lease(now, LEASE);
            if !renew && !breaker.wants_probe_lease(now) {
                continue;
            }
            let now_ms = clock::epoch_ms();
            let until_ms = now_ms + LEASE.as_millis() as i64;
            match self
                .store
                .take_lease(&key, &self.replica, until_ms, now_ms)
                .await
            {
                Ok(true) => {
                    breaker.grant_probe_lease(instant_of(until_ms), clock::now());
                    pending.leases.insert(key);
                }
                Ok(false) => {
                    pending.leases.remove(&key);
                    // Held by another replica: this one's callers do not wait for it.
                    breaker.probe_lease_elsewhere(clock::now() + 2 * TICK, clock::now());
                }
                Err(e) => {
                    tracing::debug!(error = %e, "fleet: the probe lease could not be taken");
                    self.set_connected(false, breakers);
                    pending.leases.clear();
                    return;
                }
            }
        }
    }
}

/// Listens for rows other replicas write, reconnecting after a lost connection (and saying so,
/// so that the task reads what it missed) until `stop`.
async fn listen(db: Db, heard: mpsc::Sender<Heard>, stop: CancellationToken) {
    loop {
        let connected = tokio::time::timeout(super::sql::DB_TIMEOUT, db.listen(TOPIC)).await;
        if let Ok(Ok(Some(mut listener))) = connected {
            if heard.send(Heard::Reconnected).await.is_err() {
                return;
            }
            loop {
                let next = tokio::select! {
                    _ = stop.cancelled() => return,
                    next = listener.next() => next,
                };
                let sent = match next {
                    Ok(Some(payload)) => heard.send(Heard::Row(payload)).await,
                    Ok(None) => heard.send(Heard::Reconnected).await,
                    Err(_) => break,
                };
                if sent.is_err() {
                    return;
                }
            }
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}
