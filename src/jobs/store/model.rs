//! The job record and the store interface: what a job is and what a store does with it, in
//! terms of neither database (the SQL lives in `sql.rs`, the differences in `store/db.rs`).

use std::future::Future;

use serde_json::Value;

use crate::clients::ClientName;
pub use crate::store::StoreError;
use crate::trace_context::TraceContext;

/// The start of the idempotency key of every job a watch submits (`watch:<watch id>:<run
/// instant>`): how a listing tells a watch's runs from a client's own calls. A client's own key
/// may not start with it (`http::calls` refuses one).
pub const WATCH_RUN_KEY_PREFIX: &str = "watch:";

/// Which jobs a listing holds, by where they came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Origin {
    /// Every job.
    #[default]
    Any,
    /// The client's own background calls (not a watch's runs).
    Calls,
    /// The runs of the client's watches.
    WatchRuns,
}

impl Origin {
    /// Whether `job` came from here.
    pub fn holds(self, job: &Job) -> bool {
        let watch_run = job
            .idempotency_key
            .as_deref()
            .is_some_and(|k| k.starts_with(WATCH_RUN_KEY_PREFIX));
        match self {
            Origin::Any => true,
            Origin::Calls => !watch_run,
            Origin::WatchRuns => watch_run,
        }
    }
}

/// What a listing of jobs keeps: each filter that is set must hold.
#[derive(Debug, Clone, Copy, Default)]
pub struct JobFilter<'a> {
    /// Only jobs in this state.
    pub status: Option<JobStatus>,
    /// Only jobs of this tool.
    pub tool: Option<&'a str>,
    /// Only this client's jobs.
    pub client: Option<&'a ClientName>,
    /// Only jobs from here.
    pub origin: Origin,
}

impl JobFilter<'_> {
    /// Whether `job` passes (what the SQL statement asks, for the stores held in memory).
    pub fn holds(&self, job: &Job) -> bool {
        self.status.is_none_or(|s| job.status == s)
            && self.tool.is_none_or(|t| job.tool == t)
            && self.client.is_none_or(|c| job.client == *c)
            && self.origin.holds(job)
    }
}

/// Where a job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobStatus {
    /// Accepted, never attempted yet.
    Queued,
    /// Claimed by a worker, which holds a lease on it.
    Running,
    /// Waiting for its next attempt (the provider was down, or its breaker open).
    RetryScheduled,
    /// Done: the result is stored.
    Succeeded,
    /// Given up: a refusal the model must fix, or too many attempts, or too old.
    Dead,
    /// Cancelled by its client before it ran ([`JobStore::cancel`]); never claimed again.
    Cancelled,
}

