//! Tests of the call path next to it, with scripted providers on tokio's paused clock.
//!
//! A [`Scripted`] upstream stands in for a provider through the [`Upstream`] seam: each call
//! plays the next step of its script (answer after a delay, or hang), so retries, deadlines,
//! the bulkhead, fail-over and cancellation are tested on virtual time, exactly, and without a
//! socket. The wall-clock tests against wiremock in `tests/` check the same rules end to end.
//!
//! - `answer`: the two answer policies, as tables;
//! - `pipeline`: `pipeline::run` on one served tool;
//! - `gateway`: both entry points (cancellation, writes, probe priority, background checks);
//! - `maintenance`: scheduled maintenance windows opening and closing on the paused clock;
//! - `provider_share`: a client's share of a provider's rate-limit window while it runs low;
//! - `share`: a client's share of a tool's bulkhead while several clients call;
//! - `shared`: reads shared by identical concurrent callers, and repeats answered from memory;
//! - `scope`: breakers shared by a provider's tools (scope `provider`) or per account
//!   (`credential`).

mod answer;
mod come_back;
mod gateway;
mod maintenance;
mod pipeline;
mod provider_share;
mod reload;
mod scope;
mod share;
mod shared;

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::gateway::Gateway;
use super::observe::Observer;
use super::served::ServedTool;
use super::upstream::Upstream;
use crate::breaker::BreakerRegistry;
use crate::config::{self, Config, EMBEDDED_CONFIG, EmbeddedFiles, ToolConfig};
use crate::policy::SplitMix;
use crate::providers::{ErrorKind, UpstreamError, WriteEffect};
use crate::telemetry::{AlertRules, Telemetry};
use crate::tools::{self, ToolOutput, ToolRequest, book_flight, search_flights};

/// What a scripted provider does on one call.
#[derive(Debug, Clone)]
enum Step {
    /// Answers with `result` after `after`.
    Answer {
        after: Duration,
        result: Box<Result<ToolOutput, UpstreamError>>,
    },
    /// Never answers.
    Hang,
    /// Panics mid-call (a defect in an adapter).
    Panic,
}

/// A provider that plays a script: one step per call, the last step repeating.
#[derive(Debug, Default)]
struct Scripted {
    steps: Mutex<VecDeque<Step>>,
    /// Refuses every request up front (an id it did not issue), with this message.
    refusal: Option<String>,
    /// When each call started.
    started: Mutex<Vec<Instant>>,
    /// Calls that ran to their answer (a cancelled or hanging call does not).
    answered: AtomicU32,
    /// The account it says it calls (breakers of scope `credential` are keyed by it).
    account: Option<String>,
}

impl Scripted {
    fn new(steps: impl IntoIterator<Item = Step>) -> Arc<Self> {
        Arc::new(Scripted {
            steps: Mutex::new(steps.into_iter().collect()),
            ..Scripted::default()
        })
    }

    fn on_account(account: &str, steps: impl IntoIterator<Item = Step>) -> Arc<Self> {
        Arc::new(Scripted {
            steps: Mutex::new(steps.into_iter().collect()),
            account: Some(account.to_string()),
            ..Scripted::default()
        })
    }

    fn refusing(message: &str) -> Arc<Self> {
        Arc::new(Scripted {
            refusal: Some(message.to_string()),
            ..Scripted::default()
        })
    }

    /// How many calls started.
    fn calls(&self) -> usize {
        self.started().len()
    }

    /// When each call started.
    fn started(&self) -> Vec<Instant> {
        self.started.lock().expect("not poisoned").clone()
    }

    fn answered(&self) -> u32 {
        self.answered.load(Ordering::Relaxed)
    }

    fn next_step(&self) -> Option<Step> {
        let mut steps = self.steps.lock().expect("not poisoned");
        if steps.len() > 1 {
            steps.pop_front()
        } else {
            steps.front().cloned()
        }
    }
}

impl Upstream for Scripted {
    fn account(&self) -> Option<String> {
        self.account.clone()
    }

    fn refuse(&self, _request: &ToolRequest) -> Option<UpstreamError> {
        let message = self.refusal.clone()?;
        Some(UpstreamError::new(
            ErrorKind::Rejected { message },
            "scripted refusal",
        ))
    }

    fn call<'a>(
        &'a self,
        _request: &'a ToolRequest,
        _timeout: Duration,
    ) -> BoxFuture<'a, Result<ToolOutput, UpstreamError>> {
        Box::pin(async move {
            self.started
                .lock()
                .expect("not poisoned")
                .push(Instant::now());
            match self.next_step() {
                Some(Step::Answer { after, result }) => {
                    tokio::time::sleep(after).await;
                    self.answered.fetch_add(1, Ordering::Relaxed);
                    *result
                }
                Some(Step::Panic) => panic!("a scripted defect"),
                Some(Step::Hang) | None => std::future::pending().await,
            }
        })
    }
}

/// A call of `tool` by the local client (a booking with an idempotency key). `scope.rs` and
/// `shared.rs` make their own, without one.
fn request(tool: &str, arguments: Value) -> super::gateway::CallRequest {
    super::gateway::CallRequest {
        tool: tool.into(),
        arguments,
        call_id: None,
        idempotency_key: (tool == "book_flight").then(|| "key-1".to_string()),
        deadline: None,
        client: crate::clients::ClientName::local(),
        trace: None,
    }
}

