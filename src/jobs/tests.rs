//! The job system on tokio's paused clock: dispatch, requeue and pacing, with time advanced by
//! the test instead of waited for. The store is the in-memory one (held to the SQL store's rules
//! by the conformance suite), because a SQL driver waits on its own threads and a paused runtime
//! would advance its clock meanwhile.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::Semaphore;
use tokio::time::advance;

use super::dispatch::{Claimed, Dispatcher, ToolState, UNSERVED_GRACE, answer};
use super::policy::RequeuePolicy;
use super::run::decide;
use super::store::memory::MemoryStore;
use super::store::{JobStatus, JobStore, NewJob, StoreError, Transition};
use crate::call::{CallInfo, Data, Envelope, RateLimitHit, Verdict};
use crate::clock;
use crate::config::JobsConfig;
use crate::quota::Quotas;

mod lost_claims;
mod shares;

const FLIGHTS: &str = "search_flights";
const HOTELS: &str = "search_hotels";
/// A tool the queue's replica does not serve.
const TRAINS: &str = "search_trains";
const MAX_AGE: Duration = Duration::from_secs(24 * 3600);

struct Queue {
    store: MemoryStore,
    dispatcher: Dispatcher,
    workers: Arc<Semaphore>,
}

impl Queue {
    fn new(workers: usize) -> Self {
        Queue {
            store: MemoryStore::default(),
            dispatcher: Dispatcher {
                owner: "w".into(),
                claims: Default::default(),
                lost: Default::default(),
                lease_ms: std::sync::atomic::AtomicI64::new(60_000),
                quotas: Arc::new(Quotas::local(Arc::default())),
                max_age: MAX_AGE,
                unserved_told: Default::default(),
            },
            workers: Arc::new(Semaphore::new(workers)),
        }
    }

    async fn submit(&self, tool: &str) -> String {
        let job = NewJob {
            tool: tool.into(),
            arguments: json!({}),
            call_id: None,
            client: crate::clients::ClientName::local(),
            idempotency_key: None,
            callback_url: None,
            trace: None,
        };
        let (job, _) = self
            .store
            .enqueue(job, clock::epoch_ms())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        job.id
    }

    /// One dispatch pass as the job system runs it, with `open` the tools whose breakers are
    /// all open.
    async fn pass(&self, open: &[&str]) -> Vec<Claimed> {
        self.try_pass(open).await.unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Queue::pass`], with the store's failure.
    async fn try_pass(&self, open: &[&str]) -> Result<Vec<Claimed>, StoreError> {
        let rooms: Vec<(&str, u32)> = open.iter().map(|name| (*name, 0)).collect();
        self.try_pass_rooms(&rooms).await
    }

    /// One dispatch pass in which the breakers of the tools of `rooms` admit only so many
    /// calls now (0: all open; more: half-open probes), the others all.
    async fn pass_rooms(&self, rooms: &[(&str, u32)]) -> Vec<Claimed> {
        self.try_pass_rooms(rooms)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Queue::pass_rooms`], with the store's failure.
    async fn try_pass_rooms(&self, rooms: &[(&str, u32)]) -> Result<Vec<Claimed>, StoreError> {
        self.dispatcher.lost.hand_back(&self.store).await?;
        let due = self.store.due_tools(clock::epoch_ms()).await?;
        let tools: Vec<ToolState> = [FLIGHTS, HOTELS]
            .iter()
            .map(|name| ToolState {
                name: name.to_string(),
                room: rooms.iter().find(|(n, _)| n == name).map(|(_, room)| *room),
                provider: name.to_string(),
                share: None,
            })
            .collect();
        self.dispatcher
            .claim(&self.store, &tools, &due, &self.workers)
            .await
    }

    /// Ends a claimed job's run with `outcome`, as a worker does (without jitter).
    async fn finish(&self, claimed: Claimed, outcome: Verdict) {
        self.finish_jittered(claimed, outcome, 0.0).await;
    }

