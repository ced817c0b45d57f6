//! [`ClientName`]: how a client is named wherever it matters who called (job ownership, the
//! idempotency namespace, logs).
//!
//! Three kinds of name exist, and they cannot collide:
//! - a configured client's own name (letters, digits, `_`, `-`, `.`; at most 64 characters;
//!   never `local`, `admin` or starting with `key-`);
//! - `key-<8 hex>` for a key from the flat key list, anonymous otherwise: the first 4 bytes of
//!   the key's SHA-256 digest, enough to tell keys apart in a job listing and far too little to
//!   test guesses of the key against;
//! - `local` when authentication is off (every caller is the same local client), and `admin`
//!   for the admin key.

use std::fmt;
use std::sync::{Arc, LazyLock};

/// The longest configured client name.
const MAX_LEN: usize = 64;

/// The prefix of names derived from a key's digest.
const KEY_PREFIX: &str = "key-";

/// A client's name. Cheap to clone (shared text).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientName(Arc<str>);

/// Why a configured name was refused; the text says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidClientName(pub String);

impl fmt::Display for InvalidClientName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidClientName {}

impl ClientName {
    /// The one client there is when authentication is off.
    pub fn local() -> Self {
        static LOCAL: LazyLock<ClientName> = LazyLock::new(|| ClientName(Arc::from("local")));
        LOCAL.clone()
    }

    /// The admin key's caller.
    pub fn admin() -> Self {
        static ADMIN: LazyLock<ClientName> = LazyLock::new(|| ClientName(Arc::from("admin")));
        ADMIN.clone()
    }

    /// The name of an anonymous key (one of the flat key list): `key-` and the first 4 bytes
    /// of its SHA-256 digest in hex.
    pub fn for_key_digest(digest: &[u8; 32]) -> Self {
        let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
        ClientName(Arc::from(format!("{KEY_PREFIX}{hex}")))
    }

    /// A configured client's name, checked: it must not be empty, too long, contain anything
    /// but letters, digits, `_`, `-` and `.`, or take a name the gateway gives itself.
    pub fn configured(name: &str) -> Result<Self, InvalidClientName> {
        if name.is_empty() || name.len() > MAX_LEN {
            return Err(InvalidClientName(format!(
                "a client name is 1 to {MAX_LEN} characters long; \"{name}\" is not"
            )));
        }
        if let Some(bad) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        {
            return Err(InvalidClientName(format!(
                "client name \"{name}\" contains {bad:?}; use letters, digits, '_', '-' and '.'"
            )));
        }
        if name == "local" || name == "admin" || name.starts_with(KEY_PREFIX) {
            return Err(InvalidClientName(format!(
                "client name \"{name}\" is one the gateway gives itself (local, admin, key-…); choose another"
            )));
        }
        Ok(ClientName(Arc::from(name)))
    }

    /// A name read back from the gateway's own store, where only names made by the
    /// constructors above were written.
    pub fn stored(name: &str) -> Self {
        ClientName(Arc::from(name))
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ClientName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_names_show_four_bytes_of_the_digest() {
        let mut digest = [0u8; 32];
        digest[..5].copy_from_slice(&[0x0a, 0xbc, 0xde, 0xf1, 0x99]);
        assert_eq!(ClientName::for_key_digest(&digest).as_str(), "key-0abcdef1");
    }

    #[test]
    fn configured_names_cannot_take_the_gateways_own() {
        assert_eq!(
            ClientName::configured("travel-app_2.eu").map(|n| n.to_string()),
            Ok("travel-app_2.eu".to_string())
        );
        for bad in [
            "",
            "local",
            "admin",
            "key-0abcdef1",
            "a b",
            "é",
            &"x".repeat(65),
        ] {
            let refused = ClientName::configured(bad);
            assert!(refused.is_err(), "{bad:?} must be refused");
        }
        let why = ClientName::configured("a/b").err().map(|e| e.0);
        assert!(why.is_some_and(|w| w.contains("'/'") && w.contains("use letters")));
    }
}
