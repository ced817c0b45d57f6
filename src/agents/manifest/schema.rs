//! The schemas schemars derives from the tool types, reshaped for the readers that cannot take
//! them as they are: [`portable`] for every manifest (no Rust-only formats, no type name as the
//! root title), [`openai_strict`] for OpenAI strict mode, and [`drop_optional_nulls`] for the
//! way back (a strict-mode model sends `null` where a property was optional).
//!
//! The reshaping only ever loosens what a model is told, never what the gateway accepts: every
//! call is still validated against the full schema.

use serde_json::{Map, Value, json};

/// The `format` values OpenAI strict mode accepts on strings.
const OPENAI_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Formats defined by JSON Schema 2020-12; schemars also writes Rust-only ones (`uint8`).
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Keywords OpenAI strict mode supports (structured-outputs guide); everything else is dropped.
/// What is dropped (`minLength`, `maxLength`, `default`, unsupported formats) is still enforced:
/// the gateway validates every call against the full schema and answers `invalid_arguments`.
const OPENAI_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "$defs",
    "$ref",
];

/// The schema without its root `title` (the Rust type's name, noise to a model) and without
/// schemars' Rust-only `format` values, which no validator or model knows.
pub fn portable(schema: &Value) -> Value {
    let mut out = strip_formats(schema);
    if let Value::Object(obj) = &mut out {
        obj.remove("title");
    }
    out
}

/// The schema without `$schema`, for formats whose readers do not expect a dialect.
pub fn without_dialect(mut schema: Value) -> Value {
    if let Value::Object(obj) = &mut schema {
        obj.remove("$schema");
    }
    schema
}

