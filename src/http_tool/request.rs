//! The request half of an operation or a binding: the path, the query (a list argument
//! repeated or joined), the JSON body and its media type, and a write's idempotency header, from
//! a call's named arguments; checked once against the tool's input schema when compiled.

use percent_encoding::utf8_percent_encode;
use reqwest::Url;
use serde_json::{Map, Value};

use super::path::SEGMENT;
use super::{Method, Outgoing, PathTemplate, Problem};

/// The request half of an operation or a binding: method, path template, query and body from
/// named arguments, and a write's idempotency header.
#[derive(Debug)]
pub(super) struct Request {
    pub(super) method: Method,
    pub(super) path: PathTemplate,
    pub(super) query: Vec<(String, String)>,
    pub(super) query_join: Vec<(String, String)>,
    pub(super) body: Vec<(String, String)>,
    pub(super) content_type: Option<String>,
    pub(super) idempotency_header: Option<String>,
}

impl Request {
    /// The request for `arguments` (checked against the input schema already) and, for a
    /// write, its idempotency key; an argument that cannot be sent names itself and says why.
    pub(super) fn build(
        &self,
        arguments: &Value,
        idempotency_key: Option<&str>,
    ) -> Result<Outgoing, (String, String)> {
        let path = self.path.render(arguments)?;
        let query = self.query(arguments)?;
        let body = self.method.takes_body().then(|| {
            let mut body = Map::new();
            for (field, argument) in &self.body {
                if let Some(value) = arguments.get(argument).filter(|v| !v.is_null()) {
                    body.insert(field.clone(), value.clone());
                }
            }
            Value::Object(body)
        });
        let idempotency = match (&self.idempotency_header, idempotency_key) {
            (Some(header), Some(key)) => Some((header.clone(), key.to_string())),
            (Some(_), None) => {
                return Err((
                    "idempotency_key".into(),
                    "is missing: this tool changes the world and needs one".into(),
                ));
            }
            (None, _) => None,
        };
        Ok(Outgoing {
            method: self.method,
            path,
            query,
            content_type: body.as_ref().and(self.content_type.clone()),
            body,
            idempotency,
        })
    }
}

impl Request {
    /// The query parameters for `arguments`, encoded, or the argument that cannot be one and
    /// why. A joined list's items are encoded each and its separator is not: `["spa,bar",
    /// "wifi"]` joined with `,` is `spa%2Cbar,wifi`, never the same as `["spa", "bar", "wifi"]`.
    pub(super) fn query(
        &self,
        arguments: &Value,
    ) -> Result<Vec<(String, String)>, (String, String)> {
        let mut query = Vec::new();
        for (name, argument) in &self.query {
            let join = self
                .query_join
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, separator)| separator);
            let name = encoded(name);
            match arguments.get(argument) {
                None | Some(Value::Null) => {}
                Some(Value::Array(items)) => {
                    let items = items
                        .iter()
                        .map(|item| scalar(argument, item).map(|item| encoded(&item)))
                        .collect::<Result<Vec<_>, _>>()?;
                    match join {
                        // A space is not sent bare in a URL: `spaceDelimited` is `%20`.
                        Some(separator) => {
                            query.push((name, items.join(&separator.replace(' ', "%20"))))
                        }
                        None => query.extend(items.into_iter().map(|item| (name.clone(), item))),
                    }
                }
                Some(value) => query.push((name, encoded(&scalar(argument, value)?))),
            }
        }
        Ok(query)
    }
}

/// The separators a list argument's items may be joined with in one query value: OpenAPI's
/// `form` (explode false), `spaceDelimited` and `pipeDelimited` styles.
pub const QUERY_SEPARATORS: [&str; 3] = [",", " ", "|"];

/// Names paired with the argument each comes from (a query parameter's, a body field's).
type Pairs = [(String, String)];

/// Whose arguments a request is checked against, which decides how a missing one is fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arguments {
    /// A tool from configuration: its file declares them, and one is added there.
    Declared,
    /// A built-in tool (a binding): they are fixed, and the request uses what there is.
    BuiltIn,
}

