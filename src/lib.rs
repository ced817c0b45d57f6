//! faregate: a tool-call gateway for AI travel agents.
//!
//! Each travel tool (flight search, offer pricing, hotel search and availability, flight status,
//! booking) sits behind its own circuit breaker, timeout, retry policy and bulkhead, and calls a
//! real provider's API. When a provider is slow or down, an interactive call gets an honest
//! fallback in milliseconds; nothing is ever invented.
//!
//! # Layout
//! Modules stand on floors and import only from floors below (see `ARCHITECTURE.md`):
//! - [`tools`] (floor 1): the catalog — typed arguments, results and schemas. Pure.
//! - [`config`], [`providers`], [`telemetry`] (floor 2): configuration, provider adapters
//!   (wire formats stay inside), and metrics, alerts and tracing set-up.
//! - [`call`] (floor 3): the one function every tool call goes through.
//! - [`http`] (floor 5): axum routes; the only place that knows the gateway's own wire JSON.
//! - [`app`] (floor 6): wiring and `run(listener, shutdown)`.
//!
//! The command layer (`faregate serve`, `demo`, …) belongs to the binary (`src/main.rs`,
//! `src/cli.rs`), and the provider simulator is a crate of its own (`crates/faregate-sim`): the
//! library depends on neither. The lint wall (no unsafe code, documented and debuggable public
//! items, no `pub` beyond the API) is the workspace's, in the root `Cargo.toml`.

pub mod agents;
pub mod app;
pub mod breaker;
pub mod call;
pub mod clock;
pub mod config;
pub mod fingerprint;
pub mod http;
pub mod jobs;
pub mod policy;
pub mod providers;
pub mod store;
pub mod telemetry;
pub mod texts;
pub mod tools;
