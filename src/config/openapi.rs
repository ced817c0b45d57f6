//! `faregate import-openapi`: tool files of kind `http` written from operations of an OpenAPI
//! 3.0 or 3.1 document (JSON), for a person to review before serving them.
//!
//! Each operation becomes one tool: its `operationId` the name, its summary and description the
//! tool's description, its path and query parameters and its JSON request body's properties the
//! input schema (path parameters required), its first 2xx JSON response's top-level properties
//! (an `allOf`'s parts' included; an array's items, or an object that names none whole) the
//! kept fields and the output schema (which names them with the document's descriptions and no
//! types, enums or shapes: providers answer outside their own documents),
//! and a `GET` a read while any other method is a write that sends an `Idempotency-Key`. Names
//! follow the check's rules: a parameter's argument has letters, digits and `_` only (the path
//! template names it, the query keeps the parameter's own name), and kept fields that read
//! alike once made names get a suffix (`seat_count_2`), so none is dropped. Local
//! `$ref`s (`#/components/...`) are inlined. Header and cookie parameters are left out (a model
//! never sets them; a credential belongs to the provider's `auth`) and named in the file; what
//! the importer cannot express (a body that is not an object, a response that is not JSON, a
//! remote `$ref`) is an error naming the operation, never a guess. The files it writes pass `faregate check` like any tool file.

use serde_json::{Map, Value, json};

use answer::{content_for, is_plain_json, json_content, kept, refusal_message, response_schema};
use schema::{inline, object_properties, resolve, to_toml};

mod answer;
mod schema;

/// One imported operation: the tool's name, its file and its fallback prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedTool {
    /// The tool's name (the operation id, made a valid tool name).
    pub name: String,
    /// The text of `tools/<name>.toml`.
    pub tool_file: String,
    /// The text of `prompts/<name>.unavailable.md`.
    pub fallback: String,
}

/// The methods an OpenAPI path item may hold, in the order they are searched.
const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// Writes the tool files of `operations` (operation ids) in `doc`, served by `provider`; every
/// problem at once.
pub fn import_openapi(
    doc: &Value,
    operations: &[String],
    provider: &str,
) -> Result<Vec<ImportedTool>, Vec<String>> {
    let version = doc
        .get("openapi")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let Some(swagger) = doc.get("swagger").and_then(Value::as_str) {
        return Err(vec![format!(
            "a Swagger {swagger} document (its \"swagger\" field), not OpenAPI 3.0 or 3.1; convert it first, e.g. `npx swagger2openapi --patch DOCUMENT -o converted.json`"
        )]);
    }
    if !doc.is_object() {
        return Err(vec![
            "not an OpenAPI document: one is a JSON object with an \"openapi\" field".into(),
        ]);
    }
    if version.is_empty() {
        return Err(vec![
            "not an OpenAPI 3.0 or 3.1 document: it has no \"openapi\" field (nor a \"swagger\" one)".into(),
        ]);
    }
    if !(version.starts_with("3.0") || version.starts_with("3.1")) {
        return Err(vec![format!(
            "an OpenAPI \"{version}\" document (its \"openapi\" field); faregate reads OpenAPI 3.0 and 3.1"
        )]);
    }
    let mut tools: Vec<ImportedTool> = Vec::new();
    let mut errors = Vec::new();
    // An operation named twice is imported once.
    let mut named: Vec<&String> = Vec::new();
    for id in operations {
        if !named.contains(&id) {
            named.push(id);
        }
    }
    for id in named {
        match find(doc, id) {
            Some((path, method, op, item)) => {
                match import(doc, id, path, method, op, item, provider) {
                    // Two ids can become one tool name (`getLounge`, `get_lounge`): one file.
                    Ok(tool) if tools.iter().any(|t| t.name == tool.name) => errors.push(format!(
                        "{id}: becomes the tool {}, as an operation named before it does; import it on its own, into another directory, and rename one of the two",
                        tool.name
                    )),
                    Ok(tool) => tools.push(tool),
                    Err(mut e) => errors.append(&mut e),
                }
            }
            None => errors.push(format!(
                "no operation \"{id}\" in the document; its operations: {}",
                operation_ids(doc).join(", ")
            )),
        }
    }
    if errors.is_empty() {
        Ok(tools)
    } else {
        Err(errors)
    }
}

