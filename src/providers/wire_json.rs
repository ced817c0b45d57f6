//! `wire_json`: the one place a provider's answer body is parsed from JSON text into its wire
//! types (every Duffel answer, and the answers the Amadeus adapter decodes into its types).
//!
//! Parsing is most of a healthy search's cost (a 62 KB offer list, about 19 instructions per
//! byte with serde_json), so it is the part most likely to be swapped for a faster parser. This
//! module keeps that a one-function change: callers see [`from_slice`] and a [`ParseError`]
//! that only displays, never the parser's own types. Whatever parser sits here must keep what
//! the callers rely on: strings without escapes are lent by `visit_borrowed_str` (the wire
//! types' [`WireStr`](super::wire_str::WireStr) borrows them), invalid UTF-8 and trailing text
//! are errors (never undefined behaviour: no `_unchecked` parsing of network input), and an
//! error's text names what is wrong and where (``missing field `id` at line 1 column 5093``),
//! because it goes into the `malformed` error an operator reads.
//!
//! SIMD parsers were measured against it on the captured 62 KB Duffel answer (BENCHMARKS.md,
//! "The healthy call's parsing: a SIMD parser"), built as users build it (no `-C
//! target-cpu=native`): per parse, serde_json's `from_slice` 1,142 k instructions, sonic-rs
//! 0.5.10 993 k (its AVX2 code is chosen at compile time only, so this is its SSE2 fallback),
//! simd-json 0.19.0 1,083 k, and serde_json over text checked once, as here, 1,003 k. A SIMD
//! parser would be a dependency for 1 % more, so serde_json stays. Parsing only the members the
//! wire types read (a first pass copying them out of the body, the other 84 % of the tokens
//! skipped) was measured too and not kept: 1,083 k → 1,150 k instructions per decode with the
//! skipped members' grammar checked, −3 % without checking it (BENCHMARKS.md, session 44).

use std::fmt;

use serde::Deserialize;

/// A body that is not UTF-8, not JSON, or not JSON of the expected shape. Its text names the
/// field or token and the position, in serde_json's words.
#[derive(Debug)]
pub(crate) enum ParseError {
    /// A byte sequence that is not UTF-8, at this 1-based line and byte column.
    Utf8 { line: usize, column: usize },
    /// Anything else, as serde_json words it.
    Json(serde_json::Error),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Utf8 { line, column } => {
                write!(f, "invalid UTF-8 at line {line} column {column}")
            }
            Self::Json(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl std::error::Error for ParseError {}

/// Parses a whole body as `T`, which may borrow strings from `bytes`.
///
/// The body is checked to be UTF-8 once, as a whole, and then parsed as text: serde_json's
/// `from_slice` checks each string it lends on its own instead, which on a search answer's
/// hundreds of short keys and values cost 11 % of the parse, where one pass over the body
/// costs 2 %. The one difference in what is accepted: a body with invalid UTF-8 inside a
/// string no wire type reads is now refused too (it is not JSON, RFC 8259 §8.1).
pub(crate) fn from_slice<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, ParseError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        let before = &bytes[..at];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        ParseError::Utf8 {
            line,
            column: at - line_start + 1,
        }
    })?;
    serde_json::from_str(text).map_err(ParseError::Json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::wire_str::WireStr;

    #[derive(Debug, serde::Deserialize)]
    struct Probe<'a> {
        #[serde(borrow)]
        id: WireStr<'a>,
        #[serde(borrow, default)]
        names: Vec<WireStr<'a>>,
        #[serde(default)]
        count: Option<u32>,
    }

    #[test]
    fn lends_unescaped_strings_from_the_body() {
        let body =
            br#"{"id": "off_1", "names": ["BA", "caf\u00e9"], "extra": {"x": [1]}, "count": 2}"#;
        let p: Probe<'_> = from_slice(body).expect("parses");
        let within = |s: &str| body.as_ptr_range().contains(&s.as_ptr());
        assert_eq!((&*p.id, p.count), ("off_1", Some(2)));
        assert!(
            within(&p.id),
            "an unescaped string is borrowed from the body"
        );
        assert!(within(&p.names[0]));
        assert_eq!(&*p.names[1], "café");
        assert!(
            !within(&p.names[1]),
            "an escaped string is unescaped into its own"
        );
    }

    #[test]
    fn errors_name_what_is_wrong_and_where() {
        let cases: [(&[u8], &str); 8] = [
            (
                br#"{"names": []}"#,
                "missing field `id` at line 1 column 13",
            ),
            (
                br#"{"id": "a", "count": "7"}"#,
                "invalid type: string \"7\", expected u32 at line 1 column 24",
            ),
            (
                br#"{"id": "a""#,
                "EOF while parsing an object at line 1 column 10",
            ),
            (
                br#"{"id": "a"} x"#,
                "trailing characters at line 1 column 13",
            ),
            (
                b"<html>502 Bad Gateway</html>",
                "expected value at line 1 column 1",
            ),
            (b"{\"id\": \"\xff\"}", "invalid UTF-8 at line 1 column 9"),
            // In a string no field reads, and on a later line.
            (
                b"{\"id\": \"a\",\n \"x\": \"caf\xc3\"}",
                "invalid UTF-8 at line 2 column 11",
            ),
            // An escaped lone surrogate is not a string either.
            (
                br#"{"id": "\ud800"}"#,
                "unexpected end of hex escape at line 1 column 15",
            ),
        ];
        for (body, want) in cases {
            let err = from_slice::<Probe<'_>>(body).expect_err("malformed");
            assert_eq!(err.to_string(), want, "{}", String::from_utf8_lossy(body));
        }
    }
}
