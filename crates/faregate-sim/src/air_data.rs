//! Generates Duffel Air offers for a validated search.
//!
//! Which airlines can fly a slice: a carrier flies nonstop when one end is its hub, or (full
//! service only) when one end is in its home country and the distance is under 15,500 km;
//! otherwise it connects once through its main hub when `max_connections >= 1` and the detour
//! is under 60 %. Low-cost carriers (U2, FR) fly economy only, nonstop within Europe under
//! 3,500 km, and require instant payment. A search no carrier can serve gets no offers.
//! Segment times are local (no offset) and consistent with the airports' UTC offsets; durations
//! come from great-circle distance at 830 km/h plus 35 minutes. Prices are computed in GBP
//! minor units from distance, cabin, airline, fare brand and passenger type, then converted.

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, TimeDelta, Utc};
use serde_json::{Value, json};

use super::data::{Rng, airport_place, city_place, fmt_minor, hash_str, iso_duration, scale};
use super::tables::{self, AIRCRAFT, AIRLINES, Airline, Airport};

/// A cabin class as Duffel names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cabin {
    Economy,
    PremiumEconomy,
    Business,
    First,
}

impl Cabin {
    pub(crate) fn parse(s: &str) -> Option<Cabin> {
        Some(match s {
            "economy" => Cabin::Economy,
            "premium_economy" => Cabin::PremiumEconomy,
            "business" => Cabin::Business,
            "first" => Cabin::First,
            _ => return None,
        })
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Cabin::Economy => "economy",
            Cabin::PremiumEconomy => "premium_economy",
            Cabin::Business => "business",
            Cabin::First => "first",
        }
    }

    fn marketing_name(self) -> &'static str {
        match self {
            Cabin::Economy => "Economy",
            Cabin::PremiumEconomy => "Premium Economy",
            Cabin::Business => "Business",
            Cabin::First => "First",
        }
    }

    /// (price multiplier, emissions multiplier, fare basis letter)
    fn factors(self) -> (f64, f64, char) {
        match self {
            Cabin::Economy => (1.0, 1.0, 'Q'),
            Cabin::PremiumEconomy => (1.8, 1.5, 'W'),
            Cabin::Business => (4.0, 2.9, 'J'),
            Cabin::First => (7.0, 4.0, 'F'),
        }
    }
}

/// A validated origin or destination: one airport or a metropolitan city.
#[derive(Debug, Clone)]
pub(crate) enum PlaceRef {
    Airport(&'static Airport),
    City(Vec<&'static Airport>),
}

impl PlaceRef {
    /// Resolves an IATA airport or city code from the built-in tables.
    pub(crate) fn lookup(code: &str) -> Option<PlaceRef> {
        if let Some(a) = tables::airport(code) {
            return Some(PlaceRef::Airport(a));
        }
        let city = tables::city_airports(code);
        (!city.is_empty()).then_some(PlaceRef::City(city))
    }

    pub(crate) fn kind(&self) -> &'static str {
        match self {
            PlaceRef::Airport(_) => "airport",
            PlaceRef::City(_) => "city",
        }
    }

    pub(crate) fn json(&self) -> Value {
        match self {
            PlaceRef::Airport(a) => airport_place(a),
            PlaceRef::City(list) => city_place(list),
        }
    }

    fn code(&self) -> &'static str {
        match self {
            PlaceRef::Airport(a) => a.iata,
            PlaceRef::City(list) => list.first().map_or("", |a| a.city_code),
        }
    }

    /// The airport an airline uses: one of its hubs if the city has one, else the first.
    fn airport_for(&self, al: &Airline) -> Option<&'static Airport> {
        match self {
            PlaceRef::Airport(a) => Some(a),
            PlaceRef::City(list) => list
                .iter()
                .find(|a| al.hubs.contains(&a.iata))
                .or_else(|| list.first())
                .copied(),
        }
    }
}

/// One requested slice.
#[derive(Debug, Clone)]
pub(crate) struct SliceIn {
    pub(crate) origin: PlaceRef,
    pub(crate) destination: PlaceRef,
    pub(crate) date: NaiveDate,
}

