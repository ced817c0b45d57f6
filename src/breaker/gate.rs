//! The gate: the thread-safe face of one breaker ([`Breaker`]), the [`Permit`] an admitted call
//! carries, and the [`Rejected`] answer for the others.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::Poll;
use std::time::Duration;

use tokio::sync::{Notify, broadcast, mpsc};
use tokio::time::Instant;

use super::state::{Machine, Ticket};
use super::{
    BreakerConfig, BreakerKey, BreakerSnapshot, BreakerState, Caller, ForceMode, Origin, Outcome,
    PermitKind, Rejected, RunFailure, TransitionEvent,
};

/// One key's breaker. Share it as `Arc<Breaker>`; every method takes `now` so that tests can run on
/// a paused clock and the breaker itself never reads time (except tokio's clock when it is made
/// and when a permit is dropped).
#[derive(Debug)]
pub struct Breaker {
    /// Cached outside the lock so that [`Breaker::key`] is free.
    key: BreakerKey,
    /// The state machine. A `std::sync::Mutex`, not a tokio one: every critical section is a few
    /// arithmetic steps with no `.await` (nothing here is async), so a blocking lock held for tens of
    /// nanoseconds is both correct and several times cheaper than an async mutex. Atomics alone
    /// would not do: half-open and ramp admission must update several fields together.
    machine: Mutex<Machine>,
    /// In a fleet: where this breaker tells of each failure in a run, so the other replicas
    /// count it too. A non-blocking send, on failures only; never set on a single node.
    failures: OnceLock<mpsc::UnboundedSender<RunFailure>>,
    /// Told when the fleet grants this replica the probe lease.
    lease_granted: Notify,
}

/// A grant of the probe lease to wait for ([`Breaker::probe_lease_coming`]).
#[derive(Debug)]
pub struct LeaseGrant<'a>(Pin<Box<tokio::sync::futures::Notified<'a>>>);

impl Future for LeaseGrant<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

/// Permission for one upstream attempt. Record its outcome with [`Permit::record`].
///
/// A permit dropped unrecorded records [`Outcome::Ignored`]: its call was cancelled (the caller
/// went away, a batch was dropped) or panicked, and neither says anything about the provider. A
/// load generator closing its connections must not trip a healthy provider's breaker. The
/// ignored outcome also hands a half-open probe's slot back, so a cancelled call never leaks
/// one; a probe that hangs without being dropped is caught by `probe_timeout`.
#[must_use = "a dropped permit records nothing about the provider; record the call's outcome"]
#[derive(Debug)]
pub struct Permit {
    /// The breaker that issued it.
    breaker: Arc<Breaker>,
    /// What the breaker needs to match the outcome to the period that admitted the call.
    ticket: Ticket,
    /// Set by `record` so that `Drop` does nothing more.
    recorded: bool,
}

// === impl Breaker ===

impl Breaker {
    /// A closed breaker for `key`, reporting transitions on `events`. The config was validated
    /// when it was built ([`BreakerConfig::builder`]).
    pub fn new(
        key: BreakerKey,
        config: BreakerConfig,
        events: broadcast::Sender<TransitionEvent>,
    ) -> Arc<Self> {
        let machine = Machine::new(key.clone(), config, events, Instant::now());
        Arc::new(Self {
            key,
            machine: Mutex::new(machine),
            failures: OnceLock::new(),
            lease_granted: Notify::new(),
        })
    }

    /// Admits one call or says why not. The caller may take a half-open probe (as a background
    /// job may); [`Breaker::try_acquire_as`] says who is asking.
    pub fn try_acquire(self: &Arc<Self>, now: Instant) -> Result<Permit, Rejected> {
        self.try_acquire_as(now, Caller::Background)
    }

    /// Admits one call of `caller` or says why not.
    pub fn try_acquire_as(
        self: &Arc<Self>,
        now: Instant,
        caller: Caller,
    ) -> Result<Permit, Rejected> {
        let ticket = self.lock().acquire(now, caller)?;
        Ok(Permit {
            breaker: Arc::clone(self),
            ticket,
            recorded: false,
        })
    }

    /// How many background calls the breaker would admit now, one after another: `None` when
    /// it admits calls as they come (closed, ramping, forced closed), `Some(0)` while it
    /// rejects everything (open, forced open, or half-open with no probe due), else the
    /// half-open probes that may start now. The dispatcher claims no more jobs than that.
    pub fn background_room(&self, now: Instant) -> Option<u32> {
        self.lock().background_room(now)
    }

    /// The state at `now`. Timers are fired first, so an open breaker whose time is up reports
    /// half-open even if nothing called [`Breaker::tick`].
    pub fn state(&self, now: Instant) -> BreakerState {
        self.lock().state(now)
    }

    /// How much longer the breaker stays open, while it is automatically open (not forced).
    pub fn remaining_open(&self, now: Instant) -> Option<Duration> {
        self.lock().remaining_open(now)
    }

    /// Whether the provider's latest calls failed (a run of failures in a row, not yet ended by
    /// a success, an open or a recovery): a closed breaker that has seen its provider time out
    /// or fail since its last answer.
    pub fn in_failing_run(&self) -> bool {
        self.lock().in_failing_run()
    }

    /// Forces the breaker open or closed, or hands it back to the automatic policy; false when
    /// it was so already (no transition, so nothing for the fleet to publish).
    pub fn force(&self, mode: ForceMode, now: Instant) -> bool {
        self.lock().force(mode, now, Origin::Local)
    }

    /// Applies a force another replica of the fleet was asked for (its event says so, and is
    /// not published again).
    pub fn force_followed(&self, mode: ForceMode, now: Instant) {
        self.lock().force(mode, now, Origin::Fleet);
    }

