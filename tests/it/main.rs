//! The integration tests: the gateway, the provider simulator and wiremock upstreams on
//! loopback, driven over real HTTP. One test binary (the gateway, the simulator and wiremock are
//! linked once, not once per file), one module per topic, and one harness in [`support`].

mod support;

mod amadeus;
mod back_in_service;
mod backlog;
mod bad_input;
mod bookings;
mod breaker_scope;
mod chain;
mod chain_http;
mod configured;
mod crash;
mod demo;
mod duffel;
mod e2e;
mod edge;
mod examples;
mod fleet;
mod http2;
mod inbound;
mod jobs;
mod lifecycle;
mod maintenance;
mod observability;
mod pipeline;
mod protocols;
mod provider_http2;
mod reload;
mod runtime;
mod security;
mod tenants;
mod trace_context;
mod traces;
mod watches;
