//! Which settings a running gateway can take on a reload, and which need a restart.
//!
//! A reload applies the tools (`tools/`), the prompts (`prompts/`), the clients and their keys
//! (`[[clients]]`), the maintenance windows (`[[maintenance]]`) and each provider's attempt cap
//! (`[providers.X] timeout`). A tool of kind `http` is the exception among tools: its request
//! and result are compiled into its provider's client at start, so a new one, or a new request,
//! result or definition of one, waits for a restart (its running version, if any, stays, with
//! the policy keys read); one removed and put back as it was at start is served again, since
//! its provider's client still holds it. Everything else was built into something that lives as long as the
//! process (the listener, the store, the provider clients, the job workers, the MCP endpoint,
//! telemetry), so [`settle`] keeps the running value and names each difference, so an operator
//! reads "needs a restart" instead of wondering why an edit did nothing.

use std::fmt::Debug;
use std::time::Duration;

use super::load::SETTLE_MARGIN;
use super::model::{Config, HttpAuth, ProviderKind};

/// A configuration read for a reload, settled against the one running.
#[derive(Debug, Clone)]
pub struct Settled {
    /// What the gateway runs on after the reload: the reloadable parts as read, the rest as
    /// running.
    pub config: Config,
    /// Each setting read with another value than the running one that only a restart applies:
    /// the key, the value in force and the value read.
    pub needs_restart: Vec<String>,
}

