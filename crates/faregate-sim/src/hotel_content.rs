//! A simulated hotel-content API: `GET /content/v1/hotels/{hotel_id}`, a hotel's description,
//! star rating, address, amenities and check-in times. It is the second example of a tool from
//! configuration (kind `http`) in the demo, beside the flight tracker.
//!
//! Content services of hotel distributors each have their own format; this one is the common
//! core of them in plain JSON, `{"hotel": {"id", "name", "star_rating", "review_score",
//! "description": {"short", "long"}, "address": {...}, "amenities": [{"code", "name"}],
//! "check_in": {"from"}, "check_out": {"until"}}}`, with errors as the problem object of
//! `problem.rs`. The hotels are the ones the Duffel Stays routes serve: a `hotel_id` is their
//! accommodation id (`acc_…`), its content a pure function of the seed and the id; any other id
//! is 404 `NOT_FOUND`. No credential is checked (as for the flight tracker).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::Simulator;
use super::data::hash_str;
use super::problem::Problem;
use super::stays_data::{self, Hotel};

/// Amenities by code and name; a hotel has the first few, more the more stars it has.
const AMENITIES: &[(&str, &str)] = &[
    ("WIFI", "Free WiFi"),
    ("NON_SMOKING", "Non-smoking rooms"),
    ("24H_FRONT_DESK", "24-hour front desk"),
    ("AIR_CONDITIONING", "Air conditioning"),
    ("RESTAURANT", "Restaurant"),
    ("BAR", "Bar"),
    ("FITNESS", "Fitness centre"),
    ("ROOM_SERVICE", "Room service"),
    ("SPA", "Spa"),
    ("POOL", "Indoor pool"),
    ("CONCIERGE", "Concierge"),
];

/// `GET /content/v1/hotels/{hotel_id}`.
pub(crate) async fn hotel(
    State(sim): State<Simulator>,
    Path(hotel_id): Path<String>,
) -> Result<Response, Problem> {
    let (lat_e4, lon_e4, profile) = stays_data::decode_hotel_id(&hotel_id).ok_or_else(|| {
        Problem::new(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            format!("No hotel with id '{hotel_id}'"),
        )
    })?;
    let h = stays_data::hotel(sim.inner.seed, lat_e4, lon_e4, profile);
    Ok(axum::Json(json!({ "hotel": content(sim.inner.seed, &h) })).into_response())
}

/// A hotel's content.
fn content(seed: u64, h: &Hotel) -> Value {
    let mix = hash_str(seed, &format!("content:{}", h.id));
    let count = (2 + h.rating as usize * 2 + (mix % 2) as usize).min(AMENITIES.len());
    let amenities: Vec<Value> = AMENITIES[..count]
        .iter()
        .map(|(code, name)| json!({ "code": code, "name": name }))
        .collect();
    let setting = [
        "on a quiet street",
        "in the old town",
        "in the business district",
        "by the river",
    ][(mix >> 8) as usize % 4];
    json!({
        "id": h.id,
        "name": h.name,
        "star_rating": h.rating,
        "review_score": h.review_tenths as f64 / 10.0,
        "description": {
            "short": format!("A {}-star hotel in {}.", h.rating, h.city_name),
            "long": format!(
                "{}, {}, {}: a {}-star hotel {}. Guests rate it {:.1} out of 10.",
                h.name, h.line_one, h.city_name, h.rating, setting, h.review_tenths as f64 / 10.0
            ),
        },
        "address": {
            "line_one": h.line_one,
            "city_name": h.city_name,
            "postal_code": h.postal_code,
            "country_code": h.country,
        },
        "amenities": amenities,
        "check_in": { "from": "15:00" },
        "check_out": { "until": if h.rating >= 4 { "12:00" } else { "11:00" } },
    })
}
