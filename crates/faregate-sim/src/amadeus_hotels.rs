//! Simulated Amadeus Hotel List (`by-city`, `by-geocode`) and Hotel Search v3 (offers for up to
//! 20 hotel ids, and one offer by id).
//!
//! Hotels come from the same generator as Duffel Stays (`stays_data`), under Amadeus-style
//! 8-character ids (`HLPAR266`: chain, city, number) remembered (bounded) when listed, so offers
//! are asked for hotels a list returned. Per hotel and stay, deterministically: about one in six
//! has no rooms (`available: false`, no offers), one in six sells out between search and the
//! offer check (`GET …/{offerId}` answers 400 3664, Amadeus's no-availability error), the rest are
//! available. A batch with no offers at all is 400 3664. City centres are the centroid of the
//! city's airports in the built-in table; an unknown city is 400 895 "NOTHING FOUND FOR
//! REQUESTED CITY". An unknown offer id is 404 38196 with detail "Hotel or offer not found"
//! (code chosen by the simulator; the reference documents the text only).

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::{NaiveDate, TimeDelta, Utc};
use serde_json::{Value, json};

use super::amadeus_wire::{self as aw, AmadeusError, upper_id, vnd_json};
use super::data::{fmt_minor, hash_str};
use super::stays_data::{self, Hotel, RateSpec, RoomSpec, StayQuery};
use super::store::StoredHotelOffer;
use super::tables;
use super::{Simulator, lock};

fn number(q: &aw::Query, name: &str, lo: f64, hi: f64) -> Result<f64, AmadeusError> {
    let v = aw::required(q, name)?;
    v.parse::<f64>()
        .ok()
        .filter(|x| (lo..=hi).contains(x))
        .ok_or_else(|| {
            AmadeusError::parameter(
                477,
                "INVALID FORMAT",
                name,
                format!("{name} must be a number from {lo} to {hi}, got '{v}'"),
            )
        })
}

fn radius_km(q: &aw::Query) -> Result<f64, AmadeusError> {
    let r = aw::int_in(q, "radius", 1, 300, 5)? as f64;
    Ok(match q.get("radiusUnit").map(String::as_str) {
        Some("MILE") => r * 1.609,
        _ => r,
    })
}

/// `GET /v1/reference-data/locations/hotels/by-city`.
pub(crate) async fn by_city(
    State(sim): State<Simulator>,
    Query(q): Query<aw::Query>,
) -> Result<Response, AmadeusError> {
    let code = aw::required(&q, "cityCode")?;
    if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(AmadeusError::parameter(
            477,
            "INVALID FORMAT",
            "cityCode",
            format!("cityCode must be 3 capital letters, got '{code}'"),
        ));
    }
    let mut airports = tables::city_airports(code);
    if airports.is_empty()
        && let Some(a) = tables::airport(code)
    {
        airports = tables::city_airports(a.city_code);
    }
    if airports.is_empty() {
        return Err(AmadeusError::parameter(
            895,
            "NOTHING FOUND FOR REQUESTED CITY",
            "cityCode",
            format!("no hotels known in {code}"),
        ));
    }
    let n = airports.len() as f64;
    let lat = airports.iter().map(|a| a.lat).sum::<f64>() / n;
    let lon = airports.iter().map(|a| a.lon).sum::<f64>() / n;
    Ok(list(&sim, lat, lon, radius_km(&q)?, airports[0].city_code))
}

/// `GET /v1/reference-data/locations/hotels/by-geocode`.
pub(crate) async fn by_geocode(
    State(sim): State<Simulator>,
    Query(q): Query<aw::Query>,
) -> Result<Response, AmadeusError> {
    let lat = number(&q, "latitude", -90.0, 90.0)?;
    let lon = number(&q, "longitude", -180.0, 180.0)?;
    let city = tables::AIRPORTS
        .iter()
        .min_by(|a, b| {
            tables::distance_km(lat, lon, a.lat, a.lon)
                .total_cmp(&tables::distance_km(lat, lon, b.lat, b.lon))
        })
        .map_or("XXX", |a| a.city_code);
    Ok(list(&sim, lat, lon, radius_km(&q)?, city))
}