/// `read` with every setting a reload cannot apply put back to `running`'s value, and those
/// settings named. `built` is the configuration the gateway was built from at start: its
/// provider clients compiled each tool of kind http from it, so a tool of kind http is served
/// only as `built` declares it (one removed by a reload and put back unchanged is served
/// again). `request_timeout` is the request timeout in force (resolved at start: a reload that
/// moves the longest tool deadline does not move it).
pub fn settle(
    running: &Config,
    built: &Config,
    read: Config,
    request_timeout: Duration,
) -> Settled {
    let mut out = Vec::new();
    let mut tools = read.tools;
    tools.retain_mut(|tool| {
        // A catalog tool (never of kind http: the names differ) reloads whole.
        let Some(http) = &tool.http else {
            return true;
        };
        match built.tool(&tool.name).and_then(|b| b.http.as_ref()) {
            Some(compiled) if compiled == http => true,
            // The policy keys (description, providers, timeouts, breaker, …) are the tool's
            // like any tool's; only the request, result and definition wait.
            Some(compiled) if running.tool(&tool.name).is_some() => {
                out.push(format!(
                    "{}: the request, result or definition of a tool of kind http: the running one stays (its policy keys reload); needs a restart",
                    tool.file.display()
                ));
                tool.http = Some(compiled.clone());
                true
            }
            Some(_) => {
                out.push(format!(
                    "{}: a tool of kind http ({}) put back with another request, result or definition than at start, not served until then; needs a restart",
                    tool.file.display(),
                    tool.name
                ));
                false
            }
            None => {
                out.push(format!(
                    "{}: a new tool of kind http ({}), not served until then; needs a restart",
                    tool.file.display(),
                    tool.name
                ));
                false
            }
        }
    });
    // `[bookings] settle` stays as running, so a booking tool's deadline may grow only within it
    // (`check_settle` held the file to its own `settle`): reconciliation would otherwise settle
    // a booking still on its way as failed.
    let settle = running.bookings.settle;
    tools.retain_mut(|tool| {
        let write = tool
            .spec()
            .is_some_and(|s| s.access == crate::tools::Access::Write);
        if !write || tool.deadline + SETTLE_MARGIN <= settle {
            return true;
        }
        let keep = running.tool(&tool.name).cloned();
        out.push(format!(
            "{}: the deadline of {} ({}) needs [bookings] settle of at least {}, and the settle in force ({}) changes only with a restart: {}; needs a restart",
            tool.file.display(),
            tool.name,
            humantime::format_duration(tool.deadline),
            humantime::format_duration(tool.deadline + SETTLE_MARGIN),
            humantime::format_duration(settle),
            if keep.is_some() { "the running tool stays" } else { "not served until then" },
        ));
        match keep {
            Some(w) => {
                *tool = w;
                true
            }
            None => false,
        }
    });
    let read = Config { tools, ..read };
    let (r, n) = (&running.server, &read.server);
    differ(&mut out, "[server] listen", &r.listen, &n.listen);
    differ(
        &mut out,
        "[server] max_body_bytes",
        &r.max_body_bytes,
        &n.max_body_bytes,
    );
    differ(
        &mut out,
        "[server] header_read_timeout",
        &r.header_read_timeout,
        &n.header_read_timeout,
    );
    differ(
        &mut out,
        "[server] max_connections",
        &r.max_connections,
        &n.max_connections,
    );
    differ(
        &mut out,
        "[server] max_concurrent_streams",
        &r.max_concurrent_streams,
        &n.max_concurrent_streams,
    );
    differ(
        &mut out,
        "[server] shutdown_grace",
        &r.shutdown_grace,
        &n.shutdown_grace,
    );
    // Unset, it follows the longest tool deadline, which the tools read may have moved.
    differ(
        &mut out,
        "[server] request_timeout (unset: the longest tool deadline plus 5 s)",
        &request_timeout,
        &read.request_timeout(),
    );
    let (r, n) = (&running.auth, &read.auth);
    differ(
        &mut out,
        "[auth] callback_allowlist",
        &display_all(&r.callback_allowlist),
        &display_all(&n.callback_allowlist),
    );
    differ(
        &mut out,
        "[auth] callback_secret_env",
        &r.callback_secret_env,
        &n.callback_secret_env,
    );
    let (r, n) = (&running.store, &read.store);
    differ(
        &mut out,
        "[store] url",
        &redacted(&r.url),
        &redacted(&n.url),
    );
    differ(
        &mut out,
        "[store] share_breakers",
        &r.share_breakers,
        &n.share_breakers,
    );
    differ(&mut out, "[store] spool_path", &r.spool_path, &n.spool_path);
    differ(
        &mut out,
        "[store] job_retention",
        &r.job_retention,
        &n.job_retention,
    );
    differ(
        &mut out,
        "[bookings] settle",
        &running.bookings.settle,
        &read.bookings.settle,
    );
    differ(
        &mut out,
        "[bookings] reconcile_every",
        &running.bookings.reconcile_every,
        &read.bookings.reconcile_every,
    );
    differ(
        &mut out,
        "[quota] bucket_key",
        &running.quota.bucket_key.as_str(),
        &read.quota.bucket_key.as_str(),
    );
    // Key by key, in the words of the file: a section's struct, printed whole, named fields
    // an operator never wrote (`TelemetryConfig { json_logs: … }`).
    let (r, n) = (&running.mcp, &read.mcp);
    differ(
        &mut out,
        "[mcp] allowed_hosts",
        &r.allowed_hosts,
        &n.allowed_hosts,
    );
    differ(
        &mut out,
        "[mcp] allowed_origins",
        &r.allowed_origins,
        &n.allowed_origins,
    );
    differ(
        &mut out,
        "[mcp] legacy_sessions",
        &r.legacy_sessions,
        &n.legacy_sessions,
    );
    let (r, n) = (&running.limits, &read.limits);
    let limits = |key: &str| {
        format!(
            "[limits] {key} (for keys without a [[clients]] entry; a client's own limits reload)"
        )
    };
    differ(
        &mut out,
        &limits("client_rate"),
        &Shown(rate(r.client_rate)),
        &Shown(rate(n.client_rate)),
    );
    differ(
        &mut out,
        &limits("client_burst"),
        &r.client_burst,
        &n.client_burst,
    );
    differ(
        &mut out,
        &limits("client_max_concurrent_calls"),
        &Shown(
            r.client_max_concurrent_calls
                .map_or("unset".into(), |c| c.to_string()),
        ),
        &Shown(
            n.client_max_concurrent_calls
                .map_or("unset".into(), |c| c.to_string()),
        ),
    );
    let cap = |c: Option<u32>| Shown(c.map_or("unset".into(), |c| c.to_string()));
    differ(
        &mut out,
        &limits("client_max_streams"),
        &cap(r.client_max_streams),
        &cap(n.client_max_streams),
    );
    differ(
        &mut out,
        &limits("client_max_mcp_sessions"),
        &cap(r.client_max_mcp_sessions),
        &cap(n.client_max_mcp_sessions),
    );
    // The same for every client: a [[clients]] entry has no share of its own.
    differ(
        &mut out,
        "[limits] client_share_of_tool",
        &Shown(r.client_share_of_tool.to_string()),
        &Shown(n.client_share_of_tool.to_string()),
    );
    differ(
        &mut out,
        "[limits] provider_reserve",
        &Shown(r.provider_reserve.to_string()),
        &Shown(n.provider_reserve.to_string()),
    );
    let (r, n) = (&running.jobs, &read.jobs);
    differ(
        &mut out,
        "[defaults.jobs] max_attempts",
        &r.max_attempts,
        &n.max_attempts,
    );
    differ(
        &mut out,
        "[defaults.jobs] max_age",
        &Shown(span(r.max_age)),
        &Shown(span(n.max_age)),
    );
    differ(&mut out, "[defaults.jobs] workers", &r.workers, &n.workers);
    differ(
        &mut out,
        "[defaults.jobs] lease_margin",
        &Shown(span(r.lease_margin)),
        &Shown(span(n.lease_margin)),
    );
    let (r, n) = (&running.telemetry, &read.telemetry);
    differ(
        &mut out,
        "[telemetry] metrics_public",
        &r.metrics_public,
        &n.metrics_public,
    );
    let endpoint =
        |u: &Option<reqwest::Url>| Shown(u.as_ref().map_or("unset".into(), |u| u.to_string()));
    differ(
        &mut out,
        "[telemetry] otlp_endpoint",
        &endpoint(&r.otlp_endpoint),
        &endpoint(&n.otlp_endpoint),
    );
    let format = |json: bool| Shown(if json { "\"json\"" } else { "\"text\"" }.into());
    differ(
        &mut out,
        "[telemetry] log_format",
        &format(r.json_logs),
        &format(n.json_logs),
    );
    let (r, n) = (&running.watches, &read.watches);
    differ(
        &mut out,
        "[watches] max_active_per_client",
        &r.max_active_per_client,
        &n.max_active_per_client,
    );
    differ(
        &mut out,
        "[watches] min_interval",
        &Shown(span(r.min_interval)),
        &Shown(span(n.min_interval)),
    );
    let mut providers = running.providers.clone();
    for (name, was) in &running.providers {
        match read.providers.get(name) {
            None => differ(
                &mut out,
                &format!("[providers.{name}]"),
                &"configured",
                &"removed",
            ),
            Some(now) => {
                let key = |field: &str| format!("[providers.{name}] {field}");
                // In the file's words, key by key, and without the values: a struct printed
                // whole named fields nobody wrote, and these keys are the credentials' settings.
                for changed in credential_changes(&was.kind, &now.kind) {
                    out.push(format!("{}: {changed}; needs a restart", key(changed.key)));
                }
                differ(
                    &mut out,
                    &key("base_url"),
                    &was.base_url.as_str(),
                    &now.base_url.as_str(),
                );
                differ(
                    &mut out,
                    &key("requests_per_second"),
                    &was.requests_per_second,
                    &now.requests_per_second,
                );
                differ(
                    &mut out,
                    &key("connect_timeout"),
                    &was.connect_timeout,
                    &now.connect_timeout,
                );
                differ(
                    &mut out,
                    &key("http2_prior_knowledge"),
                    &was.http2_prior_knowledge,
                    &now.http2_prior_knowledge,
                );
                // An attempt's cap is carried on each tool's route: it reloads.
                if let Some(kept) = providers.get_mut(name) {
                    kept.timeout = now.timeout;
                }
            }
        }
    }
    for name in read.providers.keys() {
        if !running.providers.contains_key(name) {
            differ(
                &mut out,
                &format!("[providers.{name}]"),
                &"absent",
                &"added",
            );
        }
    }
    let config = Config {
        server: running.server.clone(),
        auth: super::model::AuthConfig {
            callback_allowlist: running.auth.callback_allowlist.clone(),
            callback_secret_env: running.auth.callback_secret_env.clone(),
            ..read.auth
        },
        store: running.store.clone(),
        bookings: running.bookings.clone(),
        quota: running.quota,
        mcp: running.mcp.clone(),
        limits: running.limits.clone(),
        providers,
        jobs: running.jobs.clone(),
        telemetry: running.telemetry.clone(),
        watches: running.watches.clone(),
        ..read
    };
    Settled {
        config,
        needs_restart: out,
    }
}

