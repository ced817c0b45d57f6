//! Maintenance windows on tokio's paused clock: a window opens and closes on schedule, a key in
//! one is never asked, the model reads why and until when, and a job waits to the window's end.

use chrono::{DateTime, TimeDelta, Utc};

use super::*;
use crate::call::answer::Verdict;
use crate::call::envelope::Status;
use crate::call::gateway::CallRequest;
use crate::clock;
use crate::maintenance::{When, Window};

fn request(days_ahead: i64) -> CallRequest {
    let date = Gateway::today() + chrono::Duration::days(days_ahead);
    CallRequest {
        tool: "search_flights".into(),
        arguments: json!({"origin": "LHR", "destination": "JFK", "departure_date": date.to_string()}),
        call_id: None,
        idempotency_key: None,
        deadline: None,
        client: crate::clients::ClientName::local(),
        trace: None,
    }
}

fn window(provider: &str, start: DateTime<Utc>, end: DateTime<Utc>) -> Window {
    Window {
        reason: "the provider's announced upgrade".into(),
        ..window_for(provider, start, end, "")
    }
}

fn window_for(provider: &str, start: DateTime<Utc>, end: DateTime<Utc>, reason: &str) -> Window {
    Window {
        tool: "search_flights".into(),
        provider: provider.into(),
        when: When::Once { start, end },
        reason: reason.into(),
    }
}

/// A gateway over the shipped configuration plus `windows`, served by `providers`.
fn gateway_with(windows: Vec<Window>, providers: &[(&str, &Arc<Scripted>)]) -> Arc<Gateway> {
    observed_gateway_with(windows, providers).0
}

/// [`gateway_with`], and the telemetry it reports to.
fn observed_gateway_with(
    windows: Vec<Window>,
    providers: &[(&str, &Arc<Scripted>)],
) -> (Arc<Gateway>, Arc<Telemetry>) {
    let mut config = config();
    config.maintenance = windows;
    let telemetry = Arc::new(Telemetry::new(AlertRules::spec()));
    let gateway = Gateway::new(&config, &upstreams(providers), Arc::clone(&telemetry))
        .unwrap_or_else(|e| panic!("{e:?}"));
    (Arc::new(gateway), telemetry)
}

/// Both providers of `search_flights` have a window from 1 h to 2 h from now: before it the
/// call is answered, inside it no provider is asked and the model reads that it is scheduled
/// maintenance until the window's end, and after it the providers are asked again.
#[tokio::test(start_paused = true)]
async fn a_window_opens_and_closes_on_schedule_with_its_text() {
    let duffel = Scripted::new([ok(ms(50), flights())]);
    let amadeus = Scripted::new([ok(ms(50), flights())]);
    let now = clock::utc_now();
    let (start, end) = (now + TimeDelta::hours(1), now + TimeDelta::hours(2));
    let gateway = gateway_with(
        vec![window("duffel", start, end), window("amadeus", start, end)],
        &[("duffel", &duffel), ("amadeus", &amadeus)],
    );

    let tool = gateway.tool("search_flights").expect("served");
    assert!(gateway.is_available(&tool, Instant::now()));
    let before = gateway.call(request(30)).await.expect("served");
    assert_eq!(before.status, Status::Ok);
    assert_eq!(duffel.calls(), 1);

    tokio::time::advance(Duration::from_secs(3600)).await;
    let inside = gateway.call(request(31)).await.expect("served");
    assert_eq!(inside.status, Status::Unavailable, "{inside:?}");
    assert!(
        !gateway.is_available(&tool, Instant::now()),
        "not offered to other tools' fallbacks as working"
    );
    assert_eq!(
        (duffel.calls(), amadeus.calls()),
        (1, 0),
        "nobody was asked"
    );
    assert_eq!(inside.breaker, "forced_open");
    let until = crate::texts::call::utc_time(end);
    assert!(
        inside.content.contains("scheduled maintenance")
            && inside.content.contains(&until)
            && inside.content.contains("the provider's announced upgrade"),
        "{}",
        inside.content
    );
    // About an hour left (the paused clock moves only by what the test advanced, plus the
    // real milliseconds the test takes).
    let retry = inside.retry_after_s.expect("a retry estimate");
    assert!((3599..=3600).contains(&retry), "retry after {retry} s");

    let verdict = gateway.run_background(request(32)).await;
    let Verdict::Later {
        anchor: Some(anchor),
        attempted: false,
        error,
        ..
    } = verdict
    else {
        panic!("a job waits, unattempted: {verdict:?}");
    };
    assert!(
        anchor > secs(3598) && anchor <= secs(3600),
        "the job is anchored on the window's end: {anchor:?}"
    );
    assert!(error.contains("scheduled maintenance"), "{error}");
    assert_eq!((duffel.calls(), amadeus.calls()), (1, 0));

    tokio::time::advance(Duration::from_secs(3600)).await;
    let after = gateway.call(request(33)).await.expect("served");
    assert_eq!(after.status, Status::Ok);
    assert_eq!(duffel.calls(), 2, "the window closed by itself");
    assert!(gateway.is_available(&tool, Instant::now()));
}

