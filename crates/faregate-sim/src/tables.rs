//! Static reference data: airports, cities, airlines and aircraft.
//!
//! The simulator validates IATA codes against these tables (an unknown code is a 422, as Duffel
//! answers for places it does not know) and draws every generated itinerary from them, so
//! names, time zones and coordinates are real. UTC offsets are the standard offsets plus a
//! simple daylight-saving rule per region; the rule works by calendar date, which is good
//! enough for consistent local departure and arrival times.

use chrono::{Datelike, NaiveDate, Weekday};

/// The daylight-saving rule of a time zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dst {
    /// No daylight saving time.
    None,
    /// Last Sunday of March to last Sunday of October (+1 h).
    Eu,
    /// Second Sunday of March to first Sunday of November (+1 h).
    Us,
    /// First Sunday of October to first Sunday of April (+1 h, southern hemisphere).
    Au,
}

/// One airport of the built-in table.
#[derive(Debug)]
pub(crate) struct Airport {
    pub(crate) iata: &'static str,
    pub(crate) icao: &'static str,
    pub(crate) name: &'static str,
    pub(crate) city_code: &'static str,
    pub(crate) city_name: &'static str,
    pub(crate) country: &'static str,
    pub(crate) time_zone: &'static str,
    pub(crate) lat: f64,
    pub(crate) lon: f64,
    /// Standard (winter) UTC offset in minutes.
    pub(crate) std_offset_min: i32,
    pub(crate) dst: Dst,
}

macro_rules! airports {
    ($( $iata:literal $icao:literal $name:literal $city:literal $city_name:literal $cc:literal $tz:literal $lat:literal $lon:literal $off:literal $dst:ident ;)*) => {
        &[ $( Airport { iata: $iata, icao: $icao, name: $name, city_code: $city, city_name: $city_name, country: $cc,
                        time_zone: $tz, lat: $lat, lon: $lon, std_offset_min: $off, dst: Dst::$dst } ),* ]
    };
}

