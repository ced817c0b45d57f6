//! The ledger's rules against SQLite and, when `FAREGATE_TEST_POSTGRES_URL` is set, PostgreSQL
//! (each test in its own schema; without it the PostgreSQL half says so on stderr).

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::store::Db;

const T0: i64 = 1_800_000_000_000;
const SETTLE: Duration = Duration::from_secs(120);

async fn ledgers(test: &str) -> (Vec<Ledger>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let url = format!("sqlite://{}", dir.path().join("ledger.db").display());
    let sqlite = Db::open(&url).await.unwrap_or_else(|e| panic!("{e}"));
    let mut all = vec![Ledger::new(sqlite, SETTLE)];
    match std::env::var("FAREGATE_TEST_POSTGRES_URL") {
        Ok(url) => {
            let schema = format!("fg_{}", uuid::Uuid::now_v7().simple());
            let pg = Db::open_postgres(&url, Some(&schema))
                .await
                .unwrap_or_else(|e| panic!("{url}: {e}"));
            all.push(Ledger::new(pg, SETTLE));
        }
        Err(_) => eprintln!(
            "note: {test}: PostgreSQL half skipped, FAREGATE_TEST_POSTGRES_URL is not set (.ci/run sets it)"
        ),
    }
    (all, dir)
}

fn new<'a>(client: &'a str, key: &'a str, digest: &'a str) -> NewEntry<'a> {
    NewEntry {
        client,
        idempotency_key: key,
        tool: "book_flight",
        digest,
    }
}

fn booked() -> Outcome {
    Outcome::Booked {
        provider: "duffel".into(),
        order_id: "ord_1".into(),
        booking_reference: "ABC123".into(),
        amount: "812.40".into(),
        currency: "USD".into(),
    }
}

#[test]
fn the_digest_ignores_key_order_and_tells_tools_and_arguments_apart() {
    let a = arguments_digest(
        "book_flight",
        &json!({"offer_id": "off_1", "travellers": [1]}),
    );
    let b = arguments_digest(
        "book_flight",
        &json!({"travellers": [1], "offer_id": "off_1"}),
    );
    assert_eq!(a, b);
    assert_eq!(a.len(), 64);
    assert_ne!(
        a,
        arguments_digest(
            "book_hotel",
            &json!({"offer_id": "off_1", "travellers": [1]})
        )
    );
    assert_ne!(
        a,
        arguments_digest(
            "book_flight",
            &json!({"offer_id": "off_2", "travellers": [1]})
        )
    );
}

#[tokio::test]
async fn a_key_books_once_and_then_answers_with_its_entry() {
    let (all, _dir) = ledgers("a_key_books_once_and_then_answers_with_its_entry").await;
    for ledger in all {
        assert_eq!(ledger.begin(&new("a", "k1", "d1"), T0).await, Ok(Begin::Go));
        let again = ledger.begin(&new("a", "k1", "d1"), T0 + 1).await;
        assert!(
            matches!(&again, Ok(Begin::Recorded(e)) if e.state == State::Pending),
            "{again:?}"
        );
        assert_eq!(ledger.finish("a", "k1", &booked(), T0 + 2).await, Ok(true));
        let Ok(Begin::Recorded(entry)) = ledger.begin(&new("a", "k1", "d1"), T0 + 3).await else {
            panic!("recorded");
        };
        assert_eq!(entry.state, State::Booked);
        assert_eq!(entry.order_id.as_deref(), Some("ord_1"));
        assert_eq!(entry.amount.as_deref(), Some("812.40"));
        // A final outcome is never overwritten.
        let late = Outcome::Failed {
            provider: None,
            reason: "late".into(),
        };
        assert_eq!(ledger.finish("a", "k1", &late, T0 + 4).await, Ok(false));
        // Another client's key is its own.
        assert_eq!(ledger.begin(&new("b", "k1", "d1"), T0).await, Ok(Begin::Go));
    }
}