impl JobStatus {
    /// The wire and database name.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Queued => "queued",
            JobStatus::Running => "running",
            JobStatus::RetryScheduled => "retry_scheduled",
            JobStatus::Succeeded => "succeeded",
            JobStatus::Dead => "dead",
            JobStatus::Cancelled => "cancelled",
        }
    }

    /// Parses the database name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "queued" => JobStatus::Queued,
            "running" => JobStatus::Running,
            "retry_scheduled" => JobStatus::RetryScheduled,
            "succeeded" => JobStatus::Succeeded,
            "dead" => JobStatus::Dead,
            "cancelled" => JobStatus::Cancelled,
            _ => return None,
        })
    }

    /// Whether the job is over: it never runs again (succeeded, dead or cancelled).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            JobStatus::Succeeded | JobStatus::Dead | JobStatus::Cancelled
        )
    }

    /// Every status, in lifecycle order.
    pub const ALL: [JobStatus; 6] = [
        JobStatus::Queued,
        JobStatus::Running,
        JobStatus::RetryScheduled,
        JobStatus::Succeeded,
        JobStatus::Dead,
        JobStatus::Cancelled,
    ];
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// UUID v7 (sorts by creation time).
    pub id: String,
    /// The tool to call.
    pub tool: String,
    /// The validated arguments.
    pub arguments: Value,
    /// The caller's call id.
    pub call_id: Option<String>,
    /// The client that submitted the job: only it (and the admin) may read it.
    pub client: ClientName,
    /// The caller's idempotency key; unique per client and tool.
    pub idempotency_key: Option<String>,
    /// Where to POST the result.
    pub callback_url: Option<String>,
    /// Where the job stands.
    pub status: JobStatus,
    /// Attempts that reached a provider.
    pub attempts: u32,
    /// When the job is next due (epoch ms).
    pub next_attempt_at_ms: i64,
    /// The lease the job was last claimed under: held while `running`; after the run's end,
    /// the lease of the run that ended it (until the next claim), none after a release.
    pub lease_owner: Option<String>,
    /// When the lease ends (epoch ms); an expired lease returns the job to the queue.
    pub lease_until_ms: Option<i64>,
    /// When the job was accepted (epoch ms).
    pub created_at_ms: i64,
    /// Last change (epoch ms).
    pub updated_at_ms: i64,
    /// The result envelope, once succeeded (or the last one, when dead).
    pub result: Option<Value>,
    /// The last error, in words.
    pub last_error: Option<String>,
    /// The callback's progress.
    pub callback: CallbackState,
    /// Callback deliveries tried.
    pub callback_attempts: u32,
    /// When the callback is next due (epoch ms).
    pub next_callback_at_ms: Option<i64>,
    /// Why the last delivery failed (`None` once one succeeds, or before any).
    pub callback_error: Option<String>,
    /// The trace context the job was submitted under; its runs' spans link to it.
    pub trace: Option<TraceContext>,
}

impl Job {
    /// The watch this job is a run of, read from its idempotency key (`watch:<watch id>:<run
    /// instant>`); `None` for a client's own call.
    pub fn watch_id(&self) -> Option<&str> {
        let run = self
            .idempotency_key
            .as_deref()?
            .strip_prefix(WATCH_RUN_KEY_PREFIX)?;
        run.rsplit_once(':').map(|(watch, _instant)| watch)
    }

    /// The job after its run ended with `transition` at `now_ms`, as [`JobStore::finish`]
    /// leaves it: the lease ended (its name kept), the attempt counted when a provider was
    /// reached, and a pending callback due now when the job is over.
    pub fn apply(&mut self, transition: Transition, now_ms: i64) {
        self.status = transition.status();
        let attempted = match transition {
            Transition::Succeeded { result } => {
                (self.result, self.last_error) = (Some(result), None);
                true
            }
            Transition::Retry {
                next_attempt_at_ms,
                error,
                attempted,
            } => {
                (self.result, self.last_error) = (None, Some(error));
                self.next_attempt_at_ms = next_attempt_at_ms;
                attempted
            }
            Transition::Dead {
                error,
                result,
                attempted,
            } => {
                (self.result, self.last_error) = (result, Some(error));
                attempted
            }
        };
        self.attempts += u32::from(attempted);
        (self.lease_until_ms, self.updated_at_ms) = (None, now_ms);
        let last = matches!(self.status, JobStatus::Succeeded | JobStatus::Dead);
        self.next_callback_at_ms =
            (last && self.callback == CallbackState::Pending).then_some(now_ms);
    }
}

/// A cancelled job's callback, which was to be sent: never sent, and why.
pub(crate) const CANCELLED_CALLBACK: &str =
    "not sent: the job was cancelled before it ran, so there is no result to send";

/// A callback's progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallbackState {
    /// No callback URL was given.
    None,
    /// To be sent once the job ends.
    Pending,
    /// Delivered (2xx).
    Sent,
    /// Given up after retries; the result stays in the job.
    Failed,
}

