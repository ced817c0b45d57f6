//! How an http provider's answer becomes a built-in tool's typed result: one source per field
//! of the tool's output, compiled once and checked against the tool's output schema.
//!
//! A built-in tool promises a shape (its output type, which its `content`, watches and every
//! manifest read), so the mapping is written field by field in that shape's terms, never as
//! whatever the provider happens to send. Each key is a path into the output:
//! `flights[].points[0].airport` names the field `airport` of the first point of every flight.
//! `name[]` is a list whose items are made from the nodes a JSONPath finds (its own key binds
//! that JSONPath, e.g. `"flights[]" = "$.flights[*]"`); `name[N]` is the list's item N, for a
//! list of a fixed length built from one node (a flight's origin and destination). Each value is
//! where the field comes from:
//!
//! - a JSONPath (RFC 9535) into the answer, from its root (`$…`) or from the current item of
//!   the innermost `name[]` (`@…`). A path of names and indexes gives one node or `null`; any
//!   other path gives the list of its nodes, as a tool file's `keep` does.
//! - `{argument}`: the value of one of the call's own arguments (the date asked for, say), for a
//!   field the provider does not send but the request pinned.
//!
//! Inside a JSONPath's quoted string, `{argument}` is replaced by that argument's value (escaped
//! for the string), so a filter can keep only the nodes that answer the call:
//! `$.flights[?@.scheduled_out >= '{departure_date}T00:00:00Z']`. Arguments fill quoted strings
//! only, so no argument can change a path's structure.
//!
//! [`Shape::compile`] checks every key against the output schema (a field it does not have, a
//! list where it has none) and every required field of every object the mapping builds (a
//! required field with no source), and names each problem with its key.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use serde_json_path::JsonPath;

/// Where one field comes from.
#[derive(Debug, Clone)]
enum Source {
    /// A JSONPath with no argument in it.
    Path {
        path: JsonPath,
        relative: bool,
        list: bool,
    },
    /// A JSONPath whose quoted strings take arguments, parsed for each call.
    Template {
        parts: Vec<Piece>,
        relative: bool,
        list: bool,
    },
    /// One of the call's arguments.
    Argument(String),
}

/// A part of a JSONPath template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Argument(String),
}

/// One node of the output the mapping builds.
#[derive(Debug, Clone)]
enum Node {
    /// A value from one source.
    Leaf(Source),
    /// An object with these fields.
    Object(BTreeMap<String, Node>),
    /// A list of fixed length, item by item.
    Fixed(Vec<Node>),
    /// A list with one item per node `from` finds, each built by `item` (or the node itself).
    Each {
        from: Source,
        item: Option<Box<Node>>,
    },
}

/// A compiled result mapping into a built-in tool's output.
#[derive(Debug, Clone)]
pub struct Shape {
    root: BTreeMap<String, Node>,
}

/// One step of an output key: a field, then maybe `[]` or `[N]`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Field(String),
    Each,
    Index(usize),
}

/// A tree being built from keys, before its sources are attached.
#[derive(Debug, Default)]
struct Draft {
    source: Option<(String, Source)>,
    fields: BTreeMap<String, Draft>,
    each: Option<Box<Draft>>,
    items: BTreeMap<usize, Draft>,
}

impl Shape {
    /// Compiles `fields` (output key → source) for a tool whose arguments `input_schema`
    /// describes and whose result `output_schema` describes; every problem at once, each with
    /// the key it sits at (relative to the mapping's table).
    pub fn compile(
        fields: &[(String, String)],
        input_schema: &Value,
        output_schema: &Value,
    ) -> Result<Self, Vec<(String, String)>> {
        let mut problems = Vec::new();
        let arguments: Vec<String> = input_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let mut draft = Draft::default();
        for (key, value) in fields {
            let steps = match steps(key) {
                Ok(steps) => steps,
                Err(message) => {
                    problems.push((key.clone(), message));
                    continue;
                }
            };
            let source = match source(value, &arguments) {
                Ok(source) => source,
                Err(message) => {
                    problems.push((key.clone(), message));
                    continue;
                }
            };
            if let Err(message) = draft.place(&steps, key, source) {
                problems.push((key.clone(), message));
            }
        }
        let wrong: Vec<String> = problems.iter().map(|(key, _)| key.clone()).collect();
        let root = draft.check(output_schema, "", &mut problems);
        // A key whose source is wrong was said once; it is not also "a field with no source".
        problems.retain(|(key, message)| {
            !(message.starts_with("is a required field") && wrong.contains(key))
        });
        match root {
            Some(Node::Object(root)) if problems.is_empty() => Ok(Shape { root }),
            _ => Err(problems),
        }
    }

