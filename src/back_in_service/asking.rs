//! Asking a tool again for its notices, on whichever replica can: the probes the loop starts
//! ([`Gateway::probe`]), and the arguments they ask with, shared through the store
//! (`reads.rs`).
//!
//! Why shared: a probe asks with the arguments of the tool's last read no provider answered,
//! and a replica keeps those in its memory only. The replica that saw the reads fail may be
//! gone (stopped, killed, restarted) by the time the provider heals, and the replica that holds
//! the fleet's probe lease may never have seen a failing read; with nobody calling, its
//! half-open breakers would never close. So while a read tool is down, each replica writes what
//! it keeps to the tool's row ([`Asking::share`]), and a replica with nothing of its own takes
//! the row when it is about to ask ([`Asking::ask_again`]).
//!
//! Never per call: the row is written from this loop, when the kept arguments change while the
//! tool is down (at most every [`WRITE_GAP`]) and every [`RENEW`] while they stay; the call path
//! only keeps its arguments in memory, as it did. A replica deletes the row it wrote or took
//! (only if it still holds those arguments) once it keeps them no longer (their date passed, or
//! a provider refused them as wrong, so `call/unanswered.rs` forgot them) or the tool answers
//! again; a row nobody renewed for [`KEEP`] is not used and is purged.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::reads::UnansweredReads;
use crate::call::Gateway;
use crate::clock;
use crate::jobs::StoreError;

/// The longest a shared row is used without a replica renewing it: a read a traveller could
/// not get answered a day ago is nobody's question any more, and the row is a client's
/// arguments, kept no longer than its use.
pub(super) const KEEP: Duration = Duration::from_secs(24 * 3600);
/// The shortest time between two writes of a tool's row by one replica with changed arguments:
/// a tool that is down and still called changes its last unanswered read on every call.
const WRITE_GAP: Duration = Duration::from_secs(5);
/// How often a replica writes the same arguments again while the tool stays down, so the row
/// stays younger than [`KEEP`] while someone keeps it.
const RENEW: Duration = Duration::from_secs(600);

/// The arguments this replica wrote to (or took from) a tool's row, and when.
#[derive(Debug)]
struct Shared {
    arguments: String,
    at: Instant,
}

/// What one tool's row needs from this replica now.
enum Step {
    Write(String),
    Forget(String),
}

/// The loop's probes and the arguments they share.
#[derive(Debug)]
pub(super) struct Asking {
    gateway: Arc<Gateway>,
    reads: UnansweredReads,
    /// The tools this replica is asking again now (one probe of a tool at a time).
    probing: Arc<Mutex<HashSet<String>>>,
    /// Per tool, what this replica last wrote to or took from the shared row: what it writes
    /// again only when it changed (or [`RENEW`] passed), and deletes once it keeps it no longer.
    /// Only the loop's task touches it, between its awaits.
    shared: Mutex<HashMap<String, Shared>>,
}

impl Asking {
    /// Probes of `gateway`'s tools, asking with arguments shared through `reads`.
    pub(super) fn new(gateway: Arc<Gateway>, reads: UnansweredReads) -> Self {
        Asking {
            gateway,
            reads,
            probing: Arc::default(),
            shared: Mutex::default(),
        }
    }

    /// Brings the rows of the read tools up to date with what this replica keeps: the
    /// arguments it keeps for a tool that is down are written (when they changed, or to renew
    /// them), and a row it wrote or took is deleted once it keeps those arguments no longer or
    /// the tool answers again. Every tool is looked at, not only those some notice waits for: a
    /// notice may be set up after the replica that saw the failures is gone.
    pub(super) async fn share(&self) -> Result<(), StoreError> {
        for tool in self.gateway.tools() {
            let name = tool.spec.name;
            let now = Instant::now();
            let kept = if self.gateway.is_available(&tool, now) {
                None
            } else {
                self.gateway.unanswered(name)
            };
            let step = {
                let shared = lock(&self.shared);
                let last = shared.get(name);
                match (kept, last) {
                    (Some(kept), None) => Some(Step::Write(kept)),
                    (Some(kept), Some(last)) => {
                        let gap = if kept == last.arguments {
                            RENEW
                        } else {
                            WRITE_GAP
                        };
                        (now >= last.at + gap).then_some(Step::Write(kept))
                    }
                    (None, Some(last)) => Some(Step::Forget(last.arguments.clone())),
                    (None, None) => None,
                }
            };
            match step {
                Some(Step::Write(arguments)) => {
                    self.reads.put(name, &arguments, clock::epoch_ms()).await?;
                    let at = Instant::now();
                    lock(&self.shared).insert(name.to_string(), Shared { arguments, at });
                }
                Some(Step::Forget(arguments)) => {
                    self.reads.forget(name, &arguments).await?;
                    lock(&self.shared).remove(name);
                }
                None => {}
            }
        }
        Ok(())
    }

    /// Asks `tool` again on a task of its own ([`Gateway::probe`]) unless this replica is
    /// asking it already or there is nothing to ask; a replica that would ask but keeps no
    /// arguments of its own first takes the tool's shared row.
    pub(super) async fn ask_again(&self, tool: String) -> Result<(), StoreError> {
        if lock(&self.probing).contains(&tool) {
            return Ok(());
        }
        if self.gateway.unanswered(&tool).is_none() && self.gateway.would_probe(&tool) {
            let oldest = clock::epoch_ms().saturating_sub(KEEP.as_millis() as i64);
            if let Some(arguments) = self.reads.get(&tool, oldest).await? {
                self.gateway.adopt_unanswered(&tool, &arguments);
                let at = Instant::now();
                lock(&self.shared).insert(tool.clone(), Shared { arguments, at });
            }
        }
        let Some(probe) = self.gateway.probe(&tool) else {
            return Ok(());
        };
        lock(&self.probing).insert(tool.clone());
        let done = Probing {
            tools: Arc::clone(&self.probing),
            tool,
        };
        tokio::spawn(async move {
            probe.await;
            drop(done);
        });
        Ok(())
    }

    /// Deletes the rows nobody renewed for [`KEEP`]; how many.
    pub(super) async fn purge(&self) -> Result<u64, StoreError> {
        let oldest = clock::epoch_ms().saturating_sub(KEEP.as_millis() as i64);
        self.reads.purge(oldest).await
    }
}

/// Takes its tool off the set of tools being asked again when the probe ends (or its task is
/// dropped at shutdown).
struct Probing {
    tools: Arc<Mutex<HashSet<String>>>,
    tool: String,
}

impl Drop for Probing {
    fn drop(&mut self) {
        lock(&self.tools).remove(&self.tool);
    }
}

fn lock<T>(value: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A set or map of names stays whole whatever panicked while it was held.
    value
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
