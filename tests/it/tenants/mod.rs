//! Clients kept apart: each call and job carries the client whose key authenticated it
//! ([`jobs`]), named clients are configured ([`check`]) and reloaded without a restart
//! ([`reload`], and by SIGHUP: [`sighup`]), and a client calls and sees only its tools
//! ([`scopes`]), its MCP sessions and event stream are its own ([`sessions`]), it hears alerts
//! about its tools only ([`alerts`]), its callbacks go only where its own list says
//! ([`callbacks`]), and no client takes a tool from the others: each holds at most its share
//! of a tool's concurrent calls ([`share`]), and no client spends a provider's rate-limit
//! window the others share ([`provider_share`]).

mod alerts;
mod callbacks;
mod check;
mod jobs;
mod provider_share;
mod reload;
mod scopes;
mod secrets;
mod sessions;
mod share;
mod sighup;

use std::path::Path;

use faregate::clients::digest;
use serde_json::Value;

use crate::support::{Stack, repo, send};

/// POSTs `body` as JSON to `path` with `key`; the status and the JSON answer.
async fn post_as(s: &Stack, key: &str, path: &str, body: Value) -> (u16, Value) {
    let (status, _, body) = send(s.http.post(s.url(path)).bearer_auth(key).json(&body)).await;
    (status, body)
}

/// An error answer's `message`.
fn message(body: &Value) -> &str {
    body["message"].as_str().unwrap_or_default()
}

/// A key's SHA-256 as `sha256sum` prints it (what `key_sha256` holds).
fn hex(key: &str) -> String {
    digest(key.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{e}"));
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{e}")) {
        let entry = entry.unwrap_or_else(|e| panic!("{e}"));
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Writes the shipped `faregate.toml` with `clients` appended into `dir`.
fn write_config(dir: &Path, clients: &str) {
    let shipped = std::fs::read_to_string(repo().join("faregate.toml")).unwrap_or_default();
    std::fs::write(dir.join("faregate.toml"), format!("{shipped}\n{clients}"))
        .unwrap_or_else(|e| panic!("{e}"));
}

/// A directory holding the shipped configuration, tools and prompts, with `clients` appended to
/// `faregate.toml`.
fn config_dir(clients: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    copy_dir(&repo().join("tools"), &dir.path().join("tools"));
    copy_dir(&repo().join("prompts"), &dir.path().join("prompts"));
    write_config(dir.path(), clients);
    dir
}
