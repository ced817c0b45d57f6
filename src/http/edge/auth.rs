//! Bearer-key authentication of clients and operators.
//!
//! Keys come from the environment (the config names the variables) and are kept in memory only
//! as SHA-256 digests: a heap dump or a stray `Debug` shows no usable key. A presented key is
//! hashed and compared with every digest in constant time, so response timings tell a caller
//! nothing about how close a guess was. With no client keys configured, auth is off (demo
//! only), and start-up says so loudly.
//!
//! Who may do what:
//! - client routes (tool calls, catalog, the caller's own jobs, reads of breakers and alerts):
//!   a client key or the admin key (which sees every client's jobs); 401 without a valid one;
//! - admin routes (forcing breakers): the admin key; 401 without a valid
//!   key, 403 with a valid client key;
//! - `/healthz`, `/readyz`, `/dashboard` and (by default) `/metrics`: open.
//!
//! A key names a client ([`ClientName`]): a key of the flat list (`FAREGATE_CLIENT_KEYS` by
//! default) is an anonymous client named `key-<first 8 hex of its SHA-256>`, the admin key is
//! `admin`, and with auth off every caller is the one `local` client.
//!
//! The middleware records the caller as a [`Caller`] request extension, so the rate limiter,
//! the handlers (which hand the client to every call and job) and admin checks downstream need
//! not look at headers again.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::error::ApiError;
use crate::clients::ClientName;

/// A key's SHA-256 digest: how keys are held and how clients are told apart.
pub type KeyDigest = [u8; 32];

/// One accepted key: its digest and the client it names.
#[derive(Clone)]
struct KeyEntry {
    digest: KeyDigest,
    client: ClientName,
}

/// The accepted keys of one kind (client keys, or the admin key), as digests, each with the
/// client it identifies.
#[derive(Clone, Default)]
pub struct ClientKeys {
    entries: Arc<Vec<KeyEntry>>,
}

impl std::fmt::Debug for ClientKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClientKeys({} keys, redacted)", self.entries.len())
    }
}

fn digest(key: &[u8]) -> KeyDigest {
    Sha256::digest(key).into()
}

impl ClientKeys {
    /// Keys from a comma-separated list; empty entries are ignored. Only digests are kept, and
    /// each key is an anonymous client named after its digest (`key-<8 hex>`).
    pub fn from_list(list: &str) -> Self {
        ClientKeys {
            entries: Arc::new(
                list.split(',')
                    .map(str::trim)
                    .filter(|k| !k.is_empty())
                    .map(|k| {
                        let digest = digest(k.as_bytes());
                        KeyEntry {
                            digest,
                            client: ClientName::for_key_digest(&digest),
                        }
                    })
                    .collect(),
            ),
        }
    }

    /// True when no key of this kind is configured.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The digest of `presented` and the client it names, when it is one of the keys. Every
    /// stored digest is compared (no early exit), each in constant time.
    pub fn identify(&self, presented: &[u8]) -> Option<(KeyDigest, ClientName)> {
        let candidate = digest(presented);
        let mut found = None;
        for entry in self.entries.iter() {
            if constant_time_eq(&entry.digest, &candidate) {
                found = Some(entry.client.clone());
            }
        }
        found.map(|client| (candidate, client))
    }

    /// Whether `presented` is one of the keys.
    pub fn accepts(&self, presented: &[u8]) -> bool {
        self.identify(presented).is_some()
    }
}

fn constant_time_eq(a: &KeyDigest, b: &KeyDigest) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Who is calling, as authentication established it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// A valid client key: its digest and the client it names.
    Client {
        /// The key's digest (per-client limits count by it).
        digest: KeyDigest,
        /// The client the key belongs to.
        name: ClientName,
    },
    /// The admin key (its digest).
    Admin(KeyDigest),
    /// Nobody in particular: auth is off (no client keys configured).
    Anonymous,
}

impl Caller {
    /// The digest of the key, for per-client limits; `None` when anonymous.
    pub fn digest(&self) -> Option<KeyDigest> {
        match self {
            Caller::Client { digest, .. } | Caller::Admin(digest) => Some(*digest),
            Caller::Anonymous => None,
        }
    }

