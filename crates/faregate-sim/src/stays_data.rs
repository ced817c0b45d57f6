//! Generates Duffel Stays accommodations, rooms and rates.
//!
//! A hotel is a pure function of the seed and its own coordinates and "profile" number, which
//! its `acc_…` id encodes, so `accommodation.ids` searches and repeated searches give the same
//! hotel. Rooms and rates are a pure function of the hotel, the dates, rooms and guests.
//! Addresses use the nearest known city within 60 km, else a generic town name.

use chrono::{NaiveDate, TimeDelta};
use serde_json::{Value, json};

use super::data::{Rng, base62, fmt_minor, hash_str, nearest_city, unbase62};
use super::tables::{self, GENERIC_TOWNS, HOTEL_PREFIXES, STREETS};

/// How a search result's availability looks once all rates are fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Availability {
    /// Rooms with bookable rates.
    Available,
    /// No rooms at all (`rooms: []`).
    NoRooms,
    /// Rooms listed, every rate with `quantity_available: 0`.
    SoldOut,
}

/// A generated accommodation.
#[derive(Debug, Clone)]
pub(crate) struct Hotel {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) rating: u64,
    pub(crate) review_tenths: u64,
    pub(crate) lat: f64,
    pub(crate) lon: f64,
    pub(crate) line_one: String,
    pub(crate) city_name: String,
    pub(crate) postal_code: String,
    pub(crate) country: &'static str,
    pub(crate) currency: &'static str,
    /// Nightly price of the cheapest room, GBP minor units.
    nightly_gbp: i64,
}

/// The stay being priced.
#[derive(Debug, Clone)]
pub(crate) struct StayQuery {
    pub(crate) check_in: NaiveDate,
    pub(crate) check_out: NaiveDate,
    pub(crate) rooms: u64,
    pub(crate) adults: u64,
    pub(crate) children: u64,
    pub(crate) free_cancellation_only: bool,
}

/// One rate of a room, amounts in the hotel's currency (minor units).
#[derive(Debug, Clone)]
pub(crate) struct RateSpec {
    pub(crate) board: &'static str,
    pub(crate) payment_type: &'static str,
    pub(crate) refundable: bool,
    pub(crate) base: i64,
    pub(crate) tax: i64,
    pub(crate) fee: i64,
    pub(crate) total: i64,
    quantity: u64,
}

