//! The edge: what every request meets before a handler, and how every refusal is answered.
//!
//! - `server`: the accept loop (connection cap, header timeout, graceful drain) and the
//!   request timeout;
//! - `auth`: client and admin keys, held as digests;
//! - `limits`: per-client rate and in-flight limits on the tool-call routes;
//! - `json`: what HTTP says about a body (content type, size) before a protocol reads it;
//! - `error`: the one error → JSON mapping;
//! - `trace`: one span per request.

mod auth;
mod error;
mod json;
mod limits;
mod server;
mod trace;

pub use auth::{Caller, ClientKeys, KeyDigest, Keys, Role};
pub use error::ApiError;
pub use limits::{ClientId, ClientLimits};
pub use server::{ServeOptions, serve};

pub(crate) use auth::require_client;
pub(crate) use error::{PathParam, no_route};
pub(crate) use json::read_body;
pub(crate) use limits::limit_calls;
pub(crate) use server::request_timeout;
pub(crate) use trace::layer as trace_layer;
