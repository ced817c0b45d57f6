//! `notifications/progress` for a `tools/call` whose client gave a progress token
//! (`_meta.progressToken`): each step of the call while the client waits (a provider failed and
//! the next one is asked; a retry waits before asking again) becomes a notification with a
//! count (1, 2, …; the total is not known) and the step's sentence, e.g. "search_flights: duffel
//! failed (timeout), trying amadeus". They go on the request's own stream: in a session its event
//! stream; statelessly, the answer becomes an event stream that ends with the result. Without a
//! token nothing is sent, and a stateless answer stays one JSON body.
//!
//! The steps come from the call path ([`crate::call::Step`]), which knows nothing of MCP.

use std::future::Future;
use std::pin::Pin;

use futures::future::Either;

use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;
use tokio::sync::mpsc;

use crate::call::{Step, StepSender};

/// A call's steps on their way to a client that asked for progress.
pub(super) struct Listener {
    token: ProgressToken,
    steps: mpsc::UnboundedReceiver<Step>,
}

/// Where the call's steps go, and what reads them, when the client gave `token`.
pub(super) fn listen(token: Option<ProgressToken>) -> (Option<StepSender>, Option<Listener>) {
    match token {
        None => (None, None),
        Some(token) => {
            let (to, steps) = mpsc::unbounded_channel();
            (Some(to), Some(Listener { token, steps }))
        }
    }
}

/// Runs `work`, sending each step it reports to `peer` as `notifications/progress`.
///
/// Without a listener (no progress token, the usual call) this is `work` itself. The loop that
/// forwards steps is boxed, and only for a call that listens: it holds a notification's send
/// future (about 1 KB), and inline it would size every held `tools/call`'s future, which
/// rmcp's request task keeps for as long as the call waits (memory per held call,
/// BENCHMARKS.md).
pub(super) fn reporting<'a, F>(
    work: F,
    listener: Option<Listener>,
    peer: &'a Peer<RoleServer>,
) -> Either<F, Pin<Box<dyn Future<Output = F::Output> + Send + 'a>>>
where
    F: Future + Send + 'a,
    F::Output: Send,
{
    match listener {
        None => Either::Left(work),
        Some(listener) => Either::Right(Box::pin(forwarding(work, listener, peer))),
    }
}

/// Where progress notifications go: the client's peer, or a test's list.
trait Notify {
    /// Sends `note`; an error says the client's stream is gone.
    fn notify(
        &self,
        note: ProgressNotificationParam,
    ) -> impl Future<Output = Result<(), rmcp::ServiceError>> + Send;
}

impl Notify for Peer<RoleServer> {
    fn notify(
        &self,
        note: ProgressNotificationParam,
    ) -> impl Future<Output = Result<(), rmcp::ServiceError>> + Send {
        self.notify_progress(note)
    }
}

/// `work` while its steps go to `peer`, until it ends.
///
/// The steps reported before `work` ended go out before its answer, even when both are ready
/// at once: the call runs in a task of its own, and can report a step and finish before this
/// one is polled (a fallback provider that answers within a millisecond).
async fn forwarding<F: Future>(
    work: F,
    Listener { token, mut steps }: Listener,
    peer: &impl Notify,
) -> F::Output {
    tokio::pin!(work);
    let mut count: u32 = 0;
    loop {
        tokio::select! {
            biased;
            out = &mut work => {
                while let Ok(step) = steps.try_recv() {
                    tell(peer, &token, &mut count, &step).await;
                }
                return out;
            }
            Some(step) = steps.recv() => tell(peer, &token, &mut count, &step).await,
        }
    }
}

/// Sends `step` to `peer` as the next progress notification for `token`.
async fn tell(peer: &impl Notify, token: &ProgressToken, count: &mut u32, step: &Step) {
    *count += 1;
    let note =
        ProgressNotificationParam::new(token.clone(), f64::from(*count)).with_message(step.text());
    if let Err(e) = peer.notify(note).await {
        // The client's stream is gone; the call goes on to its answer.
        tracing::debug!(error = %e, "an MCP progress notification was not sent");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// The notifications a client was sent: (progress, message).
    #[derive(Default)]
    struct Heard(Mutex<Vec<(f64, Option<String>)>>);

    impl Notify for Heard {
        fn notify(
            &self,
            note: ProgressNotificationParam,
        ) -> impl Future<Output = Result<(), rmcp::ServiceError>> + Send {
            if let Ok(mut heard) = self.0.lock() {
                heard.push((note.progress, note.message));
            }
            std::future::ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn steps_reported_just_before_the_answer_are_sent_before_it() {
        let (to, listener) = listen(Some(ProgressToken(rmcp::model::NumberOrString::Number(7))));
        let (Some(to), Some(listener)) = (to, listener) else {
            panic!("a token listens");
        };
        let step = Step::FailingOver {
            tool: "search_flights",
            failed: "duffel".into(),
            why: "upstream_5xx",
            next: "amadeus".into(),
        };
        // The call reported its step and finished before this task was polled.
        let _ = to.send(step.clone());
        let heard = Heard::default();

        let out = forwarding(std::future::ready("answer"), listener, &heard).await;

        assert_eq!(out, "answer");
        let heard = heard.0.lock().map(|h| h.clone()).unwrap_or_default();
        assert_eq!(heard, vec![(1.0, Some(step.text()))]);
    }
}
