//! Wiring: configuration → providers → gateway → HTTP router, and `run(listener, shutdown)`.
//!
//! `run` takes its listener and its shutdown signal as parameters (mini-redis's shape), so tests
//! bind `127.0.0.1:0` and stop the server with any future they like.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::broadcast;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::back_in_service::{BackInServiceSystem, NoticeStore};
use crate::breaker::{BreakerKey, BreakerState, Origin, TransitionEvent};
use crate::call::{Gateway, Upstream};
use crate::clients::SharedRates;
use crate::config::Config;
use crate::fleet::{self, Fleet};
use crate::http::{self, AppState, ClientLimits, Keys, ServeOptions};
use crate::jobs::callbacks::allowlist::Allowlists;
use crate::jobs::callbacks::notice::NoticeSender;
use crate::jobs::callbacks::signing::{self, Signing};
use crate::jobs::{JobSystem, Store};
use crate::ledger::Ledger;
use crate::providers::{self, Env, KeptOffers};
use crate::secret::Secret;
use crate::store::StoreError;
use crate::telemetry::{AlertRules, Telemetry};
use crate::watches::{WatchStore, WatchSystem};

/// A gateway ready to serve.
#[derive(Debug, Clone)]
pub struct App {
    /// Handler state (with the client keys and the admin key, as digests).
    pub state: AppState,
    /// Start-up warnings worth logging.
    pub warnings: Vec<String>,
    /// Where the provider adapters keep the offers they hand out (the store, once attached).
    pub kept_offers: Arc<KeptOffers>,
}

