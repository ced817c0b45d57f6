//! Write calls through the booking ledger: written before the provider is asked, answered from
//! the ledger when the key was used before, finished with what came of it, and reconciled with
//! the provider when that is unknown.
//!
//! The gateway calls these around the pipeline for every write tool, interactive or background,
//! so every protocol and the job system share them. What a model reads comes from
//! `texts::ledger`; what the ledger keeps is ids and amounts only.

use std::time::Duration;

use futures::future::BoxFuture;

use super::envelope::{CallInfo, Data, Envelope};
use super::observe::Observer;
use super::outcome::{Failure, Success};
use super::served::ServedTool;
use crate::breaker::BreakerState;
use crate::ledger::{Begin, Entry, Hold, Ledger, NewEntry, Outcome, State};
use crate::store::{StoreError, within};
use crate::texts::ledger as texts;
use crate::tools::Booked;
use crate::tools::spend::{Amount, Budget, Reservation, Reserve, SpendLimit};

/// A log line about one write call, naming it as every such line does: its tool, its call id,
/// its client (never a key) and its idempotency key, then the line's own fields and message.
macro_rules! write_event {
    ($level:ident, $write:expr, $($rest:tt)+) => {
        tracing::$level!(
            tool = $write.tool,
            call_id = $write.call_id.as_str(),
            client = $write.client.as_str(),
            idempotency_key = $write.key.as_str(),
            $($rest)+
        )
    };
}
pub(super) use write_event;

/// One UTC day, in milliseconds.
const DAY_MS: i64 = 86_400_000;

/// What `budget` leaves for `write`'s client today (UTC), and the hold that reserves a price
/// from it once the adapter knows one; `Err` with the text to answer when nothing is left.
/// Counted from what the client's other bookings hold in the budget's currency (pending,
/// booked, unknown); bookings in another currency (made before the budget was set) could not
/// be compared and are not counted. Two bookings racing may both see the same remainder here:
/// the hold, one step in the ledger per client, decides which fits.
pub(super) async fn spend_limit(
    ledger: &Ledger,
    write: &Write,
    budget: &Budget,
) -> Result<Result<SpendLimit, String>, StoreError> {
    let now = crate::clock::epoch_ms();
    let day_start = now - now.rem_euclid(DAY_MS);
    let window = (day_start, day_start + DAY_MS);
    let held = within(
        LEDGER_WAIT,
        ledger.held(&write.client, &budget.currency, window, &write.key),
    )
    .await?;
    let remaining = budget.per_day.saturating_sub(Amount::from_units(held));
    if remaining == Amount::default() {
        return Ok(Err(crate::texts::budget::budget_spent(
            &budget.per_day.to_string(),
            &budget.currency,
        )));
    }
    let hold = BudgetHold {
        ledger: ledger.clone(),
        write: write.clone(),
        budget: budget.clone(),
        window,
    };
    Ok(Ok(SpendLimit {
        remaining,
        currency: budget.currency.clone(),
        budget: budget.per_day,
        reserve: Reservation(std::sync::Arc::new(hold)),
    }))
}

/// Reserves a booking's price on its ledger entry, within its client's daily budget.
#[derive(Debug)]
struct BudgetHold {
    ledger: Ledger,
    write: Write,
    budget: Budget,
    /// The UTC day the booking counts on.
    window: (i64, i64),
}

impl Reserve for BudgetHold {
    fn reserve(&self, amount: Amount) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let (write, budget) = (&self.write, &self.budget);
            let text = amount.to_string();
            let hold = Hold {
                amount: &text,
                units: amount.units(),
                currency: &budget.currency,
                budget_units: budget.per_day.units(),
                window: self.window,
            };
            let now = crate::clock::epoch_ms();
            let reserved = self.ledger.reserve(&write.client, &write.key, &hold, now);
            match within(LEDGER_WAIT, reserved).await {
                Ok(true) => Ok(()),
                Ok(false) => {
                    let held =
                        self.ledger
                            .held(&write.client, &budget.currency, self.window, &write.key);
                    let held = within(LEDGER_WAIT, held)
                        .await
                        .unwrap_or(budget.per_day.units());
                    let remaining = budget.per_day.saturating_sub(Amount::from_units(held));
                    Err(crate::texts::budget::over_budget(
                        &text,
                        &budget.currency,
                        &remaining.to_string(),
                        &budget.per_day.to_string(),
                    ))
                }
                Err(e) => {
                    write_event!(
                        warn,
                        write,
                        error = %e,
                        "booking refused: its budget hold could not be written"
                    );
                    Err(texts::ledger_unwritable(write.tool))
                }
            }
        })
    }
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
    /// The travellers' or guests' names its arguments give (`tools::booked_names`), for an
    /// answer from the ledger, which keeps none.
    pub(super) names: Vec<String>,
    /// The call's id, for log lines (the ledger does not keep it).
    pub(super) call_id: String,
}

