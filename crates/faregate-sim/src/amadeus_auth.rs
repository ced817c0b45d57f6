//! The simulated Amadeus OAuth2 token endpoint: `POST /v1/security/oauth2/token`.
//!
//! Any non-empty `client_id` and `client_secret` are accepted (like the Duffel routes accept
//! any token); the answer is the documented token object with `expires_in` set to the
//! simulator's token lifetime (1799 s unless a test shortens it). Errors use the token
//! endpoint's own shape, `{error, error_description, code, title}`, with no `errors[]`.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tokio::time::Instant;

use super::data::{base62, mix};
use super::{Simulator, lock};

/// The token endpoint's error body.
fn token_error(status: StatusCode, error: &str, description: &str) -> Response {
    (
        status,
        axum::Json(json!({ "error": error, "error_description": description,
                           "code": 38187, "title": "Invalid parameters" })),
    )
        .into_response()
}

/// Decodes `application/x-www-form-urlencoded` pairs (`+` is a space, `%XX` a byte).
fn form_pairs(body: &[u8]) -> Vec<(String, String)> {
    let decode = |s: &str| {
        let bytes = s.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < bytes.len() => {
                    let hex = |c: u8| char::from(c).to_digit(16);
                    match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                        (Some(h), Some(l)) => {
                            out.push((h * 16 + l) as u8);
                            i += 2;
                        }
                        _ => out.push(b'%'),
                    }
                }
                b => out.push(b),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    String::from_utf8_lossy(body)
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// `POST /v1/security/oauth2/token`.
pub(crate) async fn token(State(sim): State<Simulator>, body: Bytes) -> Response {
    let pairs = form_pairs(&body);
    let get = |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    };
    if get("grant_type") != Some("client_credentials") {
        return token_error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            "Only client_credentials value is allowed for the body parameter grant_type",
        );
    }
    let (Some(client_id), Some(_secret)) = (get("client_id"), get("client_secret")) else {
        return token_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "Client credentials are invalid",
        );
    };
    let n = sim.inner.seed ^ sim.next_seq().wrapping_mul(0x9E37_79B9);
    let access_token = format!("{}{}", base62(mix(n), 11), base62(mix(n ^ 0xA5A5), 11));
    let lifetime = {
        let mut state = lock(&sim.inner.amadeus);
        state.tokens.insert(access_token.clone(), Instant::now());
        state.tokens.lifetime
    };
    axum::Json(json!({
        "type": "amadeusOAuth2Token",
        "username": "simulator@example.com",
        "application_name": "faregate-simulator",
        "client_id": client_id,
        "token_type": "Bearer",
        "access_token": access_token,
        "expires_in": lifetime.as_secs(),
        "state": "approved",
        "scope": "",
    }))
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::form_pairs;

    #[test]
    fn form_bodies_decode() {
        let pairs =
            form_pairs(b"grant_type=client_credentials&client_id=a+b%26c&client_secret=%zz");
        assert_eq!(pairs[1], ("client_id".to_string(), "a b&c".to_string()));
        assert_eq!(pairs[2].1, "%zz");
    }
}
