//! `search_flights`: flight offers between two airports on a date. The tool whose slow
//! provider, in the outage this gateway exists to prevent, held every connection and took down
//! unrelated features.

use chrono::NaiveDate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::checks::{self, Errors};
use super::{
    Access, CallMode, FOR_COMPARISON, FieldError, ToolRequest, ToolSpec, cheapest_in,
    format_minutes, mixed_currencies_note, result_currencies,
};

/// The catalog entry.
pub const SPEC: ToolSpec = ToolSpec {
    name: "search_flights",
    title: "Search flights",
    access: Access::Read,
    idempotent: true,
    built_for: CallMode::Interactive,
    needs_idempotency_key: false,
    priced: true,
    input_schema: super::Schema::Derived(super::schema_of::<Args>),
    output_schema: super::Schema::Derived(super::schema_of::<Output>),
    parse: super::Parse::Typed(|v, today, _key| {
        super::parse_args(v, today, check).map(ToolRequest::SearchFlights)
    }),
};

/// Cabin classes every flight provider understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CabinClass {
    /// Economy.
    Economy,
    /// Premium economy.
    PremiumEconomy,
    /// Business.
    Business,
    /// First.
    First,
}

/// Arguments of `search_flights`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// 3-letter IATA code of the departure airport or city, upper case, e.g. "JFK".
    #[schemars(regex(pattern = r"^[A-Z]{3}$"))]
    pub origin: String,
    /// 3-letter IATA code of the arrival airport or city, upper case, e.g. "LHR".
    #[schemars(regex(pattern = r"^[A-Z]{3}$"))]
    pub destination: String,
    /// Departure date as YYYY-MM-DD, today or later.
    #[schemars(extend("format" = "date"))]
    pub departure_date: String,
    /// Return date as YYYY-MM-DD for a round trip, on or after the departure date; omit for one way.
    #[serde(default)]
    #[schemars(extend("format" = "date"))]
    pub return_date: Option<String>,
    /// Number of adult passengers, 1 to 9.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 9))]
    pub adults: u8,
    /// Ages of child passengers (0 to 17), one entry per child; adults plus children at most 9.
    #[serde(default)]
    #[schemars(length(max = 8))]
    pub child_ages: Vec<ChildAge>,
    /// Cabin class; omit for economy.
    #[serde(default)]
    pub cabin_class: Option<CabinClass>,
    /// Maximum number of connections per direction (0 = nonstop only); omit for any.
    #[serde(default)]
    #[schemars(range(max = 2))]
    pub max_connections: Option<u8>,
    /// How many offers to return, cheapest first, 1 to 50 (default 10).
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub max_results: Option<u8>,
}

/// A child's age in years.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct ChildAge(#[schemars(range(max = 17))] pub u8);

fn one() -> u8 {
    1
}

fn check(args: &Args, today: NaiveDate) -> Result<(), Vec<FieldError>> {
    let mut e = Errors::default();
    checks::iata(&mut e, "origin", &args.origin);
    checks::iata(&mut e, "destination", &args.destination);
    if args.origin == args.destination {
        e.push(
            "destination",
            "must differ from origin; to search a round trip, set return_date",
        );
    }
    let dep = checks::date_not_past(&mut e, "departure_date", &args.departure_date, today);
    if let Some(ret) = &args.return_date
        && let Some(ret) = checks::date_not_past(&mut e, "return_date", ret, today)
        && let Some(dep) = dep
        && ret < dep
    {
        e.push(
            "return_date",
            format!("{ret} is before the departure date {dep}; expected the same day or later"),
        );
    }
    if !(1..=9).contains(&args.adults) {
        e.push("adults", "expected 1 to 9 adults");
    }
    if usize::from(args.adults) + args.child_ages.len() > 9 {
        e.push(
            "child_ages",
            "at most 9 passengers in one search (adults plus children)",
        );
    }
    e.finish()
}

/// The result of `search_flights`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Output {
    /// The route searched.
    pub origin: String,
    /// The route searched.
    pub destination: String,
    /// The departure date searched.
    pub departure_date: String,
    /// Offers, cheapest first within each currency (in the order of `currencies`), at most `max_results`.
    pub offers: Vec<FlightOffer>,
    /// How many offers the provider returned before the list was cut.
    pub total_offers: u32,
    /// The currencies of the prices of every one of the total_offers (shown or cut), the most used first; prices in different currencies are not compared, as the gateway has no exchange rates.
    pub currencies: Vec<String>,
}

