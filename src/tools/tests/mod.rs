//! The catalog as a model sees it: schemas, validation messages, semantic checks, content text.

use chrono::NaiveDate;
use serde_json::{Value, json};

use super::prices::Kept;
use super::*;

fn today() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, 30).unwrap_or_default()
}

/// Validates like the gateway does: schema first, then the typed parse.
fn check(tool: &str, args: Value, key: Option<&str>) -> Result<ToolRequest, Vec<FieldError>> {
    let spec = spec(tool).unwrap_or_else(|| panic!("no tool {tool}"));
    let validator = ArgumentValidator::new(spec).unwrap_or_else(|e| panic!("{e}"));
    let errors = validator.errors(&args);
    if !errors.is_empty() {
        return Err(errors);
    }
    spec.parse(args, today(), key)
}

fn fields(res: Result<ToolRequest, Vec<FieldError>>) -> Vec<String> {
    match res {
        Ok(r) => panic!("accepted: {r:?}"),
        Err(errors) => errors.into_iter().map(|e| e.field).collect(),
    }
}

#[test]
fn every_tool_has_a_valid_name_and_object_schemas() {
    let name_ok = |n: &str| {
        let mut chars = n.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            && n.len() <= 64
    };
    assert_eq!(CATALOG.len(), 7);
    for spec in CATALOG {
        assert!(name_ok(spec.name), "{}", spec.name);
        let input = spec.input_schema();
        assert_eq!(input["type"], "object", "{}", spec.name);
        assert_eq!(input["additionalProperties"], false, "{}", spec.name);
        assert!(input.get("$ref").is_none() && !input.to_string().contains("\"$ref\""));
        for (prop, schema) in input["properties"].as_object().into_iter().flatten() {
            assert!(
                schema.get("description").is_some(),
                "{}.{prop} has no description for the model",
                spec.name
            );
        }
        assert_eq!(spec.output_schema()["type"], "object", "{}", spec.name);
        ArgumentValidator::new(spec).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn only_booking_is_a_write_needing_a_key() {
    for spec in CATALOG {
        let write = spec.name == "book_flight" || spec.name == "book_hotel";
        assert_eq!(spec.access == Access::Write, write);
        assert_eq!(spec.needs_idempotency_key, write);
        assert_eq!(spec.idempotent, !write);
    }
    assert_eq!(
        spec("get_flight_status").map(|s| s.built_for),
        Some(CallMode::Background)
    );
}

#[test]
fn a_good_flight_search_parses_with_defaults() {
    let req = check(
        "search_flights",
        json!({"origin": "JFK", "destination": "LHR", "departure_date": "2026-12-20"}),
        None,
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    let ToolRequest::SearchFlights(a) = req else {
        panic!("wrong request {req:?}")
    };
    assert_eq!(a.adults, 1);
    assert_eq!(a.max_results, None);
}

#[test]
fn every_bad_flight_field_is_named_at_once() {
    let errors = check(
        "search_flights",
        json!({"origin": "jfk", "destination": 7, "adults": 12, "colour": "red"}),
        None,
    )
    .err()
    .unwrap_or_default();
    let text = describe_field_errors("search_flights", &errors);
    for expected in [
        "origin: \"jfk\" does not match",
        "3-letter IATA code of the departure airport",
        "destination: 7 is not of type \"string\"",
        "departure_date: is required",
        "adults: 12 is greater than the maximum of 9",
        "unknown field \"colour\"; valid fields:",
    ] {
        assert!(
            text.contains(expected),
            "{expected:?} missing from:\n{text}"
        );
    }
}

#[test]
fn past_dates_and_reversed_trips_are_refused() {
    assert_eq!(
        fields(check(
            "search_flights",
            json!({"origin": "JFK", "destination": "LHR", "departure_date": "2026-11-01",
                   "return_date": "2026-10-01"}),
            None
        )),
        ["departure_date", "return_date"]
    );
    assert_eq!(
        fields(check(
            "search_flights",
            json!({"origin": "JFK", "destination": "JFK", "departure_date": "2026-12-20"}),
            None
        )),
        ["destination"]
    );
    assert_eq!(
        fields(check(
            "search_flights",
            json!({"origin": "JFK", "destination": "LHR", "departure_date": "2026-12-40"}),
            None
        )),
        ["departure_date"]
    );
}

#[test]
fn hotel_stays_must_end_after_they_start() {
    assert_eq!(
        fields(check(
            "search_hotels",
            json!({"city_code": "PAR", "check_in_date": "2026-12-20", "check_out_date": "2026-12-20"}),
            None
        )),
        ["check_out_date"]
    );
    assert_eq!(
        fields(check(
            "search_hotels",
            json!({"latitude": 48.8, "check_in_date": "2026-12-20", "check_out_date": "2026-12-22",
                   "rooms": 3, "adults": 2}),
            None
        )),
        ["longitude", "adults"]
    );
    assert_eq!(
        fields(check(
            "search_hotels",
            json!({"check_in_date": "2026-12-20", "check_out_date": "2026-12-22"}),
            None
        )),
        ["city_code"]
    );
}

#[test]
fn booking_needs_an_idempotency_key_and_valid_travellers() {
    let traveller = json!({"given_name": "Ana", "family_name": "Garcia", "born_on": "1990-02-15",
        "gender": "f", "title": "ms", "email": "ana@example.com", "phone_number": "+34600000000"});
    let args = json!({"offer_id": "off_123", "travellers": [traveller]});
    assert!(matches!(
        check("book_flight", args.clone(), Some("k-1")),
        Ok(ToolRequest::BookFlight(_, k)) if k.idempotency_key == "k-1"
    ));
    assert_eq!(
        fields(check("book_flight", args, None)),
        ["idempotency_key"]
    );
    let bad = json!({"offer_id": "off_123", "travellers": [{"given_name": "Ana", "family_name": "Garcia",
        "born_on": "2030-01-01", "gender": "x", "title": "ms", "email": "not-an-email",
        "phone_number": "0600"}]});
    let f = fields(check("book_flight", bad.clone(), Some("k")));
    // The whole check (schema and parse together) names the key only when it is wrong.
    let validator = ArgumentValidator::new(spec("book_flight").unwrap_or_else(|| panic!("spec")))
        .unwrap_or_else(|e| panic!("{e}"));
    let whole = |key: Option<&str>| fields(validator.check(&bad, today(), key));
    let key_named = |f: Vec<String>| f.contains(&"idempotency_key".to_string());
    assert!(!key_named(whole(Some("k"))), "a good key is not named");
    assert!(key_named(whole(None)));
    assert!(key_named(whole(Some("  "))));
    assert!(key_named(whole(Some(&"k".repeat(201)))));
    // Every protocol's key passes here (MCP's `_meta` one too): a control character would fail
    // a configured tool's idempotency header before it is sent.
    assert!(key_named(whole(Some("k\u{1}1"))));
    assert!(key_named(whole(Some("k\n1"))));
    let born_later = json!({"offer_id": "off_123", "travellers": [{"given_name": "Ana", "family_name": "Garcia",
        "born_on": "2030-01-01", "gender": "f", "title": "ms", "email": "ana@example.com",
        "phone_number": "+34600000000"}]});
    assert_eq!(
        fields(validator.check(&born_later, today(), Some("k"))),
        ["travellers[0].born_on"]
    );
    assert!(f.contains(&"travellers[0].gender".to_string()), "{f:?}");
    assert!(f.contains(&"travellers[0].email".to_string()), "{f:?}");
    assert!(
        f.contains(&"travellers[0].phone_number".to_string()),
        "{f:?}"
    );
}

#[test]
fn a_hotel_booking_needs_a_key_a_rate_and_named_guests() {
    let args = json!({"rate_id": "rat_0000ASVBuJVLdmqtZDJ4cc",
        "guests": [{"given_name": "Ana", "family_name": "Garcia"}],
        "email": "ana@example.com", "phone_number": "+34600000000",
        "confirmed_total_amount": "412.00"});
    assert!(matches!(
        check("book_hotel", args.clone(), Some("k-1")),
        Ok(ToolRequest::BookHotel(a, k)) if k.idempotency_key == "k-1" && a.guests.len() == 1
    ));
    assert_eq!(fields(check("book_hotel", args, None)), ["idempotency_key"]);
    let bad = json!({"rate_id": "../rat", "guests": [{"given_name": " ", "family_name": "Garcia"}],
        "email": "ana@", "phone_number": "0600", "confirmed_total_amount": "about 400"});
    let validator = ArgumentValidator::new(spec("book_hotel").unwrap_or_else(|| panic!("spec")))
        .unwrap_or_else(|e| panic!("{e}"));
    let f = fields(validator.check(&bad, today(), Some("k")));
    for field in ["rate_id", "phone_number", "confirmed_total_amount"] {
        assert!(f.contains(&field.to_string()), "{field} in {f:?}");
    }
    assert!(
        !f.contains(&"idempotency_key".to_string()),
        "a good key is not named"
    );
    let no_guests = json!({"rate_id": "rat_1234", "guests": [], "email": "ana@example.com",
        "phone_number": "+34600000000"});
    assert_eq!(
        fields(check("book_hotel", no_guests, Some("k"))),
        ["guests"]
    );
    let blank = json!({"rate_id": "rat_1234", "guests": [{"given_name": " ", "family_name": "G"}],
        "email": "ana@example.com", "phone_number": "+34600000000"});
    assert_eq!(
        fields(check("book_hotel", blank, Some("k"))),
        ["guests[0].given_name"]
    );
    let out = book_hotel::Output {
        booking_reference: "AFE33SE2".into(),
        booking_id: "bok_1".into(),
        hotel_name: Some("Hotel Example Opera".into()),
        check_in_date: Some("2030-11-02".into()),
        check_out_date: Some("2030-11-04".into()),
        total_amount: "412.00".into(),
        total_currency: "EUR".into(),
        guests: vec!["Ana Garcia".into()],
        idempotency_key: "k-1".into(),
    };
    assert_eq!(
        book_hotel::content(&out),
        "Booked: Hotel Example Opera, 2030-11-02→2030-11-04, booking reference AFE33SE2 (booking bok_1), 412.00 EUR charged, for Ana Garcia."
    );
}

/// A name with a control or invisible character, or with no letter, books no one: both booking
/// tools refuse it by its field, in words that print none of it, and real names of any script
/// pass.
#[test]
fn booking_names_with_control_or_invisible_characters_are_refused() {
    let hotel = |given: &str, family: &str| {
        json!({"rate_id": "rat_1234", "guests": [{"given_name": "Ana", "family_name": "Garcia"},
            {"given_name": given, "family_name": family}],
            "email": "ana@example.com", "phone_number": "+34600000000"})
    };
    let flight = |given: &str, family: &str| {
        json!({"offer_id": "off_123", "travellers": [{"given_name": given, "family_name": family,
            "born_on": "1990-02-15", "gender": "f", "title": "ms", "email": "ana@example.com",
            "phone_number": "+34600000000"}]})
    };
    let refused = |tool: &str, args: Value| match check(tool, args, Some("k")) {
        Ok(r) => panic!("accepted: {r:?}"),
        Err(errors) => describe_field_errors(tool, &errors),
    };

    let text = refused("book_hotel", hotel("A\u{0}\n\u{202e}", "\u{200b}"));
    assert!(
        text.contains(
            "- guests[1].given_name: has a line break or another control character (U+0000)"
        ),
        "{text}"
    );
    assert!(
        text.contains("- guests[1].family_name: has an invisible formatting character (U+200B"),
        "{text}"
    );
    assert!(!text.contains(['\0', '\u{202e}', '\u{200b}']), "{text:?}");
    assert_eq!(text.lines().count(), 3, "{text}");

    let text = refused("book_flight", flight("Ana\u{200d}", "--"));
    assert!(
        text.contains("- travellers[0].given_name: has an invisible formatting character (U+200D"),
        "{text}"
    );
    assert!(
        text.contains("- travellers[0].family_name: has no letter"),
        "{text}"
    );

    for (given, family) in [("Zoë", "O'Brien-Núñez"), ("小龙", "李"), ("Mesut", "Özil")] {
        assert!(
            check("book_hotel", hotel(given, family), Some("k")).is_ok(),
            "{given} {family}"
        );
        assert!(
            check("book_flight", flight(given, family), Some("k")).is_ok(),
            "{given} {family}"
        );
    }
}

#[test]
fn ids_cannot_carry_paths() {
    for id in ["../admin", "off_1/../../x", "off%2F1", "a\r\nb"] {
        assert_eq!(
            fields(check("price_flight_offer", json!({"offer_id": id}), None)),
            ["offer_id"],
            "{id:?}"
        );
    }
}

#[test]
fn non_object_arguments_are_explained() {
    let errors = check("search_flights", json!([1, 2]), None)
        .err()
        .unwrap_or_default();
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].message.contains("must be a JSON object"),
        "{errors:?}"
    );
}

/// `ArgumentValidator::check`, the path every call takes (and the fuzz target `tool_args`):
/// schema problems and semantic ones come back in one answer.
#[test]
fn check_lists_schema_and_semantic_problems_together() {
    let spec = spec("search_hotels").unwrap_or_else(|| panic!("no search_hotels"));
    let validator = ArgumentValidator::new(spec).unwrap_or_else(|e| panic!("{e}"));
    let args =
        json!({"city_code": "par", "check_in_date": "2026-12-24", "check_out_date": "2026-12-22"});
    let mut fields = fields(validator.check(&args, today(), None));
    fields.sort();
    fields.dedup();
    assert_eq!(fields, ["check_out_date", "city_code"]);
    let ok =
        json!({"city_code": "PAR", "check_in_date": "2026-12-22", "check_out_date": "2026-12-24"});
    assert!(matches!(
        validator.check(&ok, today(), None),
        Ok(ToolRequest::SearchHotels(_))
    ));
}

/// A whole number written as a float (`2.0`) counts as that integer, as JSON Schema counts it;
/// a fraction is still refused, by field.
#[test]
fn whole_numbers_written_as_floats_are_read_as_integers() {
    let args = |adults: Value, max_results: Value| {
        json!({"origin": "JFK", "destination": "LHR", "departure_date": "2026-12-21",
               "adults": adults, "child_ages": [5.0], "max_results": max_results})
    };
    let Ok(ToolRequest::SearchFlights(read)) =
        check("search_flights", args(json!(2.0), json!(3.0)), None)
    else {
        panic!("whole floats refused");
    };
    assert_eq!(
        (read.adults, read.child_ages.len(), read.max_results),
        (2, 1, Some(3))
    );
    assert_eq!(
        fields(check("search_flights", args(json!(2.5), json!(3)), None)),
        ["adults"]
    );
}

#[test]
fn a_value_outside_an_enum_is_told_the_values_and_the_likely_one() {
    let messages = |tool: &str, args: Value| match check(tool, args, Some("k")) {
        Ok(r) => panic!("accepted: {r:?}"),
        Err(errors) => errors
            .into_iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect::<Vec<_>>(),
    };
    let search = |cabin: Value| {
        json!({"origin": "JFK", "destination": "LHR", "departure_date": "2026-12-20",
            "cabin_class": cabin})
    };
    assert_eq!(
        messages("search_flights", search(json!("Business"))),
        [
            "cabin_class: \"Business\" is not one of \"economy\", \"premium_economy\", \"business\", \"first\" (or null); did you mean \"business\"? (expected: Cabin class; omit for economy)"
        ]
    );
    let [wrong] = &messages("search_flights", search(json!("coach")))[..] else {
        panic!("one error")
    };
    assert!(
        wrong.starts_with("cabin_class: \"coach\" is not one of \"economy\", ")
            && !wrong.contains("did you mean"),
        "{wrong}"
    );
    let long = "x".repeat(200);
    let [long] = &messages("search_flights", search(json!(long)))[..] else {
        panic!("one error")
    };
    assert!(
        long.starts_with("cabin_class: the value is not one of"),
        "{long}"
    );
    let traveller = json!({"given_name": "Ana", "family_name": "Garcia", "born_on": "1990-02-15",
        "gender": "F", "title": "ms", "email": "ana@example.com", "phone_number": "+34600000000"});
    let gender = messages(
        "book_flight",
        json!({"offer_id": "off_123", "travellers": [traveller]}),
    );
    assert!(
        gender.iter().any(|m| m.starts_with(
            "travellers[0].gender: \"F\" is not one of \"m\", \"f\"; did you mean \"f\"?"
        )),
        "{gender:?}"
    );
}

mod content;
