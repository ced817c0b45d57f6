//! Duffel Air routes over real HTTP: offer requests, offers, orders.

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{Value, json};

use super::{date_in, first_error, is_2dp, local, minor, search_body, start};

#[tokio::test]
async fn offer_request_returns_documented_shape() {
    let h = start(7).await;
    let body = json!({ "data": { "slices": [{ "origin": "LHR", "destination": "JFK", "departure_date": date_in(40) }],
                                 "passengers": [{ "type": "adult" }, { "age": 9 }], "cabin_class": "economy", "max_connections": 1 } });
    let rb = h
        .duffel(
            reqwest::Method::POST,
            "/air/offer_requests?return_offers=true&supplier_timeout=10000",
        )
        .header("x-client-correlation-id", "corr-1")
        .json(&body);
    let r = h.send(rb).await;
    assert_eq!(r.headers["x-client-correlation-id"], "corr-1");
    assert_eq!(r.status, 201, "{}", r.body);
    for name in [
        "x-request-id",
        "ratelimit-limit",
        "ratelimit-remaining",
        "ratelimit-reset",
    ] {
        assert!(r.headers.contains_key(name), "missing {name}");
    }
    let reset = r.headers["ratelimit-reset"].to_str().expect("ascii");
    assert!(
        httpdate::parse_http_date(reset).is_ok(),
        "reset is an HTTP-date: {reset}"
    );
    let d = &r.body["data"];
    assert!(d["id"].as_str().expect("id").starts_with("orq_"));
    assert_eq!(d["live_mode"], false);
    assert_eq!(d["slices"][0]["origin"]["iata_code"], "LHR");
    assert_eq!(d["slices"][0]["origin"]["time_zone"], "Europe/London");
    assert_eq!(d["slices"][0]["destination_type"], "airport");
    let pax = d["passengers"].as_array().expect("passengers");
    assert_eq!(pax.len(), 2);
    assert_eq!(pax[1]["type"], "child");
    assert_eq!(pax[1]["age"], 9);
    let offers = d["offers"].as_array().expect("offers");
    assert!((5..=15).contains(&offers.len()), "{} offers", offers.len());
    let now = Utc::now();
    for o in offers {
        assert!(o["id"].as_str().expect("id").starts_with("off_"));
        assert_eq!(o["total_currency"], "GBP");
        for k in ["total_amount", "base_amount", "tax_amount"] {
            assert!(is_2dp(&o[k]), "{k} = {}", o[k]);
        }
        assert_eq!(
            minor(&o["total_amount"]),
            minor(&o["base_amount"]) + minor(&o["tax_amount"])
        );
        let expires: DateTime<Utc> = o["expires_at"]
            .as_str()
            .expect("expires")
            .parse()
            .expect("rfc3339");
        assert!((expires - now - TimeDelta::minutes(30)).num_seconds().abs() < 10);
        assert!(
            o["owner"]["iata_code"]
                .as_str()
                .is_some_and(|c| c.len() == 2)
        );
        assert!(
            o["total_emissions_kg"]
                .as_str()
                .expect("co2")
                .parse::<u64>()
                .is_ok()
        );
        assert!(o["payment_requirements"]["requires_instant_payment"].is_boolean());
        assert_eq!(o["passengers"].as_array().map(Vec::len), Some(2));
        let slice = &o["slices"][0];
        assert!(slice["id"].as_str().expect("slice id").starts_with("sli_"));
        assert!(
            slice["duration"]
                .as_str()
                .expect("duration")
                .starts_with("PT")
        );
        let segs = slice["segments"].as_array().expect("segments");
        assert!((1..=2).contains(&segs.len()));
        assert_eq!(segs[0]["origin"]["iata_code"], "LHR");
        assert_eq!(segs[segs.len() - 1]["destination"]["iata_code"], "JFK");
        for (i, s) in segs.iter().enumerate() {
            assert!(s["id"].as_str().expect("seg id").starts_with("seg_"));
            assert!(s["duration"].as_str().expect("duration").starts_with("PT"));
            assert_eq!(s["passengers"].as_array().map(Vec::len), Some(2));
            assert!(
                s["passengers"][0]["passenger_id"]
                    .as_str()
                    .expect("pid")
                    .starts_with("pas_")
            );
            assert!(s["marketing_carrier_flight_number"].is_string());
            assert!(s["aircraft"]["iata_code"].is_string());
            if i > 0 {
                assert_eq!(
                    s["origin"]["iata_code"],
                    segs[i - 1]["destination"]["iata_code"]
                );
                assert!(
                    local(&s["departing_at"]) > local(&segs[i - 1]["arriving_at"]),
                    "connection after arrival"
                );
            }
        }
    }
}

