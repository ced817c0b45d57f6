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

    let added = settle(&without, with.clone(), without.request_timeout());
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
    let changed = settle(&with, moved, with.request_timeout());
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
    let policy = settle(&with, slower.clone(), with.request_timeout());
    assert!(
        policy.needs_restart.is_empty(),
        "{:?}",
        policy.needs_restart
    );
    assert_eq!(policy.config.tools, slower.tools, "its policy reloads");
}
