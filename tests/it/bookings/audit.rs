//! The audit log: every write call leaves one `faregate::audit` line naming the client, the
//! tool, the idempotency key, the outcome and the order id, and no log line carries what the
//! traveller wrote (name, email, phone).
//!
//! The subscriber is this test's thread-local default; the default `#[tokio::test]` runtime
//! runs the gateway's server tasks on this thread too, so it sees their events and none of the
//! other tests' (as in `traces.rs`).

use std::time::Duration;

use super::{booking, builder, fresh_offer, orders_for};
use crate::support::Captured;

#[tokio::test]
async fn each_write_call_leaves_one_audit_line_with_ids_only() {
    let (captured, _default) = Captured::install();

    let s = builder(47, Duration::from_secs(2)).jobs().start().await;
    let (offer, _) = fresh_offer(&s).await;
    let (_, first) = s.call("book_flight", booking(&offer, "audit-1")).await;
    assert_eq!(first["status"], "ok", "{first:#}");
    let order_id = first["data"]["order_id"].as_str().unwrap_or_default();
    assert!(order_id.starts_with("ord_"), "{first:#}");
    let (_, again) = s.call("book_flight", booking(&offer, "audit-1")).await;
    assert_eq!(again["status"], "ok", "{again:#}");
    assert_eq!(orders_for(&s, "audit-1"), (1, 1), "one order request");

    let text = captured.text();
    let audit: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("faregate::audit"))
        .collect();
    assert_eq!(audit.len(), 2, "one line per write call:\n{text}");
    for (line, outcome) in audit.iter().zip(["booked", "replayed"]) {
        for field in [
            "tool=\"book_flight\"".to_string(),
            "idempotency_key=\"audit-1\"".to_string(),
            format!("outcome=\"{outcome}\""),
            format!("order_id=\"{order_id}\""),
            "client=".to_string(),
        ] {
            assert!(line.contains(&field), "{field} missing from: {line}");
        }
    }
    // Not in the audit lines, nor anywhere else in the log, at any level down to debug.
    for private in ["Garcia", "ana@example.com", "+34600000000", "1990-02-15"] {
        assert!(
            !text.contains(private),
            "the log carries traveller data ({private}):\n{text}"
        );
    }
}
