//! What a scrape shows: series created at zero, and counts in the right labels.

use super::*;

#[test]
fn a_fresh_tool_has_zeroed_series_and_a_closed_breaker() {
    let m = Metrics::new();
    m.register_tool("search_flights", &["duffel"], 64);
    let text = m.render();
    assert!(text.contains(
        "faregate_breaker_state{provider=\"duffel\",state=\"closed\",tool=\"search_flights\"} 1"
    ));
    assert!(text.contains(
        "faregate_breaker_state{provider=\"duffel\",state=\"open\",tool=\"search_flights\"} 0"
    ));
    assert!(text.contains("faregate_bulkhead_capacity{tool=\"search_flights\"} 64"));
    assert!(
        text.contains("# TYPE faregate_tool_calls_total counter")
            || !text.contains("faregate_tool_calls_total{")
    );
}

#[test]
fn calls_count_by_status_and_time_in_seconds() {
    let m = Metrics::new();
    m.record_call(
        "search_hotels",
        Some("duffel"),
        "ok",
        Duration::from_millis(250),
    );
    m.record_call(
        "search_hotels",
        None,
        "unavailable",
        Duration::from_millis(1),
    );
    let text = m.render();
    assert!(text.contains(
        "faregate_tool_calls_total{provider=\"duffel\",status=\"ok\",tool=\"search_hotels\"} 1"
    ));
    assert!(text.contains(
        "faregate_tool_calls_total{provider=\"none\",status=\"unavailable\",tool=\"search_hotels\"} 1"
    ));
    assert!(text.contains(
        "faregate_tool_call_duration_seconds_sum{status=\"ok\",tool=\"search_hotels\"} 0.25"
    ));
}

fn transition_line(tool: &str, from: &str, to: &str, reason: &str) -> String {
    format!(
        "faregate_breaker_transitions_total{{from=\"{from}\",provider=\"duffel\",reason=\"{reason}\",to=\"{to}\",tool=\"{tool}\"}}"
    )
}

/// A counter series born at 1 reads as no change to `increase()`: every transition a breaker
/// may make must be on the first scrape after it is registered, at 0.
#[test]
fn a_registered_breaker_has_every_legal_transition_at_zero_before_it_trips() {
    let m = Metrics::new();
    m.register_tool("search_flights", &["duffel"], 64);
    m.register_breaker("*", "duffel");
    let text = m.render();
    let all = crate::breaker::legal_transition_labels();
    for tool in ["search_flights", "*"] {
        for (from, to, reason) in &all {
            let line = format!("{} 0\n", transition_line(tool, from, to, reason));
            assert!(text.contains(&line), "missing {line}");
        }
    }
    // The ones the alert rules read, by name.
    for (from, to, reason) in [
        ("closed", "open", "consecutive_failures"),
        ("closed", "open", "failure_rate"),
        ("closed", "open", "followed"),
        ("ramp", "open", "ramp_failure_rate"),
        ("half_open", "open", "probe_failed"),
        ("open", "half_open", "open_elapsed"),
    ] {
        assert!(text.contains(&format!(
            "{} 0\n",
            transition_line("search_flights", from, to, reason)
        )));
    }
    // No illegal one (an opening from a forced state) is made up.
    assert!(!text.contains("from=\"forced_open\",provider=\"duffel\",reason=\"failure_rate\""));
    let per_breaker = text
        .lines()
        .filter(|l| {
            l.starts_with("faregate_breaker_transitions_total{") && l.contains("tool=\"*\"")
        })
        .count();
    assert_eq!(per_breaker, all.len());

    // The first opening then steps the pre-created series from 0 to 1.
    let key = crate::breaker::BreakerKey::new("search_flights", "duffel");
    m.record_transition(&crate::breaker::TransitionEvent {
        key,
        from: BreakerState::Closed,
        to: BreakerState::Open,
        reason: crate::breaker::TransitionReason::ConsecutiveFailures,
        at: tokio::time::Instant::now(),
        failure_rate: 1.0,
        slow_rate: 0.0,
        calls: 5,
        origin: crate::breaker::Origin::Local,
    });
    assert!(m.render().contains(&format!(
        "{} 1\n",
        transition_line("search_flights", "closed", "open", "consecutive_failures")
    )));
}

#[test]
fn job_and_alert_counters_are_created_at_zero() {
    let m = Metrics::new();
    m.register_job_callbacks();
    m.register_job_tool("search_flights");
    let text = m.render();
    for outcome in ["sent", "retry", "failed"] {
        for counter in [
            "faregate_job_callbacks_total",
            "faregate_notice_callbacks_total",
        ] {
            assert!(
                text.contains(&format!("{counter}{{outcome=\"{outcome}\"}} 0\n")),
                "{counter} {outcome}"
            );
        }
    }
    for outcome in ["succeeded", "dead"] {
        assert!(text.contains(&format!(
            "faregate_job_latency_seconds_count{{outcome=\"{outcome}\",tool=\"search_flights\"}} 0\n"
        )));
        assert!(text.contains(&format!(
            "faregate_job_latency_seconds_bucket{{outcome=\"{outcome}\",tool=\"search_flights\",le=\"60\"}} 0\n"
        )));
    }
    // The gateway's telemetry creates the fired counter of every alert it can raise.
    let telemetry = crate::telemetry::Telemetry::new(crate::telemetry::AlertRules::spec());
    let text = telemetry.metrics().render();
    for kind in crate::telemetry::AlertKind::ALL {
        let line = format!(
            "faregate_alerts_fired_total{{alert=\"{}\",severity=\"{}\"}} 0\n",
            kind.as_str(),
            kind.severity()
        );
        assert!(text.contains(&line), "missing {line}");
    }
}

#[test]
fn the_configuration_s_fingerprint_has_one_series_the_old_one_goes() {
    let m = Metrics::new();
    m.set_config_fingerprint("0123456789ab");
    assert!(
        m.render()
            .contains("faregate_config_info{fingerprint=\"0123456789ab\"} 1")
    );
    m.set_config_fingerprint("ba9876543210");
    let text = m.render();
    assert!(text.contains("faregate_config_info{fingerprint=\"ba9876543210\"} 1"));
    assert!(!text.contains("0123456789ab"), "{text}");
}
