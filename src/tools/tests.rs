//! The catalog as a model sees it: schemas, validation messages, semantic checks, content text.

use chrono::NaiveDate;
use serde_json::{Value, json};

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

fn offer(id: &str, amount: &str, minutes: u32, flights: &[&str]) -> search_flights::FlightOffer {
    search_flights::FlightOffer {
        offer_id: id.into(),
        total_amount: amount.into(),
        total_currency: "EUR".into(),
        airline: search_flights::Airline {
            iata_code: "BA".into(),
            name: "British Airways".into(),
        },
        slices: vec![search_flights::FlightSlice {
            origin: "JFK".into(),
            destination: "LHR".into(),
            departing_at: "2026-12-20T18:30:00".into(),
            arriving_at: "2026-12-21T06:35:00".into(),
            duration_minutes: minutes,
            stops: flights.len() as u32 - 1,
            flights: flights.iter().map(|f| f.to_string()).collect(),
        }],
        expires_at: "2026-12-01T10:00:00Z".into(),
        bookable: !id.starts_with("amx_"),
    }
}

#[test]
fn flight_content_quotes_count_cheapest_and_fastest() {
    let out = search_flights::Output {
        origin: "JFK".into(),
        destination: "LHR".into(),
        departure_date: "2026-12-20".into(),
        offers: vec![
            offer("off_a", "412.30", 600, &["BA117", "BA9"]),
            offer("off_b", "455.00", 425, &["BA175"]),
        ],
        total_offers: 12,
        currencies: vec!["EUR".into()],
    };
    let text = search_flights::content(&out);
    assert!(
        text.starts_with("12 offers JFK→LHR on 2026-12-20 (showing the 2 cheapest)"),
        "{text}"
    );
    assert!(
        text.contains("cheapest 412.30 EUR (British Airways; BA117+BA9, 1 stop, 10h00m"),
        "{text}"
    );
    assert!(
        text.contains("fastest 455.00 EUR (British Airways; BA175, nonstop, 7h05m"),
        "{text}"
    );
    let empty = search_flights::Output {
        offers: vec![],
        total_offers: 0,
        ..out
    };
    assert!(search_flights::content(&empty).contains("do not invent flights"));
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

/// A bound provider's flight status (FlightAware's, mapped field by field) carries no delay; the
/// one its times show is filled in, in whole minutes, and the text tells it with the time the
/// flight was scheduled for.
#[test]
fn a_bound_flight_status_gets_the_delay_its_times_show() {
    let timing = |scheduled: &str, latest: Option<&str>, delay: Value| {
        json!({"scheduled": scheduled, "latest": latest, "delay_minutes": delay,
            "terminal": null, "gate": null})
    };
    let status = |departure: Value| {
        json!({"flights": [{"carrier_code": "AA", "flight_number": "792",
            "scheduled_departure_date": "2026-12-06",
            "points": [{"airport": "MUC", "departure": departure, "arrival": null}]}]})
    };
    let read = |departure: Value| match output_from_json("get_flight_status", status(departure)) {
        Ok(ToolOutput::GetFlightStatus(o)) => o,
        other => panic!("{other:?}"),
    };
    let delay = |departure: Value| {
        read(departure).flights[0].points[0]
            .departure
            .as_ref()
            .and_then(|d| d.delay_minutes)
    };

    let late = read(timing(
        "2026-12-06T07:25:00Z",
        Some("2026-12-06T07:55:00Z"),
        Value::Null,
    ));
    assert_eq!(
        late.flights[0].points[0]
            .departure
            .as_ref()
            .and_then(|d| d.delay_minutes),
        Some(30)
    );
    assert_eq!(
        get_flight_status::content(&late),
        "AA 792 on 2026-12-06: departs MUC 2026-12-06T07:55:00Z (delayed 30 min, scheduled 2026-12-06T07:25:00Z)."
    );

    let at = |latest: &str| delay(timing("2026-12-06T07:25:00Z", Some(latest), Value::Null));
    assert_eq!(
        at("2026-12-06T07:26:29Z"),
        Some(1),
        "rounded to whole minutes"
    );
    assert_eq!(at("2026-12-06T07:26:30Z"), Some(2));
    assert_eq!(
        at("2026-12-06T07:25:20Z"),
        None,
        "under half a minute is on time"
    );
    assert_eq!(at("2026-12-06T07:25:00Z"), None);
    assert_eq!(at("2026-12-06T07:10:00Z"), None, "early is no delay");
    assert_eq!(at("2026-12-06T09:25:00+01:00"), Some(60), "offsets count");
    assert_eq!(
        delay(timing(
            "2026-12-06T07:25+01:00",
            Some("2026-12-06T07:40+01:00"),
            Value::Null
        )),
        Some(15),
        "Amadeus's times without seconds"
    );
    assert_eq!(
        delay(timing("2026-12-06T07:25:00Z", None, Value::Null)),
        None
    );
    assert_eq!(
        delay(timing(
            "2026-12-06T07:25:00Z",
            Some("2026-12-06T07:55:00Z"),
            json!(12)
        )),
        Some(12),
        "the provider's own delay stands"
    );
}

fn hotel(
    id: &str,
    amount: &str,
    currency: &str,
    review: Option<f64>,
) -> search_hotels::HotelResult {
    search_hotels::HotelResult {
        hotel_result_id: id.into(),
        hotel_id: None,
        name: format!("Hotel {id}"),
        address: "Paris, FR".into(),
        rating: None,
        review_score: review,
        cheapest_total_amount: amount.into(),
        currency: currency.into(),
        latitude: None,
        longitude: None,
        bookable: !id.starts_with("amh_"),
    }
}

fn hotels(shown: Vec<search_hotels::HotelResult>, total: u32) -> search_hotels::Output {
    search_hotels::Output {
        check_in_date: "2026-12-26".into(),
        check_out_date: "2026-12-28".into(),
        searched_near: "Paris (PAR)".into(),
        hotels: shown,
        total_hotels: total,
        currencies: Vec::new(),
    }
}

/// The result holds only the hotels shown, so "best reviewed" says it compared those alone: a
/// better-reviewed one may be among the hotels cut.
#[test]
fn best_reviewed_says_it_is_of_the_hotels_shown_when_some_were_cut() {
    let shown = vec![
        hotel("a", "370.03", "EUR", Some(7.4)),
        hotel("b", "496.96", "EUR", Some(7.8)),
    ];
    let text = search_hotels::content(&hotels(shown.clone(), 7));
    assert!(
        text.contains(
            "7 hotels near Paris (PAR) for 2026-12-26→2026-12-28 (showing the 2 cheapest)"
        ),
        "{text}"
    );
    assert!(
        text.contains(", best reviewed of the 2 shown Hotel b (7.8/10, 496.96 EUR)."),
        "{text}"
    );
    let all = search_hotels::content(&hotels(shown, 2));
    assert!(
        all.contains(", best reviewed Hotel b (7.8/10, 496.96 EUR)."),
        "{all}"
    );
}

/// Prices in several currencies are never compared by their bare numbers (the gateway has no
/// exchange rates): the most used currency is ranked first, cheapest first, then each other, so
/// the cut and "cheapest" never pick a smaller number in another currency.
#[test]
fn hotels_in_several_currencies_are_ranked_within_each_currency() {
    let mut found = vec![
        hotel("station", "146.11", "GBP", Some(7.3)),
        hotel("lodge", "158.11", "EUR", Some(7.3)),
        hotel("riverside", "615.61", "GBP", Some(8.4)),
        hotel("observatory", "99.68", "EUR", Some(7.3)),
        hotel("meridian", "230.46", "GBP", Some(8.1)),
    ];
    let kept = keep_cheapest(&mut found, search_hotels::HotelResult::price, Some(4));
    assert_eq!(
        kept,
        Kept {
            total: 5,
            currencies: vec!["GBP".into(), "EUR".into()]
        }
    );
    let order: Vec<&str> = found.iter().map(|h| h.hotel_result_id.as_str()).collect();
    assert_eq!(order, ["station", "meridian", "riverside", "observatory"]);

    let out = search_hotels::Output {
        currencies: kept.currencies,
        ..hotels(found, kept.total)
    };
    let text = search_hotels::content(&out);
    assert!(
        text.starts_with("5 hotels near Paris (PAR) for 2026-12-26→2026-12-28 (showing 4, cheapest first within each currency), cheapest GBP price 146.11 GBP for the stay (Hotel station, Paris, FR)"),
        "{text}"
    );
    assert!(
        text.contains(" Prices are in GBP and EUR, which this gateway does not convert or compare: results are ranked cheapest first within each currency, GBP first, and \"cheapest\" means the cheapest in GBP; do not compare prices across currencies."),
        "{text}"
    );
    assert!(!text.contains("cheapest 99.68"), "{text}");

    // One currency: the text is as it always was.
    let mut one = vec![
        hotel("b", "200.00", "EUR", None),
        hotel("a", "100.00", "EUR", None),
    ];
    let kept = keep_cheapest(&mut one, search_hotels::HotelResult::price, None);
    let text = search_hotels::content(&search_hotels::Output {
        currencies: kept.currencies,
        ..hotels(one, kept.total)
    });
    assert!(text.starts_with("2 hotels near Paris (PAR) for 2026-12-26→2026-12-28, cheapest 100.00 EUR for the stay (Hotel a"), "{text}");
    assert!(!text.contains("currenc"), "{text}");
}

fn priced(offer: search_flights::FlightOffer) -> price_flight_offer::Output {
    price_flight_offer::Output {
        offer,
        base_amount: Some("557.27".into()),
        tax_amount: Some("138.41".into()),
        passengers: vec![price_flight_offer::OfferPassenger {
            passenger_id: "1".into(),
            passenger_type: "adult".into(),
            age: None,
        }],
        price_guarantee_expires_at: None,
        requires_instant_payment: false,
    }
}

fn availability(rate_id: &str, bookable: bool) -> check_hotel_availability::Output {
    check_hotel_availability::Output {
        hotel_result_id: rate_id.into(),
        hotel_name: "The Meridian House Paris".into(),
        check_in_date: "2026-12-26".into(),
        check_out_date: "2026-12-28".into(),
        available: true,
        rooms: vec![check_hotel_availability::Room {
            name: "Superior King Room".into(),
            rates: vec![check_hotel_availability::Rate {
                rate_id: rate_id.into(),
                total_amount: "326.46".into(),
                currency: "EUR".into(),
                board_type: Some("room_only".into()),
                payment_type: Some("pay_now".into()),
                quantity_available: None,
                free_cancellation_until: None,
                bookable,
            }],
        }],
    }
}

/// An offer or rate from a provider this gateway does not book through (Amadeus) is described
/// as a price for comparison, never as bookable: book_flight and book_hotel refuse it, and the
/// text says what to do instead. A bookable one reads as it always did.
#[test]
fn offers_and_rates_the_gateway_cannot_book_are_never_called_bookable() {
    let amadeus = priced(offer(
        "amx_643cb7574d4cd8fa",
        "695.68",
        630,
        &["EI731", "EI311"],
    ));
    let text = price_flight_offer::content(&amadeus);
    assert!(
        text.starts_with("Offer amx_643cb7574d4cd8fa is priced at 695.68 EUR for 1 passenger"),
        "{text}"
    );
    assert!(
        text.ends_with("It was priced by a provider this gateway does not book through, for comparison only: book_flight cannot book it. Do not tell the traveller it can be booked; to book, call search_flights again later and book an offer whose bookable is true."),
        "{text}"
    );
    assert!(
        !text.contains("bookable now") && !text.contains("Quote this price"),
        "{text}"
    );
    let duffel = price_flight_offer::content(&priced(offer("off_1", "695.68", 630, &["BA117"])));
    assert!(
        duffel.starts_with("Offer off_1 is bookable now at 695.68 EUR"),
        "{duffel}"
    );
    assert!(
        duffel.ends_with("Quote this price, not the search price."),
        "{duffel}"
    );

    let searched = search_flights::Output {
        origin: "JFK".into(),
        destination: "LHR".into(),
        departure_date: "2026-12-26".into(),
        offers: vec![offer("amx_1", "730.97", 630, &["EI731", "EI311"])],
        total_offers: 1,
        currencies: vec!["EUR".into()],
    };
    let text = search_flights::content(&searched);
    assert!(
        text.contains("These offers were priced by a provider this gateway does not book through, for comparison only: book_flight cannot book them"),
        "{text}"
    );
    assert!(!text.contains("before booking"), "{text}");

    let text = check_hotel_availability::content(&availability("amh_XLCHWJ1WE3", false));
    assert!(
        text.starts_with("The Meridian House Paris has 1 available rate for 2026-12-26→2026-12-28, from 326.46 EUR"),
        "{text}"
    );
    assert!(
        text.ends_with("These rates were priced by a provider this gateway does not book through, for comparison only: book_hotel cannot book them, so do not offer to book one; to book, call search_hotels again later and check a hotel whose bookable is true."),
        "{text}"
    );
    assert!(!text.contains("book soon"), "{text}");
    let text = check_hotel_availability::content(&availability("rat_1", true));
    assert!(
        text.ends_with("Rates can sell out; book soon or check again before promising."),
        "{text}"
    );

    let text = search_hotels::content(&hotels(vec![hotel("amh_1", "326.46", "EUR", None)], 1));
    assert!(
        text.contains("These hotels were priced by a provider this gateway does not book through, for comparison only: book_hotel cannot book their rates"),
        "{text}"
    );
}
