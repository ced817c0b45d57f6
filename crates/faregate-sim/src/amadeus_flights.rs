//! Simulated Amadeus Flight Offers Search (GET and POST) and Flight Offers Price.
//!
//! Offers come from the same generator as the Duffel routes (`air_data`), rewritten into the
//! Amadeus FlightOffer shape: same carriers, flight numbers, local times and prices for the
//! same search. Every offer served is remembered (bounded) by a hash of its JSON, so pricing
//! accepts exactly the offers search returned, unchanged, and answers 400 4926 "INVALID DATA
//! RECEIVED" for anything else, as Amadeus's developer-guide FAQ describes.

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use chrono::{NaiveDate, Utc};
use serde_json::{Map, Value, json};

use super::air_data::{self, Cabin, PaxIn, PaxKind, PlaceRef, Search, SliceIn};
use super::amadeus_wire::{self as aw, AmadeusError, check_override, vnd_json};
use super::data::{fmt_minor, hash_str, parse_minor};
use super::store::KeptJson;
use super::tables;
use super::{Simulator, lock};

fn invalid(name: &str, detail: String) -> AmadeusError {
    AmadeusError::parameter(477, "INVALID FORMAT", name, detail)
}

fn place(name: &str, code: &str) -> Result<PlaceRef, AmadeusError> {
    PlaceRef::lookup(code).ok_or_else(|| {
        AmadeusError::parameter(
            4926,
            "INVALID DATA RECEIVED",
            name,
            format!("unknown location code '{code}'"),
        )
    })
}

fn travel_date(name: &str, value: &str) -> Result<NaiveDate, AmadeusError> {
    let d = aw::date(name, value)?;
    if d < Utc::now().date_naive() - chrono::TimeDelta::days(1) {
        return Err(AmadeusError::parameter(
            425,
            "INVALID DATE",
            name,
            format!("{name} {d} is in the past"),
        ));
    }
    Ok(d)
}

fn cabin(name: &str, value: &str) -> Result<Cabin, AmadeusError> {
    Cabin::parse(&value.to_ascii_lowercase()).ok_or_else(|| {
        invalid(
            name,
            format!("{name} must be ECONOMY, PREMIUM_ECONOMY, BUSINESS or FIRST, got '{value}'"),
        )
    })
}

fn pax(id: usize, kind: PaxKind) -> PaxIn {
    PaxIn {
        id: id.to_string(),
        kind,
        age: None,
    }
}

/// `GET /v2/shopping/flight-offers`.
pub(crate) async fn search_get(
    State(sim): State<Simulator>,
    Query(q): Query<aw::Query>,
) -> Result<Response, AmadeusError> {
    let origin = place(
        "originLocationCode",
        aw::required(&q, "originLocationCode")?,
    )?;
    let destination = place(
        "destinationLocationCode",
        aw::required(&q, "destinationLocationCode")?,
    )?;
    let date = travel_date("departureDate", aw::required(&q, "departureDate")?)?;
    let mut slices = vec![SliceIn {
        origin: origin.clone(),
        destination: destination.clone(),
        date,
    }];
    if let Some(r) = q.get("returnDate") {
        slices.push(SliceIn {
            origin: destination,
            destination: origin,
            date: travel_date("returnDate", r)?,
        });
    }
    let adults = aw::int_in(&q, "adults", 1, 9, 1)? as usize;
    let children = aw::int_in(&q, "children", 0, 8, 0)? as usize;
    let infants = aw::int_in(&q, "infants", 0, adults as u64, 0)? as usize;
    if adults + children > 9 {
        return Err(invalid(
            "children",
            "adults + children must be at most 9".into(),
        ));
    }
    let mut passengers: Vec<PaxIn> = (1..=adults).map(|i| pax(i, PaxKind::Adult)).collect();
    for _ in 0..children {
        passengers.push(pax(passengers.len() + 1, PaxKind::Child));
    }
    for _ in 0..infants {
        passengers.push(pax(passengers.len() + 1, PaxKind::Infant));
    }
    let cabin = match q.get("travelClass") {
        Some(c) => cabin("travelClass", c)?,
        None => Cabin::Economy,
    };
    let non_stop = match q.get("nonStop").map(String::as_str) {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(invalid(
                "nonStop",
                format!("nonStop must be true or false, got '{other}'"),
            ));
        }
    };
    let max = aw::int_in(&q, "max", 1, 250, 250)? as usize;
    let search = Search {
        slices,
        passengers,
        cabin,
        max_connections: if non_stop { 0 } else { 1 },
        price_factor: sim.price_factor(),
    };
    let mut out = offers(&sim, &search, max);
    let count = out["data"].as_array().map_or(0, Vec::len);
    out["meta"] = json!({ "count": count, "links": { "self": "/v2/shopping/flight-offers" } });
    Ok(vnd_json(StatusCode::OK, out))
}