/// The hotel list around a point; every hotel listed is remembered under its Amadeus id.
fn list(sim: &Simulator, lat: f64, lon: f64, radius: f64, city: &str) -> Response {
    let seed = sim.inner.seed;
    let mut data = Vec::new();
    let mut state = lock(&sim.inner.amadeus);
    let mut used = Vec::new();
    for h in stays_data::hotels_near(seed, lat, lon, radius) {
        let chain = upper_id(hash_str(seed, &h.name), 2).replace(|c: char| c.is_ascii_digit(), "X");
        let mut n = hash_str(seed, &h.id) % 1000;
        let mut id = format!("{chain}{city}{n:03}");
        while used.contains(&id) {
            n = (n + 1) % 1000;
            id = format!("{chain}{city}{n:03}");
        }
        used.push(id.clone());
        data.push(json!({
            "chainCode": chain,
            "iataCode": city,
            "dupeId": 700_000_000 + hash_str(seed, &id) % 10_000_000,
            "name": h.name.to_uppercase(),
            "hotelId": id,
            "geoCode": { "latitude": h.lat, "longitude": h.lon },
            "address": { "countryCode": h.country },
            "distance": { "value": (tables::distance_km(lat, lon, h.lat, h.lon) * 100.0).round() / 100.0, "unit": "KM" },
        }));
        state.hotels.insert(id, (h, city.to_string()));
    }
    vnd_json(
        StatusCode::OK,
        json!({ "data": data, "meta": { "count": data.len(), "links": { "self": "/v1/reference-data/locations/hotels" } } }),
    )
}

/// `GET /v3/shopping/hotel-offers?hotelIds=…`.
pub(crate) async fn offers(
    State(sim): State<Simulator>,
    Query(q): Query<aw::Query>,
) -> Result<Response, AmadeusError> {
    let ids: Vec<&str> = aw::required(&q, "hotelIds")?
        .split(',')
        .map(str::trim)
        .collect();
    if ids.len() > 20
        || ids.iter().any(|id| {
            id.len() != 8
                || !id
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        })
    {
        return Err(AmadeusError::parameter(
            477,
            "INVALID FORMAT",
            "hotelIds",
            "hotelIds takes 1 to 20 ids of 8 capital letters or digits".into(),
        ));
    }
    let today = Utc::now().date_naive();
    let check_in = match q.get("checkInDate") {
        Some(d) => aw::date("checkInDate", d)?,
        None => today,
    };
    let check_out = match q.get("checkOutDate") {
        Some(d) => aw::date("checkOutDate", d)?,
        None => check_in + TimeDelta::days(1),
    };
    if check_in < today - TimeDelta::days(1) {
        return Err(AmadeusError::parameter(
            381,
            "INVALID CHECK-IN DATE",
            "checkInDate",
            format!("{check_in} is in the past"),
        ));
    }
    if check_out <= check_in || (check_out - check_in).num_days() > 99 {
        return Err(AmadeusError::parameter(
            145,
            "DURATION PERIOD OR DATES INCORRECT",
            "checkOutDate",
            "checkOutDate must be 1 to 99 nights after checkInDate".into(),
        ));
    }
    let adults = aw::int_in(&q, "adults", 1, 9, 1).map_err(|_| {
        AmadeusError::parameter(
            397,
            "INVALID NUMBER OF ADULTS",
            "adults",
            "adults must be 1 to 9".into(),
        )
    })?;
    let rooms = aw::int_in(&q, "roomQuantity", 1, 9, 1)?;
    let best_only = q.get("bestRateOnly").is_none_or(|v| v != "false");
    let seed = sim.inner.seed;
    let mut state = lock(&sim.inner.amadeus);
    let known: Vec<(String, Hotel, String)> = ids
        .iter()
        .filter_map(|id| {
            state
                .hotels
                .get(id)
                .map(|(h, c)| (id.to_string(), h.clone(), c.clone()))
        })
        .collect();
    if known.is_empty() {
        return Err(AmadeusError::parameter(
            392,
            "INVALID HOTEL CODE",
            "hotelIds",
            "none of the hotelIds is known".into(),
        ));
    }
    let query = StayQuery {
        check_in,
        check_out,
        rooms,
        adults: adults * rooms,
        children: 0,
        free_cancellation_only: false,
    };
    let mut data = Vec::new();
    for (id, hotel, city) in known {
        let luck = hash_str(seed, &format!("{id}:{check_in}:{check_out}")) % 6;
        let hotel_json = hotel_json(seed, &id, &hotel, &city);
        let specs = stays_data::rooms(seed, &hotel, &query);
        let mut rates: Vec<(&RoomSpec, &RateSpec)> = specs
            .iter()
            .flat_map(|r| r.rates.iter().map(move |x| (r, x)))
            .collect();
        rates.sort_by_key(|(_, r)| r.total);
        if best_only {
            rates.truncate(1);
        }
        if luck == 0 || rates.is_empty() {
            data.push(json!({ "type": "hotel-offers", "hotel": hotel_json, "available": false, "offers": [] }));
            continue;
        }
        let mut offers = Vec::new();
        for (room, rate) in rates {
            let offer_id = upper_id(seed ^ sim.next_seq().wrapping_mul(0x9E37_79B9), 10);
            let offer = offer_json(&offer_id, &hotel, room, rate, &query, adults);
            let single = json!({ "type": "hotel-offers", "hotel": hotel_json, "available": true, "offers": [offer.clone()],
                                 "self": format!("/v3/shopping/hotel-offers/{offer_id}") });
            state.hotel_offers.insert(
                offer_id,
                StoredHotelOffer {
                    json: single,
                    sold_out: luck == 1,
                },
            );
            offers.push(offer);
        }
        data.push(json!({ "type": "hotel-offers", "hotel": hotel_json, "available": true, "offers": offers,
                          "self": format!("/v3/shopping/hotel-offers?hotelIds={id}") }));
    }
    if data
        .iter()
        .all(|d| d["offers"].as_array().is_none_or(Vec::is_empty))
    {
        return Err(AmadeusError::new(
            StatusCode::BAD_REQUEST,
            3664,
            "NO ROOMS AVAILABLE AT REQUESTED PROPERTY",
            "no rooms available for these dates",
        ));
    }
    Ok(vnd_json(StatusCode::OK, json!({ "data": data })))
}