    /// Ends a claimed job's run with `outcome` and the jitter draw `jitter`.
    async fn finish_jittered(&self, claimed: Claimed, outcome: Verdict, jitter: f64) {
        self.dispatcher
            .quotas
            .observe(&claimed.provider, answer(&outcome), claimed.claimed_at)
            .await;
        let config = JobsConfig {
            max_attempts: 20,
            max_age: MAX_AGE,
            workers: 4,
            lease_margin: Duration::from_secs(30),
        };
        let now = clock::epoch_ms();
        let policy = RequeuePolicy::standard();
        let transition = decide(outcome, &claimed.job, &config, &policy, now, jitter);
        let stored = self
            .store
            .finish(&claimed.job.id, &claimed.lease, transition, now)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(stored, "the lease is still ours");
    }
}

fn ids(claimed: &[Claimed]) -> Vec<&str> {
    claimed.iter().map(|c| c.job.id.as_str()).collect()
}

fn ids_of(jobs: &[super::store::Job]) -> Vec<&str> {
    jobs.iter().map(|j| j.id.as_str()).collect()
}

fn breaker_open(retry_after: Duration) -> Verdict {
    Verdict::Later {
        anchor: Some(retry_after),
        error: "duffel: breaker open".into(),
        attempted: false,
        rate_limited: None,
    }
}

/// A provider's 429 with its reset `retry_after` away.
fn rate_limited(retry_after: Duration) -> Verdict {
    Verdict::Later {
        anchor: Some(retry_after),
        error: "duffel: 429".into(),
        attempted: true,
        rate_limited: Some(RateLimitHit {
            retry_after: Some(retry_after),
        }),
    }
}

fn succeeded(tool: &str) -> Verdict {
    let info = CallInfo::new("c", tool);
    Verdict::Done(Envelope::ok(
        info,
        "done".into(),
        Data::new(json!({})),
        "duffel".into(),
    ))
}

#[tokio::test(start_paused = true)]
async fn a_requeued_job_is_claimed_once_its_delay_has_passed_and_not_before() {
    let q = Queue::new(4);
    let id = q.submit(FLIGHTS).await;
    let mut first = q.pass(&[]).await;
    assert_eq!(ids(&first), [id.as_str()]);
    // The breaker refused it with 30 s left open: back when it half-opens.
    q.finish(first.remove(0), breaker_open(Duration::from_secs(30)))
        .await;

    advance(Duration::from_millis(29_900)).await;
    assert!(q.pass(&[]).await.is_empty(), "not due yet");
    let job = q.store.get(&id).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(job.map(|j| j.status), Some(JobStatus::RetryScheduled));

    advance(Duration::from_millis(200)).await;
    let again = q.pass(&[]).await;
    assert_eq!(ids(&again), [id.as_str()], "due now");
    q.finish(
        again
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("claimed")),
        succeeded(FLIGHTS),
    )
    .await;
    let job = q.store.get(&id).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        job.map(|j| (j.status, j.attempts)),
        Some((JobStatus::Succeeded, 1)),
        "the refusal before any attempt did not count"
    );
}

#[tokio::test(start_paused = true)]
async fn a_tool_whose_breakers_are_all_open_is_not_claimed_until_one_admits_again() {
    let q = Queue::new(4);
    let flights = q.submit(FLIGHTS).await;
    let hotels = q.submit(HOTELS).await;
    let claimed = q.pass(&[FLIGHTS]).await;
    assert_eq!(
        ids(&claimed),
        [hotels.as_str()],
        "only the tool that admits"
    );
    advance(Duration::from_secs(60)).await;
    assert!(q.pass(&[FLIGHTS]).await.is_empty(), "still open");
    let claimed = q.pass(&[]).await;
    assert_eq!(ids(&claimed), [flights.as_str()], "half-open: claimed");
}

