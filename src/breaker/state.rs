//! The breaker's policy: a pure state machine over `(now, outcome)` inputs.
//!
//! [`Machine`] knows nothing about locks or `Arc`s; [`Breaker`](super::Breaker) wraps it in a
//! mutex. Every entry point first moves the clock forward and fires the timers that are due
//! ([`Machine::advance`]), so the state is right whenever anyone looks, with or without `tick`.
//!
//! Permits carry the *epoch* they were issued in. The epoch changes whenever the breaker opens or is
//! forced, so a result that arrives after such a change (a call admitted while closed that answers
//! after the breaker opened, a probe from an earlier half-open) never counts towards the new period.
//! Half-open → ramp → closed keep the epoch: those results are real traffic of the same recovery.

mod follow;
mod run;

use std::time::Duration;

use tokio::sync::broadcast;
use tokio::time::Instant;

use super::config::BreakerConfig;
use super::event::{BreakerState, ForceMode, Origin, TransitionEvent, TransitionReason};
use super::outcome::Outcome;
use super::probes::{Probes, Slot};
use super::reopen::Reopen;
use super::slow::SlowThreshold;
use super::snapshot::{BreakerHistory, BreakerSnapshot, ProbeStatus, RampStatus};
use super::window::{CallKind, Window};
use super::{BreakerKey, Caller, PermitKind, RejectReason, Rejected};
use crate::fingerprint::fnv1a_64;
use run::Run;

/// The most a ramp-rejected call is told to wait: the next call may well be admitted.
const RAMP_RETRY_AFTER: Duration = Duration::from_secs(1);

/// The fewest calls the ramp judges a failure rate on (or `min_calls`, if smaller).
const RAMP_MIN_CALLS: u32 = 5;

/// What the machine hands out for an admitted call; [`Permit`](super::Permit) wraps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ticket {
    /// Normal, ramp or probe call.
    pub(super) kind: PermitKind,
    /// The epoch the call was admitted in.
    pub(super) epoch: u64,
    /// The probe slot, for probes.
    pub(super) slot: u32,
}

/// The state of one breaker, behind its mutex.
#[derive(Debug)]
pub(super) struct Machine {
    /// Copied into every event.
    key: BreakerKey,
    /// Where transition events go. Sending never blocks (a full channel drops the oldest event for
    /// lagging receivers), so it is done under the lock, which keeps each breaker's events in order.
    events: broadcast::Sender<TransitionEvent>,
    /// The tuning.
    config: BreakerConfig,
    /// The current state and its per-state data.
    phase: Phase,
    /// When the current state began.
    since: Instant,
    /// Changes whenever the breaker opens or is forced; see the module docs.
    epoch: u64,
    /// The latest instant seen; earlier `now`s (racing callers) are treated as this one, so the
    /// machine's time never runs backwards.
    clock: Instant,
    /// Closed-state (and ramp) call counts.
    window: Window,
    /// Failures in a row since the last success, and whether they are a provider's rate limit.
    run: Run,
    /// The slow-call threshold.
    slow: SlowThreshold,
    /// Open-time policy.
    reopen: Reopen,
    /// Opens since the last full recovery; drives the backoff.
    reopens: u32,
    /// Counters for the dashboard.
    history: BreakerHistory,
    /// When the current open period began (meaningful while open).
    opened_at: Instant,
    /// The current open period is a provider's rate-limit pause (429s with `Retry-After`, see
    /// [`Machine::pause`]), not a sickness: its first successful probe closes the breaker,
    /// without the ramp. A quota that has reset serves at full rate at once, and more probes or
    /// a ramp would only waste the new window (the job system paces a backlog to the learned
    /// limit instead).
    quota_pause: bool,
    /// Whether half-open probes need the fleet's lease, and until when this replica holds it.
    lease: follow::ProbeLease,
}

/// The state plus the data that only exists in it.
#[derive(Debug)]
enum Phase {
    Closed,
    Open { until: Instant },
    HalfOpen(Probes),
    Ramp(Ramp),
    ForcedOpen,
    ForcedClosed,
}

/// Ramp bookkeeping for the current stage.
#[derive(Debug)]
struct Ramp {
    /// Index into `config.ramp`.
    stage: usize,
    /// When the stage ends.
    until: Instant,
    /// Calls that asked during this stage.
    offered: u64,
    /// Calls admitted during this stage.
    admitted: u64,
}

