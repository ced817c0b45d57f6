//! A reload of the served tools: calls in flight finish on the configuration they started
//! with, breakers of unchanged keys carry over with their state and history, remembered answers
//! carry over unless their provider left the chain, and so does the last read no provider
//! answered, removed tools disappear with their breakers, and a configuration with problems
//! changes nothing.

use super::*;
use crate::breaker::BreakerState;
use crate::call::envelope::Status;
use crate::call::gateway::CallRequest;

fn request(arguments: Value) -> CallRequest {
    CallRequest {
        tool: "search_flights".into(),
        arguments,
        call_id: None,
        idempotency_key: None,
        deadline: None,
        client: crate::clients::ClientName::local(),
        trace: None,
    }
}

/// `search_flights` arguments for a departure `days` from today (each its own read).
fn search_on(days: i64) -> Value {
    let date = Gateway::today() + chrono::Duration::days(days);
    json!({"origin": "LHR", "destination": "JFK", "departure_date": date.to_string()})
}

/// The shipped configuration with `edit` applied to `search_flights`.
fn with_search_flights(edit: impl FnOnce(&mut ToolConfig)) -> Config {
    let mut config = config();
    if let Some(tool) = config.tools.iter_mut().find(|t| t.name == "search_flights") {
        edit(tool);
    }
    config
}

fn reload(gateway: &Gateway, config: &Config) -> crate::call::ToolChanges {
    let prepared = gateway.prepare(config).unwrap_or_else(|e| panic!("{e:?}"));
    gateway.install(prepared)
}

#[tokio::test(start_paused = true)]
async fn a_call_in_flight_finishes_on_the_configuration_it_started_with() {
    let duffel = Scripted::new([ok(secs(5), flights()), ok(secs(5), flights())]);
    let gateway = gateway(&[("duffel", &duffel)]);
    let running = tokio::spawn({
        let gateway = Arc::clone(&gateway);
        async move { gateway.call(request(search_on(30))).await }
    });
    tokio::time::sleep(secs(1)).await;
    assert_eq!(duffel.calls(), 1, "the first call is at the provider");
    // From now on an attempt may take 2 s, and the whole call 3 s: the provider's 5 s are too
    // long for a new call, not for the one already running under the old 8 s.
    let changes = reload(
        &gateway,
        &with_search_flights(|t| {
            t.timeout = secs(2);
            t.deadline = secs(3);
        }),
    );
    assert_eq!(changes.changed, ["search_flights"], "{changes:?}");
    let first = running.await.expect("not panicked").expect("served");
    assert_eq!(first.status, Status::Ok, "{first:?}");
    let second = gateway.call(request(search_on(31))).await.expect("served");
    assert_eq!(second.status, Status::Unavailable, "{second:?}");
    assert_eq!(
        duffel.answered(),
        1,
        "the second call stopped waiting at 2 s"
    );
}

#[tokio::test(start_paused = true)]
async fn an_open_breaker_keeps_its_state_and_history_across_a_reload() {
    let malformed = || fail(ms(0), ErrorKind::Malformed);
    let duffel = Scripted::new((0..5).map(|_| malformed()));
    let gateway = gateway(&[("duffel", &duffel)]);
    for day in 0..5 {
        let env = gateway
            .call(request(search_on(30 + day)))
            .await
            .expect("served");
        assert_eq!(env.status, Status::Unavailable);
    }
    let before = gateway.tool("search_flights").expect("served").breakers()[0].clone();
    assert_eq!(before.state(Instant::now()), BreakerState::Open);
    tokio::time::sleep(secs(10)).await;
    // Another description and another breaker policy for the same tool × provider key.
    let changes = reload(
        &gateway,
        &with_search_flights(|t| {
            t.description = "Search flights (reloaded).".into();
            t.breaker = t
                .breaker
                .to_builder()
                .consecutive_failures(3)
                .build()
                .expect("valid");
        }),
    );
    assert_eq!(changes.changed, ["search_flights"], "{changes:?}");
    let after = gateway.tool("search_flights").expect("served");
    assert_eq!(after.config.description, "Search flights (reloaded).");
    let breaker = &after.breakers()[0];
    assert!(
        Arc::ptr_eq(breaker, &before),
        "the same breaker serves the key"
    );
    let snapshot = breaker.snapshot(Instant::now());
    assert_eq!(snapshot.state, BreakerState::Open);
    assert_eq!(snapshot.history.times_opened, 1);
    let env = gateway.call(request(search_on(40))).await.expect("served");
    assert_eq!(
        (env.status, env.breaker.as_str(), duffel.calls()),
        (Status::Unavailable, "open", 5),
        "still open: answered without asking the provider"
    );
}