/// A half-open tool's jobs are claimed no more than its breakers have probes to start now:
/// the soak's hundreds of due jobs of a half-open tool were claimed in batches, all but one
/// refused ("its recovery probes are all in use") and requeued a few seconds later, a row
/// write each, for as long as the breaker stayed half-open.
#[tokio::test(start_paused = true)]
async fn a_half_open_tool_is_claimed_only_as_many_jobs_as_it_has_probes() {
    let q = Queue::new(16);
    for _ in 0..10 {
        q.submit(FLIGHTS).await;
    }
    let hotels = q.submit(HOTELS).await;
    let claimed = q.pass_rooms(&[(FLIGHTS, 1)]).await;
    let tools: Vec<&str> = claimed.iter().map(|c| c.job.tool.as_str()).collect();
    assert_eq!(claimed.len(), 2, "{tools:?}");
    assert!(tools.contains(&FLIGHTS) && ids(&claimed).contains(&hotels.as_str()));
    assert!(
        q.pass_rooms(&[(FLIGHTS, 0)]).await.is_empty(),
        "no probe due: nothing claimed"
    );
    assert_eq!(q.pass_rooms(&[(FLIGHTS, 2)]).await.len(), 2);
    assert_eq!(q.pass(&[]).await.len(), 7, "closed again: the rest");
}

#[tokio::test(start_paused = true)]
async fn no_more_jobs_are_claimed_than_there_are_free_workers() {
    let q = Queue::new(2);
    for _ in 0..3 {
        q.submit(FLIGHTS).await;
    }
    let running = q.pass(&[]).await;
    assert_eq!(running.len(), 2);
    assert!(q.pass(&[]).await.is_empty(), "both workers busy");
    drop(running);
    assert_eq!(q.pass(&[]).await.len(), 1, "workers free again");
}

#[tokio::test(start_paused = true)]
async fn after_a_429_a_tool_is_paced_to_the_learned_rate() {
    let q = Queue::new(16);
    let backlog = 12;
    for _ in 0..backlog {
        q.submit(FLIGHTS).await;
    }
    // The first window: four jobs succeed, then the provider answers 429 with a reset 4 s away.
    let mut claimed = q.pass(&[]).await;
    assert_eq!(
        claimed.len(),
        backlog,
        "nothing learned yet: every free worker"
    );
    advance(Duration::from_secs(2)).await;
    let rest = claimed.split_off(4);
    for c in claimed {
        q.finish(c, succeeded(FLIGHTS)).await;
    }
    let limited = rate_limited(Duration::from_secs(4));
    for c in rest {
        q.finish(c, limited.clone()).await;
    }
    // Learned: 4 jobs in the 6 s window up to the reset, times the safety margin. Until the
    // reset nothing is claimed, though eight jobs wait.
    advance(Duration::from_millis(3_900)).await;
    assert!(q.pass(&[]).await.is_empty(), "paused until the reset");
    // From the reset on, the jobs trickle out at the learned rate instead of all at once.
    advance(Duration::from_secs(2)).await;
    let mut total = 0;
    for _ in 0..12 {
        total += q.pass(&[]).await.len();
        advance(Duration::from_millis(500)).await;
    }
    assert!(
        (2..=6).contains(&total),
        "{total} claims in 6 s at about 0.63 jobs/s"
    );
}

/// A provider whose first answers are 429s (nothing learned) is probed by one job at the
/// reset, and only its answer lets every free worker claim again.
#[tokio::test(start_paused = true)]
async fn at_a_reset_with_no_limit_known_one_job_probes_before_the_workers_claim() {
    let q = Queue::new(4);
    for _ in 0..8 {
        q.submit(FLIGHTS).await;
    }
    let claimed = q.pass(&[]).await;
    assert_eq!(claimed.len(), 4, "nothing known: every free worker");
    for c in claimed {
        q.finish(c, rate_limited(Duration::from_secs(10))).await;
    }
    advance(Duration::from_millis(9_900)).await;
    assert!(q.pass(&[]).await.is_empty(), "paused until the reset");
    advance(Duration::from_millis(100)).await;
    let mut probe = q.pass(&[]).await;
    assert_eq!(probe.len(), 1, "one probe, not four workers at once");
    advance(Duration::from_millis(250)).await;
    assert!(q.pass(&[]).await.is_empty(), "the rest wait for its answer");
    q.finish(probe.remove(0), succeeded(FLIGHTS)).await;
    assert_eq!(
        q.pass(&[]).await.len(),
        3,
        "answered: unpaced, the three due jobs left go at once (the refused four wait out their \
         requeue delay)"
    );
}

