//! Config loading: the shipped defaults load, and each broken config produces its own message.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;

mod bindings;
mod breakers;
mod clients;
mod fleet_defaults;
mod http_tools;
mod lifecycle;
mod maintenance;
mod openapi;
mod providers;
mod readme;
mod server;
mod telemetry;
mod watches;

/// An in-memory tree of files: the shipped defaults, with edits applied per test.
pub(super) struct MapFiles(pub(super) BTreeMap<PathBuf, String>);

impl MapFiles {
    /// The embedded defaults under `/cfg`.
    pub(super) fn defaults() -> Self {
        let mut map = BTreeMap::new();
        let embedded = EmbeddedFiles;
        for dir in ["", "tools", "prompts"] {
            let d = PathBuf::from(format!("embedded:/{dir}"));
            for suffix in [".toml", ".md"] {
                for p in embedded.list(&d, suffix).unwrap_or_default() {
                    let text = embedded.read(&p).unwrap_or_default();
                    let rel = p.to_string_lossy().replace("embedded:/", "");
                    map.insert(PathBuf::from(format!("/cfg/{rel}")), text);
                }
            }
        }
        map.insert(
            PathBuf::from("/cfg/faregate.toml"),
            embedded
                .read(Path::new(EMBEDDED_CONFIG))
                .unwrap_or_default(),
        );
        MapFiles(map)
    }

    fn edit(mut self, file: &str, from: &str, to: &str) -> Self {
        let path = PathBuf::from(format!("/cfg/{file}"));
        let text = self.0.get(&path).cloned().unwrap_or_default();
        assert!(text.contains(from), "{file} does not contain {from:?}");
        self.0.insert(path, text.replacen(from, to, 1));
        self
    }

    pub(super) fn put(mut self, file: &str, text: &str) -> Self {
        self.0
            .insert(PathBuf::from(format!("/cfg/{file}")), text.to_string());
        self
    }

    fn remove(mut self, file: &str) -> Self {
        self.0.remove(&PathBuf::from(format!("/cfg/{file}")));
        self
    }

    pub(super) fn load(&self) -> Result<Config, ConfigErrors> {
        load(
            self,
            Path::new("/cfg/faregate.toml"),
            &crate::tools::names(),
        )
        .map(|(c, _)| c)
    }