#[tokio::test]
async fn other_arguments_under_a_used_key_conflict() {
    let (all, _dir) = ledgers("other_arguments_under_a_used_key_conflict").await;
    for ledger in all {
        assert_eq!(ledger.begin(&new("a", "k1", "d1"), T0).await, Ok(Begin::Go));
        let other = ledger.begin(&new("a", "k1", "d2"), T0 + 1).await;
        assert!(matches!(other, Ok(Begin::Conflict(e)) if e.digest == "d1"));
    }
}

#[tokio::test]
async fn a_failed_booking_may_go_again_with_the_same_arguments_only() {
    let (all, _dir) = ledgers("a_failed_booking_may_go_again_with_the_same_arguments_only").await;
    for ledger in all {
        assert_eq!(ledger.begin(&new("a", "k1", "d1"), T0).await, Ok(Begin::Go));
        let failed = Outcome::Failed {
            provider: Some("duffel".into()),
            reason: "upstream_5xx".into(),
        };
        assert_eq!(ledger.finish("a", "k1", &failed, T0 + 1).await, Ok(true));
        assert!(matches!(
            ledger.begin(&new("a", "k1", "d2"), T0 + 2).await,
            Ok(Begin::Conflict(_))
        ));
        assert_eq!(
            ledger.begin(&new("a", "k1", "d1"), T0 + 2).await,
            Ok(Begin::Go)
        );
        let entry = ledger.get("a", "k1", T0 + 3).await.ok().flatten();
        assert_eq!(entry.map(|e| e.state), Some(State::Pending));
    }
}

#[tokio::test]
async fn a_stale_reconciliation_never_overwrites_a_booking_tried_again() {
    let (all, _dir) =
        ledgers("a_stale_reconciliation_never_overwrites_a_booking_tried_again").await;
    let settle = i64::try_from(SETTLE.as_millis()).unwrap_or(0);
    let not_found = Outcome::Failed {
        provider: Some("duffel".into()),
        reason: "reconciled: the provider holds no order under this key".into(),
    };
    for ledger in all {
        assert_eq!(ledger.begin(&new("a", "k", "d"), T0).await, Ok(Begin::Go));
        let unknown = Outcome::Unknown {
            provider: "duffel".into(),
            reason: "timeout".into(),
        };
        assert_eq!(ledger.finish("a", "k", &unknown, T0).await, Ok(true));
        // Two replicas read the entry for reconciliation.
        let later = T0 + settle;
        let read = ledger.unresolved(later, 10).await.unwrap_or_default();
        let (first, second) = match read.as_slice() {
            [entry] => (entry.clone(), entry.clone()),
            other => panic!("one entry to reconcile, not {other:?}"),
        };
        assert_eq!(
            ledger.settle_read(&first, &not_found, later + 1).await,
            Ok(true)
        );
        // The client tries the key again: a new attempt is on its way.
        assert_eq!(
            ledger.begin(&new("a", "k", "d"), later + 2).await,
            Ok(Begin::Go)
        );
        assert_eq!(
            ledger.settle_read(&second, &not_found, later + 3).await,
            Ok(false),
            "the second replica read the entry before it changed"
        );
        let entry = ledger.get("a", "k", later + 4).await.ok().flatten();
        assert_eq!(entry.map(|e| e.state), Some(State::Pending));
        assert_eq!(
            ledger.finish("a", "k", &booked(), later + 5).await,
            Ok(true)
        );
        let entry = ledger.get("a", "k", later + 6).await.ok().flatten();
        assert_eq!(entry.map(|e| e.state), Some(State::Booked));
    }
}

