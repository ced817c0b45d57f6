//! A client holding its share of a tool on this replica, as the job system sees it: its queued
//! jobs of the tool wait in the queue untouched (not claimed, refused and written back pass
//! after pass), another client's job runs, and the waiting jobs run once the client lets go.
//!
//! The real gateway counts the share (its interactive calls hold the slots) and runs each
//! claimed job as a worker does (`Gateway::run_background`, then `Queue::finish`); each pass
//! sees the tools as the job system's loop does (`ToolState::of`).

use std::sync::atomic::{AtomicU32, Ordering};

use futures::future::BoxFuture;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::*;
use crate::call::{CallRequest, Gateway, Upstream};
use crate::clients::{ClientName, ToolShare};
use crate::config::{EMBEDDED_CONFIG, EmbeddedFiles};
use crate::jobs::dispatch::ToolState;
use crate::providers::UpstreamError;
use crate::telemetry::{AlertRules, Telemetry};
use crate::tools::{self, ToolOutput, ToolRequest, search_flights as flights};

/// A provider whose calls wait until it opens, then find no offers.
#[derive(Debug)]
struct Gated {
    open: watch::Sender<bool>,
    calls: AtomicU32,
}

impl Upstream for Gated {
    fn refuse(&self, _request: &ToolRequest) -> Option<UpstreamError> {
        None
    }

    fn call<'a>(
        &'a self,
        request: &'a ToolRequest,
        _timeout: Duration,
    ) -> BoxFuture<'a, Result<ToolOutput, UpstreamError>> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let _ = self.open.subscribe().wait_for(|open| *open).await;
            let ToolRequest::SearchFlights(args) = request else {
                panic!("a flight search: {request:?}");
            };
            Ok(ToolOutput::SearchFlights(flights::Output {
                origin: args.origin.clone(),
                destination: args.destination.clone(),
                departure_date: args.departure_date.clone(),
                total_offers: 0,
                currencies: Vec::new(),
                offers: Vec::new(),
            }))
        })
    }
}

