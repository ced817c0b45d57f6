//! What a reload applies and what it leaves for a restart, named key by key.

use super::*;
use crate::config::{EMBEDDED_CONFIG, EmbeddedFiles, load};

/// The shipped configuration, as `faregate demo` runs it.
fn defaults() -> Config {
    let path = std::path::Path::new(EMBEDDED_CONFIG);
    match load(&EmbeddedFiles, path, &crate::tools::names()) {
        Ok((config, _)) => config,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn reloadable_settings_are_taken_and_nothing_needs_a_restart() {
    let running = defaults();
    let mut read = running.clone();
    read.tools.retain(|t| t.name != "book_hotel");
    read.tools[0].timeout = Duration::from_secs(3);
    read.prompts
        .insert("agent-guidance.md".into(), "new".into());
    if let Some(p) = read.providers.values_mut().next() {
        p.timeout = Some(Duration::from_secs(2));
    }
    let settled = settle(&running, &running, read.clone(), running.request_timeout());
    assert!(
        settled.needs_restart.is_empty(),
        "{:?}",
        settled.needs_restart
    );
    assert_eq!(settled.config.tools, read.tools);
    assert_eq!(settled.config.prompts, read.prompts);
    let timeouts = |c: &Config| -> Vec<_> { c.providers.values().map(|p| p.timeout).collect() };
    assert_eq!(timeouts(&settled.config), timeouts(&read));
}

#[test]
fn every_setting_a_reload_cannot_apply_is_named_and_kept() {
    let running = defaults();
    let mut read = running.clone();
    read.server.listen = "0.0.0.0:9090".parse().unwrap_or(running.server.listen);
    read.store.url = "postgres://app:hunter2@db/faregate".into();
    read.mcp.legacy_sessions = !running.mcp.legacy_sessions;
    read.jobs.workers += 1;
    read.telemetry.json_logs = !running.telemetry.json_logs;
    read.limits.client_rate = None;
    if let Some(p) = read.providers.get_mut("duffel") {
        p.connect_timeout += Duration::from_secs(1);
        p.http2_prior_knowledge = !p.http2_prior_knowledge;
    }
    read.providers.remove("amadeus");
    let settled = settle(&running, &running, read, running.request_timeout());
    let named: Vec<&str> = settled
        .needs_restart
        .iter()
        .map(|s| s.split(':').next().unwrap_or(""))
        .collect();
    assert_eq!(
        named,
        [
            "[server] listen",
            "[store] url",
            "[mcp] legacy_sessions",
            "[limits] client_rate (for keys without a [[clients]] entry; a client's own limits reload)",
            "[defaults.jobs] workers",
            "[telemetry] log_format",
            "[providers.amadeus]",
            "[providers.duffel] connect_timeout",
            "[providers.duffel] http2_prior_knowledge",
        ],
        "{:#?}",
        settled.needs_restart
    );
    assert!(
        settled
            .needs_restart
            .iter()
            .all(|s| s.ends_with("needs a restart")),
        "{:?}",
        settled.needs_restart
    );
    assert!(
        !settled.needs_restart.concat().contains("hunter2"),
        "no password in the answer"
    );
    assert!(
        settled.needs_restart.contains(
            &"[telemetry] log_format: \"text\" in force, \"json\" read; needs a restart"
                .to_string()
        ),
        "in the file's words, not a struct's: {:#?}",
        settled.needs_restart
    );
    let c = &settled.config;
    assert_eq!(c.server.listen, running.server.listen);
    assert_eq!(c.store.url, running.store.url);
    assert_eq!(c.mcp, running.mcp);
    assert_eq!(c.jobs, running.jobs);
    assert!(
        c.providers.contains_key("amadeus"),
        "the running provider stays"
    );
}

#[test]
fn a_booking_deadline_the_settle_in_force_cannot_cover_keeps_the_running_tool() {
    let running = defaults();
    let mut read = running.clone();
    read.bookings.settle = Duration::from_secs(600);
    let book = |c: &Config| {
        c.tool("book_flight")
            .unwrap_or_else(|| panic!("book_flight"))
            .deadline
    };
    let i = read
        .tools
        .iter()
        .position(|t| t.name == "book_flight")
        .unwrap_or_else(|| panic!("book_flight"));
    read.tools[i].deadline = Duration::from_secs(300);
    read.tools[i].description = "changed".into();
    let settled = settle(&running, &running, read, Duration::from_secs(3600));
    assert_eq!(
        book(&settled.config),
        book(&running),
        "the running deadline"
    );
    assert_eq!(
        settled
            .config
            .tool("book_flight")
            .map(|t| t.description.as_str()),
        running.tool("book_flight").map(|t| t.description.as_str()),
        "the whole running tool stays"
    );
    assert_eq!(settled.config.bookings.settle, running.bookings.settle);
    let said = settled.needs_restart.join("\n");
    assert!(
        said.contains("the deadline of book_flight (5m) needs [bookings] settle of at least 5m 30s, and the settle in force (2m) changes only with a restart: the running tool stays"),
        "{said}"
    );
    assert!(said.contains("[bookings] settle: 120s in force"), "{said}");
}

#[test]
fn a_longer_deadline_that_moves_the_request_timeout_needs_a_restart() {
    let running = defaults();
    let mut read = running.clone();
    read.tools[0].deadline = running.longest_deadline() + Duration::from_secs(10);
    let in_force = running.request_timeout();
    let named = |settled: &Settled| {
        settled
            .needs_restart
            .iter()
            .any(|s| s.starts_with("[server] request_timeout"))
    };
    let settled = settle(&running, &running, read.clone(), in_force);
    assert!(named(&settled), "{:?}", settled.needs_restart);
    // Reloaded again, the timeout in force is still the one resolved at start.
    let again = settle(&settled.config, &running, read, in_force);
    assert!(named(&again), "{:?}", again.needs_restart);
}

/// An OAuth2 provider's token_url or scope changed by a reload is named in words, key by key,
/// without the values (a probe saw `HttpAuth::OAuth2 { token_url: Url { … } … }` printed whole
/// before "needs a restart"); a changed kind or auth says the words of the file.
#[test]
fn a_providers_changed_credential_settings_are_named_key_by_key_without_values() {
    use crate::config::{HttpAuth, ProviderKind};
    let oauth2 = |token_url: &str, scope: Option<&str>, secret_env: &str| ProviderKind::Http {
        auth: HttpAuth::OAuth2 {
            token_url: reqwest::Url::parse(token_url).unwrap_or_else(|e| panic!("{e}")),
            client_id_env: "FLIGHTS_CLIENT_ID".into(),
            client_secret_env: secret_env.into(),
            scope: scope.map(str::to_string),
        },
    };
    let with = |kind: ProviderKind| {
        let mut c = defaults();
        if let Some(p) = c.providers.get_mut("hotel_content") {
            p.kind = kind;
        }
        c
    };
    let running = with(oauth2(
        "https://auth.example.com/oauth/token",
        Some("flights:read"),
        "FLIGHTS_CLIENT_SECRET",
    ));
    let read = with(oauth2(
        "https://login.example.com/oauth/token",
        Some("flights:write"),
        "FLIGHTS_CLIENT_SECRET",
    ));
    let settled = settle(&running, &running, read, running.request_timeout());
    assert_eq!(
        settled.needs_restart,
        [
            "[providers.hotel_content] token_url: changed; the running value stays (a credential setting: its values are not shown); needs a restart",
            "[providers.hotel_content] scope: changed; the running value stays (a credential setting: its values are not shown); needs a restart",
        ],
    );
    let all = settled.needs_restart.concat();
    for never in ["example.com", "flights:", "OAuth2", "Url", "{"] {
        assert!(!all.contains(never), "{never} in {all}");
    }
    assert_eq!(
        settled.config.providers["hotel_content"].kind, running.providers["hotel_content"].kind,
        "the running settings stay"
    );

    // A scope removed, and a secret's variable renamed.
    let read = with(oauth2(
        "https://auth.example.com/oauth/token",
        None,
        "FLIGHTS_SECRET",
    ));
    let named: Vec<String> = settle(&running, &running, read, running.request_timeout())
        .needs_restart
        .iter()
        .map(|s| s.split(':').next().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        named,
        [
            "[providers.hotel_content] client_secret_env",
            "[providers.hotel_content] scope"
        ]
    );

    // Another auth, another kind: the file's words.
    let bearer = ProviderKind::Http {
        auth: HttpAuth::Bearer {
            token_env: "HOTEL_CONTENT_TOKEN".into(),
        },
    };
    let settled = settle(&running, &running, with(bearer), running.request_timeout());
    assert_eq!(
        settled.needs_restart,
        ["[providers.hotel_content] auth: \"oauth2\" in force, \"bearer\" read; needs a restart"]
    );
    let duffel = ProviderKind::Duffel {
        token_env: "DUFFEL_ACCESS_TOKEN".into(),
    };
    let settled = settle(&running, &running, with(duffel), running.request_timeout());
    assert_eq!(
        settled.needs_restart,
        ["[providers.hotel_content] kind: \"http\" in force, \"duffel\" read; needs a restart"]
    );
}
