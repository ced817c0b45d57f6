//! Bearer-key authentication of clients and operators.
//!
//! The accepted keys are the current [`Roster`] of a [`Directory`] (held as SHA-256 digests, each
//! naming a client), so a reload swaps them for every later request at once. Keys come from the
//! environment (the config names the variables) or, for `[[clients]]`, from their digests in the
//! configuration. With no client keys configured, auth is off (demo only), and start-up says so
//! loudly.
//!
//! Who may do what:
//! - client routes (tool calls, catalog, the caller's own jobs, reads of breakers and alerts):
//!   a client key or the admin key (which sees every client's jobs); 401 without a valid one;
//! - admin routes (forcing breakers, reloading the configuration): the admin key; 401 without a valid
//!   key, 403 with a valid client key;
//! - `/healthz`, `/readyz`, `/dashboard` and (by default) `/metrics`: open.
//!
//! A key names a client ([`ClientName`]): a `[[clients]]` key its configured client, a key of the
//! flat list (`FAREGATE_CLIENT_KEYS` by default) an anonymous client named `key-<first 8 hex of
//! its SHA-256>`, the admin key `admin`; with auth off every caller is the one `local` client.
//!
//! The middleware records the caller as a [`Caller`] request extension, so the rate limiter,
//! the handlers (which hand the client to every call and job, and check its scope) and admin
//! checks downstream need not look at headers again.

use std::future::Future;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::body::refuse_cross_site;
use super::error::ApiError;
use crate::clients::{ClientName, ClientProfile, Directory, KeyDigest, Roster, Scope};

/// Who is calling, as authentication established it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// A valid client key: its digest and the client it names.
    Client {
        /// The key's digest (per-client limits count by it).
        digest: KeyDigest,
        /// The client the key belongs to, as the roster said when the request came in.
        profile: Arc<ClientProfile>,
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
            Caller::Client { profile, .. } => profile.name.clone(),
            Caller::Admin(_) => ClientName::admin(),
            Caller::Anonymous => ClientName::local(),
        }
    }

    /// The tools the caller may call: its client's scope, or every tool for the admin key and
    /// with auth off.
    pub fn scope(&self) -> Scope {
        match self {
            Caller::Client { profile, .. } => profile.scope.clone(),
            Caller::Admin(_) | Caller::Anonymous => Scope::everything(),
        }
    }

    /// Whether the caller sees every client's jobs (the admin key).
    pub fn is_admin(&self) -> bool {
        matches!(self, Caller::Admin(_))
    }
}

/// The accepted keys, reloadable: everything authorization decides on.
#[derive(Debug, Clone, Default)]
pub struct Keys {
    directory: Arc<Directory>,
}

/// Which key a route needs: the role the caller must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A client key or the admin key (anyone when auth is off).
    Client,
    /// The admin key (anyone when neither client keys nor an admin key are configured).
    Admin,
}

/// What a request's `Authorization` header presents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Presented<'a> {
    /// No `Authorization` header.
    Nothing,
    /// A header of another scheme (`Basic …`, or a bare key with no scheme at all).
    OtherScheme,
    /// `Authorization: Bearer` with no key after it.
    NoKey,
    /// Two or more `Authorization` headers: which to believe would depend on their order (a
    /// proxy's added header or the client's), so none is.
    Several,
    /// The token of `Authorization: Bearer <token>`.
    Bearer(&'a [u8]),
}

impl<'a> Presented<'a> {
    /// The scheme's name is matched without regard to case, as HTTP's authentication schemes
    /// are (RFC 9110 §11.1): `BEARER` and `bearer` name it as well as `Bearer` does.
    fn of(headers: &'a HeaderMap) -> Self {
        let mut all = headers.get_all(header::AUTHORIZATION).iter();
        let Some(value) = all.next() else {
            return Presented::Nothing;
        };
        if all.next().is_some() {
            return Presented::Several;
        }
        let value = value.as_bytes();
        if value.trim_ascii().eq_ignore_ascii_case(b"Bearer") {
            return Presented::NoKey;
        }
        match value.split_at_checked(b"Bearer ".len()) {
            Some((scheme, token)) if scheme.eq_ignore_ascii_case(b"Bearer ") => {
                match token.trim_ascii() {
                    [] => Presented::NoKey,
                    token => Presented::Bearer(token),
                }
            }
            _ => Presented::OtherScheme,
        }
    }

