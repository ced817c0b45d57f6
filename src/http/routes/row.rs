//! What one row of the route table says: a path, its guard, and per method the handler and
//! the OpenAPI description; plus the small constructors the table is written with.

use axum::routing::{MethodFilter, MethodRouter};
use serde_json::{Value, json};

use crate::http::state::SharedState;

/// Which edge layers wrap a route (in `router`'s order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Guard {
    /// No key: the liveness and readiness probes.
    Open,
    /// A client key (or the admin key), then the body limit.
    Client,
    /// A client key, then the per-client rate and in-flight limits, then the body limit: the
    /// tool-call routes.
    Call,
    /// The handler authorizes itself: the operations routes, whose access differs per route
    /// (reads need a key, forcing needs the admin key, the dashboard is open).
    SelfAuthorized,
}

/// An HTTP method the table uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verb {
    Get,
    Post,
    Delete,
}

impl Verb {
    /// The name in an OpenAPI path item (`get`).
    pub(crate) fn openapi(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::Post => "post",
            Verb::Delete => "delete",
        }
    }

    /// The method's name on the wire (`GET`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Verb::Get => "GET",
            Verb::Post => "POST",
            Verb::Delete => "DELETE",
        }
    }

    fn filter(self) -> MethodFilter {
        match self {
            Verb::Get => MethodFilter::GET,
            Verb::Post => MethodFilter::POST,
            Verb::Delete => MethodFilter::DELETE,
        }
    }
}

/// What answers an operation.
#[derive(Clone, Copy)]
pub(crate) enum Handler {
    /// An axum handler, mounted for the operation's method.
    Axum(fn(MethodFilter) -> MethodRouter<SharedState>),
    /// rmcp's Streamable HTTP service, which answers every method of its path itself.
    Mcp,
}

impl Handler {
    /// The method router for `verb` (`None` for the MCP service).
    pub(crate) fn method_router(self, verb: Verb) -> Option<MethodRouter<SharedState>> {
        match self {
            Handler::Axum(make) => Some(make(verb.filter())),
            Handler::Mcp => None,
        }
    }
}

impl std::fmt::Debug for Handler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Handler::Axum(_) => "Axum",
            Handler::Mcp => "Mcp",
        })
    }
}

/// A JSON schema in the document.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Schema {
    /// A component schema by name (`#/components/schemas/<name>`).
    Ref(&'static str),
    /// Any JSON object.
    Object,
    /// Written out.
    Inline(fn() -> Value),
}

impl Schema {
    /// The schema as JSON.
    pub(crate) fn json(self) -> Value {
        match self {
            Schema::Ref(name) => json!({ "$ref": format!("#/components/schemas/{name}") }),
            Schema::Object => json!({"type": "object"}),
            Schema::Inline(make) => make(),
        }
    }
}

/// The body of an answer.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Reply {
    /// The gateway's JSON error, `{"message": …}`.
    Error,
    /// JSON of this schema.
    Json(Schema),
    /// A body of this media type (a string schema).
    Media(&'static str),
    /// No body.
    Nothing,
}

/// One documented answer of an operation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) description: &'static str,
    pub(crate) reply: Reply,
}

pub(crate) const fn answer(status: u16, description: &'static str, reply: Reply) -> Answer {
    Answer {
        status,
        description,
        reply,
    }
}

pub(crate) const fn error(status: u16, description: &'static str) -> Answer {
    answer(status, description, Reply::Error)
}

/// Which credentials an operation's document asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Security {
    /// A client key (the document's default).
    Key,
    /// None.
    Open,
    /// None or a client key (`/metrics`, as configured).
    Optional,
    /// The admin key (forcing breakers, reloading, listing the replicas).
    Admin,
}

/// Where a parameter is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    Path,
    Query,
}

/// The schema of a parameter.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ParamSchema {
    /// Any string.
    Text,
    /// The name of a served tool (an `enum` of the served tools).
    ServedTool,
    /// Written out.
    Inline(fn() -> Value),
}

/// One parameter of an operation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Param {
    pub(crate) name: &'static str,
    pub(crate) place: Place,
    pub(crate) description: Option<&'static str>,
    pub(crate) schema: ParamSchema,
}

pub(crate) const TOOL: Param = Param {
    name: "tool",
    place: Place::Path,
    description: Some(
        "A served tool's name; its arguments are the component schema `<tool>.arguments`.",
    ),
    schema: ParamSchema::ServedTool,
};

pub(crate) const BREAKER_KEY: Param = Param {
    name: "key",
    place: Place::Path,
    description: None,
    schema: ParamSchema::Text,
};

/// One method of a path.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Operation {
    pub(crate) verb: Verb,
    pub(crate) handler: Handler,
    /// The OpenAPI `operationId`.
    pub(crate) id: &'static str,
    pub(crate) summary: &'static str,
    pub(crate) security: Security,
    pub(crate) params: &'static [Param],
    /// The JSON request body's schema, for operations that read one.
    pub(crate) body: Option<Schema>,
    /// The answers the handler gives; the guard's are added by the document.
    pub(crate) answers: &'static [Answer],
}

/// An operation with the common defaults: a client key, no parameters, no body.
pub(crate) const fn op(
    verb: Verb,
    handler: Handler,
    id: &'static str,
    summary: &'static str,
    answers: &'static [Answer],
) -> Operation {
    Operation {
        verb,
        handler,
        id,
        summary,
        security: Security::Key,
        params: &[],
        body: None,
        answers,
    }
}

/// One path.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route {
    pub(crate) path: &'static str,
    pub(crate) guard: Guard,
    pub(crate) operations: &'static [Operation],
}

impl Route {
    /// The methods the path answers, as an `Allow` header lists them: the table's verbs, and
    /// `HEAD` beside `GET` (axum answers it from the `GET` handler).
    pub(crate) fn allow(&self) -> String {
        let mut methods = Vec::new();
        for op in self.operations {
            methods.push(op.verb.name());
            if op.verb == Verb::Get {
                methods.push("HEAD");
            }
        }
        methods.join(", ")
    }
}

pub(crate) const fn route(
    path: &'static str,
    guard: Guard,
    operations: &'static [Operation],
) -> Route {
    Route {
        path,
        guard,
        operations,
    }
}
