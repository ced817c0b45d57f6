//! Reads `faregate.toml`, `tools/*.toml` and `prompts/` into a [`Config`], collecting every
//! problem on the way.
//!
//! Order: the main file first (its `[server]` names the tools and prompts directories), then the
//! prompts (tools refer to them), then the tools. Nothing is read twice and nothing is read after
//! start-up.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::Url;

use super::breakers::{check_provider_name, check_shared_policies, read_breakers, read_scope};
use super::cleartext::check_cleartext;
use super::clients::{check_scopes, read_clients};
use super::files::Files;
use super::fingerprint::Recorded;
use super::maintenance::{check_maintenance, read_maintenance};
use super::model::*;
use super::policies::{read_breaker, read_retry};
use super::problems::{ConfigErrors, Problems};
use super::reader::{
    Section, env_name_message, is_env_name, parse_http_url, parse_provider_url, parse_toml,
    provider_env_example,
};
use super::server::{check_request_timeout, read_limits, read_server};
use super::tools_files::read_tools;
use crate::breaker::BreakerConfig;
use crate::policy::RetryPolicy;
use crate::texts::call::PLACEHOLDERS;

/// Loads and validates everything; on success also returns the warnings.
pub fn load(
    files: &dyn Files,
    config_path: &Path,
    known_tools: &[&str],
) -> Result<(Config, Vec<super::Problem>), ConfigErrors> {
    let problems = RefCell::new(Problems::default());
    let base = config_path.parent().unwrap_or(Path::new(""));
    let recorded = Recorded::new(files, base);
    let config = load_into(&recorded, config_path, known_tools, &problems).map(|config| Config {
        fingerprint: recorded.fingerprint(),
        ..config
    });
    let problems = problems.into_inner();
    match config {
        Some(config) if problems.is_ok() => Ok((config, problems.warnings().to_vec())),
        _ => Err(ConfigErrors {
            errors: problems.errors().to_vec(),
            warnings: problems.warnings().to_vec(),
        }),
    }
}

