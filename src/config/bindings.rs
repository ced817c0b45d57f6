//! Reads `[binding.<provider>]` in a built-in tool's file: an http provider that serves the
//! tool after its built-in providers, with the request built from the tool's checked arguments
//! and the answer mapped field by field into the tool's own output (`http_tool::Binding`).
//!
//! Only reads whose outputs carry no routable ids take one (`tools::BINDABLE`): a booking is
//! never sent to an http provider, and the ids a search hands out go back to their issuer by
//! prefix, which an http provider's ids could not keep apart. Every problem of a binding (an
//! argument the path names that the tool does not have, a JSONPath that does not parse, a
//! required output field with no source) is reported with its file and key, as a tool file of
//! kind `http` is.

use std::sync::Arc;

use super::http_tools::{statuses, string_pairs};
use super::model::Bound;
use super::reader::Section;
use crate::http_tool::{self, Binding, BindingDef, DEFAULT_REJECTED, Method};
use crate::tools::{self, Access};

/// The bindings of the tool file `s` (tool `name`, of kind http when `configured`), each
/// compiled; a binding with a problem is recorded and left out.
pub(super) fn read_bindings(s: &Section<'_>, name: Option<&str>, configured: bool) -> Vec<Bound> {
    let mut out = Vec::new();
    for (provider, b) in s.named_tables("binding") {
        if let Some(bound) = read_binding(&b, &provider, name, configured) {
            out.push(bound);
        }
    }
    out
}

fn read_binding(
    b: &Section<'_>,
    provider: &str,
    name: Option<&str>,
    configured: bool,
) -> Option<Bound> {
    let spec = name.and_then(tools::spec);
    let allowed = match (configured, spec) {
        (true, _) => {
            b.error(
                "",
                "a tool of kind http is asked by its own [request] and [result]; [binding.<provider>] lets an http provider serve a built-in tool",
            );
            false
        }
        (false, None) => false,
        (false, Some(spec)) if spec.access == Access::Write => {
            b.error(
                "",
                format!(
                    "{} is a write tool (a booking): an http provider never books, so it takes no binding; remove [binding.{provider}]",
                    spec.name
                ),
            );
            false
        }
        (false, Some(spec)) if !tools::BINDABLE.contains(&spec.name) => {
            b.error(
                "",
                format!(
                    "{}'s answers carry ids that later calls send back to the provider that issued them (by prefix, such as off_ or amx_), and an http provider's ids could not be kept apart from those; only tools whose outputs carry no such ids take a binding: {}",
                    spec.name,
                    tools::BINDABLE.join(", ")
                ),
            );
            false
        }
        (false, Some(_)) => true,
    };
    let request = b.table("request");
    if request.is_none() {
        b.error(
            "request",
            "missing; e.g. [binding.<provider>.request] method = \"GET\" and path = \"/flights/{carrier_code}{flight_number}\"",
        );
    }
    let method = request.as_ref().and_then(|r| {
        let m = r.required_string("method", "\"GET\"")?;
        Method::parse(&m).or_else(|| {
            r.error(
                "method",
                format!("\"{m}\" is not a method faregate sends; a binding reads with GET"),
            );
            None
        })
    });
    let path = request
        .as_ref()
        .and_then(|r| r.required_string("path", "\"/flights/{carrier_code}{flight_number}\""));
    let query = request
        .as_ref()
        .map(|r| string_pairs(r, "query"))
        .unwrap_or_default();
    if let Some(r) = &request {
        r.finish();
    }
    let has_result = b.has("result");
    if !has_result {
        b.error(
            "result",
            "missing; map each field of the tool's output, e.g. [binding.<provider>.result] \"flights[]\" = \"$.flights[*]\"",
        );
    }
    let result = string_pairs(b, "result");
    let (rejected, message, empty) = match b.table("classify") {
        Some(c) => {
            let rejected = statuses(&c, "rejected");
            let message = c.string("message");
            let empty = c.string("empty");
            if empty.as_deref().is_some_and(|e| e.trim().is_empty()) {
                c.error(
                    "empty",
                    "say what an empty answer means to the model, e.g. \"This provider lists no such flight on that date.\"",
                );
            }
            c.finish();
            (
                rejected.unwrap_or_else(|| DEFAULT_REJECTED.to_vec()),
                message,
                empty,
            )
        }
        None => (DEFAULT_REJECTED.to_vec(), None, None),
    };
    b.finish();
    // Without a result, the request is still checked (its method, its path's arguments): one
    // mistake must not hide another until the next `faregate check`.
    let spec = spec.filter(|_| allowed)?;
    let def = BindingDef {
        method: method?,
        path: path?,
        query,
        result,
        rejected,
        message,
        empty,
    };
    match Binding::compile(&def, &spec.input_schema(), &spec.output_schema()) {
        Ok(binding) if has_result => Some(Bound {
            provider: provider.to_string(),
            def,
            binding: Arc::new(binding),
        }),
        Ok(_) => None,
        Err(problems) => {
            // A missing result was said once above, not again for each output field.
            let said = problems
                .into_iter()
                .filter(|p| has_result || !p.key.starts_with("result"));
            for http_tool::Problem { key, message } in said {
                b.error(&key, message);
            }
            None
        }
    }
}
