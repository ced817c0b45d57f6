//! The Amadeus routes: token issue and checks, flight offers (GET, POST) and pricing, hotel
//! list → offers → offer by id, flight status, and faults in Amadeus's shape.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::{Harness, Reply, date_in, start};
use crate::{Fault, RouteGroup};

impl Harness {
    /// A fresh access token from the simulated token endpoint.
    async fn amadeus_token(&self) -> String {
        let r = self
            .send(
                self.client
                    .post(self.url("/v1/security/oauth2/token"))
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body("grant_type=client_credentials&client_id=KEY&client_secret=SECRET"),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        r.body["access_token"].as_str().expect("token").to_string()
    }

    async fn amadeus(&self, method: Method, path: &str, token: &str, body: Option<Value>) -> Reply {
        let mut rb = self
            .client
            .request(method.clone(), self.url(path))
            .bearer_auth(token)
            .header("accept", "application/json, application/vnd.amadeus+json");
        if let Some(b) = body {
            rb = rb
                .header("content-type", "application/vnd.amadeus+json")
                .header("x-http-method-override", "GET")
                .body(b.to_string());
        }
        self.send(rb).await
    }
}

fn code(r: &Reply) -> Value {
    r.body["errors"][0]["code"].clone()
}

#[tokio::test]
async fn tokens_are_issued_and_checked() {
    let h = start(3).await;
    let r = h
        .send(
            h.client
                .post(h.url("/v1/security/oauth2/token"))
                .body("grant_type=password"),
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.body["error"], "unsupported_grant_type");
    assert_eq!(r.body["code"], 38187);
    let r = h
        .send(
            h.client
                .post(h.url("/v1/security/oauth2/token"))
                .body("grant_type=client_credentials"),
        )
        .await;
    assert_eq!(r.status, 401);
    assert_eq!(r.body["error"], "invalid_client");

    let r = h
        .send(
            h.client
                .post(h.url("/v1/security/oauth2/token"))
                .body("grant_type=client_credentials&client_id=KEY&client_secret=SECRET"),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "application/json");
    assert_eq!(r.body["token_type"], "Bearer");
    assert_eq!(r.body["expires_in"], 1799);
    assert_eq!(r.body["client_id"], "KEY");
    let token = r.body["access_token"].as_str().expect("token").to_string();
    assert_eq!(h.sim.stats().amadeus_tokens_issued, 1);

    let path = format!(
        "/v2/schedule/flights?carrierCode=IB&flightNumber=3166&scheduledDepartureDate={}",
        date_in(3)
    );
    let r = h.send(h.client.get(h.url(&path))).await;
    assert_eq!(r.status, 401);
    assert_eq!(
        code(&r),
        "38191",
        "string codes, as in Amadeus's documented 401 example"
    );
    assert_eq!(r.body["errors"][0]["status"], "401");
    let r = h.amadeus(Method::GET, &path, "not-issued", None).await;
    assert_eq!(r.status, 401);
    assert_eq!(code(&r), 38190);
    let r = h.amadeus(Method::GET, &path, &token, None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.headers["content-type"], "application/vnd.amadeus+json");
    assert!(
        !r.headers.contains_key("ratelimit-limit"),
        "none documented"
    );

    h.sim.set_amadeus_token_lifetime(Duration::ZERO);
    let short = h.amadeus_token().await;
    let r = h.amadeus(Method::GET, &path, &short, None).await;
    assert_eq!(code(&r), 38192, "expired");
    h.sim.revoke_amadeus_tokens();
    let r = h.amadeus(Method::GET, &path, &token, None).await;
    assert_eq!(code(&r), 38190, "revoked tokens are unknown");
}

#[tokio::test]
async fn flight_offers_by_get_and_post_are_documented_shapes_and_price_only_as_served() {
    let h = start(5).await;
    let token = h.amadeus_token().await;
    let get = format!(
        "/v2/shopping/flight-offers?originLocationCode=MAD&destinationLocationCode=LON&departureDate={}&adults=1&max=5",
        date_in(30)
    );
    let r = h.amadeus(Method::GET, &get, &token, None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let offers = r.body["data"].as_array().cloned().unwrap_or_default();
    assert!(!offers.is_empty() && offers.len() <= 5);
    assert_eq!(r.body["meta"]["count"], offers.len());
    let o = &offers[0];
    assert_eq!(o["type"], "flight-offer");
    assert_eq!(o["id"], "1");
    let seg = &o["itineraries"][0]["segments"][0];
    assert_eq!(seg["departure"]["iataCode"], "MAD");
    assert!(seg["number"].is_string() && seg["carrierCode"].is_string());
    assert!(o["price"]["grandTotal"].is_string());
    let carrier = seg["carrierCode"].as_str().expect("carrier");
    assert!(r.body["dictionaries"]["carriers"][carrier].is_string());
    // The same search gives the same offers.
    let again = h.amadeus(Method::GET, &get, &token, None).await;
    assert_eq!(again.body["data"], r.body["data"]);

    let post = json!({
        "originDestinations": [ { "id": "1", "originLocationCode": "MAD", "destinationLocationCode": "LON",
                                  "departureDateTimeRange": { "date": date_in(30) } } ],
        "travelers": [ { "id": "1", "travelerType": "ADULT" }, { "id": "2", "travelerType": "CHILD" } ],
        "sources": ["GDS"],
        "searchCriteria": { "maxFlightOffers": 3,
            "flightFilters": { "cabinRestrictions": [ { "cabin": "BUSINESS", "coverage": "MOST_SEGMENTS", "originDestinationIds": ["1"] } ] } },
    });
    let r = h
        .amadeus(
            Method::POST,
            "/v2/shopping/flight-offers",
            &token,
            Some(post.clone()),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let offer = r.body["data"][0].clone();
    assert_eq!(offer["travelerPricings"][1]["travelerType"], "CHILD");
    assert_eq!(
        offer["travelerPricings"][0]["fareDetailsBySegment"][0]["cabin"],
        "BUSINESS"
    );
    let no_override = h
        .send(
            h.client
                .post(h.url("/v2/shopping/flight-offers"))
                .bearer_auth(&token)
                .json(&post),
        )
        .await;
    assert_eq!(
        no_override.status, 400,
        "X-HTTP-Method-Override is required"
    );

    let body = json!({ "data": { "type": "flight-offers-pricing", "flightOffers": [offer] } });
    let r = h
        .amadeus(
            Method::POST,
            "/v1/shopping/flight-offers/pricing",
            &token,
            Some(body),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let priced = &r.body["data"]["flightOffers"][0];
    assert_eq!(priced["price"]["grandTotal"], offer["price"]["grandTotal"]);
    assert_eq!(priced["price"]["fees"].as_array().map(Vec::len), Some(3));
    assert!(r.body["data"]["bookingRequirements"].is_object());

    let mut changed = offer.clone();
    changed["price"]["grandTotal"] = json!("1.00");
    let body = json!({ "data": { "type": "flight-offers-pricing", "flightOffers": [changed] } });
    let r = h
        .amadeus(
            Method::POST,
            "/v1/shopping/flight-offers/pricing",
            &token,
            Some(body),
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(code(&r), 4926);
    assert_eq!(
        r.body["errors"][0]["source"]["pointer"],
        "/data/flightOffers[0]"
    );

    let bad = "/v2/shopping/flight-offers?originLocationCode=MAD&destinationLocationCode=LON&departureDate=02-11-2026&adults=1";
    let r = h.amadeus(Method::GET, bad, &token, None).await;
    assert_eq!(r.status, 400);
    assert_eq!(code(&r), 477);
    assert_eq!(r.body["errors"][0]["source"]["parameter"], "departureDate");
}

#[tokio::test]
async fn hotels_list_then_offers_then_one_offer() {
    let h = start(9).await;
    let token = h.amadeus_token().await;
    let r = h
        .amadeus(
            Method::GET,
            "/v1/reference-data/locations/hotels/by-city?cityCode=PAR&radius=5&radiusUnit=KM",
            &token,
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let hotels = r.body["data"].as_array().cloned().unwrap_or_default();
    assert!(hotels.len() >= 5);
    assert!(hotels[0]["dupeId"].is_u64(), "an integer in Hotel List");
    let ids: Vec<&str> = hotels
        .iter()
        .filter_map(|h| h["hotelId"].as_str())
        .collect();
    assert!(
        ids.iter().all(|id| id.len() == 8 && id.contains("PAR")),
        "{ids:?}"
    );

    let path = format!(
        "/v3/shopping/hotel-offers?hotelIds={}&adults=2&checkInDate={}&checkOutDate={}",
        ids.join(","),
        date_in(20),
        date_in(22)
    );
    let r = h.amadeus(Method::GET, &path, &token, None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let data = r.body["data"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        data.len(),
        ids.len(),
        "data is an array, one entry per hotel"
    );
    assert!(
        data[0]["hotel"]["dupeId"].is_string(),
        "a string in Hotel Search"
    );
    let with_offer: Vec<&Value> = data.iter().filter(|d| d["available"] == true).collect();
    assert!(!with_offer.is_empty());
    let offer = &with_offer[0]["offers"][0];
    assert!(offer["price"]["total"].is_string());
    assert_eq!(offer["checkInDate"], date_in(20).as_str());

    let mut checked = 0;
    for d in &with_offer {
        let id = d["offers"][0]["id"].as_str().expect("offer id");
        let r = h
            .amadeus(
                Method::GET,
                &format!("/v3/shopping/hotel-offers/{id}"),
                &token,
                None,
            )
            .await;
        match r.status {
            200 => {
                assert!(r.body["data"].is_object(), "one object by id");
                assert_eq!(r.body["data"]["offers"][0]["id"], id);
                checked += 1;
            }
            400 => assert_eq!(code(&r), 3664, "sold out since the search"),
            s => panic!("unexpected {s}: {}", r.body),
        }
    }
    assert!(checked > 0);
    let r = h
        .amadeus(
            Method::GET,
            "/v3/shopping/hotel-offers/NOSUCHOFFER",
            &token,
            None,
        )
        .await;
    assert_eq!(r.status, 404);

    let r = h
        .amadeus(
            Method::GET,
            "/v1/reference-data/locations/hotels/by-city?cityCode=QQQ",
            &token,
            None,
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(code(&r), 895);
    let r = h
        .amadeus(
            Method::GET,
            "/v1/reference-data/locations/hotels/by-geocode?latitude=51.5&longitude=-0.12&radius=3",
            &token,
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body["data"][0]["hotelId"]
            .as_str()
            .is_some_and(|id| id.contains("LON"))
    );
}

#[tokio::test]
async fn flight_status_is_deterministic_and_unknown_carriers_are_empty() {
    let h = start(11).await;
    let token = h.amadeus_token().await;
    let path = format!(
        "/v2/schedule/flights?carrierCode=IB&flightNumber=3167&scheduledDepartureDate={}",
        date_in(2)
    );
    let r = h.amadeus(Method::GET, &path, &token, None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let f = &r.body["data"][0];
    assert_eq!(f["type"], "DatedFlight");
    assert_eq!(f["flightDesignator"]["flightNumber"], 3167, "an integer");
    assert_eq!(
        f["flightPoints"][0]["iataCode"], "MAD",
        "odd numbers leave the hub"
    );
    let std = f["flightPoints"][0]["departure"]["timings"][0].clone();
    assert_eq!(std["qualifier"], "STD");
    let value = std["value"].as_str().expect("time");
    assert_eq!(value.len(), "2026-11-02T08:15+01:00".len(), "{value}");
    assert_eq!(
        f["flightPoints"][1]["arrival"]["timings"][0]["qualifier"],
        "STA"
    );
    let again = h.amadeus(Method::GET, &path, &token, None).await;
    assert_eq!(again.body, r.body);

    let unknown = format!(
        "/v2/schedule/flights?carrierCode=ZZ&flightNumber=1&scheduledDepartureDate={}",
        date_in(2)
    );
    let r = h.amadeus(Method::GET, &unknown, &token, None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["data"], json!([]));
    assert_eq!(r.body["meta"]["count"], 0);
    let r = h
        .amadeus(
            Method::GET,
            "/v2/schedule/flights?carrierCode=IB",
            &token,
            None,
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(code(&r), 32171);
}

#[tokio::test]
async fn faults_answer_in_amadeus_shapes() {
    let h = start(13).await;
    let token = h.amadeus_token().await;
    let path = format!(
        "/v2/schedule/flights?carrierCode=IB&flightNumber=1&scheduledDepartureDate={}",
        date_in(2)
    );
    h.sim.set_fault(
        RouteGroup::AmadeusStatus,
        Fault {
            outage: true,
            ..Fault::default()
        },
    );
    let r = h.amadeus(Method::GET, &path, &token, None).await;
    assert_eq!(r.status, 503);
    assert_eq!(code(&r), 38189);
    assert_eq!(r.headers["content-type"], "application/vnd.amadeus+json");

    h.sim.set_fault(
        RouteGroup::AmadeusStatus,
        Fault {
            quota_exhausted: true,
            ..Fault::default()
        },
    );
    let r = h.amadeus(Method::GET, &path, &token, None).await;
    assert_eq!(r.status, 429);
    assert_eq!(code(&r), 38195);
    assert!(!r.headers.contains_key("retry-after"));

    h.sim.set_fault(
        RouteGroup::AmadeusStatus,
        Fault {
            rate_limited: Some(crate::RateLimitFault { retry_after_s: 7 }),
            ..Fault::default()
        },
    );
    let r = h.amadeus(Method::GET, &path, &token, None).await;
    assert_eq!(r.status, 429);
    assert_eq!(code(&r), 38194);
    assert_eq!(r.headers["retry-after"], "7");

    h.sim.set_fault(
        RouteGroup::AmadeusAuth,
        Fault {
            malformed: true,
            ..Fault::default()
        },
    );
    let r = h
        .send(
            h.client
                .post(h.url("/v1/security/oauth2/token"))
                .body("grant_type=client_credentials&client_id=a&client_secret=b"),
        )
        .await;
    assert_eq!(r.status, 200);
    assert!(
        r.body.get("access_token").is_none(),
        "malformed: {}",
        r.body
    );
    // Duffel groups ignore the Amadeus-only fault.
    h.sim.set_fault(
        RouteGroup::DuffelStays,
        Fault {
            quota_exhausted: true,
            ..Fault::default()
        },
    );
    let r = h
        .post("/stays/search", super::stays_body(48.85, 2.35))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
}
