//! Simulated Amadeus On-Demand Flight Status: `GET /v2/schedule/flights`.
//!
//! A flight is a pure function of the seed, carrier, number and date: a carrier from the
//! built-in airline table flies every number between its main hub and an airport chosen by
//! the number (odd numbers leave the hub, even ones return to it), at a departure time chosen
//! by the number, with a block time from the great-circle distance. About one flight in four is
//! delayed (5-90 min), shown as `delays` on the `STD`/`STA` timings, the documented shape
//! (other qualifiers are not documented, so none are sent). Times carry the airport's UTC
//! offset and no seconds (`2026-11-02T08:15+01:00`). An unknown carrier answers 200 with
//! `"data": []` and `meta.count: 0` (the reference's fixture assumption).

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::{NaiveDate, NaiveDateTime, NaiveTime, TimeDelta};
use serde_json::{Value, json};

use super::Simulator;
use super::amadeus_wire::{self as aw, AmadeusError, vnd_json};
use super::data::hash_str;
use super::tables::{self, AIRLINES, Airport};

fn with_offset(local: NaiveDateTime, offset_min: i32) -> String {
    let sign = if offset_min < 0 { '-' } else { '+' };
    let m = offset_min.unsigned_abs();
    format!(
        "{}{sign}{:02}:{:02}",
        local.format("%Y-%m-%dT%H:%M"),
        m / 60,
        m % 60
    )
}

fn iso(minutes: i64) -> String {
    format!("PT{}H{}M", minutes / 60, minutes % 60)
}

/// `GET /v2/schedule/flights`.
pub(crate) async fn flights(
    State(sim): State<Simulator>,
    Query(q): Query<aw::Query>,
) -> Result<Response, AmadeusError> {
    let carrier = aw::required(&q, "carrierCode")?;
    let number = aw::required(&q, "flightNumber")?;
    let date = aw::date(
        "scheduledDepartureDate",
        aw::required(&q, "scheduledDepartureDate")?,
    )?;
    if !(2..=3).contains(&carrier.len())
        || !carrier
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    {
        return Err(AmadeusError::parameter(
            477,
            "INVALID FORMAT",
            "carrierCode",
            format!("carrierCode must be 2-3 characters, got '{carrier}'"),
        ));
    }
    let Some(n) = number
        .parse::<u64>()
        .ok()
        .filter(|_| (1..=4).contains(&number.len()))
    else {
        return Err(AmadeusError::parameter(
            477,
            "INVALID FORMAT",
            "flightNumber",
            format!("flightNumber must be 1-4 digits, got '{number}'"),
        ));
    };
    let path = format!(
        "/v2/schedule/flights?carrierCode={carrier}&flightNumber={number}&scheduledDepartureDate={date}"
    );
    let mut flight = dated_flight(sim.inner.seed, carrier, n, date);
    if let Some(f) = &mut flight {
        super::lock(&sim.inner.script).apply_to_flight(carrier, n, f);
    }
    let data: Vec<Value> = flight.into_iter().collect();
    Ok(vnd_json(
        StatusCode::OK,
        json!({ "meta": { "count": data.len(), "links": { "self": path } }, "data": data }),
    ))
}

fn dated_flight(seed: u64, carrier: &str, number: u64, date: NaiveDate) -> Option<Value> {
    let al = AIRLINES.iter().find(|a| a.iata == carrier)?;
    let hub = tables::airport(al.hubs.first()?)?;
    let h = hash_str(seed, &format!("status:{carrier}:{number}"));
    let reachable: Vec<&Airport> = tables::AIRPORTS
        .iter()
        .filter(|a| a.city_code != hub.city_code)
        .filter(|a| {
            let d = tables::distance_km(hub.lat, hub.lon, a.lat, a.lon);
            if al.low_cost {
                d <= 3500.0
            } else {
                d <= 15_500.0
            }
        })
        .collect();
    let other = *reachable.get((h % reachable.len().max(1) as u64) as usize)?;
    let (from, to) = if number % 2 == 1 {
        (hub, other)
    } else {
        (other, hub)
    };
    let dist = tables::distance_km(from.lat, from.lon, to.lat, to.lon);
    let block = ((dist / 830.0 * 60.0 + 35.0).round() as i64 + 4) / 5 * 5;
    let minute_of_day = 6 * 60 + ((h >> 8) % 16) as u32 * 60 + ((h >> 16) % 12) as u32 * 5;
    let std_local = date.and_time(
        NaiveTime::from_hms_opt(minute_of_day / 60, minute_of_day % 60, 0)
            .unwrap_or(NaiveTime::MIN),
    );
    let from_off = tables::utc_offset_min(from, date);
    let arr_utc = std_local - TimeDelta::minutes(i64::from(from_off)) + TimeDelta::minutes(block);
    let to_off = tables::utc_offset_min(to, arr_utc.date());
    let sta_local = arr_utc + TimeDelta::minutes(i64::from(to_off));
    let delay = (h >> 24).is_multiple_of(4);
    let delays = |m: u64| {
        if delay {
            json!([{ "duration": iso(m as i64) }])
        } else {
            json!([])
        }
    };
    let delay_min = 5 + ((h >> 32) % 18) * 5;
    let gate = format!(
        "{}{}",
        char::from(b'A' + ((h >> 40) % 6) as u8),
        1 + (h >> 44) % 60
    );
    let mut departure_timing =
        json!({ "qualifier": "STD", "value": with_offset(std_local, from_off) });
    let mut arrival_timing = json!({ "qualifier": "STA", "value": with_offset(sta_local, to_off) });
    if delay {
        departure_timing["delays"] = delays(delay_min);
        arrival_timing["delays"] = delays(delay_min);
    }
    let aircraft = if dist > 4000.0 { "789" } else { "320" };
    Some(json!({
        "type": "DatedFlight",
        "scheduledDepartureDate": date.to_string(),
        "flightDesignator": { "carrierCode": carrier, "flightNumber": number },
        "flightPoints": [
            { "iataCode": from.iata, "departure": {
                "terminal": { "code": (1 + (h >> 48) % 5).to_string() }, "gate": { "mainGate": gate },
                "timings": [departure_timing] } },
            { "iataCode": to.iata, "arrival": { "timings": [arrival_timing] } },
        ],
        "segments": [ { "boardPointIataCode": from.iata, "offPointIataCode": to.iata, "scheduledSegmentDuration": iso(block) } ],
        "legs": [ { "boardPointIataCode": from.iata, "offPointIataCode": to.iata,
                    "aircraftEquipment": { "aircraftType": aircraft }, "scheduledLegDuration": iso(block) } ],
    }))
}
