//! Call bodies: the first byte picks the endpoint (native, OpenAI, Anthropic) and, for the
//! native one, the tool in its path; the rest is the request body. They go through
//! `faregate::http::fuzzing::parse_body`, the handlers' own parsing, and every call read from
//! them through the argument check a call then gets (`drop_optional_nulls`, then
//! `ArgumentValidator::check`). Invariants: no panic; a refusal is a 400 with a JSON
//! `message`; the agent protocols yield at least one call, each with a tool name and an id;
//! accepted calls written back in the protocol's shape parse to the same calls.
#![no_main]

use std::sync::OnceLock;

use chrono::NaiveDate;
use faregate::http::fuzzing::{Endpoint, ParsedCall, parse_body};
use faregate::agents::manifest::drop_optional_nulls;
use faregate::tools::{ArgumentValidator, CATALOG};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

fn validators() -> &'static [(Value, ArgumentValidator)] {
    static V: OnceLock<Vec<(Value, ArgumentValidator)>> = OnceLock::new();
    V.get_or_init(|| {
        CATALOG
            .iter()
            .map(|s| {
                let v = ArgumentValidator::new(s).unwrap_or_else(|e| panic!("{e}"));
                (s.input_schema(), v)
            })
            .collect()
    })
}

/// The calls in the protocol's own shape, as a client would send them.
fn write_back(endpoint: Endpoint, calls: &[ParsedCall]) -> Value {
    let mode = if calls.iter().any(|c| c.background) {
        "background"
    } else {
        "interactive"
    };
    let args = |c: &ParsedCall| c.arguments.clone().unwrap_or(Value::Null);
    match endpoint {
        Endpoint::OpenAi => json!({"mode": mode, "tool_calls": calls.iter().map(|c| json!({
            "id": c.call_id, "type": "function",
            "function": {"name": c.tool, "arguments": args(c).to_string()}})).collect::<Vec<_>>()}),
        _ => json!({"mode": mode, "content": calls.iter().map(|c| json!({
            "type": "tool_use", "id": c.call_id, "name": c.tool, "input": args(c)})).collect::<Vec<_>>()}),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let endpoint = match pick % 3 {
        0 => Endpoint::Native,
        1 => Endpoint::OpenAi,
        _ => Endpoint::Anthropic,
    };
    let tool = CATALOG[usize::from(pick / 3) % CATALOG.len()].name;
    let calls = match parse_body(endpoint, tool, body) {
        Ok(calls) => calls,
        Err(refusal) => {
            assert_eq!(refusal.status, 400, "{refusal:?}");
            let message = refusal.body.get("message").and_then(Value::as_str);
            assert!(message.is_some_and(|m| !m.is_empty()), "{refusal:?}");
            return;
        }
    };
    assert!(!calls.is_empty());
    let today = NaiveDate::from_ymd_opt(2026, 1, 1).unwrap_or_default();
    for call in &calls {
        if endpoint != Endpoint::Native {
            assert!(
                !call.tool.is_empty() && call.call_id.as_deref().is_some_and(|i| !i.is_empty())
            );
        }
        let Some(i) = CATALOG.iter().position(|s| s.name == call.tool) else {
            continue;
        };
        if let Ok(arguments) = &call.arguments {
            let (schema, validator) = &validators()[i];
            let arguments = drop_optional_nulls(schema, arguments.clone());
            let _ = validator.check(&arguments, today, Some("fuzz-key"));
        }
    }
    // Round trip: only bodies whose calls all have arguments objects (a per-call error text
    // cannot be written back).
    if endpoint != Endpoint::Native
        && calls
            .iter()
            .all(|c| c.arguments.as_ref().is_ok_and(Value::is_object))
    {
        let again = write_back(endpoint, &calls);
        let bytes = serde_json::to_vec(&again).unwrap_or_default();
        match parse_body(endpoint, tool, &bytes) {
            Ok(second) => assert_eq!(second, calls, "round trip changed the calls"),
            Err(e) => panic!("accepted calls refused on the way back: {e:?} for {again}"),
        }
    }
});
