//! The fleet's count of opens and its outage's start, as the shared row keeps them: written
//! through the statements by "another replica" and this one, on a SQLite file.

use std::collections::HashSet;

use super::{GRACE, PEER, config, fleet, key};
use crate::breaker::{BreakerRegistry, BreakerState, ForceMode};
use crate::clock;
use crate::fleet::record::{AutoState, Payload, epoch_ms_of};
use crate::store::Arg;

fn open(at_ms: i64, for_ms: i64) -> AutoState {
    AutoState::Open {
        until_ms: at_ms + for_ms,
        ramp: true,
    }
}

/// The row's count and outage start, as a write's answer says them.
fn opens(row: Option<Payload>) -> (Option<i64>, Option<i64>) {
    let row = row.unwrap_or_else(|| panic!("the write was refused"));
    (row.times_opened, row.opened_at)
}

#[tokio::test]
async fn the_row_counts_each_open_of_the_fleet_once_and_keeps_when_its_outage_began() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let fleet = fleet(&dir).await;
    let (store, me) = (&fleet.store, fleet.replica.as_str());
    let t = clock::epoch_ms();
    let write = |auto: AutoState, at: i64, replica: &'static str| async move {
        let replica = if replica.is_empty() { me } else { replica };
        let row = store.set_auto(&key(), auto, at, replica, at, GRACE).await;
        opens(row.unwrap_or_else(|e| panic!("{e}")))
    };
    assert_eq!(write(open(t, 30_000), t, PEER).await, (Some(1), Some(t)));
    // This replica tripped at the same time, before it heard of the peer's open: one open.
    let together = write(open(t + 500, 30_000), t + 500, "").await;
    assert_eq!(
        together,
        (Some(1), Some(t)),
        "two replicas tripping together"
    );
    // The open ran out, the lease holder's probe failed: opened again, the same outage.
    let reopened = write(open(t + 31_000, 60_000), t + 31_000, PEER).await;
    assert_eq!(
        reopened,
        (Some(2), Some(t)),
        "a failed probe goes on with the outage"
    );
    // Its probes succeed: recovered, no outage to time.
    let recovered = AutoState::Recovered { ramp: true };
    assert_eq!(write(recovered, t + 92_000, PEER).await, (Some(2), None));
    // A new outage starts its own clock.
    let next = t + 100_000;
    assert_eq!(
        write(open(next, 30_000), next, "").await,
        (Some(3), Some(next))
    );
    // Half-open past the grace with no failed probe (no callers): the probe failing then is a
    // new outage, as the alert rules count it.
    let late = next + 30_000 + GRACE + 1;
    assert_eq!(
        write(open(late, 30_000), late, PEER).await,
        (Some(4), Some(late))
    );
    // An operator's force counts no open, ends the outage and keeps the count.
    let forced = store
        .force(&key(), ForceMode::Open, me, late + 1, late + 1)
        .await;
    assert_eq!(
        opens(forced.unwrap_or_else(|e| panic!("{e}"))),
        (Some(4), None)
    );
    let after = late + 2;
    let reopened = write(open(after, 30_000), after, PEER).await;
    assert_eq!(
        reopened,
        (Some(5), Some(after)),
        "after a force, a new outage"
    );
    let rows = store.all().await.unwrap_or_else(|e| panic!("{e}"));
    let read: Vec<_> = rows
        .iter()
        .map(|r| (r.times_opened, r.opened_at_ms))
        .collect();
    assert_eq!(
        read,
        [(Some(5), Some(after))],
        "every replica reads the same"
    );
}

#[tokio::test]
async fn a_row_an_older_replica_wrote_last_tells_no_outage_start() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let fleet = fleet(&dir).await;
    let store = &fleet.store;
    let t = clock::epoch_ms();
    let first = store
        .set_auto(&key(), open(t, 30_000), t, PEER, t, GRACE)
        .await;
    assert_eq!(
        opens(first.unwrap_or_else(|e| panic!("{e}"))),
        (Some(1), Some(t))
    );
    // A replica of the version before writes the row (its statement knows no count and no
    // outage start): the start it leaves may be an earlier outage's, so it is not told.
    let older = "UPDATE faregate_breakers SET version = version + 1, replica = 'replica-old',
                 open_until = $1 WHERE tool = $2 AND provider = $3";
    let args = [
        Arg::Int(Some(t + 40_000)),
        Arg::Text(Some("search_flights")),
        Arg::Text(Some("duffel")),
    ];
    store
        .db
        .execute(older, &args)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let read = store.one(&key()).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(opens(read), (Some(1), None));
    // This version's next open starts the clock there, rather than keep an unknown time.
    let at = t + 5_000;
    let next = store
        .set_auto(&key(), open(at, 30_000), at, PEER, at, GRACE)
        .await;
    assert_eq!(
        opens(next.unwrap_or_else(|e| panic!("{e}"))),
        (Some(1), Some(at))
    );
}

#[tokio::test]
async fn a_replica_that_reads_an_open_knows_when_the_fleets_outage_began() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let fleet = fleet(&dir).await;
    let breakers = BreakerRegistry::new(16);
    let breaker = breakers.get_or_insert(key(), config());
    // A peer opened 20 s ago, before this replica started, until 40 s from now.
    let t = clock::epoch_ms() - 20_000;
    let written = fleet
        .store
        .set_auto(&key(), open(t, 60_000), t, PEER, t, GRACE)
        .await;
    written.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fleet.rejecting_since(&key()), None, "not read yet");
    let read = fleet.catch_up(&breakers, &HashSet::new()).await;
    read.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(breaker.state(clock::now()), BreakerState::Open);
    let since = fleet.rejecting_since(&key()).map(epoch_ms_of);
    assert!(
        since.is_some_and(|ms| (ms - t).abs() <= 5),
        "the peer's open at {t}, not this replica's read: {since:?}"
    );
    // One node (SQLite) shows its own breaker's count; a fleet's is PostgreSQL's.
    assert_eq!(fleet.times_opened(&key()), None);
}

#[tokio::test]
async fn an_open_that_ran_out_past_the_grace_tells_no_outage() {
    // Half-open past the grace with no failed probe (no callers anywhere): the fleet's breaker
    // rejects nothing, so a replica that reads the row now has no outage to time, as the
    // replicas that watched it have none any more.
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let fleet = fleet(&dir).await;
    let breakers = BreakerRegistry::new(16);
    breakers.get_or_insert(key(), config());
    let t = clock::epoch_ms() - 30_000 - GRACE - 1_000;
    let written = fleet
        .store
        .set_auto(&key(), open(t, 30_000), t, PEER, t, GRACE)
        .await;
    written.unwrap_or_else(|e| panic!("{e}"));
    let read = fleet.catch_up(&breakers, &HashSet::new()).await;
    read.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fleet.rejecting_since(&key()), None);
}
