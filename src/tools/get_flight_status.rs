//! `get_flight_status`: the live status of one scheduled flight, built for background schedule
//! checks (silent requeue while its provider is down).

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeDelta};
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
    priced: false,
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
    /// Delay in minutes, when known: the provider's, else how much later the latest time is than the scheduled one.
    pub delay_minutes: Option<u32>,
    /// Terminal, when known.
    pub terminal: Option<String>,
    /// Gate, when known.
    pub gate: Option<String>,
}

impl Output {
    /// The same result with each timing's delay filled in from its times where the provider
    /// gave none ([`Timing::delay`]). A binding maps fields one to one and cannot subtract
    /// (FlightAware gives delays in seconds, which a JSONPath cannot turn into minutes), so
    /// without this a delay shows only in the latest time, and `delay_over` watches, which
    /// read `delay_minutes`, never fire on that provider.
    pub fn with_derived_delays(mut self) -> Self {
        let timings = self
            .flights
            .iter_mut()
            .flat_map(|f| &mut f.points)
            .flat_map(|p| [&mut p.departure, &mut p.arrival])
            .flatten();
        for t in timings {
            t.delay_minutes = t.delay();
        }
        self
    }
}

impl Timing {
    /// The delay in whole minutes: the provider's, else the latest time's lead over the
    /// scheduled one, rounded, when that is at least half a minute (an early time is no delay).
    pub fn delay(&self) -> Option<u32> {
        self.delay_minutes.or_else(|| {
            let late = between(self.scheduled.as_deref()?, self.latest.as_deref()?)?;
            let minutes = (late.num_seconds() + 30).div_euclid(60);
            u32::try_from(minutes).ok().filter(|m| *m > 0)
        })
    }
}

/// How much later `to` is than `from`: both with an offset (RFC 3339, seconds optional, as
/// Amadeus writes them), or both local to the same airport.
fn between(from: &str, to: &str) -> Option<TimeDelta> {
    const WITH_OFFSET: [&str; 2] = ["%Y-%m-%dT%H:%M:%S%.f%:z", "%Y-%m-%dT%H:%M%:z"];
    const LOCAL: [&str; 2] = ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"];
    let offset = |t: &str| {
        DateTime::parse_from_rfc3339(t).ok().or_else(|| {
            WITH_OFFSET
                .iter()
                .find_map(|f| DateTime::parse_from_str(t, f).ok())
        })
    };
    let local = |t: &str| {
        LOCAL
            .iter()
            .find_map(|f| NaiveDateTime::parse_from_str(t, f).ok())
    };
    match (offset(from), offset(to)) {
        (Some(from), Some(to)) => Some(to - from),
        _ => Some(local(to)? - local(from)?),
    }
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

/// "departs MUC 07:55Z (delayed 30 min, scheduled 07:25Z), terminal 5": the latest time, and a
/// delay (the provider's or the one its times show) with the time it was scheduled for.
fn describe(verb: &str, airport: &str, t: &Timing) -> String {
    let mut s = format!(
        "{verb} {airport} {}",
        t.latest
            .as_deref()
            .or(t.scheduled.as_deref())
            .unwrap_or("(time unknown)")
    );
    if let Some(m) = t.delay().filter(|m| *m > 0) {
        match t.scheduled.as_deref().filter(|_| t.latest.is_some()) {
            Some(scheduled) => s.push_str(&format!(" (delayed {m} min, scheduled {scheduled})")),
            None => s.push_str(&format!(" (delayed {m} min)")),
        }
    }
    if let Some(term) = &t.terminal {
        s.push_str(&format!(", terminal {term}"));
    }
    if let Some(g) = &t.gate {
        s.push_str(&format!(", gate {g}"));
    }
    s
}
