//! A [`Binding`]: the request vocabulary of tools from configuration for a built-in read tool
//! served by an http provider (a provider chain that goes on past the built-in adapters). The
//! request is built from the tool's checked arguments, and the answer is mapped field by field
//! into the tool's own output shape ([`Shape`]) and checked against its output schema, so a
//! provider that answers something else is a malformed answer, never a result with invented or
//! missing fields.

use std::time::SystemTime;

use serde_json::Value;

use super::{
    Arguments, Class, Classify, Method, Outgoing, Problem, Request, Shape, Waits, classify_rules,
    compile_request,
};

#[cfg(test)]
mod tests;

/// What a built-in tool's file says about one http provider that serves it
/// (`[binding.<provider>]`), before it is compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindingDef {
    /// `request.method`.
    pub method: Method,
    /// `request.path`, e.g. `/flights/{carrier_code}{flight_number}`.
    pub path: String,
    /// `request.query`: query parameter → the argument it comes from.
    pub query: Vec<(String, String)>,
    /// `result`: output key (`flights[].carrier_code`) → where it comes from.
    pub result: Vec<(String, String)>,
    /// `classify.rejected`: the statuses the model can fix.
    pub rejected: Vec<u16>,
    /// `classify.message`: a JSONPath to a refusal's message.
    pub message: Option<String>,
    /// `classify.empty`: the refusal to answer when the mapped result holds nothing (every list
    /// of it empty), for a provider whose "nothing" may only mean "not in what it lists";
    /// `None`: an empty result is an answer.
    pub empty: Option<String>,
}

/// A compiled binding: the request for a built-in read tool's arguments, and its answer mapped
/// into the tool's output shape. Only reads are bound (the gateway checks that), so it sends no
/// body and no idempotency key.
#[derive(Debug)]
pub struct Binding {
    request: Request,
    shape: Shape,
    output: jsonschema::Validator,
    classify: Classify,
    empty: Option<String>,
}

impl Binding {
    /// Compiles `def` for a built-in tool with these schemas; every problem at once, keyed
    /// inside the binding's table (`request.path`, `result.flights[].carrier_code`).
    pub fn compile(
        def: &BindingDef,
        input_schema: &Value,
        output_schema: &Value,
    ) -> Result<Self, Vec<Problem>> {
        let mut problems = Vec::new();
        let path = compile_request(
            "request",
            (def.method, &def.path, &def.query, &[]),
            (input_schema, Arguments::BuiltIn),
            &mut problems,
        );
        if def.method != Method::Get {
            problems.push(Problem::new(
                "request.method",
                format!(
                    "a built-in read tool is asked with GET, not {}: a binding serves reads only",
                    def.method.as_str()
                ),
            ));
        }
        let shape = Shape::compile(&def.result, input_schema, output_schema)
            .map_err(|errors| {
                for (key, message) in errors {
                    problems.push(Problem::new(format!("result.{key}"), message));
                }
            })
            .ok();
        let output = jsonschema::options()
            .build(output_schema)
            .map_err(|e| {
                problems.push(Problem::new(
                    "result",
                    format!("the tool's output schema cannot be compiled: {e}"),
                ));
            })
            .ok();
        let classify = classify_rules(
            "classify",
            &def.rejected,
            def.message.as_deref(),
            &mut problems,
        );
        match (path, shape, output) {
            (Some(path), Some(shape), Some(output)) if problems.is_empty() => Ok(Binding {
                request: Request {
                    method: def.method,
                    path,
                    query: def.query.clone(),
                    query_join: Vec::new(),
                    body: Vec::new(),
                    content_type: None,
                    idempotency_header: None,
                },
                shape,
                output,
                classify,
                empty: def.empty.clone(),
            }),
            _ => Err(problems),
        }
    }

    /// The request for the tool's checked `arguments` (as JSON); an argument that cannot be
    /// sent names itself and says why.
    pub fn request(&self, arguments: &Value) -> Result<Outgoing, (String, String)> {
        self.request.build(arguments, None)
    }

    /// Reads one answer received at `now` to a call with `arguments`: the tool's output as
    /// JSON (valid for its output schema), or what else the answer was. An answer the mapping
    /// cannot turn into the tool's output is [`Class::Malformed`].
    pub fn read(
        &self,
        (status, waits, body): (u16, Waits<'_>, &[u8]),
        now: SystemTime,
        arguments: &Value,
    ) -> Result<Value, Class> {
        let answer = match self.classify.classify(status, waits, body, now) {
            Class::Answer(answer) => answer,
            other => return Err(other),
        };
        self.map(&answer, arguments)
    }

    /// The tool's output for a JSON answer (the second half of [`Binding::read`]).
    pub fn map(&self, answer: &Value, arguments: &Value) -> Result<Value, Class> {
        let data = self
            .shape
            .apply(answer, arguments)
            .map_err(|detail| Class::Malformed { detail })?;
        if let Err(e) = self.output.validate(&data) {
            return Err(Class::Malformed {
                detail: format!(
                    "the mapped answer does not fit the tool's output at {}: {}",
                    if e.instance_path().as_str().is_empty() {
                        "/"
                    } else {
                        e.instance_path().as_str()
                    },
                    e.masked()
                ),
            });
        }
        if let Some(message) = &self.empty
            && is_empty(&data)
        {
            return Err(Class::NotListed {
                message: message.clone(),
            });
        }
        Ok(data)
    }
}

/// Whether a mapped result holds nothing: it has lists, and every one of them is empty.
fn is_empty(data: &Value) -> bool {
    let lists: Vec<&Value> = data
        .as_object()
        .map(|o| o.values().filter(|v| v.is_array()).collect())
        .unwrap_or_default();
    !lists.is_empty()
        && lists
            .iter()
            .all(|v| v.as_array().is_some_and(Vec::is_empty))
}