/// `POST /v2/shopping/flight-offers` (with `X-HTTP-Method-Override: GET`).
pub(crate) async fn search_post(
    State(sim): State<Simulator>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, AmadeusError> {
    check_override(&headers)?;
    let body: Value = serde_json::from_slice(&body).map_err(|e| {
        AmadeusError::pointer(
            477,
            "INVALID FORMAT",
            "/",
            format!("the body is not JSON: {e}"),
        )
    })?;
    let ods = body
        .get("originDestinations")
        .and_then(Value::as_array)
        .filter(|a| (1..=2).contains(&a.len()))
        .ok_or_else(|| {
            missing(
                "/originDestinations",
                "originDestinations needs 1 or 2 entries",
            )
        })?;
    let mut slices = Vec::new();
    for (i, od) in ods.iter().enumerate() {
        let field = |k: &str| {
            od.get(k).and_then(Value::as_str).ok_or_else(|| {
                missing(
                    &format!("/originDestinations[{i}]/{k}"),
                    &format!("{k} is required"),
                )
            })
        };
        let date = od
            .pointer("/departureDateTimeRange/date")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                missing(
                    &format!("/originDestinations[{i}]/departureDateTimeRange/date"),
                    "date is required",
                )
            })?;
        slices.push(SliceIn {
            origin: place("originLocationCode", field("originLocationCode")?)?,
            destination: place("destinationLocationCode", field("destinationLocationCode")?)?,
            date: travel_date("departureDateTimeRange.date", date)?,
        });
    }
    let travelers = body
        .get("travelers")
        .and_then(Value::as_array)
        .filter(|a| (1..=9).contains(&a.len()))
        .ok_or_else(|| missing("/travelers", "travelers needs 1 to 9 entries"))?;
    let mut passengers = Vec::new();
    for (i, t) in travelers.iter().enumerate() {
        let kind = match t.get("travelerType").and_then(Value::as_str) {
            Some("ADULT" | "SENIOR" | "YOUNG" | "STUDENT") => PaxKind::Adult,
            Some("CHILD") => PaxKind::Child,
            Some("HELD_INFANT" | "SEATED_INFANT") => PaxKind::Infant,
            _ => {
                return Err(AmadeusError::pointer(
                    477,
                    "INVALID FORMAT",
                    &format!("/travelers[{i}]/travelerType"),
                    "unknown travelerType".into(),
                ));
            }
        };
        let id = t
            .get("id")
            .and_then(Value::as_str)
            .map_or_else(|| (i + 1).to_string(), str::to_string);
        passengers.push(PaxIn {
            id,
            kind,
            age: None,
        });
    }
    let filters = body.pointer("/searchCriteria/flightFilters");
    let cabin = match filters
        .and_then(|f| f.pointer("/cabinRestrictions/0/cabin"))
        .and_then(Value::as_str)
    {
        Some(c) => cabin("cabinRestrictions.cabin", c)?,
        None => Cabin::Economy,
    };
    let max_connections = filters
        .and_then(|f| f.pointer("/connectionRestriction/maxNumberOfConnections"))
        .and_then(Value::as_u64)
        .unwrap_or(2)
        .min(2);
    let max = body
        .pointer("/searchCriteria/maxFlightOffers")
        .and_then(Value::as_u64)
        .unwrap_or(250)
        .clamp(1, 250) as usize;
    let search = Search {
        slices,
        passengers,
        cabin,
        max_connections,
        price_factor: sim.price_factor(),
    };
    let mut out = offers(&sim, &search, max);
    let count = out["data"].as_array().map_or(0, Vec::len);
    out["meta"] = json!({ "count": count });
    Ok(vnd_json(StatusCode::OK, out))
}

fn missing(pointer: &str, detail: &str) -> AmadeusError {
    AmadeusError::pointer(32171, "MANDATORY DATA MISSING", pointer, detail.to_string())
}

/// The key pricing recognizes an offer by.
fn offer_key(offer: &Value) -> String {
    format!("{:016x}", hash_str(0, &offer.to_string()))
}

