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
            "description": "Seats are counted per member id.",
            "parameters": [
                {"name": "member-id", "in": "path", "required": true, "schema": {"type": "string"}},
                {"name": "tier", "in": "query", "schema": {"$ref": "#/components/schemas/Tier"}},
                {"name": "min-seats", "in": "query",
                 "schema": {"type": "integer", "minimum": 0, "exclusiveMinimum": true, "maximum": 9, "exclusiveMaximum": false}}
            ],
            "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {
                "type": "object", "required": ["seatCount"],
                "properties": {
                    "seatCount": {"type": "integer", "description": "Seats held"},
                    "seat_count": {"type": "integer"},
                    "tier": {"type": "string", "enum": ["gold", "silver", null]},
                    "links": {"$ref": "#/components/schemas/Links"}
                }
            }}}}}
        }}},
        "components": {"schemas": {
            "Links": {"type": "object", "nullable": true, "properties": {"next": {"type": "string"}}},
            "Tier": {"type": "string", "nullable": true, "enum": ["gold", "silver", null]}
        }}
    })
}

/// The configuration with the tools imported from `doc`'s `operations` (served by the http
/// provider `api`), loaded as `faregate check` loads it; and the files written.
fn imported(doc: &Value, operations: &[&str]) -> (Config, Vec<crate::config::ImportedTool>) {
    let operations: Vec<String> = operations.iter().map(|o| o.to_string()).collect();
    let tools =
        crate::config::import_openapi(doc, &operations, "api").unwrap_or_else(|e| panic!("{e:?}"));
    let main = MapFiles::defaults()
        .0
        .get(Path::new("/cfg/faregate.toml"))
        .cloned()
        .unwrap_or_default();
    let mut files = MapFiles::defaults().put(
        "faregate.toml",
        &format!("{main}\n[providers.api]\nkind = \"http\"\nbase_url = \"http://127.0.0.1:9\"\n"),
    );
    for tool in &tools {
        files = files
            .put(&format!("tools/{}.toml", tool.name), &tool.tool_file)
            .put(
                &format!("prompts/{}.unavailable.md", tool.name),
                &tool.fallback,
            );
    }
    let written: Vec<&str> = tools.iter().map(|t| t.tool_file.as_str()).collect();
    let config = files
        .load()
        .unwrap_or_else(|e| panic!("{e}\n{}", written.join("\n")));
    (config, tools)
}

/// The http half of the configured tool `name`.
fn http<'a>(config: &'a Config, name: &str) -> &'a HttpTool {
    config
        .tool(name)
        .and_then(|t| t.http.as_ref())
        .unwrap_or_else(|| panic!("no http tool {name}"))
}

#[test]
fn imported_tool_files_pass_check_and_keep_every_field() {
    let (config, tools) = imported(&loyalty_openapi(), &["getMember"]);
    let [tool] = tools.as_slice() else {
        panic!("{tools:?}")
    };
    let http = http(&config, "get_member");
    // The summary, a title without its full stop, is ended before the description.
    let description = config.tool("get_member").map(|t| t.description.as_str());
    assert_eq!(
        description,
        Some("A loyalty member's seats and tier. Seats are counted per member id.")
    );
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
    // A nullable $ref says null once, and its enum still allows it.
    assert_eq!(
        input["properties"]["tier"],
        json!({"anyOf": [{"type": "string", "enum": ["gold", "silver"]}, {"type": "null"}]}),
        "{input:#}"
    );
    // The output schema says what the document describes, never what it could be wrong about:
    // an answer outside the document's types and enums is kept.
    assert_eq!(
        output["properties"]["seat_count"],
        json!({"description": "Seats held"}),
        "{output:#}"
    );
    for answer in [
        json!({"seatCount": 1, "seat_count": 1, "tier": "gold", "links": {"next": "x"}}),
        json!({"seatCount": "1", "seat_count": null, "tier": "bronze", "links": ["x"]}),
    ] {
        assert!(kept_fits(http, answer.clone()), "{answer}");
    }
}

