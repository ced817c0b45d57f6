//! Wiring: configuration → providers → gateway → HTTP router, and `run(listener, shutdown)`.
//!
//! `run` takes its listener and its shutdown signal as parameters (mini-redis's shape), so tests
//! bind `127.0.0.1:0` and stop the server with any future they like.

use std::future::Future;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::call::Gateway;
use crate::config::Config;
use crate::http::{self, AppState, ClientKeys};
use crate::providers::{self, Env};

/// A gateway ready to serve.
#[derive(Debug, Clone)]
pub struct App {
    /// Handler state.
    pub state: AppState,
    /// Accepted client keys (empty = auth off).
    pub keys: ClientKeys,
    /// Start-up warnings worth logging.
    pub warnings: Vec<String>,
}

/// Builds the gateway from validated configuration; every problem is returned at once.
pub fn build(config: Config, env: &dyn Env) -> Result<App, Vec<String>> {
    let built = providers::build(&config, env);
    let mut errors = built.errors;
    let gateway = match Gateway::new(&config, &built.providers) {
        Ok(g) => Some(g),
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
    let keys = ClientKeys::from_list(&env.var(&config.auth.client_keys_env).unwrap_or_default());
    if keys.is_empty() {
        warnings.push(format!(
            "AUTH IS OFF: {} is not set, so every client is accepted. Set it to comma-separated client keys before exposing this gateway.",
            config.auth.client_keys_env
        ));
    }
    let max_body_bytes = config.server.max_body_bytes;
    Ok(App {
        state: AppState {
            gateway: Arc::new(gateway),
            config: Arc::new(config),
            max_body_bytes,
        },
        keys,
        warnings,
    })
}

/// Serves the HTTP API on `listener` until `shutdown` completes, then drains in-flight requests.
pub async fn run(
    listener: TcpListener,
    app: App,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let router = http::router(app.state, app.keys);
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}