impl CallbackState {
    /// The database name.
    pub fn as_str(self) -> &'static str {
        match self {
            CallbackState::None => "none",
            CallbackState::Pending => "pending",
            CallbackState::Sent => "sent",
            CallbackState::Failed => "failed",
        }
    }

    /// The state after a delivery: sent when it did not fail (`failure` is `None`), pending
    /// while a next try is set, failed once given up.
    pub fn after(failure: Option<&str>, next_at_ms: Option<i64>) -> Self {
        match (failure, next_at_ms) {
            (None, _) => CallbackState::Sent,
            (Some(_), Some(_)) => CallbackState::Pending,
            (Some(_), None) => CallbackState::Failed,
        }
    }

    /// Parses the database name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "none" => CallbackState::None,
            "pending" => CallbackState::Pending,
            "sent" => CallbackState::Sent,
            "failed" => CallbackState::Failed,
            _ => return None,
        })
    }
}

/// A job to accept.
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    /// The tool.
    pub tool: String,
    /// The validated arguments.
    pub arguments: Value,
    /// The caller's call id.
    pub call_id: Option<String>,
    /// The client submitting it.
    pub client: ClientName,
    /// The caller's idempotency key.
    pub idempotency_key: Option<String>,
    /// An allowlisted callback URL.
    pub callback_url: Option<String>,
    /// The trace context it is submitted under (the submitting request's span), if traced.
    pub trace: Option<TraceContext>,
}

/// Counts of jobs by tool and status, for metrics and the dashboard.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueueStats {
    /// `(tool, status, count)`.
    pub depth: Vec<(String, JobStatus, u64)>,
    /// Per tool with due jobs: the age in ms of its oldest job that is due now and not running.
    pub oldest_due_age_ms: Vec<(String, i64)>,
}

/// How a leased job's run ends: the one state change a worker makes after its claim.
#[derive(Debug, Clone, PartialEq)]
pub enum Transition {
    /// Done: the result is stored, the attempt counted, and the callback (if any) becomes due.
    Succeeded {
        /// The result envelope, as stored and sent.
        result: Value,
    },
    /// Not now: the job waits, silently, until `next_attempt_at_ms`.
    Retry {
        /// When the job is due again (epoch ms).
        next_attempt_at_ms: i64,
        /// The failure, in words.
        error: String,
        /// Whether a provider was reached (only those attempts count against `max_attempts`).
        attempted: bool,
    },
    /// Given up: the last error and, when there is one, the envelope to send; the callback
    /// (if any) becomes due.
    Dead {
        /// Why the job was given up.
        error: String,
        /// The envelope to store and send, when there is one.
        result: Option<Value>,
        /// Whether a provider was reached.
        attempted: bool,
    },
}

impl Transition {
    /// The status the job ends in.
    pub fn status(&self) -> JobStatus {
        match self {
            Transition::Succeeded { .. } => JobStatus::Succeeded,
            Transition::Retry { .. } => JobStatus::RetryScheduled,
            Transition::Dead { .. } => JobStatus::Dead,
        }
    }
}

/// Which due jobs a claim may take, besides their tools: those created before
/// `created_before_ms` that have been due since `due_by_ms` or earlier (epoch milliseconds). A
/// running job whose lease expired has been due since its lease's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overdue {
    /// Only jobs created before this instant.
    pub created_before_ms: i64,
    /// Only jobs due at this instant already.
    pub due_by_ms: i64,
}

impl Overdue {
    /// Every due job, whatever its age.
    pub const ANY: Overdue = Overdue {
        created_before_ms: i64::MAX,
        due_by_ms: i64::MAX,
    };
}

/// The room the clients' shares of the tools leave on the claiming replica
/// ([`crate::clients::ToolShare`]): a claim takes no job of a client that holds all its share
/// of the job's tool there, and no more of its jobs of that tool than the slots it has left, so
/// that no job is claimed only to be refused for its client's share and written back (a row
/// write each, every pass, for as long as the client's backlog lasts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareRoom<'a> {
    /// `(tool, slots)`: the tools whose clients are held to a share, and how many of the
    /// tool's calls one client may hold. A tool not listed has no share: its jobs are taken
    /// as they come.
    pub slots: &'a [(String, u32)],
    /// `(client, tool, left)`: the slots of a listed tool a client has left, for the clients
    /// that hold some (0: it holds its whole share, and none of its jobs of the tool is
    /// taken). A client not listed has all the tool's `slots`.
    pub left: &'a [(ClientName, String, u32)],
}