impl Phase {
    fn state(&self) -> BreakerState {
        match self {
            Phase::Closed => BreakerState::Closed,
            Phase::Open { .. } => BreakerState::Open,
            Phase::HalfOpen(_) => BreakerState::HalfOpen,
            Phase::Ramp(_) => BreakerState::Ramp,
            Phase::ForcedOpen => BreakerState::ForcedOpen,
            Phase::ForcedClosed => BreakerState::ForcedClosed,
        }
    }
}

/// Share in parts per million, so that ramp admission is exact integer arithmetic.
fn ppm(share: f64) -> u64 {
    (share.clamp(0.0, 1.0) * 1e6).round() as u64
}

// === impl Machine ===

impl Machine {
    pub(super) fn new(
        key: BreakerKey,
        config: BreakerConfig,
        events: broadcast::Sender<TransitionEvent>,
        now: Instant,
    ) -> Self {
        // Seeded from the key, so breakers of different tools do not re-probe in step and a
        // restart repeats the same sequence.
        let seed = config.seed ^ fnv1a_64(key.to_string().into_bytes());
        let reopen = Reopen::new(config.reopen_backoff(), config.jitter, seed);
        Self {
            key,
            events,
            phase: Phase::Closed,
            since: now,
            epoch: 0,
            clock: now,
            window: Window::new(config.window, now),
            run: Run::default(),
            slow: SlowThreshold::new(config.slow_call),
            reopen,
            reopens: 0,
            history: BreakerHistory::default(),
            opened_at: now,
            quota_pause: false,
            lease: follow::ProbeLease::default(),
            config,
        }
    }

    /// Moves the clock to `now` (never backwards) and fires every timer due by then.
    pub(super) fn advance(&mut self, now: Instant) -> Instant {
        if now > self.clock {
            self.clock = now;
        }
        let now = self.clock;
        loop {
            match &self.phase {
                Phase::Open { until } if *until <= now => {
                    let at = *until;
                    let probes = Probes::new(self.config.half_open_probes);
                    self.transition(at, Phase::HalfOpen(probes), TransitionReason::OpenElapsed);
                }
                Phase::HalfOpen(probes) => {
                    match probes.earliest_deadline(self.config.probe_timeout) {
                        Some(at) if at <= now => {
                            self.open(at, TransitionReason::ProbeTimedOut, None);
                        }
                        _ => break,
                    }
                }
                Phase::Ramp(ramp) if ramp.until <= now => {
                    let at = ramp.until;
                    let next = ramp.stage + 1;
                    match self.config.ramp.get(next) {
                        Some(stage) => {
                            let ramp = Ramp {
                                stage: next,
                                until: at + stage.duration,
                                offered: 0,
                                admitted: 0,
                            };
                            let reason = TransitionReason::RampAdvanced { stage: next };
                            self.transition(at, Phase::Ramp(ramp), reason);
                        }
                        None => {
                            self.reopens = 0;
                            self.transition(at, Phase::Closed, TransitionReason::RampCompleted);
                        }
                    }
                }
                _ => break,
            }
        }
        now
    }

    /// The current state at `now`.
    pub(super) fn state(&mut self, now: Instant) -> BreakerState {
        self.advance(now);
        self.phase.state()
    }

    /// How long the breaker stays open, if it is (automatically) open.
    pub(super) fn remaining_open(&mut self, now: Instant) -> Option<Duration> {
        let now = self.advance(now);
        match self.phase {
            Phase::Open { until } => Some(until - now),
            _ => None,
        }
    }

    /// Whether the provider's latest calls failed: a run of failures in a row is under way
    /// (this replica's, and in a fleet the others' it was told of).
    pub(super) fn in_failing_run(&self) -> bool {
        self.run.failures() > 0
    }