/// A passenger's fare category.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PaxKind {
    Adult,
    Child,
    Infant,
}

impl PaxKind {
    pub(crate) fn from_age(age: u64) -> PaxKind {
        match age {
            0..=1 => PaxKind::Infant,
            2..=17 => PaxKind::Child,
            _ => PaxKind::Adult,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            PaxKind::Adult => "adult",
            PaxKind::Child => "child",
            PaxKind::Infant => "infant_without_seat",
        }
    }

    fn price_factor(self) -> f64 {
        match self {
            PaxKind::Adult => 1.0,
            PaxKind::Child => 0.75,
            PaxKind::Infant => 0.1,
        }
    }
}

/// One requested passenger, with the `pas_` id the offer request assigned.
#[derive(Debug, Clone)]
pub(crate) struct PaxIn {
    pub(crate) id: String,
    pub(crate) kind: PaxKind,
    pub(crate) age: Option<u64>,
}

impl PaxIn {
    pub(crate) fn json(&self) -> Value {
        json!({ "id": self.id, "type": self.kind.as_str(), "age": self.age, "fare_type": null,
                "given_name": null, "family_name": null, "loyalty_programme_accounts": [] })
    }
}

/// A validated search.
#[derive(Debug, Clone)]
pub(crate) struct Search {
    pub(crate) slices: Vec<SliceIn>,
    pub(crate) passengers: Vec<PaxIn>,
    pub(crate) cabin: Cabin,
    pub(crate) max_connections: u64,
    /// A factor on every price (the simulator's script; 1.0 = as generated). Not part of the
    /// search's key: the same search answers the same offers at another price.
    pub(crate) price_factor: f64,
}

impl Search {
    /// The canonical content that determines the offers (ids excluded).
    fn key(&self) -> String {
        let slices: Vec<String> = self
            .slices
            .iter()
            .map(|s| format!("{}-{}-{}", s.origin.code(), s.destination.code(), s.date))
            .collect();
        let pax: Vec<String> = self
            .passengers
            .iter()
            .map(|p| format!("{}{:?}", p.kind.as_str(), p.age))
            .collect();
        format!(
            "{}|{}|{}|{}",
            slices.join(","),
            pax.join(","),
            self.cabin.as_str(),
            self.max_connections
        )
    }
}

/// One generated offer plus what the order route needs to check.
#[derive(Debug)]
pub(crate) struct GeneratedOffer {
    pub(crate) json: Value,
    pub(crate) services: Vec<Value>,
    pub(crate) total_minor: i64,
    pub(crate) currency: &'static str,
    pub(crate) requires_instant_payment: bool,
}

const BRANDS: [(&str, f64); 3] = [("Basic", 1.0), ("Standard", 1.25), ("Flex", 1.7)];
const SLOTS: [(u32, u32); 8] = [
    (6, 5),
    (7, 40),
    (9, 25),
    (11, 10),
    (13, 45),
    (16, 20),
    (18, 55),
    (21, 30),
];

/// Generates 5-15 offers (fewer only when no airline serves the route), deterministic in
/// `seed` and `search`; `ids` mints fresh ids and `now` stamps the timestamps.
pub(crate) fn generate(
    seed: u64,
    search: &Search,
    now: DateTime<Utc>,
    ids: &mut dyn FnMut(&str) -> String,
) -> Vec<GeneratedOffer> {
    let base = hash_str(seed, &search.key());
    let mut rng = Rng::new(base);
    let mut plans: Vec<(&Airline, Vec<Legs>)> = AIRLINES
        .iter()
        .filter_map(|al| {
            let legs: Option<Vec<_>> = search
                .slices
                .iter()
                .map(|s| plan_slice(al, s, search))
                .collect();
            Some((al, legs?))
        })
        .collect();
    if plans.is_empty() {
        return Vec::new();
    }
    for i in (1..plans.len()).rev() {
        plans.swap(i, rng.range(0, i as u64) as usize);
    }
    let n = rng.range(5, 15) as usize;
    (0..n)
        .map(|i| {
            let (al, legs) = &plans[i % plans.len()];
            let brand = BRANDS[(i / plans.len()) % BRANDS.len()];
            let mut rng = Rng::new(base ^ (i as u64 + 1).wrapping_mul(0xA24B_AED4_963E_E407));
            build_offer(&mut rng, seed, search, al, legs, brand, now, ids)
        })
        .collect()
}

