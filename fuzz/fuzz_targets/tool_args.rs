//! Tool arguments: the first byte picks a catalog tool, the rest is the JSON `arguments` of a
//! call. They go through `ArgumentValidator::check`, the schema + semantic check every call
//! gets (interactive and background). Invariants: no panic; a refusal names at least one
//! problem; an accepted call is for the tool asked, and its arguments, written back as JSON,
//! are accepted again as the same arguments.
#![no_main]

use std::sync::OnceLock;

use chrono::NaiveDate;
use faregate::tools::{ArgumentValidator, CATALOG, ToolRequest, describe_field_errors};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn validators() -> &'static [ArgumentValidator] {
    static V: OnceLock<Vec<ArgumentValidator>> = OnceLock::new();
    V.get_or_init(|| {
        CATALOG
            .iter()
            .map(|s| ArgumentValidator::new(s).unwrap_or_else(|e| panic!("{e}")))
            .collect()
    })
}

/// A fixed "today", so that runs are reproducible (the seeds travel in late 2026).
fn today() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 1, 1).unwrap_or_default()
}

/// The typed arguments as JSON, as a caller would send them again.
fn args_json(request: &ToolRequest) -> Value {
    let v = match request {
        ToolRequest::SearchFlights(a) => serde_json::to_value(a),
        ToolRequest::PriceFlightOffer(a) => serde_json::to_value(a),
        ToolRequest::SearchHotels(a) => serde_json::to_value(a),
        ToolRequest::CheckHotelAvailability(a) => serde_json::to_value(a),
        ToolRequest::GetFlightStatus(a) => serde_json::to_value(a),
        ToolRequest::BookFlight(a, _) => serde_json::to_value(a),
        ToolRequest::BookHotel(a, _) => serde_json::to_value(a),
        // The catalog has no tool from configuration; such a call carries its arguments as sent.
        ToolRequest::Configured(call) => Ok(call.arguments.clone()),
    };
    v.unwrap_or_else(|e| panic!("typed arguments do not serialize: {e}"))
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, json)) = data.split_first() else {
        return;
    };
    let Ok(arguments) = serde_json::from_slice::<Value>(json) else {
        return;
    };
    let i = usize::from(pick) % CATALOG.len();
    let (spec, validator) = (&CATALOG[i], &validators()[i]);
    // Every other input gets an idempotency key, so book_flight is reached both ways.
    let key = (pick & 0x80 != 0).then_some("fuzz-key");
    match validator.check(&arguments, today(), key) {
        Ok(request) => {
            assert_eq!(request.tool(), spec.name);
            let again = args_json(&request);
            match validator.check(&again, today(), key) {
                Ok(second) => assert_eq!(
                    args_json(&second),
                    again,
                    "round trip changed the arguments"
                ),
                Err(errors) => {
                    panic!("accepted arguments {again} refused on the way back: {errors:?}")
                }
            }
        }
        Err(errors) => {
            assert!(!errors.is_empty(), "a refusal must name a problem");
            let text = describe_field_errors(spec.name, &errors);
            assert!(text.lines().count() > errors.len().min(1));
        }
    }
});