/// A window holds one breaker key: the call fails over to the next provider of the chain, and
/// the other tools of the provider are not held.
#[tokio::test(start_paused = true)]
async fn a_window_holds_only_its_key_and_the_chain_fails_over() {
    let duffel = Scripted::new([ok(ms(50), flights())]);
    let amadeus = Scripted::new([ok(ms(50), flights())]);
    let now = clock::utc_now();
    let gateway = gateway_with(
        vec![window(
            "duffel",
            now - TimeDelta::minutes(1),
            now + TimeDelta::hours(1),
        )],
        &[("duffel", &duffel), ("amadeus", &amadeus)],
    );
    let env = gateway.call(request(30)).await.expect("served");
    assert_eq!(env.status, Status::Ok);
    assert_eq!(env.provider.as_deref(), Some("amadeus"));
    assert_eq!((duffel.calls(), amadeus.calls()), (0, 1));
}

/// Every provider of `search_flights` is held, duffel's window ending first (as a probe found:
/// duffel until 09:35, amadeus until 10:20): the model reads both windows and that the tool is
/// back when duffel's ends, with that wait as `retry_after_s`; a job waits for it too; and at
/// that time duffel answers.
#[tokio::test(start_paused = true)]
async fn a_tool_held_everywhere_is_back_when_its_first_window_ends() {
    let duffel = Scripted::new([ok(ms(50), flights())]);
    let amadeus = Scripted::new([ok(ms(50), flights())]);
    let now = clock::utc_now();
    let start = now - TimeDelta::minutes(1);
    let (duffel_end, amadeus_end) = (now + TimeDelta::minutes(10), now + TimeDelta::minutes(55));
    let gateway = gateway_with(
        vec![
            window_for("duffel", start, duffel_end, "Duffel's upgrade"),
            window_for("amadeus", start, amadeus_end, "Amadeus's upgrade"),
        ],
        &[("duffel", &duffel), ("amadeus", &amadeus)],
    );

    let held = gateway.call(request(30)).await.expect("served");
    assert_eq!(held.status, Status::Unavailable, "{held:?}");
    let (first, last) = (
        crate::texts::call::utc_time(duffel_end),
        crate::texts::call::utc_time(amadeus_end),
    );
    assert!(
        held.content.starts_with(&format!(
            "search_flights is down for scheduled maintenance: nothing is being asked of duffel until {first} (Duffel's upgrade) and amadeus until {last} (Amadeus's upgrade)."
        )),
        "{}",
        held.content
    );
    assert!(
        held.content
            .contains(&format!("search_flights should be back at {first};")),
        "{}",
        held.content
    );
    let retry = held.retry_after_s.expect("a retry estimate");
    assert!((599..=601).contains(&retry), "retry after {retry} s");

    let verdict = gateway.run_background(request(31)).await;
    let Verdict::Later {
        anchor: Some(anchor),
        error,
        ..
    } = verdict
    else {
        panic!("a job waits: {verdict:?}");
    };
    assert!(
        // (The paused clock's wall time is the real one shifted, so nanoseconds wander.)
        anchor > secs(598) && anchor < secs(601),
        "the job is anchored on the first window's end: {anchor:?}"
    );
    assert!(
        error.contains("duffel: scheduled maintenance")
            && error.contains("amadeus: scheduled maintenance")
            && error.ends_with(&format!("the job waits until {first}")),
        "{error}"
    );
    assert_eq!((duffel.calls(), amadeus.calls()), (0, 0));

    tokio::time::advance(secs(601)).await;
    let back = gateway.call(request(32)).await.expect("served");
    assert_eq!(back.status, Status::Ok, "{back:?}");
    assert_eq!(back.provider.as_deref(), Some("duffel"));
}