    /// The output for `answer` (a provider's JSON) to a call with `arguments`, or why it
    /// cannot be built (an argument a path needs that the call does not carry).
    pub fn apply(&self, answer: &Value, arguments: &Value) -> Result<Value, String> {
        let mut out = Map::new();
        for (name, node) in &self.root {
            out.insert(name.clone(), build(node, answer, answer, arguments)?);
        }
        Ok(Value::Object(out))
    }
}

fn build(node: &Node, root: &Value, current: &Value, arguments: &Value) -> Result<Value, String> {
    Ok(match node {
        Node::Leaf(source) => fetch(source, root, current, arguments)?,
        Node::Object(fields) => {
            let mut out = Map::new();
            for (name, node) in fields {
                out.insert(name.clone(), build(node, root, current, arguments)?);
            }
            Value::Object(out)
        }
        Node::Fixed(items) => Value::Array(
            items
                .iter()
                .map(|item| build(item, root, current, arguments))
                .collect::<Result<_, _>>()?,
        ),
        Node::Each { from, item } => {
            let nodes = match fetch_all(from, root, current, arguments)? {
                Value::Array(nodes) => nodes,
                Value::Null => Vec::new(),
                one => vec![one],
            };
            match item {
                None => Value::Array(nodes),
                Some(item) => Value::Array(
                    nodes
                        .iter()
                        .map(|node| build(item, root, node, arguments))
                        .collect::<Result<_, _>>()?,
                ),
            }
        }
    })
}

/// The value `source` gives: one node or `null` for a singular path, a list otherwise.
fn fetch(
    source: &Source,
    root: &Value,
    current: &Value,
    arguments: &Value,
) -> Result<Value, String> {
    let (nodes, list) = query(source, root, current, arguments)?;
    Ok(if list {
        Value::Array(nodes)
    } else {
        nodes.into_iter().next().unwrap_or(Value::Null)
    })
}

/// Every node `source` finds, as a list (the items of a `name[]`): a singular path to a list
/// (`$.flights`) means its items.
fn fetch_all(
    source: &Source,
    root: &Value,
    current: &Value,
    arguments: &Value,
) -> Result<Value, String> {
    let (nodes, list) = query(source, root, current, arguments)?;
    if list {
        return Ok(Value::Array(nodes));
    }
    Ok(match nodes.into_iter().next() {
        Some(Value::Array(items)) => Value::Array(items),
        Some(Value::Null) | None => Value::Array(Vec::new()),
        Some(one) => Value::Array(vec![one]),
    })
}

fn query(
    source: &Source,
    root: &Value,
    current: &Value,
    arguments: &Value,
) -> Result<(Vec<Value>, bool), String> {
    let on = |relative: bool| if relative { current } else { root };
    match source {
        Source::Argument(name) => Ok((arguments.get(name).cloned().into_iter().collect(), false)),
        Source::Path {
            path,
            relative,
            list,
        } => Ok((
            path.query(on(*relative))
                .all()
                .into_iter()
                .cloned()
                .collect(),
            *list,
        )),
        Source::Template {
            parts,
            relative,
            list,
        } => {
            let mut text = String::new();
            for part in parts {
                match part {
                    Piece::Text(t) => text.push_str(t),
                    Piece::Argument(name) => {
                        let value = match arguments.get(name) {
                            Some(Value::String(s)) => s.clone(),
                            Some(Value::Number(n)) => n.to_string(),
                            Some(Value::Bool(b)) => b.to_string(),
                            _ => {
                                return Err(format!(
                                    "the argument {name} is not a string, number or boolean the result mapping can use"
                                ));
                            }
                        };
                        escape_into(&mut text, &value);
                    }
                }
            }
            let path = JsonPath::parse(&text)
                .map_err(|e| format!("the result mapping's path \"{text}\" is not valid: {e}"))?;
            Ok((
                path.query(on(*relative))
                    .all()
                    .into_iter()
                    .cloned()
                    .collect(),
                *list,
            ))
        }
    }
}

