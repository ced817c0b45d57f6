//! The tool catalog: every tool's typed arguments, typed result, JSON Schemas and policy facts.
//!
//! One file per tool, all with the same shape (mini-redis's `cmd/`): `Args` (what the model
//! sends), `Output` (what it gets back as `data`), `check` (semantic checks beyond the schema),
//! `content` (a short text a model can quote) and a `SPEC` entry in [`CATALOG`].
//!
//! **Architecture invariant:** this module is pure. It knows no provider, no HTTP and no
//! breaker; providers translate [`ToolRequest`] into their wire format and back into
//! [`ToolOutput`]. The JSON Schemas are derived from the Rust types (schemars), so the schema a
//! model sees and the type the gateway parses can never drift apart.

pub mod book_flight;
pub mod book_hotel;
pub mod check_hotel_availability;
pub mod checks;
pub mod configured;
pub mod get_flight_status;
pub mod price_flight_offer;
mod prices;
mod replay;
pub mod search_flights;
pub mod search_hotels;
pub mod spend;
mod validate;

use std::fmt::Write as _;

use chrono::NaiveDate;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde::{Serialize, Serializer};
use serde_json::Value;

pub use prices::currencies_by_use;
pub(crate) use prices::{
    amount_key, cheapest_in, keep_cheapest, list_words, mixed_currencies_note, result_currencies,
};
pub use replay::{Booked, booked_names, replayed_data};
pub use validate::ArgumentValidator;
pub(crate) use validate::json_type;

/// Whether a tool reads or changes the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Searches, prices and statuses: safe to repeat.
    Read,
    /// Bookings: never repeated blindly.
    Write,
}

/// How a call wants its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CallMode {
    /// A model is waiting: answer now, with a fallback if the provider is down.
    #[default]
    Interactive,
    /// Nobody is waiting: accept, run later, requeue silently while the provider is down.
    Background,
}

impl CallMode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            CallMode::Interactive => "interactive",
            CallMode::Background => "background",
        }
    }
}

/// One argument that is wrong, and what is expected instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field's path, dotted (`passengers[0].email`), or empty for the whole object.
    pub field: String,
    /// What is wrong and what would be valid.
    pub message: String,
}

impl FieldError {
    /// The error in one line: `field: message`, or the message alone for the whole value.
    pub fn said(&self) -> String {
        if self.field.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.field, self.message)
        }
    }
}

/// Renders field errors as the model-readable `content` of an `invalid_arguments` result.
pub fn describe_field_errors(tool: &str, errors: &[FieldError]) -> String {
    let mut out = format!("Invalid arguments for {tool}; fix these and call again:");
    for e in errors {
        let _ = write!(out, "\n- {}", e.said());
    }
    out
}

/// Static facts about one tool.
#[derive(Debug)]
pub struct ToolSpec {
    /// The name models call it by (`^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$`).
    pub name: &'static str,
    /// A short human title.
    pub title: &'static str,
    /// Read or write.
    pub access: Access,
    /// Whether repeating a call is harmless (and so whether it may be retried).
    pub idempotent: bool,
    /// The mode the tool is built for.
    pub built_for: CallMode,
    /// Whether a call must carry an `idempotency_key`.
    pub needs_idempotency_key: bool,
    /// Whether the tool's answers are prices or availability, which change by the minute (the
    /// searches and the offer pricing): an earlier answer served stale says they may have
    /// changed and are to be confirmed before booking. Any other tool's stale answer says only
    /// that it may have changed: a flight's status has no price, a booking's amount is what was
    /// charged (and a write is never answered stale), and the gateway cannot tell what a tool
    /// from configuration answers, so it claims nothing about prices for one.
    pub priced: bool,
    input_schema: Schema,
    output_schema: Schema,
    parse: Parse,
}

/// Parses one tool's arguments: `(arguments, today, idempotency_key)`.
type ParseFn = fn(Value, NaiveDate, Option<&str>) -> Result<ToolRequest, Vec<FieldError>>;

