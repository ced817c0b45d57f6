//! `[providers.X]`: a credential written into a provider's URL or in place of a variable's name
//! is refused, and never repeated; cleartext to another host is refused unless allowed.

use super::*;

#[test]
fn a_credential_in_a_providers_url_is_refused_without_repeating_it() {
    let shipped = "base_url = \"http://127.0.0.1:8081/content/v1\"";
    for url in [
        "http://127.0.0.1:8081/content/v1?apikey=SECRET",
        "http://user:SECRET@127.0.0.1:8081/content/v1",
        "http://SECRET@127.0.0.1:8081/content/v1",
        "http://user:SECRET@127.0.0.1:bad/content/v1",
    ] {
        let errors = MapFiles::defaults()
            .edit("faregate.toml", shipped, &format!("base_url = \"{url}\""))
            .load()
            .err()
            .unwrap_or_else(|| panic!("{url} accepted"))
            .to_string();
        assert!(!errors.contains("SECRET"), "{url}: {errors}");
        assert!(
            errors.contains("providers.hotel_content.base_url"),
            "{url}: {errors}"
        );
        assert!(errors.contains("environment variable"), "{url}: {errors}");
    }
}

/// A `*_env` key holding the secret itself instead of a variable's name: the message names the
/// key, says the value looks like a secret, says what to write instead, and never repeats the
/// value (a probe saw `client_secret_env = "sk_live_…"` printed back by `faregate check`). Every
/// `*_env` key is tried: each provider kind's, every `auth` of an http provider, `[auth]`'s and
/// a client's.
#[test]
fn a_secret_written_in_an_env_key_is_never_repeated() {
    const SECRET: &str = "sk_live_4eC39HqLyjWDarjtT1zdp7dc";
    let main = MapFiles::defaults()
        .0
        .get(Path::new("/cfg/faregate.toml"))
        .cloned()
        .unwrap_or_default();
    let oauth2 = "[providers.flights]\nkind = \"http\"\nbase_url = \"https://api.example.com\"\nauth = \"oauth2\"\ntoken_url = \"https://auth.example.com/oauth/token\"\nclient_id_env = \"FLIGHTS_CLIENT_ID\"\nclient_secret_env = \"FLIGHTS_CLIENT_SECRET\"\n";
    let basic = "[providers.hotels]\nkind = \"http\"\nbase_url = \"https://api.example.com\"\nauth = \"basic\"\nusername_env = \"HOTELS_USER\"\npassword_env = \"HOTELS_PASSWORD\"\n";
    let client = "[[clients]]\nname = \"travel-app\"\nkey_env = \"TRAVEL_APP_KEY\"\ncallback_secret_env = \"TRAVEL_APP_SECRET\"\n";
    let cases = [
        (
            "DUFFEL_ACCESS_TOKEN",
            "providers.duffel.token_env",
            "DUFFEL_TOKEN",
        ),
        (
            "AMADEUS_CLIENT_ID",
            "providers.amadeus.client_id_env",
            "AMADEUS_CLIENT_ID",
        ),
        (
            "AMADEUS_CLIENT_SECRET",
            "providers.amadeus.client_secret_env",
            "AMADEUS_CLIENT_SECRET",
        ),
        (
            "FLIGHTAWARE_API_KEY",
            "providers.flightaware.key_env",
            "FLIGHTAWARE_KEY",
        ),
        (
            "HOTEL_CONTENT_TOKEN",
            "providers.hotel_content.token_env",
            "HOTEL_CONTENT_TOKEN",
        ),
        (
            "FLIGHTS_CLIENT_ID",
            "providers.flights.client_id_env",
            "FLIGHTS_CLIENT_ID",
        ),
        (
            "FLIGHTS_CLIENT_SECRET",
            "providers.flights.client_secret_env",
            "FLIGHTS_CLIENT_SECRET",
        ),
        (
            "HOTELS_USER",
            "providers.hotels.username_env",
            "HOTELS_USERNAME",
        ),
        (
            "HOTELS_PASSWORD",
            "providers.hotels.password_env",
            "HOTELS_PASSWORD",
        ),
        (
            "FAREGATE_CLIENT_KEYS",
            "auth.client_keys_env",
            "FAREGATE_CLIENT_KEYS",
        ),
        (
            "FAREGATE_ADMIN_KEY",
            "auth.admin_key_env",
            "FAREGATE_ADMIN_KEY",
        ),
        (
            "FAREGATE_CALLBACK_SECRET",
            "auth.callback_secret_env",
            "FAREGATE_CALLBACK_SECRET",
        ),
        ("TRAVEL_APP_KEY", "clients[0].key_env", "TRAVEL_APP_KEY"),
        (
            "TRAVEL_APP_SECRET",
            "clients[0].callback_secret_env",
            "TRAVEL_APP_CALLBACK_SECRET",
        ),
    ];
    for (variable, key, example) in cases {
        let short = key.rsplit('.').next().unwrap_or(key);
        // At the start of a line: not in a comment that shows the key.
        let text = format!("{main}\n{oauth2}\n{basic}\n{client}").replacen(
            &format!("\n{short} = \"{variable}\""),
            &format!("\n{short} = \"{SECRET}\""),
            1,
        );
        assert!(
            text.contains(SECRET),
            "{short} = {variable:?} is not in the file"
        );
        let errors = errors_of(MapFiles::defaults().put("faregate.toml", &text));
        let all = errors.join("\n");
        assert!(
            !all.contains(SECRET),
            "{key}: the secret is repeated: {all}"
        );
        assert!(
            !all.contains("4eC39"),
            "{key}: part of the secret is repeated: {all}"
        );
        let here: Vec<&String> = errors
            .iter()
            .filter(|e| e.contains(&format!("{key}: ")))
            .collect();
        assert_eq!(here.len(), 1, "{key}: {errors:#?}");
        for says in [
            "not an environment variable name",
            "looks like it may be a secret itself",
            &format!("`{short} = \"{example}\"`"),
            "put the secret in that variable",
        ] {
            assert!(here[0].contains(says), "{key}: no {says:?} in {}", here[0]);
        }
    }
}

