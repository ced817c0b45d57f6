//! What a breaker takes from the rest of a fleet: another replica's open (with its open-until),
//! another replica's successful probes, and the lease that lets one replica at a time probe.
//!
//! The lease goes to a replica with callers: the first of a half-open period is taken at once
//! (so the first caller probes without a wait), but it is kept only while this replica probes
//! or has callers asking to, and taken again after it lapsed only when a caller asked for a
//! probe since. An idle replica (drained from its balancer) would otherwise hold the lease of a
//! half-open period that, with no probe, never ends, and keep the whole fleet refusing.
//!
//! The fleet room reads these from the shared store and calls in here; the machine stays pure.
//! A followed transition counts nothing of this replica's own traffic: the window, the run of
//! failures and the slow-call threshold are left as they are (a followed open clears the run
//! only, as any open does), so each replica keeps recording its own outcomes.

use std::time::Duration;

use tokio::time::Instant;

use super::{Caller, Machine, Phase, Ramp};
use crate::breaker::event::{Origin, TransitionReason};

/// The fleet's half-open lease as one breaker sees it.
#[derive(Debug, Default)]
pub(in crate::breaker) struct ProbeLease {
    /// Probes need the lease (a replica of a connected fleet); off for a single node.
    needed: bool,
    /// Until when this replica holds (or held) the lease of the current half-open period.
    held_until: Option<Instant>,
    /// When a caller of this replica last asked for a probe in the current half-open period.
    asked_at: Option<Instant>,
    /// Until when another replica is taken to hold the lease: a moment after the fleet last
    /// found it held when it tried to take it for this one (it tries again every tick while
    /// this replica wants it).
    elsewhere_until: Option<Instant>,
}

impl ProbeLease {
    /// Whether a probe may be admitted at `now`.
    pub(super) fn admits(&self, now: Instant) -> bool {
        !self.needed || self.held_until.is_some_and(|until| until > now)
    }

    /// A caller asked for a probe at `now`, admitted or not.
    pub(super) fn asked(&mut self, now: Instant) {
        self.asked_at = Some(now);
    }

    /// The half-open period ended: its lease with it.
    pub(super) fn end(&mut self) {
        self.held_until = None;
        self.asked_at = None;
        self.elsewhere_until = None;
    }

    /// Whether this replica should take the lease at `now`: it needs one and holds none, and
    /// either held none yet in this period (and did not find another replica holding the
    /// period's first, with no caller here since) or a caller asked for a probe since its last
    /// lapsed.
    fn wanted(&self, now: Instant) -> bool {
        self.needed
            && match self.held_until {
                None => self.elsewhere_until.is_none() || self.asked_at.is_some(),
                Some(until) if until > now => false,
                Some(until) => self.asked_at.is_some_and(|at| at >= until),
            }
    }

    /// Whether this replica holds the lease at `now`.
    fn held(&self, now: Instant) -> bool {
        self.needed && self.held_until.is_some_and(|until| until > now)
    }

    /// Whether the fleet is about to grant this replica the lease: it wants it, and no other
    /// replica was found holding it lately.
    fn coming(&self, now: Instant) -> bool {
        self.wanted(now) && self.elsewhere_until.is_none_or(|until| until <= now)
    }
}

impl Machine {
    /// Another replica opened until `until`: open until then too, unless already open as long
    /// or forced. `ramp` says whether the recovery from it goes through the ramp: not after the
    /// provider's rate-limit pause, whichever replica probes at its end.
    ///
    /// An open whose time has passed is half-open for the fleet: no replica's probes have
    /// succeeded yet, or the store would say recovered. A closed (or ramping) breaker that
    /// learns of it late (a replica that starts, or comes back to the store, after the open
    /// elapsed) goes half-open, so it probes before it serves and tells no one the tool is
    /// back; one already half-open keeps its probes.
    pub(in crate::breaker) fn follow_open(&mut self, until: Instant, ramp: bool, now: Instant) {
        let now = self.advance(now);
        if until <= now && !matches!(self.phase, Phase::Closed | Phase::Ramp(_)) {
            return;
        }
        match self.phase {
            Phase::ForcedOpen | Phase::ForcedClosed => return,
            Phase::Open { until: mine } if mine >= until => return,
            Phase::Open { .. } => {}
            // The next open of this replica's own backs off from this one.
            _ => self.reopens = self.reopens.saturating_add(1),
        }
        self.epoch += 1;
        self.run.end();
        self.quota_pause = !ramp;
        let reason = TransitionReason::Followed;
        let until = until.max(now);
        self.transition_as(now, Phase::Open { until }, reason, Origin::Fleet);
        // An elapsed open is half-open at once.
        self.advance(now);
    }

