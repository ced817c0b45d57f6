//! A typed reader over a parsed TOML table that records problems instead of failing.
//!
//! serde's `deny_unknown_fields` stops at the first unknown key and cannot say which keys would
//! have been valid. This reader gives the same contract (unknown keys are refused) but reports
//! every unknown key, wrong type and impossible value in one pass, each with the file, the dotted
//! key and what would be valid.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use reqwest::Url;

use super::files::Files;
use super::problems::Problems;

/// Reads and parses one TOML file; a file that cannot be read or parsed is a problem (with the
/// line of a syntax error), and `None`.
pub(crate) fn parse_toml(
    files: &dyn Files,
    path: &Path,
    problems: &RefCell<Problems>,
) -> Option<toml::Table> {
    let text = match files.read(path) {
        Ok(t) => t,
        Err(e) => {
            problems
                .borrow_mut()
                .error(path, "", format!("cannot read the file: {e}"));
            return None;
        }
    };
    match text.parse::<toml::Table>() {
        Ok(t) => Some(t),
        Err(e) => {
            let msg = e.message().to_string();
            let at = e
                .span()
                .map(|s| {
                    let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
                    format!(" (line {line})")
                })
                .unwrap_or_default();
            problems
                .borrow_mut()
                .error(path, "", format!("not valid TOML{at}: {msg}"));
            None
        }
    }
}

/// One table of a TOML file, with the keys read so far remembered for the unknown-key check.
pub(crate) struct Section<'a> {
    file: &'a Path,
    prefix: String,
    table: &'a toml::Table,
    problems: &'a RefCell<Problems>,
    known: RefCell<BTreeSet<&'static str>>,
}

impl<'a> Section<'a> {
    /// The whole file as the root section.
    pub(crate) fn root(
        file: &'a Path,
        table: &'a toml::Table,
        problems: &'a RefCell<Problems>,
    ) -> Self {
        Section {
            file,
            prefix: String::new(),
            table,
            problems,
            known: RefCell::new(BTreeSet::new()),
        }
    }

