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
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use tokio::net::TcpListener;

use faregate::app;
use faregate::config::{self, Config, DiskFiles, Files};
use faregate::http::{self, AppState, ConfigSource};
use faregate::jobs;
use faregate::providers::{self, ProcessEnv};
use faregate::tools;

/// Sets up tracing as `[telemetry]` says, its traces naming this process `replica`
/// (`service.instance.id`), then logs the configuration warnings.
fn init_telemetry(
    config: &Config,
    warnings: &[config::Problem],
    replica: &str,
) -> anyhow::Result<faregate::telemetry::TracingGuard> {
    let guard = faregate::telemetry::init(&config.telemetry, &ProcessEnv, replica)?;
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

/// Builds the gateway and its job store (`store.url`, or `store_override`); a fleet's replica
/// is named `replica`, as its traces are.
async fn build(
    config: Config,
    store_override: Option<&str>,
    replica: String,
) -> anyhow::Result<app::App> {
    let url = store_override.unwrap_or(&config.store.url).to_string();
    let mut app = match app::build(config, &ProcessEnv) {
        Ok(app) => app,
        Err(errors) => bail!("cannot start:\n  {}", errors.join("\n  ")),
    };
    let store = jobs::Store::open(&url)
        .await
        .with_context(|| format!("cannot open the job store {}", redact_url(&url)))?;
    if app.state.config().store.share_breakers {
        let fleet = faregate::fleet::Fleet::open_as(store.db().clone(), replica)
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
    // One name for this replica, in its traces and in the fleet.
    let replica = faregate::fleet::replica_name();
    let _tracing = init_telemetry(&config, &warnings, &replica)?;
    if let Some(addr) = listen {
        config.server.listen = addr;
    }
    let addr = config.server.listen;
    let mut app = build(config, None, replica).await?;
    let path = config_path.to_path_buf();
    app.state.config_source = Some(ConfigSource::new(
        move || {
            let (mut config, _) = config::load(&DiskFiles, &path, &tools::names())
                .map_err(|e| e.errors.iter().map(ToString::to_string).collect::<Vec<_>>())?;
            // The address given on the command line stays the one in force.
            if let Some(addr) = listen {
                config.server.listen = addr;
            }
            Ok(config)
        },
        ProcessEnv,
    ));
    reload_on_sighup(app.state.clone());
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let workers = tokio::runtime::Handle::current().metrics().num_workers();
    tracing::info!(
        "faregate listening on http://{} ({workers} worker thread{})",
        listener.local_addr()?,
        if workers == 1 { "" } else { "s" }
    );
    app::run(listener, app, shutdown_signal()).await?;
    Ok(ExitCode::SUCCESS)
}

/// Reads the whole configuration again on every SIGHUP, as `POST /v1/admin/reload` does; a
/// configuration with problems changes nothing and each problem is logged (by
/// `AppState::reload`, for both).
fn reload_on_sighup(state: AppState) {
    #[cfg(unix)]
    tokio::spawn(async move {
        let Ok(mut hangups) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        else {
            tracing::warn!("cannot listen for SIGHUP; reload with POST /v1/admin/reload");
            return;
        };
        while hangups.recv().await.is_some() {
            let reloading = state.clone();
            match tokio::task::spawn_blocking(move || reloading.reload()).await {
                // `AppState::reload` logged what changed ("configuration reloaded"); this line
                // says only what asked for it.
                Ok(Ok(summary)) => tracing::info!(
                    fingerprint = %summary.fingerprint,
                    "SIGHUP: configuration reloaded"
                ),
                // `AppState::reload` logged each problem, as it does for the route.
                Ok(Err(faregate::http::ReloadError::Problems(_))) => {}
                Ok(Err(e)) => tracing::error!(error = ?e, "SIGHUP: configuration not reloaded"),
                Err(e) => tracing::error!(error = %e, "SIGHUP: the reload did not finish"),
            }
        }
    });
    #[cfg(not(unix))]
    drop(state);
}

/// On a PostgreSQL store, whether `serve` could create the spool file (`[store] spool_path`):
/// its directory must exist and be writable, and the path must not be a directory.
fn spool_usable(config: &Config) -> Result<(), String> {
    let url = &config.store.url;
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Ok(());
    }
    let path = &config.store.spool_path;
    if path.is_dir() {
        return Err(format!(
            "{} is a directory; name a file in it, e.g. {}",
            path.display(),
            path.join("faregate-spool.db").display()
        ));
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    match std::fs::metadata(&dir) {
        Ok(meta) if !meta.is_dir() => Err(format!("{} is not a directory", dir.display())),
        Ok(meta) if meta.permissions().readonly() => Err(format!(
            "{} is read-only; background submissions could not be spooled while PostgreSQL is away",
            dir.display()
        )),
        Ok(_) => Ok(()),
        Err(e) => Err(format!(
            "the directory {} of {}: {e}; create it, or point spool_path elsewhere",
            dir.display(),
            path.display()
        )),
    }
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
            for w in built.warnings.iter().chain(&built.environment) {
                println!("warning: {w}");
            }
            // A credential set to what cannot be sent fails here as it would fail `serve`.
            for e in &built.errors {
                println!("error: {e}");
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
            // The keys the [[clients]] name must be there too, and no key may name two clients.
            let setup = match http::client_setup(&config, &ProcessEnv) {
                Ok(setup) => setup,
                Err(errors) => {
                    for e in &errors {
                        println!("error: {e}");
                    }
                    return Ok(ExitCode::FAILURE);
                }
            };
            if let Err(problem) = spool_usable(&config) {
                println!("error: [store] spool_path: {problem}");
                return Ok(ExitCode::FAILURE);
            }
            if !built.errors.is_empty() {
                return Ok(ExitCode::FAILURE);
            }
            if !config.clients.is_empty() {
                let names: Vec<String> =
                    config.clients.iter().map(|c| c.name.to_string()).collect();
                println!("clients: {}", names.join(", "));
            }
            if setup.roster.auth_off() {
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
            // Each client's share of a tool, and where it still lets one client take it all.
            let callers = setup.roster.profiles().len();
            if let Some(share) = http::client_share(&setup.roster, &config.limits) {
                println!(
                    "client share: {callers} clients, each holding at most {share} of a tool's max_concurrent per replica ([limits] client_share_of_tool)"
                );
            }
            if let Some(reserve) = http::provider_reserve(&setup.roster, &config.limits) {
                println!(
                    "provider share: once a provider announces {reserve} of its rate-limit window or less left, a client that sent more than 1/k of a replica's requests to it in the window (k clients) waits for the reset ([limits] provider_reserve)"
                );
            }
            for w in faregate::config::unshared_tools(&config, callers) {
                println!("warning: {w}");
            }
            // Which secret signs whose callbacks: variable names only, never a secret.
            let own: Vec<String> = config
                .clients
                .iter()
                .filter(|c| c.callback_secret_env.is_some())
                .map(|c| c.name.to_string())
                .collect();
            let gateway_secret =
                providers::Env::var(&ProcessEnv, &config.auth.callback_secret_env).is_some();
            let refused = match (gateway_secret, own.is_empty()) {
                (true, _) => "",
                (false, true) => " (callback URLs are refused)",
                (false, false) => " (callback URLs are refused but for clients with their own)",
            };
            let own = if own.is_empty() {
                String::new()
            } else {
                format!("; clients signed with their own secret: {}", own.join(", "))
            };
            println!(
                "callbacks: signing secret {} in {}{refused}{own}",
                if gateway_secret { "set" } else { "NOT set" },
                config.auth.callback_secret_env,
            );
            for w in jobs::callbacks::signing::whitespace_warnings(&config, &ProcessEnv) {
                println!("warning: {w}");
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

/// `faregate import-openapi`: tool files and fallback prompts for operations of an OpenAPI
/// document, written where `faregate.toml`'s default `tools_dir` and `prompts_dir` are, never
/// over an existing file.
pub(crate) fn import_openapi(
    document: &Path,
    operations: &[String],
    provider: &str,
    out: &Path,
) -> anyhow::Result<ExitCode> {
    faregate::telemetry::init_default();
    let text = std::fs::read_to_string(document)
        .with_context(|| format!("cannot read {}", document.display()))?;
    // A document that starts as JSON does is broken JSON, not YAML: say where.
    let looks_json = text.trim_start().starts_with(['{', '[']);
    let doc: serde_json::Value = serde_json::from_str(&text).with_context(|| {
        if looks_json {
            format!("{} is not valid JSON", document.display())
        } else {
            format!(
                "{} is not JSON (faregate reads OpenAPI documents as JSON; convert a YAML one first)",
                document.display()
            )
        }
    })?;
    let imported = match config::import_openapi(&doc, operations, provider) {
        Ok(imported) => imported,
        Err(errors) => {
            for e in &errors {
                println!("error: {e}");
            }
            return Ok(ExitCode::FAILURE);
        }
    };
    let targets: Vec<(std::path::PathBuf, &String)> = imported
        .iter()
        .flat_map(|tool| {
            [
                (
                    out.join("tools").join(format!("{}.toml", tool.name)),
                    &tool.tool_file,
                ),
                (
                    out.join("prompts")
                        .join(format!("{}.unavailable.md", tool.name)),
                    &tool.fallback,
                ),
            ]
        })
        .collect();
    // All or nothing: every target is checked before any is written.
    let existing: Vec<String> = targets
        .iter()
        .filter(|(path, _)| path.exists())
        .map(|(path, _)| path.display().to_string())
        .collect();
    if !existing.is_empty() {
        println!(
            "error: {} already exist{} (an existing file is never replaced); nothing was written",
            existing.join(", "),
            if existing.len() == 1 { "s" } else { "" }
        );
        return Ok(ExitCode::FAILURE);
    }
    for (path, text) in &targets {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
            .with_context(|| {
                format!(
                    "cannot write {} (an existing file is never replaced)",
                    path.display()
                )
            })?;
        println!("wrote {}", path.display());
    }
    println!(
        "review the descriptions, content templates and kept fields, then run `faregate check`"
    );
    Ok(ExitCode::SUCCESS)
}

/// `faregate manifest`: the configured tools in one of the manifest formats.
///
/// This reads configuration only (no provider is contacted and no breaker exists), so it lists
/// every configured tool, including ones a running gateway might not serve, and the watch tools
/// (which a gateway serves only with a job store).
pub(crate) fn manifest(config_path: &Path, format: &str) -> anyhow::Result<ExitCode> {
    faregate::telemetry::init_default();
    let format = faregate::agents::manifest::Format::parse(format).map_err(anyhow::Error::msg)?;
    let config = load(&DiskFiles, config_path)?;
    // The catalog's order, then the tools from configuration by name (as a gateway lists them).
    let configured = config.tools.iter().filter(|c| c.http.is_some());
    let tools: Vec<faregate::agents::manifest::ManifestTool<'_>> = tools::CATALOG
        .iter()
        .filter_map(|spec| config.tool(spec.name))
        .chain(configured)
        .filter_map(|c| {
            Some(faregate::agents::manifest::ManifestTool {
                spec: c.spec()?,
                config: c,
            })
        })
        .collect();
    // A gateway with a job store offers the watch tools too; listed, as every configured tool.
    let watch_tools: Vec<_> = faregate::agents::watch_tools::TOOLS.iter().collect();
    println!(
        "{}",
        serde_json::to_string_pretty(&faregate::agents::manifest::render(
            format,
            &tools,
            &watch_tools
        ))?
    );
    Ok(ExitCode::SUCCESS)
}
