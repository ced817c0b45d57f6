//! The fast-fail floor for `benches/load/run-all.sh`: the least an axum JSON handler can do for
//! a tool call, to compare faregate's fallback answer against on the same machine.
//!
//! `cargo run --release --example floor -- ADDR [BODY_FILE]` serves `POST /{*path}`: it reads
//! the request body and parses it as JSON (as faregate must), then answers 200 with the bytes
//! of `BODY_FILE` (faregate's own fallback envelope, captured by the script, so both answers
//! are the same size) as `application/json`, or `{"status":"ok"}` without a file. Nothing
//! else: no routing beyond one pattern, no logging, no state.

use std::net::SocketAddr;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;

async fn answer(State(body): State<Bytes>, request: Bytes) -> Response {
    match serde_json::from_slice::<serde_json::Value>(&request) {
        Ok(_) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(_) => (StatusCode::BAD_REQUEST, "malformed JSON").into_response(),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr: SocketAddr = args
        .next()
        .unwrap_or_else(|| "127.0.0.1:18399".into())
        .parse()?;
    let body = match args.next() {
        Some(path) => Bytes::from(std::fs::read(&path)?),
        None => Bytes::from_static(br#"{"status":"ok"}"#),
    };
    let app = Router::new()
        .route("/{*path}", post(answer))
        .with_state(body);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("floor on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
