//! `notifications/tools/list_changed`: a session whose client's set of tools changes (a client
//! reload, `POST /v1/admin/reload` or SIGHUP, gives it another scope) is told to list them again.
//!
//! A session is followed from its first `tools/list` (a client that never listed tools has
//! nothing to refresh) with the names it was sent; one watcher task, started with the first
//! session and ended with `/mcp`'s cancellation token, wakes on every roster replacement
//! (`clients::Directory::replaced`), works out each session's tools under its client's new
//! scope and notifies the sessions whose list differs. The breakers never change the list (a
//! tool that is down is still listed, and says so when called), so there are no storms.
//! Stateless requests have no stream to notify; `initialize` advertises `tools.listChanged`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::RoleServer;
use rmcp::model::Tool;
use rmcp::service::Peer;
use tokio_util::sync::CancellationToken;

use super::watch_tools;
use crate::clients::{ClientName, Scope};
use crate::http::calls::allowed_tools;
use crate::http::state::AppState;

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

fn names(state: &AppState, tools: &[Tool], scope: &Scope) -> Vec<String> {
    visible(state, tools, scope)
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

/// One session that listed tools.
struct Listed {
    client: ClientName,
    peer: Peer<RoleServer>,
    /// The names it was last sent (or told changed).
    names: Vec<String>,
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
        state: &AppState,
        tools: &Arc<Vec<Tool>>,
        cancel: &CancellationToken,
        listing: (String, ClientName, &Scope),
        peer: Peer<RoleServer>,
    ) {
        let (session, client, scope) = listing;
        let names = names(state, tools, scope);
        lock(&self.sessions).insert(
            session,
            Listed {
                client,
                peer,
                names,
            },
        );
        if !self.watching.swap(true, Ordering::AcqRel) {
            let lists = Arc::clone(self);
            let (state, tools, cancel) = (state.clone(), Arc::clone(tools), cancel.clone());
            tokio::spawn(async move { lists.watch(state, tools, cancel).await });
        }
    }

    /// Waits for roster replacements and tells each session whose tools changed.
    async fn watch(
        self: Arc<Self>,
        state: AppState,
        tools: Arc<Vec<Tool>>,
        cancel: CancellationToken,
    ) {
        let mut replaced = state.keys.directory().replaced();
        loop {
            tokio::select! {
                () = cancel.cancelled() => return,
                changed = replaced.changed() => if changed.is_err() { return },
            }
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
                        let now = names(&state, &tools, &scope);
                        (now != s.names).then(|| {
                            s.names = now;
                            (id.clone(), s.peer.clone())
                        })
                    })
                    .collect()
            };
            for (session, peer) in changed {
                if let Err(e) = peer.notify_tool_list_changed().await {
                    tracing::debug!(%session, error = %e, "tools/list_changed not sent; forgetting the session");
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