#[tokio::test]
async fn segment_times_match_durations_across_time_zones() {
    let h = start(3).await;
    // LHR is UTC+0/+1 and JFK UTC-5/-4 on the same DST rule dates only part of the year; a
    // nonstop's local arrival minus local departure is its duration minus the zone difference.
    for o in h.search("LHR", "JFK").await {
        for s in o["slices"][0]["segments"].as_array().expect("segments") {
            let dur = s["duration"].as_str().expect("duration");
            let (hh, mm) = dur
                .trim_start_matches("PT")
                .trim_end_matches('M')
                .split_once('H')
                .expect("PTxxHyyM");
            let minutes: i64 = hh.parse::<i64>().expect("h") * 60 + mm.parse::<i64>().expect("m");
            let local_diff = (local(&s["arriving_at"]) - local(&s["departing_at"])).num_minutes();
            let zone_diff = local_diff - minutes;
            assert!(
                [-300, -240, -360, -180, 0, 60, -60].contains(&zone_diff),
                "zone diff {zone_diff} for {s}"
            );
        }
    }
}

#[tokio::test]
async fn max_connections_zero_gives_nonstop_only_and_city_codes_work() {
    let h = start(11).await;
    let body = json!({ "data": { "slices": [{ "origin": "LON", "destination": "NYC", "departure_date": date_in(15) }],
                                 "passengers": [{ "type": "adult" }], "max_connections": 0 } });
    let r = h.post("/air/offer_requests", body).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["data"]["slices"][0]["origin_type"], "city");
    assert!(
        r.body["data"]["slices"][0]["origin"]["airports"]
            .as_array()
            .is_some_and(|a| a.len() >= 2)
    );
    let offers = r.body["data"]["offers"].as_array().expect("offers");
    assert!(offers.len() >= 5);
    for o in offers {
        assert_eq!(
            o["slices"][0]["segments"].as_array().map(Vec::len),
            Some(1),
            "nonstop only"
        );
    }
}

#[tokio::test]
async fn return_offers_false_omits_offers() {
    let h = start(1).await;
    let r = h
        .post(
            "/air/offer_requests?return_offers=false",
            search_body("CDG", "FCO", 10),
        )
        .await;
    assert_eq!(r.status, 201);
    assert!(r.body["data"].get("offers").is_none());
}

#[tokio::test]
async fn same_request_gives_same_offers_except_ids_and_timestamps() {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for k in [
                    "id",
                    "created_at",
                    "updated_at",
                    "expires_at",
                    "price_guarantee_expires_at",
                    "payment_required_by",
                    "passenger_id",
                    "passenger_ids",
                    "segment_ids",
                ] {
                    m.remove(k);
                }
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let h = start(42).await;
    let mut a = Value::Array(h.search("MAD", "SFO").await);
    let mut b = Value::Array(h.search("MAD", "SFO").await);
    assert_ne!(a[0]["id"], b[0]["id"], "ids are fresh per search");
    strip(&mut a);
    strip(&mut b);
    assert_eq!(a, b);
    let other = start(43).await;
    let mut c = Value::Array(other.search("MAD", "SFO").await);
    strip(&mut c);
    assert_ne!(a, c, "another seed gives other offers");
}

