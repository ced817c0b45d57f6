//! [`AppState`]: what every handler and edge layer can reach, and how a reload (SIGHUP,
//! `POST /v1/admin/reload`) replaces the configuration it serves.
//!
//! A reload reads the whole configuration again and builds everything it changes beside what
//! runs (the clients and keys, the served tools); any problem anywhere changes nothing, is
//! answered in full and is logged at ERROR, whoever asked. Only then is each part swapped in,
//! at once for every later request: the clients, the served tools (whose calls in flight
//! finish on the snapshot they started with) and the configuration the handlers read (prompts,
//! guidance). Settings only a restart can
//! apply keep their running values and are named in the answer (`config::settle`).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use axum::http::HeaderMap;
use axum::response::Response;

use super::edge::{
    Browsers, Caller, ClientLimits, ClientSetup, Keys, Role, StreamLimits, client_setup,
};
use crate::call::{Gateway, ToolChanges};
use crate::clients::{ProviderReserve, Roster, ToolShare};
use crate::config::{self, Config, LimitsConfig};
use crate::fleet::Replicas;
use crate::jobs::callbacks::signing;
use crate::providers::Env;
use crate::tools::spend::{Amount, Budget};

/// The router's state: the one [`AppState`] of the gateway, behind one reference count.
///
/// axum hands every handler and `from_fn` middleware its own clone of the router's state (a
/// tool call passes four). `AppState` holds a dozen reference-counted parts, so cloning it
/// changed a dozen counters, and each clone's drop changed them again: cache lines that every
/// worker thread writes on every request, which then move from core to core. A clone of this
/// changes one counter.
pub type SharedState = Arc<AppState>;

/// What every handler can reach (through [`SharedState`] once the router is built).
#[derive(Debug, Clone)]
pub struct AppState {
    /// The call pipeline.
    pub gateway: Arc<Gateway>,
    /// Metrics, alerts and event streams.
    pub telemetry: Arc<crate::telemetry::Telemetry>,
    /// The configuration in force (prompts, policies), replaced whole by a reload: read it
    /// with [`AppState::config`].
    pub configuration: Arc<ArcSwap<Config>>,
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
    /// The event streams open, per client (`[limits] client_max_streams`) and in all (half of
    /// `[server] max_connections`); read at start, as the connection cap is.
    pub streams: Arc<StreamLimits>,
    /// How long one request may take (`[server] request_timeout`, resolved).
    pub request_timeout: Duration,
    /// Where a reload reads the configuration from; `None` = reloading is not possible (the
    /// demo).
    pub config_source: Option<ConfigSource>,
    /// The configuration the gateway was built from: its provider clients compiled each tool
    /// of kind http from it, so a reload serves those tools only as it declares them.
    pub built: Arc<Config>,
    /// Held by the reload in progress, so two (a SIGHUP and the route) never interleave.
    pub(crate) reloading: Arc<Mutex<()>>,
    /// When (epoch milliseconds) the configuration in force was loaded: at start, or by the
    /// last reload that installed one.
    pub(crate) loaded_at_ms: Arc<AtomicI64>,
    /// The fleet's configurations (a PostgreSQL fleet): which each replica runs, and the
    /// fleet-wide reload; set with the fleet.
    pub replicas: Option<Replicas>,
}

/// Reads the configuration again (`faregate.toml`, `tools/`, `prompts/`) as a start would, and
/// the environment its keys are read from.
#[derive(Clone)]
pub struct ConfigSource {
    read: Arc<dyn Fn() -> Result<Config, Vec<String>> + Send + Sync>,
    env: Arc<dyn Env + Send + Sync>,
}

impl ConfigSource {
    /// A source that calls `read` on every reload (each problem naming its file and key) and
    /// reads client keys from `env`.
    pub fn new(
        read: impl Fn() -> Result<Config, Vec<String>> + Send + Sync + 'static,
        env: impl Env + Send + Sync + 'static,
    ) -> Self {
        ConfigSource {
            read: Arc::new(read),
            env: Arc::new(env),
        }
    }
}