/// Only the last provider of the chain is held and the first fails otherwise: the tool is not
/// down for maintenance (duffel may answer again in seconds), so the model reads the tool's
/// fallback naming duffel as failing and amadeus as held, with duffel's wait, not the window's.
#[tokio::test(start_paused = true)]
async fn a_chain_held_only_in_part_answers_with_the_fallback() {
    let duffel = Scripted::new([fail(ms(50), server_error())]);
    let amadeus = Scripted::new([ok(ms(50), flights())]);
    let now = clock::utc_now();
    let gateway = gateway_with(
        vec![window(
            "amadeus",
            now - TimeDelta::minutes(1),
            now + TimeDelta::hours(1),
        )],
        &[("duffel", &duffel), ("amadeus", &amadeus)],
    );
    let env = gateway.call(request(30)).await.expect("served");
    assert_eq!(env.status, Status::Unavailable, "{env:?}");
    assert!(
        !env.content.contains("down for scheduled maintenance")
            && env
                .content
                .contains("no reliable answer is coming from duffel right")
            && env
                .content
                .contains("held for scheduled maintenance: amadeus until"),
        "{}",
        env.content
    );
    assert!(
        env.retry_after_s.is_some_and(|s| s < 60),
        "duffel's wait, not the window's: {:?}",
        env.retry_after_s
    );
    assert_eq!(env.provider.as_deref(), Some("duffel"));
    assert_eq!((duffel.calls(), amadeus.calls()), (1, 0));
}

/// A window holds duffel and amadeus is slow (an operator's probe: 15 s, past the 8 s timeout
/// and the 12 s deadline): the answer blames amadeus, which failed, with its breaker, and names
/// duffel apart as held, with its window's end, not as failing.
#[tokio::test(start_paused = true)]
async fn a_held_provider_is_named_as_held_and_the_failing_one_as_failing() {
    let duffel = Scripted::new([ok(ms(50), flights())]);
    let amadeus = Scripted::new([ok(secs(15), flights())]);
    let now = clock::utc_now();
    let end = now + TimeDelta::hours(1);
    let gateway = gateway_with(
        vec![window("duffel", now - TimeDelta::minutes(1), end)],
        &[("duffel", &duffel), ("amadeus", &amadeus)],
    );
    let env = gateway.call(request(30)).await.expect("served");
    assert_eq!(env.status, Status::Unavailable, "{env:?}");
    assert_eq!(env.provider.as_deref(), Some("amadeus"));
    assert_eq!((duffel.calls(), amadeus.calls()), (0, 2));
    assert!(
        env.content
            .contains("no reliable answer is coming from amadeus right now")
            && env.content.contains(&format!(
                "Not asked, held for scheduled maintenance: duffel until {} (the provider's announced upgrade).",
                crate::texts::call::utc_time(end)
            )),
        "{}",
        env.content
    );
}

/// The same, to a caller whose own deadline (11.9 s) passes before the chain's end: it stops
/// waiting on amadeus, so amadeus is the provider named, with its breaker, and duffel is named
/// as held, not as the provider that failed.
#[tokio::test(start_paused = true)]
async fn a_caller_that_stops_waiting_names_the_provider_it_waited_on() {
    let duffel = Scripted::new([ok(ms(50), flights())]);
    let amadeus = Scripted::new([ok(secs(15), flights())]);
    let now = clock::utc_now();
    let end = now + TimeDelta::hours(1);
    let gateway = gateway_with(
        vec![window("duffel", now - TimeDelta::minutes(1), end)],
        &[("duffel", &duffel), ("amadeus", &amadeus)],
    );
    let tool = gateway.tool("search_flights").expect("served");
    let amadeus_breaker = tool.breaker_on("amadeus").expect("in the chain");
    let env = gateway
        .call(CallRequest {
            deadline: Some(ms(11_900)),
            ..request(30)
        })
        .await
        .expect("served");
    assert_eq!(env.status, Status::Unavailable, "{env:?}");
    assert_eq!(env.provider.as_deref(), Some("amadeus"), "{env:?}");
    assert_eq!(env.breaker, amadeus_breaker.state(Instant::now()).as_str());
    assert!(
        env.content
            .contains("no reliable answer is coming from amadeus right now")
            && env
                .content
                .contains("held for scheduled maintenance: duffel until"),
        "{}",
        env.content
    );
}