/// Where a tool's JSON Schema comes from.
#[derive(Debug)]
pub(crate) enum Schema {
    /// Derived from the Rust type (a catalog tool).
    Derived(fn() -> Value),
    /// Written in the tool's file (a tool from configuration).
    Given(Value),
}

impl Schema {
    fn value(&self) -> Value {
        match self {
            Schema::Derived(derive) => derive(),
            Schema::Given(value) => value.clone(),
        }
    }
}

/// How a tool's schema-valid arguments become a [`ToolRequest`].
#[derive(Debug)]
pub(crate) enum Parse {
    /// Into the catalog tool's typed arguments, with its semantic checks.
    Typed(ParseFn),
    /// As they are, for a tool from configuration: its schema is the whole check.
    Configured,
}

impl ToolSpec {
    /// The JSON Schema of the arguments (draft 2020-12, subschemas inlined).
    pub fn input_schema(&self) -> Value {
        self.input_schema.value()
    }

    /// The JSON Schema of `data` in an `ok` result.
    pub fn output_schema(&self) -> Value {
        self.output_schema.value()
    }

    /// Whether the tool comes from configuration (a `tools/*.toml` of kind `http`) rather than
    /// the catalog.
    pub fn is_configured(&self) -> bool {
        matches!(self.parse, Parse::Configured)
    }

    /// Deserializes schema-valid arguments and runs the semantic checks, `today` being the
    /// earliest acceptable travel date; `idempotency_key` is the call's, for tools that need one.
    pub fn parse(
        &self,
        arguments: Value,
        today: NaiveDate,
        idempotency_key: Option<&str>,
    ) -> Result<ToolRequest, Vec<FieldError>> {
        match self.parse {
            Parse::Typed(parse) => parse(arguments, today, idempotency_key),
            Parse::Configured => configured::parse(self, arguments, idempotency_key),
        }
    }
}

/// Every tool faregate knows, in manifest order.
pub static CATALOG: &[ToolSpec] = &[
    search_flights::SPEC,
    price_flight_offer::SPEC,
    search_hotels::SPEC,
    check_hotel_availability::SPEC,
    get_flight_status::SPEC,
    book_flight::SPEC,
    book_hotel::SPEC,
];

/// The catalog entry by name.
pub fn spec(name: &str) -> Option<&'static ToolSpec> {
    CATALOG.iter().find(|s| s.name == name)
}

/// The names of every tool in the catalog.
pub fn names() -> Vec<&'static str> {
    CATALOG.iter().map(|s| s.name).collect()
}

/// What a write call carries besides its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteTerms {
    /// The call's idempotency key: the same key never books twice. It is the client's own:
    /// two clients may use the same key for different bookings.
    pub idempotency_key: String,
    /// The client the write is made for, which the provider is told beside the key
    /// ([`ToolRequest::made_for`]), so a lookup by key never finds another client's booking.
    pub client: Option<String>,
    /// What the client's daily budget leaves for this booking, when it has one.
    pub spend_limit: Option<spend::SpendLimit>,
}

impl WriteTerms {
    /// The terms of a call with `idempotency_key` and no budget (yet).
    pub fn new(idempotency_key: String) -> Self {
        WriteTerms {
            idempotency_key,
            client: None,
            spend_limit: None,
        }
    }
}

/// The built-in tools an http provider may serve after their built-in providers (through a
/// binding in the tool's file): reads whose output carries no id that a later call routes back
/// to its issuer by prefix. `search_flights`, `search_hotels` and `check_hotel_availability`
/// hand out offer and rate ids (`off_`, `amx_`, `srr_`, …) that pricing and booking send to the
/// provider that issued them, and an http provider's ids could not be told apart from those;
/// `price_flight_offer` takes such an id; the bookings are writes.
pub const BINDABLE: &[&str] = &[get_flight_status::SPEC.name];

/// A built-in tool's output from JSON its provider's answer was mapped into (valid for its
/// output schema already), or why it does not fit the tool's type. Only the tools of
/// [`BINDABLE`] are read this way. A flight status gets the delays its times show where the
/// mapping gave none ([`get_flight_status::Output::with_derived_delays`]).
pub fn output_from_json(tool: &str, data: Value) -> Result<ToolOutput, String> {
    match tool {
        "get_flight_status" => serde_json::from_value(data)
            .map(|o: get_flight_status::Output| {
                ToolOutput::GetFlightStatus(o.with_derived_delays())
            })
            .map_err(|e| format!("the mapped answer is not a get_flight_status result: {e}")),
        other => Err(format!(
            "{other} takes no answer from an http provider; only {} do",
            BINDABLE.join(", ")
        )),
    }
}