/// `value` written inside a quoted JSONPath string (RFC 9535 escapes), so it stays one string.
fn escape_into(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
}

/// The steps of an output key: `flights[].points[0].airport`.
fn steps(key: &str) -> Result<Vec<Step>, String> {
    let mut out = Vec::new();
    for part in key.split('.') {
        let (name, bracket) = match part.find('[') {
            Some(i) => (&part[..i], Some(&part[i..])),
            None => (part, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "\"{key}\" is not a path into the tool's output: write field names joined by \".\", a list's items as name[] and one item as name[0], e.g. \"flights[].carrier_code\""
            ));
        }
        out.push(Step::Field(name.to_string()));
        match bracket {
            None => {}
            Some("[]") => out.push(Step::Each),
            Some(b) => match b
                .strip_prefix('[')
                .and_then(|b| b.strip_suffix(']'))
                .and_then(|n| n.parse::<usize>().ok())
            {
                Some(n) if n < 64 => out.push(Step::Index(n)),
                _ => {
                    return Err(format!(
                        "\"{key}\": \"{b}\" is not [] (every item) or [N] (item N, below 64)"
                    ));
                }
            },
        }
    }
    Ok(out)
}

/// The source a value names; a JSONPath's argument names must be required arguments.
fn source(value: &str, arguments: &[String]) -> Result<Source, String> {
    let known = |name: &str| -> Result<(), String> {
        if arguments.iter().any(|a| a == name) {
            Ok(())
        } else {
            Err(format!(
                "{{{name}}} is not a required argument of the tool; required arguments: {}",
                if arguments.is_empty() {
                    "none".to_string()
                } else {
                    arguments.join(", ")
                }
            ))
        }
    };
    if let Some(name) = value.strip_prefix('{').and_then(|v| v.strip_suffix('}')) {
        known(name)?;
        return Ok(Source::Argument(name.to_string()));
    }
    let relative = value.starts_with('@');
    if !relative && !value.starts_with('$') {
        return Err(format!(
            "\"{value}\" is neither a JSONPath (from the answer's root, $…, or from the current item, @…) nor an argument ({{name}})"
        ));
    }
    // `@` is the current item: the same path, run on that item.
    let text = if relative {
        format!("${}", &value[1..])
    } else {
        value.to_string()
    };
    let (parts, unquoted) = pieces(&text);
    if let Some(name) = unquoted {
        return Err(format!(
            "\"{value}\": {{{name}}} stands outside a quoted string; an argument may only fill a string, e.g. '{{{name}}}'"
        ));
    }
    let list = !super::keep::is_singular(&text);
    let names: Vec<&String> = parts
        .iter()
        .filter_map(|p| match p {
            Piece::Argument(name) => Some(name),
            Piece::Text(_) => None,
        })
        .collect();
    // Checked with a stand-in for each argument: the path must parse whatever the value.
    let sample: String = parts
        .iter()
        .map(|p| match p {
            Piece::Text(t) => t.as_str(),
            Piece::Argument(_) => "x",
        })
        .collect();
    JsonPath::parse(&sample).map_err(|e| {
        format!("\"{value}\" is not a JSONPath (RFC 9535): {e}; e.g. \"$.flights[*]\" or \"@.origin.code_iata\"")
    })?;
    if names.is_empty() {
        let path = JsonPath::parse(&text).map_err(|e| format!("\"{value}\": {e}"))?;
        return Ok(Source::Path {
            path,
            relative,
            list,
        });
    }
    for name in names {
        known(name)?;
    }
    Ok(Source::Template {
        parts,
        relative,
        list,
    })
}

