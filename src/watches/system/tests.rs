//! The watch loop on tokio's paused clock: the real [`WatchSystem`] and [`JobSystem`] loops over
//! a SQLite file, with a scripted provider behind the gateway's provider seam
//! ([`crate::call::Upstream`]), so a watch's runs, notices and waits are tested over virtual
//! hours without a socket.
//!
//! A SQL driver answers on its own threads, and a paused runtime with nothing to do would jump
//! its clock to the next timer meanwhile (a lease, a poll, a statement's bound). So each test
//! first holds the clock with a blocking task ([`Bench::hold`]; tokio does not auto-advance
//! while one runs), and then moves it on only itself, one loop poll at a time, giving the
//! store's threads real time to answer between steps. What the tests assert is what happened,
//! never how long it took: the provider plays a script one call at a time, so a run's answer
//! does not depend on when the run came.
//!
//! `tests/cap.rs` races creates and resumes against the client's cap, on real time.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{NewWatch, PACE, WatchSystem};
use crate::call::{Gateway, Upstream};
use crate::clients::{ClientName, ClientProfile, Directory, Roster, digest};
use crate::clock;
use crate::config::{self, EMBEDDED_CONFIG, EmbeddedFiles, JobsConfig, WatchesConfig};
use crate::jobs::{JobStatus, JobStore, JobSystem, Jobs, Store};
use crate::providers::{ErrorKind, UpstreamError};
use crate::store::Db;
use crate::telemetry::{AlertRules, Telemetry};
use crate::tools::{
    self, ToolOutput, ToolRequest, get_flight_status as status, search_flights as flights,
};
use crate::watches::{End, Notice, Watch, WatchState, WatchStore};

mod cap;
mod ends;

/// What the provider answers on one call.
#[derive(Debug, Clone)]
enum Answer {
    /// Flight offers at these prices (EUR).
    Prices(Vec<&'static str>),
    /// BA 117 from LHR, `delay` minutes late at `gate`.
    Flight { delay: u32, gate: &'static str },
    /// A refusal of the call as it stands (a 404: the offer has expired).
    Refused,
}

/// A provider that plays a script, one answer per call (the last one repeating), and fails
/// every call with a 503 while it is down.
#[derive(Debug)]
struct Scripted {
    answers: Mutex<VecDeque<Answer>>,
    down: AtomicBool,
    calls: AtomicU32,
}

impl Scripted {
    fn new(answers: impl IntoIterator<Item = Answer>) -> Arc<Self> {
        Arc::new(Scripted {
            answers: Mutex::new(answers.into_iter().collect()),
            down: AtomicBool::new(false),
            calls: AtomicU32::new(0),
        })
    }

    fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }

    fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    fn next(&self) -> Answer {
        let mut answers = self.answers.lock().expect("not poisoned");
        if answers.len() > 1 {
            answers.pop_front()
        } else {
            answers.front().cloned()
        }
        .expect("a script has an answer")
    }
}

impl Upstream for Scripted {
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
            if self.down.load(Ordering::SeqCst) {
                return Err(UpstreamError::new(
                    ErrorKind::Server {
                        status: 503,
                        retry_after: None,
                    },
                    "scripted outage",
                ));
            }
            match (request, self.next()) {
                (_, Answer::Refused) => Err(UpstreamError::new(
                    ErrorKind::Rejected {
                        message: "the offer does not exist any more".into(),
                    },
                    "404 offer_no_longer_available",
                )),
                (ToolRequest::SearchFlights(args), Answer::Prices(prices)) => {
                    Ok(offers(args, &prices))
                }
                (ToolRequest::GetFlightStatus(args), Answer::Flight { delay, gate }) => {
                    Ok(flight(args, delay, gate))
                }
                (request, answer) => panic!("the script answers {answer:?} to {request:?}"),
            }
        })
    }
}

fn offers(args: &flights::Args, prices: &[&str]) -> ToolOutput {
    let offers: Vec<flights::FlightOffer> = prices
        .iter()
        .enumerate()
        .map(|(i, price)| flights::FlightOffer {
            offer_id: format!("off_{i}"),
            total_amount: price.to_string(),
            total_currency: "EUR".into(),
            airline: flights::Airline {
                iata_code: "BA".into(),
                name: "British Airways".into(),
            },
            slices: vec![flights::FlightSlice {
                origin: args.origin.clone(),
                destination: args.destination.clone(),
                departing_at: format!("{}T08:15:00", args.departure_date),
                arriving_at: format!("{}T11:15:00", args.departure_date),
                duration_minutes: 480,
                stops: 0,
                flights: vec!["BA117".into()],
            }],
            expires_at: "2099-01-01T00:00:00Z".into(),
            bookable: true,
        })
        .collect();
    ToolOutput::SearchFlights(flights::Output {
        origin: args.origin.clone(),
        destination: args.destination.clone(),
        departure_date: args.departure_date.clone(),
        total_offers: offers.len() as u32,
        currencies: vec!["EUR".into()],
        offers,
    })
}

