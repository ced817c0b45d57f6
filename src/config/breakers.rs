//! `[breakers] scope` and each provider's `breaker_scope`: how far one breaker reaches.
//!
//! ```toml
//! [breakers]
//! scope = "tool_provider"      # default: one breaker per tool on each provider
//!
//! [providers.duffel]
//! breaker_scope = "provider"   # this provider's tools share one breaker
//! ```
//!
//! The scope is set for every provider at once and may be set per provider, because it is a
//! property of how a provider fails: one whose outages take every endpoint down at once is
//! best judged by one breaker, one whose endpoints fail apart by one breaker per tool. It is
//! not a tool's setting: a breaker shared by several tools cannot follow one tool's choice.
//! For the same reason a shared breaker follows `[defaults.breaker]`, and a tool's own
//! `[breaker]` that differs from it is said to apply only to that tool's unshared breakers.

use super::model::ToolConfig;
use super::reader::Section;
use crate::breaker::{BreakerConfig, BreakerScope};

/// Reads the breaker scope at `key` of `s`; an unknown one is an error naming every scope.
pub(super) fn read_scope(s: &Section<'_>, key: &'static str) -> Option<BreakerScope> {
    let value = s.string(key)?;
    let scope = BreakerScope::parse(&value);
    if scope.is_none() {
        s.error(
            key,
            format!(
                "\"{value}\" is not a breaker scope; write \"tool_provider\" (one breaker per tool on each provider, the default), \"provider\" (one per provider, shared by all its tools) or \"credential\" (one per provider account, shared by all its tools)"
            ),
        );
    }
    scope
}

/// Whether `name` may name a provider: it is one half of every breaker key of the provider,
/// in the key's URL form (`tool.provider`, `*.provider@digest`) and in metric labels, so a dot,
/// a slash or an `@` would make keys ambiguous.
pub(super) fn is_provider_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Refuses a provider name that cannot stand in a breaker key, with what to write instead.
pub(super) fn check_provider_name(provider: &Section<'_>, name: &str) {
    if !is_provider_name(name) {
        provider.error(
            "",
            format!(
                "\"{name}\" cannot name a provider: use letters, digits, '_' and '-' (at most 64), e.g. \"duffel_eu\"; the name is part of each breaker key (search_flights.{name} would be ambiguous)"
            ),
        );
    }
}

/// `[breakers]`: the scope of every provider that names none.
pub(super) fn read_breakers(root: &Section<'_>) -> BreakerScope {
    let Some(s) = root.table("breakers") else {
        return BreakerScope::default();
    };
    let scope = read_scope(&s, "scope").unwrap_or_default();
    s.finish();
    scope
}

/// Warns of each tool whose own `[breaker]` differs from `[defaults.breaker]` while one of its
/// providers shares breakers across tools: on that provider the tool's tuning is not used.
pub(super) fn check_shared_policies(
    root: &Section<'_>,
    scope_of: impl Fn(&str) -> BreakerScope,
    shared_policy: &BreakerConfig,
    tools: &[ToolConfig],
) {
    for tool in tools {
        if tool.breaker == *shared_policy {
            continue;
        }
        let shared: Vec<&str> = tool
            .providers
            .iter()
            .filter(|p| scope_of(p).is_shared())
            .map(String::as_str)
            .collect();
        if shared.is_empty() {
            continue;
        }
        root.warning(
            "breakers",
            format!(
                "{}: its [breaker] is not used on {}: there every tool shares one breaker (breaker scope \"provider\" or \"credential\"), which follows [defaults.breaker]; move the tuning there, or keep the scope \"tool_provider\" for that provider",
                tool.file.display(),
                shared.join(", ")
            ),
        );
    }
}
