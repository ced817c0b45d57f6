//! A path template (`/flights/{ident}/position`) and its rendering from a call's arguments.
//!
//! Arguments never change where a request goes: each parameter's value fills exactly one path
//! segment, percent-encoded byte by byte except for the unreserved characters of RFC 3986
//! (`A-Z a-z 0-9 - . _ ~`). So `/`, `?`, `#` and `%` in a value are `%2F`, `%3F`, `%23` and
//! `%25` (a value cannot smuggle in an already-encoded slash either), non-ASCII text is its
//! UTF-8 bytes encoded, and a value that is `.` or `..` (which a server would read as "this
//! segment" or "the parent") or empty (which would merge two segments) is refused. The host is
//! never part of the template: the provider's base URL comes from configuration alone.
//!
//! The template's fixed text is the operator's, and goes as written (`/v1/items:search` keeps
//! its `:`): it must be valid path text (RFC 3986 `pchar`: unreserved characters, `%` and two
//! hex digits, ``!$&'()*+,;=:@``), and anything else (a space, `?`, `#`, non-ASCII text) is
//! refused when the configuration is read, with what to write instead.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::Value;

/// Every byte but RFC 3986's unreserved characters is encoded in a path segment (and in a
/// query name or value, `request.rs`).
pub(super) const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// One part of a template's segment: fixed text or a parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Param(String),
}

/// A parsed path template: segments after the base URL's path, each fixed text, one
/// parameter, or text around parameters (`v1/{id}.json`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathTemplate {
    segments: Vec<Vec<Part>>,
}

impl PathTemplate {
    /// Parses `template`, which starts with `/`; the error says what to fix.
    pub fn parse(template: &str) -> Result<Self, String> {
        let Some(rest) = template.strip_prefix('/') else {
            return Err(format!(
                "\"{template}\" must start with \"/\" (it is appended to the provider's base_url), e.g. \"/flights/{{ident}}\""
            ));
        };
        if template.contains(['?', '#']) || template.contains("://") {
            return Err(format!(
                "\"{template}\" may hold only a path: put query parameters in [request.query], and the host in the provider's base_url"
            ));
        }
        let mut segments = Vec::new();
        for raw in rest.split('/') {
            if raw == "." || raw == ".." {
                return Err(format!(
                    "\"{template}\" has a \"{raw}\" segment; write the path it means"
                ));
            }
            segments.push(parse_segment(raw, template)?);
        }
        Ok(PathTemplate { segments })
    }

    /// The parameter names, in order of appearance.
    pub fn params(&self) -> Vec<&str> {
        self.segments
            .iter()
            .flatten()
            .filter_map(|p| match p {
                Part::Param(name) => Some(name.as_str()),
                Part::Text(_) => None,
            })
            .collect()
    }

    /// The encoded path (starting with `/`) for `arguments`, or the argument that cannot fill
    /// its segment and why.
    pub fn render(&self, arguments: &Value) -> Result<String, (String, String)> {
        let mut out = String::new();
        for segment in &self.segments {
            out.push('/');
            for part in segment {
                match part {
                    Part::Text(text) => out.push_str(text),
                    Part::Param(name) => {
                        let value = segment_value(arguments.get(name))
                            .map_err(|why| (name.clone(), why))?;
                        out.extend(utf8_percent_encode(&value, SEGMENT));
                    }
                }
            }
        }
        Ok(out)
    }
}

fn parse_segment(raw: &str, template: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut rest = raw;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            return Err(format!("\"{template}\" opens a \"{{\" it never closes"));
        };
        if open > 0 {
            parts.push(Part::Text(rest[..open].to_string()));
        }
        let name = &rest[open + 1..open + close];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "\"{template}\": \"{{{name}}}\" is not a parameter; name an argument with letters, digits and _ (e.g. {{ident}})"
            ));
        }
        parts.push(Part::Param(name.to_string()));
        rest = &rest[open + close + 1..];
    }
    if rest.contains('}') {
        return Err(format!("\"{template}\" closes a \"}}\" it never opened"));
    }
    if !rest.is_empty() {
        parts.push(Part::Text(rest.to_string()));
    }
    for part in &parts {
        if let Part::Text(text) = part {
            path_text(text, template)?;
        }
    }
    Ok(parts)
}

/// Checks that a template's fixed `text` is valid path text as written (RFC 3986 `pchar`), so
/// it can go unencoded; the error names the first character that is not, and what to write.
fn path_text(text: &str, template: &str) -> Result<(), String> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let allowed = c.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&c);
        if c == b'%' {
            let hex = |at: usize| bytes.get(at).is_some_and(u8::is_ascii_hexdigit);
            if !(hex(i + 1) && hex(i + 2)) {
                return Err(format!(
                    "\"{template}\" has a \"%\" not followed by two hex digits: write a literal % as %25"
                ));
            }
            i += 3;
            continue;
        }
        if !allowed {
            let ch = text[i..].chars().next().unwrap_or_default();
            return Err(format!(
                "\"{template}\" holds {ch:?}, which is not valid in a URL path: write it percent-encoded as the provider expects it (a space is %20), or make it an argument {{parameter}}"
            ));
        }
        i += 1;
    }
    Ok(())
}

/// The text of one path parameter: a string (not empty, not `.` or `..`), a number or a
/// boolean.
fn segment_value(value: Option<&Value>) -> Result<String, String> {
    let text = match value {
        None | Some(Value::Null) => {
            return Err("is required: it is part of the request's path".into());
        }
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(_) => {
            return Err(
                "must be a string or a number: it is one segment of the request's path".into(),
            );
        }
    };
    match text.as_str() {
        "" => Err("must not be empty: it is one segment of the request's path".into()),
        "." | ".." => Err(format!(
            "cannot be \"{text}\": it is one segment of the request's path"
        )),
        // Encoded, a `/` or a backslash stays in its segment here, but a proxy before the provider that
        // decodes before routing would follow it out of the path the tool names (as callback
        // URLs are refused for the same reason).
        _ if text.contains(['/', '\\']) => Err(format!(
            "cannot hold a \"/\" or a backslash: it is one segment of the request's path, and \"{text}\" would read as several"
        )),
        _ => Ok(text),
    }
}
