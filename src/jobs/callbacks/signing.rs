//! Which secret signs a client's callbacks: its own (`callback_secret_env` in its `[[clients]]`
//! entry) when it has one, else the gateway's (`[auth] callback_secret_env`).
//!
//! # Why per client
//! A receiver checks a callback's signature to know it came from this gateway. With one secret
//! for every client, that is all it knows: a signed callback about client A's job is as good as
//! one about its own. Client A, allowed a URL under B's receiver (both on the gateway-wide
//! allowlist), could have the gateway send signed callbacks there; and a callback A received
//! could be posted to B's receiver again, still signed. A client with its own secret gets
//! callbacks its receiver can tell apart: one signed for anyone else fails its check.
//!
//! The secret is looked up at each delivery, in the roster as it is then (as the allowlist is),
//! so a reload that gives a client its own secret signs its next callback with it.
//!
//! A client the roster does not hold now (removed by a reload, or not added yet on a replica a
//! reload has not reached) is signed for with the gateway's secret, as it is held to the
//! gateway's allowlist. That opens nothing to a client with a secret of its own: its receiver
//! checks its own secret and refuses what the gateway's signs.

use std::sync::Arc;

use crate::clients::{ClientName, Directory};
use crate::config::Config;
use crate::providers::Env;
use crate::secret::Secret;

/// The gateway's secret, and the clients whose entries may name their own.
#[derive(Debug, Clone, Default)]
pub struct Signing {
    gateway: Option<Secret>,
    clients: Option<Arc<Directory>>,
}

impl From<Option<Secret>> for Signing {
    /// The gateway's secret for every client (none of its own); `None` signs nothing.
    fn from(gateway: Option<Secret>) -> Self {
        Signing {
            gateway,
            clients: None,
        }
    }
}

impl Signing {
    /// Signs for each client whose current `[[clients]]` entry has a secret of its own with it.
    pub fn with_clients(mut self, clients: Arc<Directory>) -> Self {
        self.clients = Some(clients);
        self
    }

    /// The secret `client`'s callbacks are signed with now; `None` when neither it nor the
    /// gateway has one (its callbacks are then refused, never sent unsigned).
    pub fn secret_for(&self, client: &ClientName) -> Option<Secret> {
        let own = self.clients.as_ref().and_then(|clients| {
            clients
                .current()
                .profile(client)
                .and_then(|p| p.callback_secret.clone())
        });
        own.or_else(|| self.gateway.clone())
    }
}

/// Why a callback URL is refused when there is no secret to sign its callbacks with.
pub const NO_SECRET: &str = "callbacks need a signing secret: set the variable named by auth.callback_secret_env on the gateway, or give the client its own callback_secret_env in its [[clients]] entry";

/// What start-up, a reload and `faregate check` say about each signing secret `config` names (the
/// gateway's, each client's own) that begins or ends with whitespace in `env`.
///
/// Callbacks are signed with a secret's bytes as set, whitespace included: a receiver that
/// reads the same variable or file checks the same bytes, and trimming here would break it. But
/// the whitespace is most often the newline `echo` leaves in a secret's file, and a receiver
/// that trims its copy refuses every signature, which is hard to trace back from its side.
pub fn whitespace_warnings(config: &Config, env: &dyn Env) -> Vec<String> {
    let gateway = std::iter::once((
        "the gateway's".to_string(),
        &config.auth.callback_secret_env,
    ));
    let clients = config.clients.iter().filter_map(|c| {
        c.callback_secret_env
            .as_ref()
            .map(|var| (format!("client {}'s", c.name), var))
    });
    gateway
        .chain(clients)
        .filter(|(_, var)| {
            env.var(var)
                .is_some_and(|value| value.trim().len() != value.len())
        })
        .map(|(whose, var)| {
            format!(
                "{var} ({whose} callback signing secret) begins or ends with whitespace (a newline from echo?): callbacks are signed with it as set, whitespace included, so a receiver must check them with the same bytes; remove the whitespace from the secret on both sides unless that is what they use"
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::{ClientProfile, Roster, digest};

    fn directory(own: Option<&str>) -> Arc<Directory> {
        Arc::new(Directory::new(roster(own)))
    }

    fn roster(own: Option<&str>) -> Roster {
        let mut roster = Roster::default();
        let mut profile = ClientProfile::unrestricted(ClientName::stored("travel-app"));
        profile.callback_secret = own.map(Secret::new);
        roster
            .add_client(digest(b"key-a"), Arc::new(profile))
            .unwrap_or_else(|e| panic!("{e}"));
        roster
    }

    fn expose(secret: Option<Secret>) -> Option<String> {
        secret.map(|s| s.expose().to_string())
    }

    #[test]
    fn a_client_with_a_secret_of_its_own_is_signed_for_with_it() {
        let signing =
            Signing::from(Some(Secret::new("gateway"))).with_clients(directory(Some("own")));
        assert_eq!(
            expose(signing.secret_for(&ClientName::stored("travel-app"))),
            Some("own".into())
        );
        // Anyone else (a client without one, one a reload removed, the local client): the
        // gateway's.
        assert_eq!(
            expose(signing.secret_for(&ClientName::stored("gone"))),
            Some("gateway".into())
        );
        assert_eq!(
            expose(signing.secret_for(&ClientName::local())),
            Some("gateway".into())
        );
    }

    #[test]
    fn without_a_gateway_secret_only_clients_with_their_own_are_signed_for() {
        let signing = Signing::from(None).with_clients(directory(Some("own")));
        assert_eq!(
            expose(signing.secret_for(&ClientName::stored("travel-app"))),
            Some("own".into())
        );
        assert_eq!(signing.secret_for(&ClientName::local()), None);
    }

    #[test]
    fn a_reload_that_gives_a_client_its_own_secret_applies_at_the_next_look() {
        let clients = directory(None);
        let signing =
            Signing::from(Some(Secret::new("gateway"))).with_clients(Arc::clone(&clients));
        let name = ClientName::stored("travel-app");
        assert_eq!(expose(signing.secret_for(&name)), Some("gateway".into()));
        clients.replace(roster(Some("own")));
        assert_eq!(expose(signing.secret_for(&name)), Some("own".into()));
    }
}