/// One flight offer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FlightOffer {
    /// Pass this to price_flight_offer or book_flight.
    pub offer_id: String,
    /// Total price for all passengers, a decimal string.
    pub total_amount: String,
    /// ISO 4217 currency of the total.
    pub total_currency: String,
    /// The airline selling the offer.
    pub airline: Airline,
    /// One slice per direction.
    pub slices: Vec<FlightSlice>,
    /// When the offer stops being bookable (RFC 3339).
    pub expires_at: String,
    /// Whether book_flight can book it; false for an offer priced by a provider this gateway does not book through, shown for comparison only.
    pub bookable: bool,
}

/// An airline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Airline {
    /// IATA code, e.g. "BA".
    pub iata_code: String,
    /// Name, e.g. "British Airways".
    pub name: String,
}

/// One direction of a journey.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FlightSlice {
    /// Departure airport.
    pub origin: String,
    /// Arrival airport.
    pub destination: String,
    /// Local departure time, `YYYY-MM-DDTHH:MM:SS`.
    pub departing_at: String,
    /// Local arrival time, `YYYY-MM-DDTHH:MM:SS`.
    pub arriving_at: String,
    /// Door-to-door duration in minutes.
    pub duration_minutes: u32,
    /// Number of stops (0 = nonstop).
    pub stops: u32,
    /// Marketing flight numbers, e.g. ["BA117"].
    pub flights: Vec<String>,
}

impl FlightOffer {
    /// Its total and currency, as a search ranks it.
    pub(crate) fn price(&self) -> (&str, &str) {
        (&self.total_amount, &self.total_currency)
    }

    fn total_minutes(&self) -> u32 {
        self.slices.iter().map(|s| s.duration_minutes).sum()
    }

    /// "BA 117, nonstop, 7h05m" for the first slice.
    fn describe(&self) -> String {
        let Some(first) = self.slices.first() else {
            return self.airline.iata_code.clone();
        };
        let flights = first.flights.join("+");
        let stops = match first.stops {
            0 => "nonstop".to_string(),
            1 => "1 stop".to_string(),
            n => format!("{n} stops"),
        };
        format!(
            "{flights}, {stops}, {}, departs {}",
            format_minutes(first.duration_minutes),
            first.departing_at.replace('T', " ")
        )
    }
}

/// The text a model can quote.
pub fn content(out: &Output) -> String {
    let route = format!(
        "{}→{} on {}",
        out.origin, out.destination, out.departure_date
    );
    let currencies = result_currencies(
        &out.currencies,
        out.offers.iter().map(|o| o.total_currency.as_str()),
    );
    let Some(cheapest) = currencies
        .iter()
        .find_map(|c| cheapest_in(&out.offers, c, FlightOffer::price))
    else {
        return format!(
            "No flight offers found {route}. Suggest other dates or nearby airports; do not invent flights."
        );
    };
    let mixed = currencies.len() > 1;
    let mut text = format!(
        "{} offers {route}",
        out.total_offers.max(out.offers.len() as u32)
    );
    match ((out.total_offers as usize) > out.offers.len(), mixed) {
        (true, false) => text.push_str(&format!(" (showing the {} cheapest)", out.offers.len())),
        (true, true) => text.push_str(&format!(
            " (showing {}, cheapest first within each currency)",
            out.offers.len()
        )),
        (false, _) => {}
    }
    let which = if mixed {
        format!(" {} price", cheapest.total_currency)
    } else {
        String::new()
    };
    text.push_str(&format!(
        ", cheapest{which} {} {} ({}; {})",
        cheapest.total_amount,
        cheapest.total_currency,
        cheapest.airline.name,
        cheapest.describe()
    ));
    if let Some(fastest) = out.offers.iter().min_by_key(|o| o.total_minutes())
        && fastest.offer_id != cheapest.offer_id
        && fastest.total_minutes() < cheapest.total_minutes()
    {
        text.push_str(&format!(
            ", fastest {} {} ({}; {})",
            fastest.total_amount,
            fastest.total_currency,
            fastest.airline.name,
            fastest.describe()
        ));
    }
    text.push('.');
    if mixed {
        text.push_str(&mixed_currencies_note(&currencies));
    }
    let unbookable = out.offers.iter().filter(|o| !o.bookable).count();
    if unbookable == out.offers.len() {
        text.push_str(&format!(
            " Prices are for all passengers. These offers were {FOR_COMPARISON}: book_flight cannot book them, so do not offer to book one; to book, call search_flights again later and book an offer whose bookable is true."
        ));
    } else {
        if unbookable > 0 {
            text.push_str(&format!(
                " {unbookable} of the offers shown (bookable false) were {FOR_COMPARISON}: book_flight cannot book them."
            ));
        }
        text.push_str(" Prices are for all passengers; offers expire in about 30 minutes, so confirm with price_flight_offer before booking.");
    }
    text
}
