//! Manifest snapshots (one per format, all catalog tools with the shipped descriptions) and
//! the strict-mode rules on small schemas.

use std::path::Path;

use serde_json::{Value, json};

use super::*;
use crate::config::{EMBEDDED_CONFIG, EmbeddedFiles, load};

/// Every catalog tool with the description the shipped configuration gives it.
fn shipped_manifest(format: Format) -> Value {
    let (config, _) = load(
        &EmbeddedFiles,
        Path::new(EMBEDDED_CONFIG),
        &crate::tools::names(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let tools: Vec<ManifestTool<'_>> = crate::tools::CATALOG
        .iter()
        .filter_map(|spec| {
            let c = config.tool(spec.name)?;
            Some(ManifestTool { spec, config: c })
        })
        .collect();
    let watch_tools: Vec<&WatchTool> = crate::agents::watch_tools::TOOLS.iter().collect();
    render(format, &tools, &watch_tools)
}

/// The one helper every manifest snapshot goes through.
#[track_caller]
fn check_manifest(format: Format, name: &str) {
    let manifest = shipped_manifest(format);
    insta::assert_json_snapshot!(name, manifest);
}

#[test]
fn openai_manifest() {
    check_manifest(Format::OpenAi, "openai");
}

#[test]
fn anthropic_manifest() {
    check_manifest(Format::Anthropic, "anthropic");
}

#[test]
fn gemini_manifest() {
    check_manifest(Format::Gemini, "gemini");
}

#[test]
fn mcp_manifest() {
    check_manifest(Format::Mcp, "mcp");
}

#[test]
fn every_format_lists_the_catalog_in_order() {
    let names = |v: &Value, path: &str| -> Vec<String> {
        v.pointer(path)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|t| {
                t.get("name")
                    .or_else(|| t.pointer("/function/name"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .collect()
    };
    let catalog: Vec<String> = crate::tools::names()
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(names(&shipped_manifest(Format::Native), "/tools"), catalog);
    // The watch tools come last, in every format a model reads.
    let mut expected = catalog.clone();
    expected.extend(["watch_create", "watch_list", "watch_delete"].map(String::from));
    for format in [Format::OpenAi, Format::Anthropic, Format::Mcp] {
        assert_eq!(
            names(&shipped_manifest(format), "/tools"),
            expected,
            "{format:?}"
        );
    }
    assert_eq!(
        names(
            &shipped_manifest(Format::Gemini),
            "/tools/0/functionDeclarations"
        ),
        expected
    );
}

#[test]
fn mcp_annotations_follow_the_catalog() {
    let m = shipped_manifest(Format::Mcp);
    let tool = |name: &str| {
        m["tools"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == name))
            .cloned()
            .unwrap_or_default()
    };
    let search = tool("search_flights");
    assert_eq!(
        search["annotations"],
        json!({"title": "Search flights", "readOnlyHint": true, "destructiveHint": false,
               "idempotentHint": true, "openWorldHint": true})
    );
    let book = tool("book_flight");
    assert_eq!(book["annotations"]["readOnlyHint"], false);
    assert_eq!(book["annotations"]["destructiveHint"], true);
    assert_eq!(book["annotations"]["idempotentHint"], false);
    assert_eq!(book["inputSchema"]["type"], "object");
    assert_eq!(book["outputSchema"]["type"], "object");
    assert!(book["inputSchema"].get("title").is_none());
    let create = tool("watch_create");
    assert_eq!(
        create["annotations"],
        json!({"title": "Watch a fare or a flight", "readOnlyHint": false,
               "destructiveHint": false, "idempotentHint": false, "openWorldHint": true})
    );
    assert!(
        create.get("outputSchema").is_none(),
        "a watch tool answers text"
    );
    assert_eq!(tool("watch_delete")["annotations"]["destructiveHint"], true);
    assert_eq!(tool("watch_list")["annotations"]["readOnlyHint"], true);
}

#[test]
fn strict_mode_requires_everything_and_makes_optionals_nullable() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Args",
        "type": "object",
        "properties": {
            "origin": {"type": "string", "pattern": "^[A-Z]{3}$", "minLength": 3},
            "adults": {"type": "integer", "format": "uint8", "minimum": 1, "default": 1},
            "return_date": {"type": ["string", "null"], "format": "date", "default": null},
            "cabin": {"anyOf": [
                {"description": "Cabins.", "oneOf": [
                    {"const": "economy", "type": "string", "description": "Economy."},
                    {"const": "first", "type": "string", "description": "First."}]},
                {"type": "null"}], "description": "Cabin class."},
            "gender": {"description": "m or f", "oneOf": [
                {"const": "m", "type": "string"}, {"const": "f", "type": "string"}]},
            "travellers": {"type": "array", "items": {
                "type": "object", "additionalProperties": false,
                "properties": {"name": {"type": "string", "maxLength": 64},
                               "email": {"type": "string", "format": "idn-email"}},
                "required": ["name"]}}
        },
        "required": ["origin", "gender"],
        "additionalProperties": false
    });
    let strict = openai_strict(&schema);
    assert_eq!(
        strict,
        json!({
            "type": "object",
            "properties": {
                "adults": {"type": ["integer", "null"], "minimum": 1},
                "cabin": {"description": "Cabin class.", "type": ["string", "null"],
                          "enum": ["economy", "first", null]},
                "gender": {"description": "m or f", "type": "string", "enum": ["m", "f"]},
                "origin": {"type": "string", "pattern": "^[A-Z]{3}$"},
                "return_date": {"type": ["string", "null"], "format": "date"},
                "travellers": {"type": ["array", "null"], "items": {
                    "type": "object",
                    "properties": {"email": {"type": ["string", "null"]},
                                   "name": {"type": "string"}},
                    "required": ["email", "name"],
                    "additionalProperties": false}}
            },
            "required": ["adults", "cabin", "gender", "origin", "return_date", "travellers"],
            "additionalProperties": false
        })
    );
}

#[test]
fn nulls_for_optional_properties_read_as_absent() {
    let schema = crate::tools::spec("book_flight")
        .map(|s| s.input_schema())
        .unwrap_or_default();
    let args = json!({"offer_id": "off_1", "confirmed_total_amount": null,
                      "travellers": [{"given_name": "Ana", "email": null}]});
    assert_eq!(
        drop_optional_nulls(&schema, args),
        // `email` is required in a traveller: its null stays, and validation names it.
        json!({"offer_id": "off_1", "travellers": [{"given_name": "Ana", "email": null}]})
    );
    let flights = crate::tools::spec("search_flights")
        .map(|s| s.input_schema())
        .unwrap_or_default();
    assert_eq!(
        drop_optional_nulls(
            &flights,
            json!({"origin": "JFK", "adults": null, "child_ages": null})
        ),
        json!({"origin": "JFK"})
    );
}

#[test]
fn formats_parse_and_unknown_ones_are_listed() {
    assert_eq!(Format::parse("gemini"), Ok(Format::Gemini));
    let err = Format::parse("yaml").err().unwrap_or_default();
    assert!(
        err.contains("native, openai, anthropic, mcp, gemini"),
        "{err}"
    );
}