fn flight(args: &status::Args, delay: u32, gate: &str) -> ToolOutput {
    let date = &args.departure_date;
    let timing = |scheduled: String, delay: u32, gate: Option<&str>| status::Timing {
        latest: (delay > 0).then(|| format!("{scheduled} +{delay}min")),
        scheduled: Some(scheduled),
        delay_minutes: Some(delay),
        terminal: Some("5".into()),
        gate: gate.map(str::to_string),
    };
    ToolOutput::GetFlightStatus(status::Output {
        flights: vec![status::FlightStatus {
            carrier_code: args.carrier_code.clone(),
            flight_number: args.flight_number.clone(),
            scheduled_departure_date: date.clone(),
            points: vec![
                status::FlightPoint {
                    airport: "LHR".into(),
                    departure: Some(timing(format!("{date}T08:15+00:00"), delay, Some(gate))),
                    arrival: None,
                },
                status::FlightPoint {
                    airport: "JFK".into(),
                    departure: None,
                    arrival: Some(timing(format!("{date}T11:15-05:00"), delay, None)),
                },
            ],
        }],
    })
}

/// A travel date the argument checks accept.
fn date() -> String {
    (Gateway::today() + chrono::Duration::days(30)).to_string()
}

/// How often the test watches run.
const EVERY: Duration = Duration::from_secs(60);

/// One gateway with its job system and watch system running, on a SQLite file.
struct Bench {
    watches: Arc<WatchSystem>,
    /// The clients the runs are checked against: auth off (the local client may call
    /// everything) until a test replaces the roster.
    clients: Arc<Directory>,
    jobs: Jobs,
    shutdown: CancellationToken,
    /// The store's pool, to wait for its statements between steps.
    db: Db,
    /// Keeps tokio from moving the clock on while a statement runs on the driver's threads.
    _hold: Hold,
    _dir: tempfile::TempDir,
}