/// One credential setting of a provider (`kind`, `auth` or a key they take) read with another
/// value than the one in force.
struct CredentialChange {
    key: &'static str,
    /// The values, for `kind` and `auth` only (words of the file, never a secret's).
    values: Option<(&'static str, &'static str)>,
}

impl std::fmt::Display for CredentialChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.values {
            Some((was, now)) => write!(f, "\"{was}\" in force, \"{now}\" read"),
            None => f.write_str(
                "changed; the running value stays (a credential setting: its values are not shown)",
            ),
        }
    }
}

/// A provider's `kind`, its `auth` (for kind http) and the keys they take, as the file writes
/// them: `(key, value)`.
fn credential_keys(kind: &ProviderKind) -> (&'static str, Vec<(&'static str, String)>) {
    let keys = match kind {
        ProviderKind::Duffel { token_env } => vec![("token_env", token_env.clone())],
        ProviderKind::Amadeus {
            client_id_env,
            client_secret_env,
        } => vec![
            ("client_id_env", client_id_env.clone()),
            ("client_secret_env", client_secret_env.clone()),
        ],
        ProviderKind::Http { auth } => match auth {
            HttpAuth::None => vec![],
            HttpAuth::Bearer { token_env } => vec![("token_env", token_env.clone())],
            HttpAuth::ApiKey { header, key_env } => {
                vec![("header", header.clone()), ("key_env", key_env.clone())]
            }
            HttpAuth::Basic {
                username_env,
                password_env,
            } => vec![
                ("username_env", username_env.clone()),
                ("password_env", password_env.clone()),
            ],
            HttpAuth::OAuth2 {
                token_url,
                client_id_env,
                client_secret_env,
                scope,
            } => vec![
                ("token_url", token_url.to_string()),
                ("client_id_env", client_id_env.clone()),
                ("client_secret_env", client_secret_env.clone()),
                ("scope", scope.clone().unwrap_or_default()),
            ],
        },
    };
    let auth = match kind {
        ProviderKind::Http { auth } => match auth {
            HttpAuth::None => "none",
            HttpAuth::Bearer { .. } => "bearer",
            HttpAuth::ApiKey { .. } => "api_key",
            HttpAuth::Basic { .. } => "basic",
            HttpAuth::OAuth2 { .. } => "oauth2",
        },
        _ => "",
    };
    (auth, keys)
}