fn load_into(
    files: &dyn Files,
    config_path: &Path,
    known_tools: &[&str],
    problems: &RefCell<Problems>,
) -> Option<Config> {
    let base = config_path.parent().unwrap_or(Path::new("")).to_path_buf();
    let table = parse_toml(files, config_path, problems)?;
    let root = Section::root(config_path, &table, problems);

    // [server] and [limits]
    let (server, tools_dir, prompts_dir) = read_server(&root, &base);
    let limits = read_limits(&root);

    // [auth]
    let mut auth = AuthConfig {
        client_keys_env: "FAREGATE_CLIENT_KEYS".into(),
        admin_key_env: "FAREGATE_ADMIN_KEY".into(),
        callback_allowlist: Vec::new(),
        callback_secret_env: "FAREGATE_CALLBACK_SECRET".into(),
    };
    if let Some(s) = root.table("auth") {
        for (key, slot) in [
            ("client_keys_env", &mut auth.client_keys_env),
            ("admin_key_env", &mut auth.admin_key_env),
            ("callback_secret_env", &mut auth.callback_secret_env),
        ] {
            if let Some(v) = s.string(key) {
                if is_env_name(&v) {
                    *slot = v;
                } else {
                    // The default is the example: the name the gateway reads when none is given.
                    s.error(key, env_name_message(key, &v, slot));
                }
            }
        }
        if let Some(urls) = s.strings("callback_allowlist") {
            for (i, u) in urls.iter().enumerate() {
                match parse_http_url(u) {
                    Ok(url) => auth.callback_allowlist.push(url),
                    Err(msg) => s.error(&format!("callback_allowlist[{i}]"), msg),
                }
            }
        }
        s.finish();
    }

    // [store]
    let mut store = StoreConfig {
        url: "sqlite://faregate.db".into(),
        share_breakers: true,
        spool_path: PathBuf::from(DEFAULT_SPOOL),
        job_retention: Duration::from_secs(7 * 24 * 3600),
    };
    if let Some(s) = root.table("store") {
        if let Some(url) = s.string("url") {
            if url.starts_with("sqlite:")
                || url.starts_with("postgres://")
                || url.starts_with("postgresql://")
            {
                store.url = url;
            } else {
                s.error(
                    "url",
                    format!(
                        "\"{url}\" is not a store URL; write \"sqlite://faregate.db\" or \"postgres://user@host/db\""
                    ),
                );
            }
        }
        if let Some(share) = s.boolean("share_breakers") {
            store.share_breakers = share;
        }
        if let Some(path) = s.string("spool_path") {
            match spool_path_problem(&path) {
                None => store.spool_path = PathBuf::from(path),
                Some(problem) => s.error("spool_path", problem),
            }
        }
        if let Some(d) = s.duration("job_retention") {
            if d < Duration::from_secs(1) {
                s.error(
                    "job_retention",
                    "must be at least \"1s\"; the default is \"7d\" (finished jobs are deleted that long after they ended)",
                );
            } else {
                store.job_retention = d;
            }
        }
        s.finish();
    }

    // [bookings]
    let mut bookings = BookingsConfig::defaults();
    if let Some(s) = root.table("bookings") {
        if let Some(d) = s.duration("settle") {
            if d < Duration::from_secs(1) {
                s.error("settle", "must be at least \"1s\"; the default is \"2m\"");
            } else {
                bookings.settle = d;
            }
        }
        if let Some(d) = s.duration("reconcile_every") {
            if d < Duration::from_millis(100) {
                s.error(
                    "reconcile_every",
                    "must be at least \"100ms\"; the default is \"15s\"",
                );
            } else {
                bookings.reconcile_every = d;
            }
        }
        s.finish();
    }

    // [quota]
    let mut quota = QuotaConfig::default();
    if let Some(s) = root.table("quota") {
        if let Some(key) = s.string("bucket_key") {
            match [BucketKey::Provider, BucketKey::ProviderAndCredential]
                .into_iter()
                .find(|k| k.as_str() == key)
            {
                Some(k) => quota.bucket_key = k,
                None => s.error(
                    "bucket_key",
                    format!(
                        "\"{key}\" is not a bucket key; write \"provider\" (one allowance per provider name, the default) or \"provider_and_credential\" (one per provider account)"
                    ),
                ),
            }
        }
        s.finish();
    }

    // [mcp]
    let mut mcp = McpConfig {
        // A fleet sits behind a load balancer, and sessions kept in one process are unknown to
        // the others: on PostgreSQL every revision is served statelessly unless the operator
        // says otherwise (sticky sessions).
        legacy_sessions: !is_postgres(&store.url),
        ..McpConfig::default()
    };
    if let Some(s) = root.table("mcp") {
        if let Some(hosts) = s.strings("allowed_hosts") {
            for (i, h) in hosts.iter().enumerate() {
                if let Err(msg) = check_allowed_host(h) {
                    s.error(&format!("allowed_hosts[{i}]"), msg);
                }
            }
            if hosts.is_empty() {
                s.error(
                    "allowed_hosts",
                    "name at least one host (an empty list would accept any Host header and open the endpoint to DNS rebinding), e.g. [\"localhost\", \"127.0.0.1\", \"gateway.example.com\"]",
                );
            }
            mcp.allowed_hosts = hosts;
        }
        if let Some(origins) = s.strings("allowed_origins") {
            for (i, o) in origins.iter().enumerate() {
                if let Err(msg) = check_allowed_origin(o) {
                    s.error(&format!("allowed_origins[{i}]"), msg);
                }
            }
            mcp.allowed_origins = origins;
        }
        if let Some(b) = s.boolean("legacy_sessions") {
            mcp.legacy_sessions = b;
        }
        s.finish();
    }

    // [breakers] and [providers.*]
    let scope = read_breakers(&root);
    let mut providers = BTreeMap::new();
    let mut declared_providers = BTreeMap::new();
    let mut scopes = BTreeMap::new();
    for (name, s) in root.named_tables("providers") {
        check_provider_name(&s, &name);
        let provider = read_provider(&name, &s);
        declared_providers.insert(name.clone(), provider.as_ref().map(|p| p.kind.as_str()));
        if let Some(p) = provider {
            providers.insert(name.clone(), p);
        }
        if let Some(scope) = read_scope(&s, "breaker_scope") {
            scopes.insert(name.clone(), scope);
        }
        s.finish();
    }

    // [defaults]
    let mut breaker_defaults = BreakerConfig::builder();
    let mut retry_defaults = RetryPolicy::standard();
    let mut jobs = default_jobs();
    if let Some(d) = root.table("defaults") {
        if let Some(b) = d.table("breaker") {
            breaker_defaults = read_breaker(&b, &breaker_defaults);
            b.finish();
        }
        if let Some(r) = d.table("retry") {
            retry_defaults = read_retry(&r, &retry_defaults);
            r.finish();
        }
        if let Some(j) = d.table("jobs") {
            if let Some(n) = j.integer("max_attempts", 1, 10_000) {
                jobs.max_attempts = n as u32;
            }
            if let Some(v) = j.duration("max_age") {
                if v.is_zero() {
                    j.error("max_age", "must be longer than zero, e.g. \"24h\"");
                } else {
                    jobs.max_age = v;
                }
            }
            if let Some(n) = j.integer("workers", 1, 1024) {
                jobs.workers = n as u32;
            }
            if let Some(v) = j.duration("lease_margin") {
                if v < Duration::from_secs(1) {
                    j.error("lease_margin", "must be at least \"1s\"; e.g. \"30s\"");
                } else {
                    jobs.lease_margin = v;
                }
            }
            j.finish();
        }
        d.finish();
    }
    let telemetry = read_telemetry(&root);
    let watches = read_watches(&root);
    let (clients, client_scopes) = read_clients(&root, &limits);
    let maintenance = read_maintenance(&root);
    root.finish();

    let prompts = read_prompts(files, &prompts_dir, problems);
    let tools = read_tools(
        files,
        &tools_dir,
        known_tools,
        &declared_providers,
        &prompts,
        &breaker_defaults,
        &retry_defaults,
        problems,
    );
    // A tools directory that cannot be listed is one problem, said once: the scopes and the
    // windows that name tools are not each told that no tool exists.
    let listed = tools.is_some();
    let tools = tools.unwrap_or_default();
    check_provider_kinds(&providers, &tools, problems);
    check_request_timeout(&root, &server, &tools);
    check_settle(&root, &bookings, &tools);
    if listed {
        check_scopes(&root, &client_scopes, &tools);
        check_maintenance(&root, &maintenance, &tools);
    }
    // A defaults table that cannot be built was reported where its keys were set, and the
    // load fails then; the standard tuning only stands in for it meanwhile.
    let shared_policy = breaker_defaults
        .build()
        .or_else(|_| BreakerConfig::builder().build())
        .ok()?;
    let breakers = BreakersConfig {
        scope,
        by_provider: scopes,
        shared_policy,
    };
    check_shared_policies(
        &root,
        |p| breakers.scope_of(p),
        &breakers.shared_policy,
        &tools,
    );

    Some(Config {
        source: config_path.to_path_buf(),
        // Set by `load`, once every file is read.
        fingerprint: String::new(),
        server,
        auth,
        store,
        bookings,
        quota,
        breakers,
        mcp,
        limits,
        providers,
        jobs,
        telemetry,
        watches,
        tools,
        prompts,
        clients,
        maintenance: maintenance.windows,
    })
}

