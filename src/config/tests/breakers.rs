//! `[breakers] scope` and a provider's `breaker_scope`: read, checked with every allowed value
//! named, and a tool's own `[breaker]` said to go unused where its provider shares breakers.

use super::{MapFiles, assert_one_error};
use crate::breaker::BreakerScope;

#[test]
fn breakers_are_per_tool_and_provider_unless_a_scope_says_otherwise() {
    let config = MapFiles::defaults()
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.breakers.scope, BreakerScope::ToolProvider);
    assert_eq!(
        config.breakers.scope_of("duffel"),
        BreakerScope::ToolProvider
    );

    let shared = MapFiles::defaults()
        .edit(
            "faregate.toml",
            "scope = \"tool_provider\"",
            "scope = \"provider\"",
        )
        .edit(
            "faregate.toml",
            "# breaker_scope = \"provider\"",
            "breaker_scope = \"credential\"",
        )
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(shared.breakers.scope_of("amadeus"), BreakerScope::Provider);
    assert_eq!(
        shared.breakers.scope_of("duffel"),
        BreakerScope::Credential,
        "a provider's own scope wins"
    );
}

#[test]
fn an_unknown_scope_is_refused_with_the_allowed_ones() {
    let allowed = ["\"tool_provider\"", "\"provider\"", "\"credential\""];
    let mut expected = vec!["breakers.scope", "\"per_tool\" is not a breaker scope"];
    expected.extend(allowed);
    assert_one_error(
        MapFiles::defaults().edit(
            "faregate.toml",
            "scope = \"tool_provider\"",
            "scope = \"per_tool\"",
        ),
        &expected,
    );
    let mut expected = vec![
        "providers.duffel.breaker_scope",
        "\"account\" is not a breaker scope",
    ];
    expected.extend(allowed);
    assert_one_error(
        MapFiles::defaults().edit(
            "faregate.toml",
            "# breaker_scope = \"provider\"",
            "breaker_scope = \"account\"",
        ),
        &expected,
    );
}

#[test]
fn a_tools_own_breaker_tuning_is_said_to_go_unused_on_a_shared_breaker() {
    let tuned = |files: MapFiles| {
        files.edit(
            "tools/search_hotels.toml",
            "[fallback]",
            "[breaker]\nopen_for = \"45s\"\n\n[fallback]",
        )
    };
    let warnings = |files: MapFiles| -> Vec<String> {
        let (_, warnings) = crate::config::load(
            &files,
            std::path::Path::new("/cfg/faregate.toml"),
            &crate::tools::names(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        warnings.iter().map(|w| w.to_string()).collect()
    };
    let per_tool = warnings(tuned(MapFiles::defaults()));
    assert!(
        per_tool
            .iter()
            .all(|w| !w.contains("[breaker] is not used")),
        "{per_tool:#?}"
    );
    let shared = warnings(tuned(MapFiles::defaults()).edit(
        "faregate.toml",
        "# breaker_scope = \"provider\"",
        "breaker_scope = \"provider\"",
    ));
    let said: Vec<&String> = shared
        .iter()
        .filter(|w| w.contains("[breaker] is not used"))
        .collect();
    assert_eq!(said.len(), 1, "{shared:#?}");
    assert!(said[0].contains("search_hotels.toml"), "{}", said[0]);
    assert!(said[0].contains("on duffel:"), "{}", said[0]);
    assert!(said[0].contains("[defaults.breaker]"), "{}", said[0]);
}

#[test]
fn a_provider_name_that_would_make_breaker_keys_ambiguous_is_refused() {
    for bad in ["duffel.eu", "duffel@eu", "duffel/eu"] {
        let errors = super::errors_of(
            MapFiles::defaults()
                .edit(
                    "faregate.toml",
                    "[providers.duffel]",
                    &format!("[providers.\"{bad}\"]"),
                )
                .edit(
                    "tools/search_flights.toml",
                    "providers = [\"duffel\", \"amadeus\"]",
                    &format!("providers = [\"{bad}\", \"amadeus\"]"),
                ),
        );
        assert!(
            errors
                .iter()
                .any(|e| e.contains(&format!("\"{bad}\" cannot name a provider"))
                    && e.contains("letters, digits, '_' and '-'")),
            "{bad}: {errors:#?}"
        );
    }
}
