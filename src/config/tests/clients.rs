//! `[[clients]]`: a good entry reads as configured, and every mistake in one file is reported
//! at once, each naming the client's key path and what to write instead.

use super::*;
use crate::clients::{Amount, digest};

fn with_clients(text: &str) -> MapFiles {
    let path = "/cfg/faregate.toml";
    let files = MapFiles::defaults();
    let main = files.0.get(Path::new(path)).cloned().unwrap_or_default();
    files.put("faregate.toml", &format!("{main}\n{text}"))
}

fn hex(key: &str) -> String {
    digest(key.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn a_client_reads_as_configured() {
    let text = format!(
        r#"
[[clients]]
name = "travel-app"
key_env = "TRAVEL_APP_KEY"
tools = ["search_*", "book_flight"]
may_book = true
rate = "5/s"
max_concurrent_calls = 2
budget_per_day = {{ amount = "2000.50", currency = "EUR" }}
callback_allowlist = ["https://travel-app.example/hooks/"]
callback_secret_env = "TRAVEL_APP_CALLBACK_SECRET"

[[clients]]
name = "reporting"
key_sha256 = "{}"
"#,
        hex("reporting-key")
    );
    let config = with_clients(&text).load().unwrap_or_else(|e| panic!("{e}"));
    let [app, reporting] = &config.clients[..] else {
        panic!("two clients: {:?}", config.clients);
    };
    assert_eq!(app.name.as_str(), "travel-app");
    assert_eq!(app.key, ClientKey::Env("TRAVEL_APP_KEY".into()));
    assert!(app.scope.allows("search_hotels", false));
    assert!(app.scope.allows("book_flight", true));
    assert!(!app.scope.allows("price_flight_offer", false));
    assert_eq!(
        app.limits.client_rate,
        Some(Rate {
            count: 5,
            per: Duration::from_secs(1)
        })
    );
    assert_eq!(app.limits.client_max_concurrent_calls, Some(2));
    assert_eq!(
        app.limits.client_burst, config.limits.client_burst,
        "[limits] below"
    );
    let budget = app.budget.as_ref().unwrap_or_else(|| panic!("a budget"));
    assert_eq!(
        budget.amount,
        Amount::parse("2000.5").unwrap_or_else(|| panic!("amount"))
    );
    assert_eq!(budget.currency, "EUR");
    assert_eq!(
        app.callback_allowlist,
        Some(vec![
            reqwest::Url::parse("https://travel-app.example/hooks/")
                .unwrap_or_else(|e| panic!("{e}"))
        ])
    );
    assert_eq!(reporting.callback_allowlist, None, "the gateway's list");
    assert_eq!(
        app.callback_secret_env.as_deref(),
        Some("TRAVEL_APP_CALLBACK_SECRET")
    );
    assert_eq!(
        reporting.callback_secret_env, None,
        "the gateway's secret signs its callbacks"
    );
    assert_eq!(reporting.key, ClientKey::Sha256(digest(b"reporting-key")));
    assert!(
        reporting.scope.allows("search_flights", false),
        "every tool by default"
    );
    assert!(
        !reporting.scope.allows("book_flight", true),
        "no bookings by default"
    );
    assert_eq!(reporting.limits, config.limits);
    assert_eq!(reporting.budget, None);
}

#[test]
fn every_client_mistake_is_reported_at_once() {
    let text = format!(
        r#"
[[clients]]
name = "alpha"
key_sha256 = "{k}"
colour = "blue"

[[clients]]
name = "beta"
key_sha256 = "{k}"
tools = ["search_flights", "search_trains", "book_*"]

[[clients]]
name = "local"
key_env = "LOCAL_KEY"

[[clients]]
name = "gamma"
key_env = "GAMMA_KEY"
key_sha256 = "{k}"

[[clients]]
name = "delta"
key_env = "not-a-variable"
budget_per_day = {{ amount = "lots", currency = "EUR" }}
callback_allowlist = ["https://ok.example/hooks/", "ftp://files.example/"]

[[clients]]
name = "alpha"
key_env = "ALPHA2_KEY"

[[clients]]
name = "admin"
key_env = "EPSILON_KEY"
rate = "fast"
tools = ["serch_flights"]
"#,
        k = hex("shared")
    );
    let errors = errors_of(with_clients(&text));
    let expect = [
        ("clients[0].colour", "unknown key; valid keys here:"),
        ("clients[1].key_sha256", "clients alpha and beta both use"),
        (
            "clients[1].tools[1]",
            "\"search_trains\" names no configured tool",
        ),
        ("clients[2].name", "one the gateway gives itself"),
        ("clients[3].key_sha256", "give the key one way only"),
        ("clients[4].key_env", "is not an environment variable name"),
        ("clients[4].budget_per_day", "is not an amount"),
        (
            "clients[4].callback_allowlist[1]",
            "must be an http or https URL",
        ),
        ("clients[5].name", "client alpha is configured twice"),
        // An entry with other mistakes still has its scope checked, under its own index.
        ("clients[6].name", "one the gateway gives itself"),
        ("clients[6].rate", "\"fast\""),
        (
            "clients[6].tools[0]",
            "\"serch_flights\" names no configured tool",
        ),
    ];
    for (key, says) in expect {
        assert!(
            errors.iter().any(|e| e.contains(key) && e.contains(says)),
            "no error at {key} saying {says:?} in {errors:#?}"
        );
    }
    assert_eq!(errors.len(), expect.len(), "{errors:#?}");
    assert!(
        errors.iter().all(|e| !e.contains("shared")),
        "no key in any message"
    );
}

/// A tools directory that cannot be listed is said once: the scopes that name tools are not
/// each told that no tool is configured.
#[test]
fn a_tools_directory_that_cannot_be_listed_is_one_problem() {
    struct Unlistable(MapFiles);
    impl Files for Unlistable {
        fn read(&self, path: &Path) -> io::Result<String> {
            self.0.read(path)
        }
        fn list(&self, dir: &Path, suffix: &str) -> io::Result<Vec<PathBuf>> {
            if dir.ends_with("tools") {
                return Err(io::Error::new(io::ErrorKind::NotFound, "no such directory"));
            }
            self.0.list(dir, suffix)
        }
    }
    let files = Unlistable(with_clients(
        "[[clients]]\nname = \"alpha\"\nkey_env = \"ALPHA_KEY\"\ntools = [\"search_*\", \"book_flight\"]\n",
    ));
    let errors: Vec<String> = load(
        &files,
        Path::new("/cfg/faregate.toml"),
        &crate::tools::names(),
    )
    .err()
    .map(|e| e.errors.iter().map(|p| p.to_string()).collect())
    .unwrap_or_default();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("cannot list the tools directory")),
        "{errors:#?}"
    );
    assert!(
        !errors
            .iter()
            .any(|e| e.contains("names no configured tool")),
        "{errors:#?}"
    );
}