/// The operation with id `id`: its path, method, object and path item.
fn find<'a>(doc: &'a Value, id: &str) -> Option<(&'a str, &'static str, &'a Value, &'a Value)> {
    let paths = doc.get("paths")?.as_object()?;
    for (path, item) in paths {
        for method in METHODS {
            if let Some(op) = item.get(method)
                && op.get("operationId").and_then(Value::as_str) == Some(id)
            {
                return Some((path, method, op, item));
            }
        }
    }
    None
}

fn operation_ids(doc: &Value) -> Vec<String> {
    let mut ids = Vec::new();
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        for item in paths.values() {
            for method in METHODS {
                if let Some(id) = item
                    .get(method)
                    .and_then(|op| op.get("operationId"))
                    .and_then(Value::as_str)
                {
                    ids.push(id.to_string());
                }
            }
        }
    }
    ids
}

fn import(
    doc: &Value,
    id: &str,
    path: &str,
    method: &str,
    op: &Value,
    item: &Value,
    provider: &str,
) -> Result<ImportedTool, Vec<String>> {
    let mut errors = Vec::new();
    let name = tool_name(id);
    let mut properties = Map::new();
    let mut required: Vec<String> = Vec::new();
    let mut query = toml::Table::new();
    let mut body = toml::Table::new();
    let mut skipped: Vec<String> = Vec::new();
    let mut path_template = path.to_string();
    let mut arguments: std::collections::BTreeMap<(&str, &str), String> = Default::default();
    // Path-item parameters apply to every operation; the operation's own override them by name.
    let params = item
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .chain(
            op.get("parameters")
                .and_then(Value::as_array)
                .into_iter()
                .flatten(),
        );
    for param in params {
        let param = match resolve(doc, param) {
            Ok(p) => p,
            Err(e) => {
                errors.push(format!("{id}: {e}"));
                continue;
            }
        };
        let (Some(pname), Some(place)) = (
            param.get("name").and_then(Value::as_str),
            param.get("in").and_then(Value::as_str),
        ) else {
            errors.push(format!("{id}: a parameter without a name or an \"in\""));
            continue;
        };
        let mut schema = match param.get("schema").map(|s| inline(doc, s)) {
            Some(Ok(s)) => s,
            Some(Err(e)) => {
                errors.push(format!("{id}: parameter {pname}: {e}"));
                continue;
            }
            None => json!({"type": "string"}),
        };
        if let (Some(d), Value::Object(s)) = (param.get("description"), &mut schema) {
            s.entry("description").or_insert(d.clone());
        }
        // A path parameter is named in the path template, which takes letters, digits and _
        // only (`{member-id}` becomes `{member_id}`: the URL sent is the same); a query
        // parameter keeps its name on the wire and gets an argument of that shape too.
        let argument = match place {
            // The operation's own parameter overrides the path item's of the same name.
            "path" | "query" => match arguments.get(&(place, pname)) {
                Some(argument) => argument.clone(),
                None => unique(&argument_name(pname), &properties),
            },
            other => {
                // Headers and cookies are the provider's (its credential above all), never a
                // model's: left out, and named in the file for the person reviewing it.
                skipped.push(format!("{other} parameter {pname}"));
                continue;
            }
        };
        arguments.insert((place, pname), argument.clone());
        if place == "path" {
            required.push(argument.clone());
            path_template =
                path_template.replace(&format!("{{{pname}}}"), &format!("{{{argument}}}"));
        } else {
            if param.get("required") == Some(&Value::Bool(true)) {
                required.push(argument.clone());
            }
            match list_separator(param, &schema) {
                Ok(None) => {
                    query.insert(pname.to_string(), toml::Value::String(argument.clone()));
                }
                Ok(Some(separator)) => {
                    let mut joined = toml::Table::new();
                    joined.insert("argument".into(), toml::Value::String(argument.clone()));
                    joined.insert("join".into(), toml::Value::String(separator.into()));
                    query.insert(pname.to_string(), toml::Value::Table(joined));
                }
                Err(e) => errors.push(format!("{id}: parameter {pname}: {e}")),
            }
        }
        properties.insert(argument, schema);
    }
    let mut content_type = None;
    if let Some(request_body) = op.get("requestBody") {
        match resolve(doc, request_body).and_then(|rb| {
            let (media, schema) = json_content(rb).ok_or("its request body is not JSON")?;
            // A vendor's own JSON type (`application/vnd.amadeus+json`) is what it is sent.
            if !is_plain_json(media) {
                content_type = Some(media.to_string());
            }
            inline(doc, schema)
        }) {
            Ok(schema) => {
                match object_properties(&schema) {
                    Some((fields, body_required))
                        if schema.get("type").is_none_or(|t| t == "object") =>
                    {
                        for (field, field_schema) in &fields {
                            // An argument of the same name as a parameter gets a prefix.
                            let argument = if properties.contains_key(field) {
                                unique(&format!("body_{field}"), &properties)
                            } else {
                                field.clone()
                            };
                            if body_required.contains(field) {
                                required.push(argument.clone());
                            }
                            properties.insert(argument.clone(), field_schema.clone());
                            body.insert(field.clone(), toml::Value::String(argument));
                        }
                    }
                    _ => errors.push(format!(
                        "{id}: its JSON request body is not an object with properties; write [request.body] by hand"
                    )),
                }
            }
            Err(e) => errors.push(format!("{id}: {e}")),
        }
    }
    let write = method != "get";
    let (keep, output, summaries) = match response_schema(doc, op) {
        Ok(Some(schema)) => kept(&schema),
        // A write confirmed with no content (`204`) is carried out (`Answered::Done`); should
        // the provider send JSON after all, it is kept whole.
        Ok(None) if write => kept(&json!({})),
        Ok(None) => {
            errors.push(format!(
                "{id}: its 2xx response has no content, and a read keeps its result from a JSON answer; write [result] by hand"
            ));
            (toml::Table::new(), Value::Null, Vec::new())
        }
        Err(e) => {
            errors.push(format!("{id}: {e}"));
            (toml::Table::new(), Value::Null, Vec::new())
        }
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    let description = describe(op, method, path);
    let mut input =
        json!({"type": "object", "properties": properties, "additionalProperties": false});
    let mut listed = std::collections::BTreeSet::new();
    required.retain(|r| listed.insert(r.clone()));
    if !required.is_empty() {
        input["required"] = json!(required);
    }
    let content = content_for(&name, &summaries);
    let mut file = toml::Table::new();
    let mut put = |k: &str, v: toml::Value| {
        file.insert(k.to_string(), v);
    };
    put("name", toml::Value::String(name.clone()));
    put("kind", toml::Value::String("http".into()));
    put("title", toml::Value::String(title(op, &name)));
    put("description", toml::Value::String(description));
    put(
        "access",
        toml::Value::String(if write { "write" } else { "read" }.into()),
    );
    put(
        "providers",
        toml::Value::Array(vec![toml::Value::String(provider.into())]),
    );
    put("content", toml::Value::String(content));
    put("input_schema", to_toml(&input));
    if !output.is_null() {
        put("output_schema", to_toml(&output));
    }
    let mut request = toml::Table::new();
    request.insert(
        "method".into(),
        toml::Value::String(method.to_ascii_uppercase()),
    );
    request.insert("path".into(), toml::Value::String(path_template));
    if !query.is_empty() {
        request.insert("query".into(), toml::Value::Table(query));
    }
    if !body.is_empty() {
        request.insert("body".into(), toml::Value::Table(body));
    }
    if let Some(content_type) = content_type {
        request.insert("content_type".into(), toml::Value::String(content_type));
    }
    put("request", toml::Value::Table(request));
    let mut result = toml::Table::new();
    result.insert("keep".into(), toml::Value::Table(keep));
    put("result", toml::Value::Table(result));
    if let Some(message) = refusal_message(doc, op) {
        let mut classify = toml::Table::new();
        classify.insert("message".into(), toml::Value::String(message));
        put("classify", toml::Value::Table(classify));
    }
    if write {
        let mut idem = toml::Table::new();
        idem.insert(
            "header".into(),
            toml::Value::String("Idempotency-Key".into()),
        );
        put("idempotency", toml::Value::Table(idem));
    }
    let mut fallback = toml::Table::new();
    fallback.insert(
        "interactive".into(),
        toml::Value::String(format!("{name}.unavailable.md")),
    );
    put("fallback", toml::Value::Table(fallback));
    let text = toml::to_string(&file).map_err(|e| vec![format!("{id}: cannot write TOML: {e}")])?;
    let header = format!(
        "# Imported by `faregate import-openapi` from operation {id} ({} {path}).\n# Review it before serving: the description is what a model reads, `content` what it quotes,\n# and the kept fields what it sees of the answer. output_schema names the kept fields without\n# the document's types: an answer outside it is a provider failure, so tighten it only to what\n# the provider really sends.\n",
        method.to_ascii_uppercase()
    );
    let header = if skipped.is_empty() {
        header
    } else {
        format!(
            "{header}# Not imported (a model never sets them; credentials go in the provider's auth): {}.\n",
            skipped.join(", ")
        )
    };
    Ok(ImportedTool {
        fallback: format!(
            "{name} could not be reached: no reliable answer is coming from {{provider}} right now, so nothing is known of this call's answer and none should be guessed.\nTry again in about {{retry_after_s}} seconds. Tools that work now: {{available_tools}}.\n"
        ),
        tool_file: format!("{header}{text}"),
        name,
    })
}

/// How a list query parameter goes out: `None` repeated (`form`, exploded: OpenAPI's default),
/// else the separator its items are joined with into one value (`form` with `explode: false`
/// is `,`; `spaceDelimited` ` `; `pipeDelimited` `|`). An object is an error.
fn list_separator(param: &Value, schema: &Value) -> Result<Option<&'static str>, String> {
    let list = |s: &Value| s.get("type") == Some(&json!("array"));
    let is_list = list(schema)
        || schema
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|options| options.iter().any(list));
    let style = param.get("style").and_then(Value::as_str).unwrap_or("form");
    // Every call of such a tool would be refused ("must be a string, a number or a boolean"):
    // said here, where the parameter is named, rather than by `faregate check` afterwards.
    if style == "deepObject" || schema.get("type") == Some(&json!("object")) {
        return Err(format!(
            "an object in the query (style \"{style}\") is not a query faregate sends; write [request.query] by hand, one parameter per field of the object"
        ));
    }
    let explode = param
        .get("explode")
        .and_then(Value::as_bool)
        .unwrap_or(style == "form");
    match (style, explode) {
        _ if !is_list => Ok(None),
        ("form" | "spaceDelimited" | "pipeDelimited", true) => Ok(None),
        ("form", false) => Ok(Some(",")),
        ("spaceDelimited", false) => Ok(Some(" ")),
        ("pipeDelimited", false) => Ok(Some("|")),
        (other, _) => Err(format!(
            "a list in style \"{other}\" is not a query faregate sends; write [request.query] by hand"
        )),
    }
}

