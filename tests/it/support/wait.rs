//! Waiting for something to happen on a real server: poll, and fail with what was last seen.
//!
//! These tests run real sockets on real time, so "until the job succeeded" or "until the call
//! reached the provider" is a poll with a generous bound, never a fixed sleep: a fixed sleep is
//! either too short on a busy machine or wasted on an idle one.

use std::future::Future;
use std::time::Duration;

use faregate_sim::{RouteGroup, Simulator};
use tokio::time::Instant;

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(20);

/// Runs `check` every [`POLL`] until it returns `Ok`, and returns that value. `check` returns
/// `Err(seen)` while waiting, with what it saw; if `within` passes first, the test panics with
/// `what` and the last `seen`.
pub(crate) async fn wait_until<T, F, Fut>(within: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let started = Instant::now();
    loop {
        match check().await {
            Ok(value) => return value,
            Err(seen) => assert!(
                started.elapsed() < within,
                "waited {within:?} for {what}; last seen:\n{seen}"
            ),
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Waits (up to 5 s) until a request of `group` has reached `sim`: the call is then in flight
/// at the provider, which is the moment a test about in-flight calls needs.
pub(crate) async fn wait_until_upstream(sim: &Simulator, group: RouteGroup) {
    wait_until(
        Duration::from_secs(5),
        "a call to reach the provider",
        || async {
            match super::requests(sim, group) {
                0 => Err(format!("no request of {group} yet")),
                _ => Ok(()),
            }
        },
    )
    .await;
}
