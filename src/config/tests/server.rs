//! `[server]` and `[limits]`: defaults, every key read, every impossible value named.

use std::time::Duration;

use super::{MapFiles, errors_of};
use crate::clients::{ProviderReserve, ToolShare};
use crate::config::{REQUEST_TIMEOUT_MARGIN, Rate};

#[test]
fn defaults_protect_an_exposed_gateway() {
    let config = MapFiles::defaults()
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.server.header_read_timeout, Duration::from_secs(10));
    assert_eq!(config.server.max_connections, 1024);
    assert_eq!(config.server.max_concurrent_streams, 1000);
    assert_eq!(config.server.shutdown_grace, Duration::from_secs(30));
    assert_eq!(config.server.request_timeout, None);
    assert_eq!(
        config.request_timeout(),
        config.longest_deadline() + REQUEST_TIMEOUT_MARGIN,
        "the request timeout lies beyond every tool's deadline"
    );
    assert!(config.longest_deadline() >= Duration::from_secs(8));
    assert_eq!(
        config.limits.client_rate,
        Some(Rate {
            count: 20,
            per: Duration::from_secs(1)
        })
    );
    assert_eq!(config.limits.client_burst, 40);
    assert_eq!(config.limits.client_max_concurrent_calls, Some(32));
    assert_eq!(config.limits.client_max_streams, Some(32));
    assert_eq!(config.limits.client_max_mcp_sessions, Some(64));
    assert_eq!(config.limits.client_share_of_tool, ToolShare::HALF);
    assert_eq!(config.limits.provider_reserve, ProviderReserve::DEFAULT);
}

#[test]
fn server_and_limits_keys_are_read() {
    let config = MapFiles::defaults()
        .edit(
            "faregate.toml",
            "header_read_timeout = \"10s\"",
            "header_read_timeout = \"300ms\"",
        )
        .edit(
            "faregate.toml",
            "# request_timeout = \"17s\"",
            "request_timeout = \"2m\"",
        )
        .edit(
            "faregate.toml",
            "max_connections = 1024",
            "max_connections = 7",
        )
        .edit(
            "faregate.toml",
            "max_concurrent_streams = 1000",
            "max_concurrent_streams = 50",
        )
        .edit(
            "faregate.toml",
            "shutdown_grace = \"30s\"",
            "shutdown_grace = \"5s\"",
        )
        .edit(
            "faregate.toml",
            "client_rate = \"20/s\"",
            "client_rate = \"600/m\"",
        )
        .edit("faregate.toml", "client_burst = 40", "client_burst = 3")
        .edit(
            "faregate.toml",
            "client_max_concurrent_calls = 32",
            "client_max_concurrent_calls = 0",
        )
        .edit(
            "faregate.toml",
            "client_max_streams = 32",
            "client_max_streams = 4",
        )
        .edit(
            "faregate.toml",
            "client_max_mcp_sessions = 64",
            "client_max_mcp_sessions = 0",
        )
        .edit(
            "faregate.toml",
            "client_share_of_tool = 0.5",
            "client_share_of_tool = \"25%\"",
        )
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        config.server.header_read_timeout,
        Duration::from_millis(300)
    );
    assert_eq!(config.request_timeout(), Duration::from_secs(120));
    assert_eq!(config.server.max_connections, 7);
    assert_eq!(config.server.max_concurrent_streams, 50);
    assert_eq!(config.server.shutdown_grace, Duration::from_secs(5));
    assert_eq!(
        config.limits.client_rate,
        Some(Rate {
            count: 600,
            per: Duration::from_secs(60)
        })
    );
    assert_eq!(config.limits.client_burst, 3);
    assert_eq!(
        config.limits.client_max_concurrent_calls, None,
        "0 = no cap"
    );
    assert_eq!(config.limits.client_max_streams, Some(4));
    assert_eq!(config.limits.client_max_mcp_sessions, None, "0 = no cap");
    assert_eq!(config.limits.client_share_of_tool.to_string(), "0.25");
}

