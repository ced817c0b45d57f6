//! Asking a tool again on tokio's paused clock, over a SQLite file: a tool nobody calls is asked
//! with the last read it could not answer and its notice fires, a tool no notice waits for is
//! not asked, a replica that saw no failure asks with the arguments another replica shared
//! through the store (and deletes them once the tool answers), and shared arguments whose date
//! has passed, or that nobody renewed for a day, are never asked.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::TimeDelta;
use futures::future::BoxFuture;
use tokio::time::Instant;

use super::{
    TOOL, gateway_over, gateway_over_each, hold, look, new_notice, reread, sqlite, system,
};
use crate::back_in_service::BackInServiceSystem;
use crate::back_in_service::asking::KEEP;
use crate::back_in_service::{Notice, NoticeState};
use crate::call::{CallRequest, Gateway, Upstream};
use crate::clients::ClientName;
use crate::clock;
use crate::providers::error::NOT_LISTED;
use crate::providers::{ErrorKind, UpstreamError};
use crate::tools::{ToolOutput, ToolRequest, search_flights};

/// A provider that fails every call until it is switched up, then answers each with an empty
/// flight list and keeps what it was asked.
#[derive(Debug, Default)]
struct Switch {
    up: AtomicBool,
    asked: Mutex<Vec<String>>,
}

impl Upstream for Switch {
    fn refuse(&self, _request: &ToolRequest) -> Option<UpstreamError> {
        None
    }

    fn call<'a>(
        &'a self,
        request: &'a ToolRequest,
        _timeout: Duration,
    ) -> BoxFuture<'a, Result<ToolOutput, UpstreamError>> {
        Box::pin(async move {
            if !self.up.load(Ordering::Relaxed) {
                let kind = ErrorKind::Server {
                    status: 503,
                    retry_after: None,
                };
                return Err(UpstreamError::new(kind, "down"));
            }
            self.asked
                .lock()
                .expect("unpoisoned")
                .push(format!("{request:?}"));
            Ok(ToolOutput::SearchFlights(search_flights::Output {
                origin: "LHR".into(),
                destination: "JFK".into(),
                departure_date: "2030-01-01".into(),
                offers: Vec::new(),
                total_offers: 0,
                currencies: Vec::new(),
            }))
        })
    }
}

/// `switch` down: searches for one route until the tool is unavailable (every breaker open);
/// the date searched for.
async fn search_until_down(gateway: &Arc<Gateway>) -> String {
    let date = (Gateway::today() + TimeDelta::days(30)).to_string();
    for _ in 0..20 {
        let call = CallRequest {
            tool: TOOL.into(),
            arguments: serde_json::json!({"origin": "LHR", "destination": "JFK", "departure_date": date}),
            call_id: None,
            idempotency_key: None,
            deadline: None,
            client: ClientName::local(),
            trace: None,
        };
        gateway.call(call).await.expect("a served tool");
        let tool = gateway.tool(TOOL).expect("served");
        if !gateway.is_available(&tool, Instant::now()) {
            return date;
        }
    }
    panic!("the breakers never opened");
}

/// Looks every half second for up to `limit`, until `notice` fires; whether it did.
async fn look_until_fired(system: &BackInServiceSystem, notice: &Notice, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        look(system).await;
        if reread(system, notice).await.state == NoticeState::Fired {
            return true;
        }
        tokio::time::advance(Duration::from_millis(500)).await;
        // The probes run on tasks of their own: let them.
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }
    false
}

/// Sets up a notice for the tool, brings the provider up and looks until the notice fires:
/// whether it did, and what the provider was asked meanwhile.
async fn fires_once_up(notices: &BackInServiceSystem, switch: &Switch) -> (bool, Vec<String>) {
    let notice = notices
        .create(new_notice("alpha", None))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    switch.up.store(true, Ordering::Relaxed);
    let fired = look_until_fired(notices, &notice, Duration::from_secs(180)).await;
    let asked = switch.asked.lock().expect("unpoisoned").clone();
    (fired, asked)
}

