//! Back-in-service notices on tokio's paused clock, over a SQLite file (and PostgreSQL when
//! `FAREGATE_TEST_POSTGRES_URL` is set): a notice fires once when its tool's breaker closes and
//! not while it is open, waits out a maintenance window, expires unfired, is fired by one of two
//! replicas sharing the store, and is refused when it could never be sent; `tests/asking.rs`
//! has the tools the loop asks again itself, and `tests/cap.rs` races requests against the
//! client's cap.
//!
//! The tests drive the system's look ([`BackInServiceSystem::fire_and_expire`]) by hand and
//! move the clock themselves; a blocking task holds the clock while the store answers on its own
//! threads (a paused runtime with nothing to do would otherwise jump to the pool's timeout).
//! Delivery is tested on real sockets in the integration tests.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use chrono::TimeDelta;
use futures::future::BoxFuture;
use reqwest::Url;
use tokio::time::Instant;

use super::{BackInServiceSystem, NewNotice, NoticeError};
use crate::back_in_service::{Notice, NoticeState, NoticeStore};
use crate::breaker::ForceMode;
use crate::call::{Gateway, Upstream};
use crate::clients::ClientName;
use crate::clock;
use crate::config::{self, EMBEDDED_CONFIG, EmbeddedFiles};
use crate::jobs::callbacks::notice::NoticeSender;
use crate::maintenance::{When, Window};
use crate::outbox::Outbox;
use crate::providers::UpstreamError;
use crate::secret::Secret;
use crate::store::Db;
use crate::telemetry::{AlertRules, Telemetry};
use crate::tools::{self, ToolOutput, ToolRequest};

mod asking;
mod cap;

const TOOL: &str = "search_flights";
const HOOK: &str = "http://127.0.0.1:9/hooks/back";

/// A provider nothing calls: these tests move breakers and windows, not calls.
#[derive(Debug)]
struct Idle;

impl Upstream for Idle {
    fn refuse(&self, _request: &ToolRequest) -> Option<UpstreamError> {
        None
    }

    fn call<'a>(
        &'a self,
        request: &'a ToolRequest,
        _timeout: Duration,
    ) -> BoxFuture<'a, Result<ToolOutput, UpstreamError>> {
        panic!("no call expected, got {request:?}")
    }
}