/// Splits a JSONPath at its `{argument}`s inside quoted strings; also returns the first
/// `{name}` found outside one.
fn pieces(text: &str) -> (Vec<Piece>, Option<String>) {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut unquoted = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                } else if c == '{' {
                    let mut name = String::new();
                    let mut closed = false;
                    let mut look = chars.clone();
                    for n in look.by_ref() {
                        if n == '}' {
                            closed = true;
                            break;
                        }
                        name.push(n);
                    }
                    if closed
                        && !name.is_empty()
                        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    {
                        parts.push(Piece::Text(std::mem::take(&mut current)));
                        parts.push(Piece::Argument(name));
                        chars = look;
                        continue;
                    }
                }
                current.push(c);
            }
            None => {
                if c == '\'' || c == '"' {
                    quote = Some(c);
                } else if c == '{' && unquoted.is_none() {
                    let name: String = chars.clone().take_while(|n| *n != '}').collect();
                    unquoted = Some(name);
                }
                current.push(c);
            }
        }
    }
    parts.push(Piece::Text(current));
    parts.retain(|p| !matches!(p, Piece::Text(t) if t.is_empty()));
    (parts, unquoted)
}

impl Draft {
    /// Puts `source` at `steps`, or says why it cannot go there.
    fn place(&mut self, steps: &[Step], key: &str, source: Source) -> Result<(), String> {
        let Some((first, rest)) = steps.split_first() else {
            if self.source.is_some() {
                return Err("is given twice".into());
            }
            self.source = Some((key.to_string(), source));
            return Ok(());
        };
        let next = match first {
            Step::Field(name) => self.fields.entry(name.clone()).or_default(),
            Step::Each => self.each.get_or_insert_with(Box::default),
            Step::Index(n) => self.items.entry(*n).or_default(),
        };
        next.place(rest, key, source)
    }

    /// The node this draft becomes where `schema` describes the output (`at` is its key, for
    /// messages), checked: every field the schema has, every required one given.
    fn check(self, schema: &Value, at: &str, problems: &mut Vec<(String, String)>) -> Option<Node> {
        let schema = not_null(schema);
        let has_children = !self.fields.is_empty() || self.each.is_some() || !self.items.is_empty();
        match (self.source, has_children) {
            (Some((_, source)), false) => return Some(Node::Leaf(source)),
            (Some(_), true) => {
                problems.push((
                    key_or_root(at),
                    "is mapped both whole and part by part; keep one of the two".into(),
                ));
                return None;
            }
            (None, _) => {}
        }
        let is_list = has_type(schema, "array");
        if !self.fields.is_empty() || !is_list {
            let properties = schema.get("properties").and_then(Value::as_object);
            let Some(properties) = properties else {
                let message = if self.fields.is_empty() {
                    "is not a list in the tool's output: map it without [] or [N]"
                } else {
                    "is not an object in the tool's output, so it has no fields to map"
                };
                problems.push((key_or_root(at), message.into()));
                return None;
            };
            if self.each.is_some() || !self.items.is_empty() {
                problems.push((
                    key_or_root(at),
                    "is not a list in the tool's output: map it without [] or [N]".into(),
                ));
            }
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for name in &required {
                if !self.fields.contains_key(*name) {
                    problems.push((
                        join(at, name),
                        "is a required field of the tool's output and has no source: map it to a JSONPath into the answer (or to an argument, {name})".to_string(),
                    ));
                }
            }
            let mut out = BTreeMap::new();
            for (name, draft) in self.fields {
                let key = join(at, &name);
                match properties.get(&name) {
                    Some(sub) => {
                        if let Some(node) = draft.check(sub, &key, problems) {
                            out.insert(name, node);
                        }
                    }
                    None => problems.push((
                        key,
                        format!(
                            "the tool's output has no field \"{name}\" here; its fields: {}",
                            properties.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    )),
                }
            }
            return Some(Node::Object(out));
        }
        // A list: `name[]` (with its own source) or `name[N]`.
        let Some(items_schema) = schema.get("items") else {
            problems.push((
                key_or_root(at),
                "is a list in the tool's output whose items it does not describe; map it whole"
                    .into(),
            ));
            return None;
        };
        if let Some(each) = self.each {
            if !self.items.is_empty() {
                problems.push((
                    format!("{at}[]"),
                    format!(
                        "{at} is mapped both item by item ([N]) and for every node ([]); choose one"
                    ),
                ));
                return None;
            }
            let each_key = format!("{at}[]");
            let each = *each;
            let Some((_, from)) = each.source.as_ref().map(|(k, s)| (k.clone(), s.clone())) else {
                problems.push((
                    each_key,
                    "has fields but no source: bind it to the JSONPath whose nodes become the list's items, e.g. \"$.flights[*]\"".into(),
                ));
                return None;
            };
            let has_fields =
                !each.fields.is_empty() || each.each.is_some() || !each.items.is_empty();
            let item = if has_fields {
                let mut each = each;
                each.source = None;
                Some(Box::new(each.check(items_schema, &each_key, problems)?))
            } else {
                None
            };
            return Some(Node::Each { from, item });
        }
        let count = self.items.len();
        if self.items.keys().copied().ne(0..count) {
            problems.push((
                key_or_root(at),
                format!(
                    "maps items {:?}: a fixed list is mapped from [0] on, without gaps",
                    self.items.keys().collect::<Vec<_>>()
                ),
            ));
            return None;
        }
        let mut out = Vec::new();
        for (n, draft) in self.items {
            out.push(draft.check(items_schema, &format!("{at}[{n}]"), problems)?);
        }
        Some(Node::Fixed(out))
    }
}

/// Whether `schema`'s type is `kind` (alone, or in a list of types).
fn has_type(schema: &Value, kind: &str) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == kind,
        Some(Value::Array(types)) => types.iter().any(|t| t.as_str() == Some(kind)),
        _ => false,
    }
}

