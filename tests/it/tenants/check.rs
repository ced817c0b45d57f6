//! `faregate check` on `[[clients]]` (and on a fleet's spool file): every mistake reported at
//! once, each saying what to fix, and never a key.

use std::process::Command;

use super::{config_dir, hex};
use crate::support::run_to_end;

fn check(dir: &std::path::Path, env: &[(&str, &str)]) -> (bool, String) {
    let (status, text) = run_to_end(
        Command::new(env!("CARGO_BIN_EXE_faregate"))
            .args(["check", "--config"])
            .arg(dir.join("faregate.toml"))
            .env_remove("FAREGATE_CLIENT_KEYS")
            .env_remove("FAREGATE_ADMIN_KEY")
            .env_remove("FAREGATE_CALLBACK_SECRET")
            .envs(env.iter().copied()),
    );
    (status.success(), text)
}

#[test]
fn check_reports_every_client_mistake_at_once() {
    let clients = format!(
        r#"
[[clients]]
name = "alpha"
key_sha256 = "{k}"
colour = "blue"

[[clients]]
name = "beta"
key_sha256 = "{k}"
tools = ["search_flights", "search_trains"]
"#,
        k = hex("shared-secret-key")
    );
    let dir = config_dir(&clients);
    let (ok, text) = check(dir.path(), &[]);
    assert!(!ok, "{text}");
    for says in [
        "clients[0].colour: unknown key",
        "clients[1].key_sha256: clients alpha and beta both use",
        "clients[1].tools[1]: \"search_trains\" names no configured tool",
    ] {
        assert!(text.contains(says), "missing {says:?} in:\n{text}");
    }
    assert!(text.contains("3 configuration problems"), "{text}");
    assert!(!text.contains("shared-secret-key"), "{text}");
}

#[test]
fn check_finds_unset_and_shared_keys_in_the_environment() {
    let clients = r#"
[[clients]]
name = "alpha"
key_env = "ALPHA_KEY"

[[clients]]
name = "beta"
key_env = "BETA_KEY"
"#;
    let dir = config_dir(clients);
    let (ok, text) = check(
        dir.path(),
        &[
            ("ALPHA_KEY", "same-key-value"),
            ("FAREGATE_CLIENT_KEYS", "same-key-value"),
        ],
    );
    assert!(!ok, "{text}");
    assert!(text.contains("BETA_KEY (its key_env) is not set"), "{text}");
    assert!(text.contains("have the same key"), "{text}");
    assert!(!text.contains("same-key-value"), "{text}");
    let (ok, text) = check(dir.path(), &[("ALPHA_KEY", "a-key"), ("BETA_KEY", "b-key")]);
    assert!(ok, "{text}");
    assert!(text.contains("clients: alpha, beta"), "{text}");
    // An admin key that is a client's key would make the client an operator: refused.
    let (ok, text) = check(
        dir.path(),
        &[
            ("ALPHA_KEY", "a-key"),
            ("BETA_KEY", "b-key"),
            ("FAREGATE_ADMIN_KEY", "b-key"),
        ],
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains("FAREGATE_ADMIN_KEY: an admin key is also client beta's key"),
        "{text}"
    );
    assert!(!text.contains("b-key"), "{text}");
}

#[test]
fn check_names_a_clients_unset_or_misnamed_callback_secret_variable_and_never_the_secret() {
    let clients = format!(
        r#"
[[clients]]
name = "alpha"
key_sha256 = "{a}"
callback_secret_env = "ALPHA_CALLBACK_SECRET"

[[clients]]
name = "beta"
key_sha256 = "{b}"
callback_secret_env = "beta secret"
"#,
        a = hex("alpha-key"),
        b = hex("beta-key")
    );
    let dir = config_dir(&clients);
    let (ok, text) = check(dir.path(), &[]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("clients[1].callback_secret_env"),
        "a name no variable can have: {text}"
    );

    let dir = config_dir(&clients.replace("\"beta secret\"", "\"BETA_CALLBACK_SECRET\""));
    let (ok, text) = check(dir.path(), &[("BETA_CALLBACK_SECRET", "beta-s3cret")]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("ALPHA_CALLBACK_SECRET (its callback_secret_env) is not set"),
        "{text}"
    );
    let (ok, text) = check(
        dir.path(),
        &[
            ("ALPHA_CALLBACK_SECRET", "alpha-s3cret"),
            ("BETA_CALLBACK_SECRET", "beta-s3cret"),
        ],
    );
    assert!(ok, "{text}");
    assert!(!text.contains("s3cret"), "{text}");
    assert!(
        text.contains("callbacks: signing secret NOT set in FAREGATE_CALLBACK_SECRET (callback URLs are refused but for clients with their own); clients signed with their own secret: alpha, beta"),
        "{text}"
    );
    assert!(!text.contains("whitespace"), "{text}");

    // A secret read from a file `echo` wrote ends with a newline: callbacks are signed with it
    // as set, and check says so, for the gateway's secret and a client's alike.
    let (ok, text) = check(
        dir.path(),
        &[
            ("ALPHA_CALLBACK_SECRET", "alpha-s3cret"),
            ("BETA_CALLBACK_SECRET", "beta-s3cret\n"),
            ("FAREGATE_CALLBACK_SECRET", " gateway-s3cret"),
        ],
    );
    assert!(ok, "{text}");
    assert!(!text.contains("s3cret"), "{text}");
    for var in [
        "FAREGATE_CALLBACK_SECRET (the gateway's callback signing secret)",
        "BETA_CALLBACK_SECRET (client beta's callback signing secret)",
    ] {
        assert!(
            text.contains(&format!(
                "warning: {var} begins or ends with whitespace (a newline from echo?): callbacks are signed with it as set"
            )),
            "{var} in {text}"
        );
    }
    assert!(!text.contains("ALPHA_CALLBACK_SECRET ("), "{text}");
}

