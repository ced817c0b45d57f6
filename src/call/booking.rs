//! Write calls through the booking ledger: written before the provider is asked, answered from
//! the ledger when the key was used before, finished with what came of it, and reconciled with
//! the provider when that is unknown.
//!
//! The gateway calls these around the pipeline for every write tool, interactive or background,
//! so every protocol and the job system share them. What a model reads comes from
//! `texts::call`; what the ledger keeps is ids and amounts only.

use serde_json::json;

use super::envelope::{CallInfo, Data, Envelope};
use super::observe::Observer;
use super::outcome::{Failure, Success};
use super::served::ServedTool;
use crate::ledger::{Begin, Entry, Ledger, NewEntry, Outcome, State};
use crate::store::StoreError;
use crate::texts::call as texts;
use crate::tools::ToolOutput;
use crate::tools::spend::{Amount, Budget, SpendLimit};

/// One UTC day, in milliseconds.
const DAY_MS: i64 = 86_400_000;

/// What `budget` leaves for `client` today (UTC), counted from its confirmed bookings in the
/// ledger; `Err` with the text to answer when nothing is left. Bookings confirmed in another
/// currency (made before the budget was set) are not counted: they could not be compared.
/// Two bookings of one client racing may each see the same remainder; the budget bounds what
/// one booking may cost, and the next booking sees both.
pub(super) async fn spend_limit(
    ledger: &Ledger,
    client: &str,
    budget: &Budget,
) -> Result<Result<SpendLimit, String>, StoreError> {
    let now = crate::clock::epoch_ms();
    let day_start = now - now.rem_euclid(DAY_MS);
    let entries = ledger
        .booked_between(client, day_start, day_start + DAY_MS)
        .await?;
    let mut spent = Amount::default();
    for entry in entries {
        if entry.currency.as_deref() != Some(budget.currency.as_str()) {
            continue;
        }
        let amount = entry.amount.as_deref().and_then(Amount::parse);
        spent = amount
            .and_then(|a| spent.checked_add(a))
            .unwrap_or(budget.per_day);
    }
    let remaining = budget.per_day.saturating_sub(spent);
    if remaining == Amount::default() {
        return Ok(Err(crate::texts::budget::budget_spent(
            &budget.per_day.to_string(),
            &budget.currency,
        )));
    }
    Ok(Ok(SpendLimit {
        remaining,
        currency: budget.currency.clone(),
        budget: budget.per_day,
    }))
}

/// How many unresolved bookings one reconciliation round looks up.
const RECONCILE_BATCH: u32 = 20;

/// Who is booking what, under which key: the ledger's coordinates of one write call.
#[derive(Debug, Clone)]
pub(super) struct Write {
    /// The client.
    pub(super) client: String,
    /// The tool.
    pub(super) tool: &'static str,
    /// The idempotency key.
    pub(super) key: String,
    /// The digest of the tool and arguments.
    pub(super) digest: String,
}

/// Writes the entry, or learns what the key already stands for. A ledger that cannot be
/// written refuses the booking: nothing is sent to the provider.
pub(super) async fn begin(ledger: &Ledger, write: &Write) -> Result<Begin, StoreError> {
    let entry = NewEntry {
        client: &write.client,
        idempotency_key: &write.key,
        tool: write.tool,
        digest: &write.digest,
    };
    ledger.begin(&entry, crate::clock::epoch_ms()).await
}

/// What a write call's attempt came to, for the ledger. A provider's "already booked" answer
/// is unknown: only the provider can say whether the booking it found is this key's, and
/// reconciliation asks it.
pub(super) fn outcome_of(ran: &Result<Success, Failure>) -> Outcome {
    match ran {
        Ok(success) => match &success.output {
            ToolOutput::BookFlight(o) => Outcome::Booked {
                provider: success.provider.clone(),
                order_id: o.order_id.clone(),
                booking_reference: o.booking_reference.clone(),
                amount: o.total_amount.clone(),
                currency: o.total_currency.clone(),
            },
            // Only booking tools are writes; a read cannot get here.
            _ => Outcome::Unknown {
                provider: success.provider.clone(),
                reason: "a write answered with something that is not a booking".into(),
            },
        },
        Err(Failure::Upstream { provider, error })
            if error.write_may_have_happened() || error.is_already_done() =>
        {
            Outcome::Unknown {
                provider: provider.clone(),
                reason: error.kind.as_str().into(),
            }
        }
        Err(failure) => Outcome::Failed {
            provider: failure.provider().map(str::to_string),
            reason: failure.error_type().into(),
        },
    }
}

/// The audit and metric label of an outcome.
fn label(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Booked { .. } => "booked",
        Outcome::Failed { .. } => "failed",
        Outcome::Unknown { .. } => "unknown",
    }
}

fn order_id(outcome: &Outcome) -> Option<&str> {
    match outcome {
        Outcome::Booked { order_id, .. } => Some(order_id),
        _ => None,
    }
}