    /// Admits or rejects one call of `caller`.
    pub(super) fn acquire(&mut self, now: Instant, caller: Caller) -> Result<Ticket, Rejected> {
        let now = self.advance(now);
        let epoch = self.epoch;
        let ticket = |kind, slot| Ticket { kind, epoch, slot };
        let result = match &mut self.phase {
            Phase::Closed | Phase::ForcedClosed => return Ok(ticket(PermitKind::Normal, 0)),
            Phase::Open { until } => Err(Rejected {
                retry_after: *until - now,
                state: BreakerState::Open,
                reason: RejectReason::Open,
            }),
            Phase::ForcedOpen => Err(Rejected {
                retry_after: self.config.open_for,
                state: BreakerState::ForcedOpen,
                reason: RejectReason::ForcedOpen,
            }),
            Phase::HalfOpen(probes) => {
                self.lease.asked(now);
                let gap = self.config.probe_interval / self.config.half_open_probes.max(1);
                let timeout = self.config.probe_timeout;
                // The background jobs' turn: the probe interval from the start of the period
                // (time enough for each of its spaced probes to go to a job), and only while
                // no probe of theirs was given back without a verdict.
                let turn_ends = self.since + self.config.probe_interval;
                match caller {
                    // The probes belong to the background jobs that are waiting for them, for
                    // their turn; after it, an interactive call probes like anyone else, so a
                    // queue that is always due never locks interactive callers out.
                    Caller::Interactive {
                        background_due: true,
                    } if !probes.given_back && now < turn_ends => {
                        let mut rejected = probes.reserved(now, gap, timeout);
                        rejected.retry_after = rejected.retry_after.min(turn_ends - now);
                        Err(rejected)
                    }
                    // In a fleet, one replica at a time probes: the one holding the lease.
                    _ if !self.lease.admits(now) => Err(probes.reserved(now, gap, timeout)),
                    _ => probes
                        .admit(now, gap, timeout)
                        .map(|slot| ticket(PermitKind::Probe, slot)),
                }
            }
            Phase::Ramp(ramp) => {
                ramp.offered += 1;
                let share = ppm(self.config.ramp[ramp.stage].share);
                // Admit when ceil(offered × share) grows: the first call of a stage is admitted
                // and admissions never differ from offered × share by a whole call.
                if (ramp.offered * share).div_ceil(1_000_000) > ramp.admitted {
                    ramp.admitted += 1;
                    Ok(ticket(PermitKind::Ramp, 0))
                } else {
                    Err(Rejected {
                        retry_after: RAMP_RETRY_AFTER
                            .min(ramp.until - now)
                            .max(Duration::from_millis(1)),
                        state: BreakerState::Ramp,
                        reason: RejectReason::RampShare,
                    })
                }
            }
        };
        if result.is_err() {
            self.history.calls_rejected += 1;
        }
        result
    }

    /// How many background calls would be admitted now, one after another, if nothing else
    /// asked meanwhile: `None` when the breaker admits calls as they come (closed, ramping,
    /// forced closed); none while open or forced open; while half-open, the probes that may
    /// start now (at most one when they are spaced). The fleet's probe lease is not asked: a
    /// replica without it learns so by asking, which is also how it comes to take it.
    pub(super) fn background_room(&mut self, now: Instant) -> Option<u32> {
        let now = self.advance(now);
        let gap = self.config.probe_interval / self.config.half_open_probes.max(1);
        match &self.phase {
            Phase::Closed | Phase::ForcedClosed | Phase::Ramp(_) => None,
            Phase::Open { .. } | Phase::ForcedOpen => Some(0),
            Phase::HalfOpen(probes) => Some(probes.room(now, gap)),
        }
    }

    /// Records the outcome of an admitted call.
    pub(super) fn record(&mut self, ticket: Ticket, outcome: Outcome, now: Instant) {
        let now = self.advance(now);
        let retry_after = match outcome {
            Outcome::Failure(reason) => {
                reason.retry_after().filter(|ra| *ra > self.config.open_for)
            }
            _ => None,
        };
        if ticket.epoch != self.epoch {
            // A late answer from an earlier period only matters if it asks for a longer pause.
            if let (Phase::Open { until }, Some(ra)) = (&self.phase, retry_after)
                && now + ra > *until
            {
                let reason = TransitionReason::RetryAfter { retry_after: ra };
                self.transition(now, Phase::Open { until: now + ra }, reason);
                self.quota_pause = outcome.rate_limit_pause().is_some();
            }
            return;
        }
        match &self.phase {
            Phase::Closed => self.record_closed(now, outcome, retry_after, false),
            Phase::Ramp(_) => self.record_closed(now, outcome, retry_after, true),
            Phase::ForcedClosed => {
                if let Some(kind) = self.classify(outcome) {
                    self.window.record(now, kind);
                }
                if let Outcome::Success { latency } = outcome {
                    self.slow.learn(latency);
                }
            }
            Phase::HalfOpen(_) if ticket.kind == PermitKind::Probe => {
                self.record_probe(ticket.slot as usize, now, outcome, retry_after)
            }
            // The epoch changes on every entry into these, so no current permit can exist.
            Phase::HalfOpen(_) | Phase::Open { .. } | Phase::ForcedOpen => {}
        }
    }

