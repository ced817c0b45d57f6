//! City centres for IATA city codes, so that `search_hotels` with a `city_code` works against
//! Duffel Stays, which searches around coordinates only.
//!
//! A deliberately small table of major travel cities; a code not listed here needs coordinates
//! from the caller, and the adapter says so.

/// `(IATA city code, name, latitude, longitude)` of city centres.
pub(crate) static CITIES: &[(&str, &str, f64, f64)] = &[
    ("AMS", "Amsterdam", 52.3728, 4.8936),
    ("ATH", "Athens", 37.9755, 23.7348),
    ("BCN", "Barcelona", 41.3874, 2.1686),
    ("BER", "Berlin", 52.5200, 13.4050),
    ("BKK", "Bangkok", 13.7563, 100.5018),
    ("BOS", "Boston", 42.3601, -71.0589),
    ("BRU", "Brussels", 50.8467, 4.3525),
    ("CHI", "Chicago", 41.8781, -87.6298),
    ("CPH", "Copenhagen", 55.6761, 12.5683),
    ("DUB", "Dublin", 53.3498, -6.2603),
    ("DXB", "Dubai", 25.2048, 55.2708),
    ("EDI", "Edinburgh", 55.9533, -3.1883),
    ("FRA", "Frankfurt", 50.1109, 8.6821),
    ("HKG", "Hong Kong", 22.3193, 114.1694),
    ("IST", "Istanbul", 41.0082, 28.9784),
    ("LAX", "Los Angeles", 34.0522, -118.2437),
    ("LIS", "Lisbon", 38.7223, -9.1393),
    ("LON", "London", 51.5072, -0.1276),
    ("MAD", "Madrid", 40.4168, -3.7038),
    ("MIA", "Miami", 25.7617, -80.1918),
    ("MIL", "Milan", 45.4642, 9.1900),
    ("MUC", "Munich", 48.1351, 11.5820),
    ("NYC", "New York", 40.7128, -74.0060),
    ("OSL", "Oslo", 59.9139, 10.7522),
    ("PAR", "Paris", 48.8566, 2.3522),
    ("PRG", "Prague", 50.0755, 14.4378),
    ("ROM", "Rome", 41.9028, 12.4964),
    ("SFO", "San Francisco", 37.7749, -122.4194),
    ("SIN", "Singapore", 1.3521, 103.8198),
    ("STO", "Stockholm", 59.3293, 18.0686),
    ("SYD", "Sydney", -33.8688, 151.2093),
    ("TYO", "Tokyo", 35.6762, 139.6503),
    ("VIE", "Vienna", 48.2082, 16.3738),
    ("WAS", "Washington", 38.9072, -77.0369),
    ("YTO", "Toronto", 43.6532, -79.3832),
    ("ZRH", "Zurich", 47.3769, 8.5417),
];

/// The centre of a city by its IATA city code.
pub(crate) fn centre(code: &str) -> Option<(&'static str, f64, f64)> {
    CITIES
        .iter()
        .find(|(c, ..)| *c == code)
        .map(|(_, name, lat, lon)| (*name, *lat, *lon))
}
