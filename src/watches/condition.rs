//! When a watch has news: the condition a client sets, checked against one run's result and the
//! one before it. Pure, so every rule is a row of a table test.
//!
//! A condition is checked on the tool's result data (`ok` envelopes only), never on ids or
//! expiry stamps a provider mints anew on every search: "any change" compares the text a model
//! reads (`content`), the price rules the lowest price in the result, the flight rules each
//! airport's delay, gate and terminal. A rule that crosses a line (price below, delay over)
//! fires when the line is crossed, not on every run that stays across it, so a client hears
//! about one drop once.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::texts::watches as texts;

/// What counts as news for a watch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Condition {
    /// The result's text changed since the last run.
    AnyChange,
    /// The lowest price fell below `amount` (in the result's currency: the one most of its
    /// prices are in).
    PriceBelow {
        /// The line, e.g. 400.
        amount: f64,
    },
    /// The lowest price moved by more than `share` (0.05 = 5 %) since the last run.
    PriceChange {
        /// The share, above 0 and at most 1.
        share: f64,
    },
    /// Any airport's time, delay, gate or terminal changed since the last run.
    StatusChanged,
    /// The flight's largest delay went over `minutes`.
    DelayOver {
        /// The line, in minutes.
        minutes: u32,
    },
    /// A gate or terminal changed since the last run.
    GateChanged,
}

/// Tools whose results carry a price the price rules read.
const PRICED: &[&str] = &["search_flights", "price_flight_offer", "search_hotels"];
/// The tool whose results the flight rules read.
pub(super) const FLIGHT_STATUS: &str = "get_flight_status";

impl Condition {
    /// The wire name of the rule.
    pub fn kind(&self) -> &'static str {
        match self {
            Condition::AnyChange => "any_change",
            Condition::PriceBelow { .. } => "price_below",
            Condition::PriceChange { .. } => "price_change",
            Condition::StatusChanged => "status_changed",
            Condition::DelayOver { .. } => "delay_over",
            Condition::GateChanged => "gate_changed",
        }
    }

    /// Reads a condition for `tool` from the request body (absent = any change), with a message
    /// that names the fix when it does not fit.
    pub fn parse(tool: &str, value: Option<&Value>) -> Result<Self, String> {
        let Some(value) = value else {
            return Ok(Condition::AnyChange);
        };
        let condition: Condition = crate::tools::read_as(value.clone())
            .map_err(|e| texts::condition_unreadable(&e.said()))?;
        condition.fits(tool)?;
        Ok(condition)
    }

    /// Whether the rule can be read from `tool`'s results, and its numbers make sense.
    fn fits(&self, tool: &str) -> Result<(), String> {
        let kind = self.kind();
        match self {
            Condition::AnyChange => Ok(()),
            Condition::PriceBelow { .. } | Condition::PriceChange { .. }
                if !PRICED.contains(&tool) =>
            {
                let instead = if tool == FLIGHT_STATUS {
                    ", status_changed, delay_over or gate_changed"
                } else {
                    ""
                };
                Err(texts::reads_no_price(kind, tool, PRICED, instead))
            }
            Condition::PriceBelow { amount } if !(amount.is_finite() && *amount > 0.0) => {
                Err(texts::bad_amount(*amount))
            }
            Condition::PriceChange { share } if !(*share > 0.0 && *share <= 1.0) => {
                Err(texts::bad_share(*share))
            }
            Condition::StatusChanged | Condition::DelayOver { .. } | Condition::GateChanged
                if tool != FLIGHT_STATUS =>
            {
                let instead = if PRICED.contains(&tool) {
                    ", price_below or price_change"
                } else {
                    ""
                };
                Err(texts::reads_no_status(kind, tool, FLIGHT_STATUS, instead))
            }
            _ => Ok(()),
        }
    }

    /// The news in `current` after `previous` (the last run's result, `None` on the first run),
    /// in words; `None` when there is none. Both are `ok` envelopes as the job store keeps them.
    pub fn news(&self, previous: Option<&Value>, current: &Value) -> Option<String> {
        match self {
            Condition::AnyChange => {
                let before = content(previous?)?;
                let now = content(current)?;
                (before != now).then(|| texts::changed(&now))
            }
            Condition::PriceBelow { amount } => {
                let (now, currency) = lowest_price(current)?;
                // A price in another currency says nothing about this line: as on a first run.
                let was_above = previous
                    .and_then(lowest_price)
                    .filter(|(_, was_in)| *was_in == currency)
                    .is_none_or(|(before, _)| before >= *amount);
                (now < *amount && was_above).then(|| texts::price_below(*amount, now, &currency))
            }
            Condition::PriceChange { share } => {
                let (before, was_in) = lowest_price(previous?)?;
                let (now, currency) = lowest_price(current)?;
                // No exchange rates: a move between currencies is not a price change.
                let moved = (now - before).abs() / before;
                (was_in == currency && before > 0.0 && moved > *share)
                    .then(|| texts::price_moved(before, now, &currency))
            }
            Condition::StatusChanged => {
                let before = points(previous?)?;
                let now = points(current)?;
                (before != now)
                    .then(|| texts::status_changed(&content(current).unwrap_or_default()))
            }
            Condition::DelayOver { minutes } => {
                let now = max_delay(&points(current)?);
                let was_under = previous
                    .and_then(points)
                    .is_none_or(|p| max_delay(&p) <= *minutes);
                (now > *minutes && was_under)
                    .then(|| texts::delayed(now, *minutes, &content(current).unwrap_or_default()))
            }
            Condition::GateChanged => {
                let before = points(previous?)?;
                let now = points(current)?;
                let gates = |p: &[Point]| {
                    p.iter()
                        .map(|p| (p.gate.clone(), p.terminal.clone()))
                        .collect::<Vec<_>>()
                };
                (gates(&before) != gates(&now))
                    .then(|| texts::gate_changed(&content(current).unwrap_or_default()))
            }
        }
    }
}

