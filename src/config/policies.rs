//! Reads the policy tables, `[breaker]` and `[retry]`, in `[defaults]` and in each tool: every
//! key over its base value, then the combinations that cannot work.

use std::time::Duration;

use super::model::*;
use super::reader::Section;

/// Reads the breaker keys of one table over `base` and checks the combination.
pub(super) fn read_breaker(s: &Section<'_>, base: &BreakerSettings) -> BreakerSettings {
    let mut b = base.clone();
    if let Some(v) = s.duration("window") {
        b.window = v;
    }
    if let Some(v) = s.fraction("failure_rate") {
        b.failure_rate = v;
    }
    if s.has("slow_call") {
        if s.string("slow_call").as_deref() == Some("auto") {
            b.slow_call = SlowCallSetting::Auto;
        } else if let Some(v) = s.duration("slow_call") {
            b.slow_call = SlowCallSetting::Fixed(v);
        }
    }
    if let Some(v) = s.integer("min_calls", 1, 1_000_000) {
        b.min_calls = v as u32;
    }
    if let Some(v) = s.integer("consecutive_failures", 1, 1_000_000) {
        b.consecutive_failures = v as u32;
    }
    if let Some(v) = s.duration("open_for") {
        b.open_for = v;
    }
    if let Some(v) = s.duration("open_for_max") {
        b.open_for_max = v;
    }
    if let Some(v) = s.integer("half_open_probes", 1, 1000) {
        b.half_open_probes = v as u32;
    }
    if let Some(v) = s.integer("half_open_successes", 1, 1000) {
        b.half_open_successes = v as u32;
    }
    if let Some(v) = s.duration("probe_interval") {
        b.probe_interval = v;
    }
    if let Some(stages) = s.strings("ramp") {
        let mut ramp = Vec::with_capacity(stages.len());
        for (i, stage) in stages.iter().enumerate() {
            match parse_ramp_stage(stage) {
                Ok(st) => ramp.push(st),
                Err(msg) => s.error(&format!("ramp[{i}]"), msg),
            }
        }
        b.ramp = ramp;
    }

    // Combination checks report in the table that set one of the keys involved, so a broken
    // default is reported once, not again in every tool that overrides something else.
    let set = |key: &'static str| s.has(key);
    for (key, d) in [
        ("window", b.window),
        ("open_for", b.open_for),
        ("open_for_max", b.open_for_max),
        ("probe_interval", b.probe_interval),
    ] {
        if d.is_zero() && set(key) {
            s.error(key, "must be longer than zero");
        }
    }
    if let SlowCallSetting::Fixed(d) = b.slow_call
        && d.is_zero()
        && set("slow_call")
    {
        s.error("slow_call", "must be longer than zero, or \"auto\"");
    }
    if b.half_open_successes > b.half_open_probes
        && (set("half_open_successes") || set("half_open_probes"))
    {
        s.error(
            "half_open_successes",
            format!(
                "{} successes can never happen with {} probes; set half_open_successes at most half_open_probes",
                b.half_open_successes, b.half_open_probes
            ),
        );
    }
    if b.open_for > b.open_for_max && (set("open_for") || set("open_for_max")) {
        s.error(
            "open_for_max",
            format!(
                "must be at least open_for ({}), the first open period",
                humantime::format_duration(b.open_for)
            ),
        );
    }
    if set("ramp") {
        let mut last = 0.0;
        for (i, (share, _)) in b.ramp.iter().enumerate() {
            if *share <= last || *share >= 1.0 {
                s.error(
                    &format!("ramp[{i}]"),
                    "ramp shares must grow from stage to stage and stay below 100%",
                );
            }
            last = *share;
        }
    }
    b
}

fn parse_ramp_stage(stage: &str) -> Result<(f64, Duration), String> {
    let bad =
        || format!("\"{stage}\" is not a ramp stage; write \"SHARE%:DURATION\", e.g. \"10%:30s\"");
    let (share, dur) = stage.split_once(':').ok_or_else(bad)?;
    let share = super::reader::parse_percent(share).ok_or_else(bad)?;
    if !(share > 0.0 && share < 1.0) {
        return Err(format!(
            "\"{stage}\": the share must be between 0% and 100% (exclusive)"
        ));
    }
    let dur = super::reader::parse_duration(dur)?;
    if dur.is_zero() {
        return Err(format!("\"{stage}\": the stage must last longer than zero"));
    }
    Ok((share, dur))
}

pub(super) fn read_retry(s: &Section<'_>, base: &RetrySettings) -> RetrySettings {
    let mut r = base.clone();
    if let Some(v) = s.integer("attempts", 1, 10) {
        r.attempts = v as u32;
    }
    if let Some(v) = s.duration("backoff") {
        r.backoff = v;
    }
    if let Some(v) = s.duration("backoff_max") {
        r.backoff_max = v;
    }
    if r.backoff > r.backoff_max {
        s.error(
            "backoff_max",
            format!(
                "must be at least backoff ({})",
                humantime::format_duration(r.backoff)
            ),
        );
    }
    r
}