impl ShareRoom<'_> {
    /// No share: every due job may be taken.
    pub const NONE: ShareRoom<'static> = ShareRoom {
        slots: &[],
        left: &[],
    };

    /// How many of `client`'s jobs of `tool` a claim may take; `None`: as many as come. (What
    /// the SQL store's claim reads: the client's slots left, else the tool's slots.)
    pub fn room(&self, client: &ClientName, tool: &str) -> Option<u32> {
        let left = self.left.iter().find(|(c, t, _)| c == client && t == tool);
        match left {
            Some((_, _, left)) => Some(*left),
            None => self.slots.iter().find(|(t, _)| t == tool).map(|(_, n)| *n),
        }
    }

    /// Whether no tool has a share.
    pub fn is_none(&self) -> bool {
        self.slots.is_empty()
    }
}

/// Which due jobs a claim may take ([`JobStore::claim_which`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Which<'a> {
    /// Not those of these tools.
    pub skip_tools: &'a [String],
    /// Only those created and due early enough.
    pub overdue: Overdue,
    /// Within the room the clients' shares leave.
    pub shares: ShareRoom<'a>,
}

impl<'a> Which<'a> {
    /// Every due job but those of `skip_tools`, whatever its age or client.
    pub fn all_but(skip_tools: &'a [String]) -> Self {
        Which {
            skip_tools,
            overdue: Overdue::ANY,
            shares: ShareRoom::NONE,
        }
    }
}

/// The lease one claim of `owner` takes its jobs under: `<owner>/<n>`, `n` counting the
/// owner's claims. A claim whose answer was lost (the store took it, the reply never came) is
/// handed back by this name alone ([`JobStore::release`]), leaving the jobs of the owner's
/// other claims, which its workers run, as they are.
pub(crate) fn claim_lease(owner: &str, n: u64) -> String {
    format!("{owner}/{n}")
}

