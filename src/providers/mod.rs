//! Provider adapters: one per real API wire format, each behind the same small interface.
//!
//! A [`Provider`] takes a [`ToolRequest`] and an attempt timeout and returns a [`ToolOutput`]
//! or an [`UpstreamError`] that says what went wrong in the provider's own terms. It knows
//! nothing of breakers, retries or fallbacks: that is the call pipeline's job.
//!
//! **Architecture invariant:** wire types never leave their adapter module, and provider hosts
//! come only from configuration.

pub mod duffel;
pub mod error;
pub mod http;
mod secret;

use std::collections::BTreeMap;
use std::time::Duration;

pub use error::{ErrorKind, UpstreamError};
pub use secret::Secret;

use crate::config::{Config, ProviderKind};
use crate::tools::{ToolOutput, ToolRequest};

/// A configured provider.
#[derive(Debug, Clone)]
pub enum Provider {
    /// Duffel Air and Stays.
    Duffel(duffel::DuffelClient),
}

impl Provider {
    /// Runs one attempt of `request`.
    pub async fn call(
        &self,
        request: &ToolRequest,
        timeout: Duration,
    ) -> Result<ToolOutput, UpstreamError> {
        match self {
            Provider::Duffel(c) => c.call(request, timeout).await,
        }
    }
}

/// Whether a provider kind serves a tool in this build.
pub fn kind_serves(kind: &ProviderKind, tool: &str) -> bool {
    match kind {
        ProviderKind::Duffel { .. } => duffel::TOOLS.contains(&tool),
        // The Amadeus adapter lands with its own issue; until then no tool is served by it.
        ProviderKind::Amadeus { .. } => false,
    }
}

/// Reads credentials from the environment through this seam, so tests never set variables.
pub trait Env {
    /// The variable's value, if set and not empty.
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment.
#[derive(Debug, Default, Clone, Copy)]
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.trim().is_empty())
    }
}

/// The configured providers by name, with problems that stop start-up.
#[derive(Debug)]
pub struct Built {
    /// Providers that can serve calls.
    pub providers: BTreeMap<String, Provider>,
    /// Human-readable problems (a missing credential); start-up refuses when not empty.
    pub errors: Vec<String>,
    /// Things worth saying that do not stop start-up.
    pub warnings: Vec<String>,
}

/// Builds a client for every configured provider that a tool uses.
///
/// A provider whose base URL is on loopback (the simulator) gets a placeholder credential when
/// its variable is unset, with a warning; a real provider without credentials is an error.
pub fn build(config: &Config, env: &dyn Env) -> Built {
    let mut out = Built {
        providers: BTreeMap::new(),
        errors: Vec::new(),
        warnings: Vec::new(),
    };
    for (name, p) in &config.providers {
        let users: Vec<&crate::config::ToolConfig> = config
            .tools
            .iter()
            .filter(|t| t.providers.contains(name))
            .collect();
        let served: Vec<&str> = users
            .iter()
            .filter(|t| kind_serves(&p.kind, &t.name))
            .map(|t| t.name.as_str())
            .collect();
        for t in &users {
            if !kind_serves(&p.kind, &t.name) {
                out.warnings.push(format!(
                    "provider \"{name}\" (kind {}) does not serve {} in this build; the tool skips it",
                    p.kind.as_str(),
                    t.name
                ));
            }
        }
        if served.is_empty() {
            continue;
        }
        let max_idle = users
            .iter()
            .map(|t| t.max_concurrent as usize)
            .max()
            .unwrap_or(16);
        let http = match http::client(max_idle) {
            Ok(c) => c,
            Err(e) => {
                out.errors.push(format!(
                    "provider \"{name}\": cannot build an HTTP client: {e}"
                ));
                continue;
            }
        };
        let loopback = p
            .base_url
            .host_str()
            .is_some_and(|h| h == "localhost" || h.starts_with("127.") || h == "[::1]");
        match &p.kind {
            ProviderKind::Duffel { token_env } => {
                let token = match env.var(token_env) {
                    Some(t) => Secret::new(t),
                    None if loopback => {
                        out.warnings.push(format!(
                            "provider \"{name}\": {token_env} is not set; using a placeholder token for the local simulator at {}",
                            p.base_url
                        ));
                        Secret::new("duffel_test_simulator")
                    }
                    None => {
                        out.errors.push(format!(
                            "provider \"{name}\": set {token_env} to a Duffel access token (it serves {})",
                            served.join(", ")
                        ));
                        continue;
                    }
                };
                out.providers.insert(
                    name.clone(),
                    Provider::Duffel(duffel::DuffelClient::new(http, p.base_url.clone(), token)),
                );
            }
            ProviderKind::Amadeus { .. } => {}
        }
    }
    out
}
