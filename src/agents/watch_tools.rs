//! The watch tools a model calls to say "I'll watch it for you": `watch_create`, `watch_list`
//! and `watch_delete`, as pure code (their manifest entries and their arguments read).
//!
//! # Why three, and why these
//! A model needs to start a watch when the traveller asks, to see what its watches found when
//! the traveller asks again, and to stop one that is no longer needed. Pausing and resuming
//! stay on the native API (`/v1/watches`), where the application decides; so does
//! `callback_url`: where notices are posted is the application's business, never a model's.
//!
//! `watch_create` takes what `POST /v1/watches` takes (tool, arguments, every, condition,
//! ends), and the edge runs both through the one create path, so a watch made by a model is
//! checked, limited and refused exactly as one made through the API. Two things differ, for
//! OpenAI strict mode, which cannot describe a free-form object: `arguments` is the watched
//! tool's arguments written as a JSON object in a string (an object is accepted too), and the
//! condition is a tagged union the schema spells out kind by kind.
//!
//! The schemas are derived from the types below (so what a model is told and what is parsed
//! cannot drift), and every description comes from [`crate::texts::watches`].

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::texts::watches as texts;
use crate::tools::schema_of;

/// `watch_create`.
pub const CREATE: &str = "watch_create";
/// `watch_list`.
pub const LIST: &str = "watch_list";
/// `watch_delete`.
pub const DELETE: &str = "watch_delete";

/// One watch tool as a manifest shows it.
#[derive(Debug)]
pub struct WatchTool {
    /// The name a model calls it by.
    pub name: &'static str,
    /// A short human title.
    pub title: &'static str,
    /// What a model reads about it.
    pub description: &'static str,
    /// Whether it only reads (MCP `readOnlyHint`).
    pub read_only: bool,
    /// Whether it removes something (MCP `destructiveHint`).
    pub destructive: bool,
    /// Whether repeating it is harmless (MCP `idempotentHint`).
    pub idempotent: bool,
    /// Whether it reaches a provider outside the gateway (MCP `openWorldHint`): only a watch's
    /// runs do.
    pub open_world: bool,
    input_schema: fn() -> Value,
}

impl WatchTool {
    /// The JSON Schema of its arguments (draft 2020-12, subschemas inlined).
    pub fn input_schema(&self) -> Value {
        (self.input_schema)()
    }
}

/// The watch tools, in the order manifests list them (after the catalog's tools).
pub static TOOLS: [WatchTool; 3] = [
    WatchTool {
        name: CREATE,
        title: texts::CREATE_TITLE,
        description: texts::CREATE_DESCRIPTION,
        read_only: false,
        destructive: false,
        idempotent: false,
        open_world: true,
        input_schema: schema_of::<CreateArgs>,
    },
    WatchTool {
        name: LIST,
        title: texts::LIST_TITLE,
        description: texts::LIST_DESCRIPTION,
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: false,
        input_schema: schema_of::<ListArgs>,
    },
    WatchTool {
        name: DELETE,
        title: texts::DELETE_TITLE,
        description: texts::DELETE_DESCRIPTION,
        read_only: false,
        destructive: true,
        idempotent: true,
        open_world: false,
        input_schema: schema_of::<DeleteArgs>,
    },
];

/// The watch tool called `name`, if it is one.
pub fn tool(name: &str) -> Option<&'static WatchTool> {
    TOOLS.iter().find(|t| t.name == name)
}

/// What a watch is made of, as `watch_create` and `POST /v1/watches` both send it (the native
/// body adds `callback_url`).
#[derive(Debug, Clone, PartialEq)]
pub struct WatchSpec {
    /// The read tool to call.
    pub tool: String,
    /// Its arguments.
    pub arguments: Value,
    /// The interval, as written (`"15m"`).
    pub every: String,
    /// The condition as sent; `None` = any change.
    pub condition: Option<Value>,
    /// How it ends.
    pub ends: Ends,
}

/// How a watch ends, as written; all unset = when it is deleted.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(description = "")]
pub struct Ends {
    /// No run after this time (RFC 3339).
    #[serde(default)]
    #[schemars(description = texts::ARG_ENDS_AT)]
    pub at: Option<String>,
    /// At most this many runs.
    #[serde(default)]
    #[schemars(description = texts::ARG_AFTER_RUNS, range(min = 1))]
    pub after_runs: Option<u32>,
    /// Until the watched flight departs.
    #[serde(default, deserialize_with = "null_is_false")]
    #[schemars(description = texts::ARG_AT_DEPARTURE, with = "Option<bool>")]
    pub at_departure: bool,
}

