//! Coalescing: identical concurrent calls share one provider call.
//!
//! Many agents search the same popular routes at the same moment, and a flight search takes
//! seconds, so the same question is often asked again while the first ask is still upstream.
//! Asking the provider once and giving every caller the answer saves its quota and latency, and
//! the breaker learns one outcome per provider call, not one per waiting caller (a thousand
//! callers waiting on one slow search are one slow call, not a thousand).
//!
//! Only the caller decides what may be shared: the gateway joins read calls by tool and
//! canonical arguments, and never a write (two bookings are two bookings).
//!
//! # Who runs the shared call
//! The first caller (the leader) starts the call on a task of its own, so the leader going away
//! does not cancel it for the others. Every caller, the leader too, is a [`Waiter`]; when the
//! last waiter goes away before the answer, the task is aborted, as a lone read is cancelled
//! with its caller (a dropped breaker permit records nothing).
//!
//! # Deadlines
//! The shared call runs to the tool's own deadline, not to its leader's: a leader in a hurry
//! (an agent that asked for a short deadline) would otherwise cut the call short for every
//! patient caller that joined it, and the breaker would count the hurry as the provider's
//! timeout. [`Waiter::deadline`] says when the call ends, so a waiter whose own deadline comes
//! sooner stops waiting then and answers with its fallback; it counts out like a caller that
//! went away, so a call whose every caller stopped waiting is aborted, and its breaker counts
//! nothing. (Leaving it running instead would let one client with tiny deadlines keep any
//! number of calls upstream after its answers, past its in-flight cap, each holding a bulkhead
//! slot and spending provider quota.)
//!
//! # In traces
//! The shared call's spans (its attempts) are children of its leader's span. A caller who joins
//! is told who leads ([`Coalescer::join`] hands back the leader's span), so its own span can say
//! it was coalesced and link to the leader's; without trace export that span is disabled and
//! nothing is kept or made.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::FutureExt;
use tokio::sync::{broadcast, watch};
use tokio::task::AbortHandle;
use tokio::time::Instant;
use tracing::Span;

use super::progress::{self, Step, Steps};

/// The shared calls in flight of one tool, by key.
///
/// The map sits behind a `std::sync::Mutex`: it is held only to look a key up, count a waiter
/// in or out, or remove a finished call, never across an await.
pub(super) struct Coalescer<T> {
    flights: Arc<Mutex<Flights<T>>>,
}

struct Flights<T> {
    by_key: HashMap<Arc<str>, Flight<T>>,
    /// Tells a call from a later one under the same key.
    next_id: u64,
}

/// One shared call in flight.
struct Flight<T> {
    id: u64,
    /// The deadline the call runs to (its tool's, from when it started).
    deadline: Instant,
    /// The outcome, once there is one.
    outcome: watch::Receiver<Option<T>>,
    /// The callers waiting on it; at zero the call is aborted.
    waiters: usize,
    task: AbortHandle,
    /// The call's steps (failing over, retrying), for every waiter.
    steps: Steps,
    /// The span the leader called in (the shared call's attempts are its children), for a
    /// joiner's link; disabled when spans are not exported. It adds no lifetime to the span:
    /// the shared call's task holds it as long as this entry is here.
    leader: Span,
}

/// One caller's share of a call in flight. Dropping it before the outcome counts the caller
/// out; the last one out aborts the call.
pub(super) struct Waiter<T> {
    flights: Arc<Mutex<Flights<T>>>,
    key: Arc<str>,
    id: u64,
    deadline: Instant,
    outcome: watch::Receiver<Option<T>>,
    steps: Steps,
}

impl<T> Default for Coalescer<T> {
    fn default() -> Self {
        Coalescer {
            flights: Arc::new(Mutex::new(Flights {
                by_key: HashMap::new(),
                next_id: 0,
            })),
        }
    }
}

impl<T> fmt::Debug for Coalescer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Coalescer")
            .field("in_flight", &self.in_flight())
            .finish()
    }
}