/// A tool this replica does not serve (a rolling change of configuration, a tool a reload took
/// away) is left to the replicas that serve it, by the paced claims and the rest alike, even
/// with its lease run out; its jobs are claimed here only once they are 10 minutes past
/// `max_age`, and then end.
#[tokio::test(start_paused = true)]
async fn a_tool_not_served_here_is_left_to_others_until_its_jobs_are_past_max_age() {
    let q = Queue::new(8);
    let trains = q.submit(TRAINS).await;
    // A replica that serves it claimed it, then stopped: its lease runs out.
    let gone = q
        .store
        .claim("gone", clock::epoch_ms(), 1_000, 10, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ids_of(&gone), [trains.as_str()]);
    advance(Duration::from_secs(2)).await;
    let hotels = q.submit(HOTELS).await;
    let claimed = q.pass(&[]).await;
    assert_eq!(
        ids(&claimed),
        [hotels.as_str()],
        "not the unserved tool's job, though its lease ran out"
    );
    for c in claimed {
        q.finish(c, succeeded(HOTELS)).await;
    }

    // search_flights' provider answers one job and refuses the next with a 429: from its reset
    // on, its claims are paced.
    let done = q.submit(FLIGHTS).await;
    let limited = q.submit(FLIGHTS).await;
    let claimed = q.pass(&[]).await;
    assert_eq!(ids(&claimed), [done.as_str(), limited.as_str()]);
    advance(Duration::from_secs(1)).await;
    for c in claimed {
        let verdict = if c.job.id == done {
            succeeded(FLIGHTS)
        } else {
            rate_limited(Duration::from_secs(1))
        };
        q.finish(c, verdict).await;
    }
    advance(Duration::from_secs(30)).await;
    let paced = q.pass(&[]).await;
    assert_eq!(
        ids(&paced),
        [limited.as_str()],
        "the paced claim takes its tool's job, not the older one of the unserved tool"
    );
    for c in paced {
        q.finish(c, succeeded(FLIGHTS)).await;
    }

    // A replica that serves the tool has 10 minutes past max_age for the job's last attempt.
    advance(MAX_AGE + UNSERVED_GRACE - Duration::from_secs(40)).await;
    assert!(
        q.pass(&[]).await.is_empty(),
        "not yet 10 minutes past max_age"
    );
    advance(Duration::from_secs(10)).await;
    let claimed = q.pass(&[]).await;
    assert_eq!(
        ids(&claimed),
        [trains.as_str()],
        "10 minutes past max_age: claimed"
    );
    // Run here, it is not sent (`Gateway::run_background`), and its age ends it.
    let not_here = Verdict::Later {
        anchor: Some(Duration::from_secs(30)),
        error: "not run: tool search_trains is not served by this replica's configuration".into(),
        attempted: false,
        rate_limited: None,
    };
    for c in claimed {
        q.finish(c, not_here.clone()).await;
    }
    let job = q
        .store
        .get(&trains)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("the job"));
    assert_eq!(job.status, JobStatus::Dead, "{job:?}");
    let error = job.last_error.unwrap_or_default();
    assert!(
        error.starts_with("gave up after 1day 10m") && error.contains("not served"),
        "{error}"
    );
}