#[tokio::test(start_paused = true)]
async fn a_tool_nobody_calls_is_asked_again_and_its_notice_fires_when_the_provider_answers() {
    let switch = Arc::new(Switch::default());
    let gateway = gateway_over(Vec::new(), Arc::clone(&switch) as Arc<dyn Upstream>);
    // A traveller's searches fail until the tool is down (the clock runs on by itself here:
    // the retries wait, and no store is in play yet).
    let date = search_until_down(&gateway).await;
    let _hold = hold();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = sqlite(&dir).await;
    let notices = system(&db, &gateway);
    let (fired, asked) = fires_once_up(&notices, &switch).await;
    assert!(
        fired,
        "the notice fires without a caller: the gateway asked the tool again itself"
    );
    assert!(!asked.is_empty(), "the provider was asked again");
    assert!(
        asked.iter().all(|a| a.contains(&date) && a.contains("LHR")),
        "with the traveller's own search: {asked:?}"
    );
    assert!(
        asked.len() <= 4,
        "one probe at a time, only until the breaker closed: {asked:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_tool_no_notice_waits_for_is_not_asked_again() {
    let switch = Arc::new(Switch::default());
    let gateway = gateway_over(Vec::new(), Arc::clone(&switch) as Arc<dyn Upstream>);
    search_until_down(&gateway).await;
    let _hold = hold();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = sqlite(&dir).await;
    let notices = system(&db, &gateway);
    switch.up.store(true, Ordering::Relaxed);

    for _ in 0..240 {
        look(&notices).await;
        tokio::time::advance(Duration::from_millis(500)).await;
        tokio::task::yield_now().await;
    }
    assert!(
        switch.asked.lock().expect("unpoisoned").is_empty(),
        "a probe is a provider call: made only for a waiting notice"
    );
    let tool = gateway.tool(TOOL).expect("served");
    assert!(
        !gateway.is_available(&tool, Instant::now()),
        "still half-open, unasked"
    );
}

/// Every breaker of `gateway`'s `tool` half-open, as a replica that follows another's open
/// whose time has passed.
fn half_open(gateway: &Gateway) {
    let now = Instant::now();
    for breaker in gateway.tool(TOOL).expect("served").breakers() {
        breaker.follow_open(now, true, now);
    }
    assert!(gateway.would_probe(TOOL), "half-open");
}

#[tokio::test(start_paused = true)]
async fn a_replica_that_saw_no_failure_asks_with_the_arguments_another_shared() {
    let switch = Arc::new(Switch::default());
    // The replica that saw the traveller's searches fail.
    let first = gateway_over(Vec::new(), Arc::clone(&switch) as Arc<dyn Upstream>);
    let date = search_until_down(&first).await;
    let _hold = hold();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = sqlite(&dir).await;
    let first_notices = system(&db, &first);
    look(&first_notices).await;
    let reads = first_notices.store().unanswered_reads().clone();
    let shared = reads.get(TOOL, 0).await.expect("read");
    assert!(
        shared.as_deref().is_some_and(|a| a.contains(&date)),
        "shared while the tool is down, before any notice: {shared:?}"
    );
    // It goes away with what it kept; a replica that saw no failure follows the fleet's open
    // into half-open, and a notice is set up there.
    drop((first_notices, first));
    let second = gateway_over(Vec::new(), Arc::clone(&switch) as Arc<dyn Upstream>);
    half_open(&second);
    assert_eq!(
        second.unanswered(TOOL),
        None,
        "nothing of its own to ask with"
    );
    let notices = system(&db, &second);
    let (fired, asked) = fires_once_up(&notices, &switch).await;
    assert!(
        fired,
        "the notice fires: the second replica asked with the first one's arguments"
    );
    assert!(
        !asked.is_empty() && asked.iter().all(|a| a.contains(&date) && a.contains("LHR")),
        "with the traveller's own search: {asked:?}"
    );
    look(&notices).await;
    assert_eq!(
        reads.get(TOOL, 0).await.expect("read"),
        None,
        "the tool answers again: the row is deleted"
    );
}

#[tokio::test(start_paused = true)]
async fn shared_arguments_past_their_date_or_unrenewed_for_a_day_are_never_asked() {
    let switch = Arc::new(Switch::default());
    switch.up.store(true, Ordering::Relaxed);
    let gateway = gateway_over(Vec::new(), Arc::clone(&switch) as Arc<dyn Upstream>);
    let _hold = hold();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = sqlite(&dir).await;
    let notices = system(&db, &gateway);
    let reads = notices.store().unanswered_reads().clone();
    let search = |date: String| {
        serde_json::json!({"departure_date": date, "destination": "JFK", "origin": "LHR"})
            .to_string()
    };
    let past = search((Gateway::today() - TimeDelta::days(2)).to_string());
    reads
        .put(TOOL, &past, clock::epoch_ms())
        .await
        .expect("kept");
    half_open(&gateway);
    let notice = notices
        .create(new_notice("alpha", None))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));

    for _ in 0..4 {
        look(&notices).await;
        tokio::time::advance(Duration::from_millis(500)).await;
        tokio::task::yield_now().await;
    }
    assert_eq!(reads.get(TOOL, 0).await.expect("read"), None, "dropped");
    assert_eq!(gateway.unanswered(TOOL), None);

    // A future date, but nobody renewed the row for a day: not used.
    let future = search((Gateway::today() + TimeDelta::days(30)).to_string());
    let stale_ms = clock::epoch_ms() - KEEP.as_millis() as i64;
    reads.put(TOOL, &future, stale_ms).await.expect("kept");
    for _ in 0..4 {
        look(&notices).await;
        tokio::time::advance(Duration::from_millis(500)).await;
        tokio::task::yield_now().await;
    }
    assert_eq!(gateway.unanswered(TOOL), None, "too old to take");
    assert!(
        switch.asked.lock().expect("unpoisoned").is_empty(),
        "nothing was asked"
    );
    assert_eq!(reread(&notices, &notice).await.state, NoticeState::Waiting);
    assert_eq!(notices.asking.purge().await.expect("purged"), 1);
}

