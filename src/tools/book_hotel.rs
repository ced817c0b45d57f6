//! `book_hotel`: book and pay for one hotel rate. A write, like `book_flight`: never retried
//! blindly, and every call carries an idempotency key so that a repeated request can never book
//! twice. The rate comes from `check_hotel_availability`; the provider quotes it again (the
//! final price and availability check) before the booking is made.

use chrono::NaiveDate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::checks::{self, Errors};
use super::{Access, CallMode, FieldError, ToolRequest, ToolSpec};

/// The catalog entry.
pub const SPEC: ToolSpec = ToolSpec {
    name: "book_hotel",
    title: "Book a hotel room",
    access: Access::Write,
    idempotent: false,
    built_for: CallMode::Interactive,
    needs_idempotency_key: true,
    priced: false,
    input_schema: super::Schema::Derived(super::schema_of::<Args>),
    output_schema: super::Schema::Derived(super::schema_of::<Output>),
    parse: super::Parse::Typed(parse),
};

/// Arguments of `book_hotel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The rate_id of one rate from check_hotel_availability.
    #[schemars(regex(pattern = r"^[A-Za-z0-9_-]{4,128}$"))]
    pub rate_id: String,
    /// The guests staying, the lead guest first (the booking is made in that name); one per room at least.
    #[schemars(length(min = 1, max = 9))]
    pub guests: Vec<Guest>,
    /// The lead guest's email address; the hotel may write to it.
    #[schemars(extend("format" = "email"))]
    pub email: String,
    /// The lead guest's phone number in E.164 form, e.g. "+441234567890".
    #[schemars(regex(pattern = r"^\+[1-9][0-9]{6,14}$"))]
    pub phone_number: String,
    /// The total the traveller agreed to, as check_hotel_availability showed it (e.g. "412.30"); if the quoted price differs, nothing is booked.
    #[serde(default)]
    #[schemars(regex(pattern = r"^[0-9]+(\.[0-9]{1,2})?$"))]
    pub confirmed_total_amount: Option<String>,
}

/// One guest, as on their identity document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Guest {
    /// Given name(s).
    #[schemars(length(min = 1, max = 64))]
    pub given_name: String,
    /// Family name.
    #[schemars(length(min = 1, max = 64))]
    pub family_name: String,
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
        ToolRequest::BookHotel,
    )
}

fn check(args: &Args, _today: NaiveDate) -> Result<(), Vec<FieldError>> {
    let mut e = Errors::default();
    for (i, g) in args.guests.iter().enumerate() {
        checks::names(
            &mut e,
            &format!("guests[{i}]"),
            &g.given_name,
            &g.family_name,
        );
    }
    let email = args.email.trim();
    if email.starts_with('@') || email.ends_with('@') || !email.contains('@') {
        e.push("email", "expected an email address such as ana@example.com");
    }
    e.finish()
}

/// The result of `book_hotel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Output {
    /// The reference to give the traveller and the hotel (the provider's booking id when the hotel gave none yet).
    pub booking_reference: String,
    /// The provider's booking id.
    pub booking_id: String,
    /// The hotel booked, when the provider names it.
    pub hotel_name: Option<String>,
    /// Check-in date, YYYY-MM-DD.
    pub check_in_date: Option<String>,
    /// Check-out date, YYYY-MM-DD.
    pub check_out_date: Option<String>,
    /// Amount charged, a decimal string.
    pub total_amount: String,
    /// ISO 4217 currency of the amount.
    pub total_currency: String,
    /// Guests booked, "Given Family".
    pub guests: Vec<String>,
    /// The idempotency key the booking was made under.
    pub idempotency_key: String,
}

/// The text a model can quote.
pub fn content(out: &Output) -> String {
    let hotel = out.hotel_name.as_deref().unwrap_or("the hotel");
    let stay = match (&out.check_in_date, &out.check_out_date) {
        (Some(from), Some(to)) => format!(", {from}→{to}"),
        _ => String::new(),
    };
    format!(
        "Booked: {hotel}{stay}, booking reference {} (booking {}), {} {} charged, for {}.",
        out.booking_reference,
        out.booking_id,
        out.total_amount,
        out.total_currency,
        out.guests.join(", ")
    )
}
