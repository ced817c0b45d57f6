//! The fleet: replicas on one PostgreSQL store act as one gateway's breakers, and a single
//! node's forced states and breaker history outlive a restart (on its SQLite file).
//!
//! What is shared, and how:
//! - **Opens and recoveries.** When a replica's breaker opens (on its own calls), it writes the
//!   open-until to the breaker's shared row and notifies the others (`LISTEN`/`NOTIFY`); they
//!   open until the same instant, without counting a failure of their own. When the lease
//!   holder's probes succeed, the others recover with it (into the same ramp stage, whose share
//!   each replica applies to its own traffic, so the fleet's total keeps the share).
//! - **Forced states.** An operator's force on any replica is written and followed by all, and
//!   read back by a replica that starts later. Each carries the time it was asked for, and the
//!   newest wins: a force a replica held while away from the store does not undo a later one
//!   made on the others meanwhile (that replica follows the later one instead).
//! - **Runs of failures.** A failure recorded while a breaker is closed is told to the others
//!   (a notification only) and joins their runs of consecutive failures; a replica's own success
//!   ends its run. So the fleet opens on about `consecutive_failures` of its failures, where
//!   replicas counting alone would send that many each.
//! - **Half-open probes.** One replica at a time probes a half-open breaker: the one that holds
//!   its lease row (taken for a few seconds and renewed while it probes). The others refuse
//!   probes as a full half-open breaker does, and follow the holder's verdict.
//! - **History.** Every transition a replica decides is stored with its name; every replica
//!   shows the fleet's latest ones. The row counts the fleet's opens and keeps when its outage
//!   in course began (`opens.rs`), so every replica tells an operator the same count, and one
//!   started during an outage times its alert from the fleet's open, not from its own start.
//!
//! - **Configurations.** Each replica writes which configuration it runs (its fingerprint) and
//!   when it loaded it, every few seconds; a reload asked of one replica is stored and
//!   announced, and the others reload their own files (`replicas.rs`).
//!
//! What is not: each replica records its own call outcomes in its own window, and a healthy
//! call's path never touches the database: transitions reach the store through the task in
//! `run.rs`, which receives them as breaker events after the fact.
//!
//! When the store stops answering (every statement is bounded to a second), the replica says so
//! once in its log, in `/readyz` and in `faregate_fleet_connected`, hands probing back to its
//! own breakers and keeps its writes; when the store answers again it writes them, reads the
//! shared state again and takes the lease again.
//!
//! Floors: this room stands on the breaker (which it drives through a small API: follow an
//! open, follow a recovery, follow a force, the probe lease) and the store; the breaker knows
//! nothing of it.

mod follow;
mod handle;
mod opens;
mod record;
mod replicas;
mod run;
mod sql;
#[cfg(test)]
mod tests;

pub use handle::{Fleet, FleetStatus, RECENT_TRANSITIONS, REJECTING_GRACE, replica_name};
pub use record::StoredTransition;
pub use replicas::{LIVE_FOR, PUBLISH_EVERY, ReplicaConfig, Replicas};