/// Generates, converts and remembers the offers of a search: `{data, dictionaries}`.
fn offers(sim: &Simulator, search: &Search, max: usize) -> Value {
    let now = Utc::now();
    let mut ids = |prefix: &str| sim.new_id(prefix);
    let generated = air_data::generate(sim.inner.seed, search, now, &mut ids);
    let mut carriers = Map::new();
    let mut aircraft = Map::new();
    let mut locations = Map::new();
    let mut currencies = Map::new();
    let mut data = Vec::new();
    for (i, g) in generated.iter().take(max).enumerate() {
        let o = &g.json;
        let mut segment_no = 0;
        let itineraries: Vec<Value> = o["slices"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                let segments: Vec<Value> = s["segments"].as_array().into_iter().flatten().map(|seg| {
                    segment_no += 1;
                    let carrier = seg["marketing_carrier"]["iata_code"].clone();
                    carriers.insert(carrier.as_str().unwrap_or("").to_string(), json!(seg["marketing_carrier"]["name"].as_str().unwrap_or("").to_uppercase()));
                    aircraft.insert(seg["aircraft"]["iata_code"].as_str().unwrap_or("").to_string(), json!(seg["aircraft"]["name"].as_str().unwrap_or("").to_uppercase()));
                    for end in ["origin", "destination"] {
                        locations.insert(seg[end]["iata_code"].as_str().unwrap_or("").to_string(),
                            json!({ "cityCode": seg[end]["iata_city_code"], "countryCode": seg[end]["iata_country_code"] }));
                    }
                    json!({
                        "departure": { "iataCode": seg["origin"]["iata_code"], "terminal": seg["origin_terminal"], "at": seg["departing_at"] },
                        "arrival": { "iataCode": seg["destination"]["iata_code"], "terminal": seg["destination_terminal"], "at": seg["arriving_at"] },
                        "carrierCode": carrier,
                        "number": seg["marketing_carrier_flight_number"],
                        "aircraft": { "code": seg["aircraft"]["iata_code"] },
                        "operating": { "carrierCode": seg["operating_carrier"]["iata_code"] },
                        "duration": compact(seg["duration"].as_str().unwrap_or("")),
                        "id": segment_no.to_string(),
                        "numberOfStops": 0,
                        "blacklistedInEU": false,
                    })
                }).collect();
                json!({ "duration": compact(s["duration"].as_str().unwrap_or("")), "segments": segments })
            })
            .collect();
        let currency = g.currency;
        currencies.insert(currency.to_string(), json!(currency_name(currency)));
        let base_minor = o["base_amount"].as_str().and_then(parse_minor).unwrap_or(0);
        let pax = &search.passengers;
        let share = |total: i64, k: usize| {
            let n = pax.len().max(1) as i64;
            total / n + if k == 0 { total % n } else { 0 }
        };
        let cabin = search.cabin.as_str().to_ascii_uppercase();
        let first_segment = &o["slices"][0]["segments"][0];
        let traveler_pricings: Vec<Value> = pax
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let fare = first_segment["passengers"][k]["fare_basis_code"].as_str().unwrap_or("Y");
                let bags = first_segment["passengers"][k]["baggages"][0]["quantity"].as_u64().unwrap_or(0);
                let details: Vec<Value> = (1..=segment_no)
                    .map(|id| json!({ "segmentId": id.to_string(), "cabin": cabin, "fareBasis": fare,
                                      "class": fare.get(..1).unwrap_or("Y"), "includedCheckedBags": { "quantity": bags } }))
                    .collect();
                json!({
                    "travelerId": p.id,
                    "fareOption": "STANDARD",
                    "travelerType": match p.kind { PaxKind::Adult => "ADULT", PaxKind::Child => "CHILD", PaxKind::Infant => "HELD_INFANT" },
                    "price": { "currency": currency, "total": fmt_minor(share(g.total_minor, k)), "base": fmt_minor(share(base_minor, k)) },
                    "fareDetailsBySegment": details,
                })
            })
            .collect();
        let first_date = search.slices.first().map_or(now.date_naive(), |s| s.date);
        let last_ticketing = (now.date_naive() + chrono::TimeDelta::days(3)).min(first_date);
        let carrier = o["owner"]["iata_code"].clone();
        data.push(json!({
            "type": "flight-offer",
            "id": (i + 1).to_string(),
            "source": "GDS",
            "instantTicketingRequired": g.requires_instant_payment,
            "nonHomogeneous": false,
            "oneWay": false,
            "lastTicketingDate": last_ticketing.to_string(),
            "numberOfBookableSeats": 1 + hash_str(sim.inner.seed, &format!("{carrier}{}", g.total_minor)) % 9,
            "itineraries": itineraries,
            "price": {
                "currency": currency,
                "total": fmt_minor(g.total_minor),
                "base": fmt_minor(base_minor),
                "fees": [ { "amount": "0.00", "type": "SUPPLIER" }, { "amount": "0.00", "type": "TICKETING" } ],
                "grandTotal": fmt_minor(g.total_minor),
            },
            "pricingOptions": { "fareType": ["PUBLISHED"], "includedCheckedBagsOnly": false },
            "validatingAirlineCodes": [carrier],
            "travelerPricings": traveler_pricings,
        }));
    }
    {
        let mut state = lock(&sim.inner.amadeus);
        for offer in &data {
            state
                .flight_offers
                .insert(offer_key(offer), KeptJson::keep(offer));
        }
    }
    json!({
        "data": data,
        "dictionaries": { "locations": locations, "aircraft": aircraft, "currencies": currencies, "carriers": carriers },
    })
}