/// A blocking task that runs until dropped: while it runs, tokio's paused clock does not
/// auto-advance, so only the test moves it.
struct Hold(#[allow(dead_code)] std::sync::mpsc::Sender<()>);

fn hold() -> Hold {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    tokio::task::spawn_blocking(move || {
        let _ = rx.recv();
    });
    Hold(tx)
}

fn gateway(windows: Vec<Window>) -> Arc<Gateway> {
    gateway_over(windows, Arc::new(Idle))
}

/// A gateway whose providers are all `upstream`.
fn gateway_over(windows: Vec<Window>, upstream: Arc<dyn Upstream>) -> Arc<Gateway> {
    gateway_over_each(windows, [Arc::clone(&upstream), upstream])
}

/// The embedded configuration's gateway over `duffel` and `amadeus`, in that order.
fn gateway_over_each(
    windows: Vec<Window>,
    [duffel, amadeus]: [Arc<dyn Upstream>; 2],
) -> Arc<Gateway> {
    let (mut config, _) = config::load(&EmbeddedFiles, Path::new(EMBEDDED_CONFIG), &tools::names())
        .unwrap_or_else(|e| panic!("{e}"));
    config.maintenance = windows;
    let upstreams = [("duffel", duffel), ("amadeus", amadeus)]
        .into_iter()
        .map(|(name, upstream)| (name.to_string(), upstream))
        .collect();
    let telemetry = Arc::new(Telemetry::new(AlertRules::spec()));
    Arc::new(Gateway::new(&config, &upstreams, telemetry).unwrap_or_else(|e| panic!("{e:?}")))
}

fn system(db: &Db, gateway: &Arc<Gateway>) -> Arc<BackInServiceSystem> {
    let allowlist = vec![Url::parse("http://127.0.0.1:9/hooks/").expect("a URL")];
    Arc::new(BackInServiceSystem::new(
        NoticeStore::new(db.clone()),
        Arc::clone(gateway),
        NoticeSender::new(allowlist, Some(Secret::new("test-secret".to_string()))),
    ))
}

/// Every breaker of `tool` put in `mode`.
fn force(gateway: &Gateway, tool: &str, mode: ForceMode) {
    let served = gateway.tool(tool).expect("served");
    for breaker in served.breakers() {
        breaker.force(mode, Instant::now());
    }
}

async fn sqlite(dir: &tempfile::TempDir) -> Db {
    Db::open_sqlite_file(&dir.path().join("notices.db"))
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

fn new_notice(client: &str, expires_in: Option<Duration>) -> NewNotice {
    NewNotice {
        client: ClientName::configured(client).unwrap_or_else(|e| panic!("{e}")),
        tool: TOOL.into(),
        callback_url: HOOK.into(),
        expires_in,
    }
}

async fn reread(system: &BackInServiceSystem, notice: &Notice) -> Notice {
    system
        .store()
        .get(&notice.id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .expect("the notice is kept")
}

async fn look(system: &BackInServiceSystem) -> u64 {
    system
        .fire_and_expire()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .here
}

#[tokio::test(start_paused = true)]
async fn a_notice_fires_once_when_the_breakers_close_and_not_while_they_are_open() {
    let _hold = hold();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = sqlite(&dir).await;
    let gateway = gateway(Vec::new());
    let notices = system(&db, &gateway);
    force(&gateway, TOOL, ForceMode::Open);
    assert!(!notices.available_now(TOOL));

    let notice = notices
        .create(new_notice("agency", None))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(notice.state, NoticeState::Waiting);
    for _ in 0..6 {
        tokio::time::advance(Duration::from_secs(600)).await;
        assert_eq!(
            look(&notices).await,
            0,
            "nothing fires while the tool is down"
        );
    }
    let waiting = reread(&notices, &notice).await;
    assert_eq!(waiting.state, NoticeState::Waiting);
    assert_eq!(
        waiting.callback, None,
        "no callback before the tool is back"
    );

    // One provider's breaker back to closed is enough: the tool answers again.
    let duffel = gateway.tool(TOOL).expect("served").breakers()[0].clone();
    duffel.force(ForceMode::Auto, Instant::now());
    assert!(notices.available_now(TOOL));
    let back_at = clock::epoch_ms();
    assert_eq!(look(&notices).await, 1);
    let fired = reread(&notices, &notice).await;
    assert_eq!(fired.state, NoticeState::Fired);
    assert_eq!(fired.fired_at_ms, Some(back_at));
    assert_eq!(fired.callback.as_deref(), Some("pending"));
    let due = outbox(&notices)
        .await
        .due(clock::epoch_ms(), 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(due.len(), 1, "one callback due");

    // Open and closed again: a fired notice is done.
    force(&gateway, TOOL, ForceMode::Open);
    tokio::time::advance(Duration::from_secs(60)).await;
    force(&gateway, TOOL, ForceMode::Auto);
    assert_eq!(look(&notices).await, 0, "fired once, never again");
    assert_eq!(reread(&notices, &notice).await.fired_at_ms, Some(back_at));
}

#[tokio::test(start_paused = true)]
async fn a_notice_waits_out_a_maintenance_window_and_fires_at_its_end() {
    let _hold = hold();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = sqlite(&dir).await;
    let now = clock::utc_now();
    let end = now + TimeDelta::hours(1);
    let window = |provider: &str| Window {
        tool: TOOL.into(),
        provider: provider.into(),
        when: When::Once {
            start: now - TimeDelta::minutes(1),
            end,
        },
        reason: "the provider's announced upgrade".into(),
    };
    let gateway = gateway(vec![window("duffel"), window("amadeus")]);
    let notices = system(&db, &gateway);
    assert!(!notices.available_now(TOOL), "both providers are held");

    let notice = notices
        .create(new_notice("agency", None))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    tokio::time::advance(Duration::from_secs(59 * 60)).await;
    assert_eq!(look(&notices).await, 0, "a minute before the window ends");
    tokio::time::advance(Duration::from_secs(61)).await;
    assert_eq!(look(&notices).await, 1, "the window ended");
    let fired = reread(&notices, &notice).await;
    assert_eq!(fired.state, NoticeState::Fired);
    assert!(
        fired.fired_at_ms >= Some(end.timestamp_millis()),
        "{fired:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_notice_whose_tool_stays_down_expires_and_never_fires() {
    let _hold = hold();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = sqlite(&dir).await;
    let gateway = gateway(Vec::new());
    let notices = system(&db, &gateway);
    force(&gateway, TOOL, ForceMode::Open);
    let notice = notices
        .create(new_notice("agency", Some(Duration::from_secs(3600))))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));

    tokio::time::advance(Duration::from_secs(3600)).await;
    assert_eq!(look(&notices).await, 0);
    assert_eq!(reread(&notices, &notice).await.state, NoticeState::Expired);
    force(&gateway, TOOL, ForceMode::Auto);
    assert_eq!(look(&notices).await, 0, "an expired notice stays silent");
    let expired = reread(&notices, &notice).await;
    assert_eq!(expired.state, NoticeState::Expired);
    assert_eq!(expired.callback, None);
}

#[tokio::test(start_paused = true)]
async fn a_notice_that_could_never_be_sent_or_kept_is_refused_naming_the_fix() {
    let _hold = hold();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = sqlite(&dir).await;
    let notices = system(&db, &gateway(Vec::new()));
    let refused = |r: Result<Notice, NoticeError>| match r {
        Err(NoticeError::Invalid(text)) => text,
        other => panic!("expected a refusal, got {other:?}"),
    };

    let outside = notices
        .create(NewNotice {
            callback_url: "https://example.com/hooks".into(),
            ..new_notice("agency", None)
        })
        .await;
    assert!(refused(outside).contains("allowlist"));
    let never = notices
        .create(new_notice("agency", Some(Duration::ZERO)))
        .await;
    assert!(refused(never).contains("expires_in"));
    let too_long = notices
        .create(new_notice(
            "agency",
            Some(Duration::from_secs(8 * 24 * 3600)),
        ))
        .await;
    assert!(refused(too_long).contains("at most 7days"));
    let unsigned = BackInServiceSystem::new(
        NoticeStore::new(db.clone()),
        gateway(Vec::new()),
        NoticeSender::new(
            vec![Url::parse("http://127.0.0.1:9/hooks/").expect("a URL")],
            None,
        ),
    );
    assert!(refused(unsigned.create(new_notice("agency", None)).await).contains("secret"));
    let kept = notices
        .store()
        .list(None, 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(kept.is_empty(), "nothing refused is kept: {kept:?}");
}

/// One client's notices are its own: another client neither reads nor deletes them, and the
/// admin (no client) sees every one.
#[tokio::test(start_paused = true)]
async fn another_client_neither_sees_nor_deletes_a_notice() {
    let _hold = hold();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = sqlite(&dir).await;
    let notices = system(&db, &gateway(Vec::new()));
    let notice = notices
        .create(new_notice("agency", None))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let other = ClientName::configured("rival").unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(
        notices.own(&notice.id, Some(&other)).await,
        Err(NoticeError::NotFound)
    ));
    assert!(matches!(
        notices.delete(&notice.id, Some(&other)).await,
        Err(NoticeError::NotFound)
    ));
    let theirs = notices
        .store()
        .list(Some(&other), 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(theirs.is_empty());
    assert_eq!(
        notices
            .own(&notice.id, None)
            .await
            .unwrap_or_else(|e| panic!("{e:?}"))
            .id,
        notice.id
    );
    notices
        .delete(&notice.id, Some(&notice.client))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert!(matches!(
        notices.own(&notice.id, None).await,
        Err(NoticeError::NotFound)
    ));
}

/// The fired notices' callbacks of `system`'s store.
async fn outbox(system: &BackInServiceSystem) -> Outbox<Notice> {
    system
        .store()
        .callbacks()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Two replicas on one store both see the tool back: one fires the notice, the other changes
/// nothing; and one of them leases its callback.
async fn check_two_replicas_fire_once(db: Db) {
    let first_gateway = gateway(Vec::new());
    let second_gateway = gateway(Vec::new());
    let first = system(&db, &first_gateway);
    let second = system(&db, &second_gateway);
    force(&first_gateway, TOOL, ForceMode::Open);
    force(&second_gateway, TOOL, ForceMode::Open);
    let notice = first
        .create(new_notice("agency", None))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(look(&second).await, 0);
    force(&first_gateway, TOOL, ForceMode::Auto);
    force(&second_gateway, TOOL, ForceMode::Auto);
    let (a, b) = tokio::join!(look(&first), look(&second));
    assert_eq!(a + b, 1, "fired once between the two ({a} + {b})");
    let now = clock::epoch_ms();
    let due = outbox(&first)
        .await
        .due(now, 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(due.len(), 1);
    let until = clock::ms_after(now, Duration::from_secs(30));
    let leased_here = outbox(&first).await.lease(&due[0], until).await;
    let leased_there = outbox(&second).await.lease(&due[0], until).await;
    assert_eq!(
        (leased_here, leased_there),
        (Ok(true), Ok(false)),
        "one replica sends it"
    );
    assert_eq!(reread(&second, &notice).await.state, NoticeState::Fired);
}

#[tokio::test(start_paused = true)]
async fn two_replicas_on_one_store_fire_a_notice_once() {
    let _hold = hold();
    let dir = tempfile::tempdir().expect("a temporary directory");
    check_two_replicas_fire_once(sqlite(&dir).await).await;
    let Ok(url) = std::env::var("FAREGATE_TEST_POSTGRES_URL") else {
        eprintln!(
            "note: two_replicas_on_one_store_fire_a_notice_once: PostgreSQL half skipped, FAREGATE_TEST_POSTGRES_URL is not set (.ci/run sets it)"
        );
        return;
    };
    let schema = format!("fg_{}", uuid::Uuid::now_v7().simple());
    let db = Db::open_postgres(&url, Some(&schema))
        .await
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    check_two_replicas_fire_once(db).await;
}
