//! `[watches]` and a tool's `watch_min_interval`: the limits on recurring background calls.

use super::*;

#[test]
fn watch_limits_are_read_with_their_defaults() {
    let config = MapFiles::defaults()
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.watches, WatchesConfig::default());
    let config = MapFiles::defaults()
        .edit(
            "faregate.toml",
            "max_active_per_client = 20",
            "max_active_per_client = 3",
        )
        .edit(
            "tools/get_flight_status.toml",
            "stale_for = \"0s\"",
            "stale_for = \"0s\"\nwatch_min_interval = \"2m\"",
        )
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.watches.max_active_per_client, 3);
    let tool = config
        .tool("get_flight_status")
        .map(|t| t.watch_min_interval);
    assert_eq!(tool, Some(Some(Duration::from_secs(120))));
}

#[test]
fn a_write_tool_cannot_be_given_a_watch_interval() {
    assert_one_error(
        MapFiles::defaults().edit(
            "tools/book_flight.toml",
            "stale_for = \"0s\"",
            "stale_for = \"0s\"\nwatch_min_interval = \"5m\"",
        ),
        &[
            "book_flight.toml",
            "watch_min_interval",
            "write tool",
            "remove watch_min_interval",
        ],
    );
}

#[test]
fn watch_intervals_under_a_second_are_refused() {
    assert_one_error(
        MapFiles::defaults().edit(
            "faregate.toml",
            "min_interval = \"1m\"",
            "min_interval = \"10ms\"",
        ),
        &["watches.min_interval", "at least \"1s\""],
    );
}
