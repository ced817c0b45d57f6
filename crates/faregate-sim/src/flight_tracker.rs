//! A simulated flight-tracking API in FlightAware AeroAPI's wire format: `GET
//! /aeroapi/flights/{ident}`, the example that shows a tool from configuration (kind `http`)
//! tripping and recovering in the demo.
//!
//! The answer is AeroAPI's documented shape, `{"flights": [...], "links": null, "num_pages":
//! 1}`, each flight with `ident`, `ident_iata`, `fa_flight_id`, `operator_iata`,
//! `flight_number`, `origin`/`destination` (`code`, `code_icao`, `code_iata`, `timezone`,
//! `name`, `city`), `status`, the `scheduled_`/`estimated_`/`actual_` `out` and `in` times (ISO
//! 8601, UTC), `departure_delay`/`arrival_delay` (seconds), gates, terminals and
//! `progress_percent`. The simulator's choices where AeroAPI's docs leave room:
//! - An ident is a designator: an airline's 2-character IATA code from the built-in airline
//!   table and 1-4 digits (`BA117`). Anything else is 400 `INVALID_ARGUMENT`; an unknown
//!   airline is 404 `NOT_FOUND`; errors are the problem object of `problem.rs`.
//! - One flight is listed, today's (UTC), a pure function of the seed, the ident and the date;
//!   about one in four is delayed. Its status follows the wall clock: `Scheduled` before its
//!   estimated departure, `En Route` until its estimated arrival, then `Arrived / Gate Arrival`
//!   (with `/ Delayed` or `/ On Time` while it is not arrived).
//! - The `x-apikey` header is not checked: the gateway sends no credential to a loopback
//!   server whose key variable is unset, and the demo needs none.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, NaiveTime, TimeDelta, Utc};
use serde_json::{Value, json};

use super::Simulator;
use super::data::hash_str;
use super::problem::Problem;
use super::tables::{self, AIRLINES, Airport};

/// `GET /aeroapi/flights/{ident}`.
pub(crate) async fn flights(
    State(sim): State<Simulator>,
    Path(ident): Path<String>,
) -> Result<Response, Problem> {
    let flight = flight(sim.inner.seed, &ident, Utc::now())?;
    Ok(axum::Json(json!({ "flights": [flight], "links": null, "num_pages": 1 })).into_response())
}

/// Today's flight of `ident` as AeroAPI describes it at `now`.
fn flight(seed: u64, ident: &str, now: DateTime<Utc>) -> Result<Value, Problem> {
    let (carrier, number) = designator(ident).ok_or_else(|| {
        Problem::new(
            StatusCode::BAD_REQUEST,
            "INVALID_ARGUMENT",
            format!(
                "Invalid ident '{ident}': expected an airline designator and flight number, e.g. BA117"
            ),
        )
    })?;
    let not_found = || {
        Problem::new(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            format!("No flights found for ident {ident}"),
        )
    };
    let airline = AIRLINES
        .iter()
        .find(|a| a.iata == carrier)
        .ok_or_else(not_found)?;
    let hub = airline
        .hubs
        .first()
        .and_then(|h| tables::airport(h))
        .ok_or_else(not_found)?;
    let h = hash_str(seed, &format!("aeroapi:{carrier}:{number}"));
    let others: Vec<&Airport> = tables::AIRPORTS
        .iter()
        .filter(|a| a.city_code != hub.city_code)
        .collect();
    let other = *others
        .get((h % others.len().max(1) as u64) as usize)
        .ok_or_else(not_found)?;
    let (from, to) = if number % 2 == 1 {
        (hub, other)
    } else {
        (other, hub)
    };
    let distance = tables::distance_km(from.lat, from.lon, to.lat, to.lon);
    let block = TimeDelta::minutes(((distance / 830.0 * 60.0 + 35.0).round() as i64 + 4) / 5 * 5);
    let minute = 6 * 60 + ((h >> 8) % 16) * 60 + ((h >> 16) % 12) * 5;
    let today = now.date_naive();
    let scheduled_out = today
        .and_time(NaiveTime::MIN)
        .and_utc()
        .checked_add_signed(TimeDelta::minutes(minute as i64))
        .unwrap_or(now);
    let scheduled_in = scheduled_out + block;
    let delay = if (h >> 24).is_multiple_of(4) {
        TimeDelta::minutes(5 + ((h >> 32) % 18) as i64 * 5)
    } else {
        TimeDelta::zero()
    };
    let (estimated_out, estimated_in) = (scheduled_out + delay, scheduled_in + delay);
    let punctuality = if delay > TimeDelta::zero() {
        "Delayed"
    } else {
        "On Time"
    };
    let (status, actual_out, actual_in, progress) = if now < estimated_out {
        (format!("Scheduled / {punctuality}"), None, None, 0)
    } else if now < estimated_in {
        let done = (now - estimated_out).num_seconds() * 100 / block.num_seconds().max(1);
        (
            format!("En Route / {punctuality}"),
            Some(estimated_out),
            None,
            done.clamp(1, 99),
        )
    } else {
        (
            "Arrived / Gate Arrival".to_string(),
            Some(estimated_out),
            Some(estimated_in),
            100,
        )
    };
    let at = |t: DateTime<Utc>| t.format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let gate = format!(
        "{}{}",
        char::from(b'A' + ((h >> 40) % 6) as u8),
        1 + (h >> 44) % 60
    );
    Ok(json!({
        "ident": ident,
        "ident_iata": ident,
        "fa_flight_id": format!("{ident}-{}-airline-{:04}", scheduled_out.timestamp(), h % 10_000),
        "operator_iata": carrier,
        "flight_number": number.to_string(),
        "type": "Airline",
        "cancelled": false,
        "diverted": false,
        "origin": place(from),
        "destination": place(to),
        "departure_delay": delay.num_seconds(),
        "arrival_delay": delay.num_seconds(),
        "status": status,
        "progress_percent": progress,
        "gate_origin": gate,
        "gate_destination": null,
        "terminal_origin": (1 + (h >> 48) % 5).to_string(),
        "terminal_destination": null,
        "aircraft_type": if distance > 4000.0 { "B789" } else { "A320" },
        "scheduled_out": at(scheduled_out),
        "estimated_out": at(estimated_out),
        "actual_out": actual_out.map(at),
        "scheduled_in": at(scheduled_in),
        "estimated_in": at(estimated_in),
        "actual_in": actual_in.map(at),
    }))
}

