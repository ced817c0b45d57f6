//! The idempotency key of a booking that came without one.
//!
//! Agent protocols have no per-call field for an idempotency key, so a write without one gets
//! a key derived from its arguments: repeating the same booking (same offer, same travellers)
//! can never book twice, and after an unknown outcome the model learns what happened by
//! calling again with the same arguments, as the result text tells it to.
//!
//! The key is the client's own, like a key a client gives: two clients making the same call
//! derive the same key, and the gateway keeps them apart by client wherever the key is used
//! (the booking ledger's entries, a booking's metadata, and the key a write tool from
//! configuration sends its provider, `tools::configured::Call::sent_key`).

use serde_json::Value;

use crate::fingerprint::{canonical_json, fnv1a_128};
use crate::tools::ToolSpec;

/// The key a call of `spec` runs with: the one given, or for a tool that needs one, the key
/// derived from its arguments.
pub fn key_for(spec: &ToolSpec, given: Option<String>, arguments: &Value) -> Option<String> {
    if spec.needs_idempotency_key {
        given.or_else(|| Some(derived_idempotency_key(spec.name, arguments)))
    } else {
        given
    }
}

/// `fg-args-` and 32 hex digits: FNV-1a (128 bit) of the tool name and the arguments in
/// canonical JSON (object keys sorted), so the same booking always gets the same key, across
/// restarts and replicas.
pub fn derived_idempotency_key(tool: &str, arguments: &Value) -> String {
    let canonical = canonical_json(arguments);
    let h = fnv1a_128(tool.bytes().chain([0u8]).chain(canonical.bytes()));
    format!("fg-args-{h:032x}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn derived_keys_ignore_key_order_and_differ_per_booking() {
        let a = derived_idempotency_key("book_flight", &json!({"offer_id": "off_1", "n": [1, 2]}));
        let b = derived_idempotency_key("book_flight", &json!({"n": [1, 2], "offer_id": "off_1"}));
        let c = derived_idempotency_key("book_flight", &json!({"offer_id": "off_2", "n": [1, 2]}));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.starts_with("fg-args-") && a.len() == 8 + 32, "{a}");
        // Keys already handed out stay valid: FNV-1a 128 of "book_flight", a NUL and the
        // canonical JSON, as computed independently of this code.
        assert_eq!(
            derived_idempotency_key("book_flight", &json!({"offer_id": "off_1"})),
            "fg-args-38fb4125ef17ea71c3a7702a5ba136fc"
        );
    }

    #[test]
    fn only_tools_that_need_a_key_get_a_derived_one() {
        let args = json!({"offer_id": "off_1"});
        let spec = |name| crate::tools::spec(name).unwrap_or_else(|| panic!("{name}"));
        let book = spec("book_flight");
        assert_eq!(
            key_for(book, None, &args),
            Some(derived_idempotency_key("book_flight", &args))
        );
        assert_eq!(
            key_for(book, Some("k1".into()), &args),
            Some("k1".into()),
            "a given key wins"
        );
        assert_eq!(key_for(spec("search_flights"), None, &args), None);
    }
}
