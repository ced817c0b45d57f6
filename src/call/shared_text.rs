//! A text written into many answers, with its JSON escaping made once.
//!
//! A remembered result's `content` (`last_good.rs`) is repeated by every stale answer and every
//! `fresh_for` repeat of the same arguments; escaping its kilobytes again for each of them was
//! the largest piece of a fallback answer that is ours (BENCHMARKS.md). The envelope copies the
//! escaped form ([`super::envelope::Envelope::to_json_bytes`]).

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

/// A text and its JSON escaping, made the first time an answer is serialized with it and kept;
/// cheap to clone (an `Arc`).
#[derive(Clone)]
pub(crate) struct SharedText(Arc<SharedTextInner>);

struct SharedTextInner {
    raw: String,
    /// `raw` as the inside of a JSON string, without its quotes.
    escaped: OnceLock<String>,
}

impl SharedText {
    /// Wraps a text; nothing is escaped until an answer is serialized with it.
    pub(crate) fn new(raw: String) -> Self {
        SharedText(Arc::new(SharedTextInner {
            raw,
            escaped: OnceLock::new(),
        }))
    }

    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        &self.0.raw
    }

    /// The text as the inside of a JSON string (without its quotes), escaped the first time.
    pub(crate) fn escaped(&self) -> &str {
        self.0.escaped.get_or_init(|| {
            // A string always serializes; the quotes serde_json writes around it are trimmed.
            let quoted = serde_json::to_string(&self.0.raw).unwrap_or_default();
            let inside = quoted.strip_prefix('"').and_then(|q| q.strip_suffix('"'));
            inside.unwrap_or_default().to_string()
        })
    }
}

impl Deref for SharedText {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for SharedText {
    fn from(raw: &str) -> Self {
        SharedText::new(raw.to_string())
    }
}

impl PartialEq for SharedText {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl fmt::Debug for SharedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}
