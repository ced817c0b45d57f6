//! How long a loop that looks in the shared store for work waits before it looks again.
//!
//! Four loops look for work in the store: the job dispatcher, the job callbacks' sender, the
//! watches' loop and the back-in-service loop. Each looks on a short interval so that work is
//! taken up within a fraction of a second of falling due. An idle replica used to look as often
//! as a busy one: 43 statements a second to PostgreSQL with nothing to do, for every replica of
//! a fleet (BENCHMARKS.md, "An idle replica's statements").
//!
//! So a look that finds nothing asks the store when its next work falls due (a retry, a watch's
//! instant, a callback's next delivery, a lease running out), and the loop waits until then, but
//! never longer than [`Pace::idle`] nor shorter than [`Pace::busy`]. Work made on this replica (a
//! submitted job, a created watch or notice, a job that ended with a callback) wakes its loop at
//! once through the loop's own `Notify`. What waits for the longer look is only what another
//! replica made, and that replica's own loop is awake to take it; the others join within
//! [`Pace::idle`], as a replica that was down would.

use std::time::Duration;

/// A loop's two intervals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pace {
    /// Between two looks while there is work (the loop's interval before idle looks waited longer).
    pub busy: Duration,
    /// The longest wait after a look that found nothing.
    pub idle: Duration,
}

/// What a look found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// Work, done or still waiting (a due job a breaker holds back, a watch's run in flight):
    /// look again after [`Pace::busy`].
    Work,
    /// Nothing to do now; when the store says the next work falls due (epoch ms), if it knows.
    NothingUntil(Option<i64>),
}

/// The longest an idle loop waits: what another replica made is taken up by this one within it.
pub const IDLE: Duration = Duration::from_secs(2);

impl Pace {
    /// A loop that looks every `busy` while there is work, and at most every [`IDLE`] without.
    pub const fn busy_every(busy: Duration) -> Self {
        Self { busy, idle: IDLE }
    }

    /// The wait before the next look, after a look at `now_ms` that found `found`.
    pub fn wait(&self, found: Found, now_ms: i64) -> Duration {
        let longest = self.idle.max(self.busy);
        match found {
            Found::Work => self.busy,
            Found::NothingUntil(None) => longest,
            Found::NothingUntil(Some(at)) => {
                let ms = u64::try_from(at.saturating_sub(now_ms)).unwrap_or(0);
                Duration::from_millis(ms).clamp(self.busy, longest)
            }
        }
    }
}

impl Found {
    /// Work when `busy`, else nothing until the earliest of `next` (epoch ms).
    pub fn of(busy: bool, next: impl IntoIterator<Item = Option<i64>>) -> Self {
        if busy {
            Found::Work
        } else {
            Found::NothingUntil(next.into_iter().flatten().min())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PACE: Pace = Pace::busy_every(Duration::from_millis(250));
    const NOW: i64 = 1_000_000;

    #[test]
    fn a_look_that_found_work_looks_again_soon() {
        assert_eq!(PACE.wait(Found::Work, NOW), Duration::from_millis(250));
    }

    #[test]
    fn an_idle_look_waits_until_the_next_work_falls_due() {
        let in_900_ms = Found::NothingUntil(Some(NOW + 900));
        assert_eq!(PACE.wait(in_900_ms, NOW), Duration::from_millis(900));
    }

    #[test]
    fn an_idle_look_waits_no_longer_than_idle_and_no_shorter_than_busy() {
        let nothing = Found::NothingUntil(None);
        assert_eq!(PACE.wait(nothing, NOW), IDLE);
        let in_an_hour = Found::NothingUntil(Some(NOW + 3_600_000));
        assert_eq!(PACE.wait(in_an_hour, NOW), IDLE);
        let past = Found::NothingUntil(Some(NOW - 5_000));
        assert_eq!(PACE.wait(past, NOW), Duration::from_millis(250));
        let in_10_ms = Found::NothingUntil(Some(NOW + 10));
        assert_eq!(PACE.wait(in_10_ms, NOW), Duration::from_millis(250));
    }

    #[test]
    fn the_next_work_is_the_earliest_the_store_knows_of() {
        assert_eq!(
            Found::of(false, [Some(NOW + 700), None, Some(NOW + 300)]),
            Found::NothingUntil(Some(NOW + 300))
        );
        assert_eq!(Found::of(false, [None, None]), Found::NothingUntil(None));
        assert_eq!(Found::of(true, [Some(NOW + 300)]), Found::Work);
    }
}