/// How long a booking waits for the ledger before any provider is asked (its entry, its
/// budget's reads and hold): a store that has not answered by then refuses the booking unsent,
/// instead of holding the agent for the pool's 10 s connection wait, or for as long as a lock
/// on the table lasts.
const LEDGER_WAIT: Duration = Duration::from_secs(2);

/// Writes the entry, or learns what the key already stands for. A ledger that cannot be
/// written within [`LEDGER_WAIT`] refuses the booking: nothing is sent to the provider.
///
/// The write runs on a task of its own, so a store that answers after the wait cannot leave a
/// `pending` entry with no request behind it (which the same key would answer "not known yet"
/// until reconciliation): the task goes on, and an entry it wrote late is marked failed, as
/// nothing was sent ([`unsent`]).
pub(super) async fn begin(ledger: &Ledger, write: &Write) -> Result<Begin, StoreError> {
    let (kept, entry_of) = (ledger.clone(), write.clone());
    let mut writing = tokio::spawn(async move {
        let entry = NewEntry {
            client: &entry_of.client,
            idempotency_key: &entry_of.key,
            tool: entry_of.tool,
            digest: &entry_of.digest,
        };
        kept.begin(&entry, crate::clock::epoch_ms()).await
    });
    match tokio::time::timeout(LEDGER_WAIT, &mut writing).await {
        Ok(written) => written.unwrap_or_else(|e| Err(StoreError(format!("{e}")))),
        Err(_) => {
            tokio::spawn(unsent(writing, ledger.clone(), write.clone()));
            Err(StoreError(format!("no answer within {LEDGER_WAIT:?}")))
        }
    }
}

/// Waits for a ledger entry that was not written within [`LEDGER_WAIT`], and marks it failed
/// if it was written after all: its booking was refused, and nothing was sent.
async fn unsent(
    writing: tokio::task::JoinHandle<Result<Begin, StoreError>>,
    ledger: Ledger,
    write: Write,
) {
    if let Ok(Ok(Begin::Go)) = writing.await {
        write_event!(
            info,
            write,
            "a refused booking's ledger entry was written late; marking it failed (nothing was sent)"
        );
        let outcome = Outcome::Failed {
            provider: None,
            reason: "not sent: the ledger answered too late".into(),
        };
        keep_writing(ledger, write, outcome).await;
    }
}

/// What a write call's attempt came to, for the ledger. A provider's "already booked" answer
/// is unknown: only the provider can say whether the booking it found is this key's, and
/// reconciliation asks it.
pub(super) fn outcome_of(ran: &Result<Success, Failure>) -> Outcome {
    match ran {
        Ok(success) => match success.output.booked() {
            Some(b) => Outcome::Booked {
                provider: success.provider.clone(),
                order_id: b.id.into(),
                booking_reference: b.reference.into(),
                amount: b.amount.into(),
                currency: b.currency.into(),
            },
            // Only booking tools are writes; a read cannot get here.
            None => Outcome::Unknown {
                provider: success.provider.clone(),
                reason: "a write answered with something that is not a booking".into(),
            },
        },
        Err(Failure::Upstream {
            provider, error, ..
        }) if error.write_may_have_happened() || error.is_already_done() => Outcome::Unknown {
            provider: provider.clone(),
            reason: error.kind.as_str().into(),
        },
        Err(failure) => Outcome::Failed {
            provider: failure.provider().map(str::to_string),
            reason: failure.error_type().into(),
        },
    }
}

/// The audit and metric label of an outcome.
/// How long a booking's outcome is given to be written before it is written again later.
const OUTCOME_WAIT: Duration = Duration::from_secs(2);
/// The first wait before writing an outcome again; it doubles …
const FIRST_AGAIN: Duration = Duration::from_millis(100);
/// … up to this, so the outcome lands within seconds of the store's return.
const MOST_AGAIN: Duration = Duration::from_secs(2);

/// Writes `outcome` of `write` until the store takes it, with a doubling wait. Writing it
/// again is safe: an entry reconciliation settled meanwhile keeps its final outcome (unless
/// this one is `booked`, which is then the truth), as for any late outcome.
async fn keep_writing(ledger: Ledger, write: Write, outcome: Outcome) {
    let mut wait = FIRST_AGAIN;
    for tries in 2u32.. {
        tokio::time::sleep(wait).await;
        let now = crate::clock::epoch_ms();
        let written = ledger.finish(&write.client, &write.key, &outcome, now);
        if within(OUTCOME_WAIT, written).await.is_ok() {
            write_event!(
                info,
                write,
                tries,
                outcome = label(&outcome),
                "a booking's outcome was recorded once the store answered again"
            );
            return;
        }
        wait = (wait * 2).min(MOST_AGAIN);
    }
}

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

