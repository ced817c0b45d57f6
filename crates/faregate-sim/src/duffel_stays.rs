//! Duffel Stays routes: search and fetch all rates (the rates shown are kept for quoting, see
//! `duffel_stays_bookings`).
//!
//! Every search has at least one result without availability when rates are fetched (no rooms
//! at all, and from 8 results on also one whose rates all have `quantity_available: 0`), so a
//! client's "no availability" path always gets exercised. "Today" for date checks is the UTC
//! date. Search results are not expired by the simulator even after their `expires_at`.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::{TimeDelta, Utc};
use serde_json::{Map, Value, json};

use super::data::{fmt_minor, hash_str};
use super::stays_data::{self, Availability, Hotel, StayQuery};
use super::store::StoredStay;
use super::validate::Checker;
use super::wire::{DuffelError, data_response, parse_data};
use super::{Simulator, lock};

/// Where to search: around a point or specific accommodations.
enum Target {
    Near { lat: f64, lon: f64, radius: f64 },
    Ids(Vec<(u64, u64, u64)>),
}

fn parse_search(data: &Map<String, Value>) -> Result<(StayQuery, Target, Value), DuffelError> {
    let mut c = Checker::default();
    let today = Utc::now().date_naive();
    let check_in = c.date(data, "check_in_date", "/check_in_date");
    let check_out = c.date(data, "check_out_date", "/check_out_date");
    if let Some(ci) = check_in {
        if ci < today {
            c.invalid(
                "/check_in_date",
                format!(
                    "Field 'check_in_date' must not be in the past (today is {today}), got {ci}"
                ),
            );
        } else if ci > today + TimeDelta::days(330) {
            c.invalid(
                "/check_in_date",
                format!("Field 'check_in_date' must be at most 330 days ahead, got {ci}"),
            );
        }
    }
    if let (Some(ci), Some(co)) = (check_in, check_out) {
        if co <= ci {
            c.invalid(
                "/check_out_date",
                "Field 'check_out_date' must be after 'check_in_date'",
            );
        } else if (co - ci).num_days() > 99 {
            c.invalid(
                "/check_out_date",
                format!(
                    "A stay can be at most 99 nights, got {}",
                    (co - ci).num_days()
                ),
            );
        }
    }
    let rooms = c.int_in(data, "rooms", "/rooms", 1, 9);
    let (mut adults, mut children) = (0, 0);
    for (i, g) in c
        .array(data, "guests", "/guests")
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let p = format!("/guests/{i}");
        let Some(m) = c.item(g, &p) else { continue };
        match c.one_of(m, "type", &format!("{p}/type"), &["adult", "child"]) {
            Some("adult") => adults += 1,
            Some(_) if c.int_in(m, "age", &format!("{p}/age"), 0, 17).is_some() => children += 1,
            Some(_) => {}
            None => {}
        }
    }
    if let Some(r) = rooms
        && adults > 0
        && adults < r
    {
        c.invalid(
            "/guests",
            format!("Each room needs at least one adult guest: {r} rooms, {adults} adults"),
        );
    }
    if data.contains_key("guests") && adults == 0 && c.errors.is_empty() {
        c.invalid("/guests", "At least one adult guest is required");
    }
    let free_cancellation_only = data
        .get("free_cancellation_only")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let has = |k: &str| data.get(k).is_some_and(|v| !v.is_null());
    let target = match (has("location"), has("accommodation")) {
        (true, false) => parse_location(&mut c, data),
        (false, true) => parse_accommodation(&mut c, data),
        _ => {
            c.invalid(
                "/location",
                "Provide exactly one of 'location' or 'accommodation'",
            );
            None
        }
    };
    match (check_in, check_out, rooms, target) {
        (Some(check_in), Some(check_out), Some(rooms), Some(target)) if c.errors.is_empty() => {
            let q = StayQuery {
                check_in,
                check_out,
                rooms,
                adults,
                children,
                free_cancellation_only,
            };
            Ok((
                q,
                target,
                data.get("guests").cloned().unwrap_or(Value::Null),
            ))
        }
        _ => Err(DuffelError::validation(c.errors)),
    }
}

fn parse_location(c: &mut Checker, data: &Map<String, Value>) -> Option<Target> {
    let loc = c.object(data, "location", "/location")?;
    let radius = match loc.get("radius") {
        None | Some(Value::Null) => Some(5.0),
        Some(_) => c.number_in(loc, "radius", "/location/radius", 1.0, 100.0),
    };
    let coords = c.object(
        loc,
        "geographic_coordinates",
        "/location/geographic_coordinates",
    )?;
    let lat = c.number_in(
        coords,
        "latitude",
        "/location/geographic_coordinates/latitude",
        -90.0,
        90.0,
    );
    let lon = c.number_in(
        coords,
        "longitude",
        "/location/geographic_coordinates/longitude",
        -180.0,
        180.0,
    );
    Some(Target::Near {
        lat: lat?,
        lon: lon?,
        radius: radius?,
    })
}

