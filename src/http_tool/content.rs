//! The `content` text a model reads for a configured tool's answer: a minijinja template over
//! the kept result's fields, compiled once when the configuration is read.
//!
//! The template sees the kept fields and nothing else (no environment, no files, no globals
//! beyond minijinja's built-in filters), so a field the template names that the result does not
//! keep is found when the configuration is checked, not when a model is waiting. Rendering is
//! strict (a missing attribute is an error, which the adapter reports as a malformed answer)
//! and bounded by fuel, so no answer can make one rendering run away. Nothing is escaped: the
//! text goes to a model, not into HTML.
//!
//! A value is written as the call's JSON `data` shows it, not in minijinja's own (Python's)
//! spelling: a boolean `true` or `false` (not `True`), a null `null` (not `none`), and a list or
//! an object printed whole (`{{ flags }}`, `{{ item }}` in a loop over objects) as compact JSON
//! (`[true,false]`, `{"gate":"A10","open":true}`), not as minijinja's repr (`[True, False]`,
//! `{"open": True}`). A string or a number is written as it is (a string without quotes, also
//! inside a loop), so `{{ status }}` and `{% for g in gates %}{{ g }}{% endfor %}` read as text.
//! What a filter makes into a string itself (`join`, `string`, `~`) is minijinja's: `{{ flags |
//! join(", ") }}` still writes `True, False`; print the list whole, or test each item.

use std::collections::BTreeSet;

use minijinja::value::{Serde, ValueKind};
use minijinja::{Environment, Output, State, UndefinedBehavior};
use serde_json::Value;

/// The template's name inside its environment (no extension: no auto-escaping).
const NAME: &str = "content";

/// How much work one rendering may do: far more than any sentence about one answer needs (a
/// loop over a few hundred kept items), far less than a runaway one.
const FUEL: u64 = 200_000;

/// The compiled `content` template of one tool.
#[derive(Debug)]
pub struct Content {
    env: Environment<'static>,
}

impl Content {
    /// Compiles `source`, checking that every variable it reads is one of `fields`.
    pub fn compile<'a>(
        source: &str,
        fields: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, String> {
        // `new`, not `empty`: the built-in filters and tests (`default`, `join`, `length`,
        // `round`, …) and the few globals (`range`, `dict`, `namespace`).
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::SemiStrict);
        env.set_fuel(Some(FUEL));
        env.set_formatter(format_as_data);
        env.add_template_owned(NAME, source.to_string())
            .map_err(|e| format!("not a valid template: {}", describe(&e)))?;
        let known: BTreeSet<&str> = fields.into_iter().collect();
        let globals: BTreeSet<String> = env.globals().map(|(name, _)| name.to_string()).collect();
        let template = env
            .get_template(NAME)
            .map_err(|e| format!("not a valid template: {}", describe(&e)))?;
        let mut unknown: Vec<String> = template
            .undeclared_variables(false)
            .into_iter()
            .filter(|v| !known.contains(v.as_str()) && !globals.contains(v))
            .collect();
        if !unknown.is_empty() {
            unknown.sort();
            return Err(format!(
                "names {} that the result does not keep; kept fields: {}",
                unknown.join(", "),
                known.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
        drop(template);
        Ok(Content { env })
    }

    /// The text for `kept` (an object of the kept fields), or why it could not be written.
    pub fn render(&self, kept: &Value) -> Result<String, String> {
        let template = self.env.get_template(NAME).map_err(|e| describe(&e))?;
        template
            .render(Serde(kept))
            .map(|text| text.trim().to_string())
            .map_err(|e| describe(&e))
    }
}

/// Writes `value` as the call's JSON `data` shows it (see the module's docs): a boolean, a null,
/// a list and an object as JSON, everything else (strings, numbers, undefined) as minijinja
/// writes it.
fn format_as_data(
    out: &mut Output<'_>,
    state: &mut State<'_, '_>,
    value: &minijinja::Value,
) -> Result<(), minijinja::Error> {
    let json = match value.kind() {
        ValueKind::Bool | ValueKind::None | ValueKind::Seq | ValueKind::Map => {
            // Only a value no JSON answer can hold (a map with keys that are not strings, made
            // by the template itself) fails here; it is written as minijinja writes it.
            serde_json::to_string(value).ok()
        }
        _ => None,
    };
    match json {
        Some(json) => out.write_str(&json).map_err(minijinja::Error::from),
        None => minijinja::escape_formatter(out, state, value),
    }
}

fn describe(e: &minijinja::Error) -> String {
    match e.detail() {
        Some(detail) => format!("{} ({detail})", e.kind()),
        None => e.kind().to_string(),
    }
}