#[test]
fn check_on_a_fleet_store_says_when_the_spool_could_not_be_written() {
    let dir = config_dir("");
    let path = dir.path().join("faregate.toml");
    let shipped = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    let with_spool = |spool: &std::path::Path| {
        shipped
            .replacen(
                "url = \"sqlite://faregate.db\"",
                "url = \"postgres://gw@db.internal/faregate\"",
                1,
            )
            .replacen(
                "spool_path = \"faregate-spool.db\"",
                &format!("spool_path = {:?}", spool.display().to_string()),
                1,
            )
    };
    let missing = dir.path().join("no-such-dir").join("spool.db");
    std::fs::write(&path, with_spool(&missing)).unwrap_or_else(|e| panic!("{e}"));
    let (ok, text) = check(dir.path(), &[]);
    assert!(!ok, "{text}");
    assert!(text.contains("[store] spool_path"), "{text}");
    assert!(text.contains("no-such-dir"), "{text}");
    assert!(text.contains("create it"), "{text}");

    std::fs::write(&path, with_spool(dir.path())).unwrap_or_else(|e| panic!("{e}"));
    let (ok, text) = check(dir.path(), &[]);
    assert!(!ok, "{text}");
    assert!(text.contains("is a directory; name a file in it"), "{text}");

    std::fs::write(&path, with_spool(&dir.path().join("spool.db")))
        .unwrap_or_else(|e| panic!("{e}"));
    let (ok, text) = check(dir.path(), &[]);
    assert!(ok, "{text}");
}

/// A provider credential set to what no request can carry fails `check` as it fails `serve`;
/// one that is not set is only a warning (check may run where the secrets are not).
#[test]
fn check_fails_on_a_credential_that_cannot_be_sent_and_warns_on_an_unset_one() {
    let dir = config_dir("");
    let (ok, text) = check(dir.path(), &[("DUFFEL_ACCESS_TOKEN", "duffel_test\nabc")]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("error: provider \"duffel\": DUFFEL_ACCESS_TOKEN holds a control character"),
        "{text}"
    );
    assert!(!text.contains("duffel_test"), "{text}");
    assert!(!text.contains(": OK"), "{text}");

    let (ok, text) = check(dir.path(), &[("DUFFEL_ACCESS_TOKEN", "duffel_test_abc\n")]);
    assert!(ok, "{text}");
    assert!(!text.contains("DUFFEL_ACCESS_TOKEN"), "{text}");
}

/// With several clients, check says how much of a tool each may hold, and warns only where
/// one client could still take a tool whole: `[limits] client_max_concurrent_calls = 32` over
/// `get_flight_status`'s 16 slots is no foot-gun any more (the share bounds it), a share of 1
/// is, for every tool.
#[test]
fn check_says_each_clients_share_of_a_tool_and_where_one_client_may_take_it_whole() {
    let dir = config_dir("");
    let two = [("FAREGATE_CLIENT_KEYS", "team-a-key, team-b-key")];
    let (ok, text) = check(dir.path(), &two);
    assert!(ok, "{text}");
    assert!(
        text.contains("client share: 2 clients, each holding at most 0.5 of a tool's max_concurrent per replica ([limits] client_share_of_tool)"),
        "{text}"
    );
    assert!(!text.contains("concurrent calls ("), "no warning: {text}");

    let path = dir.path().join("faregate.toml");
    let shipped = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    let whole = shipped.replacen("client_share_of_tool = 0.5", "client_share_of_tool = 1", 1);
    std::fs::write(&path, whole).unwrap_or_else(|e| panic!("{e}"));
    let (ok, text) = check(dir.path(), &two);
    assert!(ok, "a warning, not an error: {text}");
    assert!(!text.contains("client share:"), "{text}");
    assert!(
        text.contains("tools/get_flight_status.toml: max_concurrent: one client may hold all 16 of get_flight_status's concurrent calls ([limits] client_share_of_tool = 1 shares nothing), so while it does every other client is answered unavailable; lower [limits] client_share_of_tool below 1"),
        "{text}"
    );
    // One client starves nobody: no share, no warning.
    let (ok, text) = check(dir.path(), &[("FAREGATE_CLIENT_KEYS", "team-a-key")]);
    assert!(ok, "{text}");
    assert!(!text.contains("one client may hold all"), "{text}");

    let bad = shipped.replacen("client_share_of_tool = 0.5", "client_share_of_tool = 0", 1);
    std::fs::write(&path, bad).unwrap_or_else(|e| panic!("{e}"));
    let (ok, text) = check(dir.path(), &two);
    assert!(!ok, "{text}");
    assert!(
        text.contains("limits.client_share_of_tool: expected a fraction greater than 0 and at most 1, e.g. 0.5"),
        "{text}"
    );
}
