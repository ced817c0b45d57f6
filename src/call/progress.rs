//! What a caller waiting on an interactive read may be told while it runs: the steps a person
//! watching would want to see, because they explain a wait (a provider failed and the next one
//! is asked; a retry waits before asking again).
//!
//! The pipeline reports a [`Step`] through its context, as it reports spans and metrics to its
//! observer; a shared read sends its steps to every caller waiting on it. A caller that wants
//! them hands [`Gateway::call_reporting`](super::Gateway::call_reporting) a [`StepSender`]; MCP
//! turns each into `notifications/progress` for a client that gave a progress token. The call
//! path knows nothing of MCP: a step is data, and its sentence is in `texts::call`.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{broadcast, mpsc};

use crate::texts::call as texts;

/// One step of a call in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// `failed` did not answer (`why`, an `error.type`), and `next` is asked now.
    FailingOver {
        /// The tool called.
        tool: &'static str,
        /// The provider that failed.
        failed: String,
        /// Why, as the call's span says it (`timeout`, `upstream_5xx`, `circuit_open`, …).
        why: &'static str,
        /// The provider asked next.
        next: String,
    },
    /// `provider` failed (`why`) and is asked again after `wait`.
    Retrying {
        /// The tool called.
        tool: &'static str,
        /// The provider that failed and is asked again.
        provider: String,
        /// Why it failed.
        why: &'static str,
        /// How long until it is asked again.
        wait: Duration,
    },
}

impl Step {
    /// The sentence a person reads for this step.
    pub fn text(&self) -> String {
        match self {
            Step::FailingOver {
                tool,
                failed,
                why,
                next,
            } => texts::failing_over(tool, failed, why, next),
            Step::Retrying {
                tool,
                provider,
                why,
                wait,
            } => texts::retrying(tool, provider, why, *wait),
        }
    }
}

/// Where a caller receives the steps of its call.
pub type StepSender = mpsc::UnboundedSender<Step>;

/// Where the pipeline of one (possibly shared) call sends its steps: every caller waiting on it
/// may subscribe. Bounded: a caller that does not keep up misses steps, never slows the call.
///
/// The broadcast is made when the first caller subscribes: most calls have no listener (only an
/// MCP client that gave a progress token listens), and its 16 slots (about 2 KB) would
/// otherwise be kept by every call in flight for as long as it is held (memory per held call,
/// BENCHMARKS.md). Steps sent before anyone subscribed are not kept, as a broadcast does not
/// keep them for a later subscriber either.
#[derive(Debug, Clone, Default)]
pub(super) struct Steps(Arc<OnceLock<broadcast::Sender<Step>>>);

impl Steps {
    /// Sends `step` to every caller listening now (none listening is fine).
    pub(super) fn send(&self, step: Step) {
        if let Some(to) = self.0.get() {
            let _ = to.send(step);
        }
    }

    /// The steps from now on.
    pub(super) fn subscribe(&self) -> broadcast::Receiver<Step> {
        self.0.get_or_init(|| broadcast::channel(16).0).subscribe()
    }
}

/// A new channel for the steps of one call.
pub(super) fn channel() -> Steps {
    Steps::default()
}

/// Runs `work`, passing every step received on `steps` to `to`, until `work` ends.
///
/// A step sent before `work` ended is passed on even when both are ready at once (a shared call
/// runs in its own task, and can report a step and finish before this caller's task is polled):
/// the caller hears it before its answer, never not at all.
pub(super) async fn forwarding<F: std::future::Future>(
    work: F,
    mut steps: broadcast::Receiver<Step>,
    to: &StepSender,
) -> F::Output {
    tokio::pin!(work);
    loop {
        tokio::select! {
            biased;
            out = &mut work => {
                pass_on_queued(&mut steps, to);
                return out;
            }
            step = steps.recv() => match step {
                Ok(step) => {
                    // The caller stopped listening: the call goes on without it.
                    let _ = to.send(step);
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return work.await,
            },
        }
    }
}

/// Passes on the steps already in `steps`, without waiting for more.
fn pass_on_queued(steps: &mut broadcast::Receiver<Step>, to: &StepSender) {
    loop {
        match steps.try_recv() {
            Ok(step) => {
                let _ = to.send(step);
            }
            Err(broadcast::error::TryRecvError::Lagged(_)) => {}
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failing_over() -> Step {
        Step::FailingOver {
            tool: "search_flights",
            failed: "duffel".into(),
            why: "upstream_5xx",
            next: "amadeus".into(),
        }
    }

    #[tokio::test]
    async fn a_step_sent_just_before_the_call_ends_still_reaches_the_caller() {
        // The shared call reported a step and finished before the caller's task ran again:
        // both are ready at the caller's next poll.
        let steps = channel();
        let listening = steps.subscribe();
        steps.send(failing_over());
        let (to, mut heard) = mpsc::unbounded_channel();

        let out = forwarding(std::future::ready("answer"), listening, &to).await;

        assert_eq!(out, "answer");
        assert_eq!(heard.try_recv().ok(), Some(failing_over()));
        assert!(heard.try_recv().is_err(), "one step, told once");
    }
}