    /// Loads, expecting success, with the warnings rendered.
    #[track_caller]
    pub(super) fn load_warned(&self) -> (Config, Vec<String>) {
        let (config, warnings) = load(
            self,
            Path::new("/cfg/faregate.toml"),
            &crate::tools::names(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        (config, warnings.iter().map(|w| w.to_string()).collect())
    }
}

impl Files for MapFiles {
    fn read(&self, path: &Path) -> io::Result<String> {
        self.0
            .get(path)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such file"))
    }

    fn list(&self, dir: &Path, suffix: &str) -> io::Result<Vec<PathBuf>> {
        Ok(self
            .0
            .keys()
            .filter(|p| p.parent() == Some(dir) && p.to_string_lossy().ends_with(suffix))
            .cloned()
            .collect())
    }
}

/// Loads, expecting failure, and returns the rendered problems.
#[track_caller]
fn errors_of(files: MapFiles) -> Vec<String> {
    match files.load() {
        Ok(_) => panic!("the config loaded but should have been refused"),
        Err(e) => e.errors.iter().map(|p| p.to_string()).collect(),
    }
}

#[track_caller]
fn assert_one_error(files: MapFiles, expected: &[&str]) {
    let errors = errors_of(files);
    assert_eq!(errors.len(), 1, "expected one error, got {errors:#?}");
    for part in expected {
        assert!(
            errors[0].contains(part),
            "error {:?} does not contain {part:?}",
            errors[0]
        );
    }
}

#[test]
fn the_embedded_defaults_load_with_every_tool() {
    let (config, warnings) = load(
        &EmbeddedFiles,
        Path::new(EMBEDDED_CONFIG),
        &crate::tools::names(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(warnings.is_empty(), "{warnings:?}");
    let names: Vec<&str> = config.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "book_flight",
            "book_hotel",
            "check_hotel_availability",
            "get_flight_status",
            "get_hotel_content",
            "price_flight_offer",
            "search_flights",
            "search_hotels",
            "track_flight"
        ]
    );
    let flights = config.tool("search_flights").expect("configured");
    assert_eq!(flights.timeout, Duration::from_secs(8));
    assert_eq!(flights.stale_for, Duration::from_secs(15 * 60));
    assert_eq!(
        Ok(flights.breaker.clone()),
        crate::breaker::BreakerConfig::builder().build(),
        "the shipped defaults are the standard tuning"
    );
    assert_eq!(
        config.tool("book_flight").map(|t| t.retry.attempts()),
        Some(1)
    );
}

#[test]
fn the_files_on_disk_match_the_embedded_copies() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (config, _) = load(
        &DiskFiles,
        &root.join("faregate.toml"),
        &crate::tools::names(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.tools.len(), 9);
    assert_eq!(config.prompts.len(), 10);
}

#[test]
fn three_separate_mistakes_are_all_reported() {
    let files = MapFiles::defaults()
        .edit("faregate.toml", "open_for = \"30s\"", "open_for = \"soon\"")
        .edit(
            "tools/search_hotels.toml",
            "timeout = \"8s\"",
            "timeout = \"8s\"\ncolour = \"blue\"",
        )
        .edit(
            "prompts/book_flight.unavailable.md",
            "{retry_after_s}",
            "{retry_after}",
        );
    let errors = errors_of(files);
    assert_eq!(errors.len(), 3, "{errors:#?}");
    assert!(
        errors[0].contains("faregate.toml: defaults.breaker.open_for: \"soon\" is not a duration")
    );
    assert!(errors[1].contains("book_flight.unavailable.md: unknown placeholder {retry_after}"));
    assert!(errors[2].contains("search_hotels.toml: colour: unknown key; valid keys here:"));
}

#[test]
fn unknown_keys_name_the_valid_ones() {
    assert_one_error(
        MapFiles::defaults().edit("faregate.toml", "[server]", "[server]\nlisten_port = 1"),
        &[
            "server.listen_port",
            "unknown key",
            "listen",
            "max_body_bytes",
        ],
    );
}

#[test]
fn durations_must_be_strings_with_units() {
    assert_one_error(
        MapFiles::defaults().edit("faregate.toml", "window = \"60s\"", "window = 60"),
        &[
            "defaults.breaker.window",
            "expected a duration string such as \"250ms\"",
        ],
    );
}

#[test]
fn rates_must_be_fractions() {
    assert_one_error(
        MapFiles::defaults().edit("faregate.toml", "failure_rate = 0.5", "failure_rate = 50"),
        &["defaults.breaker.failure_rate", "at most 1", "\"50%\""],
    );
}

#[test]
fn percentages_are_accepted_for_rates() {
    let config = MapFiles::defaults()
        .edit(
            "faregate.toml",
            "failure_rate = 0.5",
            "failure_rate = \"40%\"",
        )
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!((config.tools[0].breaker.failure_rate() - 0.4).abs() < 1e-9);
}

#[test]
fn more_successes_than_probes_is_impossible() {
    assert_one_error(
        MapFiles::defaults().edit(
            "faregate.toml",
            "half_open_successes = 2",
            "half_open_successes = 4",
        ),
        &[
            "half_open_successes",
            "4 successes can never happen with 3 probes",
        ],
    );
}

#[test]
fn open_for_max_below_open_for_is_refused() {
    assert_one_error(
        MapFiles::defaults().edit(
            "faregate.toml",
            "open_for_max = \"5m\"",
            "open_for_max = \"10s\"",
        ),
        &["open_for_max", "must be at least open_for (30s)"],
    );
}

#[test]
fn ramp_stages_must_grow() {
    assert_one_error(
        MapFiles::defaults().edit(
            "faregate.toml",
            "ramp = [\"10%:30s\", \"50%:30s\"]",
            "ramp = [\"50%:30s\", \"10%:30s\"]",
        ),
        &["ramp[1]", "must grow"],
    );
    assert_one_error(
        MapFiles::defaults().edit(
            "faregate.toml",
            "ramp = [\"10%:30s\", \"50%:30s\"]",
            "ramp = [\"10% for 30s\"]",
        ),
        &["ramp[0]", "\"SHARE%:DURATION\""],
    );
}

#[test]
fn tool_overrides_merge_over_defaults() {
    let config = MapFiles::defaults()
        .edit(
            "tools/search_hotels.toml",
            "[fallback]",
            "[breaker]\nopen_for = \"45s\"\nslow_call = \"auto\"\n\n[fallback]",
        )
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let hotels = config.tool("search_hotels").expect("configured");
    assert_eq!(hotels.breaker.open_for(), Duration::from_secs(45));
    assert_eq!(hotels.breaker.slow_call(), crate::breaker::SlowCall::auto());
    let mut expected = crate::breaker::BreakerConfig::builder();
    expected
        .open_for(Duration::from_secs(45))
        .slow_call(crate::breaker::SlowCall::auto());
    assert_eq!(
        Ok(hotels.breaker.clone()),
        expected.build(),
        "the rest is the default"
    );
}

#[test]
fn unknown_tools_list_the_known_ones() {
    assert_one_error(
        MapFiles::defaults().put(
            "tools/search_trains.toml",
            "name = \"search_trains\"\ndescription = \"Search trains between two stations on a date.\"\nproviders = [\"duffel\"]\n[fallback]\ninteractive = \"search_flights.unavailable.md\"\n",
        ),
        &["search_trains.toml: name: unknown tool \"search_trains\"", "search_flights"],
    );
}

#[test]
fn tools_must_name_configured_providers() {
    assert_one_error(
        MapFiles::defaults().edit(
            "tools/search_flights.toml",
            "providers = [\"duffel\", \"amadeus\"]",
            "providers = [\"sabre\"]",
        ),
        &["providers[0]", "unknown provider \"sabre\"", "duffel"],
    );
}

#[test]
fn missing_prompt_files_are_named() {
    assert_one_error(
        MapFiles::defaults().remove("prompts/search_hotels.unavailable.md"),
        &[
            "fallback.interactive",
            "no prompt file \"search_hotels.unavailable.md\"",
        ],
    );
}

#[test]
fn deadline_shorter_than_timeout_is_refused() {
    assert_one_error(
        MapFiles::defaults().edit(
            "tools/search_flights.toml",
            "deadline = \"12s\"",
            "deadline = \"2s\"",
        ),
        &["deadline", "at least the per-attempt timeout (8s)"],
    );
}

#[test]
fn a_settle_time_within_a_booking_deadline_and_its_margin_is_refused() {
    for short in ["20s", "49s"] {
        assert_one_error(
            MapFiles::defaults().edit(
                "faregate.toml",
                "settle = \"2m\"",
                &format!("settle = \"{short}\""),
            ),
            &[
                "bookings.settle",
                "is not 30s longer than the deadline of book_hotel (20s)",
                "Write at least \"50s\"",
            ],
        );
    }
    MapFiles::defaults()
        .edit("faregate.toml", "settle = \"2m\"", "settle = \"50s\"")
        .load()
        .unwrap_or_else(|e| panic!("30s longer than every booking deadline: {e}"));
}

#[test]
fn fresh_for_is_read_for_a_read_tool_and_off_by_default() {
    let config = MapFiles::defaults()
        .edit(
            "tools/search_flights.toml",
            "stale_for = \"15m\"",
            "stale_for = \"15m\"\nfresh_for = \"60s\"",
        )
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let fresh_for = |tool: &str| config.tool(tool).map(|t| t.fresh_for);
    assert_eq!(fresh_for("search_flights"), Some(Duration::from_secs(60)));
    assert_eq!(fresh_for("search_hotels"), Some(Duration::ZERO));
}

/// A tool whose file says how long it may be served stale is warned when `fresh_for` outlasts
/// that: it would repeat an answer as fresh, with no age a model reads, after it may no longer
/// be served even as stale.
#[test]
fn fresh_for_longer_than_an_explicit_stale_for_is_warned() {
    let files = MapFiles::defaults().edit(
        "tools/price_flight_offer.toml",
        "stale_for = \"0s\"",
        "stale_for = \"0s\"\nfresh_for = \"1h\"",
    );
    let (config, warnings) = files.load_warned();
    assert_eq!(
        config.tool("price_flight_offer").map(|t| t.fresh_for),
        Some(Duration::from_secs(3600))
    );
    let said: Vec<&String> = warnings
        .iter()
        .filter(|w| w.contains("fresh_for"))
        .collect();
    assert!(
        said.len() == 1
            && said[0].contains("price_flight_offer.toml")
            && said[0].contains("\"1h\" is longer than stale_for (\"0s\")"),
        "{said:#?}"
    );
    // Within stale_for: nothing said.
    let files = MapFiles::defaults().edit(
        "tools/search_flights.toml",
        "stale_for = \"15m\"",
        "stale_for = \"15m\"\nfresh_for = \"60s\"",
    );
    let (_, warnings) = files.load_warned();
    assert!(
        warnings.iter().all(|w| !w.contains("fresh_for")),
        "{warnings:#?}"
    );
}

#[test]
fn fresh_for_on_a_write_tool_is_refused_with_the_fix() {
    assert_one_error(
        MapFiles::defaults().edit(
            "tools/book_flight.toml",
            "stale_for = \"0s\"",
            "stale_for = \"0s\"\nfresh_for = \"60s\"",
        ),
        &[
            "book_flight.toml: fresh_for",
            "book_flight is a write tool",
            "remove `fresh_for`",
        ],
    );
}

#[test]
fn answers_are_remembered_for_a_year_at_most() {
    // Beyond what the memory's cache can hold (a thousand years) it would panic at start or
    // on reload; a year is already far beyond any useful answer.
    assert_one_error(
        MapFiles::defaults().edit(
            "tools/search_flights.toml",
            "stale_for = \"15m\"",
            "stale_for = \"15m\"\nfresh_for = \"1001y\"",
        ),
        &[
            "search_flights.toml: fresh_for",
            "longer than a year",
            "at most \"365d\"",
        ],
    );
    assert_one_error(
        MapFiles::defaults().edit(
            "tools/search_flights.toml",
            "stale_for = \"15m\"",
            "stale_for = \"2y\"",
        ),
        &["search_flights.toml: stale_for", "longer than a year"],
    );
    MapFiles::defaults()
        .edit(
            "tools/search_flights.toml",
            "stale_for = \"15m\"",
            "stale_for = \"365d\"",
        )
        .load()
        .unwrap_or_else(|e| panic!("a year is allowed: {e}"));
}

#[test]
fn secrets_are_never_written_in_the_file() {
    assert_one_error(
        MapFiles::defaults().edit(
            "faregate.toml",
            "token_env = \"DUFFEL_ACCESS_TOKEN\"",
            "token_env = \"duffel_live_abc123\"",
        ),
        &[
            "token_env",
            "not an environment variable name",
            "never the secret itself",
        ],
    );
}

#[test]
fn unknown_provider_kinds_list_the_valid_ones() {
    assert_one_error(
        MapFiles::defaults().edit("faregate.toml", "kind = \"duffel\"", "kind = \"sabre\""),
        &["providers.duffel.kind", "valid kinds: duffel, amadeus"],
    );
}

/// A provider table with several bad values reports each of them, and never calls a key it
/// takes unknown because an earlier value was refused (a probe saw `connect_timeout: unknown
/// key` after a token written in `token_env`, and `token_env: unknown key` after an unknown
/// `auth`).
#[test]
fn every_bad_value_of_a_provider_is_reported_and_no_valid_key_is_unknown() {
    let errors = errors_of(
        MapFiles::defaults()
            .edit(
                "faregate.toml",
                "token_env = \"DUFFEL_ACCESS_TOKEN\"",
                "token_env = \"duffel_test_abc123XYZ\"\nconnect_timeout = \"10ms\"\ntimeout = \"1h\"",
            )
            .edit(
                "faregate.toml",
                "auth = \"bearer\"",
                "auth = \"digest\"\nrequests_per_second = 0",
            ),
    );
    assert!(
        errors.iter().all(|e| !e.contains("unknown key")),
        "{errors:#?}"
    );
    let at = |key: &str, says: &str| {
        errors
            .iter()
            .any(|e| e.contains(&format!("providers.{key}: ")) && e.contains(says))
    };
    assert!(
        at("duffel.token_env", "not an environment variable name"),
        "{errors:#?}"
    );
    assert!(
        at("duffel.connect_timeout", "between \"100ms\" and \"60s\""),
        "{errors:#?}"
    );
    assert!(
        at("duffel.timeout", "between \"100ms\" and \"5m\""),
        "{errors:#?}"
    );
    assert!(
        at("hotel_content.auth", "unknown authentication \"digest\""),
        "{errors:#?}"
    );
    assert!(at("hotel_content.requests_per_second", ""), "{errors:#?}");
    assert_eq!(errors.len(), 5, "{errors:#?}");
}

#[test]
fn bad_urls_and_addresses_are_explained() {
    let errors = errors_of(
        MapFiles::defaults()
            .edit(
                "faregate.toml",
                "base_url = \"http://127.0.0.1:8081\"",
                "base_url = \"ftp://x\"",
            )
            .edit(
                "faregate.toml",
                "listen = \"127.0.0.1:8080\"",
                "listen = \"localhost\"",
            ),
    );
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(
        errors
            .iter()
            .any(|e| e.contains("server.listen: \"localhost\" is not an address"))
    );
    assert!(errors.iter().any(|e| {
        e.contains("providers.duffel.base_url: \"ftp://x\" must be an http or https URL")
    }));
}

#[test]
fn toml_syntax_errors_give_the_line() {
    let errors = errors_of(MapFiles::defaults().edit("faregate.toml", "[store]", "[store"));
    assert!(
        errors.iter().any(|e| e.contains("not valid TOML (line")),
        "{errors:#?}"
    );
}

#[test]
fn short_descriptions_are_refused() {
    assert_one_error(
        MapFiles::defaults().put(
            "tools/search_hotels.toml",
            "name = \"search_hotels\"\ndescription = \"Hotels.\"\nproviders = [\"duffel\"]\n[fallback]\ninteractive = \"search_hotels.unavailable.md\"\n",
        ),
        &["description", "too short for a model to act on"],
    )
}

#[test]
fn placeholders_are_found() {
    assert_eq!(
        placeholders("a {tool} b {retry_after_s} {not valid} {} {{x}}"),
        ["tool", "retry_after_s", "x"]
    );
}

#[test]
fn mcp_defaults_are_loopback_and_the_table_is_read() {
    let config = MapFiles::defaults()
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.mcp, McpConfig::default());
    let config = MapFiles::defaults()
        .edit(
            "faregate.toml",
            "allowed_hosts = [\"localhost\", \"127.0.0.1\", \"::1\"]",
            "allowed_hosts = [\"gateway.example.com\", \"gateway.example.com:8443\", \"10.0.0.7\"]",
        )
        .edit(
            "faregate.toml",
            "# legacy_sessions = true",
            "legacy_sessions = false",
        )
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        config.mcp.allowed_hosts,
        [
            "gateway.example.com",
            "gateway.example.com:8443",
            "10.0.0.7"
        ]
    );
    assert!(!config.mcp.legacy_sessions);
}

