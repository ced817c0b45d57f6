//! `[[clients]]`: named clients, each with its key, the tools it may call, whether it may book,
//! its own limits, a booking budget per day and where its callbacks may go.
//!
//! ```toml
//! [[clients]]
//! name = "travel-app"
//! key_env = "TRAVEL_APP_KEY"          # or key_sha256 = "<64 hex digits>", never the key itself
//! tools = ["search_*", "price_flight_offer", "book_flight"]
//! may_book = true
//! rate = "5/s"                         # rate, burst, max_concurrent_calls override [limits]
//! budget_per_day = { amount = "2000.00", currency = "EUR" }
//! callback_allowlist = ["https://travel-app.example/hooks/"]   # instead of [auth]'s, for it
//! callback_secret_env = "TRAVEL_APP_CALLBACK_SECRET"            # signs its callbacks instead
//! ```
//!
//! Every problem is reported at once: unknown keys, a name the gateway keeps for itself, a key
//! given twice or both ways, two clients with one key, and a scope entry that names no
//! configured tool.

use std::collections::BTreeMap;

use super::model::{ClientConfig, ClientKey, LimitsConfig, ToolConfig};
use super::reader::{Section, env_name_message, is_env_name, parse_http_url};
use super::server::parse_rate;
use crate::clients::{ClientName, DailyBudget, Scope, digest_from_hex};

/// Every entry's scope with its index in `[[clients]]`, read even where another key of the
/// entry is wrong: [`check_scopes`] reports a scope naming no tool beside those mistakes, in
/// the same round.
pub(super) type Scopes = Vec<(usize, Scope)>;

/// Reads every `[[clients]]` entry; `limits` is `[limits]`, which a client's own limits
/// override. Scopes are checked against the tools later ([`check_scopes`]).
pub(super) fn read_clients(
    root: &Section<'_>,
    limits: &LimitsConfig,
) -> (Vec<ClientConfig>, Scopes) {
    let mut clients = Vec::new();
    let mut scopes = Vec::new();
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    let mut keys: BTreeMap<String, String> = BTreeMap::new();
    for (i, s) in root.tables("clients").into_iter().enumerate() {
        let (client, scope) = read_client(&s, limits);
        if let Some(scope) = scope {
            scopes.push((i, scope));
        }
        if let Some(client) = client {
            let name = client.name.to_string();
            if let Some(first) = names.insert(name.clone(), i) {
                s.error(
                    "name",
                    format!("client {name} is configured twice (also clients[{first}]); give each client its own name"),
                );
            }
            let (field, key) = match &client.key {
                ClientKey::Env(var) => ("key_env", format!("the variable {var}")),
                ClientKey::Sha256(d) => (
                    "key_sha256",
                    format!(
                        "the key whose SHA-256 starts {}",
                        d[..4]
                            .iter()
                            .map(|b| format!("{b:02x}"))
                            .collect::<String>()
                    ),
                ),
            };
            if let Some(other) = keys.insert(key.clone(), name.clone()) {
                s.error(
                    field,
                    format!("clients {other} and {name} both use {key}; one key names one client, so give each client its own"),
                );
            }
            clients.push(client);
        }
        s.finish();
    }
    (clients, scopes)
}

