//! How a run ends: dead with its error, callbacks sent and retried, cancelled, purged, handed back at shutdown.

use super::*;

conformance!(dead_jobs_keep_their_error_and_result, check_kill);
async fn check_kill<S: JobStore>(s: Arc<S>) {
    let (j, _) = s
        .enqueue(new_job("search_flights", None), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    s.claim("w", T0, 1000, 1, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let env = json!({"status": "rejected"});
    assert!(
        s.finish(
            &j.id,
            "w",
            dead("unknown airport", Some(env.clone()), true),
            T0 + 1
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"))
    );
    let d = stored(&*s, &j.id).await;
    assert_eq!((d.status, d.attempts), (JobStatus::Dead, 1));
    assert_eq!(d.last_error.as_deref(), Some("unknown airport"));
    assert_eq!(d.result, Some(env));
    assert!(
        s.claim("w", T0 + 10_000_000, 1000, 5, &[])
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_empty(),
        "dead is final"
    );
}

conformance!(callbacks_are_leased_retried_and_recorded, check_callbacks);
async fn check_callbacks<S: JobStore>(s: Arc<S>) {
    let mut nj = new_job("search_flights", None);
    nj.callback_url = Some("https://chat.example.com/hook".into());
    let (j, _) = s.enqueue(nj, T0).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(j.callback, CallbackState::Pending);
    assert!(
        s.claim_callbacks(T0, 30_000, 10)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_empty(),
        "not before the job ends"
    );
    s.claim("w", T0, 1000, 1, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    s.finish(&j.id, "w", succeeded(json!({"status": "ok"})), T0 + 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let due = s
        .claim_callbacks(T0 + 10, 30_000, 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(due.len(), 1);
    assert!(
        s.claim_callbacks(T0 + 11, 30_000, 10)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_empty(),
        "leased to one sender"
    );
    s.callback_result(
        &j.id,
        Some("the receiver answered 503 Service Unavailable"),
        Some(T0 + 2_000),
        T0 + 12,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let failed_once = stored(&*s, &j.id).await;
    assert_eq!(
        (failed_once.callback, failed_once.callback_error.as_deref()),
        (
            CallbackState::Pending,
            Some("the receiver answered 503 Service Unavailable")
        ),
        "the client reads why its callback has not arrived"
    );
    let again = s
        .claim_callbacks(T0 + 2_000, 30_000, 10)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.len(), 1, "retried when due");
    s.callback_result(&j.id, None, None, T0 + 2_001)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let j = stored(&*s, &j.id).await;
    assert_eq!((j.callback, j.callback_attempts), (CallbackState::Sent, 2));
    assert_eq!(
        j.callback_error, None,
        "a delivered callback has no error left"
    );
    assert_eq!(
        j.result,
        Some(json!({"status": "ok"})),
        "the result never depends on the callback"
    );
}

conformance!(
    only_the_owner_cancels_and_only_a_job_not_started,
    check_cancel
);
async fn check_cancel<S: JobStore>(s: Arc<S>) {
    let local = ClientName::local();
    let other = ClientName::stored("globex");
    let (queued, _) = s
        .enqueue(new_job("search_flights", None), T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // Another client's cancel changes nothing, exactly as for a job that does not exist.
    assert!(
        !s.cancel(&queued.id, &other, T0 + 1)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );
    assert!(
        !s.cancel("no-such-job", &local, T0 + 1)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );
    assert_eq!(stored(&*s, &queued.id).await.status, JobStatus::Queued);
    assert!(
        s.cancel(&queued.id, &local, T0 + 2)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );
    let cancelled = stored(&*s, &queued.id).await;
    assert_eq!(
        (cancelled.status, cancelled.updated_at_ms),
        (JobStatus::Cancelled, T0 + 2)
    );
    assert_eq!(
        cancelled.callback,
        CallbackState::None,
        "no callback, none told"
    );
    // A callback that was to be sent once the job ended is told never sent, and why, not left
    // pending for ever.
    let with_callback = NewJob {
        callback_url: Some("https://hooks.example/done".into()),
        ..new_job("search_flights", None)
    };
    let (calling, _) = s
        .enqueue(with_callback, T0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        s.cancel(&calling.id, &local, T0 + 3)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );
    let told = stored(&*s, &calling.id).await;
    assert_eq!(
        (told.callback, told.callback_error.as_deref()),
        (
            CallbackState::Failed,
            Some(crate::jobs::store::model::CANCELLED_CALLBACK)
        )
    );
    // A cancelled job is never claimed, and a second cancel is not a change.
    let claimed = s
        .claim("w1", T0 + 10, 1_000, 10, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(claimed.is_empty(), "claimed a cancelled job: {claimed:?}");
    assert!(
        !s.cancel(&queued.id, &local, T0 + 11)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );

    // A job waiting for its retry is cancelled; a running one never is (it may be booking).
    let (waiting, _) = s
        .enqueue(new_job("search_flights", None), T0 + 20)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    s.claim("w1", T0 + 20, 1_000, 10, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !s.cancel(&waiting.id, &local, T0 + 21)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );
    assert_eq!(stored(&*s, &waiting.id).await.status, JobStatus::Running);
    s.finish(
        &waiting.id,
        "w1",
        retry(T0 + 5_000, "provider down", true),
        T0 + 22,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        s.cancel(&waiting.id, &local, T0 + 23)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );
    let claimed = s
        .claim("w1", T0 + 10_000, 1_000, 10, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(claimed.is_empty(), "claimed a cancelled job: {claimed:?}");
}

conformance!(
    finished_jobs_are_purged_after_retention_but_never_with_a_callback_to_send,
    check_purge
);
async fn check_purge<S: JobStore>(s: Arc<S>) {
    let enqueue = |tool: &'static str, callback: bool| {
        let s = Arc::clone(&s);
        async move {
            let job = NewJob {
                callback_url: callback.then(|| "https://example.com/hooks/x".to_string()),
                ..new_job(tool, None)
            };
            s.enqueue(job, T0)
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .0
                .id
        }
    };
    let done = enqueue("search_flights", false).await;
    let dead_one = enqueue("search_hotels", false).await;
    let calling_back = enqueue("get_flight_status", true).await;
    let waiting = enqueue("price_flight_offer", false).await;
    let cancelled = enqueue("check_hotel_availability", true).await;
    let claimed = s
        .claim("w", T0, 60_000, 3, &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(claimed.len(), 3);
    let end = |id: &str, transition: Transition| {
        let s = Arc::clone(&s);
        let id = id.to_string();
        async move {
            assert!(
                s.finish(&id, "w", transition, T0 + 10)
                    .await
                    .unwrap_or_else(|e| panic!("{e}"))
            );
        }
    };
    end(&done, succeeded(json!({"status": "ok"}))).await;
    end(&dead_one, dead("refused", None, true)).await;
    end(&calling_back, succeeded(json!({"status": "ok"}))).await;
    let job_client = ClientName::local();
    assert!(
        s.cancel(&cancelled, &job_client, T0 + 10)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    );

    // Nothing ended before the cutoff: nothing goes.
    assert_eq!(
        s.purge(T0 + 10, 100)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
        0
    );
    // A batch of one, then the rest: succeeded, dead and cancelled go; the job whose callback
    // is still to be sent and the job still waiting stay.
    assert_eq!(
        s.purge(T0 + 11, 1).await.unwrap_or_else(|e| panic!("{e}")),
        1
    );
    assert_eq!(
        s.purge(T0 + 11, 100)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
        2
    );
    for gone in [&done, &dead_one, &cancelled] {
        assert_eq!(s.get(gone).await.unwrap_or_else(|e| panic!("{e}")), None);
    }
    assert_eq!(stored(&*s, &waiting).await.status, JobStatus::Queued);
    assert_eq!(
        stored(&*s, &calling_back).await.callback,
        CallbackState::Pending
    );
    // Once its callback is sent, it goes after retention counted from the delivery.
    s.callback_result(&calling_back, None, None, T0 + 20)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        s.purge(T0 + 20, 100)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
        0
    );
    assert_eq!(
        s.purge(T0 + 21, 100)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
        1
    );
    assert_eq!(stored(&*s, &waiting).await.status, JobStatus::Queued);
}

conformance!(shutdown_returns_leases_to_the_queue, check_release);
async fn check_release<S: JobStore>(s: Arc<S>) {
    for _ in 0..4 {
        s.enqueue(new_job("search_flights", None), T0)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    // A process's claims each lease under their own name; a neighbour's name shares its start.
    for (lease, n) in [("w/0", 1), ("w/1", 1), ("w", 1), ("w0/1", 1)] {
        let claimed = s.claim(lease, T0, 60_000, n, &[]).await;
        assert_eq!(claimed.unwrap_or_else(|e| panic!("{e}")).len(), 1);
    }
    let release = |owner: &'static str| s.release(owner, T0 + 1);
    assert_eq!(
        release("w/1").await.unwrap_or_else(|e| panic!("{e}")),
        1,
        "one claim's lease alone"
    );
    assert_eq!(
        release("w").await.unwrap_or_else(|e| panic!("{e}")),
        2,
        "the owner's own lease and its other claim's, not another owner's"
    );
    assert_eq!(release("w0").await.unwrap_or_else(|e| panic!("{e}")), 1);
    assert_eq!(
        s.claim("w2", T0 + 1, 60_000, 4, &[])
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .len(),
        4,
        "due at once, not after the lease"
    );
}
