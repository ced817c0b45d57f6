//! The schemas of an imported OpenAPI document as a tool file writes them: local `$ref`s
//! inlined, OpenAPI 3.0's `nullable` and boolean `exclusiveMinimum`/`exclusiveMaximum` in JSON
//! Schema 2020-12's words, and `null` (which TOML lacks) said with `anyOf`.

use serde_json::{Map, Value, json};

/// How deep a schema may nest (objects in arrays in objects …), `$ref`s followed: far deeper
/// than any real document, so only a runaway one stops here. A `$ref` to a schema it is
/// already inside (a recursive schema) is found as such, at any depth.
const MAX_DEPTH: usize = 64;

/// `value`, or what its local `$ref` points at.
pub(super) fn resolve<'a>(doc: &'a Value, value: &'a Value) -> Result<&'a Value, String> {
    follow(doc, value, &[]).map(|(target, _)| target)
}

/// What `value`'s chain of local `$ref`s points at, and the `$ref`s followed; a `$ref` already
/// on `inside` (the schemas being inlined around it) or in the chain is a cycle.
fn follow<'a>(
    doc: &'a Value,
    value: &'a Value,
    inside: &[String],
) -> Result<(&'a Value, Vec<String>), String> {
    let mut current = value;
    let mut followed: Vec<String> = Vec::new();
    while let Some(r) = current.get("$ref").and_then(Value::as_str) {
        if inside.iter().chain(&followed).any(|seen| seen == r) {
            return Err(format!(
                "$ref \"{r}\" is inside itself (a recursive schema), which a tool's inlined schemas cannot say; write this part by hand"
            ));
        }
        let pointer = r
            .strip_prefix('#')
            .ok_or_else(|| format!("$ref \"{r}\" is not in this document; inline it first"))?;
        current = doc
            .pointer(pointer)
            .ok_or_else(|| format!("$ref \"{r}\" points at nothing"))?;
        followed.push(r.to_string());
    }
    Ok((current, followed))
}

/// `schema` with every local `$ref` inlined (tool schemas carry no `$ref`s: models handle them
/// poorly) and OpenAPI 3.0's `nullable` written as JSON Schema says it.
pub(super) fn inline(doc: &Value, schema: &Value) -> Result<Value, String> {
    inline_at(doc, schema, &mut Vec::new(), 0)
}

/// `inline` at `depth`, inside the schemas that `inside`'s `$ref`s name.
fn inline_at(
    doc: &Value,
    schema: &Value,
    inside: &mut Vec<String>,
    depth: usize,
) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "its schemas nest more than {MAX_DEPTH} levels deep; write this part by hand"
        ));
    }
    let (schema, followed) = follow(doc, schema, inside)?;
    let outer = inside.len();
    inside.extend(followed);
    let inlined = inline_resolved(doc, schema, inside, depth);
    inside.truncate(outer);
    inlined
}

/// `inline` of a schema that is not a `$ref`.
fn inline_resolved(
    doc: &Value,
    schema: &Value,
    inside: &mut Vec<String>,
    depth: usize,
) -> Result<Value, String> {
    Ok(match schema {
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                match (k.as_str(), v) {
                    // OpenAPI 3.0's own keyword, written below as JSON Schema says it.
                    ("nullable", _) => {}
                    // Names chosen by the document, each with a schema.
                    ("properties" | "patternProperties", Value::Object(fields)) => {
                        let mut inlined = Map::new();
                        for (name, field) in fields {
                            inlined.insert(name.clone(), inline_at(doc, field, inside, depth + 1)?);
                        }
                        out.insert(k.clone(), Value::Object(inlined));
                    }
                    // Values, not schemas.
                    ("enum" | "const" | "default" | "example" | "examples", _) => {
                        out.insert(k.clone(), v.clone());
                    }
                    _ => {
                        out.insert(k.clone(), inline_at(doc, v, inside, depth + 1)?);
                    }
                }
            }
            exclusive_bounds(&mut out);
            // TOML has no null: a null among the values allowed is said with `anyOf`.
            let mut nullable = map.get("nullable") == Some(&Value::Bool(true));
            if let Some(Value::Array(values)) = out.get_mut("enum")
                && values.iter().any(Value::is_null)
            {
                values.retain(|v| !v.is_null());
                nullable = true;
            }
            if out.get("const") == Some(&Value::Null) {
                out.remove("const");
                out.insert("type".into(), json!("null"));
            }
            if nullable {
                return Ok(or_null(Value::Object(out)));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| inline_at(doc, v, inside, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        other => other.clone(),
    })
}

/// The properties an (inlined) object schema declares, its `allOf` parts' included (nested ones
/// too; a name declared twice keeps its first schema), and the names it or any part requires;
/// `None` when it declares none.
pub(super) fn object_properties(schema: &Value) -> Option<(Map<String, Value>, Vec<String>)> {
    fn gather(schema: &Value, properties: &mut Map<String, Value>, required: &mut Vec<String>) {
        if let Some(fields) = schema.get("properties").and_then(Value::as_object) {
            for (name, field) in fields {
                properties
                    .entry(name.clone())
                    .or_insert_with(|| field.clone());
            }
        }
        for name in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !required.iter().any(|r| r == name) {
                required.push(name.to_string());
            }
        }
        for part in schema
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            gather(part, properties, required);
        }
    }
    let mut properties = Map::new();
    let mut required = Vec::new();
    gather(schema, &mut properties, &mut required);
    (!properties.is_empty()).then_some((properties, required))
}

/// OpenAPI 3.0's boolean `exclusiveMinimum`/`exclusiveMaximum` (which qualify `minimum` and
/// `maximum`) in JSON Schema 2020-12's form, where each is the bound itself.
fn exclusive_bounds(schema: &mut Map<String, Value>) {
    for (exclusive, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        match schema.get(exclusive) {
            Some(Value::Bool(true)) => match schema.remove(bound) {
                Some(limit) => {
                    schema.insert(exclusive.into(), limit);
                }
                // Exclusive of no bound: nothing to say.
                None => {
                    schema.remove(exclusive);
                }
            },
            Some(Value::Bool(false)) => {
                schema.remove(exclusive);
            }
            _ => {}
        }
    }
}

/// `schema`, also accepting `null` (once: a schema that accepts it already is kept as it is).
fn or_null(schema: Value) -> Value {
    let null_type = json!({"type": "null"});
    let accepts_null = schema.get("type") == Some(&json!("null"))
        || schema
            .get("type")
            .and_then(Value::as_array)
            .is_some_and(|types| types.contains(&json!("null")))
        || schema
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|options| options.contains(&null_type));
    if accepts_null {
        schema
    } else {
        json!({"anyOf": [schema, null_type]})
    }
}

/// A JSON value as TOML (nulls, which TOML lacks, are dropped: `inline` has said a schema's
/// allowed `null` with `anyOf` already).
pub(super) fn to_toml(value: &Value) -> toml::Value {
    match value {
        Value::Null => toml::Value::String(String::new()),
        Value::Bool(b) => toml::Value::Boolean(*b),
        Value::Number(n) => n
            .as_i64()
            .map(toml::Value::Integer)
            .or_else(|| n.as_f64().map(toml::Value::Float))
            .unwrap_or_else(|| toml::Value::String(n.to_string())),
        Value::String(s) => toml::Value::String(s.clone()),
        Value::Array(items) => {
            toml::Value::Array(items.iter().filter(|v| !v.is_null()).map(to_toml).collect())
        }
        Value::Object(map) => toml::Value::Table(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), to_toml(v)))
                .collect(),
        ),
    }
}