/// `watch_create`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(description = "")]
struct CreateArgs {
    #[schemars(description = texts::ARG_TOOL)]
    tool: String,
    #[serde(deserialize_with = "object_or_json_string")]
    #[schemars(description = texts::ARG_ARGUMENTS, with = "String")]
    arguments: Value,
    #[schemars(description = texts::ARG_EVERY)]
    every: String,
    #[serde(default)]
    #[schemars(description = texts::ARG_CONDITION)]
    condition: Option<ConditionArg>,
    #[serde(default)]
    #[schemars(description = texts::ARG_ENDS)]
    ends: Option<Ends>,
}

/// What counts as news, kind by kind (the rules and their checks are the watch room's).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[schemars(description = "")]
enum ConditionArg {
    AnyChange,
    PriceBelow {
        #[schemars(description = texts::ARG_AMOUNT)]
        amount: f64,
    },
    PriceChange {
        #[schemars(description = texts::ARG_SHARE)]
        share: f64,
    },
    StatusChanged,
    DelayOver {
        #[schemars(description = texts::ARG_MINUTES)]
        minutes: u32,
    },
    GateChanged,
}

/// `watch_list` takes no arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(description = "")]
struct ListArgs {}

/// `watch_delete`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(description = "")]
struct DeleteArgs {
    #[schemars(description = texts::ARG_WATCH_ID)]
    watch_id: String,
}

/// A watch tool call, read.
#[derive(Debug, Clone, PartialEq)]
pub enum WatchCall {
    /// `watch_create`.
    Create(WatchSpec),
    /// `watch_list`.
    List,
    /// `watch_delete`.
    Delete {
        /// The watch to remove.
        watch_id: String,
    },
}

/// Reads the arguments of watch tool `name`; an error names the fix (the caller answers it as
/// `invalid_arguments`). `None` when `name` is no watch tool.
pub fn parse(name: &str, arguments: Value) -> Option<Result<WatchCall, String>> {
    let fix = |e: crate::tools::FieldError| crate::tools::describe_field_errors(name, &[e]);
    let arguments = match arguments {
        // A tool without parameters is often called with `null` or no arguments at all.
        Value::Null => Value::Object(Default::default()),
        other => other,
    };
    Some(match name {
        CREATE => crate::tools::read_as::<CreateArgs>(arguments)
            .map_err(fix)
            .map(|a| {
                WatchCall::Create(WatchSpec {
                    tool: a.tool,
                    arguments: a.arguments,
                    every: a.every,
                    condition: a.condition.map(|c| {
                        // A unit or struct variant with numbers always serializes.
                        serde_json::to_value(c).unwrap_or(Value::Null)
                    }),
                    ends: a.ends.unwrap_or_default(),
                })
            }),
        LIST => crate::tools::read_as::<ListArgs>(arguments)
            .map_err(fix)
            .map(|_| WatchCall::List),
        DELETE => crate::tools::read_as::<DeleteArgs>(arguments)
            .map_err(fix)
            .map(|a| WatchCall::Delete {
                watch_id: a.watch_id,
            }),
        _ => return None,
    })
}

/// The watched tool's arguments: an object, or an object written as a JSON string (what OpenAI
/// strict mode can describe).
fn object_or_json_string<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
    use serde::de::Error;
    match Value::deserialize(d)? {
        Value::Object(o) => Ok(Value::Object(o)),
        Value::String(s) => match super::body::parse_strict(s.as_bytes()) {
            Ok(Value::Object(o)) => Ok(Value::Object(o)),
            Ok(other) => Err(D::Error::custom(texts::arguments_not_an_object(&format!(
                "it holds {other}"
            )))),
            Err(e) => Err(D::Error::custom(texts::arguments_not_an_object(
                &e.to_string(),
            ))),
        },
        other => Err(D::Error::custom(texts::arguments_not_an_object(&format!(
            "got {other}"
        )))),
    }
}

