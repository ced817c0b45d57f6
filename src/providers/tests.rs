//! The adapters' decode-and-map half (`decode_response`, also the fuzz target
//! `provider_responses`) on the documented fixtures, and fuzz findings as regressions.

use chrono::NaiveDate;
use serde_json::{Value, json};

use super::{ErrorKind, amadeus, duffel};
use crate::tools::{ArgumentValidator, ToolOutput, ToolRequest, spec};

fn request(tool: &str, args: Value) -> ToolRequest {
    let spec = spec(tool).unwrap_or_else(|| panic!("no tool {tool}"));
    let today = NaiveDate::from_ymd_opt(2026, 1, 1).unwrap_or_default();
    ArgumentValidator::new(spec)
        .unwrap_or_else(|e| panic!("{e}"))
        .check(&args, today, Some("key-1"))
        .unwrap_or_else(|e| panic!("{tool}: {e:?}"))
}

fn fixture(path: &str) -> Vec<u8> {
    let file = format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&file).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn search_flights() -> ToolRequest {
    request(
        "search_flights",
        json!({"origin": "JFK", "destination": "LHR", "departure_date": "2026-12-21"}),
    )
}

#[test]
fn documented_answers_become_tool_results() {
    let price = request(
        "price_flight_offer",
        json!({"offer_id": "off_0000AEdGRhtp5AUUdJqMxo"}),
    );
    let duffel_cases = [
        (search_flights(), 201, "duffel/offer_request_201.json"),
        (price, 200, "duffel/offer_200.json"),
    ];
    for (req, status, file) in duffel_cases {
        let out = duffel::decode_response(&req, status, &fixture(file))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(!out.content().is_empty(), "{file}");
    }
    let status = request(
        "get_flight_status",
        json!({"carrier_code": "BA", "flight_number": "117", "departure_date": "2026-12-21"}),
    );
    let out = amadeus::decode_response(&status, 200, &fixture("amadeus/flight_status_200.json"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(out, ToolOutput::GetFlightStatus(_)));
    let out = amadeus::decode_response(
        &search_flights(),
        200,
        &fixture("amadeus/flight_offers_200.json"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let ToolOutput::SearchFlights(o) = out else {
        panic!("not a flight search: {out:?}");
    };
    assert!(o.offers.iter().all(|x| x.offer_id.starts_with("amx_")));
}

#[test]
fn a_stays_booking_becomes_a_hotel_booking_charged_its_rate() {
    let book = request(
        "book_hotel",
        json!({"rate_id": "rat_0000ASVBuJVLdmqtZDJ4cc",
               "guests": [{"given_name": "Amelia", "family_name": "Earhart"}],
               "email": "amelia.earhart@duffel.com", "phone_number": "+442080160509"}),
    );
    let out = duffel::decode_response(&book, 201, &fixture("duffel/stays_booking_201.json"))
        .unwrap_or_else(|e| panic!("{e}"));
    let ToolOutput::BookHotel(o) = out else {
        panic!("not a hotel booking: {out:?}");
    };
    assert_eq!(o.booking_id, "bok_0000BTVRuKZTavzrZDJ4cb");
    assert_eq!(o.booking_reference, "AFE33SE2");
    assert_eq!(o.hotel_name.as_deref(), Some("Hotel Example Opera"));
    assert_eq!(
        (o.total_amount.as_str(), o.total_currency.as_str()),
        ("412.00", "EUR")
    );
    assert_eq!(o.guests, ["Amelia Earhart"]);
    assert_eq!(o.idempotency_key, "key-1");
    // A Duffel error to the booking is classified like any other, never a panic.
    let gone = duffel::decode_response(&book, 422, &fixture("duffel/error_422_offer_gone.json"));
    assert!(
        matches!(gone, Err(e) if matches!(e.kind, ErrorKind::Rejected { .. })),
        "a 422 is the model's to fix"
    );
}

#[test]
fn errors_and_wrong_shapes_are_classified_not_panics() {
    let err = duffel::decode_response(&search_flights(), 429, &fixture("duffel/error_429.json"))
        .err()
        .unwrap_or_else(|| panic!("a 429 must be an error"));
    assert!(matches!(err.kind, ErrorKind::RateLimited { .. }), "{err}");
    for body in [&b"{}"[..], b"", b"[1,2", b"{\"data\": 7}"] {
        let err = duffel::decode_response(&search_flights(), 200, body)
            .err()
            .unwrap_or_else(|| panic!("{body:?} accepted"));
        assert!(matches!(err.kind, ErrorKind::Malformed), "{err}");
        let err = amadeus::decode_response(&search_flights(), 200, body)
            .err()
            .unwrap_or_else(|| panic!("{body:?} accepted"));
        assert!(matches!(err.kind, ErrorKind::Malformed), "{err}");
    }
    assert!(duffel::decode_response(&search_flights(), 1000, b"{}").is_err());
}

/// A search answer with one byte that is not UTF-8 is malformed, with the place named, for
/// both adapters: in a string the result reads, and in one no wire type reads (the body is
/// checked as a whole before it is parsed, `providers/wire_json.rs`).
#[test]
fn invalid_utf8_in_an_answer_is_malformed_and_located() {
    let cases = [
        (
            "duffel/offer_request_201.json",
            "\"total_amount\": \"812.40\"",
        ),
        ("duffel/offer_request_201.json", "\"live_mode\": false"),
        ("amadeus/flight_offers_200.json", "\"iataCode\": \"MAD\""),
    ];
    for (file, at) in cases {
        let mut body = fixture(file);
        let text = String::from_utf8(body.clone()).unwrap_or_default();
        let i = text.find(at).unwrap_or_else(|| panic!("{at} in {file}"));
        body[i + 2] = 0xff;
        let line = text[..i].matches('\n').count() + 1;
        let column = i + 2 - text[..i].rfind('\n').map_or(0, |n| n + 1) + 1;
        let decoded = if file.starts_with("duffel") {
            duffel::decode_response(&search_flights(), 201, &body)
        } else {
            amadeus::decode_response(&search_flights(), 200, &body)
        };
        let err = decoded.err().unwrap_or_else(|| panic!("{file}: accepted"));
        assert!(matches!(err.kind, ErrorKind::Malformed), "{err}");
        assert!(
            err.to_string()
                .contains(&format!("invalid UTF-8 at line {line} column {column}")),
            "{file}: {err}"
        );
    }
}

/// Fuzz finding (`fuzz/corpus/provider_responses/duffel_duration_overflow`): a segment
/// duration of `P9999999D` in a Duffel offer overflowed `iso_minutes` (a panic in debug
/// builds). The duration is now unreadable and the offer is still answered.
#[test]
fn an_absurd_segment_duration_is_not_a_panic() {
    let price = request(
        "price_flight_offer",
        json!({"offer_id": "off_0000AEdGRhtp5AUUdJqMxo"}),
    );
    let body = String::from_utf8(fixture("duffel/offer_200.json")).unwrap_or_default();
    let body = body.replacen("\"PT08H05M\"", "\"P9999999D\"", 1);
    assert!(body.contains("P9999999D"));
    let out =
        duffel::decode_response(&price, 200, body.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(out, ToolOutput::PriceFlightOffer(_)));
}

/// An environment of the given variables.
struct Vars(&'static [(&'static str, &'static str)]);

impl super::Env for Vars {
    fn var(&self, name: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    }
}

/// The shipped configuration's providers built with `env`: their errors.
fn build_errors(env: &Vars) -> Vec<String> {
    let (config, _) = crate::config::load(
        &crate::config::EmbeddedFiles,
        std::path::Path::new(crate::config::EMBEDDED_CONFIG),
        &crate::tools::names(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    super::build(&config, env).errors
}

/// A Duffel token or an Amadeus key with whitespace around it is sent without it; one with a
/// line break inside stops start-up even for the local simulator (where an unset one gets a
/// placeholder), naming the variable, never the value.
#[test]
fn a_credential_broken_inside_stops_start_and_whitespace_around_one_does_not() {
    let padded = Vars(&[
        ("DUFFEL_ACCESS_TOKEN", "duffel_test_abc\n"),
        ("AMADEUS_CLIENT_ID", " key\n"),
        ("AMADEUS_CLIENT_SECRET", "secret\r\n"),
    ]);
    assert_eq!(build_errors(&padded), Vec::<String>::new());
    let broken = Vars(&[
        ("DUFFEL_ACCESS_TOKEN", "duffel_test\nabc"),
        ("AMADEUS_CLIENT_SECRET", "sec\tret"),
    ]);
    let errors = build_errors(&broken);
    for var in ["DUFFEL_ACCESS_TOKEN", "AMADEUS_CLIENT_SECRET"] {
        assert!(
            errors.iter().any(|e| e.contains(&format!(
                "{var} holds a control character (a line break or a tab within the value)"
            ))),
            "{var}: {errors:?}"
        );
    }
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        !errors
            .iter()
            .any(|e| e.contains("abc") || e.contains("ret")),
        "never the value: {errors:?}"
    );
}
