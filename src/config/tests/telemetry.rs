//! `[telemetry]`: the defaults, every key read, each mistake named.

use super::*;

#[test]
fn telemetry_defaults_keep_metrics_open_and_export_nothing() {
    let config = MapFiles::defaults()
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.telemetry, default_telemetry());
    let config = MapFiles::defaults()
        .edit("faregate.toml", "[telemetry]\n", "")
        .edit("faregate.toml", "metrics_public = true", "")
        .edit("faregate.toml", "log_format = \"text\"", "")
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.telemetry, default_telemetry());
}

#[test]
fn telemetry_keys_are_read() {
    let config = MapFiles::defaults()
        .edit(
            "faregate.toml",
            "metrics_public = true",
            "metrics_public = false",
        )
        .edit(
            "faregate.toml",
            "log_format = \"text\"",
            "log_format = \"json\"",
        )
        .edit(
            "faregate.toml",
            "# otlp_endpoint",
            "otlp_endpoint = \"http://collector:4318\" #",
        )
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!config.telemetry.metrics_public);
    assert!(config.telemetry.json_logs);
    assert_eq!(
        config.telemetry.otlp_endpoint.as_ref().map(|u| u.as_str()),
        Some("http://collector:4318/")
    );
}

#[test]
fn telemetry_mistakes_are_each_named() {
    let errors = errors_of(
        MapFiles::defaults()
            .edit(
                "faregate.toml",
                "metrics_public = true",
                "metrics_public = \"yes\"",
            )
            .edit(
                "faregate.toml",
                "log_format = \"text\"",
                "log_format = \"xml\"",
            )
            .edit(
                "faregate.toml",
                "# otlp_endpoint",
                "otlp_endpoint = \"collector:4318\"\ncolour = 1 #",
            ),
    );
    assert_eq!(errors.len(), 4, "{errors:#?}");
    let all = errors.join("\n");
    for part in [
        "telemetry.metrics_public: expected true or false",
        "telemetry.log_format: \"xml\" is not a log format",
        "telemetry.otlp_endpoint: \"collector:4318\" is not an http(s) URL",
        "telemetry.colour: unknown key",
    ] {
        assert!(all.contains(part), "{part:?} not in {all}");
    }
}