#[tokio::test]
async fn an_order_the_provider_confirmed_is_booked_even_over_a_failed_entry() {
    let (all, _dir) =
        ledgers("an_order_the_provider_confirmed_is_booked_even_over_a_failed_entry").await;
    for ledger in all {
        assert_eq!(ledger.begin(&new("a", "k", "d"), T0).await, Ok(Begin::Go));
        let failed = Outcome::Failed {
            provider: Some("duffel".into()),
            reason: "reconciled: the provider holds no order under this key".into(),
        };
        assert_eq!(ledger.finish("a", "k", &failed, T0 + 1).await, Ok(true));
        assert_eq!(ledger.finish("a", "k", &booked(), T0 + 2).await, Ok(true));
        let entry = ledger.get("a", "k", T0 + 3).await.ok().flatten();
        assert_eq!(
            entry.map(|e| (e.state, e.order_id)),
            Some((State::Booked, Some("ord_1".to_string())))
        );
        let unknown = Outcome::Unknown {
            provider: "duffel".into(),
            reason: "timeout".into(),
        };
        assert_eq!(
            ledger.finish("a", "k", &unknown, T0 + 4).await,
            Ok(false),
            "booked is final"
        );
        assert_eq!(
            ledger.finish("a", "k", &failed, T0 + 5).await,
            Ok(false),
            "booked is final"
        );
    }
}

#[tokio::test]
async fn unknown_and_unsettled_entries_are_listed_for_reconciliation() {
    let (all, _dir) = ledgers("unknown_and_unsettled_entries_are_listed_for_reconciliation").await;
    let settle = i64::try_from(SETTLE.as_millis()).unwrap_or(0);
    for ledger in all {
        for key in ["pending", "unknown", "booked"] {
            assert_eq!(ledger.begin(&new("a", key, "d"), T0).await, Ok(Begin::Go));
        }
        let unknown = Outcome::Unknown {
            provider: "duffel".into(),
            reason: "timeout".into(),
        };
        assert_eq!(ledger.finish("a", "unknown", &unknown, T0).await, Ok(true));
        assert_eq!(ledger.finish("a", "booked", &booked(), T0).await, Ok(true));
        let keys = |entries: Vec<Entry>| -> Vec<(String, State)> {
            entries
                .into_iter()
                .map(|e| (e.idempotency_key, e.state))
                .collect()
        };
        let now = keys(ledger.unresolved(T0 + 1, 10).await.unwrap_or_default());
        assert_eq!(now, [("unknown".to_string(), State::Unknown)]);
        let later = keys(ledger.unresolved(T0 + settle, 10).await.unwrap_or_default());
        assert_eq!(later.len(), 2, "{later:?}");
        assert!(later.iter().all(|(_, s)| *s == State::Unknown), "{later:?}");
        // Reconciliation resolves an unknown entry either way.
        assert_eq!(
            ledger.finish("a", "unknown", &booked(), T0 + 5).await,
            Ok(true)
        );
        let listed = ledger.list(Some("a"), 10, T0 + 6).await.unwrap_or_default();
        assert_eq!(listed.len(), 3);
        assert!(
            ledger
                .list(Some("b"), 10, T0)
                .await
                .unwrap_or_default()
                .is_empty()
        );
        let spent = ledger
            .booked_between("a", T0, T0 + 10)
            .await
            .unwrap_or_default();
        assert_eq!(spent.len(), 2);
        assert!(
            ledger
                .booked_between("a", T0 + 10, T0 + 20)
                .await
                .unwrap_or_default()
                .is_empty()
        );
    }
}

/// A hold of `amount` ("100.00" style) in USD against a budget of `budget`, on the day `[T0,
/// T0 + 1000)`.
fn hold<'a>(amount: &'a str, budget: i64) -> Hold<'a> {
    let units = crate::tools::spend::Amount::parse(amount)
        .map(crate::tools::spend::Amount::units)
        .unwrap_or_else(|| panic!("{amount}"));
    Hold {
        amount,
        units,
        currency: "USD",
        budget_units: budget * 10_000,
        window: (T0, T0 + 1000),
    }
}

