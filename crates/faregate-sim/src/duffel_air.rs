//! Duffel Air search routes: offer requests (search) and offers (price one offer).
//!
//! Validation follows Duffel: every problem is reported at once as a 422 `validation_error`
//! whose `source.pointer` names the field (without the `/data` prefix, as Duffel does).
//! An expired offer is 422 `invalid_state_error` / `offer_no_longer_available`.

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::{DateTime, NaiveDate, TimeDelta, Utc};
use serde_json::{Map, Value, json};

use super::air_data::{self, Cabin, PaxIn, PaxKind, PlaceRef, Search, SliceIn};

use super::store::{KeptJson, StoredOffer};
use super::validate::{Checker, query_bool, query_pairs};
use super::wire::{DuffelError, data_response, parse_data};
use super::{Simulator, lock};

fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// `POST /air/offer_requests`: validates the search, generates and stores offers, 201.
pub(crate) async fn create_offer_request(
    State(sim): State<Simulator>,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Result<Response, DuffelError> {
    let mut c = Checker::default();
    let pairs = query_pairs(query.as_deref());
    let return_offers = query_bool(&mut c, &pairs, "return_offers", true);
    if let Some((_, v)) = pairs.iter().find(|(k, _)| *k == "supplier_timeout")
        && !v.parse::<u64>().is_ok_and(|n| (2000..=60_000).contains(&n))
    {
        c.invalid(
            "/supplier_timeout",
            format!("supplier_timeout must be milliseconds from 2000 to 60000, got '{v}'"),
        );
    }
    let data = parse_data(&body)?;
    let now = Utc::now();
    let search = parse_search(&mut c, &data, now, &sim);
    let search = match search {
        Some(s) if c.errors.is_empty() => s,
        _ => return Err(DuffelError::validation(c.errors)),
    };

    let mut ids = |prefix: &str| sim.new_id(prefix);
    let offers = air_data::generate(sim.inner.seed, &search, now, &mut ids);
    let mut out = Vec::with_capacity(offers.len());
    {
        let mut store = lock(&sim.inner.offers);
        for o in offers {
            let id = o.json["id"].as_str().unwrap_or_default().to_owned();
            store.insert(
                id,
                StoredOffer {
                    json: KeptJson::keep(&o.json),
                    services: KeptJson::keep(&Value::Array(o.services)),
                    expires_at: now + TimeDelta::minutes(30),
                    total_minor: o.total_minor,
                    currency: o.currency.to_owned(),
                    passenger_ids: search.passengers.iter().map(|p| p.id.clone()).collect(),
                    requires_instant_payment: o.requires_instant_payment,
                },
            );
            out.push(o.json);
        }
    }
    let slices: Vec<Value> = search
        .slices
        .iter()
        .map(|s| {
            json!({ "origin_type": s.origin.kind(), "origin": s.origin.json(),
                    "destination_type": s.destination.kind(), "destination": s.destination.json(),
                    "departure_date": s.date.to_string(), "departure_time": null, "arrival_time": null })
        })
        .collect();
    let mut orq = json!({
        "id": sim.new_id("orq"),
        "live_mode": false,
        "created_at": ts(now),
        "cabin_class": data.get("cabin_class").cloned().unwrap_or(Value::Null),
        "client_key": null,
        "slices": slices,
        "passengers": search.passengers.iter().map(PaxIn::json).collect::<Vec<_>>(),
    });
    if return_offers {
        orq["offers"] = Value::Array(out);
    }
    Ok(data_response(StatusCode::CREATED, orq))
}

fn parse_search(
    c: &mut Checker,
    data: &Map<String, Value>,
    now: DateTime<Utc>,
    sim: &Simulator,
) -> Option<Search> {
    let slices = parse_slices(c, data, now);
    let passengers = parse_passengers(c, data, sim);
    let cabin = match data.get("cabin_class") {
        None | Some(Value::Null) => Some(Cabin::Economy),
        Some(_) => c
            .one_of(
                data,
                "cabin_class",
                "/cabin_class",
                &["first", "business", "premium_economy", "economy"],
            )
            .and_then(Cabin::parse),
    };
    let max_connections = c.opt_int_in(data, "max_connections", "/max_connections", 0, 2, 1);
    Some(Search {
        slices: slices?,
        passengers: passengers?,
        cabin: cabin?,
        max_connections,
        price_factor: sim.price_factor(),
    })
}

fn parse_place(
    c: &mut Checker,
    s: &Map<String, Value>,
    key: &str,
    pointer: &str,
) -> Option<PlaceRef> {
    let code = c.string(s, key, pointer)?;
    if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_uppercase()) {
        c.invalid_code(
            "invalid_airport",
            pointer,
            format!(
                "Field '{key}' must be a 3-letter uppercase IATA airport or city code, got '{code}'"
            ),
        );
        return None;
    }
    let place = PlaceRef::lookup(code);
    if place.is_none() {
        c.invalid_code(
            "invalid_airport",
            pointer,
            format!("Field '{key}' is not a known airport or city: '{code}'"),
        );
    }
    place
}