/// What differs between a provider's credential settings in force and read: `kind` when the
/// kind changed, else `auth` when an http provider's authentication changed, else each key of
/// the same kind and auth with another value (a `scope` added or removed too).
fn credential_changes(was: &ProviderKind, now: &ProviderKind) -> Vec<CredentialChange> {
    if was.as_str() != now.as_str() {
        return vec![CredentialChange {
            key: "kind",
            values: Some((was.as_str(), now.as_str())),
        }];
    }
    let ((was_auth, was_keys), (now_auth, now_keys)) = (credential_keys(was), credential_keys(now));
    if was_auth != now_auth {
        return vec![CredentialChange {
            key: "auth",
            values: Some((was_auth, now_auth)),
        }];
    }
    was_keys
        .iter()
        .zip(&now_keys)
        .filter(|(w, n)| w != n)
        .map(|((key, _), _)| CredentialChange { key, values: None })
        .collect()
}

/// Names `key` in `out` when its value in force (`was`) and read (`now`) differ.
fn differ(out: &mut Vec<String>, key: &str, was: &dyn Debug, now: &dyn Debug) {
    let (was, now) = (format!("{was:?}"), format!("{now:?}"));
    if was != now {
        out.push(format!(
            "{key}: {was} in force, {now} read; needs a restart"
        ));
    }
}

/// A value as the file writes it, printed without quotes or a type's name.
struct Shown(String);

impl Debug for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A duration as the file writes it: `"24h"`.
fn span(d: Duration) -> String {
    format!("\"{}\"", humantime::format_duration(d))
}

/// A rate as the file writes it: `"20/s"`, or `"off"`.
fn rate(r: Option<super::model::Rate>) -> String {
    let Some(r) = r else {
        return "\"off\"".into();
    };
    let per = match r.per.as_secs() {
        1 => "s",
        60 => "m",
        3600 => "h",
        _ => return format!("\"{}/{}\"", r.count, humantime::format_duration(r.per)),
    };
    format!("\"{}/{per}\"", r.count)
}

/// URLs as one readable list.
fn display_all(urls: &[reqwest::Url]) -> Vec<&str> {
    urls.iter().map(reqwest::Url::as_str).collect()
}

/// A store URL without its password.
fn redacted(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod http_tools;