/// An envelope's text, when it is an `ok` answer.
fn content(envelope: &Value) -> Option<String> {
    (envelope.get("status")?.as_str()? == "ok")
        .then(|| envelope.get("content")?.as_str().map(str::to_string))
        .flatten()
}

/// The data of an `ok` envelope.
fn data(envelope: &Value) -> Option<&Value> {
    (envelope.get("status")?.as_str()? == "ok").then_some(envelope.get("data")?)
}

/// The lowest price in a result with its currency: the cheapest offer of a search, the priced
/// offer, the cheapest hotel. The gateway has no exchange rates, so a result priced in several
/// currencies is read in the one most of its prices are in (as its search ranked it,
/// `tools::currencies_by_use`), and amounts in another currency are never compared with it.
fn lowest_price(envelope: &Value) -> Option<(f64, String)> {
    let data = data(envelope)?;
    let priced: Vec<(&Value, &Value)> = if let Some(offers) = data.get("offers") {
        offers
            .as_array()?
            .iter()
            .map(|o| (&o["total_amount"], &o["total_currency"]))
            .collect()
    } else if let Some(offer) = data.get("offer") {
        vec![(&offer["total_amount"], &offer["total_currency"])]
    } else {
        data.get("hotels")?
            .as_array()?
            .iter()
            .map(|h| (&h["cheapest_total_amount"], &h["currency"]))
            .collect()
    };
    let priced: Vec<(f64, &str)> = priced
        .into_iter()
        .filter_map(|(amount, currency)| {
            Some((
                amount.as_str()?.parse::<f64>().ok()?,
                currency.as_str().unwrap_or_default(),
            ))
        })
        .collect();
    let currency = *crate::tools::currencies_by_use(priced.iter().map(|(_, c)| *c)).first()?;
    priced
        .into_iter()
        .filter(|(_, c)| *c == currency)
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(amount, c)| (amount, c.to_string()))
}

/// What a flight rule reads of one airport.
#[derive(Debug, Clone, PartialEq)]
struct Point {
    latest: Vec<Option<String>>,
    delay: u32,
    gate: Vec<Option<String>>,
    terminal: Vec<Option<String>>,
}

/// Each airport of the first flight in a flight-status result.
fn points(envelope: &Value) -> Option<Vec<Point>> {
    let flight = data(envelope)?.get("flights")?.as_array()?.first()?;
    let text = |t: &Value, key: &str| t.get(key).and_then(Value::as_str).map(str::to_string);
    Some(
        flight
            .get("points")?
            .as_array()?
            .iter()
            .map(|p| {
                let timings: Vec<&Value> = ["departure", "arrival"]
                    .iter()
                    .filter_map(|k| p.get(*k).filter(|t| t.is_object()))
                    .collect();
                Point {
                    latest: timings.iter().map(|t| text(t, "latest")).collect(),
                    delay: timings
                        .iter()
                        .filter_map(|t| t.get("delay_minutes")?.as_u64())
                        .max()
                        .map_or(0, |d| u32::try_from(d).unwrap_or(u32::MAX)),
                    gate: timings.iter().map(|t| text(t, "gate")).collect(),
                    terminal: timings.iter().map(|t| text(t, "terminal")).collect(),
                }
            })
            .collect(),
    )
}

fn max_delay(points: &[Point]) -> u32 {
    points.iter().map(|p| p.delay).max().unwrap_or(0)
}

/// The departure of the first flight in a flight-status result (RFC 3339 with offset), for
/// watches that end when it departs: its latest time when known, else its scheduled one.
pub(super) fn departure(envelope: &Value) -> Option<String> {
    let flight = data(envelope)?.get("flights")?.as_array()?.first()?;
    let departure = flight
        .get("points")?
        .as_array()?
        .iter()
        .find_map(|p| p.get("departure").filter(|d| d.is_object()))?;
    ["latest", "scheduled"]
        .iter()
        .find_map(|k| departure.get(*k)?.as_str().map(str::to_string))
}

#[cfg(test)]
mod tests;