fn in_europe(a: &Airport) -> bool {
    a.time_zone.starts_with("Europe/")
}

/// The legs (from, to) an airline flies for one slice.
type Legs = Vec<(&'static Airport, &'static Airport)>;

/// The legs an airline flies for one slice, if it can.
fn plan_slice(al: &Airline, s: &SliceIn, search: &Search) -> Option<Legs> {
    if al.low_cost && search.cabin != Cabin::Economy {
        return None;
    }
    let (o, d) = (s.origin.airport_for(al)?, s.destination.airport_for(al)?);
    if o.city_code == d.city_code {
        return None;
    }
    let dist = tables::distance_km(o.lat, o.lon, d.lat, d.lon);
    let home = tables::airport(al.hubs[0]).map_or("", |h| h.country);
    let touches_hub = al.hubs.contains(&o.iata) || al.hubs.contains(&d.iata);
    if al.low_cost {
        let ok = touches_hub && dist <= 3500.0 && in_europe(o) && in_europe(d);
        return ok.then(|| vec![(o, d)]);
    }
    if dist <= 15_500.0 && (touches_hub || home == o.country || home == d.country) {
        return Some(vec![(o, d)]);
    }
    let hub = tables::airport(al.hubs[0])?;
    if search.max_connections == 0 || hub.city_code == o.city_code || hub.city_code == d.city_code {
        return None;
    }
    let (l1, l2) = (
        tables::distance_km(o.lat, o.lon, hub.lat, hub.lon),
        tables::distance_km(hub.lat, hub.lon, d.lat, d.lon),
    );
    (l1 + l2 <= 1.6 * dist.max(800.0) && l1 <= 15_500.0 && l2 <= 15_500.0)
        .then(|| vec![(o, hub), (hub, d)])
}

/// A leg's block time in minutes, rounded to 5.
fn block_minutes(dist: f64) -> i64 {
    let m = (dist / 830.0 * 60.0 + 35.0).round() as i64;
    (m + 4) / 5 * 5
}

fn fmt_local(t: NaiveDateTime) -> String {
    t.format("%Y-%m-%dT%H:%M:%S").to_string()
}

fn to_utc(local: NaiveDateTime, a: &Airport) -> NaiveDateTime {
    local - TimeDelta::minutes(i64::from(tables::utc_offset_min(a, local.date())))
}

fn to_local(utc: NaiveDateTime, a: &Airport) -> NaiveDateTime {
    let guess = utc + TimeDelta::minutes(i64::from(a.std_offset_min));
    utc + TimeDelta::minutes(i64::from(tables::utc_offset_min(a, guess.date())))
}

