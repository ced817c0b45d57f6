//! Reads what a tool file of kind `http` adds to a tool: its title and access, its JSON Schemas,
//! `[request]`, `[result]`, `content`, `[classify]` and `[idempotency]`, compiled into an
//! `http_tool::Operation` so that every problem (a template naming an unknown field, an invalid
//! JSONPath, a path parameter missing from the schema, a write without an idempotency rule) is
//! reported with its file and key when the configuration is read, never when a model calls.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::model::HttpTool;
use super::reader::Section;
use crate::http_tool::{self, DEFAULT_REJECTED, Method, Operation, OperationDef};
use crate::tools::configured::Definition;
use crate::tools::{Access, CallMode};

/// The configured half of a tool of kind `http` named `name`, or `None` after its problems were
/// recorded.
pub(super) fn read_http_tool(s: &Section<'_>, name: Option<&str>) -> Option<HttpTool> {
    let title = s
        .string("title")
        .or_else(|| name.map(str::to_string))
        .unwrap_or_default();
    let access = match s.string("access").as_deref() {
        None | Some("read") => Some(Access::Read),
        Some("write") => Some(Access::Write),
        Some(other) => {
            s.error(
                "access",
                format!("\"{other}\" is not an access; write \"read\" (safe to repeat) or \"write\" (changes the world)"),
            );
            None
        }
    };
    let built_for = match s.string("built_for").as_deref() {
        None | Some("interactive") => Some(CallMode::Interactive),
        Some("background") => Some(CallMode::Background),
        Some(other) => {
            s.error(
                "built_for",
                format!("\"{other}\" is not a mode; write \"interactive\" or \"background\""),
            );
            None
        }
    };
    let input_schema = schema(s, "input_schema", true).flatten();
    let output_schema = schema(s, "output_schema", false);
    let request = s.table("request");
    if request.is_none() {
        s.error(
            "request",
            "missing [request]; e.g. method = \"GET\" and path = \"/flights/{ident}\"",
        );
    }
    let method = request.as_ref().and_then(|r| {
        let m = r.required_string("method", "\"GET\"")?;
        Method::parse(&m).or_else(|| {
            r.error(
                "method",
                format!(
                    "\"{m}\" is not a method faregate sends; use GET, POST, PUT, PATCH or DELETE"
                ),
            );
            None
        })
    });
    let path = request
        .as_ref()
        .and_then(|r| r.required_string("path", "\"/flights/{ident}\""));
    let (query, query_join) = request.as_ref().map(query_pairs).unwrap_or_default();
    let body = request
        .as_ref()
        .map(|r| string_pairs(r, "body"))
        .unwrap_or_default();
    let content_type = request.as_ref().and_then(|r| r.string("content_type"));
    if let Some(r) = &request {
        r.finish();
    }
    let keep = match s.table("result") {
        Some(r) => {
            let keep = string_pairs(&r, "keep");
            if !r.has("keep") {
                r.error(
                    "keep",
                    "missing; name the fields to keep, e.g. keep = { status = \"$.flights[0].status\" }",
                );
            }
            r.finish();
            keep
        }
        None => {
            s.error(
                "result",
                "missing [result]; e.g. [result] keep = { status = \"$.flights[0].status\" }",
            );
            Vec::new()
        }
    };
    let content = s.required_string("content", "\"{{ ident }} is {{ status }}.\"");
    let (rejected, message) = match s.table("classify") {
        Some(c) => {
            let rejected = statuses(&c, "rejected");
            let message = c.string("message");
            c.finish();
            (
                rejected.unwrap_or_else(|| DEFAULT_REJECTED.to_vec()),
                message,
            )
        }
        None => (DEFAULT_REJECTED.to_vec(), None),
    };
    let idempotency_header = s.table("idempotency").and_then(|i| {
        let header = i.required_string("header", "\"Idempotency-Key\"");
        i.finish();
        header
    });
    // Every part is checked even when another one is missing or wrong (a method faregate does
    // not send, a schema that is not a table), so one run lists every problem of the file: a
    // missing part is stood in for by one that adds no problem of its own. Only the checks that
    // need the arguments wait for a readable input schema (without it, every argument the
    // request names would be called unknown): its stand-in declares exactly those.
    let def = OperationDef {
        write: access.map_or(idempotency_header.is_some(), |a| a == Access::Write),
        method: method.unwrap_or(if body.is_empty() {
            Method::Get
        } else {
            Method::Post
        }),
        path: path.clone().unwrap_or_else(|| "/".into()),
        query,
        query_join,
        body,
        content_type,
        idempotency_header,
        keep,
        content: content.clone().unwrap_or_default(),
        rejected,
        message,
    };
    let checked_schema = input_schema
        .clone()
        .unwrap_or_else(|| arguments_named(&def));
    let output_given = output_schema.flatten();
    let operation = Operation::compile(&def, &checked_schema, output_given.as_ref());
    let operation = match operation {
        Ok(operation) => operation,
        Err(problems) => {
            for http_tool::Problem { key, message } in problems {
                s.error(&key, message);
            }
            return None;
        }
    };
    let (access, built_for, input_schema, _, _, _) =
        (access?, built_for?, input_schema?, method?, path?, content?);
    let output_schema = output_given.unwrap_or_else(|| kept_schema(&def));
    Some(HttpTool {
        definition: Definition {
            name: name?.to_string(),
            title,
            access,
            built_for,
            input_schema,
            output_schema,
        },
        operation: Arc::new(operation),
    })
}