/// The airports the simulator knows (real codes, names and coordinates).
pub(crate) static AIRPORTS: &[Airport] = airports! {
    "LHR" "EGLL" "Heathrow Airport" "LON" "London" "GB" "Europe/London" 51.4700 -0.4543 0 Eu;
    "LGW" "EGKK" "Gatwick Airport" "LON" "London" "GB" "Europe/London" 51.1537 -0.1821 0 Eu;
    "STN" "EGSS" "London Stansted Airport" "LON" "London" "GB" "Europe/London" 51.8860 0.2389 0 Eu;
    "MAN" "EGCC" "Manchester Airport" "MAN" "Manchester" "GB" "Europe/London" 53.3537 -2.2750 0 Eu;
    "EDI" "EGPH" "Edinburgh Airport" "EDI" "Edinburgh" "GB" "Europe/London" 55.9508 -3.3615 0 Eu;
    "DUB" "EIDW" "Dublin Airport" "DUB" "Dublin" "IE" "Europe/Dublin" 53.4213 -6.2701 0 Eu;
    "CDG" "LFPG" "Paris Charles de Gaulle Airport" "PAR" "Paris" "FR" "Europe/Paris" 49.0097 2.5479 60 Eu;
    "ORY" "LFPO" "Paris Orly Airport" "PAR" "Paris" "FR" "Europe/Paris" 48.7262 2.3652 60 Eu;
    "NCE" "LFMN" "Nice Côte d'Azur Airport" "NCE" "Nice" "FR" "Europe/Paris" 43.6584 7.2159 60 Eu;
    "AMS" "EHAM" "Amsterdam Airport Schiphol" "AMS" "Amsterdam" "NL" "Europe/Amsterdam" 52.3105 4.7683 60 Eu;
    "FRA" "EDDF" "Frankfurt Airport" "FRA" "Frankfurt" "DE" "Europe/Berlin" 50.0379 8.5622 60 Eu;
    "MUC" "EDDM" "Munich Airport" "MUC" "Munich" "DE" "Europe/Berlin" 48.3538 11.7861 60 Eu;
    "BER" "EDDB" "Berlin Brandenburg Airport" "BER" "Berlin" "DE" "Europe/Berlin" 52.3667 13.5033 60 Eu;
    "MAD" "LEMD" "Adolfo Suárez Madrid–Barajas Airport" "MAD" "Madrid" "ES" "Europe/Madrid" 40.4983 -3.5676 60 Eu;
    "BCN" "LEBL" "Josep Tarradellas Barcelona-El Prat Airport" "BCN" "Barcelona" "ES" "Europe/Madrid" 41.2974 2.0833 60 Eu;
    "FCO" "LIRF" "Leonardo da Vinci–Fiumicino Airport" "ROM" "Rome" "IT" "Europe/Rome" 41.8003 12.2389 60 Eu;
    "MXP" "LIMC" "Milan Malpensa Airport" "MIL" "Milan" "IT" "Europe/Rome" 45.6306 8.7281 60 Eu;
    "LIS" "LPPT" "Humberto Delgado Airport" "LIS" "Lisbon" "PT" "Europe/Lisbon" 38.7742 -9.1342 0 Eu;
    "ZRH" "LSZH" "Zurich Airport" "ZRH" "Zurich" "CH" "Europe/Zurich" 47.4582 8.5555 60 Eu;
    "VIE" "LOWW" "Vienna International Airport" "VIE" "Vienna" "AT" "Europe/Vienna" 48.1103 16.5697 60 Eu;
    "CPH" "EKCH" "Copenhagen Airport" "CPH" "Copenhagen" "DK" "Europe/Copenhagen" 55.6180 12.6560 60 Eu;
    "ATH" "LGAV" "Athens International Airport" "ATH" "Athens" "GR" "Europe/Athens" 37.9364 23.9445 120 Eu;
    "IST" "LTFM" "Istanbul Airport" "IST" "Istanbul" "TR" "Europe/Istanbul" 41.2753 28.7519 180 None;
    "JFK" "KJFK" "John F. Kennedy International Airport" "NYC" "New York" "US" "America/New_York" 40.6413 -73.7781 -300 Us;
    "EWR" "KEWR" "Newark Liberty International Airport" "NYC" "New York" "US" "America/New_York" 40.6895 -74.1745 -300 Us;
    "BOS" "KBOS" "Boston Logan International Airport" "BOS" "Boston" "US" "America/New_York" 42.3656 -71.0096 -300 Us;
    "IAD" "KIAD" "Washington Dulles International Airport" "WAS" "Washington" "US" "America/New_York" 38.9531 -77.4565 -300 Us;
    "ATL" "KATL" "Hartsfield–Jackson Atlanta International Airport" "ATL" "Atlanta" "US" "America/New_York" 33.6407 -84.4277 -300 Us;
    "MIA" "KMIA" "Miami International Airport" "MIA" "Miami" "US" "America/New_York" 25.7959 -80.2870 -300 Us;
    "ORD" "KORD" "O'Hare International Airport" "CHI" "Chicago" "US" "America/Chicago" 41.9742 -87.9073 -360 Us;
    "DFW" "KDFW" "Dallas Fort Worth International Airport" "DFW" "Dallas" "US" "America/Chicago" 32.8998 -97.0403 -360 Us;
    "DEN" "KDEN" "Denver International Airport" "DEN" "Denver" "US" "America/Denver" 39.8561 -104.6737 -420 Us;
    "LAX" "KLAX" "Los Angeles International Airport" "LAX" "Los Angeles" "US" "America/Los_Angeles" 33.9416 -118.4085 -480 Us;
    "SFO" "KSFO" "San Francisco International Airport" "SFO" "San Francisco" "US" "America/Los_Angeles" 37.6213 -122.3790 -480 Us;
    "SEA" "KSEA" "Seattle–Tacoma International Airport" "SEA" "Seattle" "US" "America/Los_Angeles" 47.4502 -122.3088 -480 Us;
    "YYZ" "CYYZ" "Toronto Pearson International Airport" "YTO" "Toronto" "CA" "America/Toronto" 43.6777 -79.6248 -300 Us;
    "DXB" "OMDB" "Dubai International Airport" "DXB" "Dubai" "AE" "Asia/Dubai" 25.2532 55.3657 240 None;
    "DOH" "OTHH" "Hamad International Airport" "DOH" "Doha" "QA" "Asia/Qatar" 25.2731 51.6081 180 None;
    "SIN" "WSSS" "Singapore Changi Airport" "SIN" "Singapore" "SG" "Asia/Singapore" 1.3644 103.9915 480 None;
    "HND" "RJTT" "Tokyo Haneda Airport" "TYO" "Tokyo" "JP" "Asia/Tokyo" 35.5494 139.7798 540 None;
    "HKG" "VHHH" "Hong Kong International Airport" "HKG" "Hong Kong" "HK" "Asia/Hong_Kong" 22.3080 113.9185 480 None;
    "SYD" "YSSY" "Sydney Kingsford Smith Airport" "SYD" "Sydney" "AU" "Australia/Sydney" -33.9399 151.1753 600 Au;
};