/// An airport as AeroAPI's `origin`/`destination`.
fn place(a: &Airport) -> Value {
    json!({
        "code": a.icao,
        "code_icao": a.icao,
        "code_iata": a.iata,
        "timezone": a.time_zone,
        "name": a.name,
        "city": a.city_name,
    })
}

/// `BA117` → (`"BA"`, 117): a 2-character airline code and 1-4 digits.
fn designator(ident: &str) -> Option<(&str, u64)> {
    let (carrier, number) = ident.split_at_checked(2)?;
    let code_ok = carrier
        .bytes()
        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        && carrier.bytes().any(|b| b.is_ascii_uppercase());
    let number_ok = (1..=4).contains(&number.len()) && number.bytes().all(|b| b.is_ascii_digit());
    (code_ok && number_ok).then_some((carrier, number.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn designators_are_an_airline_code_and_up_to_four_digits() {
        assert_eq!(designator("BA117"), Some(("BA", 117)));
        assert_eq!(designator("U22"), Some(("U2", 2)));
        assert_eq!(designator("BA12345"), None);
        assert_eq!(designator("ba117"), None);
        assert_eq!(designator("B"), None);
        assert_eq!(designator("ÉA1"), None);
    }

    #[test]
    fn the_status_follows_the_clock_through_the_day() {
        let day = |h: u32| {
            chrono::NaiveDate::from_ymd_opt(2026, 12, 2)
                .and_then(|d| d.and_hms_opt(h, 0, 0))
                .map(|t| t.and_utc())
                .expect("a valid time")
        };
        let early = flight(7, "BA117", day(0)).expect("BA flies");
        let late = flight(7, "BA117", day(23)).expect("BA flies");
        assert!(
            early["status"]
                .as_str()
                .is_some_and(|s| s.starts_with("Scheduled"))
        );
        assert_eq!(early["actual_out"], Value::Null);
        assert_eq!(
            early["scheduled_out"], late["scheduled_out"],
            "one flight all day"
        );
        assert_eq!(
            early["origin"]["code_iata"], "LHR",
            "odd numbers leave the hub"
        );
    }

    #[test]
    fn bad_and_unknown_idents_are_refused() {
        let now = Utc::now();
        let bad = flight(7, "../x", now).expect_err("not a designator");
        assert_eq!(bad.into_response().status(), StatusCode::BAD_REQUEST);
        let unknown = flight(7, "ZZ1", now).expect_err("no such airline");
        assert_eq!(unknown.into_response().status(), StatusCode::NOT_FOUND);
    }
}
