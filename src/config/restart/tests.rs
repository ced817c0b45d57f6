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