/// A provider's long `Retry-After` can put a job's last attempt past `max_age` and its 10 minutes
/// of grace. That attempt is left to the replicas that serve the tool: a replica that does not
/// claims the job only once it has been due for 10 minutes too.
#[tokio::test(start_paused = true)]
async fn a_last_attempt_put_past_max_age_by_a_retry_after_is_left_to_the_serving_replicas() {
    let q = Queue::new(8);
    let trains = q.submit(TRAINS).await;
    let there = q
        .store
        .claim("there", clock::epoch_ms(), 60_000, 10, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ids_of(&there), [trains.as_str()]);
    // The replica that serves it was told to come back in 20 minutes, just before max_age.
    advance(MAX_AGE - Duration::from_secs(60)).await;
    let retry_after = Duration::from_secs(20 * 60);
    let due_at = clock::epoch_ms() + i64::try_from(retry_after.as_millis()).unwrap_or(i64::MAX);
    let requeued = q
        .store
        .finish(
            &trains,
            "there",
            Transition::Retry {
                next_attempt_at_ms: due_at,
                error: "429 Too Many Requests".into(),
                attempted: true,
            },
            clock::epoch_ms(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(requeued);

    advance(retry_after).await;
    assert!(
        q.pass(&[]).await.is_empty(),
        "due, and 10 minutes past max_age, but a serving replica has not had its turn"
    );
    advance(UNSERVED_GRACE - Duration::from_secs(1)).await;
    assert!(q.pass(&[]).await.is_empty(), "due for not quite 10 minutes");
    advance(Duration::from_secs(2)).await;
    assert_eq!(
        ids(&q.pass(&[]).await),
        [trains.as_str()],
        "due for 10 minutes and no replica that serves it took it: claimed, to be ended"
    );
}

/// The breaker's probes go to the background jobs it refused: a refused job is due exactly at
/// the half-open instant (no growth, no jitter, whatever it drew), so at that instant the job
/// takes the first probe and an interactive caller is told to leave it to the job.
#[tokio::test(start_paused = true)]
async fn a_job_refused_by_an_open_breaker_is_due_at_the_half_open_instant_and_takes_the_probe() {
    use crate::breaker::{
        Breaker, BreakerConfig, BreakerKey, Caller, FailureReason, Outcome, PermitKind,
    };
    let config = BreakerConfig::builder()
        .jitter(0.0)
        .build()
        .unwrap_or_else(|e| panic!("{e:?}"));
    let (events, _) = tokio::sync::broadcast::channel(16);
    let breaker = Breaker::new(BreakerKey::new(FLIGHTS, "duffel"), config, events);
    for _ in 0..5 {
        let permit = breaker
            .try_acquire(clock::now())
            .unwrap_or_else(|e| panic!("{e}"));
        permit.record(Outcome::Failure(FailureReason::Timeout), clock::now());
    }
    let q = Queue::new(4);
    let id = q.submit(FLIGHTS).await;
    // The job has run before (one attempt), so growth and jitter would push it past the
    // half-open instant if they applied to a breaker's refusal.
    let mut claimed = q.pass(&[]).await;
    claimed[0].job.attempts = 1;
    let refused = breaker
        .try_acquire(clock::now())
        .expect_err("the breaker is open");
    let half_open = clock::now() + refused.retry_after;
    let verdict = Verdict::Later {
        anchor: Some(refused.retry_after),
        error: "duffel: breaker open".into(),
        attempted: false,
        rate_limited: None,
    };
    q.finish_jittered(claimed.remove(0), verdict, 0.99).await;

    tokio::time::advance(half_open - clock::now() - Duration::from_millis(1)).await;
    assert!(
        q.pass(&[]).await.is_empty(),
        "not due before the half-open instant"
    );
    tokio::time::advance(Duration::from_millis(1)).await;
    let now = clock::now();
    let due = q.pass(&[]).await;
    assert_eq!(ids(&due), [id.as_str()], "due at the half-open instant");
    let interactive = breaker.try_acquire_as(
        now,
        Caller::Interactive {
            background_due: true,
        },
    );
    assert!(interactive.is_err(), "the probe is left to the due job");
    let probe = breaker
        .try_acquire_as(now, Caller::Background)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(probe.kind(), PermitKind::Probe);
    probe.record(
        Outcome::Success {
            latency: Duration::from_millis(50),
        },
        now,
    );
}