/// The schema without its `null` alternative (an optional field's `anyOf`, or a type list
/// with `"null"`).
fn not_null(schema: &Value) -> &Value {
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array) {
            let real: Vec<&Value> = options
                .iter()
                .filter(|o| o.get("type").and_then(Value::as_str) != Some("null"))
                .collect();
            if let [one] = real.as_slice() {
                return one;
            }
        }
    }
    schema
}

fn join(at: &str, name: &str) -> String {
    if at.is_empty() {
        name.to_string()
    } else {
        format!("{at}.{name}")
    }
}

fn key_or_root(at: &str) -> String {
    if at.is_empty() {
        "(the whole result)".into()
    } else {
        at.to_string()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn input() -> Value {
        json!({
            "type": "object",
            "required": ["code", "date"],
            "properties": {"code": {"type": "string"}, "date": {"type": "string"}, "note": {"type": "string"}}
        })
    }

    fn output() -> Value {
        json!({
            "type": "object",
            "required": ["flights"],
            "properties": {"flights": {"type": "array", "items": {
                "type": "object",
                "required": ["code", "date", "points"],
                "properties": {
                    "code": {"type": "string"},
                    "date": {"type": "string"},
                    "points": {"type": "array", "items": {
                        "type": "object",
                        "required": ["airport"],
                        "properties": {
                            "airport": {"type": "string"},
                            "departure": {"anyOf": [
                                {"type": "object", "properties": {"gate": {"type": ["string", "null"]}}},
                                {"type": "null"}
                            ]}
                        }
                    }}
                }
            }}}
        })
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn good() -> Vec<(String, String)> {
        pairs(&[
            (
                "flights[]",
                "$.flights[?@.out >= '{date}T00' && @.out <= '{date}T99']",
            ),
            ("flights[].code", "@.ident"),
            ("flights[].date", "{date}"),
            ("flights[].points[0].airport", "@.origin.iata"),
            ("flights[].points[0].departure.gate", "@.gate"),
            ("flights[].points[1].airport", "@.destination.iata"),
        ])
    }

    fn answer() -> Value {
        json!({"flights": [
            {"ident": "BA117", "out": "2026-12-01T09:00:00Z", "origin": {"iata": "LHR"}, "destination": {"iata": "JFK"}, "gate": "A1"},
            {"ident": "BA117", "out": "2026-12-02T09:00:00Z", "origin": {"iata": "LHR"}, "destination": {"iata": "JFK"}, "gate": null}
        ]})
    }

    #[test]
    fn a_mapping_builds_the_typed_shape_from_the_nodes_that_answer_the_call() {
        let shape =
            Shape::compile(&good(), &input(), &output()).unwrap_or_else(|p| panic!("{p:?}"));
        let out = shape
            .apply(&answer(), &json!({"code": "BA117", "date": "2026-12-02"}))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            out,
            json!({"flights": [{
                "code": "BA117",
                "date": "2026-12-02",
                "points": [
                    {"airport": "LHR", "departure": {"gate": null}},
                    {"airport": "JFK"}
                ]
            }]})
        );
        let none = shape
            .apply(&answer(), &json!({"code": "BA117", "date": "2026-12-09"}))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(none, json!({"flights": []}), "no flight that day");
    }

    #[test]
    fn an_argument_fills_a_quoted_string_and_cannot_change_the_path() {
        let shape =
            Shape::compile(&good(), &input(), &output()).unwrap_or_else(|p| panic!("{p:?}"));
        for date in ["' || @.out > '", "x'] | $..*['", "\\", "\u{1}"] {
            let out = shape
                .apply(&answer(), &json!({"code": "BA117", "date": date}))
                .unwrap_or_else(|e| panic!("{date:?}: {e}"));
            assert_eq!(out, json!({"flights": []}), "{date:?} matched nothing");
        }
    }

    #[test]
    fn every_mistake_is_named_with_its_key() {
        let bad = pairs(&[
            ("flights[]", "$.flights[*]"),
            ("flights[].code", "@.ident"),
            ("flights[].colour", "@.colour"),
            ("flights[].points[1].airport", "@.destination.iata"),
            ("flights[].date", "{when}"),
            ("flights[].points[0].airport", "$.flights[?@.x == {code}]"),
            ("flights[].points[0].departure.gate", "gate"),
            ("flights[].code[]", "@.x"),
        ]);
        let problems = Shape::compile(&bad, &input(), &output())
            .err()
            .unwrap_or_default();
        let has =
            |key: &str, part: &str| problems.iter().any(|(k, m)| k == key && m.contains(part));
        assert!(
            has("flights[].date", "{when} is not a required argument"),
            "{problems:#?}"
        );
        assert!(
            has("flights[].points[0].airport", "outside a quoted string"),
            "{problems:#?}"
        );
        assert!(
            has("flights[].points[0].departure.gate", "neither a JSONPath"),
            "{problems:#?}"
        );
        assert!(
            has("flights[].code", "is mapped both whole and part by part"),
            "{problems:#?}"
        );
        let shape_problems = Shape::compile(
            &pairs(&[
                ("flights[].code", "@.ident"),
                ("flights[].colour", "@.colour"),
                ("flights[].points[1].airport", "@.destination.iata"),
            ]),
            &input(),
            &output(),
        )
        .err()
        .unwrap_or_default();
        let says = |key: &str, part: &str| {
            shape_problems
                .iter()
                .any(|(k, m)| k == key && m.contains(part))
        };
        assert!(
            says("flights[]", "has fields but no source"),
            "{shape_problems:#?}"
        );
        let unsourced = Shape::compile(
            &pairs(&[
                ("flights[]", "$.flights[*]"),
                ("flights[].code", "@.ident"),
                ("flights[].colour", "@.colour"),
                ("flights[].points[1].airport", "@.destination.iata"),
            ]),
            &input(),
            &output(),
        )
        .err()
        .unwrap_or_default();
        let says =
            |key: &str, part: &str| unsourced.iter().any(|(k, m)| k == key && m.contains(part));
        assert!(says("flights[].date", "required field"), "{unsourced:#?}");
        assert!(
            says("flights[].colour", "no field \"colour\""),
            "{unsourced:#?}"
        );
        assert!(
            says("flights[].points", "from [0] on, without gaps"),
            "{unsourced:#?}"
        );
    }

    #[test]
    fn a_missing_required_top_field_is_named() {
        let problems = Shape::compile(&[], &input(), &output())
            .err()
            .unwrap_or_default();
        assert_eq!(
            problems.first().map(|(k, _)| k.as_str()),
            Some("flights"),
            "{problems:#?}"
        );
    }
}
