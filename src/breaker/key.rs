//! The name of one breaker: which tool on which provider it guards.
//!
//! By default a breaker guards one tool on one provider. A breaker shared by every tool of a
//! provider (see `scope.rs`) has the tool [`BreakerKey::ALL_TOOLS`], and one per provider
//! account has the provider's name with a digest of its credential after `@`; either way the
//! key stays two plain strings, so the fleet's rows, the metric labels and the URLs carry it as
//! they carry a tool × provider key.

use std::fmt;

/// Which upstream a breaker guards: a tool × provider by default, or every tool of a provider
/// (or of a provider account) when the tool is [`BreakerKey::ALL_TOOLS`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BreakerKey {
    /// The tool name, e.g. `search_flights`, or `*` for a breaker every tool shares.
    pub tool: String,
    /// The provider name, e.g. `duffel`, or `duffel@<digest>` for one provider account.
    pub provider: String,
}

impl BreakerKey {
    /// The tool of a breaker that every tool of its provider shares. A tool name is a plain
    /// identifier, so it can never be this.
    pub const ALL_TOOLS: &'static str = "*";

    /// A key for `tool` on `provider`.
    pub fn new(tool: impl Into<String>, provider: impl Into<String>) -> Self {
        Self {
            tool: tool.into(),
            provider: provider.into(),
        }
    }

    /// The key of the breaker every tool on `provider` shares.
    pub fn shared(provider: impl Into<String>) -> Self {
        Self::new(Self::ALL_TOOLS, provider)
    }

    /// The key of the breaker every tool on the account `account` (a digest of its credential,
    /// never the credential) of `provider` shares: `*` on `provider@account`.
    pub fn shared_account(provider: &str, account: &str) -> Self {
        Self::shared(format!("{provider}@{account}"))
    }

    /// Whether every tool of its provider shares this breaker.
    pub fn is_shared(&self) -> bool {
        self.tool == Self::ALL_TOOLS
    }

    /// The configured provider name, without an account digest.
    pub fn provider_name(&self) -> &str {
        self.provider
            .split_once('@')
            .map_or(self.provider.as_str(), |(name, _)| name)
    }
}

impl fmt::Display for BreakerKey {
    /// `tool/provider`, e.g. `search_flights/duffel`, `*/duffel` or `*/duffel@3f9a0c1d2e4b5a6c`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.tool, self.provider)
    }
}