/// A parsed, checked call of one tool.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolRequest {
    /// `search_flights`.
    SearchFlights(search_flights::Args),
    /// `price_flight_offer`.
    PriceFlightOffer(price_flight_offer::Args),
    /// `search_hotels`.
    SearchHotels(search_hotels::Args),
    /// `check_hotel_availability`.
    CheckHotelAvailability(check_hotel_availability::Args),
    /// `get_flight_status`.
    GetFlightStatus(get_flight_status::Args),
    /// `book_flight`, with what the call carries besides its arguments.
    BookFlight(book_flight::Args, WriteTerms),
    /// `book_hotel`, with what the call carries besides its arguments.
    BookHotel(book_hotel::Args, WriteTerms),
    /// A tool from configuration, with its arguments as the model sent them.
    Configured(configured::Call),
}

impl ToolRequest {
    /// Names the client a write is made for (a read is unchanged): a booking's provider is
    /// told it beside the key, and a write from configuration sends its key scoped to it
    /// ([`configured::Call::sent_key`]).
    pub fn made_for(&mut self, client: &str) {
        match self {
            ToolRequest::BookFlight(_, terms) | ToolRequest::BookHotel(_, terms) => {
                terms.client = Some(client.to_string());
            }
            ToolRequest::Configured(call) if call.idempotency_key.is_some() => {
                call.client = Some(client.to_string());
            }
            _ => {}
        }
    }

    /// Limits what a write may spend (a read is unchanged).
    pub fn limit_spend(&mut self, limit: spend::SpendLimit) {
        if let ToolRequest::BookFlight(_, terms) | ToolRequest::BookHotel(_, terms) = self {
            terms.spend_limit = Some(limit);
        }
    }

    /// The call's idempotency key, for a booking tool: the booking ledger records its call by
    /// it. A write tool from configuration is not a booking (the ledger keeps order ids and
    /// amounts it does not have): its key goes to its provider by the tool's idempotency rule
    /// scoped to its client (`configured::Call::sent_key`), which deduplicates it.
    pub fn idempotency_key(&self) -> Option<&str> {
        match self {
            ToolRequest::BookFlight(_, terms) | ToolRequest::BookHotel(_, terms) => {
                Some(&terms.idempotency_key)
            }
            _ => None,
        }
    }

    /// The checked arguments of a call of a [`BINDABLE`] tool as JSON (what an http provider's
    /// binding builds its request from); `None` for any other tool.
    pub fn bound_arguments(&self) -> Option<Value> {
        match self {
            ToolRequest::GetFlightStatus(a) => serde_json::to_value(a).ok(),
            _ => None,
        }
    }

    /// The tool's name.
    pub fn tool(&self) -> &'static str {
        match self {
            ToolRequest::SearchFlights(_) => search_flights::SPEC.name,
            ToolRequest::PriceFlightOffer(_) => price_flight_offer::SPEC.name,
            ToolRequest::SearchHotels(_) => search_hotels::SPEC.name,
            ToolRequest::CheckHotelAvailability(_) => check_hotel_availability::SPEC.name,
            ToolRequest::GetFlightStatus(_) => get_flight_status::SPEC.name,
            ToolRequest::BookFlight(..) => book_flight::SPEC.name,
            ToolRequest::BookHotel(..) => book_hotel::SPEC.name,
            ToolRequest::Configured(call) => call.tool,
        }
    }
}

