//! A binding of `get_flight_status` shaped like the shipped one: its request from the typed
//! arguments, its answer mapped into the tool's output, and what does not fit.

use std::time::SystemTime;

use reqwest::Url;
use serde_json::{Value, json};

use super::*;

/// A binding of get_flight_status shaped like the shipped one (AeroAPI's `GET /flights/{ident}`).
fn binding() -> Binding {
    let result = [
        (
            "flights[]",
            "$.flights[?@.scheduled_out >= '{departure_date}T00:00:00Z' && @.scheduled_out <= '{departure_date}T23:59:59Z']",
        ),
        ("flights[].carrier_code", "@.operator_iata"),
        ("flights[].flight_number", "@.flight_number"),
        ("flights[].scheduled_departure_date", "{departure_date}"),
        ("flights[].points[0].airport", "@.origin.code_iata"),
        ("flights[].points[0].departure.scheduled", "@.scheduled_out"),
        ("flights[].points[0].departure.gate", "@.gate_origin"),
        ("flights[].points[1].airport", "@.destination.code_iata"),
        ("flights[].points[1].arrival.scheduled", "@.scheduled_in"),
    ];
    let def = BindingDef {
        method: Method::Get,
        path: "/flights/{carrier_code}{flight_number}".into(),
        query: Vec::new(),
        result: result
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        rejected: vec![400, 404],
        message: Some("$.detail".into()),
        empty: Some("Not listed on that date.".into()),
    };
    let spec = crate::tools::get_flight_status::SPEC;
    Binding::compile(&def, &spec.input_schema(), &spec.output_schema())
        .unwrap_or_else(|p| panic!("{p:?}"))
}

fn asked() -> Value {
    json!({"carrier_code": "BA", "flight_number": "117", "departure_date": "2026-12-02"})
}

fn aeroapi(operator: Value) -> Vec<u8> {
    json!({"flights": [{
        "operator_iata": operator, "flight_number": "117",
        "origin": {"code_iata": "LHR"}, "destination": {"code_iata": "JFK"},
        "scheduled_out": "2026-12-02T09:00:00Z", "scheduled_in": "2026-12-02T17:00:00Z",
        "gate_origin": "B7"
    }]})
    .to_string()
    .into_bytes()
}

#[test]
fn a_binding_builds_its_request_from_the_typed_arguments_and_maps_into_the_tools_output() {
    let b = binding();
    let base = Url::parse("https://aeroapi.example.com/aeroapi").unwrap_or_else(|e| panic!("{e}"));
    let url = b
        .request(&asked())
        .unwrap_or_else(|e| panic!("{e:?}"))
        .url(&base);
    assert_eq!(
        url.as_str(),
        "https://aeroapi.example.com/aeroapi/flights/BA117"
    );
    let now = SystemTime::UNIX_EPOCH;
    let data = b
        .read(
            (200, Waits::default(), &aeroapi(json!("BA"))),
            now,
            &asked(),
        )
        .unwrap_or_else(|c| panic!("{c:?}"));
    let typed =
        crate::tools::output_from_json("get_flight_status", data).unwrap_or_else(|e| panic!("{e}"));
    let crate::tools::ToolOutput::GetFlightStatus(out) = &typed else {
        panic!("{typed:?}");
    };
    assert_eq!(out.flights[0].scheduled_departure_date, "2026-12-02");
    assert_eq!(out.flights[0].points[0].airport, "LHR");
    assert_eq!(
        out.flights[0].points[0]
            .departure
            .as_ref()
            .and_then(|d| d.gate.as_deref()),
        Some("B7")
    );
    assert!(
        typed
            .content()
            .starts_with("BA 117 on 2026-12-02: departs LHR 2026-12-02T09:00:00Z, gate B7")
    );
}

#[test]
fn a_binding_answer_that_does_not_fit_is_malformed_and_nothing_is_a_refusal() {
    let b = binding();
    let now = SystemTime::UNIX_EPOCH;
    let misfit = b.read((200, Waits::default(), &aeroapi(json!(7))), now, &asked());
    assert!(
        matches!(&misfit, Err(Class::Malformed { detail }) if detail.contains("/flights/0/carrier_code")),
        "{misfit:?}"
    );
    let missing = b.read(
        (200, Waits::default(), &aeroapi(Value::Null)),
        now,
        &asked(),
    );
    assert!(
        matches!(missing, Err(Class::Malformed { .. })),
        "{missing:?}"
    );
    let other_day =
        json!({"carrier_code": "BA", "flight_number": "117", "departure_date": "2026-12-05"});
    let nothing = b.read(
        (200, Waits::default(), &aeroapi(json!("BA"))),
        now,
        &other_day,
    );
    assert_eq!(
        nothing,
        Err(Class::NotListed {
            message: "Not listed on that date.".into()
        }),
        "not a refusal of the call: a later ask may find it listed"
    );
    let refused = b.read(
        (
            404,
            Waits::default(),
            br#"{"detail": "No flights found for ident ZZ1"}"#,
        ),
        now,
        &asked(),
    );
    assert_eq!(
        refused,
        Err(Class::Rejected {
            message: "No flights found for ident ZZ1".into()
        })
    );
}