/// A JSON Schema written as a TOML table: `Some(Some(schema))`, `Some(None)` when it is
/// optional and absent, `None` after a problem.
fn schema(s: &Section<'_>, key: &'static str, required: bool) -> Option<Option<Value>> {
    match s.value(key) {
        None if required => {
            s.error(
                key,
                format!("missing [{key}]: the JSON Schema of the tool's arguments, e.g. type = \"object\" with [{key}.properties.ident] type = \"string\""),
            );
            None
        }
        None => Some(None),
        Some(toml::Value::Table(table)) => match serde_json::to_value(table) {
            Ok(value) => Some(Some(value)),
            Err(e) => {
                s.error(key, format!("cannot be read as JSON: {e}"));
                None
            }
        },
        Some(other) => {
            s.error(
                key,
                format!(
                    "expected a table (a JSON Schema), found {}",
                    other.type_str()
                ),
            );
            None
        }
    }
}

/// A table of names to strings (`query = { start = "start_date" }`), in file order by name.
pub(super) fn string_pairs(s: &Section<'_>, key: &'static str) -> Vec<(String, String)> {
    match s.value(key) {
        None => Vec::new(),
        Some(toml::Value::Table(table)) => table
            .iter()
            .filter_map(|(name, value)| match value.as_str() {
                Some(text) => Some((name.clone(), text.to_string())),
                None => {
                    s.error(
                        &format!("{key}.{name}"),
                        format!("expected a string, found {}", value.type_str()),
                    );
                    None
                }
            })
            .collect(),
        Some(other) => {
            s.error(
                key,
                format!(
                    "expected a table of names to strings, found {}",
                    other.type_str()
                ),
            );
            Vec::new()
        }
    }
}

/// `[request.query]`: each parameter's argument, as a string (`start = "start_date"`) or a table
/// that also says how a list is joined (`hotelIds = { argument = "hotel_ids", join = "," }`);
/// and the joined parameters' separators.
type QueryPairs = (Vec<(String, String)>, Vec<(String, String)>);

fn query_pairs(s: &Section<'_>) -> QueryPairs {
    let mut pairs = Vec::new();
    let mut joins = Vec::new();
    let Some(value) = s.value("query") else {
        return (pairs, joins);
    };
    let Some(table) = value.as_table() else {
        s.error(
            "query",
            format!(
                "expected a table of query parameters to arguments, found {}",
                value.type_str()
            ),
        );
        return (pairs, joins);
    };
    for (name, value) in table {
        match value {
            toml::Value::String(argument) => pairs.push((name.clone(), argument.clone())),
            toml::Value::Table(t) => {
                let argument = t.get("argument").and_then(toml::Value::as_str);
                let join = t.get("join").and_then(toml::Value::as_str);
                let unknown: Vec<&str> = t
                    .keys()
                    .map(String::as_str)
                    .filter(|k| !["argument", "join"].contains(k))
                    .collect();
                match (argument, join, unknown.is_empty()) {
                    (Some(argument), Some(join), true) => {
                        pairs.push((name.clone(), argument.to_string()));
                        joins.push((name.clone(), join.to_string()));
                    }
                    _ => s.error(
                        &format!("query.{name}"),
                        "a table here needs argument (a string) and join (\",\", \" \" or \"|\") and nothing else, e.g. { argument = \"hotel_ids\", join = \",\" }",
                    ),
                }
            }
            other => s.error(
                &format!("query.{name}"),
                format!(
                    "expected an argument's name (or a table with argument and join), found {}",
                    other.type_str()
                ),
            ),
        }
    }
    (pairs, joins)
}

/// A list of HTTP statuses.
pub(super) fn statuses(s: &Section<'_>, key: &'static str) -> Option<Vec<u16>> {
    let value = s.value(key)?;
    let Some(items) = value.as_array() else {
        s.error(
            key,
            "expected a list of HTTP statuses, e.g. [400, 404, 422]",
        );
        return None;
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item.as_integer().and_then(|n| u16::try_from(n).ok()) {
            Some(n) => out.push(n),
            None => s.error(&format!("{key}[{i}]"), "expected an HTTP status, e.g. 404"),
        }
    }
    Some(out)
}

/// A stand-in input schema for a file whose own cannot be read: every argument `def`'s
/// request names, the path's parameters required, so no check that needs the arguments
/// reports a problem the real schema may not have.
fn arguments_named(def: &OperationDef) -> Value {
    let params: Vec<String> = http_tool::PathTemplate::parse(&def.path)
        .map(|p| p.params().into_iter().map(str::to_string).collect())
        .unwrap_or_default();
    let properties: Map<String, Value> = def
        .query
        .iter()
        .chain(&def.body)
        .map(|(_, argument)| argument)
        .chain(&params)
        .map(|argument| (argument.clone(), json!({})))
        .collect();
    json!({ "type": "object", "properties": properties, "required": params })
}

/// The output schema of a tool that declares none: an object with the kept fields.
fn kept_schema(def: &OperationDef) -> Value {
    let properties: Map<String, Value> = def
        .keep
        .iter()
        .map(|(name, _)| (name.clone(), json!({})))
        .collect();
    let required: Vec<&str> = def.keep.iter().map(|(name, _)| name.as_str()).collect();
    json!({ "type": "object", "properties": properties, "required": required })
}
