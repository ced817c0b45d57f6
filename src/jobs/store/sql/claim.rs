//! The claim: which due jobs a replica takes in one statement, the clients taking turns and
//! kept within their shares of each tool, in both dialects.
//!
//! Its own module because it is the one statement of the job store with a shape of its own:
//! the ranking that keeps one client's backlog from holding another client's job back (seed
//! 001), the variant that leaves out a client's jobs of a tool while it holds its share there
//! (`model::ShareRoom`), and the lock that lets several replicas claim at once.

use crate::store::Db;

/// The condition of a claimable job (`$1` = now): due, or running on an expired lease.
pub(super) const DUE: &str = "((status IN ('queued', 'retry_scheduled') AND next_attempt_at <= $1)
                   OR (status = 'running' AND lease_until < $1))";

/// `$1` now, `$2` owner, `$3` lease, `$4` tools to skip, `$5` limit, `$6` the instant the jobs
/// were created before, `$7` the instant they were due by (a running job's expired lease is
/// due from its end, a queued one's `lease_until` is NULL); `{due}`, `{ranked}` and `{lock}`
/// are filled in by [`statement`]: `{ranked}` is the claim's candidates with each
/// one's `turn`, [`RANKED`], or [`RANKED_IN_SHARES`] when clients are held to a share.
///
/// Clients take turns (`turn`: a job's place among its own client's due jobs): a claim takes
/// every client's oldest due job before any client's second, so one client's backlog never
/// holds another client's job behind it (seed 001). The ranking keeps four times `$5`
/// candidates, so that claimers locking at the same moment (`{lock}` skips each other's rows)
/// each still find a full claim among them. The outer select repeats `{due}` on the row it
/// locks: a row another claimer leased after this statement's snapshot is read again when it is
/// locked, and then it is no longer due. Ranking costs a sort of every due job: with 100,000 due
/// jobs, 87 ms a claim on PostgreSQL where oldest-first took 31 ms (ARCHITECTURE.md).
const CLAIM: &str = concat!(
    "UPDATE faregate_jobs
     SET status = 'running', lease_owner = $2, lease_until = $1 + $3, updated_at = $1
     WHERE id IN (
         SELECT faregate_jobs.id FROM faregate_jobs
         JOIN ({ranked}) AS ranked
           ON ranked.ranked_id = faregate_jobs.id
         WHERE {due}
         ORDER BY ranked.turn, faregate_jobs.next_attempt_at, faregate_jobs.id
         LIMIT CAST($5 AS BIGINT)
         {lock})
     RETURNING ",
    job_columns!()
);

/// A job a claim may consider: due, of a tool not skipped, created and due early enough;
/// `{not_skipped}` is the store's list clause on `$4`.
const CANDIDATE: &str = "{due} AND {not_skipped} AND created_at < CAST($6 AS BIGINT)
                     AND COALESCE(lease_until, next_attempt_at) <= CAST($7 AS BIGINT)";

/// The claim's candidates when no client is held to a share: the first `4 × $5` due jobs in
/// the clients' turns.
const RANKED: &str = "SELECT ranked_id, turn FROM (
                   SELECT id AS ranked_id, next_attempt_at,
                          ROW_NUMBER() OVER (PARTITION BY client ORDER BY next_attempt_at, id)
                              AS turn
                   FROM faregate_jobs
                   WHERE {candidate}) AS turns
               ORDER BY turn, next_attempt_at, ranked_id
               LIMIT 4 * CAST($5 AS BIGINT)";

/// The claim's candidates within the clients' shares of the tools on the claiming replica
/// (`model::ShareRoom`): `$8` the tools with a share and `$9` how many of each tool's calls one
/// client may hold (`{shares}`); `$10` the clients that hold some, `$11` the tool, `$12` the
/// slots each has left (`{left_room}`, and `{full_share}` the same lists).
///
/// A client with no slot left of a tool has its jobs of that tool left out before the ranking
/// (a hashed anti-join: a client's backlog at its share costs no sort at all); of the others'
/// candidates, at most the slots left (or the tool's `slots`, for a client that holds none)
/// of each client's jobs of a tool, the oldest due first. Capping the candidates rather than
/// every due job keeps the claim to one sort of the due jobs, as without shares (capping every
/// due job took a second sort, about twice the time with 100,000 due; ARCHITECTURE.md has
/// the measured cost).
const RANKED_IN_SHARES: &str = "SELECT ranked_id, turn FROM (
                   SELECT ranked_id, turn, COALESCE(left_room.slots_left, shares.slots) AS room,
                          ROW_NUMBER() OVER (PARTITION BY candidates.client, candidates.tool
                                             ORDER BY candidates.next_attempt_at,
                                                      candidates.ranked_id) AS in_share
                   FROM (SELECT ranked_id, client, tool, next_attempt_at, turn FROM (
                             SELECT id AS ranked_id, client, tool, next_attempt_at,
                                    ROW_NUMBER() OVER (PARTITION BY client
                                                       ORDER BY next_attempt_at, id) AS turn
                             FROM faregate_jobs
                             WHERE {candidate}
                               AND (client, tool) NOT IN (
                                   SELECT holder, held_tool FROM {full_share}
                                   WHERE slots_left = 0)) AS turns
                         ORDER BY turn, next_attempt_at, ranked_id
                         LIMIT 4 * CAST($5 AS BIGINT)) AS candidates
                   LEFT JOIN {shares} ON shares.shared_tool = candidates.tool
                   LEFT JOIN {left_room} ON left_room.holder = candidates.client
                                        AND left_room.held_tool = candidates.tool) AS capped
               WHERE room IS NULL OR in_share <= room";

/// The claim statement in `db`'s dialect, within the clients' shares when `shares`.
pub(super) fn statement(db: &Db, shares: bool) -> sqlx::AssertSqlSafe<String> {
    let ranked = if shares {
        let left = [
            ("$10", "holder", "TEXT"),
            ("$11", "held_tool", "TEXT"),
            ("$12", "slots_left", "BIGINT"),
        ];
        let tools = [("$8", "shared_tool", "TEXT"), ("$9", "slots", "BIGINT")];
        RANKED_IN_SHARES
            .replace("{full_share}", &db.zipped("full_share", &left))
            .replace("{left_room}", &db.zipped("left_room", &left))
            .replace("{shares}", &db.zipped("shares", &tools))
    } else {
        RANKED.to_string()
    };
    sqlx::AssertSqlSafe(
        CLAIM
            .replace("{ranked}", &ranked)
            .replace("{candidate}", CANDIDATE)
            .replace("{due}", DUE)
            .replace("{not_skipped}", &db.excluding("tool", "$4"))
            .replace("{lock}", &db.claim_lock("faregate_jobs")),
    )
}