/// `[watches]`.
fn read_watches(root: &Section<'_>) -> WatchesConfig {
    let mut w = WatchesConfig::default();
    let Some(s) = root.table("watches") else {
        return w;
    };
    if let Some(n) = s.integer("max_active_per_client", 1, 100_000) {
        w.max_active_per_client = n as u32;
    }
    if let Some(v) = s.duration("min_interval") {
        if v < Duration::from_secs(1) {
            s.error("min_interval", "must be at least \"1s\"; e.g. \"1m\"");
        } else {
            w.min_interval = v;
        }
    }
    s.finish();
    w
}

/// `[telemetry]`.
fn read_telemetry(root: &Section<'_>) -> TelemetryConfig {
    let mut t = default_telemetry();
    let Some(s) = root.table("telemetry") else {
        return t;
    };
    if let Some(v) = s.boolean("metrics_public") {
        t.metrics_public = v;
    }
    if let Some(u) = s.string("otlp_endpoint") {
        match parse_http_url(&u) {
            Ok(url) => t.otlp_endpoint = Some(url),
            Err(_) => s.error(
                "otlp_endpoint",
                format!(
                    "\"{u}\" is not an http(s) URL; write the collector's OTLP/HTTP base URL, e.g. \"http://127.0.0.1:4318\""
                ),
            ),
        }
    }
    if let Some(f) = s.string("log_format") {
        match f.as_str() {
            "text" => t.json_logs = false,
            "json" => t.json_logs = true,
            other => s.error(
                "log_format",
                format!("\"{other}\" is not a log format; write \"text\" or \"json\""),
            ),
        }
    }
    s.finish();
    t
}

