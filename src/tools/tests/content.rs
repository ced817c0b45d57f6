//! The text a model reads of each tool's result, and the result around it: counts, cheapest and
//! fastest, delays, best reviewed, prices in several currencies, offers it cannot book.

use super::*;

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