#[tokio::test]
async fn header_errors_use_duffel_codes() {
    let h = start(1).await;
    let url = h.url("/air/offer_requests");
    let body = search_body("LHR", "CDG", 5);
    let cases = [
        (
            h.client.post(&url).header("Duffel-Version", "v2"),
            401,
            "authentication_error",
            "missing_authorization_header",
        ),
        (
            h.client
                .post(&url)
                .header("Authorization", "Bearer ")
                .header("Duffel-Version", "v2"),
            401,
            "authentication_error",
            "access_token_not_found",
        ),
        (
            h.client.post(&url).bearer_auth("t"),
            400,
            "invalid_request_error",
            "missing_version_header",
        ),
        (
            h.client
                .post(&url)
                .bearer_auth("t")
                .header("Duffel-Version", "v1"),
            400,
            "invalid_request_error",
            "unsupported_version",
        ),
    ];
    for (rb, status, kind, code) in cases {
        let r = h.send(rb.json(&body)).await;
        assert_eq!(r.status, status, "{}", r.body);
        assert_eq!(first_error(&r)["type"], kind);
        assert_eq!(first_error(&r)["code"], code);
        assert_eq!(r.body["meta"]["status"], status);
        assert_eq!(
            r.body["meta"]["request_id"],
            r.headers["x-request-id"].to_str().expect("ascii")
        );
        assert!(first_error(&r)["documentation_url"].is_string());
    }
    let r = h.get("/air/nothing-here").await;
    assert_eq!(r.status, 404);
    assert_eq!(
        r.body["meta"]["request_id"],
        r.headers["x-request-id"].to_str().expect("ascii")
    );
    assert_eq!(first_error(&r)["code"], "not_found");
}