    /// The client calls are made for: the key's client, `admin` for the admin key, `local`
    /// when auth is off.
    pub fn client(&self) -> ClientName {
        match self {
            Caller::Client { name, .. } => name.clone(),
            Caller::Admin(_) => ClientName::admin(),
            Caller::Anonymous => ClientName::local(),
        }
    }
}

/// The client keys and the admin key together: everything authorization decides on.
#[derive(Debug, Clone, Default)]
pub struct Keys {
    /// Client keys (empty = auth off).
    pub clients: ClientKeys,
    /// The admin key (empty = none configured).
    pub admin: ClientKeys,
}

/// Which key a route needs: the role the caller must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A client key or the admin key (anyone when auth is off).
    Client,
    /// The admin key (anyone when neither client keys nor an admin key are configured).
    Admin,
}

fn bearer(headers: &HeaderMap) -> Option<&[u8]> {
    let value = headers.get(header::AUTHORIZATION)?.as_bytes();
    let rest = value
        .strip_prefix(b"Bearer ")
        .or_else(|| value.strip_prefix(b"bearer "))?;
    Some(rest.trim_ascii())
}

fn unauthorized(message: impl Into<String>) -> Response {
    let mut res = ApiError::new(StatusCode::UNAUTHORIZED, message).into_response();
    res.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    res
}

fn forbidden(message: impl Into<String>) -> Response {
    ApiError::new(StatusCode::FORBIDDEN, message).into_response()
}

impl Keys {
    /// Decides a request for a route that needs `role`: the caller, or the 401/403 to answer. `what` names the admin action
    /// in messages ("forcing breakers"); `admin_env` names the admin key's variable.
    pub fn authorize(
        &self,
        headers: &HeaderMap,
        role: Role,
        what: &str,
        admin_env: &str,
    ) -> Result<Caller, Box<Response>> {
        let presented = bearer(headers);
        let admin = presented.and_then(|k| self.admin.identify(k));
        let client = presented.and_then(|k| self.clients.identify(k));
        if let Some((digest, _)) = admin {
            return Ok(Caller::Admin(digest));
        }
        match role {
            Role::Client => match (client, presented) {
                (Some((digest, name)), _) => Ok(Caller::Client { digest, name }),
                _ if self.clients.is_empty() => Ok(Caller::Anonymous),
                (None, None) => Err(Box::new(unauthorized(
                    "missing credentials; send `Authorization: Bearer <client key>`",
                ))),
                (None, Some(_)) => Err(Box::new(unauthorized(
                    "the bearer key is not valid; use a client key or the admin key",
                ))),
            },
            Role::Admin => {
                if self.admin.is_empty() && self.clients.is_empty() {
                    return Ok(Caller::Anonymous);
                }
                if client.is_some() {
                    return Err(Box::new(forbidden(if self.admin.is_empty() {
                        format!(
                            "{what} needs the admin key, and none is configured; set {admin_env} on the gateway"
                        )
                    } else {
                        format!("{what} needs the admin key; a client key is not enough")
                    })));
                }
                if self.admin.is_empty() {
                    // No admin key exists, so no credential could pass: say so rather than
                    // inviting the caller to try keys.
                    return Err(Box::new(forbidden(format!(
                        "{what} needs the admin key, and none is configured; set {admin_env} on the gateway"
                    ))));
                }
                match presented {
                    None => Err(Box::new(unauthorized(
                        "missing credentials; send `Authorization: Bearer <admin key>`",
                    ))),
                    Some(_) => Err(Box::new(unauthorized(
                        "the bearer key is not the admin key",
                    ))),
                }
            }
        }
    }
}