/// A value that is not a variable's name but does not look like a secret (`flights-token`) is
/// not called one, and is not repeated either.
#[test]
fn a_mistyped_variable_name_is_not_called_a_secret() {
    let errors = errors_of(MapFiles::defaults().edit(
        "faregate.toml",
        "token_env = \"DUFFEL_ACCESS_TOKEN\"",
        "token_env = \"duffel-token\"",
    ));
    let all = errors.join("\n");
    assert!(!all.contains("duffel-token"), "{all}");
    assert!(!all.contains("looks like it may be a secret"), "{all}");
    assert!(all.contains("providers.duffel.token_env: "), "{all}");
    assert!(all.contains("`token_env = \"DUFFEL_TOKEN\"`"), "{all}");
}

/// A provider's `http://` base_url or OAuth2 token_url to a host that is not this machine is
/// refused (its credentials and every request would cross the network in cleartext: a probe
/// saw `token_url = "http://auth.example.com/oauth/token"` pass `faregate check` without a
/// word), saying what to write instead; loopback needs nothing, and `allow_cleartext = true`
/// is the operator's explicit opt-in.
#[test]
fn cleartext_to_another_host_is_refused_unless_the_provider_allows_it() {
    let shipped = "base_url = \"http://127.0.0.1:8081\"          # the simulator; the real API is https://api.duffel.com";
    let duffel_at = |url: &str, extra: &str| {
        MapFiles::defaults().edit(
            "faregate.toml",
            shipped,
            &format!("base_url = \"{url}\"{extra}"),
        )
    };
    for url in [
        "http://api.duffel.com",
        "http://10.0.0.5:8080",
        "http://127.0.0.1.example.com",
        "http://localhost.example.com",
        "http://[::2]:8080",
    ] {
        let errors = errors_of(duffel_at(url, ""));
        assert_eq!(errors.len(), 1, "{url}: {errors:#?}");
        for says in [
            "providers.duffel.base_url: ",
            "cleartext",
            "the provider's credential and every request and answer",
            "https://",
            "`allow_cleartext = true` in [providers.duffel]",
        ] {
            assert!(
                errors[0].contains(says),
                "{url}: no {says:?} in {}",
                errors[0]
            );
        }
    }
    assert!(
        errors_of(duffel_at("http://api.duffel.com", ""))[0]
            .contains("\"https://api.duffel.com/\""),
        "the https form to write"
    );
    let loads = |files: MapFiles| {
        load(
            &files,
            Path::new("/cfg/faregate.toml"),
            &crate::tools::names(),
        )
        .map(|(_, warnings)| warnings.iter().map(|w| w.to_string()).collect::<Vec<_>>())
        .unwrap_or_else(|e| panic!("{e}"))
    };
    for url in [
        "http://localhost:8081",
        "http://LOCALHOST:8081",
        "http://127.0.0.2:8081",
        "http://[::1]:8081",
        "https://api.duffel.com",
    ] {
        let warnings = loads(duffel_at(url, ""));
        assert!(
            !warnings.concat().contains("allow_cleartext"),
            "{url}: {warnings:#?}"
        );
    }
    let opted = loads(duffel_at(
        "http://10.0.0.5:8080",
        "\nallow_cleartext = true",
    ));
    assert!(!opted.concat().contains("allow_cleartext"), "{opted:#?}");
    let unneeded = loads(duffel_at(
        "https://api.duffel.com",
        "\nallow_cleartext = true",
    ));
    assert!(
        unneeded
            .iter()
            .any(|w| w.contains("providers.duffel.allow_cleartext: ")
                && w.contains("nothing needs it")),
        "{unneeded:#?}"
    );

    // An OAuth2 token endpoint in cleartext: the client secret would travel in it.
    let oauth2 = |token_url: &str, extra: &str| {
        let main = MapFiles::defaults()
            .0
            .get(Path::new("/cfg/faregate.toml"))
            .cloned()
            .unwrap_or_default();
        MapFiles::defaults().put(
            "faregate.toml",
            &format!(
                "{main}\n[providers.flights]\nkind = \"http\"\nbase_url = \"https://api.example.com\"\nauth = \"oauth2\"\ntoken_url = \"{token_url}\"\nclient_id_env = \"FLIGHTS_CLIENT_ID\"\nclient_secret_env = \"FLIGHTS_CLIENT_SECRET\"\n{extra}"
            ),
        )
    };
    let errors = errors_of(oauth2("http://auth.example.com/oauth/token", ""));
    assert_eq!(errors.len(), 1, "{errors:#?}");
    for says in [
        "providers.flights.token_url: ",
        "the client id and secret, and the access token answered,",
        "\"https://auth.example.com/oauth/token\"",
        "`allow_cleartext = true` in [providers.flights]",
    ] {
        assert!(errors[0].contains(says), "no {says:?} in {}", errors[0]);
    }
    loads(oauth2("http://127.0.0.1:9/oauth/token", ""));
    loads(oauth2(
        "http://auth.example.com/oauth/token",
        "allow_cleartext = true\n",
    ));
}
