//! The route table: every path the gateway serves, with its handler, who may reach it and its
//! OpenAPI description, in one place.
//!
//! [`super::router`] builds the axum router from it, [`ROUTED_PATHS`] lists its paths, and
//! `openapi.rs` renders the OpenAPI document's `paths` from it, so the three cannot drift apart:
//! a route is added by adding one row. A route's [`Guard`] decides which edge layers wrap it,
//! and with them the answers those layers give (401, 413, 429, 503), which the document adds to
//! each operation by itself.

pub(crate) mod openapi;
mod row;
mod table;

#[cfg(test)]
pub(crate) use row::Verb;
pub(crate) use row::{Guard, Handler};
pub(crate) use table::ROUTES;

/// Every path the router serves, in table order.
pub const ROUTED_PATHS: [&str; ROUTES.len()] = {
    let mut paths = [""; ROUTES.len()];
    let mut i = 0;
    while i < ROUTES.len() {
        paths[i] = ROUTES[i].path;
        i += 1;
    }
    paths
};
