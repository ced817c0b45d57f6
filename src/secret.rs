//! Credentials that never print, and the digest that names an account without them.

use std::fmt;

use sha2::{Digest, Sha256};

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

    /// A name for the account this credential belongs to, safe to store, log and show: 16 hex
    /// digits of its unkeyed SHA-256. Enough to keep accounts apart, and, for a credential
    /// with a token's entropy, nothing that leads back to it. The same credential gives the
    /// same digest in every process, so replicas sharing a database agree on it.
    pub fn digest(&self) -> String {
        let digest = Sha256::digest(self.0.as_bytes());
        digest[..8].iter().map(|b| format!("{b:02x}")).collect()
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

    #[test]
    fn a_digest_names_the_account_without_the_credential() {
        let a = Secret::new("duffel_test_abc");
        assert_eq!(a.digest().len(), 16);
        assert!(a.digest().chars().all(|c| c.is_ascii_hexdigit()));
        assert!(!a.digest().contains("abc"));
        assert_eq!(a.digest(), Secret::new("duffel_test_abc").digest());
        assert_ne!(a.digest(), Secret::new("duffel_test_abd").digest());
    }
}
