//! Tools from configuration: how a tool declared in a `tools/*.toml` file of kind `http` turns
//! a call's arguments into one HTTP request and the provider's answer into a result, as pure
//! functions (no socket, no clock), so `faregate check`, the adapter and the fuzz target share
//! them.
//!
//! An [`Operation`] is compiled once from what the tool file says ([`OperationDef`]), and every
//! problem is reported at once with the key it sits at. At call time [`Operation::request`]
//! builds an [`Outgoing`] request (the path from a template whose parameters are encoded one
//! segment each, the query and the JSON body from named arguments, the idempotency key of a
//! write in the header the tool names), and [`Operation::read`] classifies the answer, keeps the
//! configured fields (JSONPath), checks them against the output schema and writes the
//! `content` text (a minijinja template).
//!
//! A write's success may come back with an empty body: many APIs answer a `POST`, `PUT` or
//! `DELETE` with `204 No Content`, or `201 Created` and only a `Location` header. That is the
//! write carried out ([`Answered::Done`]): its `data` holds the kept fields with nothing behind
//! them (`null`, or an empty list for a list path), as for a JSON answer that holds none of
//! them, checked against the output schema; its text is the adapter's, since the tool's
//! template describes an answer the provider did not send. A read answered with an empty body
//! stays a malformed answer: a read's result is what it keeps of the provider's JSON, and an
//! empty one would be served (and remembered, and later served stale) as a result that says
//! nothing; a provider with nothing to report answers an empty list or a 404, which the tool
//! classifies.
//!
//! The host is never an argument: [`Outgoing::url`] appends the encoded path to the provider's
//! configured base URL and can neither leave it nor change its host.
//!
//! A [`Binding`] (`binding.rs`) is the same request vocabulary for a built-in tool served by an
//! http provider (a provider chain that goes on past the built-in adapters): the request is
//! built from the tool's checked arguments, and the answer is mapped field by field into the
//! tool's own output shape ([`Shape`]) and checked against its output schema, so a provider
//! that answers something else is a malformed answer, never a result with invented or missing
//! fields.

mod binding;
pub mod classify;
pub mod content;
pub mod keep;
pub mod path;
mod request;
pub mod shape;

#[cfg(test)]
mod tests;

use std::time::SystemTime;

use serde_json::Value;
use serde_json_path::JsonPath;

pub use binding::{Binding, BindingDef};
pub use classify::{Class, Classify, DEFAULT_REJECTED, Waits};
pub use content::Content;
pub use keep::Keep;
pub use path::PathTemplate;
pub use request::QUERY_SEPARATORS;
use request::{Arguments, Request, check_content_type, compile_request};
pub use shape::Shape;

/// The HTTP methods a configured tool may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET`.
    Get,
    /// `POST`.
    Post,
    /// `PUT`.
    Put,
    /// `PATCH`.
    Patch,
    /// `DELETE`.
    Delete,
}

impl Method {
    /// The method named `name` (any case).
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name.to_ascii_uppercase().as_str() {
            "GET" => Method::Get,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "PATCH" => Method::Patch,
            "DELETE" => Method::Delete,
            _ => return None,
        })
    }

    /// The method's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        }
    }

    /// Whether a request with this method may carry a body.
    fn takes_body(self) -> bool {
        matches!(self, Method::Post | Method::Put | Method::Patch)
    }
}

/// What a tool file says about its request and its result, before it is compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationDef {
    /// Whether the tool changes the world (a write), which needs an idempotency rule.
    pub write: bool,
    /// `[request] method`.
    pub method: Method,
    /// `[request] path`, e.g. `/flights/{ident}`.
    pub path: String,
    /// `[request.query]`: query parameter → the argument it comes from.
    pub query: Vec<(String, String)>,
    /// `[request.query.<parameter>] join`: query parameter → the separator a list argument's
    /// items are joined with into one value (`hotelIds=A,B`); a list is otherwise sent as the
    /// parameter repeated (`hotelIds=A&hotelIds=B`).
    pub query_join: Vec<(String, String)>,
    /// `[request.body]`: JSON body field → the argument it comes from.
    pub body: Vec<(String, String)>,
    /// `[request] content_type`: the body's media type when it is not `application/json` (a
    /// vendor's JSON type, such as `application/vnd.amadeus+json`).
    pub content_type: Option<String>,
    /// `[idempotency] header`: the request header that carries a write's idempotency key.
    pub idempotency_header: Option<String>,
    /// `[result.keep]`: result field → JSONPath into the answer.
    pub keep: Vec<(String, String)>,
    /// `content`: the template of the text a model reads.
    pub content: String,
    /// `[classify] rejected`: the statuses the model can fix.
    pub rejected: Vec<u16>,
    /// `[classify] message`: a JSONPath to a refusal's message.
    pub message: Option<String>,
}

/// One problem of a tool file's operation: the key it sits at (`request.path`) and what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The dotted key inside the tool file.
    pub key: String,
    /// What is wrong and what would be valid.
    pub message: String,
}

