//! Call bodies: the first byte picks the endpoint (native, OpenAI, Anthropic) and, for the
//! native one, the tool in its path; the rest is the request body. They go through the same
//! pure parsers the handlers use (`faregate::agents::body::read_json`, then the protocol's
//! `parse`), and every call read from them through the argument check a call then gets
//! (`drop_optional_nulls`, then `ArgumentValidator::check`). Invariants: no panic; a refusal
//! has a message; the agent protocols yield at least one call, each with a tool name and an
//! id; accepted calls written back in the protocol's shape parse to the same calls.
#![no_main]

use std::sync::OnceLock;

use chrono::NaiveDate;
use faregate::agents::manifest::drop_optional_nulls;
use faregate::agents::{AgentCall, CallOptions, ProtocolError, anthropic, body, native, openai};
use faregate::tools::{ArgumentValidator, CATALOG, CallMode};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

/// Which endpoint's body to parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    Native,
    OpenAi,
    Anthropic,
}

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

/// The calls of a body and its options, as the handler of `endpoint` reads them.
fn parse(
    endpoint: Endpoint,
    tool: &str,
    bytes: &[u8],
) -> Result<(Vec<AgentCall>, CallOptions), ProtocolError> {
    let value = body::read_json(bytes)?;
    match endpoint {
        Endpoint::Native => native::parse(tool, value).map(|c| {
            let call = AgentCall {
                tool: c.tool,
                arguments: Ok(c.arguments),
                call_id: c.call_id,
                idempotency_key: c.idempotency_key,
                // The native body has no room for one (a trace context comes in the header).
                trace: None,
            };
            (vec![call], c.options)
        }),
        Endpoint::OpenAi => openai::parse(value).map(|r| (r.calls, r.options)),
        Endpoint::Anthropic => anthropic::parse(value).map(|r| (r.calls, r.options)),
    }
}

/// The calls in the protocol's own shape, as a client would send them.
fn write_back(endpoint: Endpoint, calls: &[AgentCall], options: CallOptions) -> Value {
    let mode = match options.mode {
        CallMode::Background => "background",
        CallMode::Interactive => "interactive",
    };
    let deadline = options.deadline.map(|d| d.as_millis() as u64);
    let args = |c: &AgentCall| c.arguments.clone().unwrap_or(Value::Null);
    match endpoint {
        Endpoint::OpenAi => {
            json!({"mode": mode, "deadline_ms": deadline, "tool_calls": calls.iter().map(|c| json!({
            "id": c.call_id, "type": "function",
            "function": {"name": c.tool, "arguments": args(c).to_string()}})).collect::<Vec<_>>()})
        }
        _ => json!({"mode": mode, "deadline_ms": deadline, "content": calls.iter().map(|c| json!({
            "type": "tool_use", "id": c.call_id, "name": c.tool, "input": args(c)})).collect::<Vec<_>>()}),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    let endpoint = match pick % 3 {
        0 => Endpoint::Native,
        1 => Endpoint::OpenAi,
        _ => Endpoint::Anthropic,
    };
    let tool = CATALOG[usize::from(pick / 3) % CATALOG.len()].name;
    let (calls, options) = match parse(endpoint, tool, bytes) {
        Ok(read) => read,
        Err(refusal) => {
            assert!(!refusal.message().is_empty(), "{refusal:?}");
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
        let again = write_back(endpoint, &calls, options);
        let bytes = serde_json::to_vec(&again).unwrap_or_default();
        match parse(endpoint, tool, &bytes) {
            Ok(second) => assert_eq!(second, (calls, options), "round trip changed the calls"),
            Err(e) => panic!("accepted calls refused on the way back: {e:?} for {again}"),
        }
    }
});
