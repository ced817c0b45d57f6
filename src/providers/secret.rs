//! Credentials that never print.

use std::fmt;

/// A credential read from the environment. `Debug` and `Display` show `[redacted]`, so a
/// secret can sit in a struct that is logged without leaking.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a credential.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The credential itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_do_not_print() {
        let s = Secret::new("duffel_test_abc");
        assert_eq!(format!("{s:?} {s}"), "Secret([redacted]) [redacted]");
        assert_eq!(s.expose(), "duffel_test_abc");
    }
}