fn parse_slices(
    c: &mut Checker,
    data: &Map<String, Value>,
    now: DateTime<Utc>,
) -> Option<Vec<SliceIn>> {
    let raw = c.array(data, "slices", "/slices")?;
    if raw.len() > 6 {
        c.invalid("/slices", "At most 6 slices are supported");
        return None;
    }
    let mut out = Vec::new();
    let mut ok = true;
    for (i, v) in raw.iter().enumerate() {
        let p = format!("/slices/{i}");
        let Some(s) = c.item(v, &p) else {
            ok = false;
            continue;
        };
        let origin = parse_place(c, s, "origin", &format!("{p}/origin"));
        let destination = parse_place(c, s, "destination", &format!("{p}/destination"));
        let date = c.date(s, "departure_date", &format!("{p}/departure_date"));
        if let (Some(d), Some(o)) = (date, &origin) {
            let today = local_today(o, now);
            if d < today {
                c.invalid(&format!("{p}/departure_date"), format!("Field 'departure_date' must not be in the past (today at the origin is {today}), got {d}"));
            } else if d > today + TimeDelta::days(361) {
                c.invalid(
                    &format!("{p}/departure_date"),
                    format!("Field 'departure_date' must be within 361 days, got {d}"),
                );
            }
        }
        if let (Some(o), Some(d)) = (&origin, &destination)
            && same_city(o, d)
        {
            c.invalid(
                &format!("{p}/destination"),
                "Field 'destination' must be in another city than 'origin'",
            );
        }
        match (origin, destination, date) {
            (Some(origin), Some(destination), Some(date)) => out.push(SliceIn {
                origin,
                destination,
                date,
            }),
            _ => ok = false,
        }
    }
    ok.then_some(out)
}

fn city_of(p: &PlaceRef) -> &'static str {
    match p {
        PlaceRef::Airport(a) => a.city_code,
        PlaceRef::City(list) => list.first().map_or("", |a| a.city_code),
    }
}

fn same_city(a: &PlaceRef, b: &PlaceRef) -> bool {
    city_of(a) == city_of(b)
}

fn local_today(p: &PlaceRef, now: DateTime<Utc>) -> NaiveDate {
    let a = match p {
        PlaceRef::Airport(a) => Some(*a),
        PlaceRef::City(list) => list.first().copied(),
    };
    let naive = now.naive_utc();
    a.map_or(naive.date(), |a| {
        (naive + TimeDelta::minutes(i64::from(super::tables::utc_offset_min(a, naive.date()))))
            .date()
    })
}

fn parse_passengers(
    c: &mut Checker,
    data: &Map<String, Value>,
    sim: &Simulator,
) -> Option<Vec<PaxIn>> {
    let raw = c.array(data, "passengers", "/passengers")?;
    if raw.len() > 9 {
        c.invalid(
            "/passengers",
            "At most 9 passengers can be searched at once",
        );
        return None;
    }
    let mut out = Vec::new();
    let errors_before = c.errors.len();
    for (i, v) in raw.iter().enumerate() {
        let p = format!("/passengers/{i}");
        let Some(m) = c.item(v, &p) else { continue };
        let has = |k: &str| m.get(k).is_some_and(|v| !v.is_null());
        let (kind, age) = match (has("type"), has("age")) {
            (true, true) => {
                c.invalid(&p, "Give either 'type' or 'age' for a passenger, not both");
                continue;
            }
            (true, false) => {
                if c.one_of(m, "type", &format!("{p}/type"), &["adult"])
                    .is_none()
                {
                    continue;
                }
                (PaxKind::Adult, None)
            }
            (false, true) => match c.int_in(m, "age", &format!("{p}/age"), 0, 130) {
                Some(age) => (PaxKind::from_age(age), Some(age)),
                None => continue,
            },
            (false, false) if has("fare_type") => (PaxKind::Adult, None),
            (false, false) => {
                c.required(m, "type", &format!("{p}/type"));
                continue;
            }
        };
        out.push(PaxIn {
            id: sim.new_id("pas"),
            kind,
            age,
        });
    }
    if c.errors.len() > errors_before {
        return None;
    }
    let adults = out.iter().filter(|p| p.kind == PaxKind::Adult).count();
    let infants = out.iter().filter(|p| p.kind == PaxKind::Infant).count();
    if adults == 0 {
        c.invalid(
            "/passengers",
            "At least one adult passenger (type 'adult' or age 18+) is required",
        );
        return None;
    }
    if infants > adults {
        c.invalid(
            "/passengers",
            "Each infant (age under 2) must travel with an adult",
        );
        return None;
    }
    Some(out)
}

/// `GET /air/offers/{id}`: the stored offer; 404 if unknown, 422 if expired.
pub(crate) async fn get_offer(
    State(sim): State<Simulator>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, DuffelError> {
    let mut c = Checker::default();
    let pairs = query_pairs(query.as_deref());
    let with_services = query_bool(&mut c, &pairs, "return_available_services", false);
    if !c.errors.is_empty() {
        return Err(DuffelError::validation(c.errors));
    }
    let offer = lock(&sim.inner.offers).get(&id).cloned();
    let Some(offer) = offer else {
        return Err(DuffelError::not_found(&format!("offer '{id}'")));
    };
    if offer.expires_at <= Utc::now() {
        return Err(DuffelError::offer_gone());
    }
    let mut json = offer.json.value();
    if with_services {
        json["available_services"] = offer.services.value();
    }
    Ok(data_response(StatusCode::OK, json))
}