/// A backup that fails every call until it is switched to listing, then lists nothing for any
/// call (as a flight-status backup that knows only today's flights).
#[derive(Debug, Default)]
struct Backup {
    listing: AtomicBool,
    asked: Mutex<usize>,
}

impl Upstream for Backup {
    fn refuse(&self, _request: &ToolRequest) -> Option<UpstreamError> {
        None
    }

    fn call<'a>(
        &'a self,
        _request: &'a ToolRequest,
        _timeout: Duration,
    ) -> BoxFuture<'a, Result<ToolOutput, UpstreamError>> {
        Box::pin(async move {
            if !self.listing.load(Ordering::Relaxed) {
                let kind = ErrorKind::Server {
                    status: 503,
                    retry_after: None,
                };
                return Err(UpstreamError::new(kind, "down"));
            }
            *self.asked.lock().expect("unpoisoned") += 1;
            let kind = ErrorKind::Rejected {
                message: "no flights listed for that date".into(),
            };
            Err(UpstreamError::new(kind, NOT_LISTED))
        })
    }
}

/// A backup that half-opens first and lists nothing for the kept search does not make the
/// gateway forget it: it is a fine search the first provider answers, and the notice fires.
#[tokio::test(start_paused = true)]
async fn a_backup_that_lists_nothing_for_the_kept_search_does_not_end_the_asking() {
    let switch = Arc::new(Switch::default());
    let backup = Arc::new(Backup::default());
    let gateway = gateway_over_each(
        Vec::new(),
        [
            Arc::clone(&switch) as Arc<dyn Upstream>,
            Arc::clone(&backup) as Arc<dyn Upstream>,
        ],
    );
    let date = search_until_down(&gateway).await;
    // The first provider stays open a minute longer: the backup half-opens first.
    let tool = gateway.tool(TOOL).expect("served");
    let duffel = tool.breaker_on("duffel").expect("in the chain");
    duffel.follow_open(
        Instant::now() + Duration::from_secs(60),
        true,
        Instant::now(),
    );
    let _hold = hold();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = sqlite(&dir).await;
    let notices = system(&db, &gateway);
    backup.listing.store(true, Ordering::Relaxed);
    let (fired, asked) = fires_once_up(&notices, &switch).await;
    assert!(
        *backup.asked.lock().expect("unpoisoned") > 0,
        "the backup was asked first"
    );
    assert!(fired, "the notice fires");
    assert!(
        asked.iter().all(|a| a.contains(&date)),
        "the first provider, if asked, with the traveller's search: {asked:?}"
    );
}
