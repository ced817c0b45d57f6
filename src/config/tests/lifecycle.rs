//! The settings of a job's and a provider request's lifecycle: how long finished jobs are kept,
//! how long a provider may take to accept a connection, its cap on an attempt, and whether it
//! is spoken to in HTTP/2 from the first byte.

use std::time::Duration;

use super::{MapFiles, assert_one_error};

#[test]
fn finished_jobs_are_kept_seven_days_unless_said_otherwise() {
    let config = MapFiles::defaults()
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        config.store.job_retention,
        Duration::from_secs(7 * 24 * 3600)
    );
    let shorter = MapFiles::defaults()
        .edit(
            "faregate.toml",
            "job_retention = \"7d\"",
            "job_retention = \"36h\"",
        )
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(shorter.store.job_retention, Duration::from_secs(36 * 3600));
    assert_one_error(
        MapFiles::defaults().edit(
            "faregate.toml",
            "job_retention = \"7d\"",
            "job_retention = \"0s\"",
        ),
        &["job_retention", "at least \"1s\"", "\"7d\""],
    );
}

#[test]
fn a_providers_connect_timeout_and_attempt_cap_are_read_within_bounds() {
    let config = MapFiles::defaults()
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    for p in config.providers.values() {
        assert_eq!(p.connect_timeout, Duration::from_secs(2), "{}", p.name);
    }
    let set = MapFiles::defaults()
        .edit(
            "faregate.toml",
            "# connect_timeout = \"2s\"",
            "connect_timeout = \"5s\"",
        )
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        set.providers["duffel"].connect_timeout,
        Duration::from_secs(5)
    );
    assert_eq!(
        set.providers["amadeus"].connect_timeout,
        Duration::from_secs(2)
    );
    assert_eq!(
        set.providers["duffel"].timeout, None,
        "each tool's timeout alone"
    );
    let capped = MapFiles::defaults()
        .edit("faregate.toml", "# timeout = \"5s\"", "timeout = \"3s\"")
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        capped.providers["duffel"].timeout,
        Some(Duration::from_secs(3))
    );
    assert_one_error(
        MapFiles::defaults().edit("faregate.toml", "# timeout = \"5s\"", "timeout = \"1h\""),
        &["timeout", "between \"100ms\" and \"5m\""],
    );
    for written in ["10ms", "5m"] {
        assert_one_error(
            MapFiles::defaults().edit(
                "faregate.toml",
                "# connect_timeout = \"2s\"",
                &format!("connect_timeout = \"{written}\""),
            ),
            &["connect_timeout", "between \"100ms\" and \"60s\""],
        );
    }
}

#[test]
fn http2_prior_knowledge_is_off_unless_set_and_only_for_a_cleartext_provider() {
    let config = MapFiles::defaults()
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        config.providers.values().all(|p| !p.http2_prior_knowledge),
        "HTTP/1.1 (or ALPN over TLS) by default"
    );
    let set = MapFiles::defaults()
        .edit(
            "faregate.toml",
            "# http2_prior_knowledge = false",
            "http2_prior_knowledge = true",
        )
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(set.providers["duffel"].http2_prior_knowledge);
    assert!(!set.providers["amadeus"].http2_prior_knowledge);
    assert_one_error(
        MapFiles::defaults().edit(
            "faregate.toml",
            "# http2_prior_knowledge = false",
            "http2_prior_knowledge = \"yes\"",
        ),
        &["http2_prior_knowledge", "expected true or false"],
    );
    assert_one_error(
        MapFiles::defaults()
            .edit(
                "faregate.toml",
                "# http2_prior_knowledge = false",
                "http2_prior_knowledge = true",
            )
            .edit(
                "faregate.toml",
                "base_url = \"http://127.0.0.1:8081\"          # the simulator; the real API is https://api.duffel.com",
                "base_url = \"https://api.duffel.com\"",
            ),
        &["http2_prior_knowledge", "https", "ALPN"],
    );
}