/// Looks an airport up by its IATA code.
pub(crate) fn airport(iata: &str) -> Option<&'static Airport> {
    AIRPORTS.iter().find(|a| a.iata == iata)
}

/// All airports of a metropolitan city code (e.g. `LON`), in table order.
pub(crate) fn city_airports(city_code: &str) -> Vec<&'static Airport> {
    AIRPORTS
        .iter()
        .filter(|a| a.city_code == city_code)
        .collect()
}

/// Countries whose fares the simulator prices in euros.
const EUROZONE: &[&str] = &["IE", "FR", "NL", "DE", "ES", "IT", "PT", "AT", "GR"];

/// The currency of fares sold from (or hotels in) a country: GBP, EUR, otherwise USD.
pub(crate) fn currency_for_country(country: &str) -> &'static str {
    match country {
        "GB" => "GBP",
        c if EUROZONE.contains(&c) => "EUR",
        _ => "USD",
    }
}

/// Converts an amount in GBP minor units to the given currency (fixed illustrative rates).
pub(crate) fn convert_from_gbp(pence: i64, currency: &str) -> i64 {
    match currency {
        "EUR" => pence * 117 / 100,
        "USD" => pence * 127 / 100,
        _ => pence,
    }
}

/// The UTC offset (minutes) of an airport's zone on a local calendar date.
pub(crate) fn utc_offset_min(a: &Airport, date: NaiveDate) -> i32 {
    let y = date.year();
    let in_dst = match a.dst {
        Dst::None => false,
        Dst::Eu => date >= last_sunday(y, 3) && date < last_sunday(y, 10),
        Dst::Us => date >= nth_sunday(y, 3, 2) && date < nth_sunday(y, 11, 1),
        Dst::Au => date < nth_sunday(y, 4, 1) || date >= nth_sunday(y, 10, 1),
    };
    a.std_offset_min + if in_dst { 60 } else { 0 }
}

fn nth_sunday(year: i32, month: u32, n: u8) -> NaiveDate {
    NaiveDate::from_weekday_of_month_opt(year, month, Weekday::Sun, n).unwrap_or(NaiveDate::MIN)
}

fn last_sunday(year: i32, month: u32) -> NaiveDate {
    NaiveDate::from_weekday_of_month_opt(year, month, Weekday::Sun, 5)
        .unwrap_or_else(|| nth_sunday(year, month, 4))
}

/// Great-circle distance in kilometres.
pub(crate) fn distance_km(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let dp = p2 - p1;
    let dl = (lon2 - lon1).to_radians();
    let h = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * 6371.0 * h.sqrt().asin()
}

