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