impl std::fmt::Debug for ConfigSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ConfigSource")
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
    /// The tools added, removed and changed.
    pub tools: ToolChanges,
    /// Whether any file of `prompts/` changed (fallback texts, the agent guidance).
    pub prompts_changed: bool,
    /// Whether the maintenance windows changed.
    pub maintenance_changed: bool,
    /// The settings read with another value that only a restart applies (their running value
    /// stays), each with both values.
    pub needs_restart: Vec<String>,
    /// The fingerprint of the files read (`config::fingerprint`), in force now.
    pub fingerprint: String,
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
    /// The state of a gateway serving `gateway` under `config`, with these keys and limits, and
    /// nothing attached (no jobs, watches, fleet or reload source).
    pub fn new(
        gateway: Arc<Gateway>,
        telemetry: Arc<crate::telemetry::Telemetry>,
        config: Config,
        keys: Keys,
        limits: Arc<ClientLimits>,
    ) -> Self {
        let built = Arc::new(config);
        telemetry
            .metrics()
            .set_config_fingerprint(&built.fingerprint);
        let streams = Arc::new(StreamLimits::new(
            built.limits.client_max_streams,
            built.server.max_connections,
        ));
        AppState {
            gateway,
            telemetry,
            max_body_bytes: built.server.max_body_bytes,
            request_timeout: built.request_timeout(),
            configuration: Arc::new(ArcSwap::new(Arc::clone(&built))),
            built,
            jobs: None,
            watches: None,
            back_in_service: None,
            fleet: None,
            keys,
            limits,
            streams,
            config_source: None,
            reloading: Arc::default(),
            loaded_at_ms: Arc::new(AtomicI64::new(crate::clock::epoch_ms())),
            replicas: None,
        }
    }

    /// The configuration in force now.
    pub fn config(&self) -> Arc<Config> {
        self.configuration.load_full()
    }

    /// When (epoch milliseconds) the configuration in force was loaded.
    pub fn loaded_at_ms(&self) -> i64 {
        self.loaded_at_ms.load(Ordering::Relaxed)
    }

    /// Authorizes a request for a route that needs `role`; `what` names an admin action in
    /// messages.
    pub(crate) fn authorize(
        &self,
        headers: &HeaderMap,
        role: Role,
        what: &str,
    ) -> Result<Caller, Box<Response>> {
        let config = self.configuration.load();
        self.keys
            .authorize(headers, role, what, &config.auth.admin_key_env)
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

    /// Why `setup` cannot replace the running clients: a setup without client keys while keys
    /// are on (a reload must never turn authentication off; a restart can).
    fn refuse_clients(&self, setup: &ClientSetup) -> Option<String> {
        (setup.roster.auth_off() && !self.keys.auth_off()).then(|| {
            "the reloaded configuration accepts no client key, which would turn authentication off; keep at least one key, or restart the gateway to run without keys".into()
        })
    }

    /// Installs `setup` at once for every later request: its keys, its clients' budgets, and
    /// the limits of clients that have their own.
    fn install_clients(&self, setup: ClientSetup) {
        self.limits.set_own(&setup.own_limits);
        self.gateway.set_budgets(budgets(&setup.roster));
        // `[limits]` keep their running values until a restart; the clients calling may change.
        let limits = &self.config().limits;
        self.gateway
            .set_client_share(client_share(&setup.roster, limits));
        self.gateway
            .set_provider_reserve(provider_reserve(&setup.roster, limits));
        self.keys.directory().replace(setup.roster);
    }

    /// Reads the whole configuration again from where it came from and installs it (SIGHUP and
    /// `POST /v1/admin/reload`): the clients and keys, the tools, the prompts and the
    /// maintenance windows. Every problem of the configuration read is answered at once and
    /// nothing changes; settings only a restart applies keep their running values and are
    /// named. Blocking (it reads files): call it off the async workers.
    pub fn reload(&self) -> Result<ReloadSummary, ReloadError> {
        let source = self.config_source.as_ref().ok_or(ReloadError::NoSource)?;
        let _one_at_a_time = self
            .reloading
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let read = (source.read)().map_err(refused)?;
        let running = self.config();
        let settled = config::settle(&running, &self.built, read, self.request_timeout);
        let mut problems = Vec::new();
        let setup = client_setup(&settled.config, source.env.as_ref())
            .map_err(|e| problems.extend(e))
            .ok();
        if let Some(refused) = setup.as_ref().and_then(|s| self.refuse_clients(s)) {
            problems.push(refused);
        }
        let prepared = self
            .gateway
            .prepare(&settled.config)
            .map_err(|e| problems.extend(e))
            .ok();
        let (Some(setup), Some(prepared), true) = (setup, prepared, problems.is_empty()) else {
            return Err(refused(problems));
        };
        let mut summary = ReloadSummary {
            clients: setup
                .roster
                .profiles()
                .keys()
                .map(ToString::to_string)
                .collect(),
            client_keys: setup.roster.client_keys(),
            admin_key: setup.roster.has_admin(),
            tools: ToolChanges::default(),
            prompts_changed: running.prompts != settled.config.prompts,
            maintenance_changed: running.maintenance != settled.config.maintenance,
            needs_restart: settled.needs_restart,
            fingerprint: settled.config.fingerprint.clone(),
        };
        let padded = signing::whitespace_warnings(&settled.config, source.env.as_ref());
        // The prompts first: a tool the new set adds finds its guidance lines in force.
        self.configuration.store(Arc::new(settled.config));
        self.install_clients(setup);
        summary.tools = self.gateway.install(prepared);
        self.loaded_at_ms
            .store(crate::clock::epoch_ms(), Ordering::Relaxed);
        self.telemetry
            .metrics()
            .set_config_fingerprint(&summary.fingerprint);
        // The fleet hears of this replica's new configuration now, not at the next write.
        if let Some(replicas) = &self.replicas {
            replicas.wake();
        }
        tracing::info!(
            clients = summary.clients.len(),
            client_keys = summary.client_keys,
            added = ?summary.tools.added,
            removed = ?summary.tools.removed,
            changed = ?summary.tools.changed,
            prompts_changed = summary.prompts_changed,
            maintenance_changed = summary.maintenance_changed,
            fingerprint = %summary.fingerprint,
            "configuration reloaded"
        );
        for setting in &summary.needs_restart {
            tracing::warn!("reload: {setting}");
        }
        for warning in padded {
            tracing::warn!("reload: {warning}");
        }
        Ok(summary)
    }
}

