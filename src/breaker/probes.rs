//! Half-open bookkeeping: which probe slots are free, in flight or done, their spacing, and the
//! results so far. The decisions (close, reopen) are the machine's; this only counts.

use std::time::Duration;

use tokio::time::Instant;

use super::window::Counts;
use super::{BreakerState, RejectReason, Rejected};

/// The probes of one half-open period.
#[derive(Debug)]
pub(super) struct Probes {
    /// One entry per allowed probe, so no more than `half_open_probes` can ever be in flight.
    pub(super) slots: Vec<Slot>,
    /// When the latest probe was admitted, for spacing.
    last_admitted: Option<Instant>,
    /// Results of the finished probes.
    pub(super) counts: Counts,
    /// A probe's slot was given back without a verdict (a cancelled call): the background
    /// jobs had a probe and it told nothing, so their priority over interactive callers ends.
    pub(super) given_back: bool,
}

/// One probe slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Slot {
    /// Not used yet, or given back by a probe without a verdict (an ignored outcome).
    Free,
    /// Admitted at `started`, not recorded yet.
    InFlight { started: Instant },
    /// Recorded as a success (fast or slow, a provider's refusal among them) or a failure.
    Done,
}

/// Half-open refuses a call for `retry_after`.
fn full(retry_after: Duration) -> Rejected {
    Rejected {
        retry_after,
        state: BreakerState::HalfOpen,
        reason: RejectReason::HalfOpenFull,
    }
}

impl Probes {
    /// `n` free slots (at least one).
    pub(super) fn new(n: u32) -> Self {
        Self {
            slots: vec![Slot::Free; n.max(1) as usize],
            last_admitted: None,
            counts: Counts::default(),
            given_back: false,
        }
    }

    /// Admits a probe into a free slot if one is free and the previous probe was admitted at least
    /// `gap` ago; returns the slot.
    pub(super) fn admit(
        &mut self,
        now: Instant,
        gap: Duration,
        timeout: Duration,
    ) -> Result<u32, Rejected> {
        let Some(slot) = self.slots.iter().position(|s| *s == Slot::Free) else {
            return Err(self.reserved(now, gap, timeout));
        };
        if let Some(next) = self.last_admitted.map(|last| last + gap)
            && next > now
        {
            return Err(full(next - now));
        }
        self.slots[slot] = Slot::InFlight { started: now };
        self.last_admitted = Some(now);
        Ok(slot as u32)
    }

    /// How many probes [`Probes::admit`] would admit at `now`, one after another: none while the
    /// spacing runs; else the free slots, of which only one when probes are spaced.
    pub(super) fn room(&self, now: Instant, gap: Duration) -> u32 {
        if self.last_admitted.is_some_and(|last| last + gap > now) {
            return 0;
        }
        let free = self.slots.iter().filter(|s| **s == Slot::Free).count() as u32;
        if gap.is_zero() { free } else { free.min(1) }
    }

    /// The answer to a caller that gets no probe now: nothing can be decided before the oldest
    /// probe in flight answers or times out, or, with none in flight, before the next probe is due.
    pub(super) fn reserved(&self, now: Instant, gap: Duration, timeout: Duration) -> Rejected {
        let deadline = self.earliest_deadline(timeout);
        full(deadline.map_or(gap, |d| d.saturating_duration_since(now)))
    }

    /// The instant the oldest in-flight probe times out.
    pub(super) fn earliest_deadline(&self, timeout: Duration) -> Option<Instant> {
        self.slots
            .iter()
            .filter_map(|s| match s {
                Slot::InFlight { started } => Some(*started + timeout),
                _ => None,
            })
            .min()
    }

    /// Whether a probe was admitted and is not recorded yet.
    pub(super) fn in_flight(&self) -> bool {
        self.slots
            .iter()
            .any(|s| matches!(s, Slot::InFlight { .. }))
    }

    /// Finished probes that succeeded under the slow-call threshold.
    pub(super) fn fast(&self) -> u32 {
        self.counts.calls - self.counts.failures - self.counts.slow
    }

    /// Probes not finished yet (free or in flight).
    pub(super) fn unfinished(&self) -> u32 {
        self.slots.iter().filter(|s| **s != Slot::Done).count() as u32
    }
}
