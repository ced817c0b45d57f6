//! Deterministic building blocks for generated data: a seeded PRNG, stable hashing, money and
//! duration formatting, and Duffel Place objects.
//!
//! Every generator seeds an [`Rng`] from a hash of the simulator seed and the request's
//! content, so the same request always yields the same data (ids and timestamps excepted).

use serde_json::{Value, json};

use super::tables::{self, Airport};

/// SplitMix64's finalizer: a fast, well-mixed 64-bit hash of `z`.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A stable hash of `seed` and a string (FNV-1a, then mixed); unlike `std`'s hasher it never
/// changes between Rust releases, so generated data stays stable across toolchains.
pub(crate) fn hash_str(seed: u64, s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    mix(h)
}

/// A small deterministic PRNG (SplitMix64).
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    /// A value in `lo..=hi`.
    pub(crate) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// A float in `[0, 1)`.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A float in `[lo, hi)`.
    pub(crate) fn between(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// One element of a non-empty slice.
    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next_u64() % items.len() as u64) as usize]
    }
}

/// Formats minor units as a Duffel decimal string with 2 decimals (`81240` → `"812.40"`).
pub(crate) fn fmt_minor(minor: i64) -> String {
    let sign = if minor < 0 { "-" } else { "" };
    let m = minor.unsigned_abs();
    format!("{sign}{}.{:02}", m / 100, m % 100)
}

/// Parses a decimal amount (`"812.4"`, `"812.40"`, `"812"`) into minor units; `None` if it is
/// not a plain non-negative decimal with at most 2 decimals.
pub(crate) fn parse_minor(s: &str) -> Option<i64> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty()
        || frac.len() > 2
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let int: i64 = int.parse().ok()?;
    let frac: i64 = format!("{frac:0<2}").parse().ok()?;
    int.checked_mul(100)?.checked_add(frac)
}

/// Scales minor units by a factor, rounding to the nearest unit.
pub(crate) fn scale(minor: i64, factor: f64) -> i64 {
    (minor as f64 * factor).round() as i64
}

/// An ISO 8601 duration as Duffel writes it: `PT07H05M`, or `P1DT02H10M` past a day.
pub(crate) fn iso_duration(minutes: i64) -> String {
    let (d, h, m) = (minutes / 1440, (minutes % 1440) / 60, minutes % 60);
    if d > 0 {
        format!("P{d}DT{h:02}H{m:02}M")
    } else {
        format!("PT{h:02}H{m:02}M")
    }
}

/// A Duffel airport Place object (with its city).
pub(crate) fn airport_place(a: &Airport) -> Value {
    json!({
        "type": "airport",
        "id": format!("arp_{}_{}", a.iata.to_lowercase(), a.country.to_lowercase()),
        "iata_code": a.iata,
        "icao_code": a.icao,
        "name": a.name,
        "city_name": a.city_name,
        "iata_city_code": a.city_code,
        "iata_country_code": a.country,
        "latitude": a.lat,
        "longitude": a.lon,
        "time_zone": a.time_zone,
        "city": {
            "type": "city",
            "id": format!("cit_{}_{}", a.city_code.to_lowercase(), a.country.to_lowercase()),
            "iata_code": a.city_code,
            "name": a.city_name,
            "iata_country_code": a.country,
        },
    })
}

/// A Duffel city Place object with its airports.
pub(crate) fn city_place(airports: &[&Airport]) -> Value {
    let Some(first) = airports.first() else {
        return Value::Null;
    };
    json!({
        "type": "city",
        "id": format!("cit_{}_{}", first.city_code.to_lowercase(), first.country.to_lowercase()),
        "iata_code": first.city_code,
        "name": first.city_name,
        "iata_country_code": first.country,
        "airports": airports.iter().map(|a| airport_place(a)).collect::<Vec<_>>(),
    })
}

/// The nearest known city to a point: (city name, country code, distance km).
pub(crate) fn nearest_city(lat: f64, lon: f64) -> (&'static str, &'static str, f64) {
    tables::AIRPORTS
        .iter()
        .map(|a| {
            (
                a.city_name,
                a.country,
                tables::distance_km(lat, lon, a.lat, a.lon),
            )
        })
        .min_by(|x, y| x.2.total_cmp(&y.2))
        .unwrap_or(("Unknown", "US", f64::MAX))
}

const B62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Fixed-width base-62 encoding of `n` (most significant first).
pub(crate) fn base62(mut n: u64, width: usize) -> String {
    let mut out = vec![b'0'; width];
    for slot in out.iter_mut().rev() {
        *slot = B62[(n % 62) as usize];
        n /= 62;
    }
    String::from_utf8(out).unwrap_or_default()
}

/// Decodes [`base62`]; `None` on a character outside the alphabet or overflow.
pub(crate) fn unbase62(s: &str) -> Option<u64> {
    s.bytes().try_fold(0u64, |acc, b| {
        let d = B62.iter().position(|&c| c == b)? as u64;
        acc.checked_mul(62)?.checked_add(d)
    })
}