/// Whether the operation keeps `answer` (it fits the output schema).
fn kept_fits(http: &HttpTool, answer: Value) -> bool {
    http.operation.keep_from(&answer).is_ok()
}

/// Responses and bodies in a JSON media type other than bare `application/json`: a vendor's
/// `+json` type, and `application/json` with a charset, preferred over another `+json` type.
fn vendor_json_openapi() -> Value {
    let object = |field: &str| json!({"type": "object", "properties": {field: {"type": "string"}}});
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Vendor", "version": "1"},
        "paths": {
            "/hotels": {"get": {
                "operationId": "listHotels",
                "summary": "Hotels of a city, by city code",
                "responses": {"200": {"description": "OK", "content": {
                    "application/vnd.amadeus+json": {"schema": object("data")}
                }}}
            }},
            "/offers": {"get": {
                "operationId": "listOffers",
                "summary": "Offers for a stay, cheapest first",
                "responses": {"200": {"description": "OK", "content": {
                    "application/problem+json": {"schema": object("problem")},
                    "application/json; charset=utf-8": {"schema": object("offers")}
                }}}
            }},
            "/orders": {"post": {
                "operationId": "createOrder",
                "summary": "Books a priced offer",
                "requestBody": {"content": {"application/vnd.amadeus+json": {"schema": object("offer")}}},
                "responses": {"201": {"description": "Created", "content": {
                    "application/vnd.amadeus+json": {"schema": object("id")}
                }}}
            }}
        }
    })
}

#[test]
fn any_json_media_type_is_imported_and_a_vendor_body_type_is_sent() {
    let (config, tools) = imported(
        &vendor_json_openapi(),
        &["listHotels", "listOffers", "createOrder"],
    );
    assert_eq!(tools.len(), 3);
    let kept: Vec<String> = ["list_hotels", "list_offers"]
        .iter()
        .map(|name| {
            let output = &http(&config, name).definition.output_schema;
            output["required"].to_string()
        })
        .collect();
    // Plain JSON (with its charset) wins over another +json type.
    assert_eq!(kept, [r#"["data"]"#, r#"["offers"]"#]);
    let sent = http(&config, "create_order")
        .operation
        .request(&json!({"offer": "o1"}), Some("k1"))
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        sent.content_type.as_deref(),
        Some("application/vnd.amadeus+json")
    );
    assert_eq!(sent.body, Some(json!({"offer": "o1"})));
}

/// Object answers without top-level `properties`: one made of `allOf` parts (one of them a
/// `$ref`, another itself an `allOf`), and a bare `{"type": "object"}`.
fn composed_openapi() -> Value {
    let answer = |schema: Value| json!({"200": {"description": "OK", "content": {"application/json": {"schema": schema}}}});
    json!({
        "openapi": "3.1.0",
        "info": {"title": "Hotels", "version": "1"},
        "paths": {
            "/hotels/{id}": {"get": {
                "operationId": "getHotel",
                "summary": "One hotel by its id",
                "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": answer(json!({"allOf": [
                    {"$ref": "#/components/schemas/Base"},
                    {"allOf": [{"type": "object", "required": ["stars"], "properties": {"stars": {"type": "integer"}}}]}
                ]}))
            }},
            "/rates": {"get": {
                "operationId": "getRates",
                "summary": "Exchange rates by currency",
                "responses": answer(json!({"type": "object"}))
            }},
            "/cities": {"get": {
                "operationId": "listCities",
                "summary": "Every city served",
                "responses": answer(json!({"type": "array", "items": {"type": "string"}}))
            }}
        },
        "components": {"schemas": {"Base": {"type": "object", "properties": {
            "name": {"type": "string"}, "city": {"type": "string"}
        }}}}
    })
}

#[test]
fn an_object_answer_keeps_its_keys_whatever_the_schema_says_of_them() {
    let (config, _) = imported(&composed_openapi(), &["getHotel", "getRates", "listCities"]);
    let kept = |tool: &str, answer: Value| {
        http(&config, tool)
            .operation
            .keep_from(&answer)
            .map(|k| k.data)
            .unwrap_or_else(|e| panic!("{tool}: {e:?}"))
    };
    assert_eq!(
        kept(
            "get_hotel",
            json!({"name": "Le Notre Dame", "city": "PAR", "stars": 3})
        ),
        json!({"name": "Le Notre Dame", "city": "PAR", "stars": 3})
    );
    assert_eq!(
        kept("get_rates", json!({"EUR": 1.0, "GBP": 0.85})),
        json!({"result": {"EUR": 1.0, "GBP": 0.85}})
    );
    assert_eq!(
        kept("list_cities", json!(["PAR", "LON"])),
        json!({"items": ["PAR", "LON"]})
    );
}

#[test]
fn a_list_query_parameter_goes_out_as_the_document_styles_it() {
    let list = json!({"type": "array", "items": {"type": "string"}});
    let doc = json!({
        "openapi": "3.0.0",
        "info": {"title": "Hotels", "version": "1"},
        "paths": {"/hotels": {"get": {
            "operationId": "listHotels",
            "summary": "Hotels by their ids",
            "parameters": [
                {"name": "hotelIds", "in": "query", "required": true, "style": "form", "explode": false, "schema": list},
                {"name": "chainCodes", "in": "query", "schema": list},
                {"name": "ratings", "in": "query", "style": "pipeDelimited", "explode": false, "schema": list},
                {"name": "cityCode", "in": "query", "explode": false, "schema": {"type": "string"}}
            ],
            "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {
                "type": "object", "properties": {"data": {"type": "array"}}
            }}}}}
        }}}
    });
    let (config, tools) = imported(&doc, &["listHotels"]);
    let sent = http(&config, "list_hotels")
        .operation
        .request(
            &json!({"hotelIds": ["ACPAR419", "RTPAR001"], "chainCodes": ["AC", "RT"], "ratings": ["4", "5"], "cityCode": "PAR"}),
            None,
        )
        .unwrap_or_else(|e| panic!("{e:?}\n{}", tools[0].tool_file));
    let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    assert_eq!(
        sent.query,
        pairs(&[
            ("chainCodes", "AC"),
            ("chainCodes", "RT"),
            ("cityCode", "PAR"),
            ("hotelIds", "ACPAR419,RTPAR001"),
            ("ratings", "4|5"),
        ]),
        "{}",
        tools[0].tool_file
    );
}

