//! What an imported tool makes of its provider's answer: which response is its answer and in
//! which JSON media type, the kept fields, the output schema (the document's descriptions only),
//! the `content` text and where a refusal says why.

use serde_json::{Map, Value, json};

use super::schema::{inline, object_properties, resolve};
use super::{tool_name, unique};

/// The schema of the first 2xx JSON response, or `None` when a 2xx response has no content.
pub(super) fn response_schema(doc: &Value, op: &Value) -> Result<Option<Value>, String> {
    let responses = op
        .get("responses")
        .and_then(Value::as_object)
        .ok_or("it has no responses")?;
    let mut successes = Vec::new();
    for (status, response) in responses {
        if status.starts_with('2') {
            successes.push(resolve(doc, response)?);
        }
    }
    if successes.is_empty() {
        return Err("it documents no 2xx response".into());
    }
    if let Some((_, schema)) = successes.iter().find_map(|r| json_content(r)) {
        return inline(doc, schema).map(Some);
    }
    // No content at all (`204 No Content`, a `201` with only a `Location`).
    if successes.iter().any(|r| {
        r.get("content")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
    }) {
        return Ok(None);
    }
    Err("its 2xx response is not JSON; write [result] by hand".into())
}

/// Where a refusal's body says why, as a JSONPath, when a 4xx JSON response of the document
/// describes a message field: at the top (`$.detail`, `$.message`, …), under `error`, or in the
/// first of a list of `errors` (Amadeus's `$.errors[0].detail`). So the provider's reason
/// reaches the model.
pub(super) fn refusal_message(doc: &Value, op: &Value) -> Option<String> {
    const FIELDS: [&str; 4] = ["detail", "message", "title", "description"];
    let message_in = |schema: &Value| -> Option<&'static str> {
        let (fields, _) = object_properties(schema)?;
        FIELDS.into_iter().find(|f| {
            fields
                .get(*f)
                .is_some_and(|s| s.get("type").is_none_or(|t| t == "string"))
        })
    };
    op.get("responses")?
        .as_object()?
        .iter()
        .filter(|(status, _)| status.starts_with('4'))
        .filter_map(|(_, response)| {
            let response = resolve(doc, response).ok()?;
            inline(doc, json_content(response)?.1).ok()
        })
        .find_map(|schema| {
            if let Some(field) = message_in(&schema) {
                return Some(format!("$.{field}"));
            }
            let (fields, _) = object_properties(&schema)?;
            if let Some(field) = fields.get("error").and_then(message_in) {
                return Some(format!("$.error.{field}"));
            }
            let items = fields.get("errors")?.get("items")?;
            message_in(items).map(|field| format!("$.errors[0].{field}"))
        })
}

/// The media type and schema of the JSON content a request body or response offers: plain
/// `application/json` first (with or without parameters such as `; charset=utf-8`), else a
/// structured `+json` type (`application/vnd.amadeus+json`), the first the document lists.
pub(super) fn json_content(described: &Value) -> Option<(&str, &Value)> {
    let offered: Vec<(&str, &Value)> = described
        .get("content")?
        .as_object()?
        .iter()
        .filter_map(|(media, m)| Some((media.as_str(), m.get("schema")?)))
        .collect();
    offered
        .iter()
        .find(|(media, _)| is_plain_json(media))
        .or_else(|| {
            offered
                .iter()
                .find(|(media, _)| essence(media).ends_with("+json"))
        })
        .copied()
}