/// `[store] spool_path` when not given: beside the default SQLite store, in the working
/// directory.
pub const DEFAULT_SPOOL: &str = "faregate-spool.db";

/// What is wrong with `path` as `[store] spool_path`, if anything: it names a file (SQLite
/// creates it when first needed), not a URL or a directory.
fn spool_path_problem(path: &str) -> Option<String> {
    let hint =
        "name a file, e.g. \"/var/lib/faregate/spool.db\" (the default is \"faregate-spool.db\")";
    if path.trim().is_empty() {
        Some(format!("is empty; {hint}"))
    } else if path.contains("://") || path.starts_with("sqlite:") {
        Some(format!("\"{path}\" is a URL; {hint}"))
    } else if path.ends_with('/') || path.ends_with(std::path::MAIN_SEPARATOR) {
        Some(format!("\"{path}\" is a directory; {hint}"))
    } else {
        None
    }
}

/// Whether a store URL names PostgreSQL (a fleet's store).
fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// One `[providers.X]` table. Every key is read before anything is refused, so every problem
/// of the table is reported at once and no key the table does take is called unknown because
/// an earlier one was wrong.
fn read_provider(name: &str, s: &Section<'_>) -> Option<ProviderConfig> {
    let http2_prior_knowledge = s.boolean("http2_prior_knowledge").unwrap_or(false);
    let allow_cleartext = s.boolean("allow_cleartext");
    let kind = read_provider_kind(name, s);
    let base_url = s
        .required_string("base_url", "\"https://api.duffel.com\"")
        .and_then(|u| {
            parse_provider_url(&u)
                .map_err(|msg| s.error("base_url", msg))
                .ok()
        });
    let requests_per_second = s
        .integer("requests_per_second", 1, 100_000)
        .map(|n| n as u32);
    let connect_timeout = match s.duration("connect_timeout") {
        Some(d) if d < Duration::from_millis(100) || d > Duration::from_secs(60) => {
            s.error(
                "connect_timeout",
                "must be between \"100ms\" and \"60s\"; the default is \"2s\"",
            );
            DEFAULT_CONNECT_TIMEOUT
        }
        Some(d) => d,
        None => DEFAULT_CONNECT_TIMEOUT,
    };
    let timeout = match s.duration("timeout") {
        Some(d) if d < Duration::from_millis(100) || d > Duration::from_secs(300) => {
            s.error(
                "timeout",
                "must be between \"100ms\" and \"5m\"; leave it out to use each tool's timeout",
            );
            None
        }
        other => other,
    };
    check_cleartext(name, s, base_url.as_ref(), kind.as_ref(), allow_cleartext);
    let base_url = base_url?;
    if http2_prior_knowledge && base_url.scheme() != "http" {
        s.error(
            "http2_prior_knowledge",
            format!(
                "is for cleartext providers (an http:// base_url) that serve HTTP/2 without TLS; {} is {}, and over TLS HTTP/2 is negotiated by ALPN without this setting",
                base_url.as_str(),
                base_url.scheme()
            ),
        );
    }
    let kind = kind?;
    Some(ProviderConfig {
        name: name.to_string(),
        requests_per_second: requests_per_second
            .or_else(|| documented_requests_per_second(&kind, &base_url)),
        kind,
        base_url,
        connect_timeout,
        timeout,
        http2_prior_knowledge,
    })
}

/// The keys that name a provider's credentials, which depend on its kind (and an http
/// provider's `auth`).
const CREDENTIAL_KEYS: [&str; 10] = [
    "token_env",
    "client_id_env",
    "client_secret_env",
    "auth",
    "header",
    "key_env",
    "username_env",
    "password_env",
    "token_url",
    "scope",
];