    /// Applies an operator override, asked of this replica or of another one (`origin`);
    /// false when the breaker was so already (nothing changed, no transition).
    pub(super) fn force(&mut self, mode: ForceMode, now: Instant, origin: Origin) -> bool {
        let now = self.advance(now);
        let reason = TransitionReason::Forced(mode);
        match (mode, &self.phase) {
            (ForceMode::Open, Phase::ForcedOpen)
            | (ForceMode::Closed, Phase::ForcedClosed)
            | (
                ForceMode::Auto,
                Phase::Closed | Phase::Open { .. } | Phase::HalfOpen(_) | Phase::Ramp(_),
            ) => {
                return false;
            }
            (ForceMode::Open, _) => {
                self.epoch += 1;
                self.transition_as(now, Phase::ForcedOpen, reason, origin);
            }
            (ForceMode::Closed, _) => {
                self.epoch += 1;
                self.transition_as(now, Phase::ForcedClosed, reason, origin);
            }
            (ForceMode::Auto, Phase::ForcedOpen | Phase::ForcedClosed) => {
                self.epoch += 1;
                self.transition_as(now, Phase::Closed, reason, origin);
                self.window.clear();
                self.run.end();
                self.reopens = 0;
            }
        }
        true
    }

    /// Takes `config` as the policy from now on, keeping the state, its timers and its counts:
    /// an open breaker stays open until the time it was given, a forced one stays forced, and
    /// the next transition follows the new rules. Only what the new policy measures
    /// differently starts afresh: the window's counts when its length changed, the slow-call
    /// threshold when its rule changed. A ramp stage the new policy no longer has ends the
    /// ramp (the breaker closes, as after a last stage).
    pub(super) fn reconfigure(&mut self, config: BreakerConfig, now: Instant) {
        let now = self.advance(now);
        if config == self.config {
            return;
        }
        if config.window != self.config.window {
            self.window = Window::new(config.window, now);
        }
        if config.slow_call != self.config.slow_call {
            self.slow = SlowThreshold::new(config.slow_call);
        }
        let seed = config.seed ^ fnv1a_64(self.key.to_string().into_bytes());
        self.reopen = Reopen::new(config.reopen_backoff(), config.jitter, seed);
        let stage_gone =
            matches!(&self.phase, Phase::Ramp(ramp) if ramp.stage >= config.ramp.len());
        self.config = config;
        if stage_gone {
            self.reopens = 0;
            self.transition(now, Phase::Closed, TransitionReason::RampCompleted);
        }
    }

    /// Everything the dashboard shows.
    pub(super) fn snapshot(&mut self, now: Instant) -> BreakerSnapshot {
        let now = self.advance(now);
        let counts = self.window.counts(now);
        let mut history = self.history;
        if let Phase::Open { .. } = self.phase {
            history.total_open_time += now - self.opened_at;
        }
        BreakerSnapshot {
            key: self.key.clone(),
            state: self.phase.state(),
            since: self.since,
            failure_rate: counts.failure_rate(),
            slow_rate: counts.slow_rate(),
            calls_in_window: counts.calls,
            open_until: match self.phase {
                Phase::Open { until } => Some(until),
                _ => None,
            },
            quota_pause: matches!(self.phase, Phase::Open { .. }) && self.quota_pause,
            ramp: match &self.phase {
                Phase::Ramp(ramp) => Some(RampStatus {
                    index: ramp.stage,
                    share: self.config.ramp[ramp.stage].share,
                    until: ramp.until,
                }),
                _ => None,
            },
            probes: match &self.phase {
                Phase::HalfOpen(p) => Some(ProbeStatus {
                    allowed: p.slots.len() as u32,
                    admitted: p.slots.iter().filter(|s| **s != Slot::Free).count() as u32,
                    in_flight: p
                        .slots
                        .iter()
                        .filter(|s| matches!(s, Slot::InFlight { .. }))
                        .count() as u32,
                    fast_successes: p.fast(),
                }),
                _ => None,
            },
            slow_call_threshold: self.slow.get(),
            history,
        }
    }