    fn token(self) -> Option<&'a [u8]> {
        match self {
            Presented::Bearer(token) => Some(token),
            Presented::Nothing | Presented::OtherScheme | Presented::NoKey | Presented::Several => {
                None
            }
        }
    }

    /// The 401 for a request whose credentials identify nobody; `key` names the key wanted
    /// ("client key", "admin key"). A header in another scheme is named as such, never echoed.
    fn refusal(self, key: &str, not_valid: &str) -> Response {
        unauthorized(match self {
            Presented::Nothing => {
                format!("missing credentials; send `Authorization: Bearer <{key}>`")
            }
            Presented::OtherScheme => format!(
                "the Authorization header is not of the Bearer scheme; send `Authorization: Bearer <{key}>` (the word Bearer, a space, then the key)"
            ),
            Presented::NoKey => format!(
                "the Authorization header names the Bearer scheme but no key after it; send `Authorization: Bearer <{key}>`"
            ),
            Presented::Several => {
                return ApiError::new(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "the request has several Authorization headers; send one, `Authorization: Bearer <{key}>`"
                    ),
                )
                .into_response();
            }
            Presented::Bearer(_) => not_valid.to_string(),
        })
    }
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
    /// Keys from `roster`.
    pub fn new(roster: Roster) -> Self {
        Keys {
            directory: Arc::new(Directory::new(roster)),
        }
    }

    /// The directory (for reloads, and for whoever needs a client's profile by name).
    pub fn directory(&self) -> &Arc<Directory> {
        &self.directory
    }

    /// Resolves once a reload leaves `caller`'s key no longer accepted as it was: taken away,
    /// given to another client, or its client's scope changed (while auth was off, once keys
    /// are on). For a long-lived stream, which makes no next request to be refused at: it ends
    /// on it, and a client that may still connect connects again under the new roster.
    pub fn revoked(&self, caller: &Caller) -> impl Future<Output = ()> + Send + 'static {
        let directory = Arc::clone(&self.directory);
        let mut replaced = directory.replaced();
        let caller = caller.clone();
        async move {
            while replaced.changed().await.is_ok() {
                let roster = directory.current();
                let accepted = match &caller {
                    Caller::Client { digest, profile } => {
                        roster.still_names(digest, &profile.name, &profile.scope)
                    }
                    Caller::Admin(digest) => roster.is_admin(digest),
                    Caller::Anonymous => roster.auth_off(),
                };
                if !accepted {
                    return;
                }
            }
            // The directory is gone with the server: the stream ends with it otherwise.
            std::future::pending::<()>().await;
        }
    }

    /// Whether auth is off now (no client key accepted).
    pub fn auth_off(&self) -> bool {
        self.directory.current().auth_off()
    }

    /// Decides a request for a route that needs `role`: the caller, or the 401/403 to answer.
    /// `what` names the admin action in messages ("forcing breakers"); `admin_env` names the
    /// admin key's variable.
    pub fn authorize(
        &self,
        headers: &HeaderMap,
        role: Role,
        what: &str,
        admin_env: &str,
    ) -> Result<Caller, Box<Response>> {
        let roster = self.directory.current();
        let presented = Presented::of(headers);
        let identified = presented
            .token()
            .map(|k| roster.identify(k))
            .unwrap_or_default();
        let (admin, client) = (identified.admin, identified.client);
        if let Some(digest) = admin {
            return Ok(Caller::Admin(digest));
        }
        match role {
            Role::Client => match client {
                Some((digest, profile)) => Ok(Caller::Client { digest, profile }),
                None if roster.auth_off() => Ok(Caller::Anonymous),
                None => Err(Box::new(presented.refusal(
                    "client key",
                    "the bearer key is not valid; use a client key or the admin key",
                ))),
            },
            Role::Admin => {
                if !roster.has_admin() && roster.auth_off() {
                    return Ok(Caller::Anonymous);
                }
                let no_admin = || {
                    forbidden(format!(
                        "{what} needs the admin key, and none is configured; set {admin_env} on the gateway"
                    ))
                };
                if client.is_some() {
                    return Err(Box::new(if roster.has_admin() {
                        forbidden(format!(
                            "{what} needs the admin key; a client key is not enough"
                        ))
                    } else {
                        no_admin()
                    }));
                }
                if !roster.has_admin() {
                    // No admin key exists, so no credential could pass: say so rather than
                    // inviting the caller to try keys.
                    return Err(Box::new(no_admin()));
                }
                Err(Box::new(presented.refusal(
                    "admin key",
                    "the bearer key is not the admin key",
                )))
            }
        }
    }
}

