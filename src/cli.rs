//! The commands of the `faregate` binary: what each does, in terms of the library.
//!
//! This is the command layer (floor 6 with `main.rs`): it reads files and the environment,
//! prints for humans, and maps failures to exit codes. It is the only library module that uses
//! `anyhow`.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use tokio::net::TcpListener;

use crate::app;
use crate::config::{self, Config, DiskFiles, EMBEDDED_CONFIG, EmbeddedFiles, Files};
use crate::jobs;
use crate::providers::{self, ProcessEnv};
use crate::sim;
use crate::tools;

/// Kept for `main.rs`: each command sets up tracing itself, because `serve` and `demo` need
/// their configuration first (`[telemetry]`: JSON logs, OTLP export). Does nothing.
pub fn init_tracing() {}

/// Sets up tracing as `[telemetry]` says, then logs the configuration warnings.
fn init_telemetry(
    config: &Config,
    warnings: &[config::Problem],
) -> anyhow::Result<crate::telemetry::TracingGuard> {
    let guard = crate::telemetry::init(&config.telemetry, &ProcessEnv)?;
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
pub async fn shutdown_signal() {
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
pub async fn serve(config_path: &Path, listen: Option<SocketAddr>) -> anyhow::Result<ExitCode> {
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

/// `faregate sim`.
pub async fn sim(listen: SocketAddr, seed: u64) -> anyhow::Result<ExitCode> {
    crate::telemetry::init_default();
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr()?;
    println!("faregate provider simulator on http://{addr}");
    println!("  faults: curl http://{addr}/_sim/faults   stats: curl http://{addr}/_sim/stats");
    sim::serve(listener, sim::Simulator::new(seed), shutdown_signal()).await?;
    Ok(ExitCode::SUCCESS)
}

/// `faregate demo`: the simulator and the gateway in one process.
pub async fn demo(
    listen: SocketAddr,
    sim_listen: SocketAddr,
    config_path: Option<&Path>,
    store: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let (mut config, warnings) = match config_path {
        Some(p) => load_quiet(&DiskFiles, p)?,
        None => load_quiet(&EmbeddedFiles, Path::new(EMBEDDED_CONFIG))?,
    };
    let _tracing = init_telemetry(&config, &warnings)?;
    let sim_listener = TcpListener::bind(sim_listen).await.with_context(|| {
        format!("cannot listen on {sim_listen} for the simulator (try --sim-listen)")
    })?;
    let sim_addr = sim_listener.local_addr()?;
    let sim_url = reqwest::Url::parse(&format!("http://{sim_addr}"))?;
    for provider in config.providers.values_mut() {
        provider.base_url = sim_url.clone();
    }
    config.server.listen = listen;
    let app = build(config, store).await?;
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen} (try --listen)"))?;
    let addr = listener.local_addr()?;

    let simulator = sim::Simulator::new(7);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut sim_stop = stop_rx.clone();
    let sim_task = tokio::spawn(sim::serve(sim_listener, simulator, async move {
        let _ = sim_stop.wait_for(|s| *s).await;
    }));
    print!("{}", demo_banner(addr, sim_addr));
    let mut gw_stop = stop_rx;
    let gateway = tokio::spawn(app::run(listener, app, async move {
        let _ = gw_stop.wait_for(|s| *s).await;
    }));
    shutdown_signal().await;
    let _ = stop_tx.send(true);
    gateway.await.context("gateway task")??;
    sim_task.await.context("simulator task")??;
    Ok(ExitCode::SUCCESS)
}

fn demo_banner(addr: SocketAddr, sim: SocketAddr) -> String {
    let day = |n: i64| {
        (crate::call::Gateway::today() + chrono::Duration::days(n))
            .format("%Y-%m-%d")
            .to_string()
    };
    let (d1, d2) = (day(21), day(23));
    format!(
        r#"
faregate demo — gateway and provider simulator, no credentials needed

  API        http://{addr}/v1/tools   (OpenAPI: http://{addr}/openapi.json)
  MCP        http://{addr}/mcp        (Streamable HTTP)
  dashboard  http://{addr}/dashboard   (breakers, alerts; metrics at /metrics, events at /v1/events)
  simulator  http://{sim}  (Duffel and Amadeus wire formats; faults at /_sim/faults)

Try:

  # search flights
  curl -s http://{addr}/v1/tools/search_flights/call -H 'content-type: application/json' \
    -d '{{"arguments": {{"origin": "JFK", "destination": "LHR", "departure_date": "{d1}", "adults": 1}}}}'

  # search hotels in Paris
  curl -s http://{addr}/v1/tools/search_hotels/call -H 'content-type: application/json' \
    -d '{{"arguments": {{"city_code": "PAR", "check_in_date": "{d1}", "check_out_date": "{d2}", "adults": 2}}}}'

  # invalid arguments are named field by field (HTTP 422)
  curl -s http://{addr}/v1/tools/search_flights/call -H 'content-type: application/json' \
    -d '{{"arguments": {{"origin": "jfk", "destination": "LHR", "departure_date": "2020-01-01"}}}}'

  # flight status of a scheduled flight (served by Amadeus)
  curl -s http://{addr}/v1/tools/get_flight_status/call -H 'content-type: application/json' \
    -d '{{"arguments": {{"carrier_code": "IB", "flight_number": "3167", "departure_date": "{d1}"}}}}'

  # take Duffel's flight search down, then search again: Amadeus answers ("provider": "amadeus")
  curl -s -X PUT http://{sim}/_sim/faults/duffel_air_search -H 'content-type: application/json' \
    -d '{{"outage": true}}'
  # make Amadeus slow too (15 s per answer): the gateway gives up at the tool's timeout and
  # answers with the fallback text instead of hanging
  curl -s -X PUT http://{sim}/_sim/faults/amadeus_flights -H 'content-type: application/json' \
    -d '{{"latency_ms": 15000}}'
  # heal it
  curl -s -X DELETE http://{sim}/_sim/faults

  # the tool manifest, natively or ready for a model request (openai, anthropic, gemini, mcp)
  curl -s http://{addr}/v1/tools
  curl -s 'http://{addr}/v1/tools?format=openai'

  # run an OpenAI assistant message's tool calls (Anthropic: POST /v1/anthropic/tool_use)
  curl -s http://{addr}/v1/openai/tool_calls -H 'content-type: application/json' \
    -d '{{"tool_calls": [{{"id": "call_1", "type": "function", "function": {{"name": "search_hotels", "arguments": "{{\"city_code\": \"PAR\", \"check_in_date\": \"{d1}\", \"check_out_date\": \"{d2}\"}}"}}}}]}}'

  # breakers, and forcing one open by hand (admin key when FAREGATE_ADMIN_KEY is set)
  curl -s http://{addr}/v1/breakers
  curl -s -X POST http://{addr}/v1/breakers/search_flights.duffel/force -d '{{"state": "open"}}'

Ctrl-C stops both.
"#
    )
}

/// `faregate check`: every problem at once; exit 1 when there is any error.
pub fn check(config_path: &Path) -> anyhow::Result<ExitCode> {
    crate::telemetry::init_default();
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
pub fn manifest(config_path: &Path, format: &str) -> anyhow::Result<ExitCode> {
    crate::telemetry::init_default();
    let format = crate::agents::manifest::Format::parse(format).map_err(anyhow::Error::msg)?;
    let config = load(&DiskFiles, config_path)?;
    let tools: Vec<crate::agents::manifest::ManifestTool<'_>> = tools::CATALOG
        .iter()
        .filter_map(|spec| {
            let c = config.tool(spec.name)?;
            Some(crate::agents::manifest::ManifestTool {
                spec,
                description: &c.description,
            })
        })
        .collect();
    println!(
        "{}",
        serde_json::to_string_pretty(&crate::agents::manifest::render(format, &tools))?
    );
    Ok(ExitCode::SUCCESS)
}
