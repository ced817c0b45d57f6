//! Scripted changes over time: an offer's price and a flight's status that move while the
//! simulator runs, so a demo (and a test) can show a watch firing.
//!
//! A script is a list of steps, each applied once its `after_ms` has passed since the script was
//! set (`POST /_sim/script`, or [`Simulator::script`](super::Simulator::script)); setting one
//! replaces the last. A step changes the price of every flight offer generated from then on (a
//! factor on the generated price, so the same search answers the same offers at another price),
//! or one flight's delay or gate as `GET /v2/schedule/flights` reports it. Later steps win, field
//! by field.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One scripted change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptStep {
    /// When it applies, in milliseconds after the script was set.
    pub after_ms: u64,
    /// A factor on every flight offer's price from then on (1.0 = as generated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_factor: Option<f64>,
    /// The flight it changes, as carrier and number (`"BA117"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flight: Option<String>,
    /// The flight's delay in minutes from then on (0 = on time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_minutes: Option<u32>,
    /// The flight's departure gate from then on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
}

impl ScriptStep {
    /// What is wrong with the step, in words, or `None`.
    pub(crate) fn problem(&self) -> Option<String> {
        if let Some(f) = self.price_factor
            && !(f.is_finite() && f > 0.0)
        {
            return Some(format!("price_factor must be above 0, got {f}"));
        }
        let touches_flight = self.delay_minutes.is_some() || self.gate.is_some();
        match (&self.flight, touches_flight) {
            (None, true) => Some("delay_minutes and gate need \"flight\", e.g. \"BA117\"".into()),
            (Some(f), false) => Some(format!(
                "step for flight {f} changes nothing; give delay_minutes or gate"
            )),
            (None, false) if self.price_factor.is_none() => {
                Some("a step changes price_factor, or a flight's delay_minutes or gate".into())
            }
            _ => None,
        }
    }
}

/// The script now running.
#[derive(Debug, Clone)]
pub(crate) struct Script {
    started: Instant,
    steps: Vec<ScriptStep>,
}

impl Default for Script {
    fn default() -> Self {
        Script {
            started: Instant::now(),
            steps: Vec::new(),
        }
    }
}

impl Script {
    /// A script starting now.
    pub(crate) fn new(mut steps: Vec<ScriptStep>) -> Self {
        steps.sort_by_key(|s| s.after_ms);
        Script {
            started: Instant::now(),
            steps,
        }
    }

    fn applied(&self) -> impl Iterator<Item = &ScriptStep> {
        let elapsed = self.started.elapsed();
        self.steps
            .iter()
            .filter(move |s| Duration::from_millis(s.after_ms) <= elapsed)
    }

    /// The price factor now.
    pub(crate) fn price_factor(&self) -> f64 {
        self.applied()
            .filter_map(|s| s.price_factor)
            .last()
            .unwrap_or(1.0)
    }

    /// Applies the steps due for `carrier`+`number` to a dated flight in Amadeus's shape: the
    /// delay on both timings, the gate on the departure.
    pub(crate) fn apply_to_flight(&self, carrier: &str, number: u64, flight: &mut Value) {
        let name = format!("{carrier}{number}");
        for step in self
            .applied()
            .filter(|s| s.flight.as_deref() == Some(&name))
        {
            if let Some(points) = flight["flightPoints"].as_array_mut() {
                for point in points {
                    for side in ["departure", "arrival"] {
                        // `get_mut`, not indexing: indexing a missing key would add it.
                        let timings = point
                            .get_mut(side)
                            .and_then(|e| e.get_mut("timings"))
                            .and_then(Value::as_array_mut);
                        if let (Some(m), Some(timings)) = (step.delay_minutes, timings) {
                            for t in timings {
                                t["delays"] = if m == 0 {
                                    json!([])
                                } else {
                                    json!([{ "duration": format!("PT{}H{}M", m / 60, m % 60) }])
                                };
                            }
                        }
                    }
                    if let (Some(gate), Some(departure)) = (
                        &step.gate,
                        point.get_mut("departure").and_then(Value::as_object_mut),
                    ) {
                        departure.insert("gate".into(), json!({ "mainGate": gate }));
                    }
                }
            }
        }
    }

    /// The script as `GET /_sim/script` shows it.
    pub(crate) fn describe(&self) -> Value {
        json!({
            "elapsed_ms": u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            "steps": self.steps,
            "price_factor": self.price_factor(),
        })
    }
}
