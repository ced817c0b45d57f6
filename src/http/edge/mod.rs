//! The edge: what every request meets before a handler, and how every refusal is answered.
//!
//! - `server`: the accept loop (connection cap, header timeout, graceful drain) and the
//!   request timeout; `linger`: closing a connection so its last answer arrives; `repoll`: a
//!   connection that wakes itself while polled is polled again on the spot;
//! - `preface`: HTTP/1.1 or HTTP/2 by a connection's first bytes; `h2c`: serving HTTP/2 on a
//!   connection under the same limits; `upgrade`: switching an HTTP/1.1 connection to HTTP/2
//!   (`Upgrade: h2c`);
//! - `auth`: client and admin keys, held as digests in a reloadable roster; `clients`: the
//!   roster and per-client limits configuration and environment describe;
//! - `limits`: per-client rate and in-flight limits on the tool-call routes; `fleet_limits`:
//!   the task that holds each client's rate for a fleet; `streams`: event streams held open,
//!   per client and in all;
//! - `body`: what HTTP says about a body (declared size, content type, limit) before a
//!   protocol reads it;
//! - `error`: the one error → JSON mapping, also for refusals axum and rmcp write;
//! - `trace`: one span per request.

mod auth;
mod body;
mod clients;
mod error;
mod fleet_limits;
mod gate;
mod h2c;
mod holding;
mod limits;
mod linger;
mod preface;
mod repoll;
mod server;
mod streams;
mod trace;
mod upgrade;

pub use auth::{Caller, Keys, Role};
pub use clients::{ClientSetup, client_setup};
pub use error::ApiError;
pub use limits::{ClientId, ClientLimits};
pub use server::{ServeOptions, serve};
pub use streams::StreamLimits;

pub(crate) use body::{Browsers, read_body, read_json_body, refuse_cross_site};
pub(crate) use error::{PathParam, as_json_rpc, method_not_allowed, no_route, refusals_as_json};
pub(crate) use fleet_limits::share as share_client_rates;
pub(crate) use gate::{Gate, check_size_and_key, guard};
pub(crate) use holding::{ending_at, holding};
pub(crate) use limits::{client_id, limit};
pub(crate) use server::{RequestBounds, bound_request, request_timed_out};
pub(crate) use streams::{StreamSlot, open_stream};
pub(crate) use trace::layer as trace_layer;