/// Builds the gateway from validated configuration; every problem is returned at once.
pub fn build(config: Config, env: &dyn Env) -> Result<App, Vec<String>> {
    let built = providers::build(&config, env);
    let mut errors = built.errors;
    errors.extend(built.environment);
    let rate_limits = built.rate_limits;
    let kept_offers = built.kept_offers;
    let upstreams = built
        .providers
        .into_iter()
        .map(|(name, provider)| (name, Arc::new(provider) as Arc<dyn Upstream>))
        .collect();
    let telemetry = Arc::new(Telemetry::new(AlertRules::spec()));
    let gateway = match Gateway::new(&config, &upstreams, Arc::clone(&telemetry)) {
        Ok(g) => Some(g.with_rate_limits(rate_limits)),
        Err(e) => {
            errors.extend(e);
            None
        }
    };
    let Some(gateway) = gateway else {
        return Err(errors);
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut warnings = built.warnings;
    let setup = http::client_setup(&config, env)?;
    let auth_off = setup.roster.auth_off();
    if auth_off {
        warnings.push(format!(
            "AUTH IS OFF: {} is not set and no [[clients]] are configured, so every client is accepted and may spend provider quota. Set client keys before exposing this gateway beyond this machine.",
            config.auth.client_keys_env
        ));
        if !config.server.listen.ip().is_loopback() {
            warnings.push(format!(
                "AUTH IS OFF on a non-loopback address ({}): anyone who can reach it can call every tool.",
                config.server.listen
            ));
        }
    }
    if !setup.roster.has_admin() && !auth_off {
        warnings.push(format!(
            "{} is not set: forcing breakers (POST /v1/breakers/{{key}}/force) and reloading the configuration (POST /v1/admin/reload) are refused until it is.",
            config.auth.admin_key_env
        ));
    }
    let limits = Arc::new(ClientLimits::new(
        &config.limits,
        config.server.max_body_bytes,
    ));
    limits.set_own(&setup.own_limits);
    gateway.set_budgets(http::client_budgets(&setup.roster));
    gateway.set_client_share(http::client_share(&setup.roster, &config.limits));
    gateway.set_provider_reserve(http::provider_reserve(&setup.roster, &config.limits));
    warnings.extend(crate::config::unshared_tools(
        &config,
        setup.roster.profiles().len(),
    ));
    let state = AppState::new(
        Arc::new(gateway),
        telemetry,
        config,
        Keys::new(setup.roster),
        limits,
    );
    // A watch's runs are made only while the current roster still lets its client call the
    // tool.
    state
        .gateway
        .check_clients_against(Arc::clone(state.keys.directory()));
    Ok(App {
        state,
        warnings,
        kept_offers,
    })
}

/// Turns on background mode over `store` (already migrated), and the booking ledger in the
/// same database: from now on every write call is recorded before its provider is asked. The
/// offers the provider adapters hand out are kept in it too, so any replica (or the next start)
/// can price them. On PostgreSQL, submissions the store does not take wait in the spool at
/// `[store] spool_path`; call it after `attach_fleet`, so the spool names the replica as the
/// fleet does.
pub fn attach_jobs(app: &mut App, store: Store, env: &dyn Env) {
    app.kept_offers.attach(store.db().clone());
    let config = &app.state.config();
    app.state
        .gateway
        .attach_ledger(Ledger::new(store.db().clone(), config.bookings.settle));
    let secret = env.var(&config.auth.callback_secret_env).map(Secret::new);
    if secret.is_none() {
        app.warnings.push(format!(
            "{} is not set: background calls and notices with a callback_url are refused, except from clients whose [[clients]] entry names a callback_secret_env of its own (jobs still run; poll GET /v1/jobs/{{id}})",
            config.auth.callback_secret_env
        ));
    }
    app.warnings
        .extend(signing::whitespace_warnings(config, env));
    let postgres = store.db().is_postgres();
    let db = store.db().clone();
    let watch_store = WatchStore::new(store.db().clone());
    // Each client's callbacks are held to its own list when its entry has one, looked up in the
    // roster as reloads leave it.
    let allowlists = Allowlists::from(config.auth.callback_allowlist.clone())
        .with_clients(Arc::clone(app.state.keys.directory()));
    // Likewise signed with its own secret when its entry names one.
    let signing = Signing::from(secret).with_clients(Arc::clone(app.state.keys.directory()));
    let notices = NoticeSender::new(allowlists.clone(), signing.clone())
        .counted_in(app.state.telemetry.clone());
    app.state.back_in_service = Some(Arc::new(BackInServiceSystem::new(
        NoticeStore::new(store.db().clone()),
        app.state.gateway.clone(),
        NoticeSender::new(allowlists.clone(), signing.clone())
            .counted_in(app.state.telemetry.clone()),
    )));
    let mut jobs = JobSystem::new(
        store,
        app.state.gateway.clone(),
        app.state.telemetry.clone(),
        config.jobs.clone(),
        allowlists,
        signing,
    )
    .keep_finished_for(config.store.job_retention);
    if postgres {
        // The fleet's name for this replica when it has one, so the job API and /readyz agree.
        let replica = app
            .state
            .fleet
            .as_ref()
            .map_or_else(fleet::replica_name, |fleet| fleet.status().replica);
        app.state
            .limits
            .count_with_fleet(SharedRates::new(db, replica.clone()));
        jobs = jobs.spool_in(config.store.spool_path.clone(), replica);
    }
    let jobs = Arc::new(jobs);
    app.state.watches = Some(Arc::new(
        WatchSystem::new(
            watch_store,
            Arc::clone(&jobs),
            app.state.gateway.clone(),
            config.watches.clone(),
            notices,
        )
        .keep_ended_for(config.store.job_retention),
    ));
    app.state.jobs = Some(jobs);
}

/// Shares the breakers' state through `fleet` (PostgreSQL: with the other replicas; SQLite:
/// with the next start): restores forced states, opens still running and the history before
/// the gateway serves, and lets `run` keep them in step.
pub async fn attach_fleet(app: &mut App, fleet: Arc<Fleet>) -> Result<(), StoreError> {
    // The fleet's outage ends as a replica's alert clock does.
    fleet.set_rejecting_grace(app.state.telemetry.alert_rules().half_open_grace);
    fleet.restore(app.state.gateway.breakers()).await?;
    app.state.gateway.watch_store(Arc::clone(&fleet));
    app.state.replicas = fleet.replicas();
    app.state.fleet = Some(fleet);
    Ok(())
}

/// How often breaker timers are evaluated for events (state itself is always exact).
const BREAKER_TICK: Duration = Duration::from_millis(250);

/// Serves the HTTP API on `listener` until `shutdown` completes, then shuts down gracefully.
///
/// Alongside the server runs the booking reconciliation task (when a ledger is attached) and
/// one small task owned by this function: it ticks the breakers so
/// timer-driven transitions (open → half-open, ramp stages) are announced without traffic, logs
/// every transition, and hands it to telemetry (metrics, alert rules, evaluated on each tick
/// too). It ends when the server does.
///
/// Shutdown, in order (`[server] shutdown_grace` bounds the whole drain):
/// 1. the listener closes: new connections are refused;
/// 2. event streams end (`/v1/events`, `/v1/availability/events`, `GET /mcp`), and background
///    workers stop claiming jobs;
/// 3. in-flight HTTP calls finish (each connection closes after its current response), MCP
///    `tools/call` requests included, in a session or not, and running background jobs
///    finish; whatever still runs when the grace period ends is abandoned: its connection is
///    closed, its job's lease is handed back to the queue (the job is not lost and not counted
///    as an attempt, so it runs again on the next start or another replica);
/// 4. the MCP sessions end (rmcp's token is cancelled only now: cancelled earlier, it cut
///    every MCP request in flight);
/// 5. the caller drops its telemetry guard, which flushes buffered spans.
pub async fn run(
    listener: TcpListener,
    app: App,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let gateway = app.state.gateway.clone();
    let telemetry = app.state.telemetry.clone();
    let (fleet, jobs) = (app.state.fleet.clone(), app.state.jobs.clone());
    let shared = fleet.clone();
    // Whether this replica's store answers, as the fleet's task and the job spool last found
    // (no statement here): a replica without either has no store to lose.
    let store_answers = move || {
        fleet.as_ref().is_none_or(|f| f.is_connected())
            && jobs.as_ref().is_none_or(|j| !j.spooling())
    };
    // When the fleet's record says the outage of `key` began, if it knows.
    let fleet_since = move |key: &BreakerKey| shared.as_ref().and_then(|f| f.rejecting_since(key));
    let breaker_task = tokio::spawn(async move {
        let mut events = gateway.breakers().subscribe();
        // What the fleet restored before anyone listened (an open running, or run out into
        // half-open) told the alert rules nothing: they are told now, from the fleet's open.
        let now = Instant::now();
        for breaker in gateway.breakers().all() {
            let snapshot = breaker.snapshot(now);
            telemetry.on_breaker_found(&snapshot, fleet_since(&snapshot.key), now);
        }
        let mut tick = tokio::time::interval(BREAKER_TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    gateway.breakers().tick_all(Instant::now());
                    telemetry.on_store(store_answers(), Instant::now());
                }
                event = events.recv() => match event {
                    Ok(e) => {
                        log_transition(&e);
                        telemetry.on_transition(&e);
                        // An open followed from the fleet is timed from the fleet's open, not
                        // from when this replica heard of it.
                        let rejecting = matches!(e.to, BreakerState::Open | BreakerState::HalfOpen);
                        if e.origin == Origin::Fleet
                            && rejecting
                            && let Some(since) = fleet_since(&e.key)
                        {
                            telemetry.on_fleet_open(&e.key, since, Instant::now());
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(missed = n, "breaker event log fell behind");
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                },
            }
        }
    });
    let reconciler = reconcile_bookings(
        app.state.gateway.clone(),
        app.state.config().bookings.reconcile_every,
    );
    let server_config = &app.state.config().server;
    let options = ServeOptions {
        header_read_timeout: server_config.header_read_timeout,
        max_connections: server_config.max_connections,
        max_concurrent_streams: server_config.max_concurrent_streams,
        shutdown_grace: server_config.shutdown_grace,
    };
    let fleet_stop = CancellationToken::new();
    let fleet_task = app.state.fleet.clone().map(|fleet| {
        let gateway = app.state.gateway.clone();
        let stop = fleet_stop.clone();
        tokio::spawn(async move { fleet.run(gateway.breakers(), stop).await })
    });
    // Each client's rate held for the fleet; it ends with the server (the answers it would
    // still share are those of calls no longer made).
    let limits_stop = CancellationToken::new();
    let limits_task = app.state.limits.fleet().map(|shared| {
        tokio::spawn(http::share_client_rates(
            Arc::clone(&app.state.limits),
            shared,
            limits_stop.clone(),
        ))
    });
    // Which configuration this replica runs, shown to the fleet, and the reloads the fleet is
    // asked for (PostgreSQL); it ends with the server.
    let configs_stop = CancellationToken::new();
    let configs_task = app.state.replicas.clone().map(|replicas| {
        tokio::spawn(http::keep_configs_in_step(
            Arc::new(app.state.clone()),
            replicas,
            configs_stop.clone(),
        ))
    });
    let jobs_stop = CancellationToken::new();
    let jobs_task = app
        .state
        .jobs
        .clone()
        .map(|jobs| tokio::spawn(jobs.run(jobs_stop.clone(), options.shutdown_grace)));
    // Watches start runs and record them until the jobs stop: a run is a job, so a watch
    // loses nothing when it stops first.
    let watches_task = app
        .state
        .watches
        .clone()
        .map(|watches| tokio::spawn(watches.run(jobs_stop.clone())));
    // Back-in-service notices stop with the jobs too: a notice not yet fired or sent stays in
    // the store for the next start or another replica.
    let notices_task = app
        .state
        .back_in_service
        .clone()
        .map(|notices| tokio::spawn(notices.run(jobs_stop.clone())));
    let telemetry = app.state.telemetry.clone();
    // rmcp's token, which ends every MCP session and every request rmcp still runs: cancelled
    // only once the drain is over. Cancelled when shutdown starts, it cut the MCP calls in
    // flight (a booking among them) instead of letting them finish within the grace period;
    // the event streams that would hold the drain (`GET /mcp`) end on `close_streams` below.
    let mcp_stop = CancellationToken::new();
    let router = http::router(app.state, mcp_stop.clone());
    let stop_jobs = jobs_stop.clone();
    let result = http::serve(listener, router, options, shutdown, move || {
        tracing::info!("shutting down: no new connections; finishing in-flight calls");
        // Open event streams (`/v1/events`, `GET /mcp`, …) would otherwise hold the graceful
        // shutdown forever.
        telemetry.close_streams();
        // Workers stop claiming now; running jobs get the same grace period as HTTP calls.
        stop_jobs.cancel();
    })
    .await;
    mcp_stop.cancel();
    jobs_stop.cancel();
    if let Some(task) = watches_task {
        let _ = task.await;
    }
    if let Some(task) = notices_task {
        let _ = task.await;
    }
    if let Some(task) = jobs_task {
        let _ = task.await;
    }
    breaker_task.abort();
    reconciler.abort();
    limits_stop.cancel();
    if let Some(task) = limits_task {
        let _ = task.await;
    }
    configs_stop.cancel();
    if let Some(task) = configs_task {
        let _ = task.await;
    }
    // After the jobs, so that the transitions of their last calls are published.
    fleet_stop.cancel();
    if let Some(mut task) = fleet_task {
        // The last transitions reach the store when it answers; one out of reach does not hold
        // the stop (each of its statements gives up after a second, but a replica cut off
        // with writes pending would meet one after another).
        if tokio::time::timeout(FLEET_STOP, &mut task).await.is_err() {
            task.abort();
            tracing::warn!(
                "fleet: stopped without writing its last breaker transitions (the store did not answer within {FLEET_STOP:?})"
            );
        }
    }
    result
}

/// How long a stopping replica gives the fleet's last writes.
const FLEET_STOP: Duration = Duration::from_secs(2);

/// The reconciliation task: every `every`, unknown bookings are looked up at their provider
/// (see `Gateway::reconcile_bookings`). Every replica runs one; a replica writes only an entry
/// still as it read it (`Ledger::settle_read`), so the first to settle an entry wins, and a
/// slower one cannot overwrite a booking the client tried again since.
fn reconcile_bookings(gateway: Arc<Gateway>, every: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if gateway.ledger().is_none() {
            return;
        }
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let settled = gateway.reconcile_bookings().await;
            if settled > 0 {
                tracing::info!(settled, "bookings reconciled with their provider");
            }
        }
    })
}

fn log_transition(e: &TransitionEvent) {
    let opened = matches!(e.to, BreakerState::Open | BreakerState::ForcedOpen);
    let fields = (
        e.key.tool.as_str(),
        e.key.provider.as_str(),
        e.from.detail_str(),
        e.to.detail_str(),
        e.reason.as_str(),
    );
    if opened {
        tracing::warn!(
            breaker = %e.key, tool = fields.0, provider = fields.1, from = fields.2, to = fields.3,
            reason = fields.4, failure_rate = e.failure_rate, slow_rate = e.slow_rate, calls = e.calls,
            "breaker opened"
        );
    } else {
        tracing::info!(
            breaker = %e.key, tool = fields.0, provider = fields.1, from = fields.2, to = fields.3,
            reason = fields.4, failure_rate = e.failure_rate, slow_rate = e.slow_rate, calls = e.calls,
            "breaker transition"
        );
    }
}
