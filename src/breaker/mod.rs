//! Per-key circuit breakers: the part of faregate that turns a sick provider's slow failures into
//! fast, honest `unavailable` answers: failing fast is better than failing slow, because a slow
//! failure holds a caller, a connection and a model's turn for nothing.
//!
//! # Vocabulary
//!
//! We use the electrical sense: **open means rejecting**, closed means admitting. (linkerd's gate
//! uses the opposite; we do not.) The states are `closed`, `open`, `half_open` (a few spaced probes
//! decide), `forced_open` and `forced_closed`. Recovery after half-open goes through a **ramp**
//! ([`BreakerState::Ramp`]): the breaker admits a stage's share of calls (10 % for 30 s, then 50 %
//! for 30 s) before it is fully closed. The published states have no name for the ramp, so
//! `as_str` reports it as `"closed"`; the stage is in [`BreakerSnapshot::ramp`] and
//! [`BreakerState::detail_str`] says `"ramp"`.
//!
//! # Gate and policy
//!
//! Following linkerd's split of mechanism (a gate that admits or refuses) and policy (the
//! accrual rules that move it):
//!
//! - the **policy** (`state.rs`, counting with `window.rs`, `probes.rs`, `slow.rs`, the run of
//!   failures in `state/run.rs`, and timing with `reopen.rs`) is a pure state machine: inputs
//!   are `(now, outcome)`, outputs are admissions, rejections and [`TransitionEvent`]s. It does
//!   no I/O, spawns nothing and never reads the clock, so every rule is tested on a paused
//!   clock with jitter 0;
//! - the **gate** (`gate.rs`) is the thread-safe face: [`Breaker`] puts the machine behind a short
//!   `std::sync::Mutex`, and [`Permit`] ties each admitted call to its outcome; a permit dropped
//!   unrecorded (a cancelled call) counts as [`Outcome::Ignored`], which also hands a half-open
//!   slot back, so a cancelled call neither trips a healthy breaker nor leaks a probe;
//! - the **registry** (`registry.rs`) finds breakers by [`BreakerKey`] (tool × provider, or a
//!   provider or provider account every tool shares: [`BreakerScope`], `scope.rs`).
//!
//! Unlike linkerd, the policy does not run as a task fed through channels: the breaker's timers are
//! evaluated lazily whenever anyone looks (`state`, `try_acquire`, `record`, `snapshot`), with the
//! exact instant each timer expired. The gateway still calls [`BreakerRegistry::tick_all`] every
//! ~250 ms so that timer-driven events (open → half-open, ramp stages, hung probes) reach
//! subscribers without traffic; correctness never depends on it.
//!
//! # Rules (numbers are the standard tuning, `BreakerConfig::builder`)
//!
//! - **Closed**: a 60 s sliding window in 60 buckets counts fast successes, slow successes and
//!   failures ([`Outcome::Refused`], a provider's refusal, and [`Outcome::Ignored`] count
//!   nothing). It opens when
//!   `(failures + slow) / calls >= 0.5` with at least 20 calls, or on 5 failures in a row (any
//!   success, even a slow one, resets the run). A 503 whose `Retry-After` is longer than
//!   `open_for` opens it (in any state) for the longer of that and its usual open time.
//! - **Rate-limit pause**: a 429 that names its wait (`Retry-After`, or a rate limit's reset) is
//!   a provider that is up and asks to be left alone, not a sick one. The breaker opens for it,
//!   with reason `retry_after`, when the 429's wait is longer than `open_for` (in any state),
//!   when it is the last of 5 failures in a row that were all such 429s (the last one's wait:
//!   each counts from its own answer; in a fleet, the other replicas' 429s tell theirs), or when
//!   it answers a half-open probe (any wait). It stays open for exactly that wait, without the
//!   backoff (which it neither uses nor grows). A shorter 429 alone does not open it: the call
//!   waits it out when it fits the deadline, a background job is requeued until it.
//! - **Open**: rejects at once with `retry_after`. After `open_for` (30 s) it is half-open. Each
//!   re-open without a full recovery in between doubles the time (with jitter) up to 5 min.
//! - **Half-open**: up to 3 probes, one every `probe_interval / half_open_probes` (3.3 s). Two fast
//!   successes close it into the ramp. After a rate-limit pause the first fast success closes
//!   it straight to closed: a rate-limit window that has reset is not a sick provider (it named
//!   the instant itself), and more probes or a ramp would waste the new window; a 503's
//!   `Retry-After` still probes and ramps. A failed probe, a probe unanswered after `probe_timeout`,
//!   or too few fast successes left possible (a slow success is neither) reopen it. A probe whose
//!   outcome is `Ignored` (nothing heard from the provider) gives its slot back; one the
//!   provider answered with a refusal (`Refused`: a request the model can fix, nothing
//!   listed) counts as a success of its latency, since the provider is up and answering (were
//!   it ignored, a breaker whose probes all go to jobs asking for what the provider does not
//!   list would stay half-open as long as those jobs are queued). While background jobs of the
//!   tool are due, the probes are theirs for the background's turn: an interactive [`Caller`]
//!   is refused one within `probe_interval` of the half-open start, unless a probe was given
//!   back without a verdict; after that it probes like a job, so a queue that stays due never
//!   locks interactive callers out. [`Breaker::background_room`] tells the dispatcher how many
//!   jobs a half-open breaker would admit now, so it claims no more.
//! - **Ramp**: admits `ceil(n × share)` of the first `n` calls of each stage; the rest are rejected
//!   with [`RejectReason::RampShare`]. The ramp judges the bad-call rate on
//!   `min(min_calls, 5)` calls and reopens on it. After the last stage the breaker is closed and
//!   the re-open count resets.
//! - **Forced**: [`ForceMode::Open`] rejects everything; [`ForceMode::Closed`] admits everything
//!   and still records the window; [`ForceMode::Auto`] returns to closed with a fresh window.
//!
//! Every transition is broadcast as a [`TransitionEvent`]; [`is_legal_transition`] is the table of
//! allowed transitions.

mod admission;
mod config;
mod event;
mod gate;
mod key;
mod outcome;
mod probes;
mod registry;
mod reopen;
mod scope;
mod slow;
mod snapshot;
mod state;
mod window;

#[cfg(test)]
mod tests;

pub use admission::{Caller, PermitKind, RejectReason, Rejected};
pub use config::{
    AUTO_FLOOR, AUTO_MIN_SAMPLES, BreakerBuilder, BreakerConfig, REOPEN_JITTER, RampStage, SlowCall,
};
pub use event::{
    BreakerState, ForceMode, Origin, RunFailure, TransitionEvent, TransitionReason,
    is_legal_transition, legal_transition_labels,
};
pub use gate::{Breaker, LeaseGrant, Permit};
pub use key::BreakerKey;
pub use outcome::{FailureReason, Outcome};
pub use registry::BreakerRegistry;
pub use scope::BreakerScope;
pub use snapshot::{BreakerHistory, BreakerSnapshot, ProbeStatus, RampStatus};
