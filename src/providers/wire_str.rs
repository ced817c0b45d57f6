//! `WireStr`: a string of a provider's answer, borrowed from the body it was parsed from unless
//! the JSON text escapes a character (then it is unescaped into its own `String`).
//!
//! A flight search answer is tens of kilobytes holding hundreds of strings, of which the tool's
//! result keeps a few dozen. Owning each one as a `String` cost an allocation and a copy while
//! parsing, a second copy when the result was built, and two frees; on a healthy search that
//! was a large part of the call's cost. serde borrows a `&str` field only from text without
//! escapes (and fails on an escaped one, which a provider may send at any time), and a
//! `Cow<str>` field only when it is not inside an `Option` or a `Vec`; `WireStr` borrows
//! wherever it sits and accepts every JSON string `String` accepts, with the same error text
//! for anything else, so a wire type's fields can switch to it without changing what parses.

use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;

use serde::de::{self, Deserialize, Deserializer, Visitor};

/// A string of a provider's answer; derefs to `str`. Fields of this type need
/// `#[serde(borrow)]` so the derived impl ties the parsed value to the body's lifetime. It has
/// no `Display` on purpose: `to_string()` then resolves to `str`'s, a plain copy, instead of
/// going through the formatter.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct WireStr<'a>(Cow<'a, str>);

impl Deref for WireStr<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for WireStr<'_> {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for WireStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for WireStr<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(StrVisitor)
    }
}

struct StrVisitor;

impl<'de> Visitor<'de> for StrVisitor {
    type Value = WireStr<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The words serde uses for `String`, so a malformed answer reads as it did.
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(WireStr(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(WireStr(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(WireStr(Cow::Owned(v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(borrow)]
        plain: WireStr<'a>,
        #[serde(borrow, default)]
        maybe: Option<WireStr<'a>>,
        #[serde(borrow, default)]
        many: Vec<WireStr<'a>>,
    }

    #[test]
    fn borrows_plain_text_and_owns_escaped_text() {
        let body = br#"{"plain": "BA", "maybe": "caf\u00e9 \"x\"", "many": ["a", "b\/c"]}"#;
        let p: Probe<'_> = serde_json::from_slice(body).expect("parses");
        assert!(matches!(p.plain.0, Cow::Borrowed("BA")));
        assert_eq!(p.maybe.as_deref(), Some("café \"x\""));
        assert!(matches!(p.maybe.map(|m| m.0), Some(Cow::Owned(_))));
        assert!(matches!(p.many[0].0, Cow::Borrowed("a")));
        assert_eq!(&*p.many[1], "b/c");
    }

    #[test]
    fn refuses_what_a_string_field_refuses_in_the_same_words() {
        #[derive(serde::Deserialize)]
        #[allow(dead_code)]
        struct Owned {
            plain: String,
        }
        for body in [
            &br#"{"plain": 5}"#[..],
            br#"{"plain": null}"#,
            br#"{"plain": ["x"]}"#,
        ] {
            let ours = serde_json::from_slice::<Probe<'_>>(body)
                .err()
                .map(|e| e.to_string());
            let serdes = serde_json::from_slice::<Owned>(body)
                .err()
                .map(|e| e.to_string());
            assert!(ours.is_some());
            assert_eq!(ours, serdes, "{}", String::from_utf8_lossy(body));
        }
    }
}