impl<T: Clone + Send + Sync + 'static> Coalescer<T> {
    /// Joins the call in flight under `key`, or, when there is none, leads one: `call` is then
    /// made (given where to send its steps) and spawned, to run to `deadline` (the tool's).
    /// The key is shared, not copied, by the map, the call's task and every waiter.
    ///
    /// Also the leader's span when this caller joined a call another leads (`None` when it
    /// leads): the current span is the leader's when it leads.
    #[cfg(test)]
    pub(super) fn join<F>(
        &self,
        key: Arc<str>,
        deadline: Instant,
        call: impl FnOnce(Steps) -> F,
    ) -> (Waiter<T>, Option<Span>)
    where
        F: Future<Output = T> + Send + 'static,
    {
        let joined = self.try_join(key, deadline, |steps| {
            Ok::<_, std::convert::Infallible>(call(steps))
        });
        match joined {
            Ok(joined) => joined,
            Err(never) => match never {},
        }
    }

    /// [`Coalescer::join`], where leading may be refused: `call` is made only when this caller
    /// would lead, and when it refuses (`Err`) no call is started or kept under `key`, so the
    /// refusal is this caller's alone and nobody joins it. (A read whose client holds its
    /// share of the tool may join a call in flight, which takes no slot, but not lead one.)
    pub(super) fn try_join<F, E>(
        &self,
        key: Arc<str>,
        deadline: Instant,
        call: impl FnOnce(Steps) -> Result<F, E>,
    ) -> Result<(Waiter<T>, Option<Span>), E>
    where
        F: Future<Output = T> + Send + 'static,
    {
        let mut flights = lock(&self.flights);
        // A call whose outcome channel closed while its entry is still here panicked (a call
        // that answers removes its entry before the channel closes, and an aborted one is
        // removed with the abort): its waiters have their `None`, and a caller who comes now
        // leads a new call rather than join one that will never answer.
        if let Some(flight) = flights.by_key.get_mut(&key)
            && flight.outcome.has_changed().is_ok()
        {
            flight.waiters += 1;
            let waiter = Waiter {
                flights: Arc::clone(&self.flights),
                key,
                id: flight.id,
                deadline: flight.deadline,
                outcome: flight.outcome.clone(),
                steps: flight.steps.clone(),
            };
            return Ok((waiter, Some(flight.leader.clone())));
        }
        let steps = progress::channel();
        let call = call(steps.clone())?;
        let id = flights.next_id;
        flights.next_id += 1;
        let (publish, outcome) = watch::channel(None);
        let shared = Arc::clone(&self.flights);
        let task_key = Arc::clone(&key);
        // The task cannot remove its entry before it is inserted: that needs this lock.
        // `map`, not an `async move` block awaiting `call`: the block would keep the captured
        // call and the awaited one in two places, doubling the task for as long as a slow
        // provider holds it (memory per held call, BENCHMARKS.md).
        let task = tokio::spawn(call.map(move |value| {
            publish.send_replace(Some(value));
            let mut flights = lock(&shared);
            let done = if flights.by_key.get(&task_key).is_some_and(|f| f.id == id) {
                flights.by_key.remove(&task_key)
            } else {
                None
            };
            // Dropped after the lock: its leader's span may close with it (and be exported).
            drop(flights);
            drop(done);
        }));
        flights.by_key.insert(
            Arc::clone(&key),
            Flight {
                id,
                deadline,
                outcome: outcome.clone(),
                waiters: 1,
                task: task.abort_handle(),
                steps: steps.clone(),
                leader: Span::current(),
            },
        );
        let waiter = Waiter {
            flights: Arc::clone(&self.flights),
            key,
            id,
            deadline,
            outcome,
            steps,
        };
        Ok((waiter, None))
    }
}

impl<T> Coalescer<T> {
    /// How many shared calls are in flight.
    pub(super) fn in_flight(&self) -> usize {
        lock(&self.flights).by_key.len()
    }
}

impl<T: Clone> Waiter<T> {
    /// The shared call's outcome; `None` if it ended without one (it panicked).
    pub(super) async fn outcome(&mut self) -> Option<T> {
        let outcome = self.outcome.wait_for(Option::is_some).await.ok()?;
        outcome.clone()
    }

    /// The deadline the shared call runs to: its tool's.
    pub(super) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The shared call's steps from now on.
    pub(super) fn steps(&self) -> broadcast::Receiver<Step> {
        self.steps.subscribe()
    }
}

impl<T> Drop for Waiter<T> {
    fn drop(&mut self) {
        let mut flights = lock(&self.flights);
        let Some(flight) = flights.by_key.get_mut(&self.key) else {
            return;
        };
        if flight.id != self.id {
            return;
        }
        flight.waiters -= 1;
        if flight.waiters == 0 {
            // Nobody waits any more: the call is not worth finishing (a read only).
            flight.task.abort();
            let gone = flights.by_key.remove(&self.key);
            // Dropped after the lock: its leader's span may close with it (and be exported).
            drop(flights);
            drop(gone);
        }
    }
}

