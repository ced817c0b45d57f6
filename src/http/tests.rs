//! The route table is the router and the document: every operation in it reaches its handler
//! (no fallback 404, no 405), and the OpenAPI document lists exactly the table's operations.

use std::collections::BTreeSet;
use std::path::Path;

use axum::body::Body;
use axum::http::{Method, Request, header};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

use super::routes::openapi::document;
use super::routes::{ROUTED_PATHS, ROUTES, Verb};
use super::state::AppState;
use crate::config::{EMBEDDED_CONFIG, EmbeddedFiles};
use crate::providers::Env;

struct NoEnv;

impl Env for NoEnv {
    fn var(&self, _name: &str) -> Option<String> {
        None
    }
}

/// The shipped configuration, wired as `faregate serve` wires it (the composition root is the
/// one place that knows how; its providers point at the local simulator and are never called).
fn state() -> AppState {
    let (config, _) = crate::config::load(
        &EmbeddedFiles,
        Path::new(EMBEDDED_CONFIG),
        &crate::tools::names(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    crate::app::build(config, &NoEnv)
        .unwrap_or_else(|e| panic!("{e:?}"))
        .state
}

fn method(verb: Verb) -> Method {
    match verb {
        Verb::Get => Method::GET,
        Verb::Post => Method::POST,
        Verb::Delete => Method::DELETE,
    }
}

#[tokio::test]
async fn every_route_in_the_table_is_served() {
    let router = super::router(state(), CancellationToken::new());
    for route in ROUTES {
        let path = route
            .path
            .replace("{tool}", "search_hotels")
            .replace("{key}", "search_hotels.duffel")
            .replace("{job_id}", "no-such-job")
            .replace("{watch_id}", "no-such-watch");
        for op in route.operations {
            let request = Request::builder()
                .method(method(op.verb))
                .uri(&path)
                .header(header::ACCEPT, "application/json, text/event-stream")
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from("{}"))
                .unwrap_or_else(|e| panic!("{e}"));
            let res = router
                .clone()
                .oneshot(request)
                .await
                .unwrap_or_else(|e| match e {});
            let status = res.status().as_u16();
            // Event streams never end: their head is the answer.
            let streaming = res
                .headers()
                .get(header::CONTENT_TYPE)
                .is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
            let body = if streaming {
                Vec::new()
            } else {
                axum::body::to_bytes(res.into_body(), 1 << 20)
                    .await
                    .map(|b| b.to_vec())
                    .unwrap_or_default()
            };
            let body = String::from_utf8_lossy(&body);
            assert!(
                status != 405 && !body.contains("no route"),
                "{:?} {}: {status} {body}",
                op.verb,
                route.path
            );
        }
    }
}

#[test]
fn the_document_lists_exactly_the_tables_operations() {
    let doc = document(&state(), ROUTES, &crate::clients::Scope::everything());
    let documented: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .into_iter()
        .flatten()
        .flat_map(|(path, item)| {
            item.as_object()
                .into_iter()
                .flatten()
                .map(move |(verb, _)| (path.clone(), verb.clone()))
        })
        .collect();
    let table: BTreeSet<(String, String)> = ROUTES
        .iter()
        .flat_map(|r| {
            r.operations
                .iter()
                .map(move |op| (r.path.to_string(), op.verb.openapi().to_string()))
        })
        .collect();
    assert_eq!(documented, table);
    assert_eq!(ROUTED_PATHS.len(), ROUTES.len());
    let paths: BTreeSet<&str> = ROUTED_PATHS.iter().copied().collect();
    assert_eq!(paths.len(), ROUTES.len(), "each path is one row");
}