/// One entry, and its scope (read alone when another key of the entry is wrong).
fn read_client(s: &Section<'_>, limits: &LimitsConfig) -> (Option<ClientConfig>, Option<Scope>) {
    let name =
        s.required_string("name", "\"travel-app\"").and_then(|n| {
            match ClientName::configured(&n) {
                Ok(name) => Some(name),
                Err(e) => {
                    s.error("name", e.0);
                    None
                }
            }
        });
    let key = read_key(s);
    let patterns = s.strings("tools").unwrap_or_else(|| vec!["*".to_string()]);
    let may_book = s.boolean("may_book").unwrap_or(false);
    let scope = match Scope::new(patterns, may_book) {
        Ok(scope) => Some(scope),
        Err(e) => {
            s.error("tools", e);
            None
        }
    };
    let mut own = limits.clone();
    if let Some(r) = s.string("rate") {
        match parse_rate(&r) {
            Ok(rate) => own.client_rate = rate,
            Err(msg) => s.error("rate", msg),
        }
    }
    if let Some(n) = s.integer("burst", 1, 1_000_000) {
        own.client_burst = n as u32;
    }
    if let Some(n) = s.integer("max_concurrent_calls", 0, 1_000_000) {
        own.client_max_concurrent_calls = (n > 0).then_some(n as u32);
    }
    let budget = s.table("budget_per_day").and_then(|b| {
        let amount = b.required_string("amount", "\"2000.00\"");
        let currency = b.required_string("currency", "\"EUR\"");
        b.finish();
        match DailyBudget::new(&amount?, &currency?) {
            Ok(budget) => Some(budget),
            Err(e) => {
                s.error("budget_per_day", e);
                None
            }
        }
    });
    let callback_allowlist = s.strings("callback_allowlist").map(|urls| {
        let mut parsed = Vec::new();
        for (i, u) in urls.iter().enumerate() {
            match parse_http_url(u) {
                Ok(url) => parsed.push(url),
                Err(msg) => s.error(&format!("callback_allowlist[{i}]"), msg),
            }
        }
        parsed
    });
    let callback_secret_env =
        s.string("callback_secret_env")
            .and_then(|var| match is_env_name(&var) {
                true => Some(var),
                false => {
                    s.error(
                        "callback_secret_env",
                        env_name_message("callback_secret_env", &var, "TRAVEL_APP_CALLBACK_SECRET"),
                    );
                    None
                }
            });
    let client = match (name, key, scope.clone()) {
        (Some(name), Some(key), Some(scope)) => Some(ClientConfig {
            name,
            key,
            scope,
            limits: own,
            budget,
            callback_allowlist,
            callback_secret_env,
        }),
        _ => None,
    };
    (client, scope)
}

/// `key_env` or `key_sha256`, exactly one of them.
fn read_key(s: &Section<'_>) -> Option<ClientKey> {
    let env = s.string("key_env");
    let sha = s.string("key_sha256");
    match (env, sha) {
        (Some(_), Some(_)) => {
            s.error(
                "key_sha256",
                "give the key one way only: key_env (the variable holding it) or key_sha256 (its digest)",
            );
            None
        }
        (None, None) => {
            s.error(
                "key_env",
                "missing; name the variable holding the client's key (`key_env = \"TRAVEL_APP_KEY\"`), or give its digest (`key_sha256 = \"<printf %s KEY | sha256sum>\"`)",
            );
            None
        }
        (Some(var), None) => {
            if is_env_name(&var) {
                Some(ClientKey::Env(var))
            } else {
                s.error(
                    "key_env",
                    env_name_message("key_env", &var, "TRAVEL_APP_KEY"),
                );
                None
            }
        }
        (None, Some(hex)) => match digest_from_hex(&hex) {
            Some(d) => Some(ClientKey::Sha256(d)),
            None => {
                s.error(
                    "key_sha256",
                    "not a SHA-256 digest; write the 64 hex digits `printf %s \"$KEY\" | sha256sum` prints (never the key itself)",
                );
                None
            }
        },
    }
}

/// Each scope entry must name at least one configured tool: a typo would otherwise leave a
/// client without the tool it was meant to have, silently.
pub(super) fn check_scopes(root: &Section<'_>, scopes: &Scopes, tools: &[ToolConfig]) {
    let configured: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for (i, scope) in scopes {
        for (j, pattern) in scope.patterns().iter().enumerate() {
            let one = Scope::new(vec![pattern.clone()], true);
            let names_one = one.is_ok_and(|s| configured.iter().any(|t| s.names(t)));
            if !names_one {
                root.error(
                    &format!("clients[{i}].tools[{j}]"),
                    format!(
                        "\"{pattern}\" names no configured tool; the tools are: {}",
                        configured.join(", ")
                    ),
                );
            }
        }
    }
}