impl Problem {
    fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Problem {
            key: key.into(),
            message: message.into(),
        }
    }
}

/// A compiled operation: everything a call needs to build its request and read its answer.
#[derive(Debug)]
pub struct Operation {
    /// Whether the tool is a write, whose success may come with an empty body.
    write: bool,
    request: Request,
    keep: Keep,
    output: Option<jsonschema::Validator>,
    content: Content,
    classify: Classify,
}

/// One request, ready to send to the provider's base URL.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    /// The method.
    pub method: Method,
    /// The encoded path, starting with `/`, to append to the base URL's path.
    pub path: String,
    /// Query parameters, percent-encoded (a joined list's separator left bare).
    pub query: Vec<(String, String)>,
    /// The JSON body, for methods that take one.
    pub body: Option<Value>,
    /// The body's media type when the tool names one other than `application/json`.
    pub content_type: Option<String>,
    /// The header and the idempotency key of a write.
    pub idempotency: Option<(String, String)>,
}

/// What one answer of the provider gave the tool.
#[derive(Debug, Clone, PartialEq)]
pub enum Answered {
    /// A JSON answer: the kept result and its text.
    Kept(Kept),
    /// A write the provider confirmed with a success status and an empty body (`204 No
    /// Content`, or `201 Created` with only a `Location` header): it was carried out, and
    /// nothing about it came back. The text is the adapter's to write.
    Done {
        /// The success status the provider answered.
        status: u16,
        /// The kept fields with nothing behind them (`null`, or an empty list for a list
        /// path), valid for the output schema.
        data: Value,
    },
}

/// A result as the tool keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Kept {
    /// The kept fields, as one object (the tool's `data`).
    pub data: Value,
    /// The text a model reads.
    pub content: String,
}

impl Operation {
    /// Compiles `def` for a tool whose arguments `input_schema` describes (and whose result
    /// `output_schema` describes, when given); every problem at once.
    pub fn compile(
        def: &OperationDef,
        input_schema: &Value,
        output_schema: Option<&Value>,
    ) -> Result<Self, Vec<Problem>> {
        let mut problems = Vec::new();
        if input_schema.get("type").and_then(Value::as_str) != Some("object") {
            problems.push(Problem::new(
                "input_schema.type",
                "must be \"object\": a tool's arguments are one JSON object",
            ));
        }
        if let Err(e) = jsonschema::options().build(input_schema) {
            problems.push(Problem::new(
                "input_schema",
                format!("is not a valid JSON Schema: {e}"),
            ));
        }
        let path = compile_request(
            "request",
            (def.method, &def.path, &def.query, &def.body),
            (input_schema, Arguments::Declared),
            &mut problems,
        );
        match (&def.idempotency_header, def.write) {
            (None, true) => problems.push(Problem::new(
                "idempotency",
                "a write tool needs an idempotency rule, so that a call repeated with the same key never acts twice: add [idempotency] with header = \"Idempotency-Key\" (the header the provider deduplicates by)",
            )),
            (Some(_), false) => problems.push(Problem::new(
                "idempotency",
                "only a write tool (access = \"write\") sends an idempotency key; remove [idempotency] or declare the tool a write",
            )),
            (Some(header), true) if reqwest::header::HeaderName::from_bytes(header.as_bytes()).is_err() => {
                problems.push(Problem::new(
                    "idempotency.header",
                    format!("\"{header}\" is not an HTTP header name; e.g. \"Idempotency-Key\""),
                ));
            }
            _ => {}
        }
        for (name, separator) in &def.query_join {
            if !QUERY_SEPARATORS.contains(&separator.as_str()) {
                problems.push(Problem::new(
                    format!("request.query.{name}.join"),
                    format!(
                        "\"{separator}\" is not a separator faregate joins a list with; use \",\" (OpenAPI's form style, explode false), \" \" (spaceDelimited) or \"|\" (pipeDelimited)"
                    ),
                ));
            }
            if !def.query.iter().any(|(n, _)| n == name) {
                problems.push(Problem::new(
                    format!("request.query.{name}.join"),
                    "joins a query parameter the request does not send",
                ));
            }
        }
        if let Some(media) = &def.content_type {
            check_content_type(media, def.method, &mut problems);
        }
        if def.keep.is_empty() {
            problems.push(Problem::new(
                "result.keep",
                "keep at least one field of the answer, e.g. status = \"$.flights[0].status\"",
            ));
        }
        let keep = match Keep::compile(&def.keep) {
            Ok(keep) => Some(keep),
            Err(errors) => {
                for (field, message) in errors {
                    problems.push(Problem::new(format!("result.keep.{field}"), message));
                }
                None
            }
        };
        let output = match output_schema.map(|s| jsonschema::options().build(s)) {
            Some(Ok(validator)) => Some(validator),
            Some(Err(e)) => {
                problems.push(Problem::new(
                    "output_schema",
                    format!("is not a valid JSON Schema: {e}"),
                ));
                None
            }
            None => None,
        };
        // Checked against the fields the file names even when one of their paths is wrong, so
        // both mistakes are reported at once.
        let content = Content::compile(&def.content, def.keep.iter().map(|(n, _)| n.as_str()))
            .map_err(|message| problems.push(Problem::new("content", message)))
            .ok();
        let classify = classify_rules(
            "classify",
            &def.rejected,
            def.message.as_deref(),
            &mut problems,
        );
        match (path, keep, content) {
            (Some(path), Some(keep), Some(content)) if problems.is_empty() => Ok(Operation {
                write: def.write,
                request: Request {
                    method: def.method,
                    path,
                    query: def.query.clone(),
                    query_join: def.query_join.clone(),
                    body: def.body.clone(),
                    content_type: def.content_type.clone(),
                    idempotency_header: def.idempotency_header.clone(),
                },
                keep,
                output,
                content,
                classify,
            }),
            _ => Err(problems),
        }
    }