/// Middleware: 401 unless auth is off or the request carries a client key or the admin key;
/// records the [`Caller`] for the handlers and limits behind it.
pub(crate) async fn require_client(
    State(keys): State<Keys>,
    mut request: Request,
    next: Next,
) -> Response {
    match keys.authorize(request.headers(), Role::Client, "this", "") {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(res) => *res,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(key: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(k) = key
            && let Ok(v) = HeaderValue::from_str(&format!("Bearer {k}"))
        {
            h.insert(header::AUTHORIZATION, v);
        }
        h
    }

    fn status(r: Result<Caller, Box<Response>>) -> u16 {
        match r {
            Ok(_) => 200,
            Err(res) => res.status().as_u16(),
        }
    }

    #[test]
    fn keys_match_exactly() {
        let keys = ClientKeys::from_list(" k1, k2 ,,");
        assert!(keys.accepts(b"k1"));
        assert!(keys.accepts(b"k2"));
        assert!(!keys.accepts(b"k"));
        assert!(!keys.accepts(b"k11"));
        assert!(!keys.accepts(b""));
        assert!(ClientKeys::from_list(" , ").is_empty());
    }

    #[test]
    fn only_digests_are_held() {
        let keys = ClientKeys::from_list("sk-live-very-secret");
        assert_eq!(format!("{keys:?}"), "ClientKeys(1 keys, redacted)");
        let held: Vec<u8> = keys.entries.iter().flat_map(|e| e.digest).collect();
        assert_eq!(held.len(), 32);
        assert!(
            !held
                .windows(b"very-secret".len())
                .any(|w| w == b"very-secret"),
            "the plaintext key is not in memory"
        );
        let expected = digest(b"sk-live-very-secret");
        assert_eq!(
            keys.identify(b"sk-live-very-secret"),
            Some((expected, ClientName::for_key_digest(&expected)))
        );
    }

    #[test]
    fn client_and_admin_routes_answer_401_and_403_rightly() {
        let keys = Keys {
            clients: ClientKeys::from_list("c1,c2"),
            admin: ClientKeys::from_list("adm"),
        };
        let client = |k| status(keys.authorize(&headers(k), Role::Client, "x", "ADMIN"));
        let admin = |k| status(keys.authorize(&headers(k), Role::Admin, "x", "ADMIN"));
        assert_eq!(client(None), 401);
        assert_eq!(client(Some("nope")), 401);
        assert_eq!(client(Some("c2")), 200);
        assert_eq!(client(Some("adm")), 200, "the admin key works everywhere");
        assert_eq!(admin(None), 401);
        assert_eq!(admin(Some("nope")), 401);
        assert_eq!(admin(Some("c1")), 403);
        assert_eq!(admin(Some("adm")), 200);
        let c1 = keys.authorize(&headers(Some("c1")), Role::Client, "x", "A");
        let c1_name = ClientName::for_key_digest(&digest(b"c1"));
        assert!(matches!(&c1, Ok(Caller::Client { name, .. }) if *name == c1_name));
        let c2 = keys.authorize(&headers(Some("c2")), Role::Client, "x", "A");
        assert!(
            matches!(&c2, Ok(c) if c.client() != c1_name),
            "two keys are two clients"
        );
        let adm = keys.authorize(&headers(Some("adm")), Role::Client, "x", "A");
        assert!(matches!(&adm, Ok(c) if c.client() == ClientName::admin()));
    }

    #[test]
    fn auth_is_off_only_without_client_keys() {
        let open = Keys::default();
        for role in [Role::Client, Role::Admin] {
            let caller = open.authorize(&headers(None), role, "x", "A");
            assert!(matches!(&caller, Ok(Caller::Anonymous)));
            assert!(matches!(&caller, Ok(c) if c.client() == ClientName::local()));
        }
        let no_admin = Keys {
            clients: ClientKeys::from_list("c1"),
            admin: ClientKeys::default(),
        };
        let r = no_admin.authorize(
            &headers(Some("c1")),
            Role::Admin,
            "forcing breakers",
            "FG_ADMIN",
        );
        assert_eq!(status(r), 403, "no admin key configured: refused, not open");
        let admin_only = Keys {
            clients: ClientKeys::default(),
            admin: ClientKeys::from_list("adm"),
        };
        assert_eq!(
            status(admin_only.authorize(&headers(None), Role::Admin, "x", "A")),
            401,
            "an admin key guards admin routes even when client auth is off"
        );
        assert_eq!(
            status(admin_only.authorize(&headers(None), Role::Client, "x", "A")),
            200
        );
    }
}
