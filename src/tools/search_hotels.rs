//! `search_hotels`: hotels with rooms for a stay, cheapest total first.

use chrono::NaiveDate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::checks::{self, Errors};
use super::{
    Access, CallMode, FOR_COMPARISON, FieldError, ToolRequest, ToolSpec, cheapest_in,
    mixed_currencies_note, result_currencies,
};

/// The catalog entry.
pub const SPEC: ToolSpec = ToolSpec {
    name: "search_hotels",
    title: "Search hotels",
    access: Access::Read,
    idempotent: true,
    built_for: CallMode::Interactive,
    needs_idempotency_key: false,
    priced: true,
    input_schema: super::Schema::Derived(super::schema_of::<Args>),
    output_schema: super::Schema::Derived(super::schema_of::<Output>),
    parse: super::Parse::Typed(|v, today, _key| {
        super::parse_args(v, today, check).map(ToolRequest::SearchHotels)
    }),
};

/// The longest stay one search covers.
pub const MAX_NIGHTS: i64 = 30;

/// Arguments of `search_hotels`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// 3-letter IATA city code, upper case, e.g. "PAR" for Paris; give this, or latitude and longitude, or both.
    #[serde(default)]
    #[schemars(regex(pattern = r"^[A-Z]{3}$"))]
    pub city_code: Option<String>,
    /// Latitude of the place to search around, -90 to 90; give it together with longitude.
    #[serde(default)]
    #[schemars(range(min = -90.0, max = 90.0))]
    pub latitude: Option<f64>,
    /// Longitude of the place to search around, -180 to 180; give it together with latitude.
    #[serde(default)]
    #[schemars(range(min = -180.0, max = 180.0))]
    pub longitude: Option<f64>,
    /// Search radius in kilometres, 1 to 50 (default 5).
    #[serde(default)]
    #[schemars(range(min = 1.0, max = 50.0))]
    pub radius_km: Option<f64>,
    /// Check-in date as YYYY-MM-DD, today or later.
    #[schemars(extend("format" = "date"))]
    pub check_in_date: String,
    /// Check-out date as YYYY-MM-DD, after the check-in date, at most 30 nights later.
    #[schemars(extend("format" = "date"))]
    pub check_out_date: String,
    /// Number of rooms, 1 to 9 (default 1).
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 9))]
    pub rooms: u8,
    /// Number of adult guests in all, 1 to 18 (default 1), at least one per room.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 18))]
    pub adults: u8,
    /// How many hotels to return, cheapest first, 1 to 50 (default 10).
    #[serde(default)]
    #[schemars(range(min = 1, max = 50))]
    pub max_results: Option<u8>,
}

fn one() -> u8 {
    1
}

fn check(args: &Args, today: NaiveDate) -> Result<(), Vec<FieldError>> {
    let mut e = Errors::default();
    if let Some(c) = &args.city_code {
        checks::iata(&mut e, "city_code", c);
    }
    match (args.latitude, args.longitude) {
        (Some(_), None) => e.push("longitude", "give longitude together with latitude"),
        (None, Some(_)) => e.push("latitude", "give latitude together with longitude"),
        (None, None) if args.city_code.is_none() => e.push(
            "city_code",
            "say where to search: a city_code such as \"PAR\", or latitude and longitude",
        ),
        _ => {}
    }
    let check_in = checks::date_not_past(&mut e, "check_in_date", &args.check_in_date, today);
    let check_out = checks::date_not_past(&mut e, "check_out_date", &args.check_out_date, today);
    if let (Some(i), Some(o)) = (check_in, check_out) {
        let nights = (o - i).num_days();
        if nights < 1 {
            e.push(
                "check_out_date",
                format!("{o} is not after the check-in date {i}; expected at least one night"),
            );
        } else if nights > MAX_NIGHTS {
            e.push(
                "check_out_date",
                format!("{nights} nights is too long; at most {MAX_NIGHTS} nights per search"),
            );
        }
    }
    if args.adults < args.rooms {
        e.push(
            "adults",
            format!(
                "{} adults cannot fill {} rooms; expected at least one adult per room",
                args.adults, args.rooms
            ),
        );
    }
    e.finish()
}

/// The result of `search_hotels`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Output {
    /// The stay searched.
    pub check_in_date: String,
    /// The stay searched.
    pub check_out_date: String,
    /// Where was searched, in words ("PAR", or coordinates).
    pub searched_near: String,
    /// Hotels, cheapest first within each currency (in the order of `currencies`), at most `max_results`.
    pub hotels: Vec<HotelResult>,
    /// How many hotels the provider returned before the list was cut.
    pub total_hotels: u32,
    /// The currencies of the prices of every one of the total_hotels (shown or cut), the most used first; prices in different currencies are not compared, as the gateway has no exchange rates.
    pub currencies: Vec<String>,
}