    /// Another replica opened this breaker until `until`: follow it, unless forced or already
    /// open as long. Nothing is counted as a failure of this replica's calls. Its recovery goes
    /// through the ramp when `ramp` (not after the provider's rate-limit pause).
    pub fn follow_open(&self, until: Instant, ramp: bool, now: Instant) {
        self.lock().follow_open(until, ramp, now);
    }

    /// Another replica's probes succeeded: an open or half-open breaker recovers too, into the
    /// ramp (`ramp`) or straight to closed.
    pub fn follow_recovery(&self, ramp: bool, now: Instant) {
        self.lock().follow_recovery(ramp, now);
    }

    /// Tells `failures` of every failure of a run from now on (once; later calls are ignored).
    pub fn share_failures(&self, failures: mpsc::UnboundedSender<RunFailure>) {
        let _ = self.failures.set(failures);
    }

    /// Another replica's call failed: it joins this breaker's run of failures. `pause` is the
    /// wait it named when it was a 429 that named one ([`RunFailure::pause`]).
    pub fn note_peer_failure(&self, pause: Option<Duration>, now: Instant) {
        self.lock().note_peer_failure(pause, now);
    }

    /// Whether half-open probes need the fleet's lease ([`Breaker::grant_probe_lease`]): on in a
    /// connected fleet, off for a single node or while the fleet's database is away.
    pub fn require_probe_lease(&self, needed: bool) {
        self.lock().require_probe_lease(needed);
    }

    /// Whether this breaker is half-open and waits for the fleet's probe lease.
    pub fn wants_probe_lease(&self, now: Instant) -> bool {
        self.lock().wants_probe_lease(now)
    }

    /// Whether this breaker holds the probe lease of its current half-open period.
    pub fn holds_probe_lease(&self, now: Instant) -> bool {
        self.lock().holds_probe_lease(now)
    }

    /// Whether this breaker holds the probe lease and should renew it: a probe is in flight,
    /// or a caller asked for one within `idle`.
    pub fn keeps_probe_lease(&self, now: Instant, idle: Duration) -> bool {
        self.lock().keeps_probe_lease(now, idle)
    }

    /// The fleet granted this replica the probes of the current half-open period until `until`;
    /// callers waiting for it ([`Breaker::probe_lease_coming`]) try again.
    pub fn grant_probe_lease(&self, until: Instant, now: Instant) {
        self.lock().grant_probe_lease(until, now);
        self.lease_granted.notify_waiters();
    }

    /// The fleet found another replica holding the probe lease, for up to `until`.
    pub fn probe_lease_elsewhere(&self, until: Instant, now: Instant) {
        self.lock().probe_lease_elsewhere(until, now);
    }

    /// For a probe `caller` was just refused: when the fleet is about to grant this replica
    /// the lease that would admit it, the grant to wait for (the caller bounds the wait); else
    /// `None`, and the refusal stands.
    pub fn probe_lease_coming(&self, now: Instant, caller: Caller) -> Option<LeaseGrant<'_>> {
        let mut granted = Box::pin(self.lease_granted.notified());
        // Listening before the state is read: a grant in between is not missed.
        granted.as_mut().enable();
        self.lock()
            .awaits_probe_lease(now, caller)
            .then_some(LeaseGrant(granted))
    }

    /// Takes `config` as this breaker's policy from now on (a configuration reload), keeping
    /// its state, history and timers; see the policy's rules for what starts afresh.
    pub fn reconfigure(&self, config: BreakerConfig, now: Instant) {
        self.lock().reconfigure(config, now);
    }

    /// A consistent view of the breaker at `now`.
    pub fn snapshot(&self, now: Instant) -> BreakerSnapshot {
        self.lock().snapshot(now)
    }

    /// Fires the timers due by `now` (open → half-open, ramp stages, hung probes), so that their
    /// events go out even when no traffic arrives. Cheap when nothing is due.
    pub fn tick(&self, now: Instant) {
        self.lock().advance(now);
    }

    /// The breaker's key.
    pub fn key(&self) -> &BreakerKey {
        &self.key
    }

    fn lock(&self) -> MutexGuard<'_, Machine> {
        // A panic while the lock was held can only come from a bug in the machine's arithmetic;
        // its state is still a valid state, and a gateway that stops admitting calls for one
        // breaker over it would be worse, so poisoning is ignored.
        self.machine.lock().unwrap_or_else(|e| e.into_inner())
    }
}

// === impl Permit ===

impl Permit {
    /// Records the outcome of the call, measured at `now`.
    pub fn record(mut self, outcome: Outcome, now: Instant) {
        self.recorded = true;
        let shared = {
            let mut machine = self.breaker.lock();
            machine.record(self.ticket, outcome, now);
            matches!(outcome, Outcome::Failure(_)) && machine.in_failure_run()
        };
        if shared && let Some(failures) = self.breaker.failures.get() {
            // Fails only when the fleet's task has ended (shutdown): nobody to tell.
            let _ = failures.send(RunFailure {
                key: self.breaker.key.clone(),
                pause: outcome.rate_limit_pause(),
            });
        }
    }

    /// Whether this is a normal call, a half-open probe or a ramp call.
    pub fn kind(&self) -> PermitKind {
        self.ticket.kind
    }

    /// The breaker that issued this permit.
    pub fn breaker(&self) -> &Arc<Breaker> {
        &self.breaker
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if !self.recorded {
            self.breaker
                .lock()
                .record(self.ticket, Outcome::Ignored, Instant::now());
        }
    }
}