/// Marks every credential key known: with no valid kind (or `auth`) it is not known which keys
/// the table takes, so none of them is called unknown.
fn credential_keys_read(s: &Section<'_>) {
    for key in CREDENTIAL_KEYS {
        s.has(key);
    }
}

/// The environment variable named at `key` of provider `provider`, which must be a variable's
/// name (never the secret); `example` is said when the key is missing.
fn env_key(s: &Section<'_>, provider: &str, key: &'static str, example: &str) -> Option<String> {
    let v = s.required_string(key, example)?;
    if is_env_name(&v) {
        Some(v)
    } else {
        let example = provider_env_example(provider, key, example.trim_matches('"'));
        s.error(key, env_name_message(key, &v, &example));
        None
    }
}

/// A provider's `kind` and the credential keys that kind takes, each read (and each problem
/// reported) before any is refused.
fn read_provider_kind(name: &str, s: &Section<'_>) -> Option<ProviderKind> {
    let Some(kind) = s.required_string("kind", "\"duffel\"") else {
        credential_keys_read(s);
        return None;
    };
    match kind.as_str() {
        "duffel" => env_key(s, name, "token_env", "\"DUFFEL_ACCESS_TOKEN\"")
            .map(|token_env| ProviderKind::Duffel { token_env }),
        "amadeus" => {
            let id = env_key(s, name, "client_id_env", "\"AMADEUS_CLIENT_ID\"");
            let secret = env_key(s, name, "client_secret_env", "\"AMADEUS_CLIENT_SECRET\"");
            Some(ProviderKind::Amadeus {
                client_id_env: id?,
                client_secret_env: secret?,
            })
        }
        "http" => read_http_auth(name, s).map(|auth| ProviderKind::Http { auth }),
        other => {
            s.error(
                "kind",
                format!("unknown provider kind \"{other}\"; valid kinds: duffel, amadeus, http"),
            );
            credential_keys_read(s);
            None
        }
    }
}

/// How much longer than every write tool's deadline `[bookings] settle` must be.
///
/// A booking's age is the reconciling replica's clock minus the stamp the booking replica's
/// clock wrote, so a reconciler whose clock runs ahead sees it older than it is; and a provider
/// may still create an order from a request that reached it just before the gateway gave up.
/// Thirty seconds covers both with room: clocks kept by NTP agree within milliseconds.
pub(super) const SETTLE_MARGIN: Duration = Duration::from_secs(30);

/// `[bookings] settle` must be longer than every write tool's deadline, by [`SETTLE_MARGIN`]:
/// reconciliation reads a `pending` booking older than `settle` as unknown and, when the
/// provider holds no order yet, settles it as failed, while a booking within its deadline may
/// still be on its way (and a call again under its key, told it failed, could book a second
/// time).
fn check_settle(root: &Section<'_>, bookings: &BookingsConfig, tools: &[ToolConfig]) {
    let longest = tools
        .iter()
        .filter(|t| {
            t.spec()
                .is_some_and(|s| s.access == crate::tools::Access::Write)
        })
        .max_by_key(|t| t.deadline);
    let Some(longest) = longest else {
        return;
    };
    let least = longest.deadline + SETTLE_MARGIN;
    if bookings.settle < least {
        let deadline = humantime::format_duration(longest.deadline);
        root.error(
            "bookings.settle",
            format!(
                "{} is not {} longer than the deadline of {} ({deadline}); reconciliation could settle a booking still on its way as failed (a replica's clock running ahead, or a provider still creating the order). Write at least \"{}\" (the default is \"2m\"), or shorten the tool's deadline",
                humantime::format_duration(bookings.settle),
                humantime::format_duration(SETTLE_MARGIN),
                longest.name,
                humantime::format_duration(least),
            ),
        );
    }
}

