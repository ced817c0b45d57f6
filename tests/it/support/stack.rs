//! The end-to-end stack: the simulator, a gateway whose providers all point at it, and an HTTP
//! client, as an agent's backend would see them; optionally with a job store and a wiremock
//! receiver for job callbacks.
//!
//! ```text
//! let s = Stack::start(7).await;                                     // the shipped config
//! let s = Stack::builder(11).env(keys).config(short).jobs().start().await;
//! let (status, envelope) = s.call("search_flights", json!({"arguments": {...}})).await;
//! ```

use std::time::Duration;

use faregate::config::Config;
use faregate::jobs::Store;
use faregate_sim::{Fault, RouteGroup, Simulator};
use serde_json::{Value, json};
use wiremock::MockServer;

use super::{MapEnv, TestGateway, TestSim, config_for, send, sqlite_store, start_sim, wait_until};

/// The simulator, a gateway in front of it, and a client; everything stops when it is dropped.
pub(crate) struct Stack {
    /// The gateway, on `127.0.0.1:0`.
    pub(crate) gateway: TestGateway,
    /// The simulator the gateway's providers point at: set faults, read its counters.
    pub(crate) sim: Simulator,
    /// The client every helper below sends with.
    pub(crate) http: reqwest::Client,
    /// Sent as `Authorization: Bearer` by the helpers, when set.
    client_key: Option<&'static str>,
    /// The job store, when the stack was built with one.
    store: Option<Store>,
    /// The callback receiver, when the stack was built with one.
    receiver: Option<MockServer>,
    _sim_server: TestSim,
    _store_dir: Option<tempfile::TempDir>,
}

/// How to build a [`Stack`]; [`Stack::builder`] starts one.
pub(crate) struct StackBuilder {
    seed: u64,
    env: MapEnv,
    client_key: Option<&'static str>,
    tweaks: Vec<Box<dyn FnOnce(Config) -> Config>>,
    jobs: Jobs,
    receiver: Option<MockServer>,
}

/// Which job store a stack runs background calls on.
enum Jobs {
    None,
    Sqlite,
    In(Store),
}

impl Stack {
    /// The shipped configuration against a simulator seeded with `seed`; no keys, no job store.
    pub(crate) async fn start(seed: u64) -> Stack {
        Stack::builder(seed).start().await
    }

    /// A stack against a simulator seeded with `seed`, set up by the builder's methods.
    pub(crate) fn builder(seed: u64) -> StackBuilder {
        StackBuilder {
            seed,
            env: MapEnv(vec![]),
            client_key: None,
            tweaks: Vec::new(),
            jobs: Jobs::None,
            receiver: None,
        }
    }

    /// The gateway's URL for `path`.
    /// The simulator's base URL, for a second gateway in front of the same simulator.
    pub(crate) fn sim_url(&self) -> String {
        self._sim_server.url()
    }

    pub(crate) fn url(&self, path: &str) -> String {
        self.gateway.url(path)
    }