    /// The file this section belongs to.
    pub(crate) fn file(&self) -> &'a Path {
        self.file
    }

    /// The dotted path of `key` inside this section.
    pub(crate) fn path(&self, key: &str) -> String {
        if key.is_empty() {
            self.prefix.clone()
        } else if self.prefix.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.prefix)
        }
    }

    /// Records an error at `key` of this section.
    pub(crate) fn error(&self, key: &str, message: impl Into<String>) {
        self.problems
            .borrow_mut()
            .error(self.file, self.path(key), message);
    }

    /// Records a warning at `key` of this section: worth saying, not worth refusing.
    pub(crate) fn warning(&self, key: &str, message: impl Into<String>) {
        self.problems
            .borrow_mut()
            .warning(self.file, self.path(key), message);
    }

    fn get(&self, key: &'static str) -> Option<&'a toml::Value> {
        self.known.borrow_mut().insert(key);
        self.table.get(key)
    }

    /// The raw value at `key` (and marks it known), for tables read whole (a JSON Schema).
    pub(crate) fn value(&self, key: &'static str) -> Option<&'a toml::Value> {
        self.get(key)
    }

    /// True when the key is present (and marks it known).
    pub(crate) fn has(&self, key: &'static str) -> bool {
        self.get(key).is_some()
    }

    /// A sub-table, or `None` (with a problem when present but not a table).
    pub(crate) fn table(&self, key: &'static str) -> Option<Section<'a>> {
        match self.get(key)? {
            toml::Value::Table(t) => Some(Section {
                file: self.file,
                prefix: self.path(key),
                table: t,
                problems: self.problems,
                known: RefCell::new(BTreeSet::new()),
            }),
            other => {
                self.error(key, format!("expected a table, found {}", other.type_str()));
                None
            }
        }
    }

    /// The entries of a table whose keys are names chosen by the operator (e.g. `[providers.*]`).
    pub(crate) fn named_tables(&self, key: &'static str) -> Vec<(String, Section<'a>)> {
        let Some(section) = self.table(key) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (name, value) in section.table {
            match value {
                toml::Value::Table(t) => out.push((
                    name.clone(),
                    Section {
                        file: self.file,
                        prefix: section.path(name),
                        table: t,
                        problems: self.problems,
                        known: RefCell::new(BTreeSet::new()),
                    },
                )),
                other => section.error(
                    name,
                    format!("expected a table, found {}", other.type_str()),
                ),
            }
        }
        out
    }

    /// A string value.
    pub(crate) fn string(&self, key: &'static str) -> Option<String> {
        match self.get(key)? {
            toml::Value::String(s) => Some(s.clone()),
            other => {
                self.error(
                    key,
                    format!("expected a string, found {}", other.type_str()),
                );
                None
            }
        }
    }

    /// A boolean value.
    pub(crate) fn boolean(&self, key: &'static str) -> Option<bool> {
        match self.get(key)? {
            toml::Value::Boolean(b) => Some(*b),
            other => {
                self.error(
                    key,
                    format!("expected true or false, found {}", other.type_str()),
                );
                None
            }
        }
    }

    /// A required string value.
    pub(crate) fn required_string(&self, key: &'static str, example: &str) -> Option<String> {
        if !self.has(key) {
            self.error(key, format!("missing; for example `{key} = {example}`"));
            return None;
        }
        self.string(key)
    }

    /// An array of strings.
    pub(crate) fn strings(&self, key: &'static str) -> Option<Vec<String>> {
        match self.get(key)? {
            toml::Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    match item {
                        toml::Value::String(s) => out.push(s.clone()),
                        other => self.error(
                            &format!("{key}[{i}]"),
                            format!("expected a string, found {}", other.type_str()),
                        ),
                    }
                }
                Some(out)
            }
            other => {
                self.error(
                    key,
                    format!("expected an array of strings, found {}", other.type_str()),
                );
                None
            }
        }
    }

    /// An integer within `min..=max`.
    pub(crate) fn integer(&self, key: &'static str, min: i64, max: i64) -> Option<i64> {
        match self.get(key)? {
            toml::Value::Integer(n) if (min..=max).contains(n) => Some(*n),
            toml::Value::Integer(n) => {
                self.error(
                    key,
                    format!("{n} is out of range; expected an integer from {min} to {max}"),
                );
                None
            }
            other => {
                self.error(
                    key,
                    format!(
                        "expected an integer from {min} to {max}, found {}",
                        other.type_str()
                    ),
                );
                None
            }
        }
    }

    /// A fraction in `[0, 1]`, written as a number (`0.2`) or a percentage string (`"20%"`),
    /// for a key whose 0 turns something off.
    pub(crate) fn fraction_or_zero(&self, key: &'static str) -> Option<f64> {
        self.fraction_where(
            key,
            |f| (0.0..=1.0).contains(&f),
            "expected a fraction from 0 to 1, e.g. 0.2 or \"20%\" (0 turns it off)",
        )
    }

    /// A fraction in `(0, 1]`, written as a number (`0.5`) or a percentage string (`"50%"`).
    pub(crate) fn fraction(&self, key: &'static str) -> Option<f64> {
        self.fraction_where(
            key,
            |f| f > 0.0 && f <= 1.0,
            "expected a fraction greater than 0 and at most 1, e.g. 0.5 or \"50%\"",
        )
    }

    /// A number (`0.5`) or a percentage string (`"50%"`) for which `fits` holds, else the error
    /// `expected` on `key`.
    fn fraction_where(
        &self,
        key: &'static str,
        fits: impl Fn(f64) -> bool,
        expected: &str,
    ) -> Option<f64> {
        let value = match self.get(key)? {
            toml::Value::Float(f) => Some(*f),
            toml::Value::Integer(n) => Some(*n as f64),
            toml::Value::String(s) => parse_percent(s),
            _ => None,
        };
        match value {
            Some(f) if fits(f) => Some(f),
            _ => {
                self.error(key, expected);
                None
            }
        }
    }

    /// A duration written as a string such as `"250ms"`, `"30s"`, `"5m"` or `"24h"`.
    pub(crate) fn duration(&self, key: &'static str) -> Option<Duration> {
        let raw = self.get(key)?;
        let toml::Value::String(s) = raw else {
            self.error(
                key,
                format!(
                    "expected a duration string such as \"250ms\", \"30s\" or \"5m\", found {}",
                    raw.type_str()
                ),
            );
            return None;
        };
        match parse_duration(s) {
            Ok(d) => Some(d),
            Err(msg) => {
                self.error(key, msg);
                None
            }
        }
    }

    /// Reports every key of this table that no reader asked for, naming the valid ones.
    /// The tables of an array of tables (`[[clients]]`), each with its index in its path.
    pub(crate) fn tables(&self, key: &'static str) -> Vec<Section<'a>> {
        let Some(value) = self.get(key) else {
            return Vec::new();
        };
        let toml::Value::Array(items) = value else {
            self.error(
                key,
                format!(
                    "expected an array of tables ([[{key}]]), found {}",
                    value.type_str()
                ),
            );
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match item {
                toml::Value::Table(t) => out.push(Section {
                    file: self.file,
                    prefix: self.path(&format!("{key}[{i}]")),
                    table: t,
                    problems: self.problems,
                    known: RefCell::new(BTreeSet::new()),
                }),
                other => self.error(
                    &format!("{key}[{i}]"),
                    format!("expected a table, found {}", other.type_str()),
                ),
            }
        }
        out
    }

    pub(crate) fn finish(&self) {
        let known = self.known.borrow();
        for key in self.table.keys() {
            if !known.contains(key.as_str()) {
                let valid: Vec<&str> = known.iter().copied().collect();
                self.error(
                    key,
                    format!("unknown key; valid keys here: {}", valid.join(", ")),
                );
            }
        }
    }
}

/// Whether `s` can be an environment variable's name (what `*_env` keys hold).
pub(crate) fn is_env_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// Whether the value of a `*_env` key looks like it may be a secret written in place of a
/// variable's name: a run of at least eight characters without spaces that mixes letters and
/// digits the way keys and tokens do, or any run of 24 or more (`Bearer ` or `Basic ` before it
/// aside).
pub(crate) fn looks_like_secret(v: &str) -> bool {
    let v = v.trim();
    let v = ["Bearer ", "bearer ", "Basic ", "basic "]
        .iter()
        .find_map(|p| v.strip_prefix(p))
        .unwrap_or(v)
        .trim();
    if v.chars().count() < 8 || v.contains(char::is_whitespace) {
        return false;
    }
    let letters = v.chars().any(|c| c.is_alphabetic());
    let digits = v.chars().any(|c| c.is_ascii_digit());
    (letters && digits) || v.chars().count() >= 24
}

/// The problem text for `key`, a `*_env` key whose value is not a variable's name.
///
/// The value is never repeated: what is written there by mistake is most often the secret
/// itself, and this text is printed by `faregate check`, at start-up and in reload answers.
/// It says what the key takes, whether the value looks like a secret, and what to write
/// instead (`example`, a variable's name).
pub(crate) fn env_name_message(key: &str, value: &str, example: &str) -> String {
    let what = if value.trim().is_empty() {
        "is empty, and is not an environment variable name".to_string()
    } else if looks_like_secret(value) {
        "holds a value that is not an environment variable name and looks like it may be a secret itself (it is not repeated here); if it is one, take it out of the file and consider rotating it, since the file may have been shared or committed".to_string()
    } else {
        "holds a value that is not an environment variable name (it is not repeated here, since it may be a secret)".to_string()
    };
    format!(
        "{what}. This key names the variable that holds the secret, never the secret itself: a name is upper-case letters, digits and '_' and does not start with a digit; write e.g. `{key} = \"{example}\"` and put the secret in that variable"
    )
}

/// The variable name a provider's `key` (`client_secret_env`, …) could take as an example:
/// the provider's name and the key's, upper-cased (`flights` and `client_secret_env` give
/// `FLIGHTS_CLIENT_SECRET`); `fallback` when that is not a variable's name.
pub(crate) fn provider_env_example(provider: &str, key: &str, fallback: &str) -> String {
    let stem = key.strip_suffix("_env").unwrap_or(key);
    let name: String = format!("{provider}_{stem}")
        .chars()
        .map(|c| match c {
            '-' | '.' | ' ' => '_',
            c => c.to_ascii_uppercase(),
        })
        .collect();
    if is_env_name(&name) {
        name
    } else {
        fallback.to_string()
    }
}

/// Parses `"250ms"`, `"30s"`, `"5m"`, `"24h"` (and combinations humantime accepts).
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let trimmed = s.trim();
    if trimmed == "0" {
        return Ok(Duration::ZERO);
    }
    humantime::parse_duration(trimmed).map_err(|e| {
        format!("\"{s}\" is not a duration ({e}); write e.g. \"250ms\", \"30s\", \"5m\" or \"24h\"")
    })
}