/// The configured client `name`.
fn client(name: &str) -> crate::clients::ClientName {
    crate::clients::ClientName::configured(name).unwrap_or_else(|e| panic!("{e}"))
}

/// A search `days` out (searches on other days are not shared), for client `of`.
fn search_of(of: &str, days: i64) -> super::gateway::CallRequest {
    let date = Gateway::today() + chrono::Duration::days(days);
    super::gateway::CallRequest {
        client: client(of),
        ..request(
            "search_flights",
            json!({"origin": "LHR", "destination": "JFK", "departure_date": date.to_string()}),
        )
    }
}

/// The state of flight search's first breaker now.
fn env_breaker(gateway: &Gateway) -> crate::breaker::BreakerState {
    let tool = gateway.tool("search_flights").expect("served");
    tool.breakers()[0].state(Instant::now())
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// A search result with no offers.
fn flights() -> ToolOutput {
    ToolOutput::SearchFlights(search_flights::Output {
        origin: "LHR".into(),
        destination: "JFK".into(),
        departure_date: "2030-01-01".into(),
        offers: Vec::new(),
        total_offers: 0,
        currencies: Vec::new(),
    })
}

/// A confirmed booking.
fn booked() -> ToolOutput {
    ToolOutput::BookFlight(book_flight::Output {
        booking_reference: "ABC123".into(),
        order_id: "ord_1".into(),
        total_amount: "120.00".into(),
        total_currency: "EUR".into(),
        travellers: vec!["Ana Garcia".into()],
        idempotency_key: "key-1".into(),
    })
}

/// Answers `output` after `after`.
fn ok(after: Duration, output: ToolOutput) -> Step {
    Step::Answer {
        after,
        result: Box::new(Ok(output)),
    }
}

/// Fails with `kind` after `after`.
fn fail(after: Duration, kind: ErrorKind) -> Step {
    Step::Answer {
        after,
        result: Box::new(Err(UpstreamError::new(kind, "scripted failure"))),
    }
}

fn server_error() -> ErrorKind {
    ErrorKind::Server {
        status: 503,
        retry_after: None,
    }
}

/// Valid `search_flights` arguments.
fn search_args() -> Value {
    let date = Gateway::today() + chrono::Duration::days(30);
    json!({"origin": "LHR", "destination": "JFK", "departure_date": date.to_string()})
}

/// Valid `book_flight` arguments.
fn booking_args() -> Value {
    json!({"offer_id": "off_0000AEatBgkm1L8gxKGGjG", "travellers": [{"given_name": "Ana",
        "family_name": "Garcia", "born_on": "1990-02-15", "gender": "f", "title": "ms",
        "email": "ana@example.com", "phone_number": "+34600000000"}]})
}

/// The shipped configuration (the copies embedded in the binary).
fn config() -> Config {
    let (config, _) = config::load(&EmbeddedFiles, Path::new(EMBEDDED_CONFIG), &tools::names())
        .unwrap_or_else(|e| panic!("{e}"));
    config
}

/// The shipped configuration of one tool.
fn tool_config(name: &str) -> ToolConfig {
    config()
        .tool(name)
        .cloned()
        .unwrap_or_else(|| panic!("{name} is configured"))
}

/// Upstreams by provider name.
fn upstreams(list: &[(&str, &Arc<Scripted>)]) -> BTreeMap<String, Arc<dyn Upstream>> {
    list.iter()
        .map(|(name, up)| (name.to_string(), Arc::clone(*up) as Arc<dyn Upstream>))
        .collect()
}

/// `config` served by `providers`, with breakers of its own.
fn served(config: &ToolConfig, providers: &[(&str, &Arc<Scripted>)]) -> Arc<ServedTool> {
    served_capped(config, providers, &BTreeMap::new())
}

/// `config` served by `providers`, their attempts capped by `provider_timeouts`.
fn served_capped(
    config: &ToolConfig,
    providers: &[(&str, &Arc<Scripted>)],
    provider_timeouts: &BTreeMap<String, Duration>,
) -> Arc<ServedTool> {
    let spec = tools::spec(&config.name).expect("in the catalog");
    let tool = ServedTool::build(
        spec,
        config,
        &upstreams(providers),
        provider_timeouts,
        &BreakerRegistry::default(),
        &BTreeMap::new(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    Arc::new(tool.expect("a provider serves it"))
}

/// A gateway over the shipped configuration, served by `providers`.
fn gateway(providers: &[(&str, &Arc<Scripted>)]) -> Arc<Gateway> {
    let telemetry = Arc::new(Telemetry::new(AlertRules::spec()));
    let gateway = Gateway::new(&config(), &upstreams(providers), telemetry)
        .unwrap_or_else(|e| panic!("{e:?}"));
    Arc::new(gateway)
}

/// An observer over fresh telemetry.
fn observer() -> Observer {
    Observer::new(Arc::new(Telemetry::new(AlertRules::spec())))
}

/// The jitter seed of the pipeline tests: their waits are reproducible.
const SEED: u64 = 7;

/// The random source the pipeline tests give the pipeline.
fn jitter() -> SplitMix {
    SplitMix::new(SEED)
}
