//! [`ProtocolError`]: a request body that is not a call in its protocol.
//!
//! Its own small type, not the HTTP edge's error, so the parsers stay pure: the edge answers
//! it as a 400 with the message, the fuzz targets read the message directly, and nothing has
//! to render an HTTP response to learn what went wrong.

use std::fmt;

/// Why a body is refused as a whole; the message says what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError {
    message: String,
}

impl ProtocolError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        ProtocolError {
            message: message.into(),
        }
    }

    /// What is wrong and what to send instead.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ProtocolError {}
