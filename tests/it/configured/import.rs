//! `faregate import-openapi`: tool files written from an OpenAPI document pass `faregate check` and serve.

use super::*;

/// A small OpenAPI 3.0 document in the shape of a public flight-tracking API.
fn flight_tracker_openapi() -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "Flight tracker", "version": "4.17"},
        "servers": [{"url": "https://aeroapi.example.com/aeroapi"}],
        "paths": {
            "/flights/{ident}": {
                "parameters": [{"$ref": "#/components/parameters/ident"}],
                "get": {
                    "operationId": "getFlightsByIdent",
                    "summary": "Get information for a flight",
                    "description": "Returns the flights known for an ident, from about 10 days ago to 2 days ahead.",
                    "parameters": [
                        {"name": "max_pages", "in": "query", "required": false,
                         "schema": {"type": "integer", "minimum": 1, "default": 1}},
                        {"name": "x-apikey", "in": "header", "required": false, "schema": {"type": "string"}}
                    ],
                    "responses": {
                        "200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/FlightsResponse"}}}},
                        "400": {"$ref": "#/components/responses/Error"}
                    }
                }
            },
            "/alerts": {
                "post": {
                    "operationId": "createAlert",
                    "summary": "Configure a flight alert",
                    "requestBody": {"required": true, "content": {"application/json": {"schema": {
                        "type": "object", "required": ["ident"],
                        "properties": {
                            "ident": {"type": "string", "description": "The flight to watch"},
                            "events": {"type": "object", "properties": {"arrival": {"type": "boolean"}, "departure": {"type": "boolean"}}},
                            "target_url": {"type": "string", "nullable": true}
                        }
                    }}}},
                    "responses": {"201": {"description": "Created", "content": {"application/json": {"schema": {
                        "type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}}
                    }}}}}
                }
            }
        },
        "components": {
            "parameters": {"ident": {"name": "ident", "in": "path", "required": true, "description": "The ident or fa_flight_id of a flight",
                "schema": {"type": "string"}}},
            "responses": {"Error": {"description": "Bad request", "content": {"application/json": {"schema": {"type": "object"}}}}},
            "schemas": {
                "FlightsResponse": {"type": "object", "required": ["flights"], "properties": {
                    "flights": {"type": "array", "items": {"$ref": "#/components/schemas/Flight"}},
                    "links": {"type": "object", "nullable": true, "properties": {"next": {"type": "string"}}},
                    "num_pages": {"type": "integer"}
                }},
                "Flight": {"type": "object", "properties": {
                    "ident": {"type": "string"},
                    "status": {"type": "string"},
                    "gate_origin": {"type": "string", "nullable": true}
                }}
            }
        }
    })
}

fn faregate(args: &[&str], dir: &Path) -> (bool, String) {
    let (status, text) = run_to_end(
        Command::new(env!("CARGO_BIN_EXE_faregate"))
            .args(args)
            .current_dir(dir),
    );
    (status.success(), text)
}

