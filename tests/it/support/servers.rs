//! The two servers every end-to-end test runs on loopback: the provider simulator and the
//! gateway, each on `127.0.0.1:0`, each stopped when its handle is dropped.

use std::net::SocketAddr;

use faregate::config::Config;
use faregate::providers::Env;
use faregate_sim::{RouteGroup, Simulator};

/// The built-in simulator on an ephemeral port; stops when dropped.
pub(crate) struct TestSim {
    pub(crate) sim: Simulator,
    pub(crate) addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl TestSim {
    /// `http://addr`, for `config_for`.
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for TestSim {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

/// Starts the simulator with `seed` on `127.0.0.1:0`.
pub(crate) async fn start_sim(seed: u64) -> TestSim {
    let sim = Simulator::new(seed);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(faregate_sim::serve(listener, sim.clone(), async move {
        let _ = rx.await;
    }));
    TestSim {
        sim,
        addr,
        stop: Some(tx),
    }
}

/// A running gateway on an ephemeral port; stops when dropped.
pub(crate) struct TestGateway {
    pub(crate) addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    /// Where a gateway on PostgreSQL spools submissions, unless its test named a place.
    spool_dir: Option<tempfile::TempDir>,
}

impl TestGateway {
    /// Starts the gateway built from `config` and `env`.
    pub(crate) async fn start(config: Config, env: &dyn Env) -> Self {
        let app = faregate::app::build(config, env).unwrap_or_else(|e| panic!("build: {e:?}"));
        Self::serve(app).await
    }

    /// Serves an already built app.
    pub(crate) async fn serve(app: faregate::app::App) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("bind: {e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let (tx, rx) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(faregate::app::run(listener, app, async move {
            let _ = rx.await;
        }));
        TestGateway {
            addr,
            stop: Some(tx),
            task: Some(task),
            spool_dir: None,
        }
    }

    /// Starts the graceful shutdown (as SIGTERM would); the handle ends when `run` returns.
    pub(crate) fn begin_shutdown(&mut self) -> tokio::task::JoinHandle<std::io::Result<()>> {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        self.task
            .take()
            .unwrap_or_else(|| tokio::spawn(async { Ok(()) }))
    }

    /// Starts the gateway with background jobs over `store`.
    pub(crate) async fn start_with_jobs(
        config: Config,
        env: &dyn Env,
        store: faregate::jobs::Store,
    ) -> Self {
        let (config, spool_dir) = own_spool(config);
        let mut app = faregate::app::build(config, env).unwrap_or_else(|e| panic!("build: {e:?}"));
        faregate::app::attach_jobs(&mut app, store, env);
        Self::serve(app).await.keeping(spool_dir)
    }

    /// Starts the gateway as `faregate serve` does: its breakers' state in `store`'s database
    /// (shared with the other replicas on PostgreSQL, kept across restarts on SQLite), and
    /// background jobs over `store`.
    pub(crate) async fn start_in_fleet(
        config: Config,
        env: &dyn Env,
        store: faregate::jobs::Store,
    ) -> Self {
        Self::start_in_fleet_from(config, env, store, None).await
    }

    /// [`TestGateway::start_in_fleet`], reloading from `source` (as `faregate serve` reloads
    /// from its files) when one is given.
    pub(crate) async fn start_in_fleet_from(
        config: Config,
        env: &dyn Env,
        store: faregate::jobs::Store,
        source: Option<faregate::http::ConfigSource>,
    ) -> Self {
        Self::start_in_fleet_with(config, env, store, source, None).await
    }

    /// [`TestGateway::start_in_fleet`] with the alert rules' thresholds `rules` (a test's
    /// shorter ones) instead of the gateway's.
    pub(crate) async fn start_in_fleet_alerting(
        config: Config,
        store: faregate::jobs::Store,
        rules: faregate::telemetry::AlertRules,
    ) -> Self {
        Self::start_in_fleet_with(config, &super::NoEnv, store, None, Some(rules)).await
    }

    async fn start_in_fleet_with(
        config: Config,
        env: &dyn Env,
        store: faregate::jobs::Store,
        source: Option<faregate::http::ConfigSource>,
        rules: Option<faregate::telemetry::AlertRules>,
    ) -> Self {
        let (config, spool_dir) = own_spool(config);
        let mut app = faregate::app::build(config, env).unwrap_or_else(|e| panic!("build: {e:?}"));
        app.state.config_source = source;
        if let Some(rules) = rules {
            app.state.telemetry.set_alert_rules(rules);
        }
        let fleet = faregate::fleet::Fleet::open(store.db().clone())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        faregate::app::attach_fleet(&mut app, fleet)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        faregate::app::attach_jobs(&mut app, store, env);
        Self::serve(app).await.keeping(spool_dir)
    }

    fn keeping(mut self, spool_dir: Option<tempfile::TempDir>) -> Self {
        self.spool_dir = spool_dir;
        self
    }

    /// `http://addr` + `path`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

/// `config` with its spool in a directory of its own (removed with the gateway), unless the
/// test named one: a gateway whose PostgreSQL is slow must not spool into the repository.
fn own_spool(mut config: Config) -> (Config, Option<tempfile::TempDir>) {
    if config.store.spool_path != std::path::Path::new(faregate::config::DEFAULT_SPOOL) {
        return (config, None);
    }
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    config.store.spool_path = dir.path().join("spool.db");
    (config, Some(dir))
}

impl Drop for TestGateway {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

/// How many requests of `group` have reached the simulator so far (in flight included).
pub(crate) fn requests(sim: &Simulator, group: RouteGroup) -> u64 {
    sim.stats().groups.get(&group).map_or(0, |g| g.requests)
}