#[test]
fn a_provider_reserve_is_a_fraction_from_0_to_1_and_0_turns_it_off() {
    let read = |value: &str| {
        MapFiles::defaults()
            .edit(
                "faregate.toml",
                "provider_reserve = 0.2",
                &format!("provider_reserve = {value}"),
            )
            .load()
            .unwrap_or_else(|e| panic!("{value}: {e}"))
            .limits
            .provider_reserve
    };
    assert_eq!(read("\"25%\"").to_string(), "0.25");
    assert_eq!(read("1").to_string(), "1");
    assert!(read("0").is_off());
    for bad in ["1.5", "-0.2", "\"a fifth\"", "true"] {
        let errors = errors_of(MapFiles::defaults().edit(
            "faregate.toml",
            "provider_reserve = 0.2",
            &format!("provider_reserve = {bad}"),
        ));
        assert_eq!(errors.len(), 1, "{bad}: {errors:#?}");
        assert!(
            errors[0].contains(
                "limits.provider_reserve: expected a fraction from 0 to 1, e.g. 0.2 or \"20%\" (0 turns it off)"
            ),
            "{bad}: {errors:#?}"
        );
    }
}

#[test]
fn a_client_share_is_a_fraction_greater_than_0_and_at_most_1() {
    let whole = MapFiles::defaults()
        .edit(
            "faregate.toml",
            "client_share_of_tool = 0.5",
            "client_share_of_tool = 1",
        )
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(whole.limits.client_share_of_tool.is_whole());
    for bad in ["0", "1.5", "-0.5", "\"half\"", "true"] {
        let errors = errors_of(MapFiles::defaults().edit(
            "faregate.toml",
            "client_share_of_tool = 0.5",
            &format!("client_share_of_tool = {bad}"),
        ));
        assert_eq!(errors.len(), 1, "{bad}: {errors:#?}");
        assert!(
            errors[0].contains(
                "limits.client_share_of_tool: expected a fraction greater than 0 and at most 1, e.g. 0.5"
            ),
            "{bad}: {errors:#?}"
        );
    }
}

#[test]
fn a_rate_limit_can_be_turned_off() {
    let config = MapFiles::defaults()
        .edit(
            "faregate.toml",
            "client_rate = \"20/s\"",
            "client_rate = \"off\"",
        )
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.limits.client_rate, None);
}

#[test]
fn impossible_server_and_limit_values_are_all_named() {
    let errors = errors_of(
        MapFiles::defaults()
            .edit(
                "faregate.toml",
                "header_read_timeout = \"10s\"",
                "header_read_timeout = \"1ms\"",
            )
            .edit(
                "faregate.toml",
                "# request_timeout = \"17s\"",
                "request_timeout = \"3s\"",
            )
            .edit(
                "faregate.toml",
                "max_connections = 1024",
                "max_connections = 0",
            )
            .edit(
                "faregate.toml",
                "max_concurrent_streams = 1000",
                "max_concurrent_streams = 0",
            )
            .edit(
                "faregate.toml",
                "client_rate = \"20/s\"",
                "client_rate = \"lots\"",
            )
            .edit(
                "faregate.toml",
                "client_burst = 40",
                "client_burst = 0\nclient_bust = 1",
            )
            .edit(
                "faregate.toml",
                "client_max_streams = 32",
                "client_max_streams = -1",
            ),
    );
    let expect = [
        "server.header_read_timeout: must be from \"100ms\" to \"5m\"",
        "server.max_connections: 0 is out of range",
        "server.max_concurrent_streams: 0 is out of range",
        "limits.client_rate: \"lots\" is not a rate; write requests per period, e.g. \"20/s\"",
        "limits.client_burst: 0 is out of range",
        "limits.client_max_streams: -1 is out of range",
        "limits.client_bust: unknown key; valid keys here: client_burst, client_max_concurrent_calls, client_max_mcp_sessions, client_max_streams, client_rate, client_share_of_tool, provider_reserve",
        "server.request_timeout: 3s is not longer than the deadline of",
    ];
    assert_eq!(errors.len(), expect.len(), "{errors:#?}");
    for e in expect {
        assert!(
            errors.iter().any(|x| x.contains(e)),
            "missing {e:?} in {errors:#?}"
        );
    }
}
