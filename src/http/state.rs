//! [`AppState`]: what every handler and edge layer can reach.

use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;
use axum::response::Response;

use super::edge::{Browsers, Caller, ClientLimits, Keys, Role};
use crate::call::Gateway;
use crate::config::Config;

/// What every handler can reach.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The call pipeline.
    pub gateway: Arc<Gateway>,
    /// Metrics, alerts and event streams.
    pub telemetry: Arc<crate::telemetry::Telemetry>,
    /// The configuration (prompts, policies).
    pub config: Arc<Config>,
    /// The body limit, for error messages.
    pub max_body_bytes: usize,
    /// Background mode, when a job store is configured.
    pub jobs: Option<crate::jobs::Jobs>,
    /// The breaker state shared with the fleet (or kept across restarts), when attached.
    pub fleet: Option<Arc<crate::fleet::Fleet>>,
    /// Client keys and the admin key (as digests).
    pub keys: Keys,
    /// Per-client rate and in-flight limits of the tool-call routes.
    pub limits: Arc<ClientLimits>,
    /// How long one request may take (`[server] request_timeout`, resolved).
    pub request_timeout: Duration,
}

impl AppState {
    /// Whether the call routes must refuse what a browser on another site can send unasked:
    /// exactly when client keys are off.
    pub(crate) fn browsers(&self) -> Browsers {
        if self.keys.clients.is_empty() {
            Browsers::Refused
        } else {
            Browsers::KeyProtected
        }
    }

    /// Authorizes a request for a route that needs `role`; `what` names an admin action in
    /// messages.
    pub(crate) fn authorize(
        &self,
        headers: &HeaderMap,
        role: Role,
        what: &str,
    ) -> Result<Caller, Box<Response>> {
        self.keys
            .authorize(headers, role, what, &self.config.auth.admin_key_env)
    }
}