/// Parses `"10%"` into `0.1`.
pub(crate) fn parse_percent(s: &str) -> Option<f64> {
    let n: f64 = s.trim().strip_suffix('%')?.trim().parse().ok()?;
    Some(n / 100.0)
}

/// An `http` or `https` URL with a host (a provider's base, a callback allowlist entry); `Err`
/// says what to write instead.
pub(super) fn parse_http_url(s: &str) -> Result<Url, String> {
    match Url::parse(s) {
        Ok(u) if (u.scheme() == "http" || u.scheme() == "https") && u.host().is_some() => Ok(u),
        Ok(_) => Err(format!(
            "\"{s}\" must be an http or https URL with a host, e.g. \"https://api.duffel.com\""
        )),
        Err(e) => Err(format!(
            "\"{s}\" is not a URL ({e}); write e.g. \"https://api.duffel.com\""
        )),
    }
}

/// A provider's URL (`base_url`, `token_url`): an http or https URL with a host, and without
/// credentials in it. A user name, a password or a query string in the URL would be a
/// credential's value in the configuration, which names variables only, and it would be
/// printed wherever the URL is (warnings, `faregate check`, logs); so such a URL is refused,
/// and the message never repeats it.
pub(super) fn parse_provider_url(s: &str) -> Result<Url, String> {
    const INSTEAD: &str = "put the credential in an environment variable and name it with the provider's auth (auth = \"api_key\" with header and key_env for a key, \"bearer\" with token_env, \"basic\" with username_env and password_env, \"oauth2\" with client_id_env and client_secret_env), and write the URL without it";
    let holds_credential =
        |u: &Url| !u.username().is_empty() || u.password().is_some() || u.query().is_some();
    match Url::parse(s) {
        Ok(u) if holds_credential(&u) => Err(format!(
            "must not carry a user name, a password or a query string (it is not repeated here, since it may hold a credential): {INSTEAD}"
        )),
        // Unparsed, it is not repeated either when it looks like it holds one.
        Err(e) if s.contains(['@', '?']) => Err(format!(
            "is not a URL ({e}), and must not carry a user name, a password or a query string in any case: {INSTEAD}"
        )),
        _ => parse_http_url(s),
    }
}