/// A strict-mode model sends `null` for a flag it leaves unset.
fn null_is_false<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(false))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_create_call_reads_as_the_native_body_does() {
        let read = parse(
            CREATE,
            json!({"tool": "search_flights",
                   "arguments": "{\"origin\": \"LHR\", \"destination\": \"JFK\", \"departure_date\": \"2030-01-01\"}",
                   "every": "15m", "condition": {"kind": "price_below", "amount": 400},
                   "ends": {"at": null, "after_runs": 10, "at_departure": null}}),
        );
        assert_eq!(
            read,
            Some(Ok(WatchCall::Create(WatchSpec {
                tool: "search_flights".into(),
                arguments: json!({"origin": "LHR", "destination": "JFK", "departure_date": "2030-01-01"}),
                every: "15m".into(),
                condition: Some(json!({"kind": "price_below", "amount": 400.0})),
                ends: Ends {
                    at: None,
                    after_runs: Some(10),
                    at_departure: false
                },
            })))
        );
        // An object is taken as is, and strict mode's nulls mean "not set".
        let read = parse(
            CREATE,
            json!({"tool": "get_flight_status", "arguments": {"carrier_code": "BA"},
                   "every": "1h", "condition": null, "ends": null}),
        );
        let Some(Ok(WatchCall::Create(spec))) = read else {
            panic!("{read:?}")
        };
        assert_eq!(spec.arguments, json!({"carrier_code": "BA"}));
        assert_eq!((spec.condition, spec.ends), (None, Ends::default()));
    }

    #[test]
    fn bad_arguments_name_the_fix() {
        let cases = [
            (
                CREATE,
                json!({"tool": "search_flights", "arguments": "[1]", "every": "1h"}),
                "as a JSON object",
            ),
            (
                CREATE,
                json!({"tool": "search_flights", "arguments": "{not json", "every": "1h"}),
                "as a JSON object",
            ),
            (
                CREATE,
                json!({"tool": "search_flights", "arguments": {}}),
                "missing field `every`",
            ),
            (
                CREATE,
                json!({"tool": "search_flights", "arguments": {}, "every": "1h", "condition": {"kind": "cheaper"}}),
                "unknown variant `cheaper`",
            ),
            (
                CREATE,
                json!({"tool": "search_flights", "arguments": {}, "every": "1h", "callback_url": "http://x"}),
                "unknown field `callback_url`",
            ),
            (DELETE, json!({}), "missing field `watch_id`"),
            (LIST, json!({"all": true}), "unknown field `all`"),
            // A wrong type names its field, in plain words (serde says "expected f64").
            (
                CREATE,
                json!({"tool": "search_flights", "arguments": {}, "every": "1h",
                       "condition": {"kind": "price_below", "amount": "400"}}),
                // (An internally tagged enum is read whole, so the path stops at it.)
                "\n- condition: invalid type: string \"400\", expected a number",
            ),
            (
                CREATE,
                json!({"tool": "search_flights", "arguments": {}, "every": "1h",
                       "ends": {"after_runs": "3"}}),
                "\n- ends.after_runs: invalid type: string \"3\", expected a whole number, 0 or more",
            ),
            (
                CREATE,
                json!({"tool": "search_flights", "arguments": {}, "every": 15}),
                "\n- every: invalid type: integer `15`, expected a string",
            ),
        ];
        for (name, args, says) in cases {
            let e = parse(name, args.clone())
                .unwrap_or_else(|| panic!("{name} is a watch tool"))
                .err()
                .unwrap_or_else(|| panic!("{name} {args} is refused"));
            assert!(
                e.contains(says) && e.starts_with(&format!("Invalid arguments for {name}")),
                "{e}"
            );
        }
        assert_eq!(parse(LIST, Value::Null), Some(Ok(WatchCall::List)));
        assert_eq!(parse("search_flights", json!({})), None);
    }

    #[test]
    fn every_description_is_from_the_texts_and_every_field_has_one() {
        fn walk(schema: &Value, at: &str) {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (name, prop) in props {
                    let tagged = name == "kind";
                    assert!(
                        tagged || prop.get("description").and_then(Value::as_str).is_some(),
                        "{at}.{name} has no description"
                    );
                    walk(prop, &format!("{at}.{name}"));
                }
            }
            for key in ["anyOf", "oneOf"] {
                for branch in schema
                    .get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    walk(branch, at);
                }
            }
        }
        for tool in &TOOLS {
            walk(&tool.input_schema(), tool.name);
        }
    }
}
