//! `faregate check` on a tool file of kind http with several mistakes lists every one of them
//! in one run, whichever part the others are in.

use super::*;

const TOOL: &str = r#"name = "flight_position"
kind = "http"
title = "Live flight status"
description = "Live status of one flight by its ident."
access = "read"
providers = ["flights_api"]
content = "{{ ident }}: {{ status }}."

[input_schema]
type = "object"
required = ["ident"]
additionalProperties = false

[input_schema.properties.ident]
type = "string"

[request]
method = "GET"
path = "/flights/{ident}"

[result]
keep = { ident = "$.ident", status = "$.status" }

[fallback]
interactive = "flight_position.unavailable.md"
"#;

/// What `faregate check` says of the configuration with `tool` as `tools/flight_position.toml`
/// (served by the http provider `flights_api`), or "" when it passes.
fn check(tool: &str) -> String {
    let main = MapFiles::defaults()
        .0
        .get(Path::new("/cfg/faregate.toml"))
        .cloned()
        .unwrap_or_default();
    MapFiles::defaults()
        .put(
            "faregate.toml",
            &format!(
                "{main}\n[providers.flights_api]\nkind = \"http\"\nbase_url = \"http://127.0.0.1:9\"\n"
            ),
        )
        .put("tools/flight_position.toml", tool)
        .put("prompts/flight_position.unavailable.md", "Unavailable.")
        .load()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

fn assert_says(text: &str, says: &[&str]) {
    for said in says {
        assert!(text.contains(said), "missing {said:?} in:\n{text}");
    }
}

#[test]
fn every_problem_of_an_http_tool_file_is_listed_at_once() {
    assert_eq!(check(TOOL), "", "the file as written passes");

    let text = check(
        &TOOL
            .replace("{{ status }}.", "{{ status }.")
            .replace("[\"flights_api\"]", "[\"duffel\"]"),
    );
    assert_says(
        &text,
        &[
            "flight_position.toml: content: not a valid template",
            "flight_position.toml: providers[0]: provider \"duffel\" is of kind duffel",
        ],
    );

    let text = check(
        &TOOL
            .replace("method = \"GET\"", "method = \"TRACE\"")
            .replace("type = \"object\"", "type = \"array\"")
            .replace("path = \"/flights/{ident}\"", "path = \"flights/{ident}\""),
    );
    assert_says(
        &text,
        &[
            "flight_position.toml: request.method: \"TRACE\" is not a method",
            "flight_position.toml: input_schema.type: must be \"object\"",
            "flight_position.toml: request.path: \"flights/{ident}\" must start with \"/\"",
        ],
    );

    // A path that does not parse still has its parameters checked.
    let text = check(&TOOL.replace(
        "path = \"/flights/{ident}\"",
        "path = \"/flights by town/{town}\"",
    ));
    assert_says(
        &text,
        &[
            "flight_position.toml: request.path: \"/flights by town/{town}\"",
            "flight_position.toml: request.path: the path parameter {town} is not an argument",
        ],
    );

    // Without a readable input schema, the arguments the request names are not called unknown.
    let schema = "[input_schema]\ntype = \"object\"\nrequired = [\"ident\"]\nadditionalProperties = false\n\n[input_schema.properties.ident]\ntype = \"string\"\n";
    assert!(TOOL.contains(schema));
    let text = check(&TOOL.replace(schema, "").replace(
        "access = \"read\"",
        "access = \"read\"\ninput_schema = \"object\"",
    ));
    assert_says(
        &text,
        &["flight_position.toml: input_schema: expected a table"],
    );
    assert!(!text.contains("request.path"), "{text}");
}

/// A tool with no providers is told which of faregate.toml's providers can serve it (an http
/// one for a tool from configuration, not `duffel`), and a tool configured twice names both
/// files.
#[test]
fn the_providers_to_name_and_a_tool_configured_twice_are_told_with_what_fits() {
    let text = check(&TOOL.replace("[\"flights_api\"]", "[]"));
    // The embedded configuration declares http providers of its own beside flights_api.
    assert_says(
        &text,
        &[
            "providers: name at least one provider, for example `providers = [\"",
            "(those faregate.toml declares that can serve it: ",
            "flights_api",
        ],
    );
    assert!(!text.contains("duffel"), "{text}");

    let main = MapFiles::defaults()
        .0
        .get(Path::new("/cfg/faregate.toml"))
        .cloned()
        .unwrap_or_default();
    let text = MapFiles::defaults()
        .put(
            "faregate.toml",
            &format!(
                "{main}\n[providers.flights_api]\nkind = \"http\"\nbase_url = \"http://127.0.0.1:9\"\n"
            ),
        )
        .put("tools/flight_position.toml", TOOL)
        .put("tools/zz_again.toml", TOOL)
        .put("prompts/flight_position.unavailable.md", "Unavailable.")
        .load()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert_says(
        &text,
        &[
            "zz_again.toml: name: tool \"flight_position\" is configured twice (also in /cfg/tools/flight_position.toml)",
        ],
    );
}