    /// The request for `arguments` (checked against the input schema already) and, for a
    /// write, its idempotency key; an argument that cannot be sent names itself and says why.
    pub fn request(
        &self,
        arguments: &Value,
        idempotency_key: Option<&str>,
    ) -> Result<Outgoing, (String, String)> {
        self.request.build(arguments, idempotency_key)
    }

    /// Whether `arguments` (valid for the input schema) can be sent: each path parameter fills
    /// one segment (not empty, `.` or `..`) and each query argument is a scalar or a list of
    /// them. A schema may allow what no request can carry, and the gateway refuses that as
    /// invalid arguments before any provider is asked; the argument that cannot be sent names
    /// itself and says why.
    pub fn check_arguments(&self, arguments: &Value) -> Result<(), (String, String)> {
        self.request.path.render(arguments)?;
        self.request.query(arguments).map(drop)
    }

    /// Reads one answer received at `now`: the kept result and its text, a write carried out
    /// with nothing to keep (a success with an empty body), or what else it was. A kept result
    /// that breaks the output schema, or whose text cannot be written, is malformed: the
    /// provider did not answer in the shape the tool declares.
    pub fn read(
        &self,
        status: u16,
        waits: Waits<'_>,
        body: &[u8],
        now: SystemTime,
    ) -> Result<Answered, Class> {
        if self.write && (200..=299).contains(&status) && body.trim_ascii().is_empty() {
            let data = self.keep.apply(&Value::Null);
            // An output schema that requires a kept field to hold something leaves no `data`
            // to answer with, though the write was carried out: the operator must allow null.
            self.check_output(&data).map_err(|class| match class {
                Class::Malformed { detail } => Class::Malformed {
                    detail: format!(
                        "HTTP {status} with an empty body (the write was carried out), but {detail}; allow null for the kept fields in output_schema"
                    ),
                },
                other => other,
            })?;
            return Ok(Answered::Done { status, data });
        }
        let answer = match self.classify.classify(status, waits, body, now) {
            Class::Answer(answer) => answer,
            other => return Err(other),
        };
        self.keep_from(&answer).map(Answered::Kept)
    }

    /// The kept result of a JSON answer and its text (the second half of [`Operation::read`]).
    pub fn keep_from(&self, answer: &Value) -> Result<Kept, Class> {
        let data = self.keep.apply(answer);
        self.check_output(&data)?;
        match self.content.render(&data) {
            Ok(content) => Ok(Kept { data, content }),
            Err(e) => Err(Class::Malformed {
                detail: format!("the content template could not be written for this answer: {e}"),
            }),
        }
    }

    /// Whether `data` is valid for the output schema, when the tool declares one.
    fn check_output(&self, data: &Value) -> Result<(), Class> {
        let Some(Err(e)) = self.output.as_ref().map(|o| o.validate(data)) else {
            return Ok(());
        };
        Err(Class::Malformed {
            detail: format!(
                "the kept result does not match the output schema at {}: {}",
                if e.instance_path().as_str().is_empty() {
                    "/"
                } else {
                    e.instance_path().as_str()
                },
                e.masked()
            ),
        })
    }
}

/// The classification rules `[classify]` gives, checked; problems keyed under `table`.
fn classify_rules(
    table: &str,
    rejected: &[u16],
    message: Option<&str>,
    problems: &mut Vec<Problem>,
) -> Classify {
    for status in rejected {
        if !(400..=499).contains(status) || *status == 429 {
            problems.push(Problem::new(
                format!("{table}.rejected"),
                format!(
                    "{status} cannot be a refusal the model fixes: list 4xx statuses other than 429 (a rate limit)"
                ),
            ));
        }
    }
    let message = message.and_then(|m| {
        JsonPath::parse(m)
            .map_err(|e| {
                problems.push(Problem::new(
                    format!("{table}.message"),
                    format!("\"{m}\" is not a JSONPath (RFC 9535): {e}; e.g. \"$.error.message\""),
                ));
            })
            .ok()
    });
    Classify {
        rejected: rejected.to_vec(),
        message,
    }
}
