//! [`Roster`]: every accepted key, as a SHA-256 digest, with the client it names; and the
//! [`Directory`] that holds the current roster and swaps it whole on a reload.
//!
//! Keys are held only as digests: a heap dump or a stray `Debug` shows no usable key. A
//! presented key is hashed and compared with every digest in constant time, so response timings
//! tell a caller nothing about how close a guess was.
//!
//! A reload builds a new roster and swaps it in one step. A request reads the roster once, when
//! it is authenticated, and keeps the client profile it found: a key removed by a reload is
//! refused from the next request on, while calls already admitted finish as they started.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use tokio::sync::watch;

use reqwest::Url;
use sha2::{Digest, Sha256};

use super::{ClientName, DailyBudget, Scope};
use crate::secret::Secret;

/// A key's SHA-256 digest: how keys are held and compared.
pub type KeyDigest = [u8; 32];

/// Whom a presented key names ([`Roster::identify`]).
#[derive(Debug, Default)]
pub struct Identified {
    /// Its digest, when it is an admin key.
    pub admin: Option<KeyDigest>,
    /// Its digest and the client it names, when it is a client key.
    pub client: Option<(KeyDigest, Arc<ClientProfile>)>,
}

/// The SHA-256 digest of a key.
pub fn digest(key: &[u8]) -> KeyDigest {
    Sha256::digest(key).into()
}

/// A digest written as 64 hex digits (what `sha256sum` prints); `None` otherwise.
pub fn digest_from_hex(hex: &str) -> Option<KeyDigest> {
    let hex = hex.trim();
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

fn constant_time_eq(a: &KeyDigest, b: &KeyDigest) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What one client may do: its name, the tools it may call, its booking budget and where its
/// callbacks may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientProfile {
    /// The client's name.
    pub name: ClientName,
    /// The tools it may call, and whether it may book.
    pub scope: Scope,
    /// How much it may book per UTC day; `None` = no budget of its own.
    pub budget: Option<DailyBudget>,
    /// Where its callbacks may go, when its entry has a list of its own (else the gateway's
    /// `[auth] callback_allowlist`).
    pub callback_allowlist: Option<Vec<Url>>,
    /// The secret its callbacks are signed with, when its entry names one of its own (else the
    /// gateway's, from `[auth] callback_secret_env`).
    pub callback_secret: Option<Secret>,
}

impl ClientProfile {
    /// A client allowed everything and given no budget: a key of the flat key list, the admin
    /// key, and the local client with auth off.
    pub fn unrestricted(name: ClientName) -> Self {
        ClientProfile {
            name,
            scope: Scope::everything(),
            budget: None,
            callback_allowlist: None,
            callback_secret: None,
        }
    }
}

#[derive(Clone)]
struct KeyEntry {
    digest: KeyDigest,
    profile: Arc<ClientProfile>,
}

/// Every accepted key, with the client it names, and the admin keys.
#[derive(Clone, Default)]
pub struct Roster {
    clients: Vec<KeyEntry>,
    admin: Vec<KeyDigest>,
}

impl std::fmt::Debug for Roster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Roster({} client keys, {} admin keys, redacted)",
            self.clients.len(),
            self.admin.len()
        )
    }
}

impl Roster {
    /// Accepts the key with `digest` as `profile`'s. A key another client already holds is
    /// refused (the text names both clients, never the key): one key must name one client.
    pub fn add_client(
        &mut self,
        digest: KeyDigest,
        profile: Arc<ClientProfile>,
    ) -> Result<(), String> {
        if let Some(other) = self.clients.iter().find(|e| e.digest == digest) {
            return Err(if other.profile.name == profile.name {
                format!("client {} has the same key twice", profile.name)
            } else {
                format!(
                    "clients {} and {} have the same key; give each client its own",
                    other.profile.name, profile.name
                )
            });
        }
        self.clients.push(KeyEntry { digest, profile });
        Ok(())
    }