/// An object in the query (`style: deepObject`, or an object schema) would make a tool every
/// call of which is refused: the importer names the parameter instead of writing it.
#[test]
fn an_object_query_parameter_is_refused_by_name() {
    for style in [json!("deepObject"), json!("form")] {
        let doc = json!({
            "openapi": "3.0.0",
            "info": {"title": "Lounges", "version": "1"},
            "paths": {"/lounges": {"get": {
                "operationId": "listLounges",
                "parameters": [{"name": "filter", "in": "query", "style": style,
                    "schema": {"type": "object", "properties": {"airport": {"type": "string"}}}}],
                "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}}
            }}}
        });
        let refused = crate::config::import_openapi(&doc, &["listLounges".to_string()], "api");
        assert!(
            matches!(&refused, Err(e) if e[0].contains("listLounges: parameter filter: an object in the query")
                && e[0].contains("one parameter per field")),
            "{refused:?}"
        );
    }
}

/// A write confirmed by a `204` with no content is imported, and its answer is the write
/// carried out; a read's is refused, since a read keeps its result from JSON.
#[test]
fn a_write_answered_with_no_content_is_imported_as_carried_out() {
    let doc = json!({
        "openapi": "3.0.0",
        "info": {"title": "Orders", "version": "1"},
        "paths": {"/orders/{orderId}": {
            "delete": {
                "operationId": "cancelOrder",
                "summary": "Cancels a flight order",
                "parameters": [{"name": "orderId", "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": {"204": {"description": "No Content"}, "400": {"description": "Bad request"}}
            },
            "get": {
                "operationId": "pingOrder",
                "summary": "Whether an order exists",
                "parameters": [{"name": "orderId", "in": "path", "required": true, "schema": {"type": "string"}}],
                "responses": {"204": {"description": "It exists"}}
            }
        }}
    });
    let (config, _) = imported(&doc, &["cancelOrder"]);
    let answered = http(&config, "cancel_order").operation.read(
        204,
        crate::http_tool::Waits::default(),
        b"",
        std::time::SystemTime::UNIX_EPOCH,
    );
    assert!(
        matches!(
            answered,
            Ok(crate::http_tool::Answered::Done { status: 204, .. })
        ),
        "{answered:?}"
    );
    let refused = crate::config::import_openapi(&doc, &["pingOrder".to_string()], "api");
    assert!(
        matches!(&refused, Err(e) if e[0].contains("a read keeps its result from a JSON answer")),
        "{refused:?}"
    );
}

/// A document whose answer is `Level0`, each level an object whose `next` is the next level by
/// `$ref` (and `same` the last level again, used twice but never inside itself); the last
/// level's `next` is `last_next`.
fn nested_openapi(levels: usize, last_next: Value) -> Value {
    let mut schemas = serde_json::Map::new();
    for level in 0..levels {
        let next = if level + 1 == levels {
            last_next.clone()
        } else {
            json!({"$ref": format!("#/components/schemas/Level{}", level + 1)})
        };
        let same = json!({"$ref": format!("#/components/schemas/Level{}", levels - 1)});
        let properties = if level + 1 == levels {
            json!({"next": next})
        } else {
            json!({"next": next, "same": same})
        };
        schemas.insert(
            format!("Level{level}"),
            json!({"type": "object", "properties": properties}),
        );
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Deep", "version": "1"},
        "paths": {"/deep": {"get": {
            "operationId": "getDeep",
            "summary": "A deeply nested answer",
            "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {
                "$ref": "#/components/schemas/Level0"
            }}}}}
        }}},
        "components": {"schemas": schemas}
    })
}

