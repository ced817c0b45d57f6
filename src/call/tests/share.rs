//! A client's share of a tool's bulkhead: while several clients call, one holds at most its
//! share of a tool's slots; its call beyond it is refused as its own doing (`rejected`, naming
//! the limit; no provider asked, no breaker told), another client's call still goes through, a
//! job beyond it is requeued silently, and a read that joins an identical one in flight takes
//! no slot. With one client the bulkhead alone bounds it.

use futures::future::join_all;

use super::*;
use crate::call::answer::Verdict;
use crate::call::envelope::{Envelope, Status};
use crate::call::gateway::CallRequest;
use crate::clients::ToolShare;

/// A gateway whose `search_flights` has a bulkhead of 4 and is served by `duffel` alone, each
/// client held to half of it (2 slots) when `share` says so; and its telemetry.
fn gateway_of_four(duffel: &Arc<Scripted>, share: bool) -> (Arc<Gateway>, Arc<Telemetry>) {
    let mut config = config();
    for tool in &mut config.tools {
        if tool.name == "search_flights" {
            tool.max_concurrent = 4;
        }
    }
    let telemetry = Arc::new(Telemetry::new(AlertRules::spec()));
    let gateway = Gateway::new(
        &config,
        &upstreams(&[("duffel", duffel)]),
        Arc::clone(&telemetry),
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    gateway.set_client_share(share.then_some(ToolShare::HALF));
    (Arc::new(gateway), telemetry)
}

/// Starts `request` on a task of its own (it waits on a provider that hangs).
fn start(gateway: &Arc<Gateway>, request: CallRequest) -> tokio::task::JoinHandle<Envelope> {
    let gateway = Arc::clone(gateway);
    tokio::spawn(async move { gateway.call(request).await.expect("served") })
}

/// Two of acme's searches (its share of four slots), started and waiting on the provider.
async fn hold_acmes_share(gateway: &Arc<Gateway>) -> Vec<tokio::task::JoinHandle<Envelope>> {
    let held = (30..32)
        .map(|days| start(gateway, search_of("acme", days)))
        .collect();
    tokio::time::sleep(ms(1)).await;
    held
}

/// `series` as `/metrics` shows it now.
fn counted(telemetry: &Telemetry, series: &str) -> bool {
    telemetry.metrics().render().lines().any(|l| l == series)
}

#[tokio::test(start_paused = true)]
async fn a_client_at_its_share_is_refused_as_its_own_doing_and_another_client_is_not() {
    let duffel = Scripted::new([Step::Hang]);
    let (gateway, telemetry) = gateway_of_four(&duffel, true);
    let tool = gateway.tool("search_flights").expect("served");
    let held = hold_acmes_share(&gateway).await;
    assert_eq!(
        (duffel.calls(), tool.in_flight()),
        (2, 2),
        "acme holds its 2"
    );

    let refused = gateway.call(search_of("acme", 32)).await.expect("served");
    assert_eq!(refused.status, Status::Rejected, "{refused:?}");
    assert_eq!(refused.limit.as_deref(), Some("client_share_of_tool"));
    assert_eq!(refused.retry_after_s, Some(1));
    assert_eq!((refused.provider.as_deref(), refused.data), (None, None));
    assert_eq!(
        refused.content,
        "search_flights was not called: this client already has 2 search_flights calls in flight, its share of the tool's 4 concurrent calls ([limits] client_share_of_tool = 0.5), which keeps one client from taking the tool from the others. Nothing was sent to the provider, and the tool itself is not failing. Make fewer search_flights calls at once: wait for one to finish, then call again."
    );
    assert_eq!(duffel.calls(), 2, "nothing was sent");

    // Another client's call goes through: to the provider, where it waits.
    let other = start(&gateway, search_of("globex", 33));
    tokio::time::sleep(ms(1)).await;
    assert_eq!((duffel.calls(), tool.in_flight()), (3, 3));

    // Joining an identical read in flight takes no slot: acme's repeat of its own search, and
    // globex's of acme's, wait on the call in flight instead of being refused.
    let joined = [
        start(&gateway, search_of("acme", 30)),
        start(&gateway, search_of("globex", 31)),
    ];
    tokio::time::sleep(ms(1)).await;
    assert!(
        joined.iter().all(|j| !j.is_finished()),
        "both wait on the shared calls"
    );
    assert_eq!(duffel.calls(), 3, "joined, not asked again");

    // The breaker heard nothing: the client's doing, not the provider's.
    let snapshot = tool.breakers()[0].snapshot(Instant::now());
    assert_eq!(snapshot.state, crate::breaker::BreakerState::Closed);
    assert_eq!(snapshot.calls_in_window, 0);
    assert!(counted(
        &telemetry,
        "faregate_client_limited_total{limit=\"client_share_of_tool\"} 1"
    ));
    assert!(counted(
        &telemetry,
        "faregate_bulkhead_rejected_calls_total{tool=\"search_flights\"} 0"
    ));
    assert!(counted(
        &telemetry,
        "faregate_tool_calls_total{provider=\"none\",status=\"rejected\",tool=\"search_flights\"} 1"
    ));

    // A call that ends gives its slot back to its client: the search 30 days out, once both
    // its callers have gone.
    let [joined_30, joined_31] = joined;
    let [held_30, held_31]: [_; 2] = held.try_into().expect("two");
    for task in [held_30, joined_30] {
        task.abort();
        let _ = task.await;
    }
    tokio::task::yield_now().await;
    assert_eq!(tool.in_flight(), 2);
    let again = start(&gateway, search_of("acme", 34));
    tokio::time::sleep(ms(1)).await;
    assert_eq!(duffel.calls(), 4, "acme's slot came back");
    for task in [held_31, joined_31, other, again] {
        task.abort();
    }
}

/// A job of a client at its share: later, silently, no attempt counted and no anchor (its
/// requeue's own short wait), as when the tool's bulkhead is full; nothing sent.
#[tokio::test(start_paused = true)]
async fn a_job_of_a_client_at_its_share_is_requeued_without_an_attempt() {
    let duffel = Scripted::new([Step::Hang]);
    let (gateway, _) = gateway_of_four(&duffel, true);
    let held = hold_acmes_share(&gateway).await;
    let verdict = gateway.run_background(search_of("acme", 32)).await;
    let Verdict::Later {
        anchor: None,
        attempted: false,
        rate_limited: None,
        error,
    } = verdict
    else {
        panic!("later, no attempt: {verdict:?}");
    };
    assert_eq!(
        error,
        "not run: this job's client already had 2 search_flights calls in flight, its share of the tool ([limits] client_share_of_tool = 0.5); nothing was sent, and the job waits for one of them to finish"
    );
    assert_eq!(duffel.calls(), 2);
    // Another client's job runs (and waits on the provider here).
    let other = tokio::spawn({
        let gateway = Arc::clone(&gateway);
        async move { gateway.run_background(search_of("globex", 33)).await }
    });
    tokio::time::sleep(ms(1)).await;
    assert_eq!(duffel.calls(), 3);
    for task in held {
        task.abort();
    }
    other.abort();
}

/// Two identical reads that come together, the first of a client at its share: the first is
/// refused before it leads a shared call, so the second (another client's) leads its own and is
/// not handed the first one's refusal.
#[tokio::test(start_paused = true)]
async fn a_refused_read_hands_its_refusal_to_no_one_who_asked_the_same() {
    let duffel = Scripted::new([Step::Hang]);
    let (gateway, _) = gateway_of_four(&duffel, true);
    let held = hold_acmes_share(&gateway).await;
    // Both futures are polled before any task runs: the second would join a call the first
    // had started.
    let both = join_all([
        gateway.call(search_of("acme", 40)),
        gateway.call(search_of("globex", 40)),
    ]);
    let answered = tokio::time::timeout(ms(10), both).await;
    assert!(answered.is_err(), "globex's call waits on the provider");
    assert_eq!(duffel.calls(), 3, "globex's call was sent");
    let refused = gateway.call(search_of("acme", 41)).await.expect("served");
    assert_eq!(refused.limit.as_deref(), Some("client_share_of_tool"));
    for task in held {
        task.abort();
    }
}

/// With one client (the share not in force) the bulkhead alone bounds it: it may take every
/// slot, and the next call is the tool's `unavailable`, not a share's refusal.
#[tokio::test(start_paused = true)]
async fn one_client_is_bounded_by_the_bulkhead_alone() {
    let duffel = Scripted::new([Step::Hang]);
    let (gateway, telemetry) = gateway_of_four(&duffel, false);
    let held: Vec<_> = (30..34)
        .map(|days| start(&gateway, search_of("acme", days)))
        .collect();
    tokio::time::sleep(ms(1)).await;
    assert_eq!(duffel.calls(), 4, "all four slots");
    let full = gateway.call(search_of("acme", 34)).await.expect("served");
    assert_eq!((full.status, full.limit), (Status::Unavailable, None));
    assert!(counted(
        &telemetry,
        "faregate_bulkhead_rejected_calls_total{tool=\"search_flights\"} 1"
    ));
    assert!(counted(
        &telemetry,
        "faregate_client_limited_total{limit=\"client_share_of_tool\"} 0"
    ));
    for task in held {
        task.abort();
    }
}
