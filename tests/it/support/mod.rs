//! Shared helpers for the integration tests: configuration pointing at a test upstream, and a
//! gateway server on `127.0.0.1:0`.

use std::path::Path;
use std::time::Duration;

use faregate::config::{self, Config, EMBEDDED_CONFIG, EmbeddedFiles};
use faregate::providers::Env;

/// An environment with no variables set: tests never touch the process environment.
pub(crate) struct NoEnv;

impl Env for NoEnv {
    fn var(&self, _name: &str) -> Option<String> {
        None
    }
}

/// An environment with the given variables.
pub(crate) struct MapEnv(pub Vec<(&'static str, &'static str)>);

impl Env for MapEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    }
}

/// The embedded default configuration with every provider pointed at `base_url`.
pub(crate) fn config_for(base_url: &str) -> Config {
    let (mut config, _) = config::load(
        &EmbeddedFiles,
        Path::new(EMBEDDED_CONFIG),
        &faregate::tools::names(),
    )
    .unwrap_or_else(|e| panic!("embedded config: {e}"));
    let url = reqwest::Url::parse(base_url).unwrap_or_else(|e| panic!("{base_url}: {e}"));
    for p in config.providers.values_mut() {
        p.base_url = url.clone();
    }
    config
}

/// Shortens every tool's timeout and deadline (tests use real sockets and real time).
pub(crate) fn with_timeouts(mut config: Config, timeout: Duration, deadline: Duration) -> Config {
    for t in &mut config.tools {
        t.timeout = timeout;
        t.deadline = deadline;
    }
    config
}

/// A date `days` from today, as `YYYY-MM-DD`.
pub(crate) fn in_days(days: i64) -> String {
    (faregate::call::Gateway::today() + chrono::Duration::days(days))
        .format("%Y-%m-%d")
        .to_string()
}

/// The built-in simulator on an ephemeral port; stops when dropped.
pub(crate) struct TestSim {
    pub(crate) sim: faregate_sim::Simulator,
    pub(crate) addr: std::net::SocketAddr,
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
    let sim = faregate_sim::Simulator::new(seed);
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
    pub(crate) addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
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
        let mut app = faregate::app::build(config, env).unwrap_or_else(|e| panic!("build: {e:?}"));
        faregate::app::attach_jobs(&mut app, store, env);
        Self::serve(app).await
    }

    /// `http://addr` + `path`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for TestGateway {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

/// GETs `url` and reads the JSON body (panics with the error otherwise: test input only).
pub(crate) async fn get_json(http: &reqwest::Client, url: &str) -> serde_json::Value {
    http.get(url)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"))
        .json()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"))
}