/// What is not an OpenAPI 3.0 or 3.1 document is told as what it is; an operation named twice
/// is imported once, and two that become one tool name are an error naming the second.
#[test]
fn documents_and_operation_lists_that_cannot_be_imported_say_why() {
    let import = |doc: &Value, ids: &[&str]| {
        let ids: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
        crate::config::import_openapi(doc, &ids, "api")
    };
    for (doc, says) in [
        (json!([]), "not an OpenAPI document: one is a JSON object"),
        (json!({"info": {}}), "it has no \"openapi\" field"),
        (json!({"openapi": "4.0.0"}), "an OpenAPI \"4.0.0\" document"),
    ] {
        let refused = import(&doc, &["getDeep"]);
        assert!(
            matches!(&refused, Err(e) if e[0].contains(says) && !e[0].contains("Swagger 2.0")),
            "{doc}: {refused:?}"
        );
    }
    let deep = nested_openapi(1, json!({"type": "string"}));
    let once = import(&deep, &["getDeep", "getDeep"]).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(once.len(), 1);
    let mut alike = deep.clone();
    alike["paths"]["/deep2"] = json!({"get": {
        "operationId": "get_deep",
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}}
    }});
    let refused = import(&alike, &["getDeep", "get_deep"]);
    assert!(
        matches!(&refused, Err(e) if e[0].starts_with("get_deep: becomes the tool get_deep, as an operation named before it does")),
        "{refused:?}"
    );
}

#[test]
fn only_a_schema_inside_itself_is_called_recursive() {
    let import = |doc: &Value| crate::config::import_openapi(doc, &["getDeep".to_string()], "api");
    // Twenty levels by $ref, one schema used at two places: no cycle.
    let deep = nested_openapi(20, json!({"type": "string"}));
    assert!(import(&deep).is_ok(), "{:?}", import(&deep));
    // The last level's `next` is the first again: a cycle, named as one.
    let recursive = nested_openapi(3, json!({"$ref": "#/components/schemas/Level0"}));
    let refused = import(&recursive);
    assert!(
        matches!(&refused, Err(e) if e[0].contains("\"#/components/schemas/Level0\" is inside itself")),
        "{refused:?}"
    );
    // Deeper than any real document, without a cycle: said as such.
    let runaway = nested_openapi(80, json!({"type": "string"}));
    let refused = import(&runaway);
    assert!(
        matches!(&refused, Err(e) if e[0].contains("nest more than 64 levels deep")),
        "{refused:?}"
    );
}

