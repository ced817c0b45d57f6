//! Which breaker guards a tool on a provider: the provider's breaker scope says whether the
//! tool has one of its own or shares the provider's (or the provider account's) with every
//! other tool on it.
//!
//! A tool's own breaker follows the tool's `[breaker]`; a shared one follows
//! `[defaults.breaker]`, because no one tool speaks for the others, and waits for a probe as
//! long as the slowest of the tools sharing it may take, so a slow tool's probe is never
//! judged hung by a faster tool's timeout.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::upstream::Upstream;
use crate::breaker::{Breaker, BreakerConfig, BreakerRegistry, BreakerScope};
use crate::config::{BreakersConfig, ToolConfig};

/// How each provider's breakers are keyed, and the policy of the shared ones.
#[derive(Debug, Clone, Default)]
pub(super) struct BreakerPlan {
    /// The scope of every provider not named in `by_provider`.
    scope: BreakerScope,
    /// Providers with a scope of their own.
    by_provider: BTreeMap<String, BreakerScope>,
    /// The policy of a shared breaker, per provider (its probe timeout is that provider's
    /// slowest tool's).
    shared: BTreeMap<String, BreakerConfig>,
}

impl BreakerPlan {
    /// The plan of `breakers` for the tools of `tools`.
    pub(super) fn new(breakers: &BreakersConfig, tools: &[ToolConfig]) -> Self {
        let mut slowest: BTreeMap<&str, Duration> = BTreeMap::new();
        for tool in tools {
            for provider in &tool.providers {
                let t = slowest.entry(provider).or_default();
                *t = (*t).max(tool.timeout);
            }
        }
        let shared = slowest
            .into_iter()
            .filter(|(provider, _)| breakers.scope_of(provider).is_shared())
            .filter_map(|(provider, timeout)| {
                // The shared policy was built once already; a probe timeout of a tool's
                // timeout (100 ms or more) keeps it valid.
                let config = breakers
                    .shared_policy
                    .to_builder()
                    .probe_timeout(timeout)
                    .build()
                    .ok()?;
                Some((provider.to_string(), config))
            })
            .collect();
        BreakerPlan {
            scope: breakers.scope,
            by_provider: breakers.by_provider.clone(),
            shared,
        }
    }

    /// The scope of `provider`'s breakers.
    pub(super) fn scope_of(&self, provider: &str) -> BreakerScope {
        self.by_provider
            .get(provider)
            .copied()
            .unwrap_or(self.scope)
    }

    /// The breaker guarding `tool` on `provider` (reached through `upstream`), made in
    /// `registry` if it is the first tool to need it: with `own`, the tool's policy, when the
    /// breaker is the tool's alone.
    pub(super) fn breaker(
        &self,
        registry: &BreakerRegistry,
        tool: &str,
        provider: &str,
        upstream: &dyn Upstream,
        own: &BreakerConfig,
    ) -> Arc<Breaker> {
        let scope = self.scope_of(provider);
        let account = match scope {
            BreakerScope::Credential => upstream.account(),
            _ => None,
        };
        let key = scope.key(tool, provider, account.as_deref());
        registry.get_or_insert_with(&key, || self.policy(provider, own).clone())
    }

    /// The policy of the breaker guarding a tool on `provider`: the shared one when the
    /// provider's breakers are shared, else `own` (the tool's).
    pub(super) fn policy<'a>(
        &'a self,
        provider: &str,
        own: &'a BreakerConfig,
    ) -> &'a BreakerConfig {
        match self.shared.get(provider) {
            Some(shared) if self.scope_of(provider).is_shared() => shared,
            _ => own,
        }
    }
}
