//! Request-body validation that collects every problem, as Duffel reports them: each error is a
//! 422 `validation_error` item whose `source.pointer` names the field.

use chrono::NaiveDate;
use serde_json::{Map, Value};

use super::wire::ErrorItem;

/// Collects validation errors while reading fields out of a JSON object.
#[derive(Debug, Default)]
pub(crate) struct Checker {
    pub(crate) errors: Vec<ErrorItem>,
}

fn name_of(pointer: &str) -> &str {
    pointer
        .rsplit('/')
        .find(|s| s.parse::<usize>().is_err())
        .unwrap_or(pointer)
}

impl Checker {
    /// Records a problem with a field.
    pub(crate) fn invalid(&mut self, pointer: &str, message: impl Into<String>) {
        self.errors
            .push(ErrorItem::validation("invalid_field", pointer, message));
    }

    /// Records a problem with a specific code.
    pub(crate) fn invalid_code(
        &mut self,
        code: &'static str,
        pointer: &str,
        message: impl Into<String>,
    ) {
        self.errors
            .push(ErrorItem::validation(code, pointer, message));
    }

    /// A required, non-null field.
    pub(crate) fn required<'a>(
        &mut self,
        obj: &'a Map<String, Value>,
        key: &str,
        pointer: &str,
    ) -> Option<&'a Value> {
        match obj.get(key) {
            None | Some(Value::Null) => {
                self.errors.push(ErrorItem::validation(
                    "validation_required",
                    pointer,
                    format!("Field '{}' can't be blank", name_of(pointer)),
                ));
                None
            }
            Some(v) => Some(v),
        }
    }

    /// A required non-empty string.
    pub(crate) fn string<'a>(
        &mut self,
        obj: &'a Map<String, Value>,
        key: &str,
        pointer: &str,
    ) -> Option<&'a str> {
        match self.required(obj, key, pointer)? {
            Value::String(s) if !s.trim().is_empty() => Some(s),
            _ => {
                self.invalid(pointer, format!("Field '{key}' must be a non-empty string"));
                None
            }
        }
    }

    /// A required non-empty array.
    pub(crate) fn array<'a>(
        &mut self,
        obj: &'a Map<String, Value>,
        key: &str,
        pointer: &str,
    ) -> Option<&'a [Value]> {
        match self.required(obj, key, pointer)? {
            Value::Array(a) if !a.is_empty() => Some(a),
            Value::Array(_) => {
                self.invalid(
                    pointer,
                    format!("Field '{key}' must contain at least one item"),
                );
                None
            }
            _ => {
                self.invalid(pointer, format!("Field '{key}' must be an array"));
                None
            }
        }
    }

    /// A required object.
    pub(crate) fn object<'a>(
        &mut self,
        obj: &'a Map<String, Value>,
        key: &str,
        pointer: &str,
    ) -> Option<&'a Map<String, Value>> {
        match self.required(obj, key, pointer)? {
            Value::Object(m) => Some(m),
            _ => {
                self.invalid(pointer, format!("Field '{key}' must be an object"));
                None
            }
        }
    }

    /// An array item that must be an object.
    pub(crate) fn item<'a>(
        &mut self,
        v: &'a Value,
        pointer: &str,
    ) -> Option<&'a Map<String, Value>> {
        match v {
            Value::Object(m) => Some(m),
            _ => {
                self.invalid(pointer, "Each item must be an object");
                None
            }
        }
    }

    /// A required `YYYY-MM-DD` date.
    pub(crate) fn date(
        &mut self,
        obj: &Map<String, Value>,
        key: &str,
        pointer: &str,
    ) -> Option<NaiveDate> {
        let s = self.string(obj, key, pointer)?;
        match NaiveDate::parse_from_str(s, "%Y-%m-%d") {
            Ok(d) if s.len() == 10 => Some(d),
            _ => {
                self.invalid(
                    pointer,
                    format!("Field '{key}' must be a date in the format YYYY-MM-DD, got '{s}'"),
                );
                None
            }
        }
    }

    /// A required integer within a range.
    pub(crate) fn int_in(
        &mut self,
        obj: &Map<String, Value>,
        key: &str,
        pointer: &str,
        lo: u64,
        hi: u64,
    ) -> Option<u64> {
        let v = self.required(obj, key, pointer)?;
        match v.as_u64() {
            Some(n) if (lo..=hi).contains(&n) => Some(n),
            _ => {
                self.invalid(
                    pointer,
                    format!("Field '{key}' must be an integer from {lo} to {hi}, got {v}"),
                );
                None
            }
        }
    }

    /// An optional integer within a range (absent or null gives `default`).
    pub(crate) fn opt_int_in(
        &mut self,
        obj: &Map<String, Value>,
        key: &str,
        pointer: &str,
        lo: u64,
        hi: u64,
        default: u64,
    ) -> u64 {
        match obj.get(key) {
            None | Some(Value::Null) => default,
            Some(_) => self.int_in(obj, key, pointer, lo, hi).unwrap_or(default),
        }
    }

    /// A required number within a range.
    pub(crate) fn number_in(
        &mut self,
        obj: &Map<String, Value>,
        key: &str,
        pointer: &str,
        lo: f64,
        hi: f64,
    ) -> Option<f64> {
        let v = self.required(obj, key, pointer)?;
        match v.as_f64() {
            Some(n) if (lo..=hi).contains(&n) => Some(n),
            _ => {
                self.invalid(
                    pointer,
                    format!("Field '{key}' must be a number from {lo} to {hi}, got {v}"),
                );
                None
            }
        }
    }

    /// A required string that must be one of `allowed`.
    pub(crate) fn one_of<'a>(
        &mut self,
        obj: &'a Map<String, Value>,
        key: &str,
        pointer: &str,
        allowed: &[&str],
    ) -> Option<&'a str> {
        let s = self.string(obj, key, pointer)?;
        if allowed.contains(&s) {
            Some(s)
        } else {
            self.invalid(
                pointer,
                format!(
                    "Field '{key}' must be one of {}, got '{s}'",
                    allowed.join(", ")
                ),
            );
            None
        }
    }
}

/// Parses a raw query string into `(name, value)` pairs (values used here need no decoding).
pub(crate) fn query_pairs(q: Option<&str>) -> Vec<(&str, &str)> {
    q.unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
        .collect()
}

/// Reads an optional boolean query parameter (`true`/`false`); bad values are recorded.
pub(crate) fn query_bool(
    c: &mut Checker,
    pairs: &[(&str, &str)],
    name: &str,
    default: bool,
) -> bool {
    match pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| *v) {
        None => default,
        Some("true") => true,
        Some("false") => false,
        Some(other) => {
            c.invalid(
                &format!("/{name}"),
                format!("Query parameter '{name}' must be true or false, got '{other}'"),
            );
            default
        }
    }
}
