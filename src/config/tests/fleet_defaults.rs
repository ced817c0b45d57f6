//! What a fleet store changes by default: `[mcp]` sessions, and the providers' documented
//! limits read as configured defaults; where a fleet replica spools submissions, and what one
//! provider allowance is keyed by.

use std::path::Path;

use super::{MapFiles, assert_one_error};

#[test]
fn mcp_is_stateless_by_default_on_a_fleet_store_and_an_operator_may_say_otherwise() {
    let one = MapFiles::defaults()
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(one.mcp.legacy_sessions, "one node on SQLite keeps sessions");
    let fleet_url = "url = \"postgres://gw@db.internal/faregate\"";
    let fleet = MapFiles::defaults()
        .edit("faregate.toml", "url = \"sqlite://faregate.db\"", fleet_url)
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !fleet.mcp.legacy_sessions,
        "a fleet behind a load balancer serves every revision statelessly"
    );
    let sticky = MapFiles::defaults()
        .edit("faregate.toml", "url = \"sqlite://faregate.db\"", fleet_url)
        .edit(
            "faregate.toml",
            "# legacy_sessions = true",
            "legacy_sessions = true",
        )
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        sticky.mcp.legacy_sessions,
        "sticky sessions, said explicitly"
    );
}

#[test]
fn amadeus_limits_default_to_the_documented_ones_and_duffel_announces_its_own() {
    let config = MapFiles::defaults()
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.providers["amadeus"].requests_per_second, Some(10));
    assert_eq!(config.providers["duffel"].requests_per_second, None);
    let production = MapFiles::defaults()
        .edit(
            "faregate.toml",
            "base_url = \"http://127.0.0.1:8081\"          # the simulator; the real test API is https://test.api.amadeus.com",
            "base_url = \"https://api.amadeus.com\"",
        )
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        production.providers["amadeus"].requests_per_second,
        Some(40)
    );
    let set = MapFiles::defaults()
        .edit(
            "faregate.toml",
            "# requests_per_second = 10",
            "requests_per_second = 2",
        )
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(set.providers["amadeus"].requests_per_second, Some(2));
}

#[test]
fn the_spool_is_a_file_beside_the_default_store_unless_one_is_named() {
    let config = MapFiles::defaults()
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.store.spool_path, Path::new("faregate-spool.db"));
    let named = MapFiles::defaults()
        .edit(
            "faregate.toml",
            "spool_path = \"faregate-spool.db\"",
            "spool_path = \"/var/lib/faregate/spool.db\"",
        )
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        named.store.spool_path,
        Path::new("/var/lib/faregate/spool.db")
    );
}

#[test]
fn a_spool_path_that_is_a_url_a_directory_or_empty_is_refused_saying_what_to_write() {
    for (written, says) in [
        ("sqlite://spool.db", "is a URL"),
        ("/var/lib/faregate/", "is a directory"),
        ("", "is empty"),
    ] {
        assert_one_error(
            MapFiles::defaults().edit(
                "faregate.toml",
                "spool_path = \"faregate-spool.db\"",
                &format!("spool_path = \"{written}\""),
            ),
            &["spool_path", says, "name a file"],
        );
    }
}

#[test]
fn a_provider_allowance_is_keyed_by_provider_unless_its_account_is_asked_for() {
    use crate::config::BucketKey;
    let config = MapFiles::defaults()
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.quota.bucket_key, BucketKey::Provider);
    let by_account = MapFiles::defaults()
        .edit(
            "faregate.toml",
            "bucket_key = \"provider\"",
            "bucket_key = \"provider_and_credential\"",
        )
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        by_account.quota.bucket_key,
        BucketKey::ProviderAndCredential
    );
    assert_one_error(
        MapFiles::defaults().edit(
            "faregate.toml",
            "bucket_key = \"provider\"",
            "bucket_key = \"credential\"",
        ),
        &[
            "bucket_key",
            "\"credential\" is not a bucket key",
            "\"provider\"",
            "\"provider_and_credential\"",
        ],
    );
}