#[tokio::test(start_paused = true)]
async fn removed_tools_go_with_their_breakers_and_come_back_fresh() {
    let duffel = Scripted::new([]);
    let gateway = gateway(&[("duffel", &duffel)]);
    let hotels = gateway.tool("search_hotels").expect("served").breakers()[0].clone();
    hotels.force(crate::breaker::ForceMode::Open, Instant::now());
    let mut without = config();
    without.tools.retain(|t| t.name != "search_hotels");
    let changes = reload(&gateway, &without);
    assert_eq!(
        (
            changes.added.len(),
            changes.removed.as_slice(),
            changes.changed.len()
        ),
        (0, ["search_hotels".to_string()].as_slice(), 0)
    );
    assert!(gateway.tool("search_hotels").is_none());
    assert!(
        gateway
            .breakers()
            .all()
            .iter()
            .all(|b| b.key().tool != "search_hotels"),
        "its breakers are forgotten"
    );
    let changes = reload(&gateway, &config());
    assert_eq!(changes.added, ["search_hotels"]);
    let back = gateway.tool("search_hotels").expect("served again");
    assert_eq!(
        back.breakers()[0].state(Instant::now()),
        BreakerState::Closed
    );
    assert!(changes.changed.is_empty() && changes.removed.is_empty());
}

#[tokio::test(start_paused = true)]
async fn calls_in_flight_still_count_against_an_unchanged_bulkhead() {
    let duffel = Scripted::new([Step::Hang]);
    let gateway = gateway(&[("duffel", &duffel)]);
    let _running = tokio::spawn({
        let gateway = Arc::clone(&gateway);
        async move { gateway.call(request(search_on(30))).await }
    });
    tokio::time::sleep(secs(1)).await;
    reload(
        &gateway,
        &with_search_flights(|t| t.description = "Other words.".into()),
    );
    let tool = gateway.tool("search_flights").expect("served");
    assert_eq!(
        tool.in_flight(),
        1,
        "the running call holds a slot of the same bulkhead"
    );
}

