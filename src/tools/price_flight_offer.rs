//! `price_flight_offer`: the current price of one offer (never a guessed price), and whether
//! this gateway can book it.

use chrono::NaiveDate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::checks::Errors;
use super::search_flights::FlightOffer;
use super::{Access, CallMode, FOR_COMPARISON, FieldError, ToolRequest, ToolSpec};

/// The catalog entry. Pricing is a POST at some providers but changes nothing: idempotent.
pub const SPEC: ToolSpec = ToolSpec {
    name: "price_flight_offer",
    title: "Price a flight offer",
    access: Access::Read,
    idempotent: true,
    built_for: CallMode::Interactive,
    needs_idempotency_key: false,
    priced: true,
    input_schema: super::Schema::Derived(super::schema_of::<Args>),
    output_schema: super::Schema::Derived(super::schema_of::<Output>),
    parse: super::Parse::Typed(|v, today, _key| {
        super::parse_args(v, today, check).map(ToolRequest::PriceFlightOffer)
    }),
};

/// Arguments of `price_flight_offer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The offer_id from search_flights, e.g. "off_0000AEatBgkm1L8gxKGGjG".
    #[schemars(regex(pattern = r"^[A-Za-z0-9_-]{4,128}$"))]
    pub offer_id: String,
}

fn check(args: &Args, _today: NaiveDate) -> Result<(), Vec<FieldError>> {
    let mut e = Errors::default();
    if args.offer_id.trim().is_empty() {
        e.push(
            "offer_id",
            "expected the offer_id returned by search_flights",
        );
    }
    e.finish()
}

/// The result of `price_flight_offer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Output {
    /// The offer as it stands now.
    pub offer: FlightOffer,
    /// Fare before taxes, a decimal string, when the provider says.
    pub base_amount: Option<String>,
    /// Taxes, a decimal string, when the provider says.
    pub tax_amount: Option<String>,
    /// The passengers of the offer, in order; book_flight lists travellers in the same order.
    pub passengers: Vec<OfferPassenger>,
    /// Until when this price is guaranteed (RFC 3339), when the provider says.
    pub price_guarantee_expires_at: Option<String>,
    /// Whether the airline requires payment at booking time.
    pub requires_instant_payment: bool,
}

/// A passenger slot of an offer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OfferPassenger {
    /// The provider's passenger id.
    pub passenger_id: String,
    /// "adult" or "child".
    pub passenger_type: String,
    /// Age, for children.
    pub age: Option<u8>,
}

/// The text a model can quote.
pub fn content(out: &Output) -> String {
    let o = &out.offer;
    let mut text = format!(
        "Offer {} is {} at {} {} for {} passenger{}",
        o.offer_id,
        if o.bookable { "bookable now" } else { "priced" },
        o.total_amount,
        o.total_currency,
        out.passengers.len(),
        if out.passengers.len() == 1 { "" } else { "s" }
    );
    if let Some(tax) = &out.tax_amount {
        text.push_str(&format!(" (including {tax} {} taxes)", o.total_currency));
    }
    text.push_str(&format!(" with {}", o.airline.name));
    if let Some(s) = o.slices.first() {
        text.push_str(&format!(
            ", {} {}→{} departing {}",
            s.flights.join("+"),
            s.origin,
            s.destination,
            s.departing_at.replace('T', " ")
        ));
    }
    text.push_str(&format!(". The offer expires at {}", o.expires_at));
    if let Some(g) = &out.price_guarantee_expires_at {
        text.push_str(&format!(" and the price is guaranteed until {g}"));
    }
    if o.bookable {
        text.push_str(". Quote this price, not the search price.");
    } else {
        text.push_str(&format!(
            ". It was {FOR_COMPARISON}: book_flight cannot book it. Do not tell the traveller it can be booked; to book, call search_flights again later and book an offer whose bookable is true."
        ));
    }
    text
}
