//! Provider answers: the first byte picks the provider (Duffel, Amadeus) and the tool request
//! the answer belongs to, the second the HTTP status; the rest is the response body. They go
//! through `faregate::providers::{duffel, amadeus}::decode_response`, the adapters' own
//! decoding, error classification and mapping into tool results. Invariants: no panic; an
//! error explains itself; an accepted answer is a result of the tool asked, with a content
//! text, whose JSON matches the tool's published output schema.
#![no_main]

use std::sync::OnceLock;

use chrono::NaiveDate;
use faregate::providers::{amadeus, duffel};
use faregate::tools::{ArgumentValidator, CATALOG, ToolOutput, ToolRequest};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

/// Statuses worth trying, successes first (the second input byte picks one).
const STATUSES: [u16; 16] = [
    200, 201, 200, 202, 204, 400, 401, 403, 404, 409, 422, 429, 500, 502, 503, 504,
];

struct Fixture {
    requests: Vec<ToolRequest>,
    output_schemas: Vec<(&'static str, jsonschema::Validator)>,
}

/// One valid request per tool (and a second search_hotels by coordinates), parsed the way a
/// call is, and each tool's output schema compiled.
fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let today = NaiveDate::from_ymd_opt(2026, 1, 1).unwrap_or_default();
        let traveller = json!({"title": "mr", "given_name": "Ada", "family_name": "Lovelace", "gender": "f",
            "born_on": "1990-12-10", "email": "ada@example.com", "phone_number": "+442080160508"});
        let calls = [
            ("search_flights", json!({"origin": "JFK", "destination": "LHR", "departure_date": "2026-12-21", "return_date": "2026-12-28", "adults": 1, "max_results": 5})),
            ("price_flight_offer", json!({"offer_id": "off_0000AEdGRhtp5AUUdJqMxo"})),
            ("price_flight_offer", json!({"offer_id": "amx_00000000000000a1"})),
            ("search_hotels", json!({"city_code": "PAR", "check_in_date": "2026-12-22", "check_out_date": "2026-12-24"})),
            ("search_hotels", json!({"latitude": 48.85, "longitude": 2.35, "check_in_date": "2026-12-22", "check_out_date": "2026-12-24", "max_results": 3})),
            ("check_hotel_availability", json!({"hotel_result_id": "srr_0000AWr2VsUNIF1Vl91xg0"})),
            ("check_hotel_availability", json!({"hotel_result_id": "amh_TSXOJ6LFQ2"})),
            ("get_flight_status", json!({"carrier_code": "BA", "flight_number": "117", "departure_date": "2026-12-21"})),
            ("book_flight", json!({"offer_id": "off_0000AEdGRhtp5AUUdJqMxo", "travellers": [traveller]})),
            ("book_hotel", json!({"rate_id": "rat_0000ASVBuJVLdmqtZDJ4cc", "guests": [{"given_name": "Ada", "family_name": "Lovelace"}],
                "email": "ada@example.com", "phone_number": "+442080160508"})),
        ];
        let requests = calls
            .into_iter()
            .map(|(tool, args)| {
                let spec = faregate::tools::spec(tool).unwrap_or_else(|| panic!("no tool {tool}"));
                let v = ArgumentValidator::new(spec).unwrap_or_else(|e| panic!("{e}"));
                v.check(&args, today, Some("fuzz-key"))
                    .unwrap_or_else(|e| panic!("fixture {tool} refused: {e:?}"))
            })
            .collect();
        let output_schemas = CATALOG
            .iter()
            .map(|s| {
                let v = jsonschema::options()
                    .build(&s.output_schema())
                    .unwrap_or_else(|e| panic!("{}: {e}", s.name));
                (s.name, v)
            })
            .collect();
        Fixture { requests, output_schemas }
    })
}

fn output_tool(o: &ToolOutput) -> &'static str {
    match o {
        ToolOutput::SearchFlights(_) => "search_flights",
        ToolOutput::PriceFlightOffer(_) => "price_flight_offer",
        ToolOutput::SearchHotels(_) => "search_hotels",
        ToolOutput::CheckHotelAvailability(_) => "check_hotel_availability",
        ToolOutput::GetFlightStatus(_) => "get_flight_status",
        ToolOutput::BookFlight(_) => "book_flight",
        ToolOutput::BookHotel(_) => "book_hotel",
        // No Duffel or Amadeus answer is a tool from configuration's (fuzz/http_tool has those).
        ToolOutput::Configured(_) => "a tool from configuration",
    }
}

fuzz_target!(|data: &[u8]| {
    let [pick, status, body @ ..] = data else {
        return;
    };
    let f = fixture();
    let request = &f.requests[usize::from(pick >> 1) % f.requests.len()];
    let status = STATUSES[usize::from(*status) % STATUSES.len()];
    let result = if pick & 1 == 0 {
        duffel::decode_response(request, status, body)
    } else {
        amadeus::decode_response(request, status, body)
    };
    match result {
        Ok(output) => {
            assert_eq!(output_tool(&output), request.tool());
            assert!(!output.content().is_empty());
            let data = serde_json::to_value(&output).unwrap_or_else(|e| panic!("{e}"));
            let schema = f.output_schemas.iter().find(|(n, _)| *n == request.tool());
            if let Some((_, schema)) = schema {
                let errors: Vec<String> =
                    schema.iter_errors(&data).map(|e| e.to_string()).collect();
                assert!(
                    errors.is_empty(),
                    "{} data breaks its output schema: {errors:?}\n{data}",
                    request.tool()
                );
            }
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
