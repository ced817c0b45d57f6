//! A ledger entry, its states, and the digest that tells one booking's arguments from another's.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::fingerprint::canonical_json;

/// Where a booking stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Written before the provider was asked; no outcome yet.
    Pending,
    /// The provider booked it: the entry names the order.
    Booked,
    /// Nothing was booked (refused, not created, or never sent).
    Failed,
    /// The order request may have reached the provider and nothing said what became of it;
    /// reconciliation asks the provider.
    Unknown,
}

impl State {
    /// The stored and shown name.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::Booked => "booked",
            State::Failed => "failed",
            State::Unknown => "unknown",
        }
    }

    /// The state a stored name stands for (an unknown name, which only a newer gateway could
    /// have written, is read as unknown: the safe reading).
    pub fn parse(name: &str) -> State {
        match name {
            "pending" => State::Pending,
            "booked" => State::Booked,
            "failed" => State::Failed,
            _ => State::Unknown,
        }
    }
}

/// One booking as recorded. Ids and amounts only: no passenger data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The client that booked.
    pub client: String,
    /// The client's idempotency key.
    pub idempotency_key: String,
    /// The tool (`book_flight`, …).
    pub tool: String,
    /// [`arguments_digest`] of the booking's tool and arguments.
    pub digest: String,
    /// Where it stands (a `pending` entry past the settle time is shown as `unknown`).
    pub state: State,
    /// The provider asked, once one was.
    pub provider: Option<String>,
    /// The provider's order id, when booked.
    pub order_id: Option<String>,
    /// The booking reference to give the traveller, when booked.
    pub booking_reference: Option<String>,
    /// The amount charged (a decimal string), when booked.
    pub amount: Option<String>,
    /// Its ISO 4217 currency.
    pub currency: Option<String>,
    /// Why nothing was booked, or why the outcome is unknown (an error kind, never data).
    pub reason: Option<String>,
    /// When the entry was written, epoch milliseconds.
    pub created_at_ms: i64,
    /// When it last changed.
    pub updated_at_ms: i64,
}

/// What [`super::Ledger::begin`] writes.
#[derive(Debug, Clone)]
pub struct NewEntry<'a> {
    /// The client.
    pub client: &'a str,
    /// Its idempotency key.
    pub idempotency_key: &'a str,
    /// The tool.
    pub tool: &'a str,
    /// [`arguments_digest`] of the tool and arguments.
    pub digest: &'a str,
}

/// What came of a booking, written by [`super::Ledger::finish`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Booked.
    Booked {
        /// The provider that booked.
        provider: String,
        /// Its order id.
        order_id: String,
        /// The booking reference.
        booking_reference: String,
        /// The amount charged.
        amount: String,
        /// Its currency.
        currency: String,
    },
    /// Nothing was booked.
    Failed {
        /// The provider asked, if one was.
        provider: Option<String>,
        /// Why (an error kind).
        reason: String,
    },
    /// The outcome is not known.
    Unknown {
        /// The provider the order request went to.
        provider: String,
        /// Why (an error kind).
        reason: String,
    },
}

/// What [`super::Ledger::begin`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begin {
    /// A new `pending` entry (or a `failed` one made `pending` again): go ahead and book.
    Go,
    /// The key was used before for this booking: answer with this entry, book nothing.
    Recorded(Entry),
    /// The key was used before for other arguments (or another tool): refuse.
    Conflict(Entry),
}

/// The digest of a booking: unkeyed SHA-256 of the tool name, a newline, and the arguments as
/// canonical JSON (keys sorted), in lowercase hex. Unkeyed on purpose: it only has to tell two
/// bookings under one key apart, the ledger is not readable by clients, and a keyed digest
/// would break every entry when its key changed.
pub fn arguments_digest(tool: &str, arguments: &Value) -> String {
    let mut hasher = Sha256::new();
    hasher.update(tool.as_bytes());
    hasher.update(b"\n");
    hasher.update(canonical_json(arguments).as_bytes());
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