    /// Another replica's probes succeeded: leave open or half-open into the first ramp stage, or
    /// straight to closed when `ramp` is false (the pause was a rate limit, or there is no ramp).
    pub(in crate::breaker) fn follow_recovery(&mut self, ramp: bool, now: Instant) {
        let now = self.advance(now);
        if !matches!(self.phase, Phase::Open { .. } | Phase::HalfOpen(_)) {
            return;
        }
        let phase = match self.config.ramp.first().filter(|_| ramp) {
            Some(stage) => Phase::Ramp(Ramp {
                stage: 0,
                until: now + stage.duration,
                offered: 0,
                admitted: 0,
            }),
            None => {
                self.reopens = 0;
                Phase::Closed
            }
        };
        // Calls admitted before the recovery belong to the sick period, as after an open.
        self.epoch += 1;
        self.transition_as(now, phase, TransitionReason::Followed, Origin::Fleet);
        self.window.clear();
        self.run.end();
    }

    /// Another replica's call failed: it joins this replica's run of failures (a success of
    /// this replica's own ends the run), so a fleet opens on about `consecutive_failures` of
    /// its failures, not that many per replica. `pause` is the wait it named when it was a
    /// 429 that named one, so a fleet's run of such 429s opens as the provider's rate-limit
    /// pause, as one replica's does. The open it may cause is this replica's own.
    pub(in crate::breaker) fn note_peer_failure(&mut self, pause: Option<Duration>, now: Instant) {
        let now = self.advance(now);
        if !matches!(self.phase, Phase::Closed) {
            return;
        }
        self.run.fail(pause);
        self.open_on_run(now);
    }

    /// Whether a failure just recorded is part of a run the fleet should hear of: closed, and
    /// the run not ended by an open.
    pub(in crate::breaker) fn in_failure_run(&self) -> bool {
        matches!(self.phase, Phase::Closed) && self.run.failures() > 0
    }

    /// Whether half-open probes need the fleet's lease from now on.
    pub(in crate::breaker) fn require_probe_lease(&mut self, needed: bool) {
        self.lease.needed = needed;
    }

    /// Whether this replica is half-open, needs the lease for its probes and does not hold it:
    /// the first lease of a half-open period, or one for a caller that asked since the last
    /// lapsed.
    pub(in crate::breaker) fn wants_probe_lease(&mut self, now: Instant) -> bool {
        let now = self.advance(now);
        matches!(self.phase, Phase::HalfOpen(_)) && self.lease.wanted(now)
    }

    /// Whether this replica holds the lease of its current half-open period.
    pub(in crate::breaker) fn holds_probe_lease(&mut self, now: Instant) -> bool {
        let now = self.advance(now);
        matches!(self.phase, Phase::HalfOpen(_)) && self.lease.held(now)
    }

    /// Whether this replica holds the lease and should renew it: a probe of its own is in
    /// flight, or a caller asked for one within `idle`. Otherwise the lease lapses, and a
    /// replica with callers takes it.
    pub(in crate::breaker) fn keeps_probe_lease(&mut self, now: Instant, idle: Duration) -> bool {
        let now = self.advance(now);
        let Phase::HalfOpen(probes) = &self.phase else {
            return false;
        };
        let asked = self.lease.asked_at.is_some_and(|at| at + idle > now);
        self.lease.held(now) && (probes.in_flight() || asked)
    }

    /// The fleet granted (or renewed) this replica the lease until `until`; ignored unless
    /// half-open, since a lease covers one half-open period.
    pub(in crate::breaker) fn grant_probe_lease(&mut self, until: Instant, now: Instant) {
        self.advance(now);
        if matches!(self.phase, Phase::HalfOpen(_)) {
            self.lease.held_until = Some(until);
            self.lease.elsewhere_until = None;
        }
    }

    /// The fleet found another replica holding the lease, for up to `until`: a caller here
    /// does not wait for it.
    pub(in crate::breaker) fn probe_lease_elsewhere(&mut self, until: Instant, now: Instant) {
        self.advance(now);
        if matches!(self.phase, Phase::HalfOpen(_)) {
            self.lease.elsewhere_until = Some(until);
        }
    }

    /// Whether a probe `caller` was just refused would be admitted once the fleet grants this
    /// replica the lease it is about to take (no other replica holds it): half-open, a free
    /// probe slot, and not the background jobs' turn that an interactive caller leaves them.
    /// The caller may wait a moment for it rather than be told the provider is not answering
    /// when nobody asked it (the lease is taken on the fleet's next tick).
    pub(in crate::breaker) fn awaits_probe_lease(&mut self, now: Instant, caller: Caller) -> bool {
        let now = self.advance(now);
        let Phase::HalfOpen(probes) = &self.phase else {
            return false;
        };
        let jobs_turn = matches!(
            caller,
            Caller::Interactive {
                background_due: true
            }
        ) && !probes.given_back
            && now < self.since + self.config.probe_interval;
        !jobs_turn && !probes.in_flight() && !self.lease.held(now) && self.lease.coming(now)
    }
}
