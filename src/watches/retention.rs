//! How long an ended watch is kept: `[store] job_retention` after it ended (the same period as a
//! finished job's), then it is deleted with its notices by a sweep every replica runs about
//! once a minute ([`SWEEP_EVERY`]).
//!
//! Why: the per-client limit counts only active watches, so a client that creates watches that
//! end soon (`after_runs: 1`) could otherwise fill the database with ended ones, each row
//! carrying its last result. An ended watch changes no more, so its last change is when it
//! ended. A watch whose notice still has a callback to send is kept until the delivery ends
//! (sent or failed), as a job with a callback to send is.
//!
//! Several replicas sweep at once without harm: a row deleted twice is deleted once.

use std::time::Duration;

use tokio::time::Instant;

use super::store::WatchStore;
use crate::clock;

/// How often a replica looks for ended watches past their retention.
pub(super) const SWEEP_EVERY: Duration = Duration::from_secs(60);
/// Watches deleted per statement of a sweep (a sweep runs up to [`BATCHES`] of them).
const BATCH: u32 = 500;
/// Statements per sweep: a backlog goes over the next sweeps.
const BATCHES: u32 = 10;
/// How long an ended watch is kept when nothing else is configured (`[store] job_retention`).
pub(super) const DEFAULT_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// The sweep of ended watches, run from the watch loop: at most once per [`SWEEP_EVERY`].
#[derive(Debug)]
pub(super) struct Sweeper {
    retention: Duration,
    last: Option<Instant>,
}

impl Sweeper {
    /// Deletes watches ended more than `retention` ago.
    pub(super) fn new(retention: Duration) -> Self {
        Sweeper {
            retention,
            last: None,
        }
    }

    /// Sweeps when the last sweep was [`SWEEP_EVERY`] ago or more (or never); the watches
    /// deleted. A store that does not answer is asked again at the next sweep.
    pub(super) async fn tick(&mut self, store: &WatchStore) -> u64 {
        let now = clock::now();
        if self.last.is_some_and(|last| now - last < SWEEP_EVERY) {
            return 0;
        }
        self.last = Some(now);
        let retention = i64::try_from(self.retention.as_millis()).unwrap_or(i64::MAX);
        let before = clock::epoch_ms().saturating_sub(retention);
        let mut purged = 0;
        for _ in 0..BATCHES {
            match store.purge_ended(before, BATCH).await {
                Ok(n) => {
                    purged += n;
                    if n < u64::from(BATCH) {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "watches: ended watches not purged; trying again later");
                    break;
                }
            }
        }
        if purged > 0 {
            tracing::info!(
                purged,
                "watches: ended watches past their retention deleted"
            );
        }
        purged
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::{SWEEP_EVERY, Sweeper};
    use crate::clients::ClientName;
    use crate::clock;
    use crate::store::Db;
    use crate::watches::{Condition, End, Notice, Schedule, Watch, WatchState, WatchStore};

    const RETENTION: Duration = Duration::from_secs(3600);

    /// A blocking task that runs until dropped: while it runs, tokio's paused clock does not
    /// jump ahead while a statement runs on the driver's threads; only the test moves it.
    fn hold() -> std::sync::mpsc::Sender<()> {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        tokio::task::spawn_blocking(move || {
            let _ = rx.recv();
        });
        tx
    }

    fn watch(id: &str, state: WatchState, at_ms: i64) -> Watch {
        Watch {
            id: id.to_string(),
            client: ClientName::local(),
            tool: "search_flights".to_string(),
            arguments: json!({"origin": "LHR"}),
            condition: Condition::AnyChange,
            schedule: Schedule {
                interval: Duration::from_secs(600),
                end: End {
                    at_ms: None,
                    runs: Some(1),
                    departure: false,
                },
            },
            callback_url: None,
            state,
            runs: 1,
            next_run_at_ms: at_ms,
            job: None,
            last_result: Some(json!({"offers": ["x".repeat(4096)]})),
            last_run_at_ms: Some(at_ms),
            last_error: None,
            departure_at_ms: None,
            created_at_ms: at_ms,
            updated_at_ms: at_ms,
        }
    }

    fn notice(id: &str, at_ms: i64) -> Notice {
        Notice {
            watch_id: id.to_string(),
            instant_ms: at_ms,
            text: "news".to_string(),
            result: json!({"price": 1}),
            created_at_ms: at_ms,
            callback: None,
            callback_error: None,
        }
    }

    async fn exists(store: &WatchStore, id: &str) -> bool {
        store
            .get(id)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_some()
    }

    async fn notices(store: &WatchStore, id: &str) -> usize {
        store
            .notices(id, 100)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .len()
    }

    async fn check(db: Db) {
        let store = WatchStore::new(db);
        let now = clock::epoch_ms();
        let long_ago = now - i64::try_from(RETENTION.as_millis()).expect("fits") - 1;
        let put = |w: Watch| {
            let store = store.clone();
            async move {
                let stored = store
                    .insert(&w, u32::MAX)
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
                assert!(stored, "no cap in the way");
            }
        };
        let add = |n: Notice, callback: bool| {
            let store = store.clone();
            async move {
                store
                    .add_notice(&n, callback)
                    .await
                    .unwrap_or_else(|e| panic!("{e}"))
            }
        };
        put(watch("old-ended", WatchState::Ended, long_ago)).await;
        add(notice("old-ended", long_ago), false).await;
        add(notice("old-ended", long_ago - 1), false).await;
        put(watch("old-ended-calling", WatchState::Ended, long_ago)).await;
        add(notice("old-ended-calling", long_ago), true).await;
        put(watch("old-active", WatchState::Active, long_ago)).await;
        add(notice("old-active", long_ago), false).await;
        put(watch("old-paused", WatchState::Paused, long_ago)).await;
        put(watch("new-ended", WatchState::Ended, now - 1_000)).await;
        add(notice("new-ended", now - 1_000), false).await;

        let mut sweeper = Sweeper::new(RETENTION);
        assert_eq!(
            sweeper.tick(&store).await,
            1,
            "one watch past its retention"
        );
        assert!(
            !exists(&store, "old-ended").await,
            "ended past retention: gone"
        );
        assert_eq!(notices(&store, "old-ended").await, 0, "with its notices");
        assert!(
            exists(&store, "old-ended-calling").await,
            "a notice's callback still to send keeps its watch"
        );
        assert_eq!(notices(&store, "old-ended-calling").await, 1);
        for id in ["old-active", "old-paused", "new-ended"] {
            assert!(exists(&store, id).await, "{id} is kept");
        }
        assert_eq!(notices(&store, "old-active").await, 1);
        assert_eq!(notices(&store, "new-ended").await, 1);

        // The next sweep comes a minute later, not on the next poll.
        put(watch("another", WatchState::Ended, long_ago)).await;
        tokio::time::advance(SWEEP_EVERY - Duration::from_secs(1)).await;
        assert_eq!(sweeper.tick(&store).await, 0, "not yet");
        assert!(exists(&store, "another").await);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(sweeper.tick(&store).await, 1);
        assert!(!exists(&store, "another").await);

        // A watch ended just now goes once its retention has passed.
        tokio::time::advance(RETENTION).await;
        assert_eq!(sweeper.tick(&store).await, 1);
        assert!(!exists(&store, "new-ended").await);
        assert_eq!(notices(&store, "new-ended").await, 0);
        assert!(exists(&store, "old-active").await);
    }

    #[tokio::test(start_paused = true)]
    async fn ended_watches_and_their_notices_are_deleted_a_retention_after_they_ended() {
        let _hold = hold();
        crate::store::both::on_both("watch_retention", check).await;
    }
}
