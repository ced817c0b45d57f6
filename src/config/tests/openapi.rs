//! `faregate import-openapi`: what it writes passes the check `faregate check` runs (the
//! configuration's load), whatever names and OpenAPI 3.0 idioms the document uses.

use serde_json::{Value, json};

use super::*;

/// A loyalty API whose operation has a hyphenated path parameter, an OpenAPI 3.0 boolean
/// `exclusiveMinimum`, two response fields that read alike once made names, a nullable `$ref`
/// and an enum that allows `null`.
fn loyalty_openapi() -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "Loyalty", "version": "1"},
        "paths": {"/loyalty/{member-id}": {"get": {
            "operationId": "getMember",
            "summary": "A loyalty member's seats and tier",
            "parameters": [
                {"name": "member-id", "in": "path", "required": true, "schema": {"type": "string"}},
                {"name": "min-seats", "in": "query",
                 "schema": {"type": "integer", "minimum": 0, "exclusiveMinimum": true, "maximum": 9, "exclusiveMaximum": false}}
            ],
            "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {
                "type": "object", "required": ["seatCount"],
                "properties": {
                    "seatCount": {"type": "integer"},
                    "seat_count": {"type": "integer"},
                    "tier": {"type": "string", "enum": ["gold", "silver", null]},
                    "links": {"$ref": "#/components/schemas/Links"}
                }
            }}}}}
        }}},
        "components": {"schemas": {"Links": {"type": "object", "nullable": true, "properties": {"next": {"type": "string"}}}}}
    })
}

#[test]
fn imported_tool_files_pass_check_and_keep_every_field() {
    let imported = crate::config::import_openapi(
        &loyalty_openapi(),
        &["getMember".to_string()],
        "loyalty_api",
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    let [tool] = imported.as_slice() else {
        panic!("{imported:?}")
    };
    let main = MapFiles::defaults()
        .0
        .get(Path::new("/cfg/faregate.toml"))
        .cloned()
        .unwrap_or_default();
    let config = MapFiles::defaults()
        .put(
            "faregate.toml",
            &format!("{main}\n[providers.loyalty_api]\nkind = \"http\"\nbase_url = \"http://127.0.0.1:9\"\n"),
        )
        .put(&format!("tools/{}.toml", tool.name), &tool.tool_file)
        .put(&format!("prompts/{}.unavailable.md", tool.name), &tool.fallback)
        .load()
        .unwrap_or_else(|e| panic!("{e}\n{}", tool.tool_file));

    let http = config
        .tool("get_member")
        .and_then(|t| t.http.as_ref())
        .unwrap_or_else(|| panic!("{}", tool.tool_file));
    // The URL's parameter is filled from the renamed argument; the query keeps its own name.
    let sent = http
        .operation
        .request(&json!({"member_id": "M 1", "min_seats": 2}), None)
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(sent.path, "/loyalty/M%201");
    assert_eq!(sent.query, vec![("min-seats".to_string(), "2".to_string())]);
    let input = &http.definition.input_schema;
    assert_eq!(input["required"], json!(["member_id"]), "{input:#}");
    let bounds = &input["properties"]["min_seats"];
    assert_eq!(bounds["exclusiveMinimum"], 0, "{bounds:#}");
    assert_eq!(bounds.get("minimum"), None, "{bounds:#}");
    assert_eq!(bounds.get("exclusiveMaximum"), None, "{bounds:#}");
    assert_eq!(bounds["maximum"], 9, "{bounds:#}");

    // Both seat counts are kept, under names of their own, each required once.
    let output = &http.definition.output_schema;
    let mut required: Vec<&str> = output["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    required.sort_unstable();
    assert_eq!(
        required,
        ["links", "seat_count", "seat_count_2", "tier"],
        "{output:#}"
    );
    let kept = http
        .operation
        .keep_from(&json!({"seatCount": 3, "seat_count": 4, "tier": null, "links": null}))
        .unwrap_or_else(|e| panic!("{e:?}\n{}", tool.tool_file));
    assert_eq!(
        kept.data,
        json!({"seat_count": 3, "seat_count_2": 4, "tier": null, "links": null})
    );
    // A nullable $ref says null once, and the enum still allows it.
    assert_eq!(
        output["properties"]["links"]["anyOf"][1],
        json!({"type": "null"}),
        "{output:#}"
    );
    assert!(
        output["properties"]["links"]["anyOf"][0]
            .get("anyOf")
            .is_none(),
        "{output:#}"
    );
    assert!(kept_fits(
        http,
        json!({"seatCount": 1, "seat_count": 1, "tier": "gold", "links": {"next": "x"}})
    ),);
    assert!(!kept_fits(
        http,
        json!({"seatCount": 1, "seat_count": 1, "tier": "bronze", "links": null})
    ));
}

/// Whether the operation keeps `answer` (it fits the output schema).
fn kept_fits(http: &HttpTool, answer: Value) -> bool {
    http.operation.keep_from(&answer).is_ok()
}