#[tokio::test(start_paused = true)]
async fn remembered_answers_outlast_a_reload_but_not_their_provider() {
    let duffel = Scripted::new([ok(ms(0), flights())]);
    let amadeus = Scripted::new([ok(ms(0), flights())]);
    let remembering = |t: &mut ToolConfig| t.fresh_for = secs(60);
    let telemetry = Arc::new(Telemetry::new(AlertRules::spec()));
    let gateway = Gateway::new(
        &with_search_flights(remembering),
        &upstreams(&[("duffel", &duffel), ("amadeus", &amadeus)]),
        telemetry,
    )
    .map(Arc::new)
    .unwrap_or_else(|e| panic!("{e:?}"));
    let first = gateway.call(request(search_on(30))).await.expect("served");
    assert_eq!(first.provider.as_deref(), Some("duffel"));

    reload(
        &gateway,
        &with_search_flights(|t| {
            remembering(t);
            t.description = "Other words.".into();
        }),
    );
    tokio::time::sleep(secs(1)).await;
    let repeat = gateway.call(request(search_on(30))).await.expect("served");
    assert_eq!(
        (repeat.cached_age_s, duffel.calls()),
        (Some(1), 1),
        "the same providers: answered from memory"
    );

    reload(
        &gateway,
        &with_search_flights(|t| {
            remembering(t);
            t.providers = vec!["amadeus".into()];
        }),
    );
    let after = gateway.call(request(search_on(30))).await.expect("served");
    assert_eq!(
        (after.cached_age_s, after.provider.as_deref()),
        (None, Some("amadeus")),
        "duffel is out of the chain, and so are its answers"
    );
    assert_eq!((duffel.calls(), amadeus.calls()), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn a_configuration_with_problems_changes_nothing() {
    let duffel = Scripted::new([]);
    let gateway = gateway(&[("duffel", &duffel)]);
    let mut broken = config();
    broken.tools.retain(|t| t.name != "search_hotels");
    let mut unknown = tool_config("search_flights");
    unknown.name = "search_trains".into();
    broken.tools.push(unknown);
    let problems = gateway.prepare(&broken).expect_err("an unknown tool");
    assert!(
        problems.iter().any(|p| p.contains("search_trains")),
        "{problems:?}"
    );
    assert!(
        gateway.tool("search_hotels").is_some(),
        "nothing was removed"
    );
    assert_eq!(gateway.tools_revision(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_shared_breaker_stays_open_for_the_tools_a_reload_adds_to_its_provider() {
    use crate::breaker::{BreakerKey, BreakerScope};
    let malformed = || fail(ms(0), ErrorKind::Malformed);
    let duffel = Scripted::new((0..5).map(|_| malformed()));
    let shared_scope = |mut config: Config| {
        config.breakers.scope = BreakerScope::Provider;
        config
    };
    let telemetry = Arc::new(Telemetry::new(AlertRules::spec()));
    let mut without_hotels = shared_scope(config());
    without_hotels.tools.retain(|t| t.name != "search_hotels");
    let gateway = Arc::new(
        Gateway::new(
            &without_hotels,
            &upstreams(&[("duffel", &duffel)]),
            telemetry,
        )
        .unwrap_or_else(|e| panic!("{e:?}")),
    );
    for day in 0..5 {
        gateway
            .call(request(search_on(30 + day)))
            .await
            .expect("served");
    }
    let shared = BreakerKey::shared("duffel");
    let open = gateway
        .breakers()
        .get(&shared)
        .expect("the provider's breaker");
    assert_eq!(open.state(Instant::now()), BreakerState::Open);

    let changes = reload(&gateway, &shared_scope(config()));
    assert_eq!(changes.added, ["search_hotels"]);
    let hotels = gateway.tool("search_hotels").expect("served");
    assert!(
        Arc::ptr_eq(&hotels.breakers()[0], &open),
        "guarded by the shared breaker"
    );
    assert_eq!(
        hotels.breakers()[0].state(Instant::now()),
        BreakerState::Open
    );
}

#[tokio::test(start_paused = true)]
async fn the_last_unanswered_read_outlasts_a_reload() {
    let failures = (0..8).map(|_| fail(ms(0), server_error()));
    let duffel = Scripted::new(failures);
    let gateway = gateway(&[("duffel", &duffel)]);
    let failed = gateway.call(request(search_on(30))).await.expect("served");
    assert_eq!(failed.status, Status::Unavailable, "{failed:?}");
    let kept = gateway.unanswered("search_flights");
    assert!(
        kept.as_deref().is_some_and(
            |k| k.contains(&(Gateway::today() + chrono::Duration::days(30)).to_string())
        ),
        "{kept:?}"
    );

    reload(
        &gateway,
        &with_search_flights(|t| t.description = "Other words.".into()),
    );
    assert_eq!(
        gateway.unanswered("search_flights"),
        kept,
        "a reload is no answer: still worth asking again"
    );
}