/// A provider's normalized answer to one [`ToolRequest`].
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    /// `search_flights`.
    SearchFlights(search_flights::Output),
    /// `price_flight_offer`.
    PriceFlightOffer(price_flight_offer::Output),
    /// `search_hotels`.
    SearchHotels(search_hotels::Output),
    /// `check_hotel_availability`.
    CheckHotelAvailability(check_hotel_availability::Output),
    /// `get_flight_status`.
    GetFlightStatus(get_flight_status::Output),
    /// `book_flight`.
    BookFlight(book_flight::Output),
    /// `book_hotel`.
    BookHotel(book_hotel::Output),
    /// A tool from configuration: the kept result and its text.
    Configured(configured::Output),
}

impl ToolOutput {
    /// What was booked, for a booking tool's result.
    pub fn booked(&self) -> Option<Booked<'_>> {
        match self {
            ToolOutput::BookFlight(o) => Some(Booked {
                id: &o.order_id,
                reference: &o.booking_reference,
                amount: &o.total_amount,
                currency: &o.total_currency,
            }),
            ToolOutput::BookHotel(o) => Some(Booked {
                id: &o.booking_id,
                reference: &o.booking_reference,
                amount: &o.total_amount,
                currency: &o.total_currency,
            }),
            _ => None,
        }
    }

    /// A short text a model can quote: count, cheapest, fastest, currency.
    pub fn content(&self) -> String {
        match self {
            ToolOutput::SearchFlights(o) => search_flights::content(o),
            ToolOutput::PriceFlightOffer(o) => price_flight_offer::content(o),
            ToolOutput::SearchHotels(o) => search_hotels::content(o),
            ToolOutput::CheckHotelAvailability(o) => check_hotel_availability::content(o),
            ToolOutput::GetFlightStatus(o) => get_flight_status::content(o),
            ToolOutput::BookFlight(o) => book_flight::content(o),
            ToolOutput::BookHotel(o) => book_hotel::content(o),
            ToolOutput::Configured(o) => o.content.clone(),
        }
    }
}

/// The result as JSON, matching the tool's output schema: each output serializes as itself, so
/// a result can be written straight to JSON text without building a `Value` first.
impl Serialize for ToolOutput {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ToolOutput::SearchFlights(o) => o.serialize(serializer),
            ToolOutput::PriceFlightOffer(o) => o.serialize(serializer),
            ToolOutput::SearchHotels(o) => o.serialize(serializer),
            ToolOutput::CheckHotelAvailability(o) => o.serialize(serializer),
            ToolOutput::GetFlightStatus(o) => o.serialize(serializer),
            ToolOutput::BookFlight(o) => o.serialize(serializer),
            ToolOutput::BookHotel(o) => o.serialize(serializer),
            ToolOutput::Configured(o) => o.data.serialize(serializer),
        }
    }
}

/// The schema of `T` as faregate publishes it: draft 2020-12 with every subschema inlined
/// (model providers handle `$ref` poorly).
pub(crate) fn schema_of<T: JsonSchema>() -> Value {
    SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// Reads `value` as a `T`, or the field error naming where it does not fit (`condition.amount`,
/// empty for the whole value) in words a model and a person read: "expected a number", not
/// serde's "expected f64". For arguments no JSON Schema checks first.
pub fn read_as<T: DeserializeOwned>(value: Value) -> Result<T, FieldError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let field = e.path().to_string();
        FieldError {
            field: if field == "." { String::new() } else { field },
            message: plain_types(&e.into_inner().to_string()),
        }
    })
}

/// serde's Rust type names in an error, in plain words.
fn plain_types(message: &str) -> String {
    const PLAIN: [(&str, &str); 11] = [
        ("expected f64", "expected a number"),
        ("expected f32", "expected a number"),
        ("expected u8", "expected a whole number, 0 or more"),
        ("expected u16", "expected a whole number, 0 or more"),
        ("expected u32", "expected a whole number, 0 or more"),
        ("expected u64", "expected a whole number, 0 or more"),
        ("expected usize", "expected a whole number, 0 or more"),
        ("expected i8", "expected a whole number"),
        ("expected i16", "expected a whole number"),
        ("expected i32", "expected a whole number"),
        ("expected i64", "expected a whole number"),
    ];
    let mut out = message.to_string();
    for (rust, plain) in PLAIN {
        if out.ends_with(rust) || out.contains(&format!("{rust} ")) {
            out = out.replace(rust, plain);
        }
    }
    out
}