/// While windows hold every provider of `search_flights`, Prometheus sees it: the keys' gauge
/// reads 1 (the other tools' 0), and the maintenance answer counts as a fallback of kind
/// `maintenance`, which the fallback-budget rules leave out, not `text`; no provider answered,
/// so the call's provider label is `none`.
#[tokio::test(start_paused = true)]
async fn maintenance_is_counted_apart_and_its_keys_read_held() {
    let duffel = Scripted::new([ok(ms(50), flights())]);
    let amadeus = Scripted::new([ok(ms(50), flights())]);
    let now = clock::utc_now();
    let (start, end) = (now - TimeDelta::minutes(1), now + TimeDelta::hours(1));
    let (gateway, telemetry) = observed_gateway_with(
        vec![window("duffel", start, end), window("amadeus", start, end)],
        &[("duffel", &duffel), ("amadeus", &amadeus)],
    );
    let env = gateway.call(request(30)).await.expect("served");
    assert_eq!(env.status, Status::Unavailable, "{env:?}");

    let keys = gateway.maintenance_now();
    let keys: Vec<(&str, &str, bool)> = keys.iter().map(|(t, p, h)| (*t, p.as_str(), *h)).collect();
    telemetry.metrics().set_maintenance_active(&keys);
    let text = telemetry.metrics().render();
    for expected in [
        "faregate_maintenance_active{provider=\"duffel\",tool=\"search_flights\"} 1",
        "faregate_maintenance_active{provider=\"amadeus\",tool=\"search_flights\"} 1",
        "faregate_maintenance_active{provider=\"duffel\",tool=\"search_hotels\"} 0",
        "faregate_fallbacks_total{kind=\"maintenance\",tool=\"search_flights\"} 1",
        "faregate_fallbacks_total{kind=\"text\",tool=\"search_flights\"} 0",
        "faregate_tool_calls_total{provider=\"none\",status=\"unavailable\",tool=\"search_flights\"} 1",
    ] {
        assert!(text.contains(expected), "{expected} in\n{text}");
    }
}

/// A window holds duffel for 51 s more and amadeus's breaker is open for 148 s: a background
/// job comes back when the window ends (duffel answers then), not when amadeus's breaker would
/// admit it.
#[tokio::test(start_paused = true)]
async fn a_job_beside_a_window_comes_back_at_the_chains_soonest() {
    let duffel = Scripted::new([ok(ms(50), flights())]);
    let amadeus = Scripted::new([ok(ms(50), flights())]);
    let now = clock::utc_now();
    let gateway = gateway_with(
        vec![window(
            "duffel",
            now - TimeDelta::minutes(1),
            now + TimeDelta::seconds(51),
        )],
        &[("duffel", &duffel), ("amadeus", &amadeus)],
    );
    let tool = gateway.tool("search_flights").expect("served");
    let at = Instant::now();
    tool.breaker_on("amadeus")
        .expect("in the chain")
        .follow_open(at + secs(148), true, at);
    let verdict = gateway.run_background(request(30)).await;
    let Verdict::Later {
        anchor: Some(anchor),
        ..
    } = verdict
    else {
        panic!("later, anchored: {verdict:?}");
    };
    assert!(
        anchor > secs(49) && anchor < secs(52),
        "anchored on duffel's window end, the chain's soonest: {anchor:?}"
    );
    assert_eq!((duffel.calls(), amadeus.calls()), (0, 0));
}
