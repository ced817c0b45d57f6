//! Duffel Stays routes over real HTTP: search, fetch all rates, validation.

use serde_json::{Value, json};

use super::{date_in, is_2dp, minor, start, stays_body};

#[tokio::test]
async fn stays_search_and_rates() {
    let h = start(21).await;
    let r = h.post("/stays/search", stays_body(48.8566, 2.3522)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body["data"]["created_at"].is_string());
    let results = r.body["data"]["results"]
        .as_array()
        .expect("results")
        .clone();
    assert!((5..=12).contains(&results.len()));
    let mut unavailable = 0;
    for res in &results {
        assert!(res["id"].as_str().expect("id").starts_with("srr_"));
        assert_eq!(res["cheapest_rate_currency"], "EUR");
        assert!(is_2dp(&res["cheapest_rate_total_amount"]));
        let acc = &res["accommodation"];
        assert!(acc["id"].as_str().expect("acc").starts_with("acc_"));
        assert_eq!(acc["location"]["address"]["city_name"], "Paris");
        assert_eq!(acc["location"]["address"]["country_code"], "FR");
        assert!((2..=5).contains(&acc["rating"].as_u64().expect("rating")));
        assert_eq!(acc["rooms"], json!([]));
        let path = format!(
            "/stays/search_results/{}/actions/fetch_all_rates",
            res["id"].as_str().expect("id")
        );
        let full = h.post(&path, json!({})).await;
        assert_eq!(full.status, 200);
        let rooms = full.body["data"]["accommodation"]["rooms"]
            .as_array()
            .expect("rooms")
            .clone();
        let rates: Vec<&Value> = rooms
            .iter()
            .flat_map(|r| r["rates"].as_array().into_iter().flatten())
            .collect();
        if rates.iter().all(|r| r["quantity_available"] == 0) {
            unavailable += 1;
            continue;
        }
        let cheapest = rates
            .iter()
            .map(|r| minor(&r["total_amount"]))
            .min()
            .expect("a rate");
        assert_eq!(cheapest, minor(&res["cheapest_rate_total_amount"]));
        for rate in rates {
            assert!(rate["id"].as_str().expect("rate id").starts_with("rat_"));
            let parts = minor(&rate["base_amount"])
                + minor(&rate["tax_amount"])
                + minor(&rate["fee_amount"]);
            assert_eq!(minor(&rate["total_amount"]), parts);
            assert!(rate["board_type"].is_string() && rate["payment_type"].is_string());
            assert!(rate["cancellation_timeline"].is_array());
        }
    }
    assert!(
        unavailable >= 1,
        "every search has a result without availability"
    );

    let ids: Vec<Value> = results
        .iter()
        .map(|r| r["accommodation"]["id"].clone())
        .collect();
    let mut body = stays_body(0.0, 0.0);
    body["data"]
        .as_object_mut()
        .expect("obj")
        .remove("location");
    body["data"]["accommodation"] = json!({ "ids": ids });
    let again = h.post("/stays/search", body).await;
    assert_eq!(again.status, 200, "{}", again.body);
    let names = |v: &Value| -> Vec<Value> {
        v.as_array()
            .expect("arr")
            .iter()
            .map(|r| r["accommodation"]["name"].clone())
            .collect()
    };
    assert_eq!(
        names(&again.body["data"]["results"]),
        names(&Value::Array(results))
    );

    let r = h
        .post(
            "/stays/search_results/srr_0000unknown/actions/fetch_all_rates",
            json!({}),
        )
        .await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn stays_validation() {
    let h = start(2).await;
    let mut both = stays_body(51.5, -0.12);
    both["data"]["accommodation"] = json!({ "ids": ["acc_0000bogus"] });
    let mut reversed = stays_body(51.5, -0.12);
    reversed["data"]["check_out_date"] = json!(date_in(19));
    let mut long = stays_body(51.5, -0.12);
    long["data"]["check_out_date"] = json!(date_in(130));
    let mut far = stays_body(51.5, -0.12);
    far["data"]["check_in_date"] = json!(date_in(340));
    far["data"]["check_out_date"] = json!(date_in(342));
    let mut past = stays_body(51.5, -0.12);
    past["data"]["check_in_date"] = json!(date_in(-1));
    let mut neither = stays_body(51.5, -0.12);
    neither["data"]
        .as_object_mut()
        .expect("obj")
        .remove("location");
    let mut bad_lat = stays_body(151.5, -0.12);
    bad_lat["data"]["guests"] = json!([{ "type": "child", "age": 5 }]);
    let cases = [
        (both, "/location"),
        (reversed, "/check_out_date"),
        (long, "/check_out_date"),
        (far, "/check_in_date"),
        (past, "/check_in_date"),
        (neither, "/location"),
        (bad_lat, "/location/geographic_coordinates/latitude"),
    ];
    for (body, pointer) in cases {
        let r = h.post("/stays/search", body).await;
        assert_eq!(r.status, 422, "{pointer}: {}", r.body);
        let pointers: Vec<&str> = r.body["errors"]
            .as_array()
            .expect("errors")
            .iter()
            .filter_map(|e| e["source"]["pointer"].as_str())
            .collect();
        assert!(pointers.contains(&pointer), "{pointer} not in {pointers:?}");
    }
}

/// The first rate with rooms left at any hotel near Paris: (rate, its hotel's name).
async fn bookable_rate(h: &super::Harness) -> (Value, Value) {
    let r = h.post("/stays/search", stays_body(48.8566, 2.3522)).await;
    for res in r.body["data"]["results"].as_array().expect("results") {
        let path = format!(
            "/stays/search_results/{}/actions/fetch_all_rates",
            res["id"].as_str().expect("id")
        );
        let full = h.post(&path, json!({})).await;
        let acc = &full.body["data"]["accommodation"];
        for room in acc["rooms"].as_array().into_iter().flatten() {
            for rate in room["rates"].as_array().into_iter().flatten() {
                if rate["quantity_available"] != 0 {
                    return (rate.clone(), acc["name"].clone());
                }
            }
        }
    }
    panic!("no bookable rate");
}

fn stays_booking(quote: &Value, key: &str) -> Value {
    json!({"data": {"quote_id": quote, "email": "ana@example.com", "phone_number": "+34600000000",
                    "guests": [{"given_name": "Ana", "family_name": "Garcia"}],
                    "metadata": {"faregate_idempotency_key": key}}})
}

#[tokio::test]
async fn a_quoted_rate_is_booked_once_per_key_and_listed() {
    let h = start(22).await;
    let (rate, hotel) = bookable_rate(&h).await;
    let q = h
        .post("/stays/quotes", json!({"data": {"rate_id": rate["id"]}}))
        .await;
    assert_eq!(q.status, 201, "{}", q.body);
    let quote = &q.body["data"];
    assert!(quote["id"].as_str().expect("id").starts_with("quo_"));
    assert_eq!(
        quote["total_amount"], rate["total_amount"],
        "priced as the rate"
    );
    assert_eq!(quote["total_currency"], rate["total_currency"]);
    assert_eq!(quote["accommodation"]["name"], hotel);

    let b = h
        .post("/stays/bookings", stays_booking(&quote["id"], "k1"))
        .await;
    assert_eq!(b.status, 201, "{}", b.body);
    let booking = &b.body["data"];
    assert!(booking["id"].as_str().expect("id").starts_with("bok_"));
    assert_eq!(booking["status"], "confirmed");
    assert_eq!(booking["reference"].as_str().map(str::len), Some(8));
    assert_eq!(booking["metadata"]["faregate_idempotency_key"], "k1");
    assert_eq!(
        booking["accommodation"]["rooms"][0]["rates"][0]["id"], rate["id"],
        "the booking carries the rate booked"
    );

    // The same key again, or the same quote again: a duplicate, nothing new booked.
    let again = h
        .post("/stays/bookings", stays_booking(&quote["id"], "k1"))
        .await;
    assert_eq!(again.status, 422);
    assert_eq!(again.body["errors"][0]["code"], "duplicate_booking");
    let other_key = h
        .post("/stays/bookings", stays_booking(&quote["id"], "k2"))
        .await;
    assert_eq!(other_key.body["errors"][0]["code"], "duplicate_booking");
    let stats = h.sim.stats();
    assert_eq!(stats.stays_bookings_created, 1);
    assert_eq!(stats.stays_bookings_by_idempotency_key["k1"].orders, 1);
    assert_eq!(
        stats.stays_bookings_by_idempotency_key["k1"].duplicates_rejected,
        1
    );

    let listed = h.get("/stays/bookings?limit=1").await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(listed.body["data"][0]["id"], booking["id"]);
    assert!(
        listed.body["meta"]["after"].is_null(),
        "one booking, one page"
    );

    // Unknown rates and quotes, and a body without guests, are refused.
    let unknown = h
        .post("/stays/quotes", json!({"data": {"rate_id": "rat_nope"}}))
        .await;
    assert_eq!(unknown.status, 404);
    let no_quote = h
        .post("/stays/bookings", stays_booking(&json!("quo_nope"), "k3"))
        .await;
    assert_eq!(no_quote.status, 404);
    let no_guests = h
        .post(
            "/stays/bookings",
            json!({"data": {"quote_id": quote["id"], "guests": [], "email": "ana@example.com",
                            "phone_number": "+34600000000"}}),
        )
        .await;
    assert_eq!(no_guests.status, 422, "{}", no_guests.body);
}
