//! Reads the policy tables, `[breaker]` and `[retry]`, in `[defaults]` and in each tool: every
//! key over its base value, then the policy's own validation.
//!
//! The rules live with the policies (`breaker::BreakerBuilder::build`, `policy::RetryPolicy::
//! try_new`); this module only reads keys and reports each problem in the table that set one
//! of the keys involved, so a broken default is reported once, not again in every tool that
//! overrides something else.

use std::time::Duration;

use super::reader::Section;
use crate::breaker::{BreakerBuilder, RampStage, SlowCall};
use crate::policy::{PolicyProblem, RetryPolicy};

/// Reads the breaker keys of one table over `base`, and reports the problems of the result that
/// this table's keys are part of.
pub(super) fn read_breaker(s: &Section<'_>, base: &BreakerBuilder) -> BreakerBuilder {
    let mut b = base.clone();
    if let Some(v) = s.duration("window") {
        b.window(v);
    }
    if let Some(v) = s.fraction("failure_rate") {
        b.failure_rate(v);
    }
    if s.has("slow_call") {
        if s.string("slow_call").as_deref() == Some("auto") {
            b.slow_call(SlowCall::auto());
        } else if let Some(v) = s.duration("slow_call") {
            b.slow_call(SlowCall::Fixed(v));
        }
    }
    if let Some(v) = s.integer("min_calls", 1, 1_000_000) {
        b.min_calls(v as u32);
    }
    if let Some(v) = s.integer("consecutive_failures", 1, 1_000_000) {
        b.consecutive_failures(v as u32);
    }
    if let Some(v) = s.duration("open_for") {
        b.open_for(v);
    }
    if let Some(v) = s.duration("open_for_max") {
        b.open_for_max(v);
    }
    if let Some(v) = s.integer("half_open_probes", 1, 1000) {
        b.half_open_probes(v as u32);
    }
    if let Some(v) = s.integer("half_open_successes", 1, 1000) {
        b.half_open_successes(v as u32);
    }
    if let Some(v) = s.duration("probe_interval") {
        b.probe_interval(v);
    }
    if let Some(stages) = s.strings("ramp") {
        let mut ramp = Vec::with_capacity(stages.len());
        for (i, stage) in stages.iter().enumerate() {
            match parse_ramp_stage(stage) {
                Ok(st) => ramp.push(st),
                Err(msg) => s.error(&format!("ramp[{i}]"), msg),
            }
        }
        b.ramp(ramp);
    }
    if let Err(problems) = b.build() {
        report(s, &problems);
    }
    b
}

fn parse_ramp_stage(stage: &str) -> Result<RampStage, String> {
    let bad =
        || format!("\"{stage}\" is not a ramp stage; write \"SHARE%:DURATION\", e.g. \"10%:30s\"");
    let (share, dur) = stage.split_once(':').ok_or_else(bad)?;
    let share = super::reader::parse_percent(share).ok_or_else(bad)?;
    if !(share > 0.0 && share < 1.0) {
        return Err(format!(
            "\"{stage}\": the share must be between 0% and 100% (exclusive)"
        ));
    }
    let duration = super::reader::parse_duration(dur)?;
    if duration.is_zero() {
        return Err(format!("\"{stage}\": the stage must last longer than zero"));
    }
    Ok(RampStage { share, duration })
}

/// Reads the retry keys of one table over `base`; on a problem, reports it (when this table is
/// part of it) and keeps `base`.
pub(super) fn read_retry(s: &Section<'_>, base: &RetryPolicy) -> RetryPolicy {
    let attempts = s
        .integer("attempts", 1, 10)
        .map_or(base.attempts(), |v| v as u32);
    let backoff: Duration = s.duration("backoff").unwrap_or(base.backoff().base());
    let backoff_max = s.duration("backoff_max").unwrap_or(base.backoff().cap());
    RetryPolicy::try_new(attempts, backoff, backoff_max).unwrap_or_else(|problems| {
        report(s, &problems);
        *base
    })
}

/// Reports the problems whose keys this table sets; the others belong to the table that set
/// their keys (a default), which reports them itself.
fn report(s: &Section<'_>, problems: &[PolicyProblem]) {
    for problem in problems {
        if problem.involves.iter().any(|key| s.has(key)) {
            s.error(&problem.key, problem.message.clone());
        }
    }
}
