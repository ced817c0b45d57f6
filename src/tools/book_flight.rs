//! `book_flight`: book and pay for one offer. A write: never retried blindly, and every call
//! carries an idempotency key so that a repeated request can never book twice.

use chrono::NaiveDate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::checks::{self, Errors};
use super::{Access, CallMode, FieldError, ToolRequest, ToolSpec};

/// The catalog entry.
pub const SPEC: ToolSpec = ToolSpec {
    name: "book_flight",
    title: "Book a flight",
    access: Access::Write,
    idempotent: false,
    built_for: CallMode::Interactive,
    needs_idempotency_key: true,
    priced: false,
    input_schema: super::Schema::Derived(super::schema_of::<Args>),
    output_schema: super::Schema::Derived(super::schema_of::<Output>),
    parse: super::Parse::Typed(parse),
};

/// Arguments of `book_flight`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The offer_id from search_flights or price_flight_offer.
    #[schemars(regex(pattern = r"^[A-Za-z0-9_-]{4,128}$"))]
    pub offer_id: String,
    /// One entry per passenger of the offer, in the order price_flight_offer lists them.
    #[schemars(length(min = 1, max = 9))]
    pub travellers: Vec<Traveller>,
    /// The total the traveller agreed to, as quoted by price_flight_offer (e.g. "812.40"); if the price has changed since, nothing is booked.
    #[serde(default)]
    #[schemars(regex(pattern = r"^[0-9]+(\.[0-9]{1,2})?$"))]
    pub confirmed_total_amount: Option<String>,
}

/// Title as airlines know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Title {
    /// Mr.
    Mr,
    /// Ms.
    Ms,
    /// Mrs.
    Mrs,
    /// Miss.
    Miss,
    /// Dr.
    Dr,
}

/// Gender as on the travel document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Gender {
    /// Male ("m").
    #[serde(rename = "m")]
    M,
    /// Female ("f").
    #[serde(rename = "f")]
    F,
}

/// One traveller, exactly as on the passport.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Traveller {
    /// Given name(s) as on the passport.
    #[schemars(length(min = 1, max = 64))]
    pub given_name: String,
    /// Family name as on the passport.
    #[schemars(length(min = 1, max = 64))]
    pub family_name: String,
    /// Date of birth as YYYY-MM-DD.
    #[schemars(extend("format" = "date"))]
    pub born_on: String,
    /// "m" or "f", as on the travel document.
    pub gender: Gender,
    /// "mr", "ms", "mrs", "miss" or "dr".
    pub title: Title,
    /// Contact email address.
    #[schemars(extend("format" = "email"))]
    pub email: String,
    /// Phone number in E.164 form, e.g. "+441234567890".
    #[schemars(regex(pattern = r"^\+[1-9][0-9]{6,14}$"))]
    pub phone_number: String,
}

fn parse(
    arguments: serde_json::Value,
    today: NaiveDate,
    idempotency_key: Option<&str>,
) -> Result<ToolRequest, Vec<FieldError>> {
    super::parse_write(
        SPEC.name,
        (arguments, today, idempotency_key),
        check,
        ToolRequest::BookFlight,
    )
}

fn check(args: &Args, today: NaiveDate) -> Result<(), Vec<FieldError>> {
    let mut e = Errors::default();
    for (i, t) in args.travellers.iter().enumerate() {
        let field = format!("travellers[{i}].born_on");
        if let Some(born) = checks::date(&mut e, &field, &t.born_on)
            && born > today
        {
            e.push(
                &field,
                format!("{born} is in the future; expected a date of birth"),
            );
        }
        checks::names(
            &mut e,
            &format!("travellers[{i}]"),
            &t.given_name,
            &t.family_name,
        );
    }
    e.finish()
}

/// The result of `book_flight`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Output {
    /// The airline booking reference (PNR) to give the traveller.
    pub booking_reference: String,
    /// The provider's order id.
    pub order_id: String,
    /// Amount charged, a decimal string.
    pub total_amount: String,
    /// ISO 4217 currency of the amount.
    pub total_currency: String,
    /// Travellers booked, "Given Family".
    pub travellers: Vec<String>,
    /// The idempotency key the booking was made under.
    pub idempotency_key: String,
}

/// The text a model can quote.
pub fn content(out: &Output) -> String {
    format!(
        "Booked: booking reference {} (order {}), {} {} charged, for {}.",
        out.booking_reference,
        out.order_id,
        out.total_amount,
        out.total_currency,
        out.travellers.join(", ")
    )
}