/// Checks a request's path template, query and body against the arguments `input_schema`
/// describes; the parsed path, or `None` when it is wrong. Problems are keyed under `table`.
pub(super) fn compile_request(
    table: &str,
    (method, template, query, body): (Method, &str, &Pairs, &Pairs),
    (input_schema, arguments): (&Value, Arguments),
    problems: &mut Vec<Problem>,
) -> Option<PathTemplate> {
    let properties = input_schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let required: Vec<&str> = input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // A template that does not parse still has its parameters checked: one mistake must not
    // hide another until the next `faregate check`.
    let parsed = PathTemplate::parse(template);
    let params: Vec<&str> = match &parsed {
        Ok(path) => path.params(),
        Err(_) => braced_names(template),
    };
    for param in params {
        let fix = match (arguments, properties.contains_key(param)) {
            (_, true) if required.contains(&param) => continue,
            (Arguments::Declared, false) => format!(
                "the path parameter {{{param}}} is not an argument: add \"{param}\" to [input_schema.properties] and to its `required` list"
            ),
            (Arguments::Declared, true) => format!(
                "the path parameter {{{param}}} must be a required argument: add \"{param}\" to input_schema.required"
            ),
            (Arguments::BuiltIn, false) => format!(
                "the path parameter {{{param}}} is not an argument of this tool; its arguments: {}",
                names(properties.keys())
            ),
            (Arguments::BuiltIn, true) => format!(
                "the path parameter {{{param}}} is an optional argument of this tool, and a path needs a value on every call: send it in [request.query] instead"
            ),
        };
        problems.push(Problem::new(format!("{table}.path"), fix));
    }
    let path = match parsed {
        Ok(path) => Some(path),
        Err(message) => {
            problems.push(Problem::new(format!("{table}.path"), message));
            None
        }
    };
    for (part, pairs) in [("query", query), ("body", body)] {
        for (name, argument) in pairs {
            match properties.get(argument) {
                None => problems.push(Problem::new(
                    format!("{table}.{part}.{name}"),
                    format!(
                        "\"{argument}\" is not an argument; arguments in input_schema.properties: {}",
                        names(properties.keys())
                    ),
                )),
                Some(schema) if part == "query" && !fits_a_query(schema) => {
                    problems.push(Problem::new(
                        format!("{table}.query.{name}"),
                        format!(
                            "\"{argument}\" is an object (or a list of them or of lists) by input_schema, and a query parameter carries a string, a number or a boolean (or a list of them): send it in [request.body], or make each of its fields an argument of its own with its own query parameter"
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
    }
    if !body.is_empty() && !method.takes_body() {
        problems.push(Problem::new(
            format!("{table}.body"),
            format!(
                "a {} request carries no body: send these arguments in [request.query], or use POST, PUT or PATCH",
                method.as_str()
            ),
        ));
    }
    path
}

/// The `{name}`s of a template that did not parse, as far as they read as parameters.
fn braced_names(template: &str) -> Vec<&str> {
    template
        .split('{')
        .skip(1)
        .filter_map(|after| after.split_once('}').map(|(name, _)| name))
        .filter(|name| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
        .collect()
}

/// Whether an argument of `schema` can be sent as a query parameter: not an object, nor a list
/// of objects or lists (every call of it would be refused). A schema that names no type may.
fn fits_a_query(schema: &Value) -> bool {
    let is = |schema: &Value, wanted: &[&str]| match schema.get("type") {
        Some(Value::String(t)) => wanted.contains(&t.as_str()),
        Some(Value::Array(types)) => {
            let named: Vec<&str> = types
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .collect();
            !named.is_empty() && named.iter().all(|t| wanted.contains(t))
        }
        _ => false,
    };
    if is(schema, &["object"]) {
        return false;
    }
    !(is(schema, &["array"])
        && schema
            .get("items")
            .is_some_and(|items| is(items, &["object", "array"])))
}

/// Checks `[request] content_type`: a header value naming a JSON media type
/// (`application/json` with parameters, or a `+json` type), on a method that sends a body.
pub(super) fn check_content_type(media: &str, method: Method, problems: &mut Vec<Problem>) {
    let essence = media
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let json = essence == "application/json"
        || (essence.ends_with("+json") && essence.split('/').count() == 2);
    if !json || reqwest::header::HeaderValue::from_str(media).is_err() {
        problems.push(Problem::new(
            "request.content_type",
            format!(
                "\"{media}\" is not a JSON media type; the body is sent as JSON, e.g. \"application/vnd.amadeus+json\""
            ),
        ));
    }
    if !method.takes_body() {
        problems.push(Problem::new(
            "request.content_type",
            format!(
                "a {} request carries no body: remove content_type, or use POST, PUT or PATCH",
                method.as_str()
            ),
        ));
    }
}

impl Outgoing {
    /// The request's URL: `base`'s path with the encoded path appended, then the query. Only
    /// the path and query of `base` change, so the host is always the configured one.
    pub fn url(&self, base: &Url) -> Url {
        let mut url = base.clone();
        let joined = format!("{}{}", base.path().trim_end_matches('/'), self.path);
        url.set_path(&joined);
        url.set_fragment(None);
        if !self.query.is_empty() {
            let ours: Vec<String> = self.query.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let query = match base.query().filter(|q| !q.is_empty()) {
                Some(theirs) => format!("{theirs}&{}", ours.join("&")),
                None => ours.join("&"),
            };
            url.set_query(Some(&query));
        }
        url
    }
}

/// A query name or value percent-encoded: every byte but RFC 3986's unreserved characters.
fn encoded(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}

/// One query value as text: a string, number or boolean.
fn scalar(argument: &str, value: &Value) -> Result<String, (String, String)> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err((
            argument.to_string(),
            "must be a string, a number or a boolean (or a list of them): it is sent as a query parameter".into(),
        )),
    }
}

fn names<'a>(keys: impl Iterator<Item = &'a String>) -> String {
    let list: Vec<&str> = keys.map(String::as_str).collect();
    if list.is_empty() {
        "none".into()
    } else {
        list.join(", ")
    }
}
