//! `[binding.<provider>]` in a built-in tool's file: the shipped pairing loads, and every
//! mistake of a binding is named with its file and key.

use super::*;

const FILE: &str = "tools/get_flight_status.toml";

#[test]
fn the_shipped_flight_status_tool_binds_flightaware_after_amadeus() {
    let config = MapFiles::defaults()
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let tool = config
        .tool("get_flight_status")
        .unwrap_or_else(|| panic!("get_flight_status is shipped"));
    assert_eq!(tool.providers, ["amadeus", "flightaware"]);
    assert!(tool.binding("flightaware").is_some());
    assert!(tool.binding("amadeus").is_none());
}

/// Each edit of the shipped file, the key it is reported at and what the message says.
#[test]
fn every_mistake_of_a_binding_is_named_with_its_key() {
    let table: &[(&str, &str, &[&str])] = &[
        (
            "path = \"/flights/{carrier_code}{flight_number}\"",
            "path = \"/flights/{ident}\"",
            &[
                "get_flight_status.toml: binding.flightaware.request.path",
                // A built-in tool's arguments are fixed: named, not to be added to.
                "the path parameter {ident} is not an argument of this tool; its arguments: carrier_code, departure_date, flight_number",
            ],
        ),
        (
            "\"flights[].carrier_code\" = \"@.operator_iata\"",
            "\"flights[].carrier_code\" = \"@.operator_iata[[\"",
            &[
                "binding.flightaware.result.flights[].carrier_code",
                "is not a JSONPath (RFC 9535)",
            ],
        ),
        (
            "\"flights[].carrier_code\" = \"@.operator_iata\"\n",
            "",
            &[
                "binding.flightaware.result.flights[].carrier_code",
                "required field of the tool's output and has no source",
            ],
        ),
        (
            "\"flights[].flight_number\" = \"@.flight_number\"",
            "\"flights[].flight_no\" = \"@.flight_number\"",
            &[
                "binding.flightaware.result.flights[].flight_no",
                "no field \"flight_no\"",
            ],
        ),
        (
            "\"flights[].scheduled_departure_date\" = \"{departure_date}\"",
            "\"flights[].scheduled_departure_date\" = \"{date}\"",
            &[
                "binding.flightaware.result.flights[].scheduled_departure_date",
                "{date} is not a required argument",
            ],
        ),
        (
            "method = \"GET\"\npath = \"/flights",
            "method = \"POST\"\npath = \"/flights",
            &["binding.flightaware.request.method", "serves reads only"],
        ),
        (
            "[binding.flightaware.request]",
            "[binding.flightaware.requests]",
            &["binding.flightaware.request", "missing"],
        ),
    ];
    for (from, to, expected) in table {
        let errors = errors_of(MapFiles::defaults().edit(FILE, from, to));
        assert!(
            expected
                .iter()
                .all(|part| errors.iter().any(|e| e.contains(part))),
            "{from:?} → {to:?}: expected {expected:?} in {errors:#?}"
        );
        assert!(
            errors
                .iter()
                .all(|e| !e.contains("only through a [binding")),
            "{from:?} → {to:?}: the binding is there, only broken: {errors:#?}"
        );
    }
}

/// A binding refused for one mistake is reported at that key alone: the tool's providers are
/// not also told to add the [binding.flightaware] the file has (a probe saw both for
/// `method = "POST"`).
#[test]
fn a_broken_binding_is_not_also_called_missing() {
    let errors = errors_of(MapFiles::defaults().edit(
        FILE,
        "method = \"GET\"\npath = \"/flights",
        "method = \"POST\"\npath = \"/flights",
    ));
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].contains("get_flight_status.toml: binding.flightaware.request.method"),
        "{errors:#?}"
    );
}