/// A gateway whose `search_flights` has a bulkhead of 4, served by `duffel` alone, each client
/// held to half of it (2 slots); and its telemetry.
fn gateway(duffel: &Arc<Gated>) -> (Arc<Gateway>, Arc<Telemetry>) {
    let (mut config, _) = crate::config::load(
        &EmbeddedFiles,
        std::path::Path::new(EMBEDDED_CONFIG),
        &tools::names(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    for tool in &mut config.tools {
        if tool.name == FLIGHTS {
            tool.max_concurrent = 4;
        }
    }
    let upstreams = [(
        "duffel".to_string(),
        Arc::clone(duffel) as Arc<dyn Upstream>,
    )]
    .into();
    let telemetry = Arc::new(Telemetry::new(AlertRules::spec()));
    let gateway = Gateway::new(&config, &upstreams, Arc::clone(&telemetry))
        .unwrap_or_else(|e| panic!("{e:?}"));
    gateway.set_client_share(Some(ToolShare::HALF));
    (Arc::new(gateway), telemetry)
}

/// `client`'s search `days` out (searches on other days are other calls).
fn search(client: &str, days: i64) -> CallRequest {
    let date = Gateway::today() + chrono::Duration::days(days);
    CallRequest {
        tool: FLIGHTS.into(),
        arguments: json!({"origin": "LHR", "destination": "JFK", "departure_date": date.to_string()}),
        call_id: None,
        idempotency_key: None,
        deadline: None,
        client: ClientName::stored(client),
        trace: None,
    }
}

/// How many calls the share has refused, as `/metrics` shows it.
fn share_refusals(telemetry: &Telemetry) -> String {
    let series = "faregate_client_limited_total{limit=\"client_share_of_tool\"}";
    let metrics = telemetry.metrics().render();
    let line = metrics.lines().find(|l| l.starts_with(series));
    line.map_or_else(|| "none".into(), str::to_string)
}

impl Queue {
    /// Submits `client`'s search `days` out as a job; its id.
    async fn submit_search(&self, client: &str, days: i64) -> String {
        let call = search(client, days);
        let job = NewJob {
            tool: call.tool,
            arguments: call.arguments,
            call_id: None,
            client: call.client,
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

    /// One pass as the job system's loop makes it over `gateway`'s tools, each claimed job
    /// started on a task of its own as a worker runs it.
    async fn pass_over(&self, gateway: &Arc<Gateway>) -> Vec<(Claimed, JoinHandle<Verdict>)> {
        let due = self.store.due_tools(clock::epoch_ms()).await;
        let due = due.unwrap_or_else(|e| panic!("{e}"));
        let share = gateway.client_share();
        let now = tokio::time::Instant::now();
        let tools: Vec<ToolState> = gateway
            .tools()
            .iter()
            .map(|tool| ToolState::of(tool, share, now))
            .collect();
        let claimed = self
            .dispatcher
            .claim(&self.store, &tools, &due, &self.workers)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        claimed
            .into_iter()
            .map(|claim| {
                let gateway = Arc::clone(gateway);
                let job = &claim.job;
                let request = CallRequest {
                    tool: job.tool.clone(),
                    arguments: job.arguments.clone(),
                    call_id: Some(job.id.clone()),
                    idempotency_key: None,
                    deadline: None,
                    client: job.client.clone(),
                    trace: None,
                };
                let run = tokio::spawn(async move { gateway.run_background(request).await });
                (claim, run)
            })
            .collect()
    }
}

/// The job system's workers, as far as a test needs them: the runs started, ended as they
/// finish, and every job any pass claimed.
#[derive(Default)]
struct Workers {
    running: Vec<(Claimed, JoinHandle<Verdict>)>,
    claimed: Vec<String>,
}

impl Workers {
    /// Ends the runs that finished, as a worker writes a run's end, then makes a pass.
    async fn pass(&mut self, q: &Queue, gateway: &Arc<Gateway>) {
        let mut still = Vec::new();
        for (claim, run) in self.running.drain(..) {
            if run.is_finished() {
                let verdict = run.await.unwrap_or_else(|e| panic!("{e}"));
                q.finish(claim, verdict).await;
            } else {
                still.push((claim, run));
            }
        }
        self.running = still;
        for (claim, run) in q.pass_over(gateway).await {
            self.claimed.push(claim.job.id.clone());
            self.running.push((claim, run));
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_clients_jobs_wait_untouched_while_it_holds_its_share_and_run_once_it_lets_go() {
    let (open, _) = watch::channel(false);
    let duffel = Arc::new(Gated {
        open,
        calls: AtomicU32::new(0),
    });
    let (gateway, telemetry) = gateway(&duffel);
    let q = Queue::new(4);
    // acme holds both of its slots with two searches of its own, waiting on the provider.
    let held: Vec<JoinHandle<_>> = (30..32)
        .map(|days| {
            let gateway = Arc::clone(&gateway);
            tokio::spawn(async move { gateway.call(search("acme", days)).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(duffel.calls.load(Ordering::SeqCst), 2);
    let waiting = q.submit_search("acme", 40).await;
    let other = q.submit_search("globex", 41).await;
    let queued = q
        .store
        .get(&waiting)
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    // A pass every 250 ms for 3 s, three times the share's requeue wait: globex's job runs
    // (and waits on the provider); acme's is never taken.
    let mut workers = Workers::default();
    for _ in 0..12 {
        workers.pass(&q, &gateway).await;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(
        workers.claimed,
        std::slice::from_ref(&other),
        "only globex's job was claimed"
    );
    assert_eq!(duffel.calls.load(Ordering::SeqCst), 3);
    assert_eq!(
        q.store
            .get(&waiting)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
        queued,
        "acme's job is as it was queued: never claimed, refused or written back"
    );
    assert_eq!(
        share_refusals(&telemetry),
        "faregate_client_limited_total{limit=\"client_share_of_tool\"} 0",
        "nothing was refused for the share"
    );

    // The provider answers: acme's searches end and give their slots back, and its job runs.
    duffel.open.send_replace(true);
    for call in held {
        let answered = call.await.unwrap_or_else(|e| panic!("{e}"));
        assert!(answered.is_ok());
    }
    for _ in 0..4 {
        workers.pass(&q, &gateway).await;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(workers.claimed, [other.clone(), waiting.clone()]);
    assert!(workers.running.is_empty(), "both runs ended");
    for id in [&waiting, &other] {
        let done = q.store.get(id).await.unwrap_or_else(|e| panic!("{e}"));
        let done = done.unwrap_or_else(|| panic!("stored"));
        assert_eq!((done.status, done.attempts), (JobStatus::Succeeded, 1));
    }
    assert_eq!(duffel.calls.load(Ordering::SeqCst), 4);
    assert_eq!(
        share_refusals(&telemetry),
        "faregate_client_limited_total{limit=\"client_share_of_tool\"} 0"
    );
}

/// A backlog of a client that holds one of its two slots: a pass takes one of its jobs, not as
/// many as there are free workers (the rest would be refused and written back), and none while
/// that one runs.
#[tokio::test(start_paused = true)]
async fn a_pass_takes_no_more_of_a_clients_backlog_than_its_share_has_room_for() {
    let (open, _) = watch::channel(false);
    let duffel = Arc::new(Gated {
        open,
        calls: AtomicU32::new(0),
    });
    let (gateway, telemetry) = gateway(&duffel);
    let q = Queue::new(8);
    let held = {
        let gateway = Arc::clone(&gateway);
        tokio::spawn(async move { gateway.call(search("acme", 30)).await })
    };
    tokio::time::sleep(Duration::from_millis(1)).await;
    let mut backlog = Vec::new();
    for days in 40..45 {
        backlog.push(q.submit_search("acme", days).await);
    }
    let mut workers = Workers::default();
    for _ in 0..8 {
        workers.pass(&q, &gateway).await;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(
        workers.claimed,
        backlog[..1],
        "the oldest, in the one slot left"
    );
    assert_eq!(duffel.calls.load(Ordering::SeqCst), 2);
    assert_eq!(
        share_refusals(&telemetry),
        "faregate_client_limited_total{limit=\"client_share_of_tool\"} 0"
    );
    held.abort();
}