    /// Accepts the key with `digest` as an admin key. A key a client holds is refused (the
    /// text names the client, never the key): it would make that client an operator, outside
    /// its scope, limits and budget.
    pub fn add_admin(&mut self, digest: KeyDigest) -> Result<(), String> {
        if let Some(client) = self.clients.iter().find(|e| e.digest == digest) {
            return Err(format!(
                "an admin key is also client {}'s key; give the admin key a value of its own (held by a client, it would make that client an operator, outside its scope, limits and budget)",
                client.profile.name
            ));
        }
        self.admin.push(digest);
        Ok(())
    }

    /// True when no client key is accepted: authentication is off.
    pub fn auth_off(&self) -> bool {
        self.clients.is_empty()
    }

    /// True when an admin key is configured.
    pub fn has_admin(&self) -> bool {
        !self.admin.is_empty()
    }

    /// How many client keys are accepted.
    pub fn client_keys(&self) -> usize {
        self.clients.len()
    }

    /// Whom `presented` names, its digest taken once (SHA-256 of a key is most of what
    /// authenticating a call costs): its digest when it is an admin key, and its digest and the
    /// client it names when it is a client key. Every digest is compared, each in constant
    /// time.
    pub fn identify(&self, presented: &[u8]) -> Identified {
        let candidate = digest(presented);
        let mut admin = false;
        for key in &self.admin {
            admin |= constant_time_eq(key, &candidate);
        }
        let mut client = None;
        for entry in &self.clients {
            if constant_time_eq(&entry.digest, &candidate) {
                client = Some(Arc::clone(&entry.profile));
            }
        }
        Identified {
            admin: admin.then_some(candidate),
            client: client.map(|profile| (candidate, profile)),
        }
    }

    /// Every client by name (a client may hold several keys of the flat list only if they are
    /// different keys, so names are unique per profile).
    pub fn profiles(&self) -> BTreeMap<ClientName, Arc<ClientProfile>> {
        self.clients
            .iter()
            .map(|e| (e.profile.name.clone(), Arc::clone(&e.profile)))
            .collect()
    }

    /// Whether the key with `digest` still names the client `name`, with `scope` (a reload
    /// may have taken the key away, given it to another client, or narrowed what it sees).
    pub fn still_names(&self, digest: &KeyDigest, name: &ClientName, scope: &Scope) -> bool {
        self.clients
            .iter()
            .any(|e| e.digest == *digest && e.profile.name == *name && e.profile.scope == *scope)
    }

    /// Whether the key with `digest` is an admin key now.
    pub fn is_admin(&self, digest: &KeyDigest) -> bool {
        self.admin.contains(digest)
    }

    /// The profile of the client named `name`, if it holds a key now.
    pub fn profile(&self, name: &ClientName) -> Option<Arc<ClientProfile>> {
        self.clients
            .iter()
            .find(|e| e.profile.name == *name)
            .map(|e| Arc::clone(&e.profile))
    }

    /// What the client named `name` may call now, for work it set up earlier (a watch's runs):
    /// its profile's scope; everything for the local client while auth is off and for the admin
    /// while an admin key is configured; nothing for a client that no longer holds a key.
    pub fn scope_now(&self, name: &ClientName) -> Scope {
        let unrestricted_while = |holds: bool| {
            if holds {
                Scope::everything()
            } else {
                Scope::nothing()
            }
        };
        if *name == ClientName::local() {
            return unrestricted_while(self.auth_off());
        }
        if *name == ClientName::admin() {
            return unrestricted_while(self.has_admin());
        }
        self.profile(name)
            .map_or_else(Scope::nothing, |p| p.scope.clone())
    }
}

/// The current roster, swapped whole by a reload.
#[derive(Debug)]
pub struct Directory {
    /// A std lock: held only to clone or replace the `Arc`, never across an await.
    current: RwLock<Arc<Roster>>,
    /// Counts the replacements, for whoever follows them (MCP sessions told that their tools
    /// changed).
    replaced: watch::Sender<u64>,
}