/// The client-key check of the guards (`gate.rs`, and `/mcp`'s through it): records the
/// [`Caller`] on `request`, or the 401 to answer.
///
/// With client keys off, a request that changes something and that a browser marks
/// cross-site is refused here, for every route at once: a route that reads no body (pausing a
/// watch, cancelling a job) would otherwise be a form a web page could post through the
/// user's browser, with no key to stop it. Routes with a body refuse it when they read it too.
pub(super) fn authenticate(keys: &Keys, request: &mut Request) -> Result<(), Box<Response>> {
    let caller = keys.authorize(request.headers(), Role::Client, "this", "")?;
    if matches!(caller, Caller::Anonymous) && !request.method().is_safe() {
        refuse_cross_site(request.headers()).map_err(|e| Box::new(e.into_response()))?;
    }
    request.extensions_mut().insert(caller);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::digest;

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

    /// Keys as the flat lists make them: anonymous clients named after their digests.
    fn keys(clients: &[&str], admin: &[&str]) -> Keys {
        let mut roster = Roster::default();
        for k in clients {
            let d = digest(k.as_bytes());
            let profile = ClientProfile::unrestricted(ClientName::for_key_digest(&d));
            roster
                .add_client(d, Arc::new(profile))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        for k in admin {
            roster
                .add_admin(digest(k.as_bytes()))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        Keys::new(roster)
    }

    #[test]
    fn client_and_admin_routes_answer_401_and_403_rightly() {
        let keys = keys(&["c1", "c2"], &["adm"]);
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
        assert!(matches!(&c1, Ok(c) if c.client() == c1_name));
        let c2 = keys.authorize(&headers(Some("c2")), Role::Client, "x", "A");
        assert!(
            matches!(&c2, Ok(c) if c.client() != c1_name),
            "two keys are two clients"
        );
        let adm = keys.authorize(&headers(Some("adm")), Role::Client, "x", "A");
        assert!(matches!(&adm, Ok(c) if c.client() == ClientName::admin() && c.is_admin()));
    }

    #[test]
    fn the_scheme_is_matched_without_regard_to_case() {
        let keys = keys(&["c1"], &[]);
        let with = |value: &str| {
            let mut h = HeaderMap::new();
            h.insert(
                header::AUTHORIZATION,
                HeaderValue::from_str(value).unwrap_or_else(|e| panic!("{e}")),
            );
            status(keys.authorize(&h, Role::Client, "x", "A"))
        };
        for accepted in ["Bearer c1", "bearer c1", "BEARER c1", "bEaReR  c1 "] {
            assert_eq!(with(accepted), 200, "{accepted}");
        }
        for refused in [
            "Bearerc1",
            "Basic c1",
            "Token c1",
            "Bearer",
            "Bearer c2",
            "c1",
        ] {
            assert_eq!(with(refused), 401, "{refused}");
        }
    }

    #[tokio::test]
    async fn a_key_sent_without_the_bearer_scheme_is_told_so_and_not_echoed() {
        let keys = keys(&["c1-secret"], &["adm-secret"]);
        let refusal = |value: Option<&str>, role: Role| {
            let mut h = HeaderMap::new();
            if let Some(v) = value {
                h.insert(
                    header::AUTHORIZATION,
                    HeaderValue::from_str(v).unwrap_or_else(|e| panic!("{e}")),
                );
            }
            let r = keys.authorize(&h, role, "forcing breakers", "A");
            let shown = format!("{value:?}");
            async move {
                let res = match r {
                    Ok(c) => panic!("{shown} was accepted as {c:?}"),
                    Err(res) => *res,
                };
                assert_eq!(res.status(), 401, "{shown}");
                let bytes = axum::body::to_bytes(res.into_body(), 4096)
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
                String::from_utf8_lossy(&bytes).into_owned()
            }
        };
        for (value, role, key) in [
            ("c1-secret", Role::Client, "client key"),
            ("Basic YzE6c2VjcmV0", Role::Client, "client key"),
            ("adm-secret", Role::Admin, "admin key"),
        ] {
            let body = refusal(Some(value), role).await;
            assert!(
                body.contains("the Authorization header is not of the Bearer scheme")
                    && body.contains(&format!("send `Authorization: Bearer <{key}>`")),
                "{value}: {body}"
            );
            assert!(!body.contains(value), "the header is echoed: {body}");
        }
        let missing = refusal(None, Role::Client).await;
        assert!(missing.contains("missing credentials"), "{missing}");
        let wrong = refusal(Some("Bearer c2"), Role::Client).await;
        assert!(wrong.contains("the bearer key is not valid"), "{wrong}");
        for empty in ["Bearer", "Bearer   ", "bearer"] {
            let said = refusal(Some(empty), Role::Client).await;
            assert!(
                said.contains("names the Bearer scheme but no key after it"),
                "{empty:?}: {said}"
            );
        }
    }

    /// Two Authorization headers are refused whatever they hold: which one counted would
    /// depend on their order (a proxy's added header, or the client's own).
    #[tokio::test]
    async fn several_authorization_headers_are_a_bad_request() {
        let keys = keys(&["c1"], &["adm"]);
        for pair in [["Bearer c1", "Bearer adm"], ["Bearer nope", "Bearer c1"]] {
            let mut h = HeaderMap::new();
            for value in pair {
                h.append(header::AUTHORIZATION, HeaderValue::from_static(value));
            }
            for role in [Role::Client, Role::Admin] {
                let res = match keys.authorize(&h, role, "x", "A") {
                    Ok(c) => panic!("{pair:?} accepted as {c:?}"),
                    Err(res) => *res,
                };
                assert_eq!(res.status(), 400, "{pair:?}");
                let bytes = axum::body::to_bytes(res.into_body(), 4096)
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
                let body = String::from_utf8_lossy(&bytes);
                assert!(
                    body.contains("several Authorization headers; send one"),
                    "{body}"
                );
            }
        }
    }

    #[test]
    fn auth_is_off_only_without_client_keys() {
        let open = keys(&[], &[]);
        for role in [Role::Client, Role::Admin] {
            let caller = open.authorize(&headers(None), role, "x", "A");
            assert!(matches!(&caller, Ok(Caller::Anonymous)));
            assert!(matches!(&caller, Ok(c) if c.client() == ClientName::local()));
        }
        let no_admin = keys(&["c1"], &[]);
        let r = no_admin.authorize(
            &headers(Some("c1")),
            Role::Admin,
            "forcing breakers",
            "FG_ADMIN",
        );
        assert_eq!(status(r), 403, "no admin key configured: refused, not open");
        let admin_only = keys(&[], &["adm"]);
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

    #[test]
    fn a_reloaded_roster_decides_the_next_request() {
        let keys = keys(&["old"], &[]);
        assert_eq!(
            status(keys.authorize(&headers(Some("old")), Role::Client, "x", "A")),
            200
        );
        let mut next = Roster::default();
        let d = digest(b"new");
        next.add_client(
            d,
            Arc::new(ClientProfile::unrestricted(ClientName::for_key_digest(&d))),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        keys.directory().replace(next);
        assert_eq!(
            status(keys.authorize(&headers(Some("old")), Role::Client, "x", "A")),
            401
        );
        assert_eq!(
            status(keys.authorize(&headers(Some("new")), Role::Client, "x", "A")),
            200
        );
    }
}