/// `getFlight-Status.v2` → `get_flight_status_v2`: a name every agent protocol accepts.
fn tool_name(id: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in id.chars() {
        if c.is_ascii_uppercase() && prev_lower {
            out.push('_');
        }
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') {
            out.push('_');
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
    }
    let mut out = out.trim_matches('_').to_string();
    if !out.starts_with(|c: char| c.is_ascii_alphabetic()) {
        out.insert_str(0, "op_");
    }
    out.truncate(64);
    out
}

fn title(op: &Value, name: &str) -> String {
    op.get("summary")
        .and_then(Value::as_str)
        .map(|s| s.trim().trim_end_matches('.').to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| name.replace('_', " "))
}

/// The summary and description, or a sentence naming the call (a model needs at least that).
fn describe(op: &Value, method: &str, path: &str) -> String {
    let parts: Vec<&str> = ["summary", "description"]
        .iter()
        .filter_map(|k| op.get(*k).and_then(Value::as_str))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    // A summary is a title, often without its full stop: one ends it before the description
    // ("List lounges. Lounges airside…", not "List lounges Lounges airside…").
    let text = match parts.as_slice() {
        [summary, description] if !summary.ends_with(['.', '!', '?', ':']) => {
            format!("{summary}. {description}")
        }
        _ => parts.join(" "),
    };
    if text.len() >= 20 {
        text
    } else {
        format!("{text} (calls {} {path})", method.to_ascii_uppercase())
            .trim()
            .to_string()
    }
}

/// `name` made an argument name: letters, digits and `_` (what a path template's parameter may
/// be), `_` for anything else.
fn argument_name(name: &str) -> String {
    let out: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if out.is_empty() { "_".into() } else { out }
}

/// `name`, or `name_2`, `name_3`, … : the first that `taken` does not hold yet.
fn unique(name: &str, taken: &Map<String, Value>) -> String {
    if !taken.contains_key(name) {
        return name.to_string();
    }
    (2..)
        .map(|n| format!("{name}_{n}"))
        .find(|candidate| !taken.contains_key(candidate))
        .unwrap_or_default()
}