fn strip_formats(node: &Value) -> Value {
    match node {
        Value::Object(obj) => Value::Object(
            obj.iter()
                .filter(|(k, v)| {
                    !(k.as_str() == "format"
                        && v.as_str().is_some_and(|f| !STANDARD_FORMATS.contains(&f)))
                })
                .map(|(k, v)| {
                    // Property names are data, not schemas: recurse into their values only.
                    (k.clone(), strip_formats(v))
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip_formats).collect()),
        other => other.clone(),
    }
}

/// The OpenAI strict-mode form of a tool's argument schema.
///
/// Rules (OpenAI structured-outputs guide): every object gets `additionalProperties: false`
/// and lists every property in `required`; a property that was optional becomes nullable
/// (`"type": ["string", "null"]`, `null` added to an `enum`, or `{"type": "null"}` added to an
/// `anyOf`), so the model sends `null` where it would have left the property out; `oneOf`
/// becomes `anyOf` (only `anyOf` is supported), and a `oneOf` of string constants (how
/// schemars writes documented enums) becomes a plain `enum`; keywords outside the supported
/// set are dropped (`$schema`, `title`, `default`, `minLength`, `maxLength`, …) and so are
/// `format` values outside date-time, time, date, duration, email, hostname, ipv4, ipv6, uuid.
///
/// Calls coming back with `null` for an optional property are read as if it were absent
/// ([`drop_optional_nulls`]).
pub fn openai_strict(schema: &Value) -> Value {
    strict_node(schema)
}

fn strict_node(node: &Value) -> Value {
    let Value::Object(obj) = node else {
        return node.clone();
    };
    if let Some(collapsed) = const_enum(obj) {
        return collapsed;
    }
    let mut out = Map::new();
    for (k, v) in obj {
        match k.as_str() {
            "properties" | "required" | "additionalProperties" => {}
            "format" if v.as_str().is_some_and(|f| OPENAI_FORMATS.contains(&f)) => {
                out.insert(k.clone(), v.clone());
            }
            "format" => {}
            "items" => {
                out.insert(k.clone(), strict_node(v));
            }
            "anyOf" | "oneOf" => {
                let branches: Vec<Value> = v
                    .as_array()
                    .map(|a| a.iter().map(strict_node).collect())
                    .unwrap_or_default();
                out.insert("anyOf".into(), Value::Array(branches));
            }
            "$defs" => {
                let defs: Map<String, Value> = v
                    .as_object()
                    .map(|d| d.iter().map(|(n, s)| (n.clone(), strict_node(s))).collect())
                    .unwrap_or_default();
                out.insert(k.clone(), Value::Object(defs));
            }
            key if OPENAI_KEYWORDS.contains(&key) => {
                out.insert(k.clone(), v.clone());
            }
            _ => {}
        }
    }
    let is_object =
        obj.contains_key("properties") || obj.get("type").and_then(Value::as_str) == Some("object");
    if is_object {
        let required: Vec<&str> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut props = Map::new();
        if let Some(p) = obj.get("properties").and_then(Value::as_object) {
            for (name, schema) in p {
                let strict = strict_node(schema);
                let strict = if required.contains(&name.as_str()) {
                    strict
                } else {
                    nullable(strict)
                };
                props.insert(name.clone(), strict);
            }
        }
        let all: Vec<Value> = props.keys().map(|k| json!(k)).collect();
        out.insert("properties".into(), Value::Object(props));
        out.insert("required".into(), Value::Array(all));
        out.insert("additionalProperties".into(), json!(false));
    }
    merge_nullable_any_of(out)
}

/// `{"oneOf"|"anyOf": [{"const": "a", "type": "string"}, …]}` → `{"type": "string", "enum": […]}`.
fn const_enum(obj: &Map<String, Value>) -> Option<Value> {
    let branches = obj.get("oneOf").or_else(|| obj.get("anyOf"))?.as_array()?;
    let consts: Vec<Value> = branches
        .iter()
        .map(|b| {
            let c = b.get("const")?;
            c.is_string().then(|| c.clone())
        })
        .collect::<Option<_>>()?;
    if consts.is_empty() {
        return None;
    }
    let mut out = Map::new();
    if let Some(d) = obj.get("description") {
        out.insert("description".into(), d.clone());
    }
    out.insert("type".into(), json!("string"));
    out.insert("enum".into(), Value::Array(consts));
    Some(Value::Object(out))
}

/// `{"anyOf": [X, {"type": "null"}]}` with a simply typed X → X made nullable, keeping the outer
/// description: the form models and validators handle best.
fn merge_nullable_any_of(mut out: Map<String, Value>) -> Value {
    let Some(Value::Array(branches)) = out.get("anyOf") else {
        return Value::Object(out);
    };
    let is_null = |b: &Value| b.get("type").and_then(Value::as_str) == Some("null");
    if branches.len() != 2 || !branches.iter().any(is_null) {
        return Value::Object(out);
    }
    let Some(Value::Object(other)) = branches.iter().find(|b| !is_null(b)).cloned() else {
        return Value::Object(out);
    };
    if !other.get("type").is_some_and(Value::is_string) || other.contains_key("anyOf") {
        return Value::Object(out);
    }
    out.remove("anyOf");
    for (k, v) in other {
        if k == "description" && out.contains_key("description") {
            continue;
        }
        out.insert(k, v);
    }
    nullable(Value::Object(out))
}

/// Lets `null` through a schema: in `type`, in `enum`, or as an `anyOf` branch.
fn nullable(schema: Value) -> Value {
    let Value::Object(mut obj) = schema else {
        return schema;
    };
    let null = json!("null");
    if let Some(Value::Array(branches)) = obj.get_mut("anyOf") {
        if !branches
            .iter()
            .any(|b| b.get("type").and_then(Value::as_str) == Some("null"))
        {
            branches.push(json!({"type": "null"}));
        }
        return Value::Object(obj);
    }
    match obj.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = t.clone();
            obj.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(types)) => {
            if !types.contains(&null) {
                types.push(null.clone());
            }
        }
        Some(_) => {}
        None => {
            return json!({"anyOf": [Value::Object(obj), {"type": "null"}]});
        }
    }
    if let Some(Value::Array(values)) = obj.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    Value::Object(obj)
}

/// Removes properties whose value is `null` where the tool's schema does not require them,
/// recursively: strict-mode models send `null` for "not given", the gateway's types read a
/// missing property as that.
pub fn drop_optional_nulls(schema: &Value, args: Value) -> Value {
    match args {
        Value::Object(obj) => {
            let Some(schema) = object_schema(schema) else {
                return Value::Object(obj);
            };
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let props = schema.get("properties").and_then(Value::as_object);
            obj.into_iter()
                .filter(|(k, v)| !v.is_null() || required.contains(&k.as_str()))
                .map(|(k, v)| {
                    let v = match props.and_then(|p| p.get(&k)) {
                        Some(sub) => drop_optional_nulls(sub, v),
                        None => v,
                    };
                    (k, v)
                })
                .collect::<Map<_, _>>()
                .into()
        }
        Value::Array(items) => match schema.get("items") {
            Some(item_schema) => Value::Array(
                items
                    .into_iter()
                    .map(|i| drop_optional_nulls(item_schema, i))
                    .collect(),
            ),
            None => Value::Array(items),
        },
        other => other,
    }
}

/// The schema itself when it describes an object, or its first object branch of an `anyOf`.
fn object_schema(schema: &Value) -> Option<&Value> {
    if schema.get("properties").is_some() {
        return Some(schema);
    }
    schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))?
        .as_array()?
        .iter()
        .find(|b| b.get("properties").is_some())
}