/// Records what came of the attempt and writes the audit line. A ledger that cannot be written
/// now leaves the entry `pending`: it settles to unknown and reconciliation learns the outcome.
pub(super) async fn finish(ledger: &Ledger, observer: &Observer, write: &Write, outcome: &Outcome) {
    let now = crate::clock::epoch_ms();
    if let Err(e) = ledger.finish(&write.client, &write.key, outcome, now).await {
        tracing::warn!(tool = write.tool, error = %e, "could not record a booking's outcome; it will be reconciled");
    }
    observer.booking(
        &write.client,
        write.tool,
        &write.key,
        label(outcome),
        order_id(outcome),
    );
}

/// The answer when the ledger decided before any provider was asked: the recorded outcome, a
/// conflict, or a ledger that cannot be written. Also written to the audit log.
pub(super) fn answered(
    observer: &Observer,
    write: &Write,
    info: CallInfo,
    begun: &Result<Begin, StoreError>,
) -> Option<Envelope> {
    let (label, envelope) = match begun {
        Ok(Begin::Go) => return None,
        Ok(Begin::Recorded(entry)) => ("replayed", replay(info, entry)),
        Ok(Begin::Conflict(_)) => (
            "conflict",
            Envelope::invalid_arguments(info, texts::key_reused(write.tool)),
        ),
        Err(e) => {
            tracing::warn!(tool = write.tool, error = %e, "booking refused: the ledger could not be written");
            (
                "refused",
                Envelope::unavailable(info, texts::ledger_unwritable(write.tool), None, None),
            )
        }
    };
    observer.booking(&write.client, write.tool, &write.key, label, None);
    Some(envelope)
}

/// A recorded entry as an answer: a booking made earlier, or one whose outcome is still being
/// learned (a `failed` entry is never recorded for the same arguments: it is tried again).
fn replay(info: CallInfo, entry: &Entry) -> Envelope {
    match (
        entry.state,
        &entry.order_id,
        &entry.booking_reference,
        &entry.amount,
        &entry.currency,
    ) {
        (State::Booked, Some(order), Some(reference), Some(amount), Some(currency)) => {
            let content = texts::booked_earlier(&entry.tool, reference, order, amount, currency);
            // The shape of the tool's result; the travellers are not kept in the ledger.
            let data = json!({
                "booking_reference": reference,
                "order_id": order,
                "total_amount": amount,
                "total_currency": currency,
                "travellers": [],
                "idempotency_key": entry.idempotency_key,
            });
            let provider = entry.provider.clone().unwrap_or_default();
            Envelope::ok(info, content, Data::new(data), provider)
        }
        _ => Envelope::unavailable(
            info,
            texts::booking_unresolved(&entry.tool),
            Some(60),
            entry.provider.clone(),
        ),
    }
}

/// One round of reconciliation: looks up at its provider each booking whose outcome is
/// unknown, and records what the provider holds. A booking the provider holds is booked at
/// once; one it does not hold is not booked once the entry is older than the settle time (an
/// order request may still be on its way before that). Lookups are not tool calls: they go
/// one at a time, bounded by the tool's timeout, and only while the tool's breakers admit
/// calls. Returns how many entries it settled.
pub(super) async fn reconcile(
    ledger: &Ledger,
    observer: &Observer,
    tools: &[std::sync::Arc<ServedTool>],
) -> usize {
    let now = crate::clock::epoch_ms();
    let entries = match ledger.unresolved(now, RECONCILE_BATCH).await {
        Ok(entries) => entries,
        Err(e) => {
            tracing::warn!(error = %e, "reconciliation could not read the ledger");
            return 0;
        }
    };
    let settle_ms = i64::try_from(ledger.settle().as_millis()).unwrap_or(i64::MAX);
    let mut settled = 0;
    for entry in entries {
        let Some(tool) = tools.iter().find(|t| t.spec.name == entry.tool) else {
            continue;
        };
        if !tool.is_available(tokio::time::Instant::now()) {
            continue;
        }
        let Some(route) = tool.route(entry.provider.as_deref()) else {
            continue;
        };
        let lookup = route
            .upstream
            .find_booking(&entry.tool, &entry.idempotency_key);
        let found = match tokio::time::timeout(tool.config.timeout, lookup).await {
            Ok(Ok(found)) => found,
            Ok(Err(e)) => {
                tracing::debug!(tool = %entry.tool, provider = %route.name, error = %e, "booking lookup failed; will try again");
                continue;
            }
            Err(_) => continue,
        };
        let outcome = match found {
            Some(found) => Outcome::Booked {
                provider: route.name.clone(),
                order_id: found.order_id,
                booking_reference: found.booking_reference,
                amount: found.amount,
                currency: found.currency,
            },
            None if now.saturating_sub(entry.updated_at_ms) >= settle_ms => Outcome::Failed {
                provider: Some(route.name.clone()),
                reason: "reconciled: the provider holds no order under this key".into(),
            },
            None => continue,
        };
        let now = crate::clock::epoch_ms();
        match ledger
            .finish(&entry.client, &entry.idempotency_key, &outcome, now)
            .await
        {
            Ok(true) => {
                let label = match outcome {
                    Outcome::Booked { .. } => "reconciled_booked",
                    _ => "reconciled_failed",
                };
                observer.booking(
                    &entry.client,
                    &entry.tool,
                    &entry.idempotency_key,
                    label,
                    order_id(&outcome),
                );
                settled += 1;
            }
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "reconciliation could not record an outcome"),
        }
    }
    settled
}