/// A tool from configuration is served only by `http` providers, and a catalog tool by the
/// adapters that know it and by the `http` providers its file binds (`[binding.<provider>]`).
/// A binding the file has but that was refused (each of its problems reported at its own
/// keys) is not also called missing: that would send the operator looking for a table that is
/// there.
fn check_provider_kinds(
    providers: &BTreeMap<String, ProviderConfig>,
    tools: &[ToolConfig],
    problems: &RefCell<Problems>,
) {
    for tool in tools {
        for (i, name) in tool.providers.iter().enumerate() {
            let Some(provider) = providers.get(name) else {
                continue;
            };
            let http = matches!(provider.kind, ProviderKind::Http { .. });
            let bound = tool.binding(name).is_some()
                || problems
                    .borrow()
                    .has_error_under(&tool.file, &format!("binding.{name}"));
            // A tool from configuration on a provider of another kind: reported as its file
            // was read (`read_tool`), so a file with other problems hears of it too.
            let message = match (tool.http.is_some(), http) {
                (false, true) if bound => continue,
                (false, true) if crate::tools::BINDABLE.contains(&tool.name.as_str()) => format!(
                    "provider \"{name}\" is of kind http: it serves {} only through a [binding.{name}] in this file, which says how its request is built from the tool's arguments and how its answer maps into the tool's output",
                    tool.name
                ),
                (false, true) => format!(
                    "provider \"{name}\" is of kind http, which serves only tools from configuration (kind = \"http\" in the tool's file) and, through a binding, the built-in tools whose outputs carry no routable ids ({}); {} needs a duffel or amadeus provider",
                    crate::tools::BINDABLE.join(", "),
                    tool.name
                ),
                _ => continue,
            };
            problems
                .borrow_mut()
                .error(&tool.file, format!("providers[{i}]"), message);
        }
        for bound in &tool.bindings {
            let name = &bound.provider;
            let message = match providers.get(name) {
                None => format!(
                    "unknown provider \"{name}\"; providers configured in faregate.toml: {}",
                    providers.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
                Some(p) if !matches!(p.kind, ProviderKind::Http { .. }) => format!(
                    "provider \"{name}\" is of kind {}: a binding is for a provider of kind http (the built-in adapters know the tool already)",
                    p.kind.as_str()
                ),
                Some(_) if !tool.providers.contains(name) => {
                    problems.borrow_mut().warning(
                        &tool.file,
                        format!("binding.{name}"),
                        format!(
                            "provider \"{name}\" is not in this tool's providers, so the binding is not used; add it to `providers` after the built-in ones, or remove [binding.{name}]"
                        ),
                    );
                    continue;
                }
                Some(_) => continue,
            };
            problems
                .borrow_mut()
                .error(&tool.file, format!("binding.{name}"), message);
        }
    }
}

/// How an `http` provider authenticates (`auth`, and the keys that kind of authentication
/// needs).
/// An http provider's `auth` and the keys it takes, each read (and each problem reported)
/// before any is refused.
fn read_http_auth(name: &str, s: &Section<'_>) -> Option<HttpAuth> {
    let env = |key: &'static str, example: &str| env_key(s, name, key, example);
    let auth = s.string("auth").unwrap_or_else(|| "none".into());
    Some(match auth.as_str() {
        "none" => HttpAuth::None,
        "bearer" => HttpAuth::Bearer {
            token_env: env("token_env", "\"FLIGHTS_API_TOKEN\"")?,
        },
        "api_key" => {
            let header = s.required_string("header", "\"x-apikey\"");
            if let Some(h) = &header
                && reqwest::header::HeaderName::from_bytes(h.as_bytes()).is_err()
            {
                s.error(
                    "header",
                    format!("\"{h}\" is not an HTTP header name; e.g. \"x-apikey\""),
                );
            }
            let key_env = env("key_env", "\"FLIGHTS_API_KEY\"");
            HttpAuth::ApiKey {
                header: header?,
                key_env: key_env?,
            }
        }
        "basic" => {
            let username_env = env("username_env", "\"HOTELS_API_USER\"");
            let password_env = env("password_env", "\"HOTELS_API_PASSWORD\"");
            HttpAuth::Basic {
                username_env: username_env?,
                password_env: password_env?,
            }
        }
        "oauth2" => {
            let token_url = s
                .required_string("token_url", "\"https://auth.example.com/oauth/token\"")
                .and_then(|u| {
                    parse_provider_url(&u)
                        .map_err(|msg| s.error("token_url", msg))
                        .ok()
                });
            let client_id_env = env("client_id_env", "\"HOTELS_CLIENT_ID\"");
            let client_secret_env = env("client_secret_env", "\"HOTELS_CLIENT_SECRET\"");
            let scope = s.string("scope");
            HttpAuth::OAuth2 {
                token_url: token_url?,
                client_id_env: client_id_env?,
                client_secret_env: client_secret_env?,
                scope,
            }
        }
        other => {
            s.error(
                "auth",
                format!("unknown authentication \"{other}\"; valid: none, bearer, api_key, basic, oauth2"),
            );
            credential_keys_read(s);
            return None;
        }
    })
}

/// A provider's `connect_timeout` when not given.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The rate a provider documents as a fixed limit, for providers that send no rate-limit
/// headers: Amadeus allows 40 transactions per second per user in production
/// (`api.amadeus.com`) and 10 in its test environment (every other host, the simulator too).
/// Duffel says its limit on every answer, so nothing is assumed for it.
fn documented_requests_per_second(kind: &ProviderKind, base_url: &Url) -> Option<u32> {
    match kind {
        ProviderKind::Amadeus { .. } if base_url.host_str() == Some("api.amadeus.com") => Some(40),
        ProviderKind::Amadeus { .. } => Some(10),
        ProviderKind::Duffel { .. } | ProviderKind::Http { .. } => None,
    }
}

fn read_prompts(
    files: &dyn Files,
    dir: &Path,
    problems: &RefCell<Problems>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let paths = match files.list(dir, ".md") {
        Ok(p) => p,
        Err(e) => {
            problems.borrow_mut().error(
                dir,
                "",
                format!("cannot list the prompts directory: {e}; set server.prompts_dir"),
            );
            return out;
        }
    };
    for path in paths {
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_string)
        else {
            continue;
        };
        match files.read(&path) {
            Ok(text) => {
                for placeholder in placeholders(&text) {
                    if !PLACEHOLDERS.contains(&placeholder.as_str()) {
                        problems.borrow_mut().error(
                            &path,
                            "",
                            format!(
                                "unknown placeholder {{{placeholder}}}; valid placeholders: {}",
                                PLACEHOLDERS
                                    .iter()
                                    .map(|p| format!("{{{p}}}"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        );
                    }
                }
                out.insert(name, text);
            }
            Err(e) => problems
                .borrow_mut()
                .error(&path, "", format!("cannot read the file: {e}")),
        }
    }
    out
}

/// The `{name}` placeholders in a prompt text.
pub fn placeholders(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        match after.find('}') {
            Some(end)
                if end > 0
                    && after[..end]
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                out.push(after[..end].to_string());
                rest = &after[end + 1..];
            }
            _ => rest = after,
        }
    }
    out
}

/// A `Host` allowlist entry: a host name or IP address, optionally with `:port`.
fn check_allowed_host(h: &str) -> Result<(), String> {
    let bad = || {
        format!(
            "\"{h}\" is not a host; write a host name or address, optionally with a port, e.g. \"gateway.example.com\", \"127.0.0.1\", \"::1\" or \"gateway.example.com:8443\" (no scheme, no path)"
        )
    };
    if h.is_empty() || h.contains("://") || h.contains('/') || h.contains(char::is_whitespace) {
        return Err(bad());
    }
    let ok = h
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']' | '_'));
    if ok { Ok(()) } else { Err(bad()) }
}

/// An `Origin` allowlist entry: `null`, or `scheme://host` with `:port` or `:*` (any port).
fn check_allowed_origin(o: &str) -> Result<(), String> {
    if o == "null" {
        return Ok(());
    }
    let bad = |why: &str| {
        format!(
            "\"{o}\" is not a browser origin ({why}); write scheme://host with a port or :* for any port, e.g. \"https://chat.example.com:443\" or \"http://localhost:*\""
        )
    };
    let base = o.strip_suffix(":*").unwrap_or(o);
    match Url::parse(base) {
        Ok(u) if u.scheme() != "http" && u.scheme() != "https" => {
            Err(bad("the scheme must be http or https"))
        }
        Ok(u) if u.host().is_none() => Err(bad("no host")),
        Ok(u) if u.path() != "/" || u.query().is_some() || base.ends_with('/') => {
            Err(bad("an origin has no path"))
        }
        Ok(u) if base != o && u.port().is_some() => Err(bad("a port and :* together")),
        Ok(_) => Ok(()),
        Err(e) => Err(bad(&e.to_string())),
    }
}
