//! What one breaker stands for: a tool on a provider, a whole provider, or one provider account.
//!
//! A provider that fails for one tool often fails for every tool (its gateway is down, its
//! account is suspended or rate-limited), and with one breaker per tool each tool has to find
//! that out on its own, with its own slow failures. The scope says how far one breaker's
//! verdict reaches: `tool_provider` keeps tools apart (a provider's flight search may fail while
//! its hotel search works), `provider` makes one breaker of all the provider's tools, and
//! `credential` one per account the provider is called with, so deployments that share a
//! database (a fleet's breaker rows) but not an account keep their breakers apart.

use super::BreakerKey;

/// How far one breaker reaches (`[breakers] scope`, or `breaker_scope` of a provider).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BreakerScope {
    /// `"tool_provider"` (default): one breaker per tool on each provider.
    #[default]
    ToolProvider,
    /// `"provider"`: one breaker per provider name, shared by every tool it serves.
    Provider,
    /// `"credential"`: one breaker per provider account (its name and a digest of its
    /// credential), shared by every tool it serves.
    Credential,
}

impl BreakerScope {
    /// Every scope, in the order the configuration documents them.
    pub const ALL: [BreakerScope; 3] = [
        BreakerScope::ToolProvider,
        BreakerScope::Provider,
        BreakerScope::Credential,
    ];

    /// The configuration's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            BreakerScope::ToolProvider => "tool_provider",
            BreakerScope::Provider => "provider",
            BreakerScope::Credential => "credential",
        }
    }

    /// The scope spelled `s`, if there is one.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|scope| scope.as_str() == s)
    }

    /// Whether several tools share one breaker under this scope.
    pub fn is_shared(self) -> bool {
        self != BreakerScope::ToolProvider
    }

    /// The key of the breaker guarding `tool` on `provider`, whose credential has the digest
    /// `account` (a provider that cannot say falls back to its name alone).
    pub fn key(self, tool: &str, provider: &str, account: Option<&str>) -> BreakerKey {
        match (self, account) {
            (BreakerScope::ToolProvider, _) => BreakerKey::new(tool, provider),
            (BreakerScope::Provider, _) | (BreakerScope::Credential, None) => {
                BreakerKey::shared(provider)
            }
            (BreakerScope::Credential, Some(account)) => {
                BreakerKey::shared_account(provider, account)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_scope_keys_a_tool_on_a_provider() {
        let account = Some("3f9a0c1d2e4b5a6c");
        let key = |scope: BreakerScope| scope.key("search_flights", "duffel", account);
        assert_eq!(
            key(BreakerScope::ToolProvider).to_string(),
            "search_flights/duffel"
        );
        assert_eq!(key(BreakerScope::Provider).to_string(), "*/duffel");
        assert_eq!(
            key(BreakerScope::Credential).to_string(),
            "*/duffel@3f9a0c1d2e4b5a6c"
        );
        assert_eq!(key(BreakerScope::Credential).provider_name(), "duffel");
        assert!(key(BreakerScope::Credential).is_shared());
        assert!(!key(BreakerScope::ToolProvider).is_shared());
        // Two tools of one provider share the provider's breaker, and only there.
        assert_eq!(
            BreakerScope::Provider.key("search_hotels", "duffel", account),
            key(BreakerScope::Provider)
        );
        assert_ne!(
            BreakerScope::ToolProvider.key("search_hotels", "duffel", account),
            key(BreakerScope::ToolProvider)
        );
    }

    #[test]
    fn scopes_read_back_from_their_spelling() {
        for scope in BreakerScope::ALL {
            assert_eq!(BreakerScope::parse(scope.as_str()), Some(scope));
        }
        assert_eq!(BreakerScope::parse("tool"), None);
    }
}