#[tokio::test]
async fn search_validation_names_fields() {
    let h = start(1).await;
    let r = h.post("/air/offer_requests", json!({ "data": {} })).await;
    assert_eq!(r.status, 422);
    let pointers: Vec<&str> = r.body["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .filter_map(|e| e["source"]["pointer"].as_str())
        .collect();
    assert_eq!(pointers, ["/slices", "/passengers"]);
    assert_eq!(first_error(&r)["type"], "validation_error");
    assert_eq!(first_error(&r)["code"], "validation_required");
    assert_eq!(first_error(&r)["source"]["field"], "slices");

    let r = h
        .post("/air/offer_requests", search_body("XXX", "lhr", 5))
        .await;
    assert_eq!(r.status, 422);
    let errs = r.body["errors"].as_array().expect("errors");
    assert_eq!(errs.len(), 2);
    assert_eq!(errs[0]["code"], "invalid_airport");
    assert_eq!(errs[0]["source"]["pointer"], "/slices/0/origin");
    assert!(errs[0]["message"].as_str().expect("msg").contains("origin"));
    assert_eq!(errs[1]["source"]["field"], "destination");

    let r = h
        .post("/air/offer_requests", search_body("LHR", "CDG", -3))
        .await;
    assert_eq!(r.status, 422);
    assert_eq!(
        first_error(&r)["source"]["pointer"],
        "/slices/0/departure_date"
    );

    let body = json!({ "data": { "slices": [{ "origin": "LHR", "destination": "CDG", "departure_date": date_in(3) }],
                                 "passengers": [{ "type": "adult", "age": 30 }, { "age": 4 }], "max_connections": 5, "cabin_class": "luxury" } });
    let r = h.post("/air/offer_requests", body).await;
    let pointers: Vec<&str> = r.body["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .filter_map(|e| e["source"]["pointer"].as_str())
        .collect();
    assert_eq!(
        pointers,
        ["/passengers/0", "/cabin_class", "/max_connections"]
    );

    let r = h
        .post(
            "/air/offer_requests?supplier_timeout=100",
            search_body("LHR", "CDG", 3),
        )
        .await;
    assert_eq!(first_error(&r)["source"]["pointer"], "/supplier_timeout");

    let r = h
        .send(
            h.duffel(reqwest::Method::POST, "/air/offer_requests")
                .body("{not json"),
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(first_error(&r)["type"], "invalid_request_error");
}

#[tokio::test]
async fn get_offer_returns_it_with_services_404_unknown_422_expired() {
    let h = start(5).await;
    let offers = h.search("AMS", "BCN").await;
    let id = offers[0]["id"].as_str().expect("id");
    let r = h.get(&format!("/air/offers/{id}")).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["data"], offers[0]);
    let r = h
        .get(&format!("/air/offers/{id}?return_available_services=true"))
        .await;
    let services = r.body["data"]["available_services"]
        .as_array()
        .expect("services");
    assert!(!services.is_empty());
    assert!(services[0]["id"].as_str().expect("id").starts_with("ase_"));
    assert_eq!(services[0]["type"], "baggage");

    let r = h.get("/air/offers/off_0000nope").await;
    assert_eq!(r.status, 404);
    assert_eq!(first_error(&r)["code"], "not_found");

    let mut stale = crate::lock(&h.sim.inner.offers)
        .get(id)
        .cloned()
        .expect("stored");
    stale.expires_at = Utc::now() - TimeDelta::seconds(1);
    crate::lock(&h.sim.inner.offers).insert("off_0000expired".into(), stale);
    let r = h.get("/air/offers/off_0000expired").await;
    assert_eq!(r.status, 422);
    assert_eq!(first_error(&r)["type"], "invalid_state_error");
    assert_eq!(first_error(&r)["code"], "offer_no_longer_available");
}

fn order_body(offer: &Value, amount: &str, key: &str) -> Value {
    let pax: Vec<Value> = offer["passengers"]
        .as_array()
        .expect("pax")
        .iter()
        .map(|p| {
            json!({
        "id": p["id"], "title": "ms", "gender": "f", "given_name": "Ana", "family_name": "Garcia",
        "born_on": "1990-02-15", "email": "ana@example.com", "phone_number": "+34600000000" })
        })
        .collect();
    json!({ "data": { "type": "instant", "selected_offers": [offer["id"]], "passengers": pax,
                      "payments": [{ "type": "balance", "amount": amount, "currency": offer["total_currency"] }],
                      "metadata": { "faregate_idempotency_key": key } } })
}

#[tokio::test]
async fn orders_book_once_per_idempotency_key() {
    let h = start(9).await;
    let offers = h.search("LHR", "JFK").await;
    let (a, b) = (&offers[0], &offers[1]);
    let amount = a["total_amount"].as_str().expect("amount");
    let r = h.post("/air/orders", order_body(a, amount, "idem-1")).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let o = &r.body["data"];
    assert!(o["id"].as_str().expect("id").starts_with("ord_"));
    assert!(
        o["booking_reference"]
            .as_str()
            .is_some_and(|p| p.len() == 6 && p.bytes().all(|c| c.is_ascii_alphanumeric()))
    );
    assert_eq!(o["total_amount"], a["total_amount"]);
    assert_eq!(o["metadata"]["faregate_idempotency_key"], "idem-1");
    assert_eq!(o["payment_status"]["awaiting_payment"], false);
    assert_eq!(o["slices"], a["slices"]);
    assert!(
        o["available_actions"]
            .as_array()
            .is_some_and(|a| a.contains(&json!("cancel")))
    );
    assert_eq!(o["documents"][0]["type"], "electronic_ticket");

    // Same key, even for another offer: duplicate.
    let r = h
        .post(
            "/air/orders",
            order_body(b, b["total_amount"].as_str().expect("amt"), "idem-1"),
        )
        .await;
    assert_eq!(r.status, 422);
    assert_eq!(first_error(&r)["type"], "invalid_state_error");
    assert_eq!(first_error(&r)["code"], "duplicate_booking");
    assert_eq!(
        first_error(&r)["message"],
        "A booking with the same details was already found"
    );
    // Same offer, another key: also a duplicate.
    let r = h.post("/air/orders", order_body(a, amount, "idem-2")).await;
    assert_eq!(first_error(&r)["code"], "duplicate_booking");

    let stats = h.sim.stats();
    assert_eq!(stats.orders_created, 1);
    assert_eq!(stats.duplicate_bookings, 2);
    assert_eq!(stats.orders_by_idempotency_key["idem-1"].orders, 1);
    assert_eq!(
        stats.orders_by_idempotency_key["idem-1"].duplicates_rejected,
        1
    );
    assert_eq!(
        stats.orders_by_idempotency_key["idem-2"].duplicates_rejected,
        1
    );
}

#[tokio::test]
async fn orders_are_listed_newest_first_in_pages() {
    let h = start(10).await;
    let offers = h.search("LHR", "JFK").await;
    for (i, offer) in offers.iter().take(3).enumerate() {
        let amount = offer["total_amount"].as_str().expect("amount");
        let r = h
            .post(
                "/air/orders",
                order_body(offer, amount, &format!("list-{i}")),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let r = h.get("/air/orders?limit=2").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let keys = |r: &Value| -> Vec<String> {
        r["data"]
            .as_array()
            .expect("data")
            .iter()
            .map(|o| {
                o["metadata"]["faregate_idempotency_key"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            })
            .collect()
    };
    assert_eq!(keys(&r.body), ["list-2", "list-1"]);
    let after = r.body["meta"]["after"]
        .as_str()
        .expect("a next page")
        .to_string();
    let r = h.get(&format!("/air/orders?limit=2&after={after}")).await;
    assert_eq!(keys(&r.body), ["list-0"]);
    assert!(r.body["meta"]["after"].is_null(), "{}", r.body);
    assert_eq!(h.get("/air/orders?limit=500").await.status, 422);
    assert_eq!(h.get("/air/orders?after=nonsense").await.status, 422);
    let stats = h.sim.stats();
    assert_eq!(
        stats.groups[&crate::RouteGroup::DuffelAirOrderList].requests,
        4
    );
    assert_eq!(
        stats.groups[&crate::RouteGroup::DuffelAirOrders].requests,
        3
    );
}

#[tokio::test]
async fn order_validation_and_offer_state_errors() {
    let h = start(9).await;
    let offers = h.search("FRA", "ATH").await;
    let offer = &offers[0];
    let r = h.post("/air/orders", order_body(offer, "1.00", "k")).await;
    assert_eq!(r.status, 422);
    assert_eq!(first_error(&r)["source"]["pointer"], "/payments/0/amount");
    let msg = first_error(&r)["message"].as_str().expect("message");
    assert!(
        msg.contains("does not match")
            && msg.contains(offer["total_amount"].as_str().expect("amt")),
        "{msg}"
    );

    let mut body = order_body(offer, offer["total_amount"].as_str().expect("amt"), "k");
    body["data"]["passengers"][0]["id"] = json!("pas_0000stranger");
    let r = h.post("/air/orders", body).await;
    assert_eq!(first_error(&r)["source"]["pointer"], "/passengers/0/id");

    let mut body = order_body(offer, offer["total_amount"].as_str().expect("amt"), "k");
    body["data"]["selected_offers"] = json!(["off_0000unknown"]);
    let r = h.post("/air/orders", body).await;
    assert_eq!(r.status, 422);
    assert_eq!(first_error(&r)["code"], "offer_no_longer_available");

    let r = h.post("/air/orders", json!({ "data": { "type": "instant", "passengers": [{ "id": "pas_x", "email": "nope" }] } })).await;
    assert_eq!(r.status, 422);
    let pointers: Vec<&str> = r.body["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .filter_map(|e| e["source"]["pointer"].as_str())
        .collect();
    for p in [
        "/selected_offers",
        "/passengers/0/given_name",
        "/passengers/0/email",
        "/passengers/0/phone_number",
        "/payments",
    ] {
        assert!(pointers.contains(&p), "{p} not in {pointers:?}");
    }
    assert_eq!(h.sim.stats().orders_created, 0);
}