/// Deserializes schema-valid arguments into `A` and runs its semantic check.
///
/// JSON Schema counts `1.0` as an integer, so the schema lets `"adults": 1.0` through, but
/// serde refuses a float for an integer field, in words that name no field ("invalid type:
/// floating point `1.0`, expected u8"). Models write whole numbers that way often enough, so
/// every whole float is read as the integer it is first ([`whole_floats_as_integers`]).
pub(crate) fn parse_args<A: DeserializeOwned>(
    mut arguments: Value,
    today: NaiveDate,
    check: fn(&A, NaiveDate) -> Result<(), Vec<FieldError>>,
) -> Result<A, Vec<FieldError>> {
    whole_floats_as_integers(&mut arguments);
    let args: A = serde_json::from_value(arguments).map_err(|e| {
        vec![FieldError {
            field: String::new(),
            message: e.to_string(),
        }]
    })?;
    check(&args, today)?;
    Ok(args)
}

/// Replaces every float with no fraction (`2.0`, within ±2^53 where floats are exact) by that
/// integer, at any depth. A field of type number reads an integer as well, so only integer
/// fields notice.
fn whole_floats_as_integers(value: &mut Value) {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    match value {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() <= EXACT
            {
                // Exact: |f| ≤ 2^53 has no fraction, so the cast loses nothing.
                #[allow(clippy::cast_possible_truncation)]
                let whole = f as i64;
                *value = Value::from(whole);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_floats_as_integers),
        Value::Object(fields) => fields.values_mut().for_each(whole_floats_as_integers),
        _ => {}
    }
}

/// Parses a booking tool's arguments and its idempotency key together into `make`'s request;
/// the errors name only what is wrong (a good key is not mentioned next to bad arguments).
pub(crate) fn parse_write<A: DeserializeOwned>(
    tool: &str,
    (arguments, today, idempotency_key): (Value, NaiveDate, Option<&str>),
    check: fn(&A, NaiveDate) -> Result<(), Vec<FieldError>>,
    make: fn(A, WriteTerms) -> ToolRequest,
) -> Result<ToolRequest, Vec<FieldError>> {
    let key = self::idempotency_key(tool, idempotency_key);
    match (parse_args(arguments, today, check), key) {
        (Ok(args), Ok(key)) => Ok(make(args, WriteTerms::new(key))),
        (args, key) => {
            let mut errors = args.err().unwrap_or_default();
            errors.extend(key.err());
            Err(errors)
        }
    }
}

/// The call's idempotency key for a tool that needs one, trimmed, or the field error that says
/// what is wrong with it (missing, blank, too long, or with a control character).
///
/// Checked here, where every protocol's write passes: the key may go to the provider as a
/// header (a configured tool's `[idempotency] header`), where a control character would fail
/// the request before it is sent, and that failure would count against the provider's breaker.
pub(crate) fn idempotency_key(tool: &str, given: Option<&str>) -> Result<String, FieldError> {
    let problem = match given.map(str::trim) {
        None => "is missing",
        Some("") => "is blank",
        Some(key) if key.chars().count() > 200 => "is longer than 200 characters",
        Some(key) if key.chars().any(char::is_control) => {
            "has a line break or another control character"
        }
        Some(key) => return Ok(key.to_string()),
    };
    Err(FieldError {
        field: "idempotency_key".into(),
        message: format!(
            "{problem}: {tool} needs an idempotency_key on the call (1 to 200 printable characters, e.g. a UUID); reuse the same key when repeating the request so it can never book twice"
        ),
    })
}

/// What a tool's text says of an offer, hotel or rate whose `bookable` is false: a provider
/// that serves no booking tool here priced it (Amadeus, answering while the booking provider
/// does not), so it is a price to compare, never one to promise.
pub(crate) const FOR_COMPARISON: &str =
    "priced by a provider this gateway does not book through, for comparison only";

/// Formats minutes as `7h05m`.
pub(crate) fn format_minutes(minutes: u32) -> String {
    format!("{}h{:02}m", minutes / 60, minutes % 60)
}

#[cfg(test)]
mod tests;
