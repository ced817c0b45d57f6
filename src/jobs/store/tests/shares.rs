//! Claims within the clients' shares of the tools (`ShareRoom`): a client that holds its whole
//! share of a tool on the claiming replica has its jobs of that tool left as they are, and no
//! more of a client's jobs of a tool are taken than the slots it has left.

use super::*;

const FLIGHTS: &str = "search_flights";
const HOTELS: &str = "search_hotels";

/// Enqueues a job of `client` for `tool` at `at`; its id.
async fn enqueue<S: JobStore>(s: &S, client: &str, tool: &str, at: i64) -> String {
    let mut job = new_job(tool, None);
    job.client = ClientName::stored(client);
    let (job, _) = s.enqueue(job, at).await.unwrap_or_else(|e| panic!("{e}"));
    job.id
}

/// Claims up to 10 due jobs at `now` within `shares`; their ids, oldest due first.
async fn claim_within<S: JobStore>(s: &S, now: i64, shares: ShareRoom<'_>) -> Vec<String> {
    let which = Which {
        shares,
        ..Which::all_but(&[])
    };
    let claimed = s.claim_which("w", now, 60_000, 10, which).await;
    let claimed = claimed.unwrap_or_else(|e| panic!("{e}"));
    claimed.into_iter().map(|j| j.id).collect()
}

conformance!(
    a_client_at_its_share_of_a_tool_has_its_jobs_of_it_left_alone,
    check_share_full
);
async fn check_share_full<S: JobStore>(s: Arc<S>) {
    let acme_flights = [
        enqueue(&*s, "acme", FLIGHTS, T0).await,
        enqueue(&*s, "acme", FLIGHTS, T0 + 1).await,
        enqueue(&*s, "acme", FLIGHTS, T0 + 2).await,
    ];
    let acme_hotels = enqueue(&*s, "acme", HOTELS, T0 + 3).await;
    let globex_flights = enqueue(&*s, "globex", FLIGHTS, T0 + 4).await;
    let mut before = Vec::new();
    for id in &acme_flights {
        before.push(stored(&*s, id).await);
    }

    // acme holds both of its 2 slots of search_flights; nobody holds any of search_hotels.
    let slots = [(FLIGHTS.to_string(), 2)];
    let full = [(ClientName::stored("acme"), FLIGHTS.to_string(), 0)];
    let shares = ShareRoom {
        slots: &slots,
        left: &full,
    };
    assert_eq!(
        claim_within(&*s, T0 + 10, shares).await,
        [acme_hotels, globex_flights],
        "acme's job of another tool and another client's job of the tool are taken"
    );
    for job in &before {
        assert_eq!(
            &stored(&*s, &job.id).await,
            job,
            "acme's search_flights jobs are untouched: no lease, no write"
        );
    }
    assert!(
        claim_within(&*s, T0 + 20, shares).await.is_empty(),
        "while acme holds its share"
    );

    // One of acme's slots came back: its oldest job, and only that.
    let one_left = [(ClientName::stored("acme"), FLIGHTS.to_string(), 1)];
    let shares = ShareRoom {
        slots: &slots,
        left: &one_left,
    };
    assert_eq!(claim_within(&*s, T0 + 30, shares).await, acme_flights[..1]);
    assert_eq!(
        claim_within(&*s, T0 + 40, ShareRoom::NONE).await,
        acme_flights[1..],
        "no share: the rest"
    );
}

conformance!(
    a_claim_takes_no_more_of_a_clients_jobs_of_a_tool_than_its_share_has_room_for,
    check_share_room
);
async fn check_share_room<S: JobStore>(s: Arc<S>) {
    let mut acme = Vec::new();
    let mut globex = Vec::new();
    for i in 0..5 {
        acme.push(enqueue(&*s, "acme", FLIGHTS, T0 + 2 * i).await);
        globex.push(enqueue(&*s, "globex", FLIGHTS, T0 + 2 * i + 1).await);
    }
    let hotels = [
        enqueue(&*s, "acme", HOTELS, T0 + 20).await,
        enqueue(&*s, "acme", HOTELS, T0 + 21).await,
    ];
    // Each client may hold 2 of search_flights' calls: acme holds none, globex one; the
    // hotels have no share.
    let slots = [(FLIGHTS.to_string(), 2)];
    let left = [(ClientName::stored("globex"), FLIGHTS.to_string(), 1)];
    let shares = ShareRoom {
        slots: &slots,
        left: &left,
    };
    let mut expected = vec![acme[0].clone(), globex[0].clone(), acme[1].clone()];
    expected.extend(hotels);
    assert_eq!(
        claim_within(&*s, T0 + 100, shares).await,
        expected,
        "acme's 2 oldest flights, globex's oldest, and every hotel job, though 10 were asked"
    );
    for id in acme[2..].iter().chain(&globex[1..]) {
        let job = stored(&*s, id).await;
        assert_eq!(
            (job.status, job.lease_owner, job.updated_at_ms),
            (JobStatus::Queued, None, job.created_at_ms),
            "not taken, not written"
        );
    }
}
