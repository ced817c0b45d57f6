//! The one harness of the integration tests: configuration pointing at a test upstream, the
//! simulator and the gateway on loopback ([`servers`]), both together with an HTTP client
//! ([`Stack`]), the real `faregate` binary as a child process ([`run_to_end`], [`ServeProcess`]), waiting
//! for something to happen ([`wait_until`]), the recorded provider answers in
//! `tests/fixtures/` ([`fixture`]), and the shipped configuration's root ([`repo`]) and
//! provider credentials ([`PROVIDER_CREDENTIALS`]).

mod binary;
mod logs;
mod proxy;
mod servers;
mod stack;
mod wait;

use std::path::{Path, PathBuf};
use std::time::Duration;

use faregate::clients::{ClientName, Scope, digest};
use faregate::config::{self, ClientConfig, ClientKey, Config, EMBEDDED_CONFIG, EmbeddedFiles};
use faregate::jobs::Store;
use faregate::providers::Env;
use serde_json::Value;

pub(crate) use binary::{ServeProcess, run_to_end};
pub(crate) use logs::Captured;
pub(crate) use proxy::CutProxy;
pub(crate) use servers::{TestGateway, TestSim, requests, start_sim};
pub(crate) use stack::{Stack, StackBuilder};
pub(crate) use wait::{wait_until, wait_until_upstream};

/// The repository's root: the shipped `faregate.toml`, `tools/` and `prompts/`.
pub(crate) fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The provider credentials the shipped configuration reads from the environment (test values).
pub(crate) const PROVIDER_CREDENTIALS: [(&str, &str); 3] = [
    ("DUFFEL_ACCESS_TOKEN", "duffel_test_token"),
    ("AMADEUS_CLIENT_ID", "id"),
    ("AMADEUS_CLIENT_SECRET", "secret"),
];

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
    // The path stays: the example http providers' APIs live under one on the simulator.
    for p in config.providers.values_mut() {
        let mut to = url.clone();
        to.set_path(p.base_url.path());
        p.base_url = to;
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

/// One provider per tool (Duffel's, and Amadeus's for flight status, which Duffel does not
/// serve): for scenarios that count one breaker's attempts, not a chain's.
pub(crate) fn one_provider_per_tool(mut config: Config) -> Config {
    for t in &mut config.tools {
        let status = t.name == "get_flight_status";
        t.providers
            .retain(|p| p == "duffel" || (status && p == "amadeus"));
    }
    config
}

/// get_flight_status served by Amadeus alone (as shipped, flightaware follows it through a
/// binding): for scenarios about Amadeus's flight-status routes, not about the chain.
pub(crate) fn status_by_amadeus_alone(mut config: Config) -> Config {
    for t in &mut config.tools {
        if t.name == "get_flight_status" {
            t.providers.retain(|p| p == "amadeus");
        }
    }
    config
}

/// A configured client `name` whose key is `key` (kept as its SHA-256), with `scope`, the
/// default limits, no budget, and the gateway's callback secret and allowlist; a test that
/// needs more sets it with struct update syntax.
pub(crate) fn client(name: &str, key: &str, scope: Scope) -> ClientConfig {
    ClientConfig {
        name: ClientName::configured(name).unwrap_or_else(|e| panic!("{e}")),
        key: ClientKey::Sha256(digest(key.as_bytes())),
        scope,
        limits: config::default_limits(),
        budget: None,
        callback_secret_env: None,
        callback_allowlist: None,
    }
}

/// The scope of `tools` (names or `*` patterns), booking allowed when `may_book`.
pub(crate) fn scope(tools: &[&str], may_book: bool) -> Scope {
    Scope::new(tools.iter().map(|t| t.to_string()).collect(), may_book)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A date `days` from today, as `YYYY-MM-DD`.
pub(crate) fn in_days(days: i64) -> String {
    (faregate::call::Gateway::today() + chrono::Duration::days(days))
        .format("%Y-%m-%d")
        .to_string()
}

/// A recorded answer of `provider` (`duffel` or `amadeus`) from `tests/fixtures/`, in the
/// provider's documented wire format.
pub(crate) fn fixture(provider: &str, name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/{provider}/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The keys of the breakers guarding `tool` in a `GET /v1/breakers` listing.
pub(crate) fn breaker_keys(listing: &Value, tool: &str) -> Vec<String> {
    let keys: Vec<String> = listing["breakers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| {
            b["tools"]
                .as_array()
                .is_some_and(|t| t.iter().any(|name| name == tool))
        })
        .filter_map(|b| b["key"].as_str().map(str::to_string))
        .collect();
    assert!(!keys.is_empty(), "no breaker of {tool}: {listing:#}");
    keys
}

/// A fresh SQLite job store in a temporary directory, which lives as long as the returned guard.
pub(crate) async fn sqlite_store() -> (Store, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let url = format!("sqlite://{}", dir.path().join("jobs.db").display());
    let store = Store::open(&url)
        .await
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    (store, dir)
}

/// Sends `request` and reads the answer: its status, its headers, and its body as JSON (or, when
/// the body is not JSON, as one JSON string, so that a failing assertion shows it).
pub(crate) async fn send(
    request: reqwest::RequestBuilder,
) -> (u16, reqwest::header::HeaderMap, Value) {
    // `{e:?}`: reqwest's display says only "error sending request"; its debug form names the
    // cause (a refused connection, a reset, a keep-alive connection closed under it).
    let res = request.send().await.unwrap_or_else(|e| panic!("{e:?}"));
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    let text = res.text().await.unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, headers, body)
}