/// `PT07H05M` → `PT7H5M`, as Amadeus writes durations (leading zeros dropped).
fn compact(d: &str) -> String {
    let mut out = String::with_capacity(d.len());
    let mut num = String::new();
    for c in d.chars() {
        if c.is_ascii_digit() {
            num.push(c);
        } else {
            let trimmed = num.trim_start_matches('0');
            out.push_str(if trimmed.is_empty() && !num.is_empty() {
                "0"
            } else {
                trimmed
            });
            num.clear();
            out.push(c);
        }
    }
    out.push_str(&num);
    out
}

fn currency_name(code: &str) -> &'static str {
    match code {
        "EUR" => "EURO",
        "GBP" => "POUND STERLING",
        _ => "US DOLLAR",
    }
}

/// `POST /v1/shopping/flight-offers/pricing` (with `X-HTTP-Method-Override: GET`).
pub(crate) async fn price(
    State(sim): State<Simulator>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, AmadeusError> {
    check_override(&headers)?;
    let body: Value = serde_json::from_slice(&body).map_err(|e| {
        AmadeusError::pointer(
            477,
            "INVALID FORMAT",
            "/",
            format!("the body is not JSON: {e}"),
        )
    })?;
    let sent = body
        .pointer("/data/flightOffers")
        .and_then(Value::as_array)
        .filter(|a| (1..=6).contains(&a.len()))
        .ok_or_else(|| {
            missing(
                "/data/flightOffers",
                "data.flightOffers needs 1 to 6 flight offers",
            )
        })?;
    let mut priced = Vec::new();
    let mut locations = Map::new();
    {
        let state = lock(&sim.inner.amadeus);
        for (i, offer) in sent.iter().enumerate() {
            let Some(known) = state.flight_offers.get(&offer_key(offer)) else {
                return Err(AmadeusError::pointer(
                    4926,
                    "INVALID DATA RECEIVED",
                    &format!("/data/flightOffers[{i}]"),
                    "flight offer does not match".into(),
                ));
            };
            let mut p = known.value();
            p["paymentCardRequired"] = json!(false);
            let currency = p["price"]["currency"].clone();
            p["price"]["billingCurrency"] = currency;
            if let Some(fees) = p["price"]["fees"].as_array_mut() {
                fees.push(json!({ "amount": "0.00", "type": "FORM_OF_PAYMENT" }));
            }
            for it in p["itineraries"].as_array().into_iter().flatten() {
                for seg in it["segments"].as_array().into_iter().flatten() {
                    for end in ["departure", "arrival"] {
                        let code = seg[end]["iataCode"].as_str().unwrap_or("");
                        if let Some(a) = tables::airport(code) {
                            locations.insert(
                                code.to_string(),
                                json!({ "cityCode": a.city_code, "countryCode": a.country }),
                            );
                        }
                    }
                }
            }
            priced.push(p);
        }
    }
    Ok(vnd_json(
        StatusCode::OK,
        json!({
            "data": {
                "type": "flight-offers-pricing",
                "flightOffers": priced,
                "bookingRequirements": { "emailAddressRequired": true, "mobilePhoneNumberRequired": true },
            },
            "dictionaries": { "locations": locations },
        }),
    ))
}