/// One hotel with a price for the stay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HotelResult {
    /// Pass this to check_hotel_availability.
    pub hotel_result_id: String,
    /// The hotel's own id (acc_…, the same for every search), when the provider gives one: pass it to get_hotel_content for its description, amenities and check-in times.
    pub hotel_id: Option<String>,
    /// Hotel name.
    pub name: String,
    /// Street address in one line.
    pub address: String,
    /// Star rating 1 to 5, when known.
    pub rating: Option<u8>,
    /// Guest review score out of 10, when known.
    pub review_score: Option<f64>,
    /// Cheapest total price for the whole stay, a decimal string.
    pub cheapest_total_amount: String,
    /// ISO 4217 currency of the price.
    pub currency: String,
    /// Latitude of the hotel.
    pub latitude: Option<f64>,
    /// Longitude of the hotel.
    pub longitude: Option<f64>,
    /// Whether book_hotel can book its rates; false for a hotel priced by a provider this gateway does not book through, shown for comparison only.
    pub bookable: bool,
}

impl HotelResult {
    /// Its cheapest total and currency, as a search ranks it.
    pub(crate) fn price(&self) -> (&str, &str) {
        (&self.cheapest_total_amount, &self.currency)
    }
}

/// The text a model can quote.
pub fn content(out: &Output) -> String {
    let stay = format!(
        "near {} for {}→{}",
        out.searched_near, out.check_in_date, out.check_out_date
    );
    let currencies = result_currencies(
        &out.currencies,
        out.hotels.iter().map(|h| h.currency.as_str()),
    );
    let Some(cheapest) = currencies
        .iter()
        .find_map(|c| cheapest_in(&out.hotels, c, HotelResult::price))
    else {
        return format!(
            "No hotels with rooms found {stay}. Suggest other dates or a wider area; do not invent hotels."
        );
    };
    let mixed = currencies.len() > 1;
    let mut text = format!(
        "{} hotels {stay}",
        out.total_hotels.max(out.hotels.len() as u32)
    );
    // The result holds only the hotels shown: a sentence about "best" must say it compared
    // only those, since a better-reviewed hotel may be among the ones cut.
    let cut = (out.total_hotels as usize) > out.hotels.len();
    match (cut, mixed) {
        (true, false) => text.push_str(&format!(" (showing the {} cheapest)", out.hotels.len())),
        (true, true) => text.push_str(&format!(
            " (showing {}, cheapest first within each currency)",
            out.hotels.len()
        )),
        (false, _) => {}
    }
    let stars = cheapest
        .rating
        .map(|r| format!(", {r}★"))
        .unwrap_or_default();
    let which = if mixed {
        format!(" {} price", cheapest.currency)
    } else {
        String::new()
    };
    text.push_str(&format!(
        ", cheapest{which} {} {} for the stay ({}{stars}, {})",
        cheapest.cheapest_total_amount, cheapest.currency, cheapest.name, cheapest.address
    ));
    if let Some(best) = out
        .hotels
        .iter()
        .filter(|h| h.review_score.is_some())
        .max_by(|a, b| {
            a.review_score
                .unwrap_or(0.0)
                .total_cmp(&b.review_score.unwrap_or(0.0))
        })
        && best.hotel_result_id != cheapest.hotel_result_id
    {
        let of_shown = if cut {
            format!(" of the {} shown", out.hotels.len())
        } else {
            String::new()
        };
        text.push_str(&format!(
            ", best reviewed{of_shown} {} ({}/10, {} {})",
            best.name,
            best.review_score.unwrap_or(0.0),
            best.cheapest_total_amount,
            best.currency
        ));
    }
    text.push('.');
    if mixed {
        text.push_str(&mixed_currencies_note(&currencies));
    }
    let unbookable = out.hotels.iter().filter(|h| !h.bookable).count();
    if unbookable == out.hotels.len() {
        text.push_str(&format!(
            " These hotels were {FOR_COMPARISON}: book_hotel cannot book their rates, so do not offer to book one; to book, call search_hotels again later and pick a hotel whose bookable is true."
        ));
    } else if unbookable > 0 {
        text.push_str(&format!(
            " {unbookable} of the hotels shown (bookable false) were {FOR_COMPARISON}: book_hotel cannot book their rates."
        ));
    }
    text.push_str(" Check rooms with check_hotel_availability before promising anything.");
    text
}
