//! Tools of kind http across a reload: what stays until a restart.

use std::time::Duration;

use super::*;
use crate::config::tests::MapFiles;

const PROVIDER: &str =
    "\n[providers.flights_api]\nkind = \"http\"\nbase_url = \"http://127.0.0.1:9\"\n";

/// A tool of kind http reading `path` from `flights_api`.
fn tool(path: &str) -> String {
    format!(
        r#"name = "flight_position"
kind = "http"
title = "Live flight status"
description = "Live status of one flight by its ident."
access = "read"
providers = ["flights_api"]
content = "{{{{ ident }}}}: {{{{ status }}}}."

[input_schema]
type = "object"
required = ["ident"]
additionalProperties = false

[input_schema.properties.ident]
type = "string"
maxLength = 64

[request]
method = "GET"
path = "{path}"

[result]
keep = {{ ident = "$.ident", status = "$.status" }}

[fallback]
interactive = "flight_position.unavailable.md"
"#
    )
}

fn config(tool_file: Option<&str>) -> Config {
    let files = MapFiles::defaults();
    let main = files
        .0
        .get(std::path::Path::new("/cfg/faregate.toml"))
        .cloned()
        .unwrap_or_default();
    let mut files = files
        .put("faregate.toml", &format!("{main}{PROVIDER}"))
        .put("prompts/flight_position.unavailable.md", "Unavailable.");
    if let Some(text) = tool_file {
        files = files.put("tools/flight_position.toml", text);
    }
    files.load().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_new_or_changed_http_tool_waits_for_a_restart_and_its_policy_does_not() {
    let without = config(None);
    let with = config(Some(&tool("/flights/{ident}")));
    assert!(
        with.tool("flight_position")
            .is_some_and(|t| t.http.is_some())
    );

    let added = settle(&without, &without, with.clone(), without.request_timeout());
    assert!(added.config.tool("flight_position").is_none(), "not served");
    assert!(
        added
            .needs_restart
            .iter()
            .any(|s| s.contains("a new tool of kind http")),
        "{:?}",
        added.needs_restart
    );

    let moved = config(Some(&tool("/v2/flights/{ident}")));
    let changed = settle(&with, &with, moved, with.request_timeout());
    assert_eq!(
        changed.config.tool("flight_position"),
        with.tool("flight_position"),
        "the running request stays"
    );
    assert_eq!(
        changed.needs_restart.len(),
        1,
        "{:?}",
        changed.needs_restart
    );

    let mut slower = with.clone();
    for t in &mut slower.tools {
        t.timeout = Duration::from_secs(3);
    }
    let policy = settle(&with, &with, slower.clone(), with.request_timeout());
    assert!(
        policy.needs_restart.is_empty(),
        "{:?}",
        policy.needs_restart
    );
    assert_eq!(policy.config.tools, slower.tools, "its policy reloads");
}

#[test]
fn an_http_tool_removed_and_put_back_as_it_was_at_start_is_served_again() {
    let with = config(Some(&tool("/flights/{ident}")));
    let removed = settle(&with, &with, config(None), with.request_timeout());
    assert!(removed.config.tool("flight_position").is_none());
    assert!(
        removed.needs_restart.is_empty(),
        "{:?}",
        removed.needs_restart
    );

    // Its provider's client was built with it at start and still holds it.
    let back = settle(&removed.config, &with, with.clone(), with.request_timeout());
    assert!(back.needs_restart.is_empty(), "{:?}", back.needs_restart);
    assert_eq!(
        back.config.tool("flight_position"),
        with.tool("flight_position"),
        "served again"
    );

    // Put back with another request, it is new to the client: it waits for a restart.
    let moved = config(Some(&tool("/v2/flights/{ident}")));
    let other = settle(&removed.config, &with, moved, with.request_timeout());
    assert!(other.config.tool("flight_position").is_none(), "not served");
    assert_eq!(other.needs_restart.len(), 1, "{:?}", other.needs_restart);
}

#[test]
fn a_changed_request_waits_for_a_restart_and_the_policy_beside_it_reloads() {
    let with = config(Some(&tool("/flights/{ident}")));
    let text = tool("/v2/flights/{ident}").replace(
        "description = \"Live status of one flight by its ident.\"",
        "description = \"Live status of one flight by its ident, now with its gate.\"\ntimeout = \"3s\"",
    );
    let read = config(Some(&text));
    let settled = settle(&with, &with, read, with.request_timeout());
    let (Some(now), Some(was)) = (
        settled.config.tool("flight_position"),
        with.tool("flight_position"),
    ) else {
        panic!("{:?}", settled.config.tools)
    };
    assert_eq!(now.http, was.http, "the running request stays");
    assert_eq!(now.timeout, Duration::from_secs(3), "the timeout reloads");
    assert!(now.description.ends_with("now with its gate."), "{now:?}");
    assert_eq!(
        settled.needs_restart.len(),
        1,
        "{:?}",
        settled.needs_restart
    );
    assert!(
        settled.needs_restart[0].contains("the request, result or definition"),
        "{:?}",
        settled.needs_restart
    );
}
