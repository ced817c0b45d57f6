//! faregate: a tool-call gateway for AI travel agents.
//!
//! Each travel tool (flight search, offer pricing, hotel search and availability, flight status,
//! booking) sits behind its own circuit breaker, timeout, retry policy and bulkhead, and calls a
//! real provider's API. When a provider is slow or down, an interactive call gets an honest
//! fallback in milliseconds; nothing is ever invented.
//!
//! # Layout
//! Modules stand on floors and import only from floors below; `.ci/layering.py` measures the
//! floors from the imports, and `ARCHITECTURE.md` maps each module:
//! - floor 1: [`tools`] (the catalog, pure), [`policy`] (backoff, jitter, retry policy),
//!   [`texts`] (every sentence a model reads), [`store`] (the database and named migrations),
//!   [`fingerprint`] (canonical JSON, FNV), [`clock`] (the one place that reads the wall clock)
//!   [`clients`] (who a call is for) and [`http_tool`] (tools from configuration: request and
//!   result, pure);
//! - floor 2: [`breaker`], the circuit breaker (pure; time passed in), and [`outbox`], the
//!   lease, delivery, retry and record of the notices' callbacks;
//! - floor 3: [`config`], configuration read and validated once, and [`fleet`], the breakers'
//!   state shared through the store (across replicas and restarts);
//! - floor 4: [`providers`], the Duffel and Amadeus adapters (wire formats stay inside);
//! - floor 5: [`telemetry`], metrics, the gateway's own alerts and tracing set-up, and
//!   [`quota`], the providers' allowances for background jobs (shared by a fleet);
//! - floor 6: [`call`], the path every tool call takes to a provider and back;
//! - floor 7: [`agents`] (the agent protocols, pure) and [`jobs`] (background calls);
//! - floor 8: [`watches`] (recurring background calls) and [`back_in_service`] (notices when a
//!   tool answers again);
//! - floor 9: [`http`], the HTTP server: the edge, the API, `/mcp` and operations;
//! - floor 10: [`app`], wiring and `run(listener, app, shutdown)`.
//!
//! The command layer (`faregate serve`, `demo`, …) belongs to the binary (`src/main.rs`,
//! `src/cli.rs`), and the provider simulator is a crate of its own (`crates/faregate-sim`): the
//! library depends on neither. The lint wall (no unsafe code, documented and debuggable public
//! items, no `pub` beyond the API) is the workspace's, in the root `Cargo.toml`.

pub mod agents;
pub mod app;
pub mod back_in_service;
pub mod breaker;
pub mod call;
pub mod clients;
pub mod clock;
pub mod config;
pub mod fingerprint;
pub mod fleet;
pub mod http;
pub mod http_tool;
pub mod jobs;
pub mod ledger;
pub mod maintenance;
pub mod outbox;
pub mod policy;
pub mod providers;
pub mod quota;
pub mod secret;
pub mod store;
pub mod telemetry;
pub mod texts;
pub mod tools;
pub mod trace_context;
pub mod watches;