/// The gateway on the configuration in `dir`, as `faregate serve` would load it.
async fn serve(dir: &Path) -> TestGateway {
    let (config, _) = faregate::config::load(
        &faregate::config::DiskFiles,
        &dir.join("faregate.toml"),
        &faregate::tools::names(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    TestGateway::start(config, &key_env()).await
}

#[tokio::test]
async fn an_openapi_import_round_trips_through_check_and_serves() {
    let upstream = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/aeroapi/flights/BAW117"))
        .and(header("x-apikey", API_KEY))
        .respond_with(ResponseTemplate::new(200).set_body_json(flight()))
        .mount(&upstream)
        .await;
    // A configuration with the provider and no tools yet.
    let dir = config_dir(&format!("{}/aeroapi", upstream.uri()), KEY_AUTH, TOOL);
    std::fs::remove_file(dir.path().join("tools/flight_position.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let document = dir.path().join("aeroapi.json");
    std::fs::write(&document, flight_tracker_openapi().to_string())
        .unwrap_or_else(|e| panic!("{e}"));
    let import = |ops: &[&str]| {
        let mut args = vec![
            "import-openapi",
            "aeroapi.json",
            "--provider",
            "flights_api",
        ];
        for op in ops {
            args.extend(["--operation", op]);
        }
        faregate(&args, dir.path())
    };

    // A document cut short is told as broken JSON, not as YAML to convert.
    let cut = dir.path().join("cut.json");
    let whole = flight_tracker_openapi().to_string();
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap_or_else(|e| panic!("{e}"));
    let (ok, text) = faregate(
        &[
            "import-openapi",
            "cut.json",
            "--provider",
            "flights_api",
            "--operation",
            "createAlert",
        ],
        dir.path(),
    );
    assert!(!ok && text.contains("cut.json is not valid JSON"), "{text}");
    assert!(!text.contains("YAML"), "{text}");

    let (ok, text) = import(&["getFlightsByIdent", "listAirports"]);
    assert!(!ok, "{text}");
    assert!(text.contains("no operation \"listAirports\""), "{text}");
    assert!(text.contains("createAlert, getFlightsByIdent"), "{text}");

    // An operation named twice is written once.
    let (ok, text) = import(&["getFlightsByIdent", "createAlert", "createAlert"]);
    assert!(ok, "{text}");
    assert!(text.contains("tools/get_flights_by_ident.toml"), "{text}");
    assert_eq!(text.matches("tools/create_alert.toml").count(), 1, "{text}");
    let (ok, text) = faregate(&["check", "--config", "faregate.toml"], dir.path());
    assert!(ok, "{text}");
    // Importing again never replaces the reviewed files.
    let (ok, text) = import(&["createAlert"]);
    assert!(!ok && text.contains("never replaced"), "{text}");
    // Nor writes one of them when another would replace a file.
    let first = dir.path().join("tools/get_flights_by_ident.toml");
    std::fs::remove_file(&first).unwrap_or_else(|e| panic!("{e}"));
    let (ok, text) = import(&["getFlightsByIdent", "createAlert"]);
    assert!(!ok && text.contains("nothing was written"), "{text}");
    assert!(!first.exists(), "{text}");
    let (ok, text) = import(&["getFlightsByIdent"]);
    assert!(
        !ok && text.contains("get_flights_by_ident.unavailable.md"),
        "{text}"
    );
    std::fs::remove_file(
        dir.path()
            .join("prompts/get_flights_by_ident.unavailable.md"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (ok, text) = import(&["getFlightsByIdent"]);
    assert!(ok, "{text}");

    let written =
        std::fs::read_to_string(dir.path().join("tools/create_alert.toml")).unwrap_or_default();
    assert!(written.contains("access = \"write\""), "{written}");
    assert!(
        written.contains("header = \"Idempotency-Key\""),
        "{written}"
    );

    let gw = serve(dir.path()).await;
    let (status, answer) = post(
        &gw,
        "/v1/tools/get_flights_by_ident/call",
        json!({"arguments": {"ident": "BAW117"}}),
    )
    .await;
    assert_eq!(status, 200, "{answer:#}");
    assert_eq!(answer["status"], "ok", "{answer:#}");
    assert_eq!(
        answer["data"]["flights"][0]["gate_origin"], "A10",
        "{answer:#}"
    );
    assert_eq!(answer["data"]["num_pages"], 1, "{answer:#}");
}

/// A tool imported from Amadeus's own Hotel List document (trimmed to one operation, see the
/// fixture's description) asks for its hotels as the document says (`hotelIds` joined by
/// commas) and keeps an answer in Amadeus's media type that its document does not describe
/// exactly: its example's distance unit `KM` is missing from the schema's enum.
#[tokio::test]
async fn a_tool_imported_from_amadeus_hotel_list_serves_its_real_answers() {
    let upstream = MockServer::start().await;
    let answer = json!({
        "data": [{
            "chainCode": "AC", "iataCode": "PAR", "dupeId": 700140792, "name": "LE NOTRE DAME",
            "hotelId": "ACPAR419", "geoCode": {"latitude": 48.85306, "longitude": 2.34654},
            "address": {"countryCode": "FR"}, "distance": {"value": 0.5, "unit": "KM"}
        }],
        "meta": {"count": 1, "links": {"self": "http://test.api.amadeus.com/reference-data/locations/hotels/by-hotels?hotelIds=ACPAR419"}}
    });
    Mock::given(method("GET"))
        .and(path("/v1/reference-data/locations/hotels/by-hotels"))
        .and(wiremock::matchers::query_param(
            "hotelIds",
            "ACPAR419,RTPAR001",
        ))
        .and(header("x-apikey", API_KEY))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw(answer.to_string(), "application/vnd.amadeus+json"),
        )
        .mount(&upstream)
        .await;
    let dir = config_dir(&format!("{}/v1", upstream.uri()), KEY_AUTH, TOOL);
    std::fs::remove_file(dir.path().join("tools/flight_position.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/openapi/amadeus_hotel_list_v1.json"
        ),
        dir.path().join("hotel_list.json"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (ok, text) = faregate(
        &[
            "import-openapi",
            "hotel_list.json",
            "--operation",
            "get-shopping-hotels-by-hotels",
            "--provider",
            "flights_api",
        ],
        dir.path(),
    );
    assert!(ok, "{text}");
    let (ok, text) = faregate(&["check", "--config", "faregate.toml"], dir.path());
    assert!(ok, "{text}");

    let gw = serve(dir.path()).await;
    let (status, answer) = post(
        &gw,
        "/v1/tools/get_shopping_hotels_by_hotels/call",
        json!({"arguments": {"hotelIds": ["ACPAR419", "RTPAR001"]}}),
    )
    .await;
    assert_eq!(status, 200, "{answer:#}");
    assert_eq!(answer["status"], "ok", "{answer:#}");
    assert_eq!(
        answer["data"]["data"][0]["name"], "LE NOTRE DAME",
        "{answer:#}"
    );
    assert_eq!(
        answer["data"]["data"][0]["distance"]["unit"], "KM",
        "{answer:#}"
    );
}
