//! What `tools/list` sends, and `notifications/tools/list_changed`: a session whose list
//! changes on a reload (`POST /v1/admin/reload` or SIGHUP: its client gets another scope, or
//! tools are added, removed or described anew) is told to list them again.
//!
//! The MCP tool objects are built from the served tools and rebuilt when a reload replaces them
//! ([`ToolObjects`], keyed by `Gateway::tools_revision`). A session is followed from its first
//! `tools/list` (a client that never listed tools has nothing to refresh) with the tools it was
//! sent; one watcher task, started with the first session and ended with `/mcp`'s cancellation
//! token, wakes on every roster replacement (`clients::Directory::replaced`) and every
//! replacement of the served tools (`Gateway::tools_replaced`), works out each session's list
//! under its client's current scope and notifies the sessions whose list differs. The breakers
//! never change the list (a tool that is down is still listed, and says so when called), so
//! there are no storms. Stateless requests have no stream to notify; `initialize` advertises
//! `tools.listChanged`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::RoleServer;
use rmcp::model::Tool;
use rmcp::service::Peer;
use tokio_util::sync::CancellationToken;

use super::watch_tools;
use crate::agents::manifest;
use crate::clients::{ClientName, Scope};
use crate::http::calls::allowed_tools;
use crate::http::state::{AppState, SharedState};

/// Every tool `tools/list` may send (each client is sent the ones its scope allows), built for
/// the served tools of one revision and again after a reload replaced them.
#[derive(Debug, Default)]
pub(super) struct ToolObjects {
    built: Mutex<Option<(u64, Arc<Vec<Tool>>)>>,
}

impl ToolObjects {
    /// The tool objects of the tools served now.
    pub(super) fn current(&self, state: &AppState) -> Arc<Vec<Tool>> {
        let revision = state.gateway.tools_revision();
        let mut built = lock(&self.built);
        match &*built {
            Some((at, tools)) if *at == revision => Arc::clone(tools),
            _ => {
                let tools = Arc::new(all_tools(state));
                *built = Some((revision, Arc::clone(&tools)));
                tools
            }
        }
    }
}

/// The served tools' MCP objects in catalog order, then the watch tools where they are offered.
fn all_tools(state: &AppState) -> Vec<Tool> {
    state
        .gateway
        .tools()
        .iter()
        .filter_map(|t| {
            let json = manifest::mcp_tool(t.spec, &t.config.description);
            match serde_json::from_value::<Tool>(json) {
                Ok(tool) => Some(tool),
                Err(e) => {
                    // The manifest tests pin this shape; a failure here is a bug.
                    tracing::error!(tool = t.spec.name, error = %e, "MCP tool object rejected by rmcp");
                    None
                }
            }
        })
        .chain(watch_tools::tools(state))
        .collect()
}

/// The names of the tools `scope` lists, in the order `tools/list` sends them.
pub(super) fn visible<'a>(state: &AppState, tools: &'a [Tool], scope: &Scope) -> Vec<&'a Tool> {
    let allowed = allowed_tools(state, scope);
    tools
        .iter()
        .filter(|t| {
            allowed.contains(&t.name.as_ref()) || watch_tools::listed(state, scope, &t.name)
        })
        .collect()
}

fn listing(state: &AppState, tools: &[Tool], scope: &Scope) -> Vec<Tool> {
    visible(state, tools, scope).into_iter().cloned().collect()
}

/// One session that listed tools.
struct Listed {
    client: ClientName,
    peer: Peer<RoleServer>,
    /// The tools it was last sent (or told changed).
    sent: Vec<Tool>,
}

/// The sessions that listed tools, by session id (shared by every session).
#[derive(Default)]
pub(super) struct ToolLists {
    sessions: Mutex<HashMap<String, Listed>>,
    /// Whether the watcher was started.
    watching: AtomicBool,
}

impl std::fmt::Debug for ToolLists {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolLists")
            .field("sessions", &lock(&self.sessions).len())
            .finish()
    }
}

impl ToolLists {
    /// Notes that `session`, of `client`, was sent the tools `scope` lists; the first one starts
    /// the watcher.
    pub(super) fn listed(
        self: &Arc<Self>,
        state: &SharedState,
        objects: &Arc<ToolObjects>,
        cancel: &CancellationToken,
        sent: (String, ClientName, Vec<Tool>),
        peer: Peer<RoleServer>,
    ) {
        let (session, client, sent) = sent;
        let mut sessions = lock(&self.sessions);
        // Sessions that ended (closed or expired in rmcp) go as new ones come, not only at a
        // reload.
        sessions.retain(|_, s| !s.peer.is_transport_closed());
        sessions.insert(session, Listed { client, peer, sent });
        drop(sessions);
        if !self.watching.swap(true, Ordering::AcqRel) {
            let lists = Arc::clone(self);
            let (state, objects, cancel) = (state.clone(), Arc::clone(objects), cancel.clone());
            tokio::spawn(async move { lists.watch(state, objects, cancel).await });
        }
    }

    /// Waits for roster and served-tool replacements and tells each session whose list
    /// changed.
    async fn watch(
        self: Arc<Self>,
        state: SharedState,
        objects: Arc<ToolObjects>,
        cancel: CancellationToken,
    ) {
        let mut roster_replaced = state.keys.directory().replaced();
        let mut tools_replaced = state.gateway.tools_replaced();
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                changed = roster_replaced.changed() => if changed.is_err() { return },
                changed = tools_replaced.changed() => if changed.is_err() { return },
            }
            let tools = objects.current(&state);
            let roster = state.keys.directory().current();
            let changed: Vec<(String, Peer<RoleServer>)> = {
                let mut sessions = lock(&self.sessions);
                sessions.retain(|_, s| !s.peer.is_transport_closed());
                sessions
                    .iter_mut()
                    .filter_map(|(id, s)| {
                        // A client no longer configured may call nothing.
                        let scope = roster
                            .profile(&s.client)
                            .map_or_else(Scope::nothing, |p| p.scope.clone());
                        let now = listing(&state, &tools, &scope);
                        (now != s.sent).then(|| {
                            s.sent = now;
                            (id.clone(), s.peer.clone())
                        })
                    })
                    .collect()
            };
            for (session, peer) in changed {
                if let Err(e) = peer.notify_tool_list_changed().await {
                    tracing::debug!(error = %e, "tools/list_changed not sent; forgetting the session");
                    lock(&self.sessions).remove(&session);
                }
            }
        }
    }
}

/// The map, also after a panic elsewhere: it holds only names and handles, still valid.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
