//! The booking ledger: one durable entry per booking, written before the provider is asked, so
//! the same idempotency key can never book twice, on any replica, after any restart.
//!
//! Why a room of its own: a provider deduplicates bookings only if it documents an idempotency
//! key (Duffel documents none), and an answer lost on the way back leaves nobody knowing what
//! happened. The ledger is what the gateway itself remembers: which client booked under which
//! key, with which arguments (as a digest), and what came of it. It stands over `store/` (the
//! shared database, with its own named migrations) and knows nothing of tools or providers
//! (it reads amounts with `tools::spend::Amount`, the one exact money type).
//!
//! - `entry.rs`: [`Entry`], its [`State`] (pending → booked | failed | unknown), and the digest
//!   of a booking's arguments.
//! - `sql.rs`: [`Ledger`], every statement once for SQLite and PostgreSQL.
//!
//! Rules the statements keep:
//! - **Written first.** [`Ledger::begin`] inserts a `pending` entry before any provider request;
//!   when the key is taken it answers with the entry as recorded instead, or a conflict when the
//!   same key came with other arguments.
//! - **Only nothing-booked outcomes are tried again.** A `failed` entry (the provider refused,
//!   said it did not create the order, or was never sent the order) goes back to `pending` for
//!   a call with the same arguments: nothing was booked, so trying again cannot book twice.
//!   `booked` and `unknown` entries are answers, never tried again.
//! - **A pending entry settles.** An entry still `pending` after the settle time belongs to a
//!   call that ended without writing its outcome (a crash, a killed replica): it is read as
//!   `unknown`, and reconciliation asks the provider.
//! - **A budget is held in one step.** A booking's price, once its provider quoted it, is
//!   reserved on its entry only if the client's pending, booked and unknown bookings of the day
//!   leave room ([`Ledger::reserve`], serialized per client), so concurrent bookings can never
//!   together exceed the budget; a failed entry holds nothing.
//! - **Entries are kept forever**: they are the record of what was spent.

mod entry;
mod sql;

#[cfg(test)]
mod tests;

pub use entry::{Begin, Entry, NewEntry, Outcome, State, arguments_digest};
pub use sql::{Hold, Ledger};
