//! Which callback allowlist a client is held to: its own (`callback_allowlist` in its
//! `[[clients]]` entry) when it has one, else the gateway's (`[auth] callback_allowlist`).
//!
//! # Why per client
//! With one gateway-wide list, client A could aim callbacks at client B's receiver, and the
//! refusal for an unlisted URL named every receiver of every client. A client with its own list
//! may use only its own entries, and a refusal names only them. (A client's own signing secret,
//! [`super::signing`], is what lets B's receiver tell A's callbacks from its own.)
//!
//! The list is looked up when a URL is accepted and again at each delivery, in the roster as it
//! is then: a reload that narrows a client's list stops its callbacks to what is no longer on
//! it, as the gateway-wide list does after a restart.

use std::sync::Arc;

use reqwest::Url;

use crate::clients::{ClientName, Directory};

/// The gateway's list, and the clients whose entries may carry their own.
#[derive(Debug, Clone, Default)]
pub struct Allowlists {
    gateway: Arc<[Url]>,
    clients: Option<Arc<Directory>>,
}

impl From<Vec<Url>> for Allowlists {
    /// The gateway's list for every client (no client has one of its own).
    fn from(gateway: Vec<Url>) -> Self {
        Allowlists {
            gateway: gateway.into(),
            clients: None,
        }
    }
}

impl Allowlists {
    /// Holds each client whose current `[[clients]]` entry has a `callback_allowlist` to it.
    pub fn with_clients(mut self, clients: Arc<Directory>) -> Self {
        self.clients = Some(clients);
        self
    }

    /// The list `client` is held to now.
    pub fn of(&self, client: &ClientName) -> Allowlist {
        let own = self.clients.as_ref().and_then(|clients| {
            clients
                .current()
                .profile(client)
                .and_then(|p| p.callback_allowlist.clone())
        });
        match own {
            Some(entries) => Allowlist {
                entries: entries.into(),
                owner: Some(client.clone()),
            },
            None => Allowlist {
                entries: Arc::clone(&self.gateway),
                owner: None,
            },
        }
    }
}

/// One client's callback allowlist.
#[derive(Debug, Clone)]
pub struct Allowlist {
    entries: Arc<[Url]>,
    /// The client whose own list this is; `None` for the gateway's.
    owner: Option<ClientName>,
}

impl Allowlist {
    /// The entries.
    pub fn entries(&self) -> &[Url] {
        &self.entries
    }

    /// Why `url` is refused, for the client: which list, and the entries it may use instead.
    pub fn refusal(&self, url: &Url) -> String {
        let entries: Vec<&str> = self.entries.iter().map(Url::as_str).collect();
        match (&self.owner, entries.is_empty()) {
            (None, true) => format!(
                "callback_url {url} is not allowed: this gateway has no callback allowlist ([auth] callback_allowlist), so it sends no callbacks; poll GET /v1/jobs/{{id}} instead"
            ),
            (None, false) => format!(
                "callback_url {url} is not on the gateway's callback allowlist; use a URL under one of: {}",
                entries.join(", ")
            ),
            (Some(client), true) => format!(
                "callback_url {url} is not allowed: client {client} has an empty callback allowlist (its [[clients]] entry), so it gets no callbacks; poll GET /v1/jobs/{{id}} instead"
            ),
            (Some(client), false) => format!(
                "callback_url {url} is not on client {client}'s callback allowlist; use a URL under one of: {}",
                entries.join(", ")
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::{ClientProfile, Roster, digest};

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn directory(own: Option<Vec<Url>>) -> Arc<Directory> {
        let mut roster = Roster::default();
        let mut profile = ClientProfile::unrestricted(ClientName::stored("travel-app"));
        profile.callback_allowlist = own;
        roster
            .add_client(digest(b"key-a"), Arc::new(profile))
            .unwrap_or_else(|e| panic!("{e}"));
        Arc::new(Directory::new(roster))
    }

    fn gateway() -> Allowlists {
        Allowlists::from(vec![
            url("https://a.example/hooks/"),
            url("https://b.example/hooks/"),
        ])
    }

    #[test]
    fn a_client_with_its_own_list_is_held_to_it_and_hears_only_its_entries() {
        let lists = gateway().with_clients(directory(Some(vec![url("https://a.example/hooks/")])));
        let own = lists.of(&ClientName::stored("travel-app"));
        assert_eq!(own.entries(), [url("https://a.example/hooks/")]);
        let refusal = own.refusal(&url("https://b.example/hooks/x"));
        assert!(refusal.contains("client travel-app's"), "{refusal}");
        // The gateway's other entry (another client's receiver) is not named.
        assert!(
            refusal.ends_with("use a URL under one of: https://a.example/hooks/"),
            "{refusal}"
        );
    }

    #[test]
    fn a_client_without_a_list_of_its_own_is_held_to_the_gateways() {
        let lists = gateway().with_clients(directory(None));
        assert_eq!(
            lists.of(&ClientName::stored("travel-app")).entries().len(),
            2
        );
        // A client that holds no key now (removed by a reload), or the local client.
        assert_eq!(lists.of(&ClientName::stored("gone")).entries().len(), 2);
        assert_eq!(lists.of(&ClientName::local()).entries().len(), 2);
    }

    #[test]
    fn a_reload_that_narrows_a_clients_list_applies_at_the_next_look() {
        let clients = directory(None);
        let lists = gateway().with_clients(Arc::clone(&clients));
        let name = ClientName::stored("travel-app");
        assert_eq!(lists.of(&name).entries().len(), 2);
        let mut narrowed = ClientProfile::unrestricted(name.clone());
        narrowed.callback_allowlist = Some(Vec::new());
        let mut roster = Roster::default();
        roster
            .add_client(digest(b"key-a"), Arc::new(narrowed))
            .unwrap_or_else(|e| panic!("{e}"));
        clients.replace(roster);
        let now = lists.of(&name);
        assert!(now.entries().is_empty());
        assert!(
            now.refusal(&url("https://a.example/hooks/x"))
                .contains("empty callback allowlist")
        );
    }
}