/// The map, also after a panic elsewhere: it holds only counts and handles, still valid.
fn lock<T>(flights: &Mutex<Flights<T>>) -> MutexGuard<'_, Flights<T>> {
    flights.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    use super::*;

    /// A call that counts its starts and answers `value` after `after`.
    fn counted(
        starts: &Arc<AtomicU32>,
        after: Duration,
        value: u32,
    ) -> impl FnOnce(Steps) -> futures::future::BoxFuture<'static, u32> {
        let starts = Arc::clone(starts);
        move |_| {
            starts.fetch_add(1, Ordering::Relaxed);
            Box::pin(async move {
                tokio::time::sleep(after).await;
                value
            })
        }
    }

    fn later(secs: u64) -> Instant {
        Instant::now() + Duration::from_secs(secs)
    }

    #[tokio::test(start_paused = true)]
    async fn callers_of_one_key_share_one_call_and_its_outcome() {
        let coalescer = Coalescer::default();
        let starts = Arc::new(AtomicU32::new(0));
        let (mut waiters, leaders): (Vec<Waiter<u32>>, Vec<Option<Span>>) = (0..5)
            .map(|i| {
                coalescer.join(
                    "k".into(),
                    later(10),
                    counted(&starts, Duration::from_secs(1), i),
                )
            })
            .unzip();
        assert!(leaders[0].is_none(), "the first caller leads");
        assert!(
            leaders[1..].iter().all(Option::is_some),
            "the others are told they joined"
        );
        for waiter in &mut waiters {
            assert_eq!(
                waiter.outcome().await,
                Some(0),
                "the leader's call answers all"
            );
        }
        assert_eq!(starts.load(Ordering::Relaxed), 1);
        drop(waiters);
        assert_eq!(coalescer.in_flight(), 0, "a finished call is gone");
        let mut again = coalescer
            .join("k".into(), later(10), counted(&starts, Duration::ZERO, 9))
            .0;
        assert_eq!(
            again.outcome().await,
            Some(9),
            "a call after the answer asks again"
        );
        assert_eq!(starts.load(Ordering::Relaxed), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn other_keys_get_calls_of_their_own() {
        let coalescer = Coalescer::default();
        let starts = Arc::new(AtomicU32::new(0));
        let mut a = coalescer
            .join("a".into(), later(10), counted(&starts, Duration::ZERO, 1))
            .0;
        let mut b = coalescer
            .join("b".into(), later(10), counted(&starts, Duration::ZERO, 2))
            .0;
        assert_eq!((a.outcome().await, b.outcome().await), (Some(1), Some(2)));
        assert_eq!(starts.load(Ordering::Relaxed), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_caller_refused_to_lead_starts_and_keeps_nothing_but_may_join() {
        let coalescer: Coalescer<u32> = Coalescer::default();
        let starts = Arc::new(AtomicU32::new(0));
        let refused = coalescer.try_join("k".into(), later(10), |_| {
            Err::<futures::future::BoxFuture<'static, u32>, _>("at its share")
        });
        assert!(matches!(refused, Err("at its share")));
        assert_eq!(coalescer.in_flight(), 0, "nothing kept for others to join");
        let (mut leader, led) = coalescer.join(
            "k".into(),
            later(10),
            counted(&starts, Duration::from_secs(1), 3),
        );
        assert!(led.is_none(), "the next caller leads a call of its own");
        // A caller that could not lead may still join a call in flight: it is never asked.
        let joined = coalescer.try_join("k".into(), later(10), |_| {
            Err::<futures::future::BoxFuture<'static, u32>, _>("at its share")
        });
        let Ok((mut follower, Some(_))) = joined else {
            panic!("joined the call in flight");
        };
        assert_eq!(
            (leader.outcome().await, follower.outcome().await),
            (Some(3), Some(3))
        );
        assert_eq!(starts.load(Ordering::Relaxed), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_leader_that_goes_away_leaves_the_call_to_the_others() {
        let coalescer = Coalescer::default();
        let starts = Arc::new(AtomicU32::new(0));
        let (leader, _) = coalescer.join(
            "k".into(),
            later(10),
            counted(&starts, Duration::from_secs(1), 7),
        );
        let (mut follower, _) =
            coalescer.join("k".into(), later(10), counted(&starts, Duration::ZERO, 8));
        drop(leader);
        assert_eq!(follower.outcome().await, Some(7));
        assert_eq!(starts.load(Ordering::Relaxed), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn the_last_waiter_going_away_aborts_the_call() {
        let coalescer = Coalescer::default();
        let finished = Arc::new(AtomicU32::new(0));
        let done = Arc::clone(&finished);
        let (waiter, _) = coalescer.join("k".into(), later(10), move |_| async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            done.fetch_add(1, Ordering::Relaxed);
            1u32
        });
        let deadline = waiter.deadline();
        assert_eq!(deadline, later(10), "the deadline it was led with");
        drop(waiter);
        assert_eq!(coalescer.in_flight(), 0);
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(
            finished.load(Ordering::Relaxed),
            0,
            "aborted, never finished"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_caller_after_a_call_panicked_leads_a_new_call() {
        let coalescer = Coalescer::default();
        let starts = Arc::new(AtomicU32::new(0));
        let (mut first, _) = coalescer.join("k".into(), later(10), |_| async {
            tokio::task::yield_now().await;
            panic!("a defect in the call");
        });
        assert_eq!(
            first.outcome().await,
            None,
            "a panicked call has no outcome"
        );
        // `first` still holds the panicked call's entry; a caller now must not join it.
        let (mut next, led) = coalescer.join(
            "k".into(),
            later(10),
            counted(&starts, Duration::from_secs(1), 5),
        );
        assert!(led.is_none(), "it leads the new call");
        drop(first);
        assert_eq!(
            coalescer.in_flight(),
            1,
            "the panicked call's last waiter leaves the new call alone"
        );
        assert_eq!(next.outcome().await, Some(5), "a new call answers");
        assert_eq!(starts.load(Ordering::Relaxed), 1);
    }
}