/// Records what came of the attempt and writes the audit line.
///
/// A ledger that does not take the outcome within [`OUTCOME_WAIT`] (the store is away from
/// this replica) does not hold the caller: the outcome is kept and written again on a task of
/// its own until the store takes it ([`keep_writing`]). Until then the entry reads `pending`
/// on every replica (the same key answers "not known yet"), and once written the ledger
/// answers it as it happened. Dropping it instead would leave a confirmed order to
/// reconciliation, after the settle time, and only while the order is among the provider's
/// newest. Only a replica that stops before the store returns loses it to reconciliation.
pub(super) async fn finish(ledger: &Ledger, observer: &Observer, write: &Write, outcome: &Outcome) {
    let now = crate::clock::epoch_ms();
    let written = within(
        OUTCOME_WAIT,
        ledger.finish(&write.client, &write.key, outcome, now),
    );
    match written.await {
        Ok(true) => {}
        // Reconciliation settled the entry first (the provider's order was found, or the call
        // took longer than the settle time): the entry stands, unless this is the booking.
        Ok(false) => {
            write_event!(
                info,
                write,
                "a booking's outcome came after reconciliation had settled its entry; the entry stands"
            );
        }
        Err(e) => {
            write_event!(
                warn,
                write,
                error = %e,
                "could not record a booking's outcome; it is kept and written again until the store takes it"
            );
            tokio::spawn(keep_writing(ledger.clone(), write.clone(), outcome.clone()));
        }
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
    let (label, envelope, order_id) = match begun {
        Ok(Begin::Go) => return None,
        Ok(Begin::Recorded(entry)) => (
            "replayed",
            replay(info, entry, &write.names),
            entry.order_id.as_deref(),
        ),
        Ok(Begin::Conflict(earlier)) => (
            "conflict",
            Envelope::invalid_arguments(
                info,
                texts::key_reused(write.tool, &earlier.tool, earlier.state == State::Failed),
            ),
            None,
        ),
        Err(e) => {
            write_event!(
                warn,
                write,
                error = %e,
                "booking refused: the ledger could not be written"
            );
            (
                "refused",
                Envelope::unavailable(info, texts::ledger_unreachable(write.tool), None, None),
                None,
            )
        }
    };
    // A replay names the order it answers with, so the audit log ties it to the booking.
    observer.booking(&write.client, write.tool, &write.key, label, order_id);
    Some(envelope)
}

/// What the ledger holds for a key whose background job has ended, as the answer to that key
/// sent again: the booking, an outcome still being learned, or nothing booked. `None` when the
/// key has no entry (the job ended before the ledger was written: nothing was sent).
pub(super) fn on_record(info: CallInfo, entry: &Entry, names: &[String]) -> Envelope {
    if entry.state == State::Failed {
        return Envelope::unavailable(
            info,
            texts::booking_failed_earlier(&entry.tool),
            None,
            entry.provider.clone(),
        );
    }
    replay(info, entry, names)
}

/// A recorded entry as an answer: a booking made earlier, or one whose outcome is still being
/// learned (a `failed` entry is never recorded for the same arguments: it is tried again).
fn replay(info: CallInfo, entry: &Entry, names: &[String]) -> Envelope {
    match (
        entry.state,
        &entry.order_id,
        &entry.booking_reference,
        &entry.amount,
        &entry.currency,
    ) {
        (State::Booked, Some(order), Some(reference), Some(amount), Some(currency)) => {
            let content = texts::booked_earlier(&entry.tool, reference, order, amount, currency);
            let booked = Booked {
                id: order,
                reference,
                amount,
                currency,
            };
            let data =
                crate::tools::replayed_data(&entry.tool, &booked, &entry.idempotency_key, names);
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
/// one at a time, bounded by the tool's timeout, and only while the provider's breaker is not
/// open. Returns how many entries it settled.
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
        let Some(route) = tool.route(entry.provider.as_deref()) else {
            continue;
        };
        // A lookup reads the provider's orders; it books nothing and takes no permit. It is not
        // asked of a provider whose breaker is open (failing, or out of service by an
        // operator's force), but it is while half-open: a write tool's breaker is probed only
        // by a booking, so with none coming it stays half-open, and the key would stay unknown.
        if matches!(
            route.breaker.state(tokio::time::Instant::now()),
            BreakerState::Open | BreakerState::ForcedOpen
        ) {
            continue;
        }
        let lookup =
            route
                .upstream
                .find_booking(&entry.tool, &entry.client, &entry.idempotency_key);
        let found = match tokio::time::timeout(tool.config.timeout, lookup).await {
            Ok(Ok(found)) => found,
            Ok(Err(e)) => {
                observer.lookup_failed(&entry, &route.name, &e.to_string());
                continue;
            }
            Err(_) => {
                observer.lookup_failed(&entry, &route.name, "no answer within the tool's timeout");
                continue;
            }
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
        match ledger.settle_read(&entry, &outcome, now).await {
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