fn parse_accommodation(c: &mut Checker, data: &Map<String, Value>) -> Option<Target> {
    let acc = c.object(data, "accommodation", "/accommodation")?;
    let ids = c.array(acc, "ids", "/accommodation/ids")?;
    if ids.len() > 200 {
        c.invalid(
            "/accommodation/ids",
            "At most 200 accommodation ids can be searched at once",
        );
        return None;
    }
    let mut out = Vec::new();
    for (i, v) in ids.iter().enumerate() {
        match v.as_str().and_then(stays_data::decode_hotel_id) {
            Some(decoded) => out.push(decoded),
            None => c.invalid(
                &format!("/accommodation/ids/{i}"),
                format!("Not a known accommodation id: {v}"),
            ),
        }
    }
    (out.len() == ids.len()).then_some(Target::Ids(out))
}

/// `POST /stays/search`: validates, generates 5-12 results (or one per id), 200.
pub(crate) async fn search(
    State(sim): State<Simulator>,
    body: Bytes,
) -> Result<Response, DuffelError> {
    let data = parse_data(&body)?;
    let (q, target, guests) = parse_search(&data)?;
    let seed = sim.inner.seed;
    let hotels: Vec<Hotel> = match target {
        Target::Near { lat, lon, radius } => stays_data::hotels_near(seed, lat, lon, radius),
        Target::Ids(ids) => ids
            .into_iter()
            .map(|(a, b, p)| stays_data::hotel(seed, a, b, p))
            .collect(),
    };
    let key = format!(
        "{}:{}:{}",
        hotels.first().map_or("", |h| h.id.as_str()),
        q.check_in,
        q.check_out
    );
    let h = hash_str(seed, &key);
    let n = hotels.len() as u64;
    let no_rooms = h % n.max(1);
    let sold_out = (h >> 8) % n.max(1);
    let now = Utc::now();
    let ts = |t: chrono::DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let mut results = Vec::new();
    let mut store = lock(&sim.inner.stays);
    for (i, hotel) in hotels.iter().enumerate() {
        let rooms = stays_data::rooms(seed, hotel, &q);
        let Some(cheapest) = stays_data::cheapest(&rooms).cloned() else {
            continue; // free_cancellation_only removed every rate: Duffel omits such hotels.
        };
        let availability = match i as u64 {
            i if i == no_rooms => Availability::NoRooms,
            i if n >= 8 && i == sold_out => Availability::SoldOut,
            _ => Availability::Available,
        };
        let id = sim.new_id("srr");
        let result = json!({
            "id": id,
            "check_in_date": q.check_in.to_string(),
            "check_out_date": q.check_out.to_string(),
            "rooms": q.rooms,
            "guests": guests,
            "created_at": ts(now),
            "expires_at": ts(now + TimeDelta::minutes(30)),
            "cheapest_rate_total_amount": fmt_minor(cheapest.total),
            "cheapest_rate_currency": hotel.currency,
            "cheapest_rate_base_amount": fmt_minor(cheapest.base),
            "cheapest_rate_base_currency": hotel.currency,
            "cheapest_rate_due_at_accommodation_amount": "0.00",
            "accommodation": stays_data::accommodation_json(hotel),
        });
        store.insert(
            id,
            StoredStay {
                json: result.clone(),
                rooms,
                availability,
                currency: hotel.currency,
                check_in: q.check_in,
            },
        );
        results.push(result);
    }
    drop(store);
    Ok(data_response(
        StatusCode::OK,
        json!({ "created_at": ts(now), "results": results }),
    ))
}

/// `POST /stays/search_results/{id}/actions/fetch_all_rates`: the result with every room and
/// rate; 404 if the id is unknown.
pub(crate) async fn fetch_all_rates(
    State(sim): State<Simulator>,
    Path(id): Path<String>,
) -> Result<Response, DuffelError> {
    let stored = lock(&sim.inner.stays).get(&id).cloned();
    let Some(stay) = stored else {
        return Err(DuffelError::not_found(&format!("search result '{id}'")));
    };
    let mut ids = |prefix: &str| sim.new_id(prefix);
    let rooms = stays_data::rooms_json(
        &stay.rooms,
        stay.availability,
        stay.currency,
        stay.check_in,
        &mut ids,
    );
    super::duffel_stays_bookings::keep_rates(&sim, &stay.json, &rooms);
    let mut json = stay.json;
    json["accommodation"]["rooms"] = rooms;
    Ok(data_response(StatusCode::OK, json))
}