/// A reload refused for `problems`, each logged at ERROR here, whoever asked (SIGHUP has no one
/// else to tell, and the route's 422 reaches only its caller, not whoever reads the server's
/// log for why the running configuration still serves).
fn refused(problems: Vec<String>) -> ReloadError {
    for problem in &problems {
        tracing::error!("reload: {problem}");
    }
    tracing::error!(
        problems = problems.len(),
        "configuration not reloaded; the running one keeps serving"
    );
    ReloadError::Problems(problems)
}

/// The share of each tool's bulkhead one client may hold, as the gateway holds it: `limits`'
/// `client_share_of_tool` while `roster` has more than one client, none while it has one.
pub fn client_share(roster: &Roster, limits: &LimitsConfig) -> Option<ToolShare> {
    limits.client_share_of_tool.among(roster.profiles().len())
}

/// The part of each provider's rate-limit window clients are held to their share of, as the
/// gateway holds it: `limits`' `provider_reserve` while `roster` has more than one client,
/// none while it has one (or while it is 0).
pub fn provider_reserve(roster: &Roster, limits: &LimitsConfig) -> Option<ProviderReserve> {
    limits.provider_reserve.among(roster.profiles().len())
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
                callback_allowlist: None,
                callback_secret: None,
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

    /// The shares (of a tool, of a provider's window) hold while more than one client holds a key: a client holding two keys is
    /// one client, and the admin key is none.
    #[test]
    fn the_share_holds_from_the_second_client_on() {
        let limits = config::default_limits();
        let profile = |name: &str| Arc::new(ClientProfile::unrestricted(ClientName::stored(name)));
        let mut roster = Roster::default();
        assert_eq!(client_share(&roster, &limits), None, "auth off");
        assert_eq!(provider_reserve(&roster, &limits), None, "auth off");
        roster
            .add_admin(digest(b"admin"))
            .unwrap_or_else(|e| panic!("{e}"));
        let added = [
            roster.add_client(digest(b"key-a"), profile("team-a")),
            roster.add_client(digest(b"key-a2"), profile("team-a")),
        ];
        assert!(added.iter().all(Result::is_ok), "{added:?}");
        assert_eq!(client_share(&roster, &limits), None, "one client, two keys");
        assert_eq!(
            provider_reserve(&roster, &limits),
            None,
            "one client, two keys"
        );
        let added = roster.add_client(digest(b"key-b"), profile("team-b"));
        assert!(added.is_ok(), "{added:?}");
        assert_eq!(client_share(&roster, &limits), Some(ToolShare::HALF));
        assert_eq!(
            provider_reserve(&roster, &limits),
            Some(ProviderReserve::DEFAULT)
        );
    }
}