#[test]
fn mcp_hosts_and_origins_are_checked() {
    let errors = errors_of(
        MapFiles::defaults()
            .edit(
                "faregate.toml",
                "allowed_hosts = [\"localhost\", \"127.0.0.1\", \"::1\"]",
                "allowed_hosts = [\"https://gateway.example.com\"]",
            )
            .edit(
                "faregate.toml",
                "allowed_origins = [\"http://localhost:*\", \"http://127.0.0.1:*\", \"http://[::1]:*\"]",
                "allowed_origins = [\"chat.example.com\", \"https://chat.example.com/app\", \"null\", \"https://ok.example.com:*\"]",
            )
            .edit("faregate.toml", "# legacy_sessions = true", "legacy_sessions = \"yes\""),
    );
    assert_eq!(errors.len(), 4, "{errors:#?}");
    assert!(errors[0].contains("mcp.allowed_hosts[0]"), "{}", errors[0]);
    assert!(errors[0].contains("no scheme"), "{}", errors[0]);
    assert!(
        errors[1].contains("mcp.allowed_origins[0]"),
        "{}",
        errors[1]
    );
    assert!(
        errors[2].contains("mcp.allowed_origins[1]"),
        "{}",
        errors[2]
    );
    assert!(errors[2].contains("no path"), "{}", errors[2]);
    assert!(errors[3].contains("mcp.legacy_sessions"), "{}", errors[3]);
    assert!(errors[3].contains("true or false"), "{}", errors[3]);
    assert_one_error(
        MapFiles::defaults().edit(
            "faregate.toml",
            "allowed_hosts = [\"localhost\", \"127.0.0.1\", \"::1\"]",
            "allowed_hosts = []",
        ),
        &["mcp.allowed_hosts", "DNS rebinding"],
    );
}