/// One airline of the built-in table.
#[derive(Debug)]
pub(crate) struct Airline {
    pub(crate) iata: &'static str,
    pub(crate) name: &'static str,
    /// Duffel-style airline id (`arl_…`), stable per airline.
    pub(crate) id: &'static str,
    /// Hub airports: nonstop flights touch one of them; connections go through the first.
    pub(crate) hubs: &'static [&'static str],
    /// Low-cost carriers sell economy only, short-haul only, and require instant payment.
    pub(crate) low_cost: bool,
}

/// The airlines offers are drawn from.
pub(crate) static AIRLINES: &[Airline] = &[
    Airline {
        iata: "BA",
        name: "British Airways",
        id: "arl_00009VME7DBKeMags5CliQ",
        hubs: &["LHR", "LGW"],
        low_cost: false,
    },
    Airline {
        iata: "VS",
        name: "Virgin Atlantic",
        id: "arl_00009VME7DDoV8ZkzmMkaN",
        hubs: &["LHR", "MAN"],
        low_cost: false,
    },
    Airline {
        iata: "AF",
        name: "Air France",
        id: "arl_00009VME7D6ivUu8dn35WK",
        hubs: &["CDG", "ORY"],
        low_cost: false,
    },
    Airline {
        iata: "KL",
        name: "KLM",
        id: "arl_00009VME7DAGiJjwomhv32",
        hubs: &["AMS"],
        low_cost: false,
    },
    Airline {
        iata: "LH",
        name: "Lufthansa",
        id: "arl_00009VME7DAfMVPwPxGuSe",
        hubs: &["FRA", "MUC"],
        low_cost: false,
    },
    Airline {
        iata: "IB",
        name: "Iberia",
        id: "arl_00009VME7D9yWXUDhZdG5y",
        hubs: &["MAD"],
        low_cost: false,
    },
    Airline {
        iata: "AA",
        name: "American Airlines",
        id: "arl_00009VME7D6ivUu8dn35WM",
        hubs: &["DFW", "ORD", "MIA", "JFK"],
        low_cost: false,
    },
    Airline {
        iata: "DL",
        name: "Delta Air Lines",
        id: "arl_00009VME7D8XvsGqPGswXb",
        hubs: &["ATL", "JFK", "SEA"],
        low_cost: false,
    },
    Airline {
        iata: "UA",
        name: "United Airlines",
        id: "arl_00009VME7DDoV8ZkzmMkaO",
        hubs: &["ORD", "EWR", "SFO", "DEN", "IAD"],
        low_cost: false,
    },
    Airline {
        iata: "EK",
        name: "Emirates",
        id: "arl_00009VME7D8cMtWqOj3tjE",
        hubs: &["DXB"],
        low_cost: false,
    },
    Airline {
        iata: "QR",
        name: "Qatar Airways",
        id: "arl_00009VME7DCOaPRQvNhcNu",
        hubs: &["DOH"],
        low_cost: false,
    },
    Airline {
        iata: "SQ",
        name: "Singapore Airlines",
        id: "arl_00009VME7DCs0H4pSYHdKl",
        hubs: &["SIN"],
        low_cost: false,
    },
    Airline {
        iata: "AZ",
        name: "ITA Airways",
        id: "arl_00009VME7D6ivUu8dn35WN",
        hubs: &["FCO", "MXP"],
        low_cost: false,
    },
    Airline {
        iata: "LX",
        name: "SWISS",
        id: "arl_00009VME7DCs0H4pSYHdKm",
        hubs: &["ZRH"],
        low_cost: false,
    },
    Airline {
        iata: "OS",
        name: "Austrian",
        id: "arl_00009VME7D6ivUu8dn35WP",
        hubs: &["VIE"],
        low_cost: false,
    },
    Airline {
        iata: "SK",
        name: "SAS",
        id: "arl_00009VME7DDoV8ZkzmMkaP",
        hubs: &["CPH"],
        low_cost: false,
    },
    Airline {
        iata: "EI",
        name: "Aer Lingus",
        id: "arl_00009VME7D8cMtWqOj3tjF",
        hubs: &["DUB"],
        low_cost: false,
    },
    Airline {
        iata: "TP",
        name: "TAP Air Portugal",
        id: "arl_00009VME7DCOaPRQvNhcNw",
        hubs: &["LIS"],
        low_cost: false,
    },
    Airline {
        iata: "A3",
        name: "Aegean Airlines",
        id: "arl_00009VME7D9yWXUDhZdG5z",
        hubs: &["ATH"],
        low_cost: false,
    },
    Airline {
        iata: "TK",
        name: "Turkish Airlines",
        id: "arl_00009VME7DAfMVPwPxGuSf",
        hubs: &["IST"],
        low_cost: false,
    },
    Airline {
        iata: "AC",
        name: "Air Canada",
        id: "arl_00009VME7DAGiJjwomhv33",
        hubs: &["YYZ"],
        low_cost: false,
    },
    Airline {
        iata: "CX",
        name: "Cathay Pacific",
        id: "arl_00009VME7DBKeMags5CliR",
        hubs: &["HKG"],
        low_cost: false,
    },
    Airline {
        iata: "NH",
        name: "ANA",
        id: "arl_00009VME7D8XvsGqPGswXc",
        hubs: &["HND"],
        low_cost: false,
    },
    Airline {
        iata: "QF",
        name: "Qantas",
        id: "arl_00009VME7DD0ZlGEbKdQvX",
        hubs: &["SYD"],
        low_cost: false,
    },
    Airline {
        iata: "U2",
        name: "easyJet",
        id: "arl_00009VME7DD0ZlGEbKdQvW",
        hubs: &["LGW", "MAN", "EDI", "BER", "AMS"],
        low_cost: true,
    },
    Airline {
        iata: "FR",
        name: "Ryanair",
        id: "arl_00009VME7DCOaPRQvNhcNv",
        hubs: &["DUB", "STN", "BCN"],
        low_cost: true,
    },
];