/// Whether a job leased to `lease` is `owner`'s: leased to that name, or to one of its claims
/// ([`claim_lease`]). The SQL store's release says the same in SQL; the memory store uses this.
#[cfg(test)]
pub(crate) fn leased_by(lease: &str, owner: &str) -> bool {
    lease
        .strip_prefix(owner)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// What a job store does. The SQL store implements it once for SQLite and PostgreSQL, and the
/// conformance suite (`store/tests/`) holds every implementation to the same rules. Times are
/// epoch milliseconds passed in, so tests control them.
///
/// Every state change after a claim names the lease `owner` (the claim's own lease,
/// [`claim_lease`]): a worker whose lease expired (and whose job another worker took over)
/// cannot overwrite the new owner's work.
pub trait JobStore: Send + Sync {
    /// Creates the table and indexes when missing.
    fn migrate(&self) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Accepts a job; with an idempotency key the same client already used for the tool,
    /// returns that job and `false` instead (another client's key is another namespace).
    fn enqueue(
        &self,
        job: NewJob,
        now_ms: i64,
    ) -> impl Future<Output = Result<(Job, bool), StoreError>> + Send;
    /// One job.
    fn get(&self, id: &str) -> impl Future<Output = Result<Option<Job>, StoreError>> + Send;
    /// Jobs, newest first, as `filter` keeps them, at most `limit`.
    fn list(
        &self,
        filter: JobFilter<'_>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<Job>, StoreError>> + Send;
    /// Leases up to `limit` due jobs (queued or retry-scheduled and due, or running with an
    /// expired lease) of tools not in `skip_tools`, and returns them oldest due first. Clients
    /// take turns: each client's oldest due job is taken before any client's second, and so
    /// on, so one client's backlog never keeps another's job waiting. No job is leased twice.
    fn claim(
        &self,
        owner: &str,
        now_ms: i64,
        lease_ms: i64,
        limit: u32,
        skip_tools: &[String],
    ) -> impl Future<Output = Result<Vec<Job>, StoreError>> + Send {
        self.claim_which(owner, now_ms, lease_ms, limit, Which::all_but(skip_tools))
    }
    /// [`JobStore::claim`] of the jobs `which` allows: those its `overdue` names (a replica
    /// claims the jobs of tools it does not serve only once they are long past `max_age` and
    /// have waited long for a replica that serves them, to end them), within its `shares`.
    ///
    /// A job of a client with no room left in its share of the job's tool is not taken, nor
    /// changed in any way. Of a client with room for `n` more, at most `n` are taken, the
    /// oldest due first, among the claim's candidates: its first `4 × limit` due jobs in the
    /// clients' turns (what a claim ranks before it locks), so a claim whose candidates are
    /// mostly one client's jobs of a tool it has little room for takes fewer than `limit`
    /// (a later claim takes the others).
    fn claim_which(
        &self,
        owner: &str,
        now_ms: i64,
        lease_ms: i64,
        limit: u32,
        which: Which<'_>,
    ) -> impl Future<Output = Result<Vec<Job>, StoreError>> + Send;
    /// Ends a leased job's run with `transition`; `false` if `owner` no longer holds the lease
    /// (it expired and another worker took the job, or this end was stored already), and then
    /// nothing changes. The ended job keeps `owner` as its `lease_owner` until its next claim.
    fn finish(
        &self,
        id: &str,
        owner: &str,
        transition: Transition,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
    /// Leases up to `limit` due callbacks for `lease_ms` (so replicas do not send one twice).
    fn claim_callbacks(
        &self,
        now_ms: i64,
        lease_ms: i64,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<Job>, StoreError>> + Send;
    /// When a callback is next due (`None`: none waits), asked once none is: the callbacks'
    /// sender of an idle replica sleeps until then (`store::pace`).
    fn next_callback_due(&self) -> impl Future<Output = Result<Option<i64>, StoreError>> + Send;
    /// Records a callback delivery: sent (`failure` is `None`), or failed, with why and a next
    /// try (`next_at_ms` `None`: given up).
    fn callback_result(
        &self,
        id: &str,
        failure: Option<&str>,
        next_at_ms: Option<i64>,
        now_ms: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Cancels `client`'s job `id` if it has not started: only a `queued` or `retry_scheduled`
    /// job becomes `cancelled` (`true`); a running job (a booking may be under way at the
    /// provider), a finished one, another client's or a missing one is left as it is (`false`).
    fn cancel(
        &self,
        id: &str,
        client: &ClientName,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
    /// Returns every lease of `owner` to the queue, its claims' included (`<owner>/<n>`): a
    /// process's at a graceful shutdown, or one claim's whose answer was lost; the number
    /// released. No attempt is counted.
    fn release(
        &self,
        owner: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;
    /// The tools that have jobs a claim could take now: due, or running with an expired lease
    /// (for probe priority, and so that the dispatcher can leave the tools it does not serve
    /// out of its claims).
    fn due_tools(
        &self,
        now_ms: i64,
    ) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;
    /// When a claim could next take a job, asked once none is due: the earliest due time of a
    /// waiting job, or lease end of a running one (`None` when no job waits or runs). The
    /// dispatcher of an idle replica sleeps until then (`store::pace`).
    fn next_due(&self) -> impl Future<Output = Result<Option<i64>, StoreError>> + Send;
    /// Deletes at most `limit` jobs that ended (succeeded, dead or cancelled) before
    /// `before_ms` (their last change) and have no callback left to send; how many it deleted.
    fn purge(
        &self,
        before_ms: i64,
        limit: u32,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;
    /// Queue depth by tool and status, and the age of the oldest due job.
    fn stats(&self, now_ms: i64) -> impl Future<Output = Result<QueueStats, StoreError>> + Send;
}
