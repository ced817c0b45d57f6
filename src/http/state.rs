//! [`AppState`]: what every handler and edge layer can reach, and how the clients it holds are
//! installed and reloaded.

use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;
use axum::response::Response;

use super::edge::{Browsers, Caller, ClientLimits, ClientSetup, Keys, Role};
use crate::call::Gateway;
use crate::clients::Roster;
use crate::config::Config;
use crate::tools::spend::{Amount, Budget};

/// What every handler can reach.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The call pipeline.
    pub gateway: Arc<Gateway>,
    /// Metrics, alerts and event streams.
    pub telemetry: Arc<crate::telemetry::Telemetry>,
    /// The configuration (prompts, policies) as read at start; a reload changes the clients
    /// only.
    pub config: Arc<Config>,
    /// The body limit, for error messages.
    pub max_body_bytes: usize,
    /// Background mode, when a job store is configured.
    pub jobs: Option<crate::jobs::Jobs>,
    /// Recurring background calls, with the job store.
    pub watches: Option<crate::watches::Watches>,
    /// Notices to clients when a tool answers again, with the job store.
    pub back_in_service: Option<crate::back_in_service::BackInService>,
    /// The breaker state shared with the fleet (or kept across restarts), when attached.
    pub fleet: Option<Arc<crate::fleet::Fleet>>,
    /// Client keys and the admin key (as digests), reloadable.
    pub keys: Keys,
    /// Per-client rate and in-flight limits of the tool-call routes.
    pub limits: Arc<ClientLimits>,
    /// How long one request may take (`[server] request_timeout`, resolved).
    pub request_timeout: Duration,
    /// Where a reload reads the clients from; `None` = reloading is not possible (the demo).
    pub client_source: Option<ClientSource>,
}

/// Reads the clients and keys again (the configuration file and the environment), as a start
/// would.
#[derive(Clone)]
pub struct ClientSource(Arc<dyn Fn() -> Result<ClientSetup, Vec<String>> + Send + Sync>);

impl ClientSource {
    /// A source that calls `read` on every reload.
    pub fn new(
        read: impl Fn() -> Result<ClientSetup, Vec<String>> + Send + Sync + 'static,
    ) -> Self {
        ClientSource(Arc::new(read))
    }
}

impl std::fmt::Debug for ClientSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientSource")
    }
}

/// What a reload installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReloadSummary {
    /// The clients holding keys now, by name.
    pub clients: Vec<String>,
    /// How many client keys are accepted.
    pub client_keys: usize,
    /// Whether an admin key is configured.
    pub admin_key: bool,
}

/// Why a reload changed nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReloadError {
    /// The gateway has no configuration file to read again.
    NoSource,
    /// The configuration or the keys have problems (each says what to fix).
    Problems(Vec<String>),
}

impl AppState {
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

    /// Whether the call routes must refuse what a browser on another site can send unasked:
    /// exactly while client keys are off.
    pub(crate) fn browsers(&self) -> Browsers {
        if self.keys.auth_off() {
            Browsers::Refused
        } else {
            Browsers::KeyProtected
        }
    }

    /// Installs `setup` at once for every later request: its keys, and the limits of clients
    /// that have their own. A setup without client keys is refused while keys are on: a reload
    /// must never turn authentication off (a restart can).
    pub fn install_clients(&self, setup: ClientSetup) -> Result<ReloadSummary, ReloadError> {
        if setup.roster.auth_off() && !self.keys.auth_off() {
            return Err(ReloadError::Problems(vec![
                "the reloaded configuration accepts no client key, which would turn authentication off; keep at least one key, or restart the gateway to run without keys".into(),
            ]));
        }
        let summary = ReloadSummary {
            clients: setup
                .roster
                .profiles()
                .keys()
                .map(ToString::to_string)
                .collect(),
            client_keys: setup.roster.client_keys(),
            admin_key: setup.roster.has_admin(),
        };
        self.limits.set_own(&setup.own_limits);
        self.gateway.set_budgets(budgets(&setup.roster));
        self.keys.directory().replace(setup.roster);
        Ok(summary)
    }

    /// Reads the clients again from where they were configured and installs them (SIGHUP and
    /// `POST /v1/admin/reload`); on any problem nothing changes.
    pub fn reload_clients(&self) -> Result<ReloadSummary, ReloadError> {
        let source = self.client_source.as_ref().ok_or(ReloadError::NoSource)?;
        let setup = (source.0)().map_err(ReloadError::Problems)?;
        let summary = self.install_clients(setup)?;
        tracing::info!(
            clients = summary.clients.len(),
            client_keys = summary.client_keys,
            "clients reloaded"
        );
        Ok(summary)
    }
}

/// The daily booking budgets of `roster`'s clients, by client name, as the gateway holds them
/// (only clients that have one).
pub fn budgets(roster: &Roster) -> std::collections::BTreeMap<String, Budget> {
    roster
        .profiles()
        .into_iter()
        .filter_map(|(name, profile)| {
            let budget = profile.budget.as_ref()?;
            // Both amounts are exact decimals of at most four places: the text carries it over.
            let per_day = Amount::parse(&budget.amount.to_string())?;
            Some((
                name.to_string(),
                Budget {
                    per_day,
                    currency: budget.currency.clone(),
                },
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clients::{ClientName, ClientProfile, DailyBudget, Scope, digest};

    #[test]
    fn configured_budgets_reach_the_gateway_exactly() {
        let mut roster = Roster::default();
        let profile = |name: &str, budget: Option<DailyBudget>| {
            Arc::new(ClientProfile {
                name: ClientName::configured(name).unwrap_or_else(|e| panic!("{e}")),
                scope: Scope::everything(),
                budget,
            })
        };
        let eur = DailyBudget::new("1250.5", "EUR").unwrap_or_else(|e| panic!("{e}"));
        let added = [
            roster.add_client(digest(b"key-a"), profile("travel-app", Some(eur))),
            roster.add_client(digest(b"key-b"), profile("no-budget", None)),
        ];
        assert!(added.iter().all(Result::is_ok), "{added:?}");
        let budgets = budgets(&roster);
        assert_eq!(budgets.len(), 1, "{budgets:?}");
        let budget = &budgets["travel-app"];
        assert_eq!(budget.per_day, Amount::parse("1250.50").unwrap_or_default());
        assert_eq!(budget.currency, "EUR");
    }
}
