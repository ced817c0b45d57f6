//! What one configuration serves ([`Served`]: the tools and the maintenance windows), and how a
//! reload replaces it: a new set is built whole beside the running one ([`Prepared`], every
//! problem reported at once and nothing changed), then installed in one step.
//!
//! Installing moves the new tools onto the gateway's own breakers: a tool × provider key that
//! stays keeps its breaker (state, timers, history, metrics) and takes the new policy from its
//! next transition; a new key gets a fresh breaker; a key no tool uses any more is forgotten. An
//! unchanged bulkhead and the last good results carry over too. A call keeps the snapshot it
//! started with, so calls in flight finish on the configuration they began under.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::breaker_plan::BreakerPlan;
use super::served::ServedTool;
use super::upstream::Upstream;
use crate::breaker::{BreakerKey, BreakerRegistry};
use crate::config::Config;
use crate::maintenance::Schedule;
use crate::tools;

/// The served tools and maintenance windows of one configuration; a call reads one snapshot
/// from start to end.
#[derive(Debug)]
pub(super) struct Served {
    /// The served tools, by name.
    pub(super) tools: BTreeMap<String, Arc<ServedTool>>,
    /// The scheduled maintenance windows (`[[maintenance]]`).
    pub(super) maintenance: Arc<Schedule>,
}

impl Served {
    /// The served tools in manifest order: the catalog's, then the tools from configuration by
    /// name.
    pub(super) fn in_manifest_order(&self) -> impl Iterator<Item = &Arc<ServedTool>> {
        let configured = self.tools.values().filter(|t| t.spec.is_configured());
        tools::CATALOG
            .iter()
            .filter_map(|s| self.tools.get(s.name))
            .chain(configured)
    }
}

/// A configuration's tools, built and checked, not serving yet: [`Gateway::install`]
/// (super::Gateway::install) puts them in service.
#[derive(Debug)]
pub struct Prepared {
    pub(super) tools: BTreeMap<String, ServedTool>,
    pub(super) maintenance: Schedule,
}

/// What a reload changed in the served tools, by tool name (catalog order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolChanges {
    /// Tools served now that were not before.
    pub added: Vec<String>,
    /// Tools no longer served.
    pub removed: Vec<String>,
    /// Tools served before and now, with another configuration (description, providers,
    /// timeouts, bulkhead, breaker or retry policy, memory windows, fallback text).
    pub changed: Vec<String>,
}

impl ToolChanges {
    /// Whether the served tools are exactly as before.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// Builds the tools `config` serves with the providers in `upstreams`, their breakers from
/// `breakers`; every problem at once.
pub(super) fn build_tools(
    config: &Config,
    upstreams: &BTreeMap<String, Arc<dyn Upstream>>,
    breakers: &BreakerRegistry,
) -> Result<BTreeMap<String, ServedTool>, Vec<String>> {
    let mut errors = Vec::new();
    let mut built_tools = BTreeMap::new();
    let provider_timeouts: BTreeMap<String, Duration> = config
        .providers
        .iter()
        .filter_map(|(name, p)| Some((name.clone(), p.timeout?)))
        .collect();
    let plan = BreakerPlan::new(&config.breakers, &config.tools);
    for tc in &config.tools {
        let Some(spec) = tc.spec() else {
            errors.push(format!("{}: unknown tool {}", tc.file.display(), tc.name));
            continue;
        };
        // A tool whose providers are configured but none serves it in this build (warned
        // about when providers were built) is not offered.
        let built = ServedTool::build_planned(
            spec,
            tc,
            upstreams,
            &provider_timeouts,
            breakers,
            &plan,
            &config.prompts,
        );
        match built {
            Ok(Some(tool)) => {
                built_tools.insert(tc.name.clone(), tool);
            }
            Ok(None) => {}
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(built_tools)
    } else {
        Err(errors)
    }
}

/// Builds `config`'s tools beside the running ones, on breakers of their own (so a
/// configuration with problems leaves no trace): every problem at once, or the set to install.
pub(super) fn prepare(
    config: &Config,
    upstreams: &BTreeMap<String, Arc<dyn Upstream>>,
) -> Result<Prepared, Vec<String>> {
    let staging = BreakerRegistry::default();
    let tools = build_tools(config, upstreams, &staging)?;
    Ok(Prepared {
        tools,
        maintenance: Schedule::new(config.maintenance.clone()),
    })
}

/// What [`install`] made: the snapshot, what changed, the breaker keys it made and the ones
/// it forgot.
pub(super) struct Installed {
    pub(super) served: Served,
    pub(super) changes: ToolChanges,
    pub(super) made: Vec<BreakerKey>,
    pub(super) forgotten: Vec<BreakerKey>,
}

/// The snapshot that replaces `running`: `prepared`'s tools on the gateway's breakers, with what
/// carries over from the running tools of the same name, and what changed. Forgets the breakers
/// of keys no tool uses any more.
pub(super) fn install(
    prepared: Prepared,
    running: &Served,
    breakers: &BreakerRegistry,
    now: Instant,
) -> Installed {
    let existing: HashSet<BreakerKey> = breakers.all().iter().map(|b| b.key().clone()).collect();
    let mut policies_set = HashSet::new();
    let mut changes = ToolChanges::default();
    let mut tools = BTreeMap::new();
    // Manifest order (the catalog's, then the tools from configuration by name), in which
    // each list of changes is given.
    let mut prepared_tools = prepared.tools;
    let configured = prepared_tools
        .values()
        .filter(|t| t.spec.is_configured())
        .map(|t| t.spec.name)
        .chain(
            running
                .tools
                .values()
                .filter(|t| t.spec.is_configured())
                .map(|t| t.spec.name),
        )
        .collect::<std::collections::BTreeSet<_>>();
    let order: Vec<String> = tools::CATALOG
        .iter()
        .map(|s| s.name)
        .chain(configured)
        .map(str::to_string)
        .collect();
    for name in order {
        let Some(mut tool) = prepared_tools.remove(&name) else {
            if running.tools.contains_key(&name) {
                changes.removed.push(name);
            }
            continue;
        };
        tool.adopt_breakers(breakers, &mut policies_set, now);
        match running.tools.get(&name) {
            Some(old) => {
                if !tool.same_as(old) {
                    changes.changed.push(name.clone());
                }
                tool.carry_over(old);
            }
            None => changes.added.push(name.clone()),
        }
        tools.insert(name, Arc::new(tool));
    }
    let in_use: HashSet<BreakerKey> = tools
        .values()
        .flat_map(|t| t.breakers())
        .map(|b| b.key().clone())
        .collect();
    let forgotten = breakers.retain(|key| in_use.contains(key));
    let mut made: Vec<BreakerKey> = in_use.difference(&existing).cloned().collect();
    made.sort();
    let served = Served {
        tools,
        maintenance: Arc::new(prepared.maintenance),
    };
    Installed {
        served,
        changes,
        made,
        forgotten,
    }
}
