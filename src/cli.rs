//! The commands of the `faregate` binary: what each does, in terms of the library.
//!
//! This is the command layer (the top floor, with `main.rs`): it reads files and the
//! environment, prints for humans, and maps failures to exit codes. It belongs to the binary,
//! not to the library, and it is the only place that uses `anyhow`. Each command sets up
//! tracing itself, because `serve` and `demo` need their configuration first (`[telemetry]`:
//! JSON logs, OTLP export). The commands that start the provider simulator live in [`demo`],
//! behind the `demo` feature.

#[cfg(feature = "demo")]
pub(crate) mod demo;

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use tokio::net::TcpListener;

use faregate::app;
use faregate::config::{self, Config, DiskFiles, Files};
use faregate::jobs;
use faregate::providers::{self, ProcessEnv};
use faregate::tools;

/// Sets up tracing as `[telemetry]` says, then logs the configuration warnings.
fn init_telemetry(
    config: &Config,
    warnings: &[config::Problem],
) -> anyhow::Result<faregate::telemetry::TracingGuard> {
    let guard = faregate::telemetry::init(&config.telemetry, &ProcessEnv)?;
    for w in warnings {
        tracing::warn!("{w}");
    }
    if guard.exports() {
        tracing::info!("exporting traces over OTLP/HTTP");
    }
    Ok(guard)
}

fn load_quiet(files: &dyn Files, path: &Path) -> anyhow::Result<(Config, Vec<config::Problem>)> {
    config::load(files, path, &tools::names()).map_err(|errors| anyhow::anyhow!("{errors}"))
}

fn load(files: &dyn Files, path: &Path) -> anyhow::Result<Config> {
    match config::load(files, path, &tools::names()) {
        Ok((config, warnings)) => {
            for w in warnings {
                tracing::warn!("{w}");
            }
            Ok(config)
        }
        Err(errors) => bail!("{errors}"),
    }
}

/// Resolves when Ctrl-C or SIGTERM arrives.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down");
}

/// Builds the gateway and its job store (`store.url`, or `store_override`).
async fn build(config: Config, store_override: Option<&str>) -> anyhow::Result<app::App> {
    let url = store_override.unwrap_or(&config.store.url).to_string();
    let mut app = match app::build(config, &ProcessEnv) {
        Ok(app) => app,
        Err(errors) => bail!("cannot start:\n  {}", errors.join("\n  ")),
    };
    let store = jobs::Store::open(&url)
        .await
        .with_context(|| format!("cannot open the job store {}", redact_url(&url)))?;
    if app.state.config.store.share_breakers {
        let fleet = faregate::fleet::Fleet::open(store.db().clone())
            .await
            .with_context(|| format!("cannot open the breaker state in {}", redact_url(&url)))?;
        app::attach_fleet(&mut app, fleet)
            .await
            .with_context(|| format!("cannot read the breaker state in {}", redact_url(&url)))?;
    }
    app::attach_jobs(&mut app, store, &ProcessEnv);
    for w in &app.warnings {
        tracing::warn!("{w}");
    }
    tracing::info!("job store: {}", redact_url(&url));
    Ok(app)
}

/// A store URL without its password, for messages.
fn redact_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_string(),
    }
}

/// `faregate serve`.
pub(crate) async fn serve(
    config_path: &Path,
    listen: Option<SocketAddr>,
) -> anyhow::Result<ExitCode> {
    let (mut config, warnings) = load_quiet(&DiskFiles, config_path)?;
    let _tracing = init_telemetry(&config, &warnings)?;
    if let Some(addr) = listen {
        config.server.listen = addr;
    }
    let addr = config.server.listen;
    let app = build(config, None).await?;
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    tracing::info!("faregate listening on http://{}", listener.local_addr()?);
    app::run(listener, app, shutdown_signal()).await?;
    Ok(ExitCode::SUCCESS)
}

/// `faregate check`: every problem at once; exit 1 when there is any error.
pub(crate) fn check(config_path: &Path) -> anyhow::Result<ExitCode> {
    faregate::telemetry::init_default();
    match config::load(&DiskFiles, config_path, &tools::names()) {
        Ok((config, warnings)) => {
            let built = providers::build(&config, &ProcessEnv);
            for w in &warnings {
                println!("warning: {w}");
            }
            for w in built.warnings.iter().chain(&built.errors) {
                println!("warning: {w}");
            }
            // Counts and variable names only: never a key.
            let count = |name: &str| {
                providers::Env::var(&ProcessEnv, name)
                    .map_or(0, |v| v.split(',').filter(|k| !k.trim().is_empty()).count())
            };
            let (clients, admin) = (
                count(&config.auth.client_keys_env),
                count(&config.auth.admin_key_env),
            );
            if clients == 0 {
                println!(
                    "warning: AUTH IS OFF: {} is not set, so `serve` would accept every client",
                    config.auth.client_keys_env
                );
            } else {
                println!(
                    "auth: {clients} client key(s) in {}; admin key {} in {}",
                    config.auth.client_keys_env,
                    if admin > 0 { "set" } else { "NOT set" },
                    config.auth.admin_key_env
                );
            }
            println!(
                "{}: OK — {} tools, {} providers, {} prompts",
                config_path.display(),
                config.tools.len(),
                config.providers.len(),
                config.prompts.len()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(errors) => {
            print!("{errors}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// `faregate manifest`: the configured tools in one of the manifest formats.
///
/// This reads configuration only (no provider is contacted and no breaker exists), so it lists
/// every configured tool, including ones a running gateway might not serve.
pub(crate) fn manifest(config_path: &Path, format: &str) -> anyhow::Result<ExitCode> {
    faregate::telemetry::init_default();
    let format = faregate::agents::manifest::Format::parse(format).map_err(anyhow::Error::msg)?;
    let config = load(&DiskFiles, config_path)?;
    let tools: Vec<faregate::agents::manifest::ManifestTool<'_>> = tools::CATALOG
        .iter()
        .filter_map(|spec| {
            let c = config.tool(spec.name)?;
            Some(faregate::agents::manifest::ManifestTool {
                spec,
                description: &c.description,
            })
        })
        .collect();
    println!(
        "{}",
        serde_json::to_string_pretty(&faregate::agents::manifest::render(format, &tools))?
    );
    Ok(ExitCode::SUCCESS)
}
