//! The agents' watch tools (`watch_create`, `watch_list`, `watch_delete`; their shapes are
//! [`crate::agents::watch_tools`]) run for one caller, for every agent protocol: the OpenAI
//! and Anthropic routes ([`super::agents`]) and MCP's `tools/call` (`http/mcp/watch_tools.rs`).
//!
//! `watch_create` goes through the native API's create path ([`super::watches::create_for`]),
//! so its checks, limits and refusals are the API's; a refusal is the call's error text, as
//! any tool call's is, never a failed request. A client sees the watch tools where the gateway
//! keeps watches and its scope has a read tool to watch.

use serde_json::Value;

use super::watches::{Refused, create_for, visible_client, watches};
use crate::agents::AgentResult;
use crate::agents::manifest::drop_optional_nulls;
use crate::agents::watch_tools::{self, WatchCall, WatchTool};
use crate::clients::Scope;
use crate::http::edge::Caller;
use crate::http::state::AppState;
use crate::jobs::rfc3339;
use crate::texts::{agents as agent_texts, watches as texts};
use crate::watches::{Watch, WatchState};

/// News shown per watch in `watch_list`, newest first.
const NEWS_SHOWN: u32 = 3;
/// Watches shown in `watch_list` (a client keeps at most `[watches] max_active_per_client`
/// active ones; ended ones stay listed until deleted).
const WATCHES_SHOWN: u32 = 50;

/// The watch tools a client with `scope` is offered, in manifest order: all of them where the
/// gateway keeps watches and the scope has a read tool, else none.
pub(crate) fn offered(state: &AppState, scope: &Scope) -> Vec<&'static WatchTool> {
    if crate::http::calls::watch_tools_offered(state, scope) {
        watch_tools::TOOLS.iter().collect()
    } else {
        Vec::new()
    }
}

/// Runs watch tool `name` for `caller`; `None` when `name` is no watch tool (a catalog tool's
/// call goes its own way).
pub(crate) async fn run(
    state: &AppState,
    caller: &Caller,
    name: &str,
    arguments: &Result<Value, String>,
    call_id: Option<String>,
) -> Option<AgentResult> {
    watch_tools::tool(name)?;
    let scope = caller.scope();
    // A client not offered the watch tools (no read tool to watch in its scope) is refused them
    // as any tool outside its scope, not answered as if it had none.
    if state.watches.is_some() && !crate::http::calls::watch_tools_offered(state, &scope) {
        let text = crate::http::calls::out_of_scope_text(state, &scope, name);
        return Some(AgentResult::not_run(call_id, agent_texts::rejected(&text)));
    }
    let read = match arguments {
        Ok(arguments) => watch_tools::parse(name, arguments.clone())?,
        Err(why) => Err(why.clone()),
    };
    let answer = match read {
        Err(text) => Err(agent_texts::invalid_arguments(&text)),
        Ok(WatchCall::Create(mut spec)) => {
            // The watched call's arguments as a strict-mode model writes them: a `null` for
            // each optional argument it leaves out, read as absent (as for any agent call).
            if let Some(tool) = state.gateway.tool(&spec.tool) {
                spec.arguments = drop_optional_nulls(&tool.spec.input_schema(), spec.arguments);
            }
            answer(state, caller, WatchCall::Create(spec))
                .await
                .map_err(|refused| refused.text(state, &scope))
        }
        Ok(call) => answer(state, caller, call)
            .await
            .map_err(|refused| refused.text(state, &scope)),
    };
    Some(match answer {
        Ok(text) => AgentResult::plain(call_id, text),
        Err(text) => AgentResult::not_run(call_id, text),
    })
}

/// The text a model reads for one watch call that was carried out.
async fn answer(state: &AppState, caller: &Caller, call: WatchCall) -> Result<String, Refused> {
    let client = visible_client(caller);
    match call {
        WatchCall::Create(spec) => {
            let watch = create_for(state, caller, spec, None).await?;
            Ok(texts::created(&watch.id, &describe(&watch)))
        }
        WatchCall::List => {
            let watches = watches(state)?;
            let list = watches.store().list(client.as_ref(), WATCHES_SHOWN).await?;
            if list.is_empty() {
                return Ok(texts::NO_WATCHES.to_string());
            }
            let mut lines = vec![texts::listed(list.len())];
            for watch in &list {
                let news: Vec<(String, String)> = watches
                    .store()
                    .notices(&watch.id, NEWS_SHOWN)
                    .await?
                    .into_iter()
                    // When it was seen: a run a provider outage held reads its answer later
                    // than its instant.
                    .map(|n| (rfc3339(n.created_at_ms), n.text))
                    .collect();
                let next = (watch.state == WatchState::Active && watch.job.is_none())
                    .then(|| rfc3339(watch.next_run_at_ms));
                lines.push(texts::list_entry(
                    &watch.id,
                    &describe(watch),
                    watch.state.as_str(),
                    watch.runs,
                    next.as_deref(),
                    watch.last_error.as_deref(),
                    &news,
                ));
            }
            Ok(lines.join("\n"))
        }
        WatchCall::Delete { watch_id } => {
            watches(state)?
                .delete(&watch_id, client.as_ref())
                .await
                .map_err(|e| Refused::of(e, &watch_id))?;
            Ok(texts::deleted(&watch_id))
        }
    }
}

/// A watch in words: what it calls, how often, its news rule and its end.
fn describe(w: &Watch) -> String {
    let condition = serde_json::to_value(&w.condition).unwrap_or(Value::Null);
    let kind = condition
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let numbers: Vec<String> = condition
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.as_str() != "kind")
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let condition = if numbers.is_empty() {
        kind.to_string()
    } else {
        format!("{kind} ({})", numbers.join(", "))
    };
    let end = &w.schedule.end;
    texts::watch(
        &w.tool,
        &w.arguments.to_string(),
        &humantime::format_duration(w.schedule.interval).to_string(),
        &condition,
        &texts::ends(end.at_ms.map(rfc3339).as_deref(), end.runs, end.departure),
    )
}
