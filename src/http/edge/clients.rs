//! From configuration and environment to the keys the edge accepts: every client key (the flat
//! list's anonymous clients and the `[[clients]]`), the admin key, and the limits of clients that
//! have their own. Start-up and every reload build a [`ClientSetup`] the same way.

use std::sync::Arc;

use crate::clients::{ClientName, ClientProfile, Roster, digest};
use crate::config::{ClientKey, Config, LimitsConfig};
use crate::providers::Env;
use crate::secret::Secret;

/// What a start or a reload installs.
#[derive(Debug)]
pub struct ClientSetup {
    /// Every accepted key, with the client it names.
    pub roster: Roster,
    /// The clients whose limits differ from `[limits]`, with theirs.
    pub own_limits: Vec<(ClientName, LimitsConfig)>,
}

/// The keys and clients `config` and `env` describe; every problem at once, each naming the
/// client and what to fix (never a key).
pub fn client_setup(config: &Config, env: &dyn Env) -> Result<ClientSetup, Vec<String>> {
    let mut roster = Roster::default();
    let mut errors = Vec::new();
    let flat = env.var(&config.auth.client_keys_env).unwrap_or_default();
    let mut seen = Vec::new();
    for key in flat.split(',').map(str::trim).filter(|k| !k.is_empty()) {
        let d = digest(key.as_bytes());
        if seen.contains(&d) {
            continue; // The same key listed twice is one client.
        }
        seen.push(d);
        let profile = ClientProfile::unrestricted(ClientName::for_key_digest(&d));
        if let Err(e) = roster.add_client(d, Arc::new(profile)) {
            errors.push(e);
        }
    }
    let mut own_limits = Vec::new();
    for client in &config.clients {
        let d = match &client.key {
            ClientKey::Sha256(d) => *d,
            ClientKey::Env(var) => match env.var(var).filter(|k| !k.trim().is_empty()) {
                Some(key) => digest(key.trim().as_bytes()),
                None => {
                    errors.push(format!(
                        "client {}: the variable {var} (its key_env) is not set; set it to the client's key, or give key_sha256 instead",
                        client.name
                    ));
                    continue;
                }
            },
        };
        let callback_secret = match &client.callback_secret_env {
            None => None,
            Some(var) => match env.var(var).filter(|s| !s.trim().is_empty()) {
                Some(secret) => Some(Secret::new(secret)),
                None => {
                    errors.push(format!(
                        "client {}: the variable {var} (its callback_secret_env) is not set; set it to the secret the client's receiver checks callbacks with, or remove callback_secret_env to sign its callbacks with [auth]'s secret",
                        client.name
                    ));
                    continue;
                }
            },
        };
        let profile = ClientProfile {
            name: client.name.clone(),
            scope: client.scope.clone(),
            budget: client.budget.clone(),
            callback_allowlist: client.callback_allowlist.clone(),
            callback_secret,
        };
        // A clash with a key of the flat list names that key's client (`key-<8 hex>`).
        if let Err(e) = roster.add_client(d, Arc::new(profile)) {
            errors.push(e);
        }
        if client.limits != config.limits {
            own_limits.push((client.name.clone(), client.limits.clone()));
        }
    }
    let admin = env.var(&config.auth.admin_key_env).unwrap_or_default();
    for key in admin.split(',').map(str::trim).filter(|k| !k.is_empty()) {
        if let Err(e) = roster.add_admin(digest(key.as_bytes())) {
            errors.push(format!("{}: {e}", config.auth.admin_key_env));
        }
    }
    if errors.is_empty() {
        Ok(ClientSetup { roster, own_limits })
    } else {
        Err(errors)
    }
}
