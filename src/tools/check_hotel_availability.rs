//! `check_hotel_availability`: rooms and rates available now at one hotel. A model must never
//! promise rooms that may be gone, so the shipped configuration never serves it stale
//! (`stale_for = "0s"` in `tools/check_hotel_availability.toml`).

use chrono::NaiveDate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::checks::Errors;
use super::{
    Access, CallMode, FOR_COMPARISON, FieldError, ToolRequest, ToolSpec, cheapest_in,
    currencies_by_use, list_words,
};

/// The catalog entry. Fetching rates is a POST at Duffel but changes nothing: idempotent.
pub const SPEC: ToolSpec = ToolSpec {
    name: "check_hotel_availability",
    title: "Check hotel availability",
    access: Access::Read,
    idempotent: true,
    built_for: CallMode::Interactive,
    needs_idempotency_key: false,
    priced: true,
    input_schema: super::Schema::Derived(super::schema_of::<Args>),
    output_schema: super::Schema::Derived(super::schema_of::<Output>),
    parse: super::Parse::Typed(|v, today, _key| {
        super::parse_args(v, today, check).map(ToolRequest::CheckHotelAvailability)
    }),
};

/// Arguments of `check_hotel_availability`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The hotel_result_id from search_hotels, e.g. "srr_0000ASVBuJVLdmqtZDJ4ca".
    #[schemars(regex(pattern = r"^[A-Za-z0-9_-]{4,128}$"))]
    pub hotel_result_id: String,
}

fn check(args: &Args, _today: NaiveDate) -> Result<(), Vec<FieldError>> {
    let mut e = Errors::default();
    if args.hotel_result_id.trim().is_empty() {
        e.push(
            "hotel_result_id",
            "expected the hotel_result_id returned by search_hotels",
        );
    }
    e.finish()
}

/// The result of `check_hotel_availability`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Output {
    /// The hotel checked.
    pub hotel_result_id: String,
    /// Hotel name.
    pub hotel_name: String,
    /// The stay checked.
    pub check_in_date: String,
    /// The stay checked.
    pub check_out_date: String,
    /// True when at least one rate has rooms left.
    pub available: bool,
    /// Rooms with their rates; empty when nothing is available.
    pub rooms: Vec<Room>,
}

/// One room type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Room {
    /// Room name, e.g. "Deluxe Double Room".
    pub name: String,
    /// Rates for this room.
    pub rates: Vec<Rate>,
}

/// One rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Rate {
    /// The provider's rate id.
    pub rate_id: String,
    /// Total for the stay, a decimal string.
    pub total_amount: String,
    /// ISO 4217 currency.
    pub currency: String,
    /// "room_only", "breakfast", … as the provider names it.
    pub board_type: Option<String>,
    /// "pay_now", "deposit" or "guarantee".
    pub payment_type: Option<String>,
    /// Rooms left at this rate, when the provider says.
    pub quantity_available: Option<u32>,
    /// Until when it can be cancelled for a full refund (RFC 3339), if at all.
    pub free_cancellation_until: Option<String>,
    /// Whether book_hotel can book it; false for a rate priced by a provider this gateway does not book through, shown for comparison only.
    pub bookable: bool,
}

/// The text a model can quote.
pub fn content(out: &Output) -> String {
    let stay = format!("{}→{}", out.check_in_date, out.check_out_date);
    let rates: Vec<(&Room, &Rate)> = out
        .rooms
        .iter()
        .flat_map(|room| room.rates.iter().map(move |rate| (room, rate)))
        .filter(|(_, r)| r.quantity_available != Some(0))
        .collect();
    // Rates in several currencies are not compared (no exchange rates): "from" is the cheapest
    // in the currency most rates are in.
    let currencies = currencies_by_use(rates.iter().map(|(_, r)| r.currency.as_str()));
    let Some(&(room, cheapest)) = currencies
        .iter()
        .find_map(|c| cheapest_in(&rates, c, |(_, r)| (&r.total_amount, &r.currency)))
    else {
        return format!(
            "No rooms are available at {} for {stay}. Do not promise a room; suggest other dates or another hotel.",
            out.hotel_name
        );
    };
    let mut details = Vec::new();
    if let Some(b) = &cheapest.board_type {
        details.push(b.replace('_', " "));
    }
    match &cheapest.free_cancellation_until {
        Some(until) => details.push(format!("free cancellation until {until}")),
        None => details.push("not refundable".to_string()),
    }
    let others = match currencies.as_slice() {
        [_, others @ ..] if !others.is_empty() => format!(
            " Some rates are in {}, which this gateway does not convert or compare with {}.",
            list_words(others),
            cheapest.currency
        ),
        _ => String::new(),
    };
    let next = if rates.iter().any(|(_, r)| r.bookable) {
        "Rates can sell out; book soon or check again before promising.".to_string()
    } else {
        format!(
            "These rates were {FOR_COMPARISON}: book_hotel cannot book them, so do not offer to book one; to book, call search_hotels again later and check a hotel whose bookable is true."
        )
    };
    format!(
        "{} has {} available rate{} for {stay}, from {} {} ({}, {}).{others} {next}",
        out.hotel_name,
        rates.len(),
        if rates.len() == 1 { "" } else { "s" },
        cheapest.total_amount,
        cheapest.currency,
        room.name,
        details.join(", ")
    )
}