/// Aircraft types: (IATA code, name, long-haul capable).
pub(crate) static AIRCRAFT: &[(&str, &str, bool)] = &[
    ("320", "Airbus A320", false),
    ("321", "Airbus A321", false),
    ("73H", "Boeing 737-800", false),
    ("E90", "Embraer 190", false),
    ("77W", "Boeing 777-300ER", true),
    ("789", "Boeing 787-9", true),
    ("359", "Airbus A350-900", true),
    ("388", "Airbus A380-800", true),
];

/// Hotel name parts: brand-like prefixes and suffixes (fictional, generic).
pub(crate) static HOTEL_PREFIXES: &[&str] = &[
    "Grand Hotel",
    "The Residence",
    "Park Inn",
    "City Lodge",
    "Hotel Central",
    "Riverside Suites",
    "The Meridian House",
    "Old Town Hotel",
    "Harbour View Hotel",
    "Station Hotel",
    "Garden Court",
    "The Observatory",
    "Maison",
    "Boutique Hotel",
    "Plaza Hotel",
    "Skyline Tower",
];

/// Street names for generated hotel addresses.
pub(crate) static STREETS: &[&str] = &[
    "High Street",
    "Market Square",
    "Station Road",
    "Church Lane",
    "Park Avenue",
    "King Street",
    "Queen's Road",
    "River Walk",
    "Castle Street",
    "Museum Way",
    "Harbour Road",
    "Opera Lane",
];

/// Generic town names for coordinates far from every known city.
pub(crate) static GENERIC_TOWNS: &[&str] = &[
    "Lakeside",
    "Hillcrest",
    "Riverside",
    "Fairview",
    "Brookfield",
];