/// A blocking task that runs until dropped: while it runs, tokio's paused clock does not
/// auto-advance, so only the test moves it.
struct Hold(#[allow(dead_code)] std::sync::mpsc::Sender<()>);

impl Bench {
    fn hold() -> Hold {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        tokio::task::spawn_blocking(move || {
            // Ends when the sender is dropped.
            let _ = rx.recv();
        });
        Hold(tx)
    }

    async fn start(provider: Arc<Scripted>) -> Bench {
        let hold = Bench::hold();
        let dir = tempfile::tempdir().expect("a temporary directory");
        let db = Db::open_sqlite_file(&dir.path().join("watches.db"))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let store = Store::new(db.clone());
        store.migrate().await.unwrap_or_else(|e| panic!("{e}"));
        let (config, _) = config::load(&EmbeddedFiles, Path::new(EMBEDDED_CONFIG), &tools::names())
            .unwrap_or_else(|e| panic!("{e}"));
        let upstream = Arc::clone(&provider) as Arc<dyn Upstream>;
        let upstreams = [("duffel", &upstream), ("amadeus", &upstream)]
            .into_iter()
            .map(|(name, up)| (name.to_string(), Arc::clone(up)))
            .collect();
        let telemetry = Arc::new(Telemetry::new(AlertRules::spec()));
        let gateway = Arc::new(
            Gateway::new(&config, &upstreams, Arc::clone(&telemetry))
                .unwrap_or_else(|e| panic!("{e:?}")),
        );
        let jobs_config = JobsConfig {
            max_attempts: 50,
            max_age: Duration::from_secs(24 * 3600),
            workers: 2,
            lease_margin: Duration::from_secs(30),
        };
        let jobs = Arc::new(JobSystem::new(
            store,
            Arc::clone(&gateway),
            telemetry,
            jobs_config,
            Vec::new(),
            None,
        ));
        let clients = Arc::new(Directory::new(Roster::default()));
        gateway.check_clients_against(Arc::clone(&clients));
        let watches = Arc::new(WatchSystem::new(
            WatchStore::new(db.clone()),
            Arc::clone(&jobs),
            gateway,
            WatchesConfig {
                max_active_per_client: 5,
                min_interval: EVERY,
            },
            crate::jobs::callbacks::notice::NoticeSender::new(Vec::new(), None),
        ));
        let shutdown = CancellationToken::new();
        tokio::spawn(Arc::clone(&jobs).run(shutdown.clone(), Duration::from_secs(1)));
        tokio::spawn(Arc::clone(&watches).run(shutdown.clone()));
        Bench {
            watches,
            clients,
            jobs,
            shutdown,
            db,
            _hold: hold,
            _dir: dir,
        }
    }

    /// A watch on BA 117's status with `condition`.
    async fn watch_ba117(&self, condition: Value) -> Watch {
        let arguments =
            json!({"carrier_code": "BA", "flight_number": "117", "departure_date": date()});
        self.create("get_flight_status", arguments, condition).await
    }

    async fn create(&self, tool: &str, arguments: Value, condition: Value) -> Watch {
        self.watches
            .create(NewWatch {
                client: ClientName::local(),
                tool: tool.into(),
                arguments,
                every: EVERY,
                condition: Some(condition),
                end: End {
                    at_ms: None,
                    runs: None,
                    departure: false,
                },
                callback_url: None,
            })
            .await
            .unwrap_or_else(|e| panic!("{e:?}"))
    }

    async fn watch(&self, id: &str) -> Watch {
        self.watches
            .store()
            .get(id)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .expect("the watch exists")
    }

    /// Notices, oldest first, as their text.
    async fn news(&self, id: &str) -> Vec<String> {
        let notices: Vec<Notice> = self
            .watches
            .store()
            .notices(id, 100)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        notices.into_iter().rev().map(|n| n.text).collect()
    }

    /// Moves the clock on by one loop poll, then gives the store's threads real time to answer
    /// (the clock stays where it is meanwhile): 1 ms at a time until the pool has been quiet
    /// twice in a row. A fixed pause is not enough on a loaded machine: a run's statements then
    /// take longer than the pause, virtual time outruns them, and a run comes "late".
    async fn step(&self) {
        tokio::time::advance(PACE.busy).await;
        let mut quiet = 0;
        for _ in 0..2_000 {
            tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(1)))
                .await
                .expect("the pause ends");
            tokio::task::yield_now().await;
            quiet = if self.db.is_quiet() { quiet + 1 } else { 0 };
            if quiet == 2 {
                return;
            }
        }
    }

    /// Steps until `done` holds of watch `id`, for at most `within` of virtual time.
    async fn until(&self, id: &str, within: Duration, what: &str, done: impl Fn(&Watch) -> bool) {
        let start = tokio::time::Instant::now();
        loop {
            let watch = self.watch(id).await;
            if done(&watch) {
                return;
            }
            assert!(
                start.elapsed() < within,
                "{what} did not happen within {within:?}: {watch:?}"
            );
            self.step().await;
        }
    }

    /// Steps until watch `id` has recorded `runs` runs.
    async fn until_runs(&self, id: &str, runs: u32) {
        self.until(id, EVERY * (runs + 2), &format!("run {runs}"), |w| {
            w.runs >= runs
        })
        .await;
    }

    /// Steps through `span` of virtual time, asserting `check` of watch `id` after each step.
    async fn through(&self, id: &str, span: Duration, check: impl Fn(&Watch, &[String])) {
        let start = tokio::time::Instant::now();
        while start.elapsed() < span {
            self.step().await;
            check(&self.watch(id).await, &self.news(id).await);
        }
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

#[tokio::test(start_paused = true)]
async fn a_price_watch_fires_once_when_the_price_crosses_its_line() {
    let provider = Scripted::new(
        ["500.00", "450.00", "390.00", "380.00", "350.00"]
            .map(|p| Answer::Prices(vec![p, "900.00"])),
    );
    let bench = Bench::start(Arc::clone(&provider)).await;
    let arguments = json!({"origin": "LHR", "destination": "JFK", "departure_date": date()});
    let watch = bench
        .create(
            "search_flights",
            arguments,
            json!({"kind": "price_below", "amount": 400}),
        )
        .await;

    bench.until_runs(&watch.id, 2).await;
    assert_eq!(
        bench.news(&watch.id).await,
        Vec::<String>::new(),
        "above the line: no news"
    );

    // 390 crosses the line; 380 and 350 stay below it.
    bench.until_runs(&watch.id, 5).await;
    assert_eq!(
        bench.news(&watch.id).await,
        ["price fell below 400: now 390.00 EUR"],
        "one notice for one crossing"
    );
    let watch = bench.watch(&watch.id).await;
    assert_eq!(watch.last_error, None);
    assert_eq!(watch.state, WatchState::Active);
    assert!(provider.calls() >= 5);
}

#[tokio::test(start_paused = true)]
async fn a_status_watch_fires_on_a_delay_and_on_a_gate_change_and_not_on_unchanged_runs() {
    let script = [
        (0, "A1"),
        (0, "A1"),
        (45, "A1"),
        (45, "A1"),
        (45, "B7"),
        (45, "B7"),
    ]
    .map(|(delay, gate)| Answer::Flight { delay, gate });
    let bench = Bench::start(Scripted::new(script)).await;
    let watch = bench.watch_ba117(json!({"kind": "status_changed"})).await;

    bench.until_runs(&watch.id, 2).await;
    assert_eq!(
        bench.news(&watch.id).await,
        Vec::<String>::new(),
        "unchanged: no news"
    );
    bench.until_runs(&watch.id, 3).await;
    let news = bench.news(&watch.id).await;
    assert_eq!(news.len(), 1, "{news:?}");
    assert!(news[0].starts_with("status changed: "), "{news:?}");
    assert!(news[0].contains("45"), "the delay is told: {news:?}");
    bench.until_runs(&watch.id, 4).await;
    assert_eq!(
        bench.news(&watch.id).await.len(),
        1,
        "unchanged again: no news"
    );
    bench.until_runs(&watch.id, 6).await;
    let news = bench.news(&watch.id).await;
    assert_eq!(
        news.len(),
        2,
        "the gate change is news, the run after it is not: {news:?}"
    );
    assert!(news[1].contains("B7"), "the new gate is told: {news:?}");
    assert_eq!(bench.watch(&watch.id).await.last_error, None);
}

#[tokio::test(start_paused = true)]
async fn a_delay_watch_fires_when_the_delay_goes_over_its_line_and_a_gate_watch_on_a_new_gate() {
    // Calls alternate between the two watches' runs in no fixed order, so both read the same
    // flight: each step of the script is played twice.
    let script = [
        (10, "A1"),
        (10, "A1"),
        (45, "A1"),
        (45, "A1"),
        (90, "B7"),
        (90, "B7"),
    ]
    .map(|(delay, gate)| Answer::Flight { delay, gate });
    let bench = Bench::start(Scripted::new(script)).await;
    let arguments = json!({"carrier_code": "BA", "flight_number": "117", "departure_date": date()});
    let delay = bench
        .create(
            "get_flight_status",
            arguments.clone(),
            json!({"kind": "delay_over", "minutes": 30}),
        )
        .await;
    let gate = bench
        .create(
            "get_flight_status",
            arguments,
            json!({"kind": "gate_changed"}),
        )
        .await;

    for runs in 1..=4 {
        bench.until_runs(&delay.id, runs).await;
        bench.until_runs(&gate.id, runs).await;
    }
    let delay_news = bench.news(&delay.id).await;
    assert_eq!(
        delay_news.len(),
        1,
        "over 30 once, staying over is no news: {delay_news:?}"
    );
    assert!(
        delay_news[0].starts_with("delayed 45 min (over 30)"),
        "{delay_news:?}"
    );
    let gate_news = bench.news(&gate.id).await;
    assert_eq!(
        gate_news.len(),
        1,
        "a delay alone is no gate news: {gate_news:?}"
    );
    assert!(
        gate_news[0].starts_with("gate or terminal changed"),
        "{gate_news:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_outage_during_a_watch_is_silent_and_the_schedule_resumes_after_it() {
    let provider = Scripted::new([Answer::Prices(vec!["500.00"])]);
    let bench = Bench::start(Arc::clone(&provider)).await;
    let arguments = json!({"origin": "LHR", "destination": "JFK", "departure_date": date()});
    let watch = bench
        .create("search_flights", arguments, json!({"kind": "any_change"}))
        .await;
    let first = watch.next_run_at_ms;
    bench.until_runs(&watch.id, 1).await;

    provider.set_down(true);
    let calls = provider.calls();
    // Five intervals of outage: the run waits in the job queue, and the watch says nothing.
    bench
        .through(&watch.id, EVERY * 5, |w, news| {
            assert_eq!(w.runs, 1, "no run is recorded while the provider is down");
            assert_eq!(w.state, WatchState::Active);
            assert_eq!(w.last_error, None, "an outage is not an error of the watch");
            assert!(news.is_empty(), "an outage is no news: {news:?}");
        })
        .await;
    assert!(
        provider.calls() > calls,
        "the provider was asked during the outage"
    );
    let waiting = bench.watch(&watch.id).await;
    let (job_id, _) = waiting.job.clone().expect("a run waits for its provider");
    let job = bench
        .jobs
        .find(&job_id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .expect("the run's job exists")
        .job;
    assert!(
        matches!(job.status, JobStatus::RetryScheduled | JobStatus::Running),
        "the run's job waits, silently: {job:?}"
    );

    provider.set_down(false);
    bench.until_runs(&watch.id, 2).await;
    let resumed = bench.watch(&watch.id).await;
    assert_eq!(
        resumed.runs, 2,
        "the missed instants are skipped, not run in a burst"
    );
    assert_eq!(resumed.last_error, None);
    assert_eq!(
        bench.news(&watch.id).await,
        Vec::<String>::new(),
        "the same answer is no news"
    );
    let every = EVERY.as_millis() as i64;
    assert_eq!(
        (resumed.next_run_at_ms - first) % every,
        0,
        "the next run is back on the watch's grid"
    );
    // Not before now, as `Schedule::next` says: a run recorded exactly on an instant of the
    // grid (the loop looks on the job's due time since `store::pace`) has that instant next.
    assert!(
        resumed.next_run_at_ms >= clock::epoch_ms(),
        "and not in the past"
    );
    bench.until_runs(&watch.id, 3).await;
    assert_eq!(bench.watch(&watch.id).await.last_error, None);
}

#[tokio::test(start_paused = true)]
async fn a_watch_makes_no_run_while_its_client_may_not_call_its_tool() {
    let provider = Scripted::new([Answer::Flight {
        delay: 0,
        gate: "A1",
    }]);
    let bench = Bench::start(Arc::clone(&provider)).await;
    let watch = bench.watch_ba117(json!({"kind": "status_changed"})).await;
    bench.until_runs(&watch.id, 1).await;
    let calls = provider.calls();
    // Client keys turned on by a reload: the local client, whose watch this is (made while
    // auth was off), holds no key any more.
    let mut roster = Roster::default();
    let other = ClientName::configured("other").unwrap_or_else(|e| panic!("{e}"));
    roster
        .add_client(
            digest(b"other-key"),
            Arc::new(ClientProfile::unrestricted(other)),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    bench.clients.replace(roster);
    bench
        .until(&watch.id, EVERY * 3, "an instant to pass unrun", |w| {
            w.last_error
                .as_deref()
                .is_some_and(|e| e.contains("may no longer call get_flight_status"))
        })
        .await;
    bench
        .through(&watch.id, EVERY * 3, |w, _| {
            assert_eq!(w.runs, 1, "no run while the client may not call the tool");
            assert_eq!(w.state, WatchState::Active, "not ended: {w:?}");
        })
        .await;
    assert_eq!(provider.calls(), calls, "nothing reached the provider");
    // The reload reaches back (auth off again): the watch runs on.
    bench.clients.replace(Roster::default());
    bench.until_runs(&watch.id, 2).await;
}

/// An idle loop waits up to 2 s between looks (`store::pace`), and longer looks must not delay
/// what this replica was just asked for: a watch created while the loop waits runs at once, and
/// its next instant is taken when it falls due, not at the idle loop's next look.
#[tokio::test(start_paused = true)]
async fn a_watch_made_while_the_loop_is_idle_runs_at_once_and_then_on_its_grid() {
    let provider = Scripted::new([Answer::Flight {
        delay: 0,
        gate: "A1",
    }]);
    let bench = Bench::start(Arc::clone(&provider)).await;
    // Nothing to do for a while: the loop's looks are the idle ones now (one at 250 ms, then
    // every 2 s), the last a step ago, so without a wake the next would be 1.75 s away.
    for _ in 0..42 {
        bench.step().await;
    }
    let watch = bench.watch_ba117(json!({"kind": "status_changed"})).await;
    bench
        .until(&watch.id, PACE.busy * 3, "the first run", |w| w.runs >= 1)
        .await;
    // The second instant, EVERY after the first: taken within a busy look of it.
    let first = bench.watch(&watch.id).await;
    let second_due = first.next_run_at_ms;
    bench
        .until(&watch.id, EVERY + PACE.busy * 3, "the second run", |w| {
            w.runs >= 2
        })
        .await;
    let second = bench.watch(&watch.id).await;
    let started = second.last_run_at_ms.expect("the second run is recorded");
    assert!(
        started - second_due <= PACE.busy.as_millis() as i64 * 3,
        "the second run started {} ms after its instant",
        started - second_due
    );
}