#[test]
fn a_swagger_document_is_named_with_how_to_convert_it() {
    let doc =
        json!({"swagger": "2.0", "info": {"title": "Flight Offers", "version": "2"}, "paths": {}});
    let refused = crate::config::import_openapi(&doc, &["searchFlights".to_string()], "api");
    assert!(
        matches!(&refused, Err(e) if e[0].contains("a Swagger 2.0 document") && e[0].contains("swagger2openapi")),
        "{refused:?}"
    );
}

/// A 4xx answer the document describes with a message field gives the tool its `[classify]
/// message`, so the provider's reason reaches the model (Amadeus's `errors[0].detail`).
#[test]
fn a_refusal_says_the_providers_reason() {
    let doc = json!({
        "openapi": "3.0.0",
        "info": {"title": "Hotels", "version": "1"},
        "paths": {"/hotels": {"get": {
            "operationId": "listHotels",
            "summary": "Hotels by their ids",
            "parameters": [{"name": "hotelIds", "in": "query", "schema": {"type": "string"}}],
            "responses": {
                "200": {"description": "OK", "content": {"application/vnd.amadeus+json": {"schema": {
                    "type": "object", "properties": {"data": {"type": "array"}}
                }}}},
                "400": {"description": "Bad Request", "content": {"application/vnd.amadeus+json": {"schema": {
                    "$ref": "#/components/schemas/Error_400"
                }}}}
            }
        }}},
        "components": {"schemas": {"Error_400": {"type": "object", "properties": {"errors": {
            "type": "array", "items": {"type": "object", "properties": {
                "status": {"type": "integer"}, "code": {"type": "integer"},
                "title": {"type": "string"}, "detail": {"type": "string"}
            }}
        }}}}}
    });
    let (config, tools) = imported(&doc, &["listHotels"]);
    let refused = http(&config, "list_hotels").operation.read(
        400,
        crate::http_tool::Waits::default(),
        br#"{"errors": [{"status": 400, "code": 477, "title": "INVALID FORMAT", "detail": "invalid query parameter format"}]}"#,
        std::time::SystemTime::UNIX_EPOCH,
    );
    assert_eq!(
        refused,
        Err(crate::http_tool::Class::Rejected {
            message: "invalid query parameter format".into()
        }),
        "{}",
        tools[0].tool_file
    );
}

/// The generated `content` names a few scalar fields of the first items, never a whole object
/// (the kept fields go to the model as JSON beside it), and writes a text for answers outside
/// the document too.
#[test]
fn the_content_names_a_few_fields_per_item() {
    let doc: Value = serde_json::from_str(include_str!(
        "../../../tests/fixtures/openapi/amadeus_hotel_list_v1.json"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let (config, tools) = imported(&doc, &["get-shopping-hotels-by-hotels"]);
    let op = &http(&config, "get_shopping_hotels_by_hotels").operation;
    let hotel = json!({"chainCode": "AC", "iataCode": "PAR", "name": "LE NOTRE DAME", "hotelId": "ACPAR419",
        "geoCode": {"latitude": 48.85306, "longitude": 2.34654}, "address": {"countryCode": "FR"}});
    let text = |answer: Value| {
        op.keep_from(&answer)
            .map(|k| k.content)
            .unwrap_or_else(|e| panic!("{e:?}\n{}", tools[0].tool_file))
    };
    let said = text(json!({"data": [hotel], "meta": {"count": 1}}));
    assert!(said.contains("1 data, LE NOTRE DAME"), "{said}");
    assert!(!said.contains("latitude"), "{said}");
    // An object for the list is named too.
    let said = text(json!({"data": hotel, "meta": {"count": 1}}));
    assert!(said.contains("data LE NOTRE DAME"), "{said}");
    // Null, a number, strings: still a text.
    for data in [
        json!({"a": hotel}),
        json!(null),
        json!(3),
        json!(["x"]),
        json!([[1]]),
    ] {
        text(json!({"data": data, "meta": null}));
    }
}