/// A media type without its parameters, in lower case: `application/json; charset=utf-8` →
/// `application/json`.
fn essence(media: &str) -> String {
    media
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// Whether `media` is `application/json`, whatever its parameters.
pub(super) fn is_plain_json(media: &str) -> bool {
    essence(media) == "application/json"
}

/// The kept fields and output schema for a response schema: each top-level property of an
/// object (its `allOf` parts' too), every item of an array, or else the answer whole (an object
/// that names no properties keeps its keys).
///
/// The output schema names the kept fields and says no more of them than the document's
/// descriptions: a kept result outside it is a malformed answer (a provider failure that opens
/// the breaker), and real providers answer outside their own documents (an enum without a value
/// their examples use, an array declared an object), so the document's types, enums, formats
/// and shapes would refuse healthy answers. A person who knows the answers may tighten it.
pub(super) fn kept(schema: &Value) -> (toml::Table, Value, Vec<(String, Value)>) {
    let mut summaries = Vec::new();
    let mut keep = toml::Table::new();
    let mut properties = Map::new();
    let mut required = Vec::new();
    let array = schema.get("type") == Some(&json!("array")) || schema.get("items").is_some();
    match object_properties(schema).filter(|_| !array) {
        Some((fields, _)) => {
            for (field, field_schema) in &fields {
                // Two fields may read alike once made names (`seatCount`, `seat_count`): the
                // second is `seat_count_2`, so none is dropped.
                let name = unique(&tool_name(field), &properties);
                // JSONPath's bracket notation takes any property name.
                let escaped = field.replace('\\', "\\\\").replace('\'', "\\'");
                keep.insert(name.clone(), toml::Value::String(format!("$['{escaped}']")));
                properties.insert(name.clone(), described(field_schema));
                summaries.push((name.clone(), field_schema.clone()));
                required.push(name);
            }
        }
        None if array => {
            keep.insert("items".into(), toml::Value::String("$[*]".into()));
            // `$[*]` keeps a list whatever the answer holds.
            properties.insert("items".into(), json!({"type": "array"}));
            summaries.push(("items".into(), schema.clone()));
            required.push("items".to_string());
        }
        None => {
            keep.insert("result".into(), toml::Value::String("$".into()));
            properties.insert("result".into(), described(schema));
            required.push("result".to_string());
        }
    }
    let output = json!({"type": "object", "properties": properties, "required": required});
    (keep, output, summaries)
}

/// The `content` template: each kept field the document describes as a scalar, and a few
/// scalar fields of each of the first items of a list of objects (or of an object), at most
/// four kept fields in all; the agent protocols send the kept fields as JSON beside it, so
/// the text names what a model quotes rather than printing the answer again. Every lookup
/// tolerates an answer outside the document (a missing field, an object for a list, `null`).
pub(super) fn content_for(name: &str, summaries: &[(String, Value)]) -> String {
    let parts: Vec<String> = summaries
        .iter()
        .filter_map(|(field, schema)| summary(field, schema))
        .take(4)
        .collect();
    if parts.is_empty() {
        format!("{name} answered; the kept fields hold the answer.")
    } else {
        format!("{name}: {}", parts.join("; "))
    }
}

/// One kept field in the `content` template, or `None` when it is neither a scalar nor objects.
fn summary(field: &str, schema: &Value) -> Option<String> {
    let kind = |s: &Value| {
        s.get("type")
            .or_else(|| s.pointer("/anyOf/0/type"))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let scalar = |s: &Value| {
        kind(s).is_some_and(|t| matches!(t.as_str(), "string" | "number" | "integer" | "boolean"))
    };
    // A few scalar fields of an object, names and ids first: `{{ x.name | default("") }}`.
    let named = |s: &Value, of: &str| -> Option<String> {
        let (fields, _) = object_properties(s.pointer("/anyOf/0").unwrap_or(s))?;
        let mut names: Vec<&String> = fields
            .iter()
            .filter(|(_, f)| scalar(f))
            .map(|(n, _)| n)
            .collect();
        let rank = |n: &str| {
            let n = n.to_ascii_lowercase();
            if n.ends_with("name") {
                0
            } else if n.ends_with("id") || n.ends_with("code") {
                1
            } else {
                2
            }
        };
        names.sort_by_key(|n| rank(n));
        names.truncate(3);
        (!names.is_empty()).then(|| {
            names
                .iter()
                .map(|n| {
                    let escaped = n.replace('\\', "\\\\").replace('"', "\\\"");
                    format!("{{{{ {of}[\"{escaped}\"] | default(\"\") }}}}")
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
    };
    if scalar(schema) {
        return Some(format!("{field} {{{{ {field} }}}}"));
    }
    // The fields an object (or each item of a list of objects) names; either shape is written,
    // since a provider may send a list where its document says an object, or the other way.
    let object = match schema
        .get("items")
        .or_else(|| schema.pointer("/anyOf/0/items"))
    {
        Some(items) => items,
        None => schema,
    };
    let one = named(object, field)?;
    let each = named(object, "item")?;
    Some(format!(
        "{{% if {field} is mapping %}}{field} {one}{{% elif {field} is sequence %}}{{{{ {field} | length }}}} {field}{{% for item in {field} %}}{{% if loop.index <= 5 and item is mapping %}}, {each}{{% endif %}}{{% endfor %}}{{% endif %}}"
    ))
}

/// A kept field's output schema: the document's description of it, and nothing the document
/// could be wrong about (type, enum, format, shape).
fn described(schema: &Value) -> Value {
    // A nullable schema is inlined as `anyOf` [the schema, null].
    let description = schema.get("description").or_else(|| {
        schema
            .pointer("/anyOf/0/description")
            .filter(|_| schema.pointer("/anyOf/1/type") == Some(&json!("null")))
    });
    match description {
        Some(d) => json!({"description": d}),
        None => json!({}),
    }
}