#[test]
fn tool_names_must_suit_every_agent_protocol() {
    for good in [
        "search_flights",
        "_private",
        "a",
        "Book-Flight_2",
        &"x".repeat(64),
    ] {
        assert!(is_tool_name(good), "{good}");
    }
    for bad in [
        "",
        "2fast",
        "search.flights",
        "search flights",
        "-x",
        "ñandu",
        &"x".repeat(65),
    ] {
        assert!(!is_tool_name(bad), "{bad}");
    }
    // A catalog tool with a name the protocols refuse is reported at load, once.
    let files = MapFiles::defaults().put(
        "tools/search.trains.toml",
        "name = \"search.trains\"\ndescription = \"Search trains between two stations on a date.\"\nproviders = [\"duffel\"]\n[fallback]\ninteractive = \"search_flights.unavailable.md\"\n",
    );
    let mut known = crate::tools::names();
    known.push("search.trains");
    let errors = match load(&files, Path::new("/cfg/faregate.toml"), &known) {
        Ok(_) => panic!("the config loaded but should have been refused"),
        Err(e) => e.errors.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
    };
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].contains("search.trains.toml: name"),
        "{}",
        errors[0]
    );
    assert!(
        errors[0].contains("^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$"),
        "{}",
        errors[0]
    );
}