#[allow(clippy::too_many_arguments)]
fn build_offer(
    rng: &mut Rng,
    seed: u64,
    search: &Search,
    al: &Airline,
    legs: &[Legs],
    (brand, brand_factor): (&'static str, f64),
    now: DateTime<Utc>,
    ids: &mut dyn FnMut(&str) -> String,
) -> GeneratedOffer {
    let first_origin = legs
        .first()
        .and_then(|l| l.first())
        .map_or("GB", |(o, _)| o.country);
    let currency = tables::currency_for_country(first_origin);
    let (cabin_price, cabin_co2, fare_letter) = search.cabin.factors();
    let airline_factor = if al.low_cost {
        0.55
    } else {
        0.95 + (hash_str(seed, al.iata) % 21) as f64 / 100.0
    };
    let noise = rng.between(0.85, 1.3);
    let seated = search
        .passengers
        .iter()
        .filter(|p| p.kind != PaxKind::Infant)
        .count() as f64;
    let checked = match (al.low_cost, search.cabin, brand) {
        (true, ..) | (false, Cabin::Economy, "Basic") => 0,
        (false, Cabin::Economy | Cabin::PremiumEconomy, "Standard") => 1,
        _ => 2,
    };
    let fare_basis = format!(
        "{fare_letter}{}{}",
        &al.iata[..1],
        1000 + hash_str(seed, brand) % 9000
    );

    let (mut base_minor, mut tax_minor, mut co2) = (0i64, 0i64, 0.0f64);
    let mut slices = Vec::new();
    let mut services = Vec::new();
    for (s_idx, (slice, legs)) in search.slices.iter().zip(legs).enumerate() {
        let (h, m) = SLOTS[rng.range(0, SLOTS.len() as u64 - 1) as usize];
        let shift = (hash_str(seed, al.iata) % 4) as u32 * 5;
        let minutes_of_day = h * 60 + m + shift;
        let time = NaiveTime::from_hms_opt(minutes_of_day / 60, minutes_of_day % 60, 0);
        let mut dep_local = slice.date.and_time(time.unwrap_or(NaiveTime::MIN));
        let mut segments = Vec::new();
        let mut seg_ids = Vec::new();
        let (mut first_dep_utc, mut last_arr_utc) = (None, None);
        let mut slice_km = 0.0;
        for (leg_idx, (from, to)) in legs.iter().enumerate() {
            let dist = tables::distance_km(from.lat, from.lon, to.lat, to.lon);
            slice_km += dist;
            let minutes = block_minutes(dist);
            let dep_utc = to_utc(dep_local, from);
            let arr_utc = dep_utc + TimeDelta::minutes(minutes);
            let arr_local = to_local(arr_utc, to);
            first_dep_utc.get_or_insert(dep_utc);
            last_arr_utc = Some(arr_utc);
            let route = format!("{}{}{}", al.iata, from.iata, to.iata);
            let number = if al.low_cost {
                1000 + hash_str(seed, &route) % 8000
            } else {
                100 + hash_str(seed, &route) % 800
            } + 2 * u64::from(h);
            let long_haul = dist > 4000.0;
            let fleet: Vec<_> = AIRCRAFT.iter().filter(|a| a.2 == long_haul).collect();
            let craft = fleet[(hash_str(seed, &route) % fleet.len() as u64) as usize];
            let seg_id = ids("seg");
            seg_ids.push(seg_id.clone());
            let carrier = json!({ "id": al.id, "iata_code": al.iata, "name": al.name });
            let pax: Vec<Value> = search
                .passengers
                .iter()
                .map(|p| {
                    let bags = if p.kind == PaxKind::Infant {
                        json!([])
                    } else {
                        json!([{ "type": "checked", "quantity": checked }, { "type": "carry_on", "quantity": 1 }])
                    };
                    json!({ "passenger_id": p.id, "cabin_class": search.cabin.as_str(),
                            "cabin_class_marketing_name": search.cabin.marketing_name(),
                            "fare_basis_code": fare_basis, "baggages": bags })
                })
                .collect();
            segments.push(json!({
                "id": seg_id,
                "origin": airport_place(from),
                "destination": airport_place(to),
                "origin_terminal": (1 + hash_str(seed, &format!("{}{}", al.iata, from.iata)) % 5).to_string(),
                "destination_terminal": (1 + hash_str(seed, &format!("{}{}", al.iata, to.iata)) % 5).to_string(),
                "departing_at": fmt_local(dep_local),
                "arriving_at": fmt_local(arr_local),
                "duration": iso_duration(minutes),
                "distance": format!("{dist:.1}"),
                "marketing_carrier": carrier,
                "marketing_carrier_flight_number": (number % 10_000).to_string(),
                "operating_carrier": carrier,
                "operating_carrier_flight_number": (number % 10_000).to_string(),
                "aircraft": { "iata_code": craft.0, "name": craft.1 },
                "stops": [],
                "passengers": pax,
            }));
            if leg_idx + 1 < legs.len() {
                dep_local = arr_local + TimeDelta::minutes(rng.range(11, 36) as i64 * 5);
            }
        }
        let slice_minutes = match (first_dep_utc, last_arr_utc) {
            (Some(a), Some(b)) => (b - a).num_minutes(),
            _ => 0,
        };
        let nonstop = if legs.len() == 1 { 1.12 } else { 1.0 };
        for p in &search.passengers {
            let gbp = (4000.0 + slice_km * 8.0)
                * cabin_price
                * airline_factor
                * brand_factor
                * noise
                * nonstop
                * p.kind.price_factor()
                * search.price_factor;
            let b = tables::convert_from_gbp(gbp.round() as i64, currency);
            let t = if p.kind == PaxKind::Infant {
                0
            } else {
                tables::convert_from_gbp(scale(gbp.round() as i64, 0.18) + 2500, currency)
            };
            base_minor += b;
            tax_minor += t;
            if p.kind != PaxKind::Infant {
                let price = tables::convert_from_gbp(
                    if al.low_cost { 3500 } else { 5000 } + 500 * s_idx as i64,
                    currency,
                );
                services.push(json!({
                    "id": ids("ase"), "type": "baggage", "total_amount": fmt_minor(price), "total_currency": currency,
                    "maximum_quantity": if checked == 0 { 2 } else { 1 }, "passenger_ids": [p.id], "segment_ids": seg_ids,
                    "metadata": { "type": "checked", "maximum_weight_kg": 23, "maximum_length_cm": 90,
                                  "maximum_height_cm": 75, "maximum_depth_cm": 43 },
                }));
            }
        }
        co2 += slice_km * 0.09 * cabin_co2 * seated;
        let first = legs.first().map(|l| l.0);
        let last = legs.last().map(|l| l.1);
        slices.push(json!({
            "id": ids("sli"),
            "origin_type": "airport",
            "origin": first.map_or(Value::Null, airport_place),
            "destination_type": "airport",
            "destination": last.map_or(Value::Null, airport_place),
            "duration": iso_duration(slice_minutes),
            "fare_brand_name": brand,
            "segments": segments,
        }));
    }
    let total_minor = base_minor + tax_minor;
    let requires_instant_payment = al.low_cost;
    let ts = |t: DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let payment = if requires_instant_payment {
        json!({ "requires_instant_payment": true, "price_guarantee_expires_at": null, "payment_required_by": null })
    } else {
        json!({ "requires_instant_payment": false,
                "price_guarantee_expires_at": ts(now + TimeDelta::hours(24)),
                "payment_required_by": ts(now + TimeDelta::hours(72)) })
    };
    let penalty = |allowed: bool, minor: i64| {
        if allowed {
            json!({ "allowed": true, "penalty_amount": fmt_minor(minor), "penalty_currency": currency })
        } else {
            json!({ "allowed": false, "penalty_amount": null, "penalty_currency": null })
        }
    };
    let change_fee = tables::convert_from_gbp(7500, currency);
    let json = json!({
        "id": ids("off"),
        "live_mode": false,
        "created_at": ts(now),
        "updated_at": ts(now),
        "expires_at": ts(now + TimeDelta::minutes(30)),
        "partial": false,
        "total_amount": fmt_minor(total_minor),
        "total_currency": currency,
        "base_amount": fmt_minor(base_minor),
        "base_currency": currency,
        "tax_amount": fmt_minor(tax_minor),
        "tax_currency": currency,
        "total_emissions_kg": format!("{}", co2.round() as i64),
        "owner": { "id": al.id, "iata_code": al.iata, "name": al.name },
        "passengers": search.passengers.iter().map(PaxIn::json).collect::<Vec<_>>(),
        "passenger_identity_documents_required": false,
        "supported_passenger_identity_document_types": ["passport"],
        "payment_requirements": payment,
        "conditions": {
            "change_before_departure": penalty(brand != "Basic", if brand == "Flex" { 0 } else { change_fee }),
            "refund_before_departure": penalty(brand == "Flex", 0),
        },
        "slices": slices,
    });
    GeneratedOffer {
        json,
        services,
        total_minor,
        currency,
        requires_instant_payment,
    }
}
