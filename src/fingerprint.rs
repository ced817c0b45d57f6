//! Stable fingerprints of values: canonical JSON and the FNV-1a hashes.
//!
//! Two things in the gateway must recognise "the same arguments" whatever order a model wrote
//! their keys in: the stale-result cache (its key) and the idempotency key derived for a write
//! that came without one. Both go through [`canonical_json`], which sorts object keys itself
//! instead of trusting `serde_json`'s map order: any crate in the build may switch on
//! `serde_json/preserve_order`, and then `Value::to_string` keeps insertion order.
//!
//! FNV-1a is used where a hash must be the same across processes, restarts and replicas (a
//! derived idempotency key, a breaker's jitter seed): `std`'s hasher is randomly keyed per
//! process, and these are not secrets, so a cryptographic hash would only cost time.

use serde_json::Value;

/// `value` as compact JSON with the keys of every object sorted: equal values (as JSON means
/// equal, whatever the key order) give equal text.
pub fn canonical_json(value: &Value) -> String {
    // serde_json's own map is sorted unless `preserve_order` is on somewhere in the build, so
    // the usual value is already canonical: one walk without allocating proves it, and then
    // serde_json writes it in one go (the stale-result key is computed on every read call,
    // fast-fail included).
    if keys_sorted(value) {
        return serde_json::to_string(value).unwrap_or_default();
    }
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    // serde_json writes UTF-8 only; the empty fallback keeps a bug from becoming a panic.
    String::from_utf8(out).unwrap_or_default()
}

/// Whether every object in `value` lists its keys in sorted order.
fn keys_sorted(value: &Value) -> bool {
    match value {
        Value::Object(map) => {
            let mut previous: Option<&String> = None;
            map.iter().all(|(key, item)| {
                let in_order = previous.is_none_or(|p| p < key);
                previous = Some(key);
                in_order && keys_sorted(item)
            })
        }
        Value::Array(items) => items.iter().all(keys_sorted),
        _ => true,
    }
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                // A key is written as a JSON string, with the same escapes as any string value.
                write_scalar(key, out);
                out.push(b':');
                write_canonical(item, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        scalar => write_scalar(scalar, out),
    }
}

/// A string, number, boolean or null, exactly as serde_json writes it.
fn write_scalar(value: &(impl serde::Serialize + ?Sized), out: &mut Vec<u8>) {
    // Writing a scalar into a `Vec` cannot fail; a bug would leave it out, never panic.
    let _ = serde_json::to_writer(&mut *out, value);
}

/// 64-bit FNV-1a of `bytes`.
pub fn fnv1a_64(bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes.into_iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The PostgreSQL advisory lock that serializes one client's capped writes of one kind (`kind`
/// names what is capped: `budget`, `watches`, `back-in-service`): FNV-1a of
/// `faregate-<kind>\n<client>`, the same on every replica, so a fleet's replicas take the same
/// lock for the same client, and two clients (or two kinds) rarely share one.
pub fn client_lock(kind: &str, client: &str) -> i64 {
    let hash = fnv1a_64(
        b"faregate-"
            .iter()
            .chain(kind.as_bytes())
            .chain(b"\n")
            .chain(client.as_bytes())
            .copied(),
    );
    i64::from_ne_bytes(hash.to_ne_bytes())
}

/// 128-bit FNV-1a of `bytes`.
pub fn fnv1a_128(bytes: impl IntoIterator<Item = u8>) -> u128 {
    bytes
        .into_iter()
        .fold(0x6c62_272e_07bb_0142_62b8_2175_6295_c58d, |h, b| {
            (h ^ u128::from(b)).wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b)
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn key_order_does_not_matter_at_any_depth() {
        let a = json!({"b": [1, {"y": 2, "x": "é\"q"}], "a": null, "c": 1.5});
        let b = json!({"c": 1.5, "a": null, "b": [1, {"x": "é\"q", "y": 2}]});
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_eq!(
            canonical_json(&a),
            r#"{"a":null,"b":[1,{"x":"é\"q","y":2}],"c":1.5}"#
        );
    }

    #[test]
    fn canonical_json_is_what_serde_json_writes_for_sorted_maps() {
        // Without `preserve_order`, serde_json's maps are sorted: the canonical text is then
        // exactly its own compact text, so cache keys did not change with this module.
        let v = json!({"origin": "JFK", "passengers": [{"type": "adult"}], "max": 10});
        assert_eq!(canonical_json(&v), v.to_string());
    }

    #[test]
    fn the_sorting_writer_writes_what_the_fast_path_writes() {
        // The sorting writer runs only when some object is out of order (`preserve_order` in
        // the build); it must give the same text the fast path gives for an ordered value.
        let v = json!({"b": [1, {"y": 2, "x": "é\"q\n"}], "a": null, "c": 1.5, "d": {}});
        assert!(keys_sorted(&v));
        let mut out = Vec::new();
        write_canonical(&v, &mut out);
        assert_eq!(String::from_utf8(out).ok(), Some(canonical_json(&v)));
    }

    #[test]
    fn the_hashes_are_the_published_fnv1a_values() {
        // Test vectors of the FNV reference: the empty string and "a".
        assert_eq!(fnv1a_64(*b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a_64(*b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a_128(*b""), 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d);
        assert_eq!(fnv1a_128(*b"a"), 0xd228_cb69_6f1a_8caf_7891_2b70_4e4a_8964);
    }

    #[test]
    fn a_client_lock_is_the_hash_of_its_kind_and_client() {
        // Replicas of different versions in one fleet must take the same lock for the same
        // client: the budget's is the value it had before this helper was shared.
        let budget = fnv1a_64(b"faregate-budget\na".iter().copied());
        assert_eq!(
            client_lock("budget", "a"),
            i64::from_ne_bytes(budget.to_ne_bytes())
        );
        assert_ne!(
            client_lock("watches", "a"),
            client_lock("back-in-service", "a")
        );
        assert_ne!(client_lock("watches", "a"), client_lock("watches", "b"));
    }
}
