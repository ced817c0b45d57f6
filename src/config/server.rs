//! `[server]` and `[limits]`: what the gateway accepts from the network.
//!
//! These keys protect the gateway itself: how long a client may dawdle over
//! its headers, how long a request may run, how many connections are open at once, how long a
//! shutdown waits, and how much one client may ask. Each has a default that is safe to expose,
//! and each impossible value is reported with the fix, like every other key.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::model::{LimitsConfig, Rate, ServerConfig, ToolConfig, default_limits, default_server};
use super::reader::Section;
use crate::clients::{ProviderReserve, ToolShare};

/// `[server]` with the tools and prompts directories (relative to `base`).
pub(super) fn read_server(
    root: &Section<'_>,
    base: &std::path::Path,
) -> (ServerConfig, PathBuf, PathBuf) {
    let mut server = default_server();
    let mut tools_dir = base.join("tools");
    let mut prompts_dir = base.join("prompts");
    let Some(s) = root.table("server") else {
        return (server, tools_dir, prompts_dir);
    };
    if let Some(listen) = s.string("listen") {
        match listen.parse::<SocketAddr>() {
            Ok(a) => server.listen = a,
            Err(_) => s.error(
                "listen",
                format!("\"{listen}\" is not an address; write e.g. \"127.0.0.1:8080\""),
            ),
        }
    }
    if let Some(n) = s.integer("max_body_bytes", 1024, 64 * 1024 * 1024) {
        server.max_body_bytes = n as usize;
    }
    if let Some(d) = s.string("tools_dir") {
        tools_dir = base.join(d);
    }
    if let Some(d) = s.string("prompts_dir") {
        prompts_dir = base.join(d);
    }
    if let Some(d) = s.duration("header_read_timeout") {
        if d < Duration::from_millis(100) || d > Duration::from_secs(300) {
            s.error(
                "header_read_timeout",
                "must be from \"100ms\" to \"5m\"; e.g. \"10s\" (slower clients are disconnected)",
            );
        } else {
            server.header_read_timeout = d;
        }
    }
    if let Some(d) = s.duration("request_timeout") {
        if d.is_zero() {
            s.error(
                "request_timeout",
                "must be longer than zero; leave it out for the longest tool deadline plus 5 s",
            );
        } else {
            server.request_timeout = Some(d);
        }
    }
    if let Some(n) = s.integer("max_connections", 1, 1_000_000) {
        server.max_connections = n as u32;
    }
    // Above 100,000 one connection could hold more calls than a whole gateway should.
    if let Some(n) = s.integer("max_concurrent_streams", 1, 100_000) {
        server.max_concurrent_streams = n as u32;
    }
    if let Some(d) = s.duration("shutdown_grace") {
        server.shutdown_grace = d;
    }
    s.finish();
    (server, tools_dir, prompts_dir)
}

/// A request timeout shorter than a tool's deadline would cut calls off before they can
/// answer (even with a fallback), so it is refused; the message names the tool.
pub(super) fn check_request_timeout(
    root: &Section<'_>,
    server: &ServerConfig,
    tools: &[ToolConfig],
) {
    let (Some(timeout), Some(longest)) = (
        server.request_timeout,
        tools.iter().max_by_key(|t| t.deadline),
    ) else {
        return;
    };
    if timeout <= longest.deadline {
        root.error(
            "server.request_timeout",
            format!(
                "{} is not longer than the deadline of {} ({}); a request would be cut off before its tool answers. Write more than {}, or leave the key out for deadline + 5 s",
                humantime::format_duration(timeout),
                longest.name,
                humantime::format_duration(longest.deadline),
                humantime::format_duration(longest.deadline),
            ),
        );
    }
}

/// `[limits]`.
pub(super) fn read_limits(root: &Section<'_>) -> LimitsConfig {
    let mut limits = default_limits();
    let Some(s) = root.table("limits") else {
        return limits;
    };
    if let Some(r) = s.string("client_rate") {
        match parse_rate(&r) {
            Ok(rate) => limits.client_rate = rate,
            Err(msg) => s.error("client_rate", msg),
        }
    }
    if let Some(n) = s.integer("client_burst", 1, 1_000_000) {
        limits.client_burst = n as u32;
    }
    if let Some(n) = s.integer("client_max_concurrent_calls", 0, 1_000_000) {
        limits.client_max_concurrent_calls = (n > 0).then_some(n as u32);
    }
    if let Some(n) = s.integer("client_max_streams", 0, 1_000_000) {
        limits.client_max_streams = (n > 0).then_some(n as u32);
    }
    if let Some(n) = s.integer("client_max_mcp_sessions", 0, 1_000_000) {
        limits.client_max_mcp_sessions = (n > 0).then_some(n as u32);
    }
    // `fraction` refuses what is not in (0, 1], saying what to write; the share checks again.
    if let Some(fraction) = s.fraction("client_share_of_tool") {
        match ToolShare::new(fraction) {
            Ok(share) => limits.client_share_of_tool = share,
            Err(msg) => s.error("client_share_of_tool", msg),
        }
    }
    // `fraction_or_zero` refuses what is not in [0, 1], saying what to write; the reserve
    // checks again.
    if let Some(fraction) = s.fraction_or_zero("provider_reserve") {
        match ProviderReserve::new(fraction) {
            Ok(reserve) => limits.provider_reserve = reserve,
            Err(msg) => s.error("provider_reserve", msg),
        }
    }
    s.finish();
    limits
}

/// `"20/s"`, `"600/m"`, `"1000/h"`, or `"off"`.
pub(crate) fn parse_rate(s: &str) -> Result<Option<Rate>, String> {
    let bad = || {
        format!(
            "\"{s}\" is not a rate; write requests per period, e.g. \"20/s\", \"600/m\" or \"10000/h\", or \"off\""
        )
    };
    let trimmed = s.trim();
    if trimmed == "off" {
        return Ok(None);
    }
    let (count, per) = trimmed.split_once('/').ok_or_else(bad)?;
    let count: u32 = count.trim().parse().map_err(|_| bad())?;
    if count == 0 {
        return Err(bad());
    }
    let per = match per.trim() {
        "s" => Duration::from_secs(1),
        "m" => Duration::from_secs(60),
        "h" => Duration::from_secs(3600),
        _ => return Err(bad()),
    };
    Ok(Some(Rate { count, per }))
}
