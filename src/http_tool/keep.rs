//! Which fields of a provider's answer a configured tool keeps: one JSONPath (RFC 9535) per
//! result field, compiled once when the configuration is read.
//!
//! A path that can name one node at most (only names and indexes: `$.flight.status`,
//! `$.flights[0]`) keeps that node, or `null` when the answer has none. Any other path
//! (wildcards, `..`, filters, slices, unions: `$.flights[*].ident`) keeps the list of every
//! node it finds, possibly empty. So the shape of a kept field is decided by the
//! configuration, never by how many nodes one answer happens to have, and the output schema can
//! describe it.

use serde_json::{Map, Value};
use serde_json_path::JsonPath;

/// One kept field.
#[derive(Debug, Clone)]
struct Field {
    name: String,
    path: JsonPath,
    list: bool,
}

/// The compiled result mapping of one tool.
#[derive(Debug, Clone)]
pub struct Keep {
    fields: Vec<Field>,
}

impl Keep {
    /// Compiles `fields` (result field → JSONPath); each error names its field and says what
    /// is wrong with the path.
    pub fn compile(fields: &[(String, String)]) -> Result<Self, Vec<(String, String)>> {
        let mut out = Vec::new();
        let mut errors = Vec::new();
        for (name, path) in fields {
            match JsonPath::parse(path) {
                Ok(compiled) => out.push(Field {
                    name: name.clone(),
                    path: compiled,
                    list: !is_singular(path),
                }),
                Err(e) => errors.push((
                    name.clone(),
                    format!(
                        "\"{path}\" is not a JSONPath (RFC 9535): {e}; e.g. \"$.flights[0].status\""
                    ),
                )),
            }
        }
        if errors.is_empty() {
            Ok(Keep { fields: out })
        } else {
            Err(errors)
        }
    }

    /// The names of the kept fields, in the configuration's order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|f| f.name.as_str())
    }

    /// The kept result of `answer`: an object with one entry per field.
    pub fn apply(&self, answer: &Value) -> Value {
        let mut kept = Map::new();
        for field in &self.fields {
            let nodes = field.path.query(answer);
            let value = if field.list {
                Value::Array(nodes.all().into_iter().cloned().collect())
            } else {
                nodes.all().first().map_or(Value::Null, |v| (*v).clone())
            };
            kept.insert(field.name.clone(), value);
        }
        Value::Object(kept)
    }
}

/// Whether `path` is a singular query (RFC 9535, 2.3.5.1): names and indexes only, no `..`,
/// no wildcard, filter, slice or union. Quoted names are skipped, so `$['a*b']` is singular.
pub(super) fn is_singular(path: &str) -> bool {
    let mut outside = String::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in path.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None if c == '\'' || c == '"' => quote = Some(c),
            None => outside.push(c),
        }
    }
    !(outside.contains("..") || outside.contains(['*', '?', ':', ',']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn singular_paths_keep_one_node_and_others_a_list() {
        assert!(is_singular("$.flights[0].status"));
        assert!(is_singular("$['a*b']"));
        assert!(!is_singular("$.flights[*].ident"));
        assert!(!is_singular("$..ident"));
        assert!(!is_singular("$.flights[0:2]"));
        assert!(!is_singular("$.flights[?@.x == 1]"));
    }
}