    /// POSTs `body` to `path` and reads the JSON answer.
    pub(crate) async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let (status, _, body) = send(self.keyed(self.http.post(self.url(path)).json(&body))).await;
        (status, body)
    }

    /// GETs `path` and reads the JSON answer.
    pub(crate) async fn get_json(&self, path: &str) -> (u16, Value) {
        let (status, _, body) = send(self.keyed(self.http.get(self.url(path)))).await;
        (status, body)
    }

    /// Calls `tool` natively (`POST /v1/tools/{tool}/call`) with `body` (`{"arguments": …}` and
    /// any options).
    pub(crate) async fn call(&self, tool: &str, body: Value) -> (u16, Value) {
        self.post(&format!("/v1/tools/{tool}/call"), body).await
    }

    /// Submits `body` as a background job of `tool` (as [`Stack::call`] with
    /// `"mode": "background"`).
    pub(crate) async fn submit(&self, tool: &str, mut body: Value) -> (u16, Value) {
        body["mode"] = json!("background");
        self.call(tool, body).await
    }

    /// Polls `GET /v1/jobs/{id}` until the job matches `done`, and panics after `within`.
    pub(crate) async fn wait_for_job(
        &self,
        id: &str,
        within: Duration,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let path = format!("/v1/jobs/{id}");
        wait_until(within, "the job to reach the state", || async {
            let (_, job) = self.get_json(&path).await;
            if done(&job) {
                Ok(job)
            } else {
                Err(format!("{job:#}"))
            }
        })
        .await
    }

    /// Takes `group` down: every request to it answers 503 until the faults are cleared.
    pub(crate) fn down(&self, group: RouteGroup) {
        self.sim.set_fault(
            group,
            Fault {
                outage: true,
                ..Fault::default()
            },
        );
    }

    /// Takes both flight search providers down (Duffel, and Amadeus behind it in the chain), so
    /// that the tool itself is down rather than failing over.
    pub(crate) fn flights_down(&self) {
        self.down(RouteGroup::DuffelAirSearch);
        self.down(RouteGroup::AmadeusFlights);
    }

    /// How many requests of `group` have reached the simulator.
    pub(crate) fn requests(&self, group: RouteGroup) -> u64 {
        super::requests(&self.sim, group)
    }

    /// The job store (the stack must have been built with one).
    pub(crate) fn store(&self) -> &Store {
        self.store
            .as_ref()
            .unwrap_or_else(|| panic!("this stack has no job store: build it with .jobs()"))
    }

    /// The callback receiver (the stack must have been built with one).
    pub(crate) fn receiver(&self) -> &MockServer {
        self.receiver
            .as_ref()
            .unwrap_or_else(|| panic!("this stack has no receiver: build it with .callbacks_to()"))
    }

    /// A callback URL on the receiver, inside the gateway's allowlist.
    pub(crate) fn callback_url(&self) -> String {
        format!("{}/hooks/faregate", self.receiver().uri())
    }

    /// `request` with the stack's client key, when it has one.
    pub(crate) fn keyed(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match self.client_key {
            Some(key) => request.bearer_auth(key),
            None => request,
        }
    }
}

impl StackBuilder {
    /// The gateway's environment (keys, the callback secret); default: no variables.
    pub(crate) fn env(mut self, env: MapEnv) -> Self {
        self.env = env;
        self
    }

    /// A client key the helpers send as `Authorization: Bearer`.
    pub(crate) fn client_key(mut self, key: &'static str) -> Self {
        self.client_key = Some(key);
        self
    }

    /// Changes the configuration (already pointed at the simulator); tweaks apply in order.
    pub(crate) fn config(mut self, tweak: impl FnOnce(Config) -> Config + 'static) -> Self {
        self.tweaks.push(Box::new(tweak));
        self
    }

    /// Background jobs on a fresh SQLite store in a temporary directory.
    pub(crate) fn jobs(mut self) -> Self {
        self.jobs = Jobs::Sqlite;
        self
    }

    /// Background jobs on `store`.
    pub(crate) fn jobs_in(mut self, store: Store) -> Self {
        self.jobs = Jobs::In(store);
        self
    }

    /// Job callbacks to `receiver`: its `/hooks/` path joins the callback allowlist.
    pub(crate) fn callbacks_to(mut self, receiver: MockServer) -> Self {
        self.receiver = Some(receiver);
        self
    }

    /// Starts the simulator, then the gateway.
    pub(crate) async fn start(self) -> Stack {
        let sim_server = start_sim(self.seed).await;
        let mut config = config_for(&sim_server.url());
        if let Some(receiver) = &self.receiver {
            let hooks = format!("{}/hooks/", receiver.uri());
            let url = reqwest::Url::parse(&hooks).unwrap_or_else(|e| panic!("{hooks}: {e}"));
            config.auth.callback_allowlist.push(url);
        }
        for tweak in self.tweaks {
            config = tweak(config);
        }
        let (store, store_dir) = match self.jobs {
            Jobs::None => (None, None),
            Jobs::Sqlite => {
                let (store, dir) = sqlite_store().await;
                (Some(store), Some(dir))
            }
            Jobs::In(store) => (Some(store), None),
        };
        let gateway = match &store {
            Some(store) => TestGateway::start_with_jobs(config, &self.env, store.clone()).await,
            None => TestGateway::start(config, &self.env).await,
        };
        Stack {
            gateway,
            sim: sim_server.sim.clone(),
            http: reqwest::Client::new(),
            client_key: self.client_key,
            store,
            receiver: self.receiver,
            _sim_server: sim_server,
            _store_dir: store_dir,
        }
    }
}