#[tokio::test]
async fn a_budget_is_held_by_pending_booked_and_unknown_entries_and_freed_by_failed_ones() {
    let (all, _dir) = ledgers("budget holds").await;
    for ledger in all {
        for key in ["k1", "k2", "k3", "k4"] {
            assert_eq!(ledger.begin(&new("a", key, "d"), T0).await, Ok(Begin::Go));
        }
        let held = |key: &'static str| {
            let ledger = ledger.clone();
            async move {
                ledger
                    .held("a", "USD", (T0, T0 + 1000), key)
                    .await
                    .unwrap_or(-1)
            }
        };
        // A budget of 1000: 600 fits, another 600 does not, 400 does.
        assert_eq!(
            ledger.reserve("a", "k1", &hold("600", 1000), T0 + 1).await,
            Ok(true)
        );
        assert_eq!(
            ledger.reserve("a", "k2", &hold("600", 1000), T0 + 2).await,
            Ok(false)
        );
        assert_eq!(
            ledger.reserve("a", "k2", &hold("400", 1000), T0 + 3).await,
            Ok(true)
        );
        assert_eq!(held("none").await, 1000 * 10_000);
        assert_eq!(
            held("k1").await,
            400 * 10_000,
            "a booking's own hold is left out"
        );
        // Another client, currency or day holds nothing of this one.
        assert_eq!(
            ledger.held("b", "USD", (T0, T0 + 1000), "none").await,
            Ok(0)
        );
        assert_eq!(
            ledger.held("a", "EUR", (T0, T0 + 1000), "none").await,
            Ok(0)
        );
        assert_eq!(
            ledger
                .held("a", "USD", (T0 + 1000, T0 + 2000), "none")
                .await,
            Ok(0)
        );
        // Booked keeps holding (at the booked amount), unknown keeps its hold, failed frees.
        let booked_600 = Outcome::Booked {
            provider: "duffel".into(),
            order_id: "ord_1".into(),
            booking_reference: "ABC123".into(),
            amount: "600.00".into(),
            currency: "USD".into(),
        };
        assert_eq!(
            ledger.finish("a", "k1", &booked_600, T0 + 4).await,
            Ok(true)
        );
        let unknown = Outcome::Unknown {
            provider: "duffel".into(),
            reason: "timeout".into(),
        };
        assert_eq!(ledger.finish("a", "k2", &unknown, T0 + 5).await, Ok(true));
        assert_eq!(held("none").await, 1000 * 10_000);
        assert_eq!(
            ledger.reserve("a", "k3", &hold("0.01", 1000), T0 + 6).await,
            Ok(false)
        );
        let failed = Outcome::Failed {
            provider: Some("duffel".into()),
            reason: "reconciled".into(),
        };
        assert_eq!(ledger.finish("a", "k2", &failed, T0 + 7).await, Ok(true));
        assert_eq!(
            held("none").await,
            600 * 10_000,
            "a failed entry holds nothing"
        );
        assert_eq!(
            ledger.reserve("a", "k3", &hold("400", 1000), T0 + 8).await,
            Ok(true)
        );
        // A failed entry tried again holds nothing until it reserves again.
        assert_eq!(ledger.finish("a", "k3", &failed, T0 + 9).await, Ok(true));
        assert_eq!(
            ledger.begin(&new("a", "k3", "d"), T0 + 10).await,
            Ok(Begin::Go)
        );
        assert_eq!(held("none").await, 600 * 10_000);
    }
}

#[tokio::test]
async fn concurrent_holds_never_exceed_the_budget() {
    let (all, _dir) = ledgers("concurrent holds").await;
    for ledger in all {
        let keys: Vec<String> = (0..8).map(|i| format!("c{i}")).collect();
        for key in &keys {
            assert_eq!(ledger.begin(&new("a", key, "d"), T0).await, Ok(Begin::Go));
        }
        // Eight bookings of 300 against a budget of 1000, all at once: three fit.
        let tries = keys.iter().map(|key| {
            let ledger = ledger.clone();
            let key = key.clone();
            tokio::spawn(async move { ledger.reserve("a", &key, &hold("300", 1000), T0 + 1).await })
        });
        let mut fitted = 0;
        for t in futures::future::join_all(tries).await {
            let reserved = t.unwrap_or_else(|e| panic!("{e}"));
            if reserved.unwrap_or_else(|e| panic!("{e}")) {
                fitted += 1;
            }
        }
        assert_eq!(fitted, 3);
        assert_eq!(
            ledger.held("a", "USD", (T0, T0 + 1000), "none").await,
            Ok(900 * 10_000)
        );
    }
}
