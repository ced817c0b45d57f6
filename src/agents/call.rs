//! One tool call as a model sent it ([`AgentCall`]) and its result as every protocol renders it
//! ([`AgentResult`]).
//!
//! Every protocol parser turns its wire shape into `AgentCall`s, and every renderer turns
//! `AgentResult`s back into its own shape, so the text a model reads and whether the
//! protocol's error flag is raised are decided here, once:
//!
//! - a call that ran: the envelope's model text ([`model_text`]), with the error flag raised
//!   for `unavailable`, `rejected` and `invalid_arguments`;
//! - a call that could not start (unknown tool, arguments that are not JSON, no job store for
//!   background mode): a text saying what to do, with the error flag raised, never a failed
//!   batch.

use serde_json::{Map, Value};

use super::text::model_text;
use crate::call::{Envelope, Status};
use crate::texts;
use crate::trace_context::TraceContext;

/// One tool call as a model sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentCall {
    /// The tool's name, as sent (not yet looked up).
    pub tool: String,
    /// The arguments, or why they could not be read (e.g. an OpenAI `arguments` string that is
    /// not JSON): that call's error text, not a refusal of the whole body.
    pub arguments: Result<Value, String>,
    /// The protocol's id for the call (`tool_call_id`, `tool_use_id`), echoed back.
    pub call_id: Option<String>,
    /// An idempotency key the client gave for this call, if its protocol has room for one.
    pub idempotency_key: Option<String>,
    /// A trace context the call itself carried (MCP `_meta`), if its protocol has room for one.
    pub trace: Option<TraceContext>,
}

/// The first id that two of `calls` share: a model matches each result to its call by id, so
/// two calls under one id could not be told apart (the providers' APIs refuse such a message
/// too).
pub(crate) fn repeated_call_id(calls: &[AgentCall]) -> Option<&str> {
    let mut seen = std::collections::HashSet::new();
    calls
        .iter()
        .filter_map(|c| c.call_id.as_deref())
        .find(|id| !seen.insert(*id))
}

/// The arguments of a call without its protocol's member for them (`wanted` in `what`): none
/// (`{}`, a tool without parameters), unless they sit under another protocol's name
/// (`elsewhere`, such as OpenAI's `arguments` in an Anthropic block). Those are that call's
/// error: run with no arguments, it would be told every required field is missing.
pub(super) fn absent_arguments(
    call: Option<&Map<String, Value>>,
    (what, wanted): (&str, &str),
    elsewhere: &[&str],
) -> Result<Value, String> {
    let found = elsewhere.iter().find(|name| {
        call.and_then(|c| c.get(**name))
            .is_some_and(|v| !v.is_null())
    });
    match found {
        Some(found) => Err(texts::agents::arguments_misplaced(what, found, wanted)),
        None => Ok(Value::Object(Map::new())),
    }
}

/// The result of one call, ready for any protocol.
#[derive(Debug, Clone)]
pub struct AgentResult {
    /// The protocol's id of the call this answers (empty when it had none).
    pub call_id: String,
    /// The model-readable text (the same in every protocol).
    pub text: String,
    /// Whether the protocol's error flag (`is_error`, `isError`) is raised.
    pub is_error: bool,
    /// The envelope, when the call ran.
    pub envelope: Option<Envelope>,
}

impl AgentResult {
    /// The result of a call that ran.
    pub fn answered(call_id: Option<String>, envelope: Envelope) -> Self {
        AgentResult {
            call_id: call_id.unwrap_or_default(),
            text: model_text(&envelope),
            is_error: envelope.status.is_error(),
            envelope: Some(envelope),
        }
    }

    /// The result of a call answered by the gateway itself (a watch tool), without an envelope.
    pub fn plain(call_id: Option<String>, text: String) -> Self {
        AgentResult {
            call_id: call_id.unwrap_or_default(),
            text,
            is_error: false,
            envelope: None,
        }
    }

    /// The result of a call that could not start; `text` says what to do.
    pub fn not_run(call_id: Option<String>, text: String) -> Self {
        AgentResult {
            call_id: call_id.unwrap_or_default(),
            text,
            is_error: true,
            envelope: None,
        }
    }

    /// The structured result (`data`) of an `ok` or `stale` call.
    pub fn data(&self) -> Option<&Value> {
        let env = self.envelope.as_ref()?;
        match env.status {
            Status::Ok | Status::Stale => env.data.as_deref(),
            _ => None,
        }
    }
}
