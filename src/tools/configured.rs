//! Tools from configuration in the catalog's terms: a `tools/*.toml` file of kind `http` gives a
//! tool its name, title, access and JSON Schemas, and this module makes a [`ToolSpec`] of them,
//! so the call path, the manifests and every protocol treat it as they treat a catalog tool.
//!
//! Its arguments are checked by its input schema alone (there is no Rust type behind them) and
//! handed over as they came, in a [`Call`]; its provider answers with an [`Output`], the kept
//! result and the `content` text. How the request and the result are made is the adapter's
//! business (`http_tool`), not the catalog's.
//!
//! Every part of the gateway holds catalog entries as `&'static ToolSpec`. A configured tool's
//! entry is made once per distinct definition and lives as long as the process, like the
//! catalog's: a reload that reads the same file again gets the same entry back, so reloading
//! never grows memory unless the definitions themselves change.

use std::sync::Mutex;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{Access, CallMode, FieldError, Parse, Schema, ToolRequest, ToolSpec};

/// What a tool file says about the tool itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    /// The tool's name.
    pub name: String,
    /// A short human title.
    pub title: String,
    /// Read or write.
    pub access: Access,
    /// The mode it is built for.
    pub built_for: CallMode,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
    /// The JSON Schema of its result.
    pub output_schema: Value,
}

/// A checked call of a tool from configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The tool's name.
    pub tool: &'static str,
    /// The arguments, valid for the tool's input schema.
    pub arguments: Value,
    /// A write's idempotency key (required for one), as the client gave it (or its protocol
    /// derived it). It is the client's own: two clients may use the same key.
    pub idempotency_key: Option<String>,
    /// The client the call is made for ([`ToolRequest::made_for`]), which the key sent to the
    /// provider is scoped to ([`Call::sent_key`]).
    pub client: Option<String>,
}

impl Call {
    /// The idempotency key sent to the provider, which deduplicates by it: `fg-` and the
    /// SHA-256 (hex) of the client's name and the call's key, so the same key from the same
    /// client is always the same value (across restarts and replicas), and the same key from
    /// two clients never is. A provider serves every client of the gateway under one account,
    /// so the client's own key sent as given would let one client's write be deduplicated into
    /// another's (and answered with its result).
    pub fn sent_key(&self) -> Option<String> {
        let key = self.idempotency_key.as_deref()?;
        let client = self.client.as_deref().unwrap_or_default();
        let digest = Sha256::new()
            .chain_update(client.as_bytes())
            .chain_update([0u8])
            .chain_update(key.as_bytes())
            .finalize();
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        Some(format!("fg-{hex}"))
    }
}

/// A provider's answer to a tool from configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// The kept result (the call's `data`).
    pub data: Value,
    /// The text a model reads.
    pub content: String,
}

/// The entries made so far, each once. A `std` mutex: held for a comparison of a few
/// definitions when a configuration is loaded, never on a call.
static MADE: Mutex<Vec<(Definition, &'static ToolSpec)>> = Mutex::new(Vec::new());

/// The catalog entry of `definition`: the one made before for an equal definition, or a new one.
pub fn spec(definition: &Definition) -> &'static ToolSpec {
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, spec)) = made.iter().find(|(d, _)| d == definition) {
        return spec;
    }
    let write = definition.access == Access::Write;
    let spec: &'static ToolSpec = Box::leak(Box::new(ToolSpec {
        name: Box::leak(definition.name.clone().into_boxed_str()),
        title: Box::leak(definition.title.clone().into_boxed_str()),
        access: definition.access,
        // A read may be repeated; a write is repeated only by its idempotency key.
        idempotent: !write,
        built_for: definition.built_for,
        needs_idempotency_key: write,
        // The gateway cannot tell what the provider's answers are: its stale text claims no
        // prices or availability (see `ToolSpec::priced`).
        priced: false,
        input_schema: Schema::Given(definition.input_schema.clone()),
        output_schema: Schema::Given(definition.output_schema.clone()),
        parse: Parse::Configured,
    }));
    made.push((definition.clone(), spec));
    spec
}

/// Schema-valid arguments as a [`Call`], with the idempotency key a write needs.
pub(super) fn parse(
    spec: &ToolSpec,
    arguments: Value,
    idempotency_key: Option<&str>,
) -> Result<ToolRequest, Vec<FieldError>> {
    let idempotency_key = if spec.needs_idempotency_key {
        Some(super::idempotency_key(spec.name, idempotency_key).map_err(|e| vec![e])?)
    } else {
        None
    };
    Ok(ToolRequest::Configured(Call {
        tool: spec.name,
        arguments,
        idempotency_key,
        client: None,
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn book_lounge() -> &'static ToolSpec {
        spec(&Definition {
            name: "book_lounge".into(),
            title: "Book a lounge".into(),
            access: Access::Write,
            built_for: CallMode::Interactive,
            input_schema: json!({"type": "object"}),
            output_schema: json!({"type": "object"}),
        })
    }

    /// The key sent upstream for `client`'s call with `key`.
    fn sent(client: &str, key: &str) -> Option<String> {
        let today = chrono::NaiveDate::from_ymd_opt(2026, 1, 1).unwrap_or_default();
        let args = json!({"member_id": "M1", "airport": "LHR"});
        let mut request = book_lounge()
            .parse(args, today, Some(key))
            .unwrap_or_else(|e| panic!("{e:?}"));
        request.made_for(client);
        match request {
            ToolRequest::Configured(call) => call.sent_key(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_key_a_write_sends_upstream_is_each_clients_own() {
        let alpha = sent("k-alpha", "1");
        assert_ne!(alpha, sent("k-beta", "1"), "the same key from two clients");
        assert_eq!(alpha, sent("k-alpha", "1"), "the same client repeating it");
        assert_ne!(alpha, sent("k-alpha", "2"));
        let alpha = alpha.unwrap_or_default();
        assert!(alpha.starts_with("fg-") && alpha.len() == 3 + 64, "{alpha}");
        // Stable across restarts and replicas: SHA-256 of "k-alpha", a NUL and "1", as
        // `printf 'k-alpha\0001' | sha256sum` computes it.
        assert_eq!(
            alpha,
            "fg-e48a147dea21595541810bc135da8c442464d2e6bebd61becea46e3cb3cc92ed"
        );
    }
}
