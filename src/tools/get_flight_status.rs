//! `get_flight_status`: the live status of one scheduled flight, built for background schedule
//! checks (silent requeue while its provider is down).

use chrono::NaiveDate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::checks::{self, Errors};
use super::{Access, CallMode, FieldError, ToolRequest, ToolSpec};

/// The catalog entry.
pub const SPEC: ToolSpec = ToolSpec {
    name: "get_flight_status",
    title: "Get flight status",
    access: Access::Read,
    idempotent: true,
    built_for: CallMode::Background,
    needs_idempotency_key: false,
    input_schema: super::Schema::Derived(super::schema_of::<Args>),
    output_schema: super::Schema::Derived(super::schema_of::<Output>),
    parse: super::Parse::Typed(|v, today, _key| {
        super::parse_args(v, today, check).map(ToolRequest::GetFlightStatus)
    }),
};

/// Arguments of `get_flight_status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Airline IATA code, 2 or 3 characters, upper case, e.g. "BA".
    #[schemars(regex(pattern = r"^[A-Z0-9]{2,3}$"))]
    pub carrier_code: String,
    /// Flight number, 1 to 4 digits, e.g. "117".
    #[schemars(regex(pattern = r"^[0-9]{1,4}$"))]
    pub flight_number: String,
    /// Scheduled departure date as YYYY-MM-DD, local to the departure airport; yesterday or later.
    #[schemars(extend("format" = "date"))]
    pub departure_date: String,
}

fn check(args: &Args, today: NaiveDate) -> Result<(), Vec<FieldError>> {
    let mut e = Errors::default();
    // A flight that left late yesterday evening (local time) may still be in the air today.
    let earliest = today.pred_opt().unwrap_or(today);
    checks::date_not_past(&mut e, "departure_date", &args.departure_date, earliest);
    e.finish()
}

/// The result of `get_flight_status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Output {
    /// Matching flights (usually one; empty when the flight is unknown for that date).
    pub flights: Vec<FlightStatus>,
}

/// One dated flight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FlightStatus {
    /// Airline code.
    pub carrier_code: String,
    /// Flight number.
    pub flight_number: String,
    /// Scheduled departure date.
    pub scheduled_departure_date: String,
    /// Airports in flight order, each with its departure or arrival timings.
    pub points: Vec<FlightPoint>,
}

/// One airport of a flight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FlightPoint {
    /// Airport IATA code.
    pub airport: String,
    /// Departure from this airport, if the flight departs here.
    pub departure: Option<Timing>,
    /// Arrival at this airport, if the flight arrives here.
    pub arrival: Option<Timing>,
}

/// Scheduled and latest known times at one airport.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Timing {
    /// Scheduled time with offset.
    pub scheduled: Option<String>,
    /// Latest estimated or actual time with offset, when known.
    pub latest: Option<String>,
    /// Delay in minutes, when known.
    pub delay_minutes: Option<u32>,
    /// Terminal, when known.
    pub terminal: Option<String>,
    /// Gate, when known.
    pub gate: Option<String>,
}

/// The text a model can quote.
pub fn content(out: &Output) -> String {
    let Some(f) = out.flights.first() else {
        return "No flight with that number is scheduled on that date. Check the airline code, number and date.".to_string();
    };
    let mut parts = Vec::new();
    for p in &f.points {
        if let Some(d) = &p.departure {
            parts.push(describe("departs", &p.airport, d));
        }
        if let Some(a) = &p.arrival {
            parts.push(describe("arrives", &p.airport, a));
        }
    }
    format!(
        "{} {} on {}: {}.",
        f.carrier_code,
        f.flight_number,
        f.scheduled_departure_date,
        parts.join("; ")
    )
}

fn describe(verb: &str, airport: &str, t: &Timing) -> String {
    let mut s = format!(
        "{verb} {airport} {}",
        t.latest
            .as_deref()
            .or(t.scheduled.as_deref())
            .unwrap_or("(time unknown)")
    );
    match t.delay_minutes {
        Some(0) | None => {}
        Some(m) => s.push_str(&format!(" (delayed {m} min)")),
    }
    if let Some(term) = &t.terminal {
        s.push_str(&format!(", terminal {term}"));
    }
    if let Some(g) = &t.gate {
        s.push_str(&format!(", gate {g}"));
    }
    s
}