impl Default for Directory {
    fn default() -> Self {
        Directory::new(Roster::default())
    }
}

impl Directory {
    /// A directory holding `roster`.
    pub fn new(roster: Roster) -> Self {
        Directory {
            current: RwLock::new(Arc::new(roster)),
            replaced: watch::Sender::new(0),
        }
    }

    /// Wakes on every replacement from now on ([`watch::Receiver::changed`]).
    pub fn replaced(&self) -> watch::Receiver<u64> {
        self.replaced.subscribe()
    }

    /// The roster now; a request keeps the one it read for its whole life.
    pub fn current(&self) -> Arc<Roster> {
        Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Puts `roster` in place of the current one, at once for every later request.
    pub fn replace(&self, roster: Roster) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(roster);
        self.replaced.send_modify(|n| *n += 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str) -> Arc<ClientProfile> {
        Arc::new(ClientProfile::unrestricted(ClientName::stored(name)))
    }

    #[test]
    fn keys_are_held_as_digests_and_match_exactly() {
        let mut roster = Roster::default();
        roster
            .add_client(digest(b"sk-live-very-secret"), named("a"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            format!("{roster:?}"),
            "Roster(1 client keys, 0 admin keys, redacted)"
        );
        let found = roster.identify(b"sk-live-very-secret");
        assert_eq!(
            found.client.map(|(_, p)| p.name.to_string()).as_deref(),
            Some("a")
        );
        assert!(found.admin.is_none());
        for wrong in [&b"sk-live-very-secre"[..], b"sk-live-very-secret ", b""] {
            assert!(roster.identify(wrong).client.is_none());
        }
        // An admin key is told apart, from the same one digest.
        assert_eq!(roster.add_admin(digest(b"sk-admin")), Ok(()));
        let admin = roster.identify(b"sk-admin");
        assert_eq!(
            (admin.admin, admin.client.is_none()),
            (Some(digest(b"sk-admin")), true)
        );
    }

    #[test]
    fn one_key_names_one_client() {
        let mut roster = Roster::default();
        assert!(roster.add_client(digest(b"k"), named("a")).is_ok());
        // Nor is a client's key an admin key: the client would be an operator.
        let admin = roster.add_admin(digest(b"k"));
        assert!(
            admin
                .as_ref()
                .is_err_and(|e| e.starts_with("an admin key is also client a's key")),
            "{admin:?}"
        );
        assert!(!roster.has_admin());
        let clash = roster.add_client(digest(b"k"), named("b"));
        assert_eq!(
            clash,
            Err("clients a and b have the same key; give each client its own".to_string())
        );
    }

    #[test]
    fn hex_digests_read_as_sha256sum_prints_them() {
        let hex: String = digest(b"k").iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(digest_from_hex(&hex), Some(digest(b"k")));
        assert_eq!(digest_from_hex(&hex.to_uppercase()), Some(digest(b"k")));
        assert_eq!(digest_from_hex(&hex[1..]), None);
        assert_eq!(digest_from_hex(&"z".repeat(64)), None);
    }

    #[test]
    fn a_replaced_roster_applies_to_the_next_reader_only() {
        let mut first = Roster::default();
        first
            .add_client(digest(b"old"), named("a"))
            .unwrap_or_else(|e| panic!("{e}"));
        let directory = Directory::new(first);
        let held = directory.current();
        let mut second = Roster::default();
        second
            .add_client(digest(b"new"), named("a"))
            .unwrap_or_else(|e| panic!("{e}"));
        directory.replace(second);
        assert!(
            held.identify(b"old").client.is_some(),
            "a request keeps what it read"
        );
        assert!(directory.current().identify(b"old").client.is_none());
        assert!(directory.current().identify(b"new").client.is_some());
    }
}