/// One room type with its rates.
#[derive(Debug, Clone)]
pub(crate) struct RoomSpec {
    pub(crate) name: &'static str,
    pub(crate) bed: (&'static str, u64),
    pub(crate) rates: Vec<RateSpec>,
}

const CHECKSUM_LEN: usize = 7;

/// Encodes a hotel's coordinates (1e-4 degrees) and profile into an `acc_` id.
fn hotel_id(lat_e4: u64, lon_e4: u64, profile: u64) -> String {
    let packed = (lat_e4 << 38) | (lon_e4 << 16) | (profile & 0xFFFF);
    let check = hash_str(0, &packed.to_string());
    format!(
        "acc_0000{}{}",
        base62(packed, 11),
        base62(check, CHECKSUM_LEN)
    )
}

/// Decodes an `acc_` id minted by [`hotel_id`]; `None` for anything else.
pub(crate) fn decode_hotel_id(id: &str) -> Option<(u64, u64, u64)> {
    let body = id.strip_prefix("acc_0000")?;
    if body.len() != 11 + CHECKSUM_LEN || !body.is_ascii() {
        return None;
    }
    let packed = unbase62(&body[..11])?;
    if base62(hash_str(0, &packed.to_string()), CHECKSUM_LEN) != body[11..] {
        return None;
    }
    let (lat_e4, lon_e4) = (packed >> 38, (packed >> 16) & 0x3F_FFFF);
    (lat_e4 <= 1_800_000 && lon_e4 <= 3_600_000).then_some((lat_e4, lon_e4, packed & 0xFFFF))
}

fn postal_code(rng: &mut Rng, country: &str) -> String {
    let l = |rng: &mut Rng| char::from(b'A' + rng.range(0, 25) as u8);
    match country {
        "GB" => format!(
            "{}{}{} {}{}{}",
            l(rng),
            l(rng),
            rng.range(1, 20),
            rng.range(1, 9),
            l(rng),
            l(rng)
        ),
        "NL" => format!("{} {}{}", rng.range(1000, 9999), l(rng), l(rng)),
        "US" | "FR" | "DE" | "ES" | "IT" | "FI" => format!("{:05}", rng.range(1000, 99_999)),
        _ => format!("{}", rng.range(1000, 9999)),
    }
}

/// The hotel at these coordinates (1e-4 degrees, offset by +90/+180) with this profile.
pub(crate) fn hotel(seed: u64, lat_e4: u64, lon_e4: u64, profile: u64) -> Hotel {
    let mut rng = Rng::new(hash_str(seed, &format!("acc:{lat_e4}:{lon_e4}:{profile}")));
    let lat = lat_e4 as f64 / 1e4 - 90.0;
    let lon = lon_e4 as f64 / 1e4 - 180.0;
    let (city, country, dist) = nearest_city(lat, lon);
    let city_name = if dist <= 60.0 {
        city.to_owned()
    } else {
        rng.pick(GENERIC_TOWNS).to_string()
    };
    let rating = *rng.pick(&[2, 3, 3, 4, 4, 4, 5, 5]);
    let review_tenths = (55 + rating * 6 + rng.range(0, 14)).min(98);
    let expensive = [
        "London",
        "Paris",
        "New York",
        "Tokyo",
        "Zurich",
        "Singapore",
        "San Francisco",
        "Hong Kong",
        "Dubai",
    ];
    let city_factor = if expensive.contains(&city_name.as_str()) {
        1.35
    } else {
        1.0
    };
    let per_star = [0, 4500, 6500, 11_000, 17_500, 32_000][rating as usize];
    let nightly_gbp = (per_star as f64 * city_factor * rng.between(0.8, 1.25)).round() as i64;
    Hotel {
        id: hotel_id(lat_e4, lon_e4, profile),
        name: format!(
            "{} {}",
            HOTEL_PREFIXES[(profile % HOTEL_PREFIXES.len() as u64) as usize],
            city_name
        ),
        rating,
        review_tenths,
        lat,
        lon,
        line_one: format!("{} {}", rng.range(1, 180), rng.pick(STREETS)),
        postal_code: postal_code(&mut rng, country),
        city_name,
        country,
        currency: tables::currency_for_country(country),
        nightly_gbp,
    }
}

/// 5-12 hotels within `radius_km` of a point, deterministic in the seed, point and radius.
pub(crate) fn hotels_near(seed: u64, lat: f64, lon: f64, radius_km: f64) -> Vec<Hotel> {
    let mut rng = Rng::new(hash_str(
        seed,
        &format!("near:{lat:.3}:{lon:.3}:{radius_km:.1}"),
    ));
    let n = rng.range(5, 12);
    let first_prefix = rng.next_u64();
    (0..n)
        .map(|i| {
            let bearing = rng.between(0.0, std::f64::consts::TAU);
            let d = radius_km * rng.unit().sqrt() * 0.95;
            let hlat = (lat + d / 111.0 * bearing.cos()).clamp(-89.9, 89.9);
            let hlon = lon + d / (111.0 * lat.to_radians().cos().max(0.05)) * bearing.sin();
            let hlon = if hlon > 180.0 {
                hlon - 360.0
            } else if hlon < -180.0 {
                hlon + 360.0
            } else {
                hlon
            };
            let prefix = (first_prefix + i) % HOTEL_PREFIXES.len() as u64;
            let profile = (rng.next_u64() & 0xFFF0) | prefix;
            let lat_e4 = ((hlat + 90.0) * 1e4).round() as u64;
            let lon_e4 = ((hlon + 180.0) * 1e4).round() as u64;
            hotel(seed, lat_e4, lon_e4, profile)
        })
        .collect()
}

const ROOM_TYPES: &[(&str, (&str, u64), f64)] = &[
    ("Standard Double Room", ("double", 1), 1.0),
    ("Superior King Room", ("king", 1), 1.25),
    ("Deluxe Twin Room", ("twin", 2), 1.4),
    ("Family Room", ("double", 2), 1.6),
    ("Junior Suite", ("king", 1), 1.9),
];
const BOARDS: &[(&str, f64)] = &[("room_only", 1.0), ("breakfast", 1.12), ("half_board", 1.3)];

/// The rooms and rates of a hotel for a stay.
pub(crate) fn rooms(seed: u64, h: &Hotel, q: &StayQuery) -> Vec<RoomSpec> {
    let key = format!(
        "rooms:{}:{}:{}:{}:{}:{}",
        h.id, q.check_in, q.check_out, q.rooms, q.adults, q.children
    );
    let mut rng = Rng::new(hash_str(seed, &key));
    let nights = (q.check_out - q.check_in).num_days().max(1);
    let per_room_adults = (q.adults as f64 / q.rooms.max(1) as f64).max(1.0);
    let occupancy = 1.0 + 0.15 * (per_room_adults - 1.0) + 0.1 * q.children as f64;
    let first = rng.range(0, 1) as usize;
    let count = rng.range(1, 3) as usize;
    ROOM_TYPES
        .iter()
        .skip(first)
        .take(count)
        .map(|&(name, bed, factor)| {
            let n_rates = rng.range(1, 3) as usize;
            let rates = BOARDS
                .iter()
                .take(n_rates)
                .enumerate()
                .flat_map(|(j, &(board, board_factor))| {
                    [true, false].map(|refundable| (j, board, board_factor, refundable))
                })
                .filter(|&(j, .., refundable)| j % 2 == 0 || !refundable)
                .filter(|&(.., refundable)| refundable || !q.free_cancellation_only)
                .map(|(_, board, board_factor, refundable)| {
                    let nightly = h.nightly_gbp as f64
                        * factor
                        * board_factor
                        * occupancy
                        * if refundable { 1.1 } else { 1.0 };
                    let gbp = (nightly * nights as f64 * q.rooms as f64).round() as i64;
                    let base = tables::convert_from_gbp(gbp, h.currency);
                    let tax = base / 10;
                    let fee = if h.currency == "EUR" {
                        250 * nights * q.rooms as i64
                    } else {
                        0
                    };
                    let payment_type = if !refundable {
                        "pay_now"
                    } else if rng.range(0, 2) == 0 {
                        "deposit"
                    } else {
                        "guarantee"
                    };
                    RateSpec {
                        board,
                        payment_type,
                        refundable,
                        base,
                        tax,
                        fee,
                        total: base + tax + fee,
                        quantity: rng.range(1, 5),
                    }
                })
                .collect();
            RoomSpec { name, bed, rates }
        })
        .filter(|r: &RoomSpec| !r.rates.is_empty())
        .collect()
}

/// The cheapest rate across rooms, if any.
pub(crate) fn cheapest(rooms: &[RoomSpec]) -> Option<&RateSpec> {
    rooms.iter().flat_map(|r| &r.rates).min_by_key(|r| r.total)
}

/// The accommodation object (rooms left empty, as the search step returns it).
pub(crate) fn accommodation_json(h: &Hotel) -> Value {
    json!({
        "id": h.id,
        "name": h.name,
        "rating": h.rating,
        "review_score": h.review_tenths as f64 / 10.0,
        "description": format!("A {}-star hotel in {}.", h.rating, h.city_name),
        "location": {
            "address": { "line_one": h.line_one, "city_name": h.city_name, "postal_code": h.postal_code, "country_code": h.country },
            "geographic_coordinates": { "latitude": h.lat, "longitude": h.lon },
        },
        "amenities": [ { "type": "wifi", "description": "Free WiFi" } ],
        "check_in_information": { "check_in_after_time": "15:00", "check_out_before_time": "11:00" },
        "photos": [],
        "chain": null,
        "phone_number": null,
        "email": null,
        "rooms": [],
    })
}

/// The rooms array `fetch_all_rates` returns, with fresh `rat_` ids.
pub(crate) fn rooms_json(
    rooms: &[RoomSpec],
    availability: Availability,
    currency: &str,
    check_in: NaiveDate,
    ids: &mut dyn FnMut(&str) -> String,
) -> Value {
    if availability == Availability::NoRooms {
        return json!([]);
    }
    let deadline = format!("{}T23:59:00Z", check_in - TimeDelta::days(2));
    let rooms: Vec<Value> = rooms
        .iter()
        .map(|r| {
            let rates: Vec<Value> = r
                .rates
                .iter()
                .map(|rate| {
                    let timeline = if rate.refundable {
                        json!([{ "before": deadline, "refund_amount": fmt_minor(rate.total), "currency": currency }])
                    } else {
                        json!([])
                    };
                    let policy = if rate.refundable {
                        format!("Free cancellation before {deadline}.")
                    } else {
                        "Non-refundable.".to_owned()
                    };
                    json!({
                        "id": ids("rat"),
                        "total_amount": fmt_minor(rate.total), "total_currency": currency,
                        "base_amount": fmt_minor(rate.base), "base_currency": currency,
                        "tax_amount": fmt_minor(rate.tax), "tax_currency": currency,
                        "fee_amount": fmt_minor(rate.fee), "fee_currency": currency,
                        "due_at_accommodation_amount": "0.00", "due_at_accommodation_currency": currency,
                        "board_type": rate.board,
                        "payment_type": rate.payment_type,
                        "available_payment_methods": ["balance"],
                        "quantity_available": if availability == Availability::SoldOut { 0 } else { rate.quantity },
                        "cancellation_timeline": timeline,
                        "conditions": [{ "title": "Cancellation policy", "description": policy }],
                        "supported_loyalty_programme": null,
                    })
                })
                .collect();
            json!({ "name": r.name, "beds": [{ "type": r.bed.0, "count": r.bed.1 }], "photos": [], "rates": rates })
        })
        .collect();
    Value::Array(rooms)
}
