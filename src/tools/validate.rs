//! Validates a call's arguments against its tool's JSON Schema and names every bad field.
//!
//! The validator is compiled once per tool at start-up (never per call) with remote and file
//! `$ref` resolution compiled out of the `jsonschema` crate, so a schema can never make the
//! gateway fetch anything. Formats (`date`, `email`) are checked too.

use chrono::NaiveDate;
use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

use super::{FieldError, ToolRequest, ToolSpec};

/// A compiled argument validator for one tool.
#[derive(Debug)]
pub struct ArgumentValidator {
    spec: &'static ToolSpec,
    schema: Value,
    validator: jsonschema::Validator,
}

impl ArgumentValidator {
    /// Compiles the tool's input schema.
    pub fn new(spec: &'static ToolSpec) -> Result<Self, String> {
        let schema = spec.input_schema();
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .build(&schema)
            .map_err(|e| format!("the input schema of {} does not compile: {e}", spec.name))?;
        Ok(ArgumentValidator {
            spec,
            schema,
            validator,
        })
    }

    /// The whole check a call's arguments get, interactive or background: the schema names
    /// every shape error, the typed parse adds the semantic ones (a date in the past, a
    /// check-out before the check-in) for fields the schema found no fault with, so one answer
    /// lists everything to fix. `today` is the earliest acceptable travel date.
    pub fn check(
        &self,
        arguments: &Value,
        today: NaiveDate,
        idempotency_key: Option<&str>,
    ) -> Result<ToolRequest, Vec<FieldError>> {
        self.check_owned(arguments.clone(), today, idempotency_key)
    }

    /// [`Self::check`] for arguments the caller no longer needs: the typed parse takes them
    /// without a copy (the interactive call path).
    pub fn check_owned(
        &self,
        arguments: Value,
        today: NaiveDate,
        idempotency_key: Option<&str>,
    ) -> Result<ToolRequest, Vec<FieldError>> {
        let schema_errors = self.errors(&arguments);
        match self.spec.parse(arguments, today, idempotency_key) {
            Ok(request) if schema_errors.is_empty() => Ok(request),
            Ok(_) => Err(schema_errors),
            Err(semantic) => {
                let mut all = schema_errors;
                let extra: Vec<_> = semantic
                    .into_iter()
                    .filter(|e| {
                        // An empty field is serde's view of a shape error the schema reported.
                        (!e.field.is_empty() || all.is_empty())
                            && !all.iter().any(|s| s.field == e.field)
                    })
                    .collect();
                all.extend(extra);
                Err(all)
            }
        }
    }

    /// Every schema violation of `arguments`, as field errors a model can act on.
    pub fn errors(&self, arguments: &Value) -> Vec<FieldError> {
        if !arguments.is_object() {
            return vec![FieldError {
                field: String::new(),
                message: format!(
                    "arguments must be a JSON object with the tool's fields, found {}",
                    json_type(arguments)
                ),
            }];
        }
        // Nearly every call is valid: `is_valid` stops at nothing and builds no error values,
        // where `iter_errors` sets up its error iterator for every call.
        if self.validator.is_valid(arguments) {
            return Vec::new();
        }
        let mut out: Vec<FieldError> = Vec::new();
        for err in self.validator.iter_errors(arguments) {
            let pointer = err.instance_path().as_str().to_string();
            let (field_pointer, message) = match err.kind() {
                ValidationErrorKind::Required { property } => {
                    let name = property.as_str().unwrap_or_default().to_string();
                    let ptr = format!("{pointer}/{name}");
                    let hint = self.hint(&ptr);
                    (ptr, format!("is required{hint}"))
                }
                ValidationErrorKind::AdditionalProperties { unexpected } => {
                    let valid = self.property_names(&pointer);
                    (
                        pointer.clone(),
                        format!(
                            "unknown field{} {}; valid fields: {}",
                            if unexpected.len() == 1 { "" } else { "s" },
                            unexpected
                                .iter()
                                .map(|u| format!("\"{u}\""))
                                .collect::<Vec<_>>()
                                .join(", "),
                            valid.join(", ")
                        ),
                    )
                }
                ValidationErrorKind::AnyOf { .. }
                | ValidationErrorKind::OneOfNotValid { .. }
                | ValidationErrorKind::Enum { .. }
                | ValidationErrorKind::Constant { .. }
                    if let Some(choices) = self.node(&pointer).and_then(Choices::of) =>
                {
                    let hint = self.hint(&pointer);
                    (
                        pointer.clone(),
                        format!("{}{hint}", choices.refusal(err.instance())),
                    )
                }
                _ => {
                    let hint = self.hint(&pointer);
                    // Echo the offending value when it is short; a huge value is masked so that
                    // the message stays readable and nothing large is reflected back.
                    let full = err.to_string();
                    let text = if full.len() <= 160 {
                        full
                    } else {
                        err.masked().to_string()
                    };
                    (pointer.clone(), format!("{text}{hint}"))
                }
            };
            let field = dotted(&field_pointer);
            if !out.iter().any(|e| e.field == field && e.message == message) {
                out.push(FieldError { field, message });
            }
        }
        out
    }