    // --- private ---

    /// What a result counts as in the window (closed, ramp, forced closed), or `None` when it
    /// does not count: a provider's refusal says nothing about its load, as before.
    fn classify(&self, outcome: Outcome) -> Option<CallKind> {
        match outcome {
            Outcome::Success { latency } if self.slow.is_slow(latency) => Some(CallKind::Slow),
            Outcome::Success { .. } => Some(CallKind::Fast),
            Outcome::Failure(_) => Some(CallKind::Failed),
            Outcome::Refused { .. } | Outcome::Ignored => None,
        }
    }

    /// What a half-open probe's result counts as, or `None` when it gives its slot back: a
    /// provider's refusal is a coherent answer, so the provider is up, and counts as a success
    /// of its latency; only a result that never heard from the provider is no verdict.
    fn classify_probe(&self, outcome: Outcome) -> Option<CallKind> {
        match outcome {
            Outcome::Refused { latency } => self.classify(Outcome::Success { latency }),
            _ => self.classify(outcome),
        }
    }

    /// Closed and ramp share the window rules; the ramp judges on fewer calls and does not learn
    /// the slow-call threshold (a recovering provider's latency is not its normal latency).
    fn record_closed(
        &mut self,
        now: Instant,
        outcome: Outcome,
        retry_after: Option<Duration>,
        ramp: bool,
    ) {
        let Some(kind) = self.classify(outcome) else {
            return;
        };
        self.window.record(now, kind);
        match outcome {
            Outcome::Success { latency } => {
                self.run.end();
                if !ramp {
                    self.slow.learn(latency);
                }
            }
            _ => self.run.fail(outcome.rate_limit_pause()),
        }
        if let Some(ra) = retry_after {
            if outcome.rate_limit_pause().is_some() {
                self.pause(now, ra);
            } else {
                let reason = TransitionReason::RetryAfter { retry_after: ra };
                self.open(now, reason, Some(ra));
            }
            return;
        }
        if self.open_on_run(now) {
            return;
        }
        let min_calls = if ramp {
            self.config.min_calls.min(RAMP_MIN_CALLS)
        } else {
            self.config.min_calls
        };
        let counts = self.window.counts(now);
        if counts.calls >= min_calls.max(1) && counts.bad_rate() >= self.config.failure_rate {
            let reason = if ramp {
                TransitionReason::RampFailureRate
            } else if counts.slow > counts.failures {
                TransitionReason::SlowCallRate
            } else {
                TransitionReason::FailureRate
            };
            self.open(now, reason, None);
        }
    }

    fn record_probe(
        &mut self,
        slot: usize,
        now: Instant,
        outcome: Outcome,
        retry_after: Option<Duration>,
    ) {
        let kind = self.classify_probe(outcome);
        // After the provider's rate-limit pause one success says its quota has reset: the
        // provider named the instant itself, and was never sick. Waiting for more spaced
        // probes would only leave the new window unused (and the job system paces the backlog
        // to the learned limit from there).
        let needed = if self.quota_pause {
            1
        } else {
            self.config.half_open_successes.max(1)
        };
        let Phase::HalfOpen(probes) = &mut self.phase else {
            return;
        };
        if !matches!(probes.slots.get(slot), Some(Slot::InFlight { .. })) {
            return;
        }
        let Some(kind) = kind else {
            // An ignored result says nothing about the provider: give the slot back (and end
            // the background jobs' priority, see `acquire`).
            probes.slots[slot] = Slot::Free;
            probes.given_back = true;
            return;
        };
        probes.slots[slot] = Slot::Done;
        probes.counts.add(kind);
        if kind == CallKind::Failed {
            // A probe the provider answered "too many requests, come back in N s" found it up:
            // its pause, however short, not a failed probe's longer open, probes and ramp.
            match (outcome.rate_limit_pause(), retry_after) {
                (Some(pause), _) => self.pause(now, pause),
                (None, Some(ra)) => {
                    let reason = TransitionReason::RetryAfter { retry_after: ra };
                    self.open(now, reason, Some(ra));
                }
                (None, None) => self.open(now, TransitionReason::ProbeFailed, None),
            }
        } else if probes.fast() >= needed {
            self.close_after_probes(now);
        } else if probes.fast() + probes.unfinished() < needed {
            self.open(now, TransitionReason::ProbesInconclusive, None);
        }
    }

