//! The name of one breaker: which tool on which provider it guards.

use std::fmt;

/// Which upstream a breaker guards: a tool × provider by default. A deployment that wants
/// per-endpoint or per-API-key breakers puts that in `provider` (e.g. `"duffel:key2"`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BreakerKey {
    /// The tool name, e.g. `search_flights`.
    pub tool: String,
    /// The provider name, e.g. `duffel`.
    pub provider: String,
}

impl BreakerKey {
    /// A key for `tool` on `provider`.
    pub fn new(tool: impl Into<String>, provider: impl Into<String>) -> Self {
        Self {
            tool: tool.into(),
            provider: provider.into(),
        }
    }
}

impl fmt::Display for BreakerKey {
    /// `tool/provider`, e.g. `search_flights/duffel`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.tool, self.provider)
    }
}