    /// The schema node describing the instance at `pointer` (walking properties and items).
    fn node(&self, pointer: &str) -> Option<&Value> {
        let mut node = &self.schema;
        for seg in pointer.split('/').filter(|s| !s.is_empty()) {
            node = if seg.bytes().all(|b| b.is_ascii_digit()) {
                node.get("items")?
            } else {
                node.get("properties")?.get(seg)?
            };
        }
        Some(node)
    }

    /// "; expected: <description>" for the field at `pointer`, when the schema describes it.
    fn hint(&self, pointer: &str) -> String {
        self.node(pointer)
            .and_then(|n| n.get("description"))
            .and_then(Value::as_str)
            .map(|d| format!(" (expected: {})", d.trim_end_matches('.')))
            .unwrap_or_default()
    }

    fn property_names(&self, pointer: &str) -> Vec<String> {
        self.node(pointer)
            .and_then(|n| n.get("properties"))
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }
}

/// The values a field takes when its schema is a list of them (an enum's `const` alternatives,
/// an `enum`, optionally `null`): a wrong value is told the list, where the validator's own
/// words name only the keyword (`… is not valid under any of the schemas listed in the 'anyOf'
/// keyword`).
#[derive(Debug, Default, PartialEq)]
struct Choices {
    values: Vec<Value>,
    nullable: bool,
}

impl Choices {
    /// The choices of `node`, or `None` when some alternative is not a plain value.
    fn of(node: &Value) -> Option<Choices> {
        let mut choices = Choices::default();
        choices.collect(node).then_some(choices)
    }

    fn collect(&mut self, node: &Value) -> bool {
        if let Some(value) = node.get("const") {
            self.values.push(value.clone());
            return true;
        }
        if let Some(values) = node.get("enum").and_then(Value::as_array) {
            self.values.extend(values.iter().cloned());
            return true;
        }
        if node.get("type").and_then(Value::as_str) == Some("null") {
            self.nullable = true;
            return true;
        }
        match node.get("anyOf").or_else(|| node.get("oneOf")) {
            Some(Value::Array(alternatives)) if !alternatives.is_empty() => {
                alternatives.iter().all(|a| self.collect(a))
            }
            _ => false,
        }
    }

    /// `"Business" is not one of "economy", "business"; did you mean "business"?`
    fn refusal(&self, found: &Value) -> String {
        let listed = self
            .values
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let found_text = found.to_string();
        let mut message = if found_text.len() <= 60 {
            format!("{found_text} is not one of {listed}")
        } else {
            format!("the value is not one of {listed}")
        };
        if self.nullable {
            message.push_str(" (or null)");
        }
        // A model's most common slip: the right word in the wrong case ("Business").
        if let Some(found) = found.as_str()
            && let Some(meant) = self.values.iter().find(|v| {
                v.as_str()
                    .is_some_and(|v| v != found && v.eq_ignore_ascii_case(found))
            })
        {
            message.push_str(&format!("; did you mean {meant}?"));
        }
        message
    }
}

/// `/passengers/0/email` → `passengers[0].email`.
fn dotted(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').filter(|s| !s.is_empty()) {
        if seg.bytes().all(|b| b.is_ascii_digit()) {
            out.push('[');
            out.push_str(seg);
            out.push(']');
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg.replace("~1", "/").replace("~0", "~"));
        }
    }
    out
}

/// What a JSON value is, as a sentence names it ("an object", "a number", "null").
pub(crate) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
