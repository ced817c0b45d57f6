//! A request body read as JSON, strictly: nothing a client sends can crash or stall the
//! parser, and nothing ambiguous gets through.
//!
//! - Nesting is bounded by serde_json's recursion limit (128), so 10,000 nested arrays are a
//!   refusal, not a stack overflow.
//! - Duplicate object keys are refused at every depth: `{"origin": "JFK", "origin": "LHR"}`
//!   means two things, and the gateway will not guess which one the model meant.
//! - Lone surrogate escapes (`"\ud800"`) and numbers beyond `f64` are syntax errors
//!   ("malformed JSON"), so no protocol parser ever sees a string that is not valid UTF-8.
//! - A UTF-8 byte-order mark before the text is skipped, as RFC 8259 §8.1 allows: some
//!   Windows tools write one, and refusing it as "expected value at line 1 column 1" named
//!   nothing the sender could see.
//!
//! The body's size and declared content type are the HTTP edge's business; this reads bytes
//! it was handed.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Value};

use super::error::ProtocolError;

/// The body as one JSON value, or what is wrong with it.
pub fn read_json(bytes: &[u8]) -> Result<Value, ProtocolError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ProtocolError::new(
            "the request body is empty; send a JSON object such as {\"arguments\": {…}}",
        ));
    }
    let strict: StrictValue = serde_json::from_slice(bytes).map_err(|e| {
        let what = if e.is_syntax() || e.is_eof() {
            "malformed JSON"
        } else {
            "unexpected JSON"
        };
        ProtocolError::new(format!("{what}: {}", explain(&e)))
    })?;
    Ok(strict.0)
}

/// serde_json's words for `e`, with what to send instead where they name a detail few senders
/// know: a lone UTF-16 surrogate escape (`"\ud800"` with no low surrogate after it) is
/// "unexpected end of hex escape" or "lone leading surrogate in hex escape".
pub fn explain(e: &serde_json::Error) -> String {
    let said = e.to_string();
    if said.contains("hex escape") {
        format!(
            "{said}: a \\u escape of a UTF-16 surrogate (\\ud800 to \\udfff) must come as a pair, high then low (an emoji is \\ud83d\\ude00, never \\ud83d alone); send the character itself in UTF-8, or its whole pair"
        )
    } else {
        said
    }
}

/// `text` as one JSON value, with the same rules as [`read_json`] (duplicate keys refused at
/// every depth): for JSON that arrives inside a body as a string (OpenAI's `arguments`), or
/// inside a message another library parses (MCP's `tools/call`).
pub fn parse_strict(text: &[u8]) -> Result<Value, serde_json::Error> {
    serde_json::from_slice::<StrictValue>(text).map(|strict| strict.0)
}

/// A `serde_json::Value` that refuses duplicate object keys.
struct StrictValue(Value);

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        StrictValue::deserialize(d).map(|v| v.0)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(StrictValue(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let StrictValue(value) = map.next_value()?;
            // One search of the map per key: the entry tells a repeat and takes a new key.
            match out.entry(key) {
                Entry::Vacant(vacant) => {
                    vacant.insert(value);
                }
                Entry::Occupied(repeated) => {
                    return Err(de::Error::custom(format_args!(
                        "duplicate key \"{}\"; send each key once",
                        repeated.key()
                    )));
                }
            }
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Value, String> {
        read_json(text.as_bytes()).map_err(|e| e.message().to_string())
    }

    #[test]
    fn a_lone_surrogate_is_refused_saying_what_to_send() {
        for lone in [r#"{"city": "\ud800"}"#, r#"{"city": "\ud83dx"}"#] {
            let e = parse(lone).unwrap_err();
            assert!(
                e.starts_with("malformed JSON: ")
                    && e.contains("must come as a pair, high then low"),
                "{lone}: {e}"
            );
        }
    }

    #[test]
    fn duplicate_keys_are_refused_at_any_depth() {
        assert!(parse(r#"{"a": 1, "b": {"c": 1, "d": 2}}"#).is_ok());
        let e = parse(r#"{"a": {"x": 1, "x": 2}}"#).unwrap_err();
        assert!(e.contains("duplicate key \"x\""), "{e}");
        assert!(
            parse(r#"[{"a": 1}, {"a": 2}]"#).is_ok(),
            "same key in two objects"
        );
    }

    #[test]
    fn deep_nesting_is_a_refusal_not_a_crash() {
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let e = parse(&deep).unwrap_err();
        assert!(e.contains("recursion limit"), "{e}");
    }

    #[test]
    fn numbers_and_strings_keep_their_values() {
        let v = parse(
            r#"{"n": -3, "u": 18446744073709551615, "f": 1.5, "s": "\u00e9\u0000", "z": null}"#,
        )
        .unwrap_or_default();
        assert_eq!(v["n"], -3);
        assert_eq!(v["u"], u64::MAX);
        assert_eq!(v["f"], 1.5);
        assert_eq!(v["s"], "é\u{0}");
        assert!(v["z"].is_null());
        assert!(parse("1e400").unwrap_err().contains("number out of range"));
        let lone = parse(r#""\ud800""#);
        assert!(
            lone.as_ref()
                .is_err_and(|e| e.contains("malformed JSON") && e.contains("escape")),
            "{lone:?}"
        );
    }

    #[test]
    fn a_byte_order_mark_before_the_text_is_skipped() {
        let v = parse("\u{feff}{\"arguments\": {\"origin\": \"JFK\"}}")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v["arguments"]["origin"], "JFK");
        // Only before the text: inside it, it is not whitespace.
        assert!(parse("{\"a\": \u{feff}1}").is_err());
        assert!(
            parse("\u{feff}")
                .unwrap_err()
                .contains("the request body is empty")
        );
    }

    #[test]
    fn empty_bodies_say_what_to_send() {
        for body in ["", "  \n "] {
            assert!(
                parse(body)
                    .unwrap_err()
                    .contains("the request body is empty")
            );
        }
    }
}