/// A binding with no `[result]` still has its request checked: each mistake is named in one
/// round, the missing result once (not again for every output field).
#[test]
fn a_binding_without_a_result_still_has_its_request_checked() {
    let shipped = MapFiles::defaults();
    let text = shipped
        .0
        .get(Path::new(&format!("/cfg/{FILE}")))
        .cloned()
        .unwrap_or_default();
    let start = text
        .find("[binding.flightaware.result]")
        .unwrap_or_else(|| panic!("the shipped binding has a result"));
    let end = text
        .find("[binding.flightaware.classify]")
        .unwrap_or_else(|| panic!("and a classify table"));
    let without = format!("{}{}", &text[..start], &text[end..]).replace(
        "method = \"GET\"\npath = \"/flights/{carrier_code}{flight_number}\"",
        "method = \"POST\"\npath = \"/flights/{nope}\"",
    );
    let errors = errors_of(shipped.put(FILE, &without));
    for (key, says) in [
        ("binding.flightaware.result", "missing; map each field"),
        ("binding.flightaware.request.method", "asked with GET"),
        (
            "binding.flightaware.request.path",
            "{nope} is not an argument of this tool",
        ),
    ] {
        assert!(
            errors.iter().any(|e| e.contains(key) && e.contains(says)),
            "no {key} saying {says:?}: {errors:#?}"
        );
    }
    assert_eq!(errors.len(), 3, "{errors:#?}");
}

#[test]
fn a_binding_of_a_provider_the_tool_does_not_list_is_only_a_warning() {
    let files = MapFiles::defaults().edit(
        FILE,
        "providers = [\"amadeus\", \"flightaware\"]",
        "providers = [\"amadeus\"]",
    );
    let (config, warnings) = files.load_warned();
    assert_eq!(
        config
            .tool("get_flight_status")
            .map(|t| t.providers.clone()),
        Some(vec!["amadeus".to_string()])
    );
    assert!(
        warnings.iter().any(
            |w| w.contains("binding.flightaware") && w.contains("not in this tool's providers")
        ),
        "{warnings:#?}"
    );
}

#[test]
fn an_http_provider_without_a_binding_is_refused_with_the_way_to_bind_it() {
    let errors = errors_of(rebound("hotel_content"));
    assert!(
        errors
            .iter()
            .any(|e| e.contains("providers[1]")
                && e.contains("only through a [binding.flightaware]")),
        "{errors:#?}"
    );
}

/// The shipped files with every `[binding.flightaware…]` of the tool file renamed to `to`.
fn rebound(to: &str) -> MapFiles {
    let files = MapFiles::defaults();
    let text = files
        .0
        .get(&PathBuf::from(format!("/cfg/{FILE}")))
        .cloned()
        .unwrap_or_default()
        .replace("[binding.flightaware.", &format!("[binding.{to}."));
    files.put(FILE, &text)
}

#[test]
fn a_binding_of_a_provider_of_another_kind_is_refused() {
    let errors = errors_of(rebound("amadeus"));
    assert!(
        errors
            .iter()
            .any(|e| e.contains("binding.amadeus") && e.contains("of kind amadeus")),
        "{errors:#?}"
    );
}

/// The part of the shipped binding from `[binding.flightaware.request]` on.
fn shipped_binding() -> String {
    let text = MapFiles::defaults()
        .0
        .get(&PathBuf::from(format!("/cfg/{FILE}")))
        .cloned()
        .unwrap_or_default();
    let at = text
        .find("[binding.flightaware.request]")
        .unwrap_or(text.len());
    text[at..].to_string()
}

#[test]
fn a_write_tool_and_a_tool_with_routable_ids_take_no_binding() {
    let booking = errors_of(MapFiles::defaults().edit(
        "tools/book_flight.toml",
        "[fallback]",
        &format!("{}\n[fallback]", shipped_binding()),
    ));
    assert!(
        booking
            .iter()
            .any(|e| e.contains("book_flight.toml: binding.flightaware")
                && e.contains("write tool (a booking)")),
        "{booking:#?}"
    );
    let search = errors_of(MapFiles::defaults().edit(
        "tools/search_flights.toml",
        "[fallback]",
        &format!("{}\n[fallback]", shipped_binding()),
    ));
    assert!(
        search
            .iter()
            .any(|e| e.contains("search_flights.toml: binding.flightaware")
                && e.contains(
                    "only tools whose outputs carry no such ids take a binding: get_flight_status"
                )),
        "{search:#?}"
    );
}