/// `GET /v3/shopping/hotel-offers/{offerId}`: `{data: HotelOffers}`, one object.
pub(crate) async fn offer(
    State(sim): State<Simulator>,
    Path(offer_id): Path<String>,
) -> Result<Response, AmadeusError> {
    let stored = lock(&sim.inner.amadeus)
        .hotel_offers
        .get(&offer_id)
        .cloned();
    match stored {
        None => Err(AmadeusError::new(
            StatusCode::NOT_FOUND,
            38196,
            "Resource not found",
            "Hotel or offer not found",
        )),
        Some(s) if s.sold_out => Err(AmadeusError::new(
            StatusCode::BAD_REQUEST,
            3664,
            "NO ROOMS AVAILABLE AT REQUESTED PROPERTY",
            "the offer is no longer available",
        )),
        Some(s) => {
            let mut data = s.json;
            if let Some(policies) = data.pointer_mut("/offers/0/policies") {
                let kind = policies["paymentType"]
                    .as_str()
                    .unwrap_or("guarantee")
                    .to_string();
                policies[kind] = json!({ "acceptedPayments": { "creditCards": ["VI", "CA", "AX"], "methods": ["CREDIT_CARD"] } });
            }
            Ok(vnd_json(StatusCode::OK, json!({ "data": data })))
        }
    }
}

fn hotel_json(seed: u64, id: &str, h: &Hotel, city: &str) -> Value {
    json!({
        "type": "hotel", "hotelId": id, "chainCode": id.get(..2).unwrap_or(""),
        // A string here, an integer in Hotel List: as documented.
        "dupeId": (700_000_000 + hash_str(seed, id) % 10_000_000).to_string(),
        "name": h.name, "cityCode": city, "latitude": h.lat, "longitude": h.lon,
    })
}

fn offer_json(
    id: &str,
    h: &Hotel,
    room: &RoomSpec,
    rate: &RateSpec,
    q: &StayQuery,
    adults: u64,
) -> Value {
    let nights = (q.check_out - q.check_in).num_days().max(1);
    let currency = h.currency;
    let per_night = rate.base / nights;
    let category = room.name.to_uppercase().replace(' ', "_");
    let cancellation = if rate.refundable {
        let deadline: NaiveDate = q.check_in - TimeDelta::days(2);
        json!({ "deadline": format!("{deadline}T23:59:00"), "description": { "text": format!("FREE CANCELLATION UNTIL {deadline} 23:59 LOCAL TIME") } })
    } else {
        json!({ "type": "FULL_STAY", "description": { "text": "NON-REFUNDABLE RATE" } })
    };
    let payment = match rate.payment_type {
        "pay_now" => "prepay",
        other => other,
    };
    json!({
        "id": id,
        "checkInDate": q.check_in.to_string(),
        "checkOutDate": q.check_out.to_string(),
        "rateCode": if rate.refundable { "RAC" } else { "PRO" },
        "rateFamilyEstimated": { "code": if rate.refundable { "BAR" } else { "PRO" }, "type": "P" },
        "boardType": rate.board.to_uppercase(),
        "room": {
            "type": format!("{}{:02}", category.get(..1).unwrap_or("A"), room.bed.1 * 3 + 1),
            "typeEstimated": { "category": category, "beds": room.bed.1, "bedType": room.bed.0.to_uppercase() },
            "description": { "text": format!("{}, FREE WIFI", room.name.to_uppercase()), "lang": "EN" },
        },
        "guests": { "adults": adults },
        "price": {
            "currency": currency, "base": fmt_minor(rate.base), "total": fmt_minor(rate.total),
            "taxes": [ { "code": "TOTAL_TAX", "pricingFrequency": "PER_STAY", "pricingMode": "PER_PRODUCT",
                         "amount": fmt_minor(rate.tax + rate.fee), "currency": currency, "included": true } ],
            "variations": { "average": { "base": fmt_minor(per_night) },
                            "changes": [ { "startDate": q.check_in.to_string(), "endDate": q.check_out.to_string(), "base": fmt_minor(per_night) } ] },
        },
        "policies": { "paymentType": payment, "cancellation": cancellation },
        "self": format!("/v3/shopping/hotel-offers/{id}"),
    })
}
