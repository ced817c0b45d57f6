//! What maintenance windows hold now, for the answers and metrics of calls: a failed call's
//! chain read again at the moment of answering (held providers named apart, the soonest
//! provider back, the provider a caller waited on), and the keys held now.

use std::time::Duration;

use tokio::time::Instant;

use super::Gateway;
use crate::breaker::BreakerState;
use crate::call::answer;
use crate::call::outcome::{Failure, Held};
use crate::call::served::ServedTool;

impl Gateway {
    /// Whether maintenance windows hold every provider of `tool` now: its fallbacks are then
    /// announced maintenance, counted apart from the fallback budget.
    pub(super) fn held_everywhere(&self, tool: &str) -> bool {
        let served = self.served.load();
        if served.maintenance.windows().is_empty() {
            return false;
        }
        let wall = crate::clock::utc_now();
        served.tools.get(tool).is_some_and(|t| {
            t.routes
                .iter()
                .all(|r| served.maintenance.active(tool, &r.name, wall).is_some())
        })
    }

    /// Every served tool × provider, and whether a maintenance window holds it now (the
    /// `faregate_maintenance_active` gauge, set when metrics are read).
    pub fn maintenance_now(&self) -> Vec<(&'static str, String, bool)> {
        let served = self.served.load();
        let wall = crate::clock::utc_now();
        let mut keys = Vec::new();
        for tool in served.in_manifest_order() {
            for route in &tool.routes {
                let held = !served.maintenance.windows().is_empty()
                    && served
                        .maintenance
                        .active(tool.spec.name, &route.name, wall)
                        .is_some();
                keys.push((tool.spec.name, route.name.clone(), held));
            }
        }
        keys
    }

    /// What the chain of a failed call looks like now, for its answer: the providers that
    /// failed it held by maintenance windows (named apart from those that failed otherwise),
    /// the soonest one of the other providers that failed may be asked again, and, for a
    /// failure naming no provider (the caller's deadline passed), the first provider of the
    /// chain no window holds: the one the call was waiting on.
    pub(super) fn chain_now(
        &self,
        tool: &ServedTool,
        failure: &Failure,
        now: Instant,
    ) -> (Vec<Held>, Option<Duration>, Option<String>) {
        let served = self.served.load();
        let wall = (!served.maintenance.windows().is_empty()).then(crate::clock::utc_now);
        let window = |provider: &str| {
            let wall = wall?;
            let active = served.maintenance.active(tool.spec.name, provider, wall)?;
            Some(Held {
                provider: provider.to_string(),
                left: crate::maintenance::left(wall, active.until),
                until: active.until,
                reason: active.reason,
            })
        };
        let asked: Vec<&str> = match failure {
            Failure::Maintenance { .. }
            | Failure::BulkheadFull
            | Failure::ClientShareFull(_)
            | Failure::ProviderShareFull { .. } => Vec::new(),
            Failure::DeadlinePassed => tool.routes.iter().map(|r| r.name.as_str()).collect(),
            Failure::Breaker { .. } | Failure::Upstream { .. } => failure.failed_providers(),
        };
        let mut held = Vec::new();
        let mut others_back: Option<Duration> = None;
        let mut named = None;
        for provider in asked {
            let back = match window(provider) {
                Some(window) => {
                    let left = window.left;
                    held.push(window);
                    Some(left)
                }
                None if failure.provider() == Some(provider) => None,
                None => {
                    named.get_or_insert_with(|| provider.to_string());
                    // An operator's forced open has no end; a closed breaker after a failure
                    // admits calls again at once, worth it after the transient estimate, or
                    // after the provider's own `Retry-After` (a breaker opens for one only when
                    // it is longer than its `open_for`); an open breaker and a `Retry-After`:
                    // whichever ends later.
                    let told = failure.back_in(provider);
                    tool.route(Some(provider))
                        .filter(|r| r.breaker.state(now) != BreakerState::ForcedOpen)
                        .map(|r| match (told, r.breaker.remaining_open(now)) {
                            (Some(told), Some(open)) => told.max(open),
                            (told, open) => told.or(open).unwrap_or(answer::TRANSIENT_RETRY),
                        })
                }
            };
            if let Some(back) = back {
                others_back = Some(others_back.map_or(back, |o| o.min(back)));
            }
        }
        (held, others_back, named)
    }
}