    /// Half-open succeeded: into the first ramp stage, or closed if there is no ramp or the
    /// pause was the provider's rate limit.
    fn close_after_probes(&mut self, at: Instant) {
        let reason = TransitionReason::ProbesSucceeded;
        let ramp = self.config.ramp.first().filter(|_| !self.quota_pause);
        let phase = match ramp {
            Some(stage) => Phase::Ramp(Ramp {
                stage: 0,
                until: at + stage.duration,
                offered: 0,
                admitted: 0,
            }),
            None => {
                self.reopens = 0;
                Phase::Closed
            }
        };
        self.transition(at, phase, reason);
        // The recovery is judged on its own calls, not on the window that tripped the breaker.
        self.window.clear();
        self.run.end();
    }

    /// Opens the breaker at `at` for the backoff's open time, or for the provider's Retry-After
    /// (a 503's) if that is longer.
    fn open(&mut self, at: Instant, reason: TransitionReason, retry_after: Option<Duration>) {
        let mut open_for = self.reopen.open_time(self.reopens);
        if let Some(ra) = retry_after {
            open_for = open_for.max(ra);
        }
        self.reopens = self.reopens.saturating_add(1);
        self.run.end();
        self.epoch += 1;
        self.quota_pause = false;
        self.transition(
            at,
            Phase::Open {
                until: at + open_for,
            },
            reason,
        );
    }

    /// Opens the breaker at `at` for the provider's rate-limit pause: exactly the `wait` its
    /// 429 named (the provider is not sick, it named the instant), with reason `retry_after`.
    /// The backoff is neither used nor grown, and the first successful probe closes the
    /// breaker without the ramp (`quota_pause`).
    fn pause(&mut self, at: Instant, wait: Duration) {
        self.run.end();
        self.epoch += 1;
        let reason = TransitionReason::RetryAfter { retry_after: wait };
        self.transition(at, Phase::Open { until: at + wait }, reason);
        self.quota_pause = true;
    }

    /// Opens the breaker when the run of failures has reached `consecutive_failures`: as the
    /// provider's rate-limit pause when every failure of it was a 429 that named its wait,
    /// else as a trip. Whether it opened.
    fn open_on_run(&mut self, at: Instant) -> bool {
        let limit = self.config.consecutive_failures;
        if limit == 0 || self.run.failures() < limit {
            return false;
        }
        match self.run.pause() {
            Some(wait) => self.pause(at, wait),
            None => self.open(at, TransitionReason::ConsecutiveFailures, None),
        }
        true
    }

    /// Replaces the phase, keeps the history, and emits the event of a local decision.
    fn transition(&mut self, at: Instant, to: Phase, reason: TransitionReason) {
        self.transition_as(at, to, reason, Origin::Local);
    }

    /// Replaces the phase, keeps the history, and emits the event, decided by `origin`.
    fn transition_as(&mut self, at: Instant, to: Phase, reason: TransitionReason, origin: Origin) {
        let counts = match &self.phase {
            Phase::HalfOpen(probes) => probes.counts,
            _ => self.window.counts(at),
        };
        let from = self.phase.state();
        let to_state = to.state();
        if from == BreakerState::Open && to_state != BreakerState::Open {
            self.history.total_open_time += at.saturating_duration_since(self.opened_at);
        }
        if to_state == BreakerState::Open && from != BreakerState::Open {
            self.history.times_opened += 1;
            // An open followed from another replica was decided by that replica's calls: this
            // one's window (often empty) would read "opened at 0 % failed".
            let here = (origin == Origin::Local).then_some(counts);
            self.history.failure_rate_at_last_open = here.map(|c| c.failure_rate());
            self.history.slow_rate_at_last_open = here.map(|c| c.slow_rate());
            self.history.calls_at_last_open = here.map(|c| c.calls);
            self.opened_at = at;
        }
        if from != to_state {
            self.since = at;
        }
        if from == BreakerState::HalfOpen {
            // A lease covers one half-open period.
            self.lease.end();
        }
        self.phase = to;
        // An error only means nobody is subscribed, which is fine.
        let _ = self.events.send(TransitionEvent {
            key: self.key.clone(),
            from,
            to: to_state,
            reason,
            at,
            failure_rate: counts.failure_rate(),
            slow_rate: counts.slow_rate(),
            calls: counts.calls,
            origin,
        });
    }
}
