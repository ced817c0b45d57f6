//! Bearer-key authentication of clients.
//!
//! Keys come from the environment (the config names the variable) and are compared in constant
//! time, so a caller cannot learn a key byte by byte from response timings. With no keys
//! configured, auth is off (demo only), and start-up says so loudly.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// The accepted client keys.
#[derive(Clone, Default)]
pub struct ClientKeys {
    keys: Arc<Vec<Vec<u8>>>,
}

impl std::fmt::Debug for ClientKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClientKeys({} keys, redacted)", self.keys.len())
    }
}

impl ClientKeys {
    /// Keys from a comma-separated list; empty entries are ignored.
    pub fn from_list(list: &str) -> Self {
        ClientKeys {
            keys: Arc::new(
                list.split(',')
                    .map(str::trim)
                    .filter(|k| !k.is_empty())
                    .map(|k| k.as_bytes().to_vec())
                    .collect(),
            ),
        }
    }

    /// True when auth is off.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Whether `presented` is one of the keys, compared in constant time per key.
    pub fn accepts(&self, presented: &[u8]) -> bool {
        let mut ok = false;
        for key in self.keys.iter() {
            ok |= constant_time_eq(key, presented);
        }
        ok
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub(super) fn bearer(headers: &HeaderMap) -> Option<&[u8]> {
    let value = headers.get(header::AUTHORIZATION)?.as_bytes();
    let rest = value
        .strip_prefix(b"Bearer ")
        .or_else(|| value.strip_prefix(b"bearer "))?;
    Some(rest.trim_ascii())
}

/// Middleware: 401 unless auth is off or the request carries a valid client key.
pub async fn require_client(
    State(keys): State<ClientKeys>,
    request: Request,
    next: Next,
) -> Response {
    if keys.is_empty() {
        return next.run(request).await;
    }
    match bearer(request.headers()) {
        Some(key) if keys.accepts(key) => next.run(request).await,
        Some(_) => {
            let mut res = ApiError::new(
                StatusCode::UNAUTHORIZED,
                "the bearer key is not valid; use a key from the gateway's client keys",
            )
            .into_response();
            res.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            res
        }
        None => {
            let mut res = ApiError::new(
                StatusCode::UNAUTHORIZED,
                "missing credentials; send `Authorization: Bearer <client key>`",
            )
            .into_response();
            res.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            res
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
