//! The MCP revisions `/mcp` accepts, and what the newest asks of every result.
//!
//! The list is faregate's own rather than rmcp's `KNOWN_VERSIONS`: a revision rmcp learns in
//! an upgrade is served only once someone has read what it asks and said so here (and in the
//! README's table of revisions, which is read from this list).
//!
//! 2026-07-28 has no `initialize`, so a client learns which server answers from the results
//! themselves: servers SHOULD put their `Implementation` in every result's `_meta` under
//! `io.modelcontextprotocol/serverInfo` ([`stamp_server_info`]). Earlier revisions carry it in
//! the `initialize` result only, and their results are left as they were.

use rmcp::model::{Implementation, MetaObject, ProtocolVersion};

/// Every revision `/mcp` serves, oldest first: the 2025 and earlier ones with `initialize`
/// (sessions or stateless, `[mcp] legacy_sessions`), 2026-07-28 statelessly.
pub(super) const REVISIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2024_11_05,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// The `_meta` key of a result's server info (2026-07-28).
const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// Who answers: `serverInfo` of `initialize`, `server/discover`'s stamp and every 2026-07-28
/// result's.
pub(super) fn implementation() -> Implementation {
    Implementation::new("faregate", env!("CARGO_PKG_VERSION")).with_title("faregate travel tools")
}

/// Puts the server info into a result's `_meta` when the request's revision asks for it
/// (`revision` is `None` when rmcp could not tell, which only happens before 2026-07-28).
pub(super) fn stamp_server_info(meta: &mut Option<MetaObject>, revision: Option<ProtocolVersion>) {
    let Some(revision) = revision else { return };
    if revision.has_initialize() {
        return;
    }
    if let Ok(info) = serde_json::to_value(implementation()) {
        meta.get_or_insert_default()
            .insert(SERVER_INFO_KEY.to_string(), info);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_revisions_without_initialize_get_the_stamp() {
        let stamped = |revision| {
            let mut meta = None;
            stamp_server_info(&mut meta, revision);
            meta.and_then(|m| m.get(SERVER_INFO_KEY).cloned())
        };
        let info = stamped(Some(ProtocolVersion::V_2026_07_28));
        assert_eq!(
            info.as_ref().and_then(|i| i["name"].as_str()),
            Some("faregate")
        );
        assert_eq!(
            info.as_ref().and_then(|i| i["version"].as_str()),
            Some(env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(stamped(Some(ProtocolVersion::V_2025_11_25)), None);
        assert_eq!(stamped(None), None);
    }
}
