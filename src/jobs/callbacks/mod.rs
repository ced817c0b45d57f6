//! Callbacks: POST a finished job's envelope to the caller's allowlisted URL, signed.
//!
//! `Faregate-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, keyed with the
//! client's callback secret ([`signing`]), so the receiver can check both origin and freshness
//! (the Stripe scheme).
//! Due callbacks are leased before they are sent, so replicas sharing a queue never send one
//! twice. Delivery is retried with a doubling wait; a failed delivery never loses the result,
//! which stays in the job (`GET /v1/jobs/{id}`). Where a callback may go is [`guard`]'s
//! business, held to the client's list ([`allowlist`]).

pub mod allowlist;
pub mod guard;
pub mod notice;
pub mod signing;

use std::sync::Arc;
use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use reqwest::Url;
use sha2::Sha256;
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;

use self::allowlist::{Allowlist, Allowlists};
use self::signing::Signing;
use super::land::{self, Unstored};
use super::store::{Job, JobStore, Store, StoreError};
use crate::call::{CallInfo, Envelope};
use crate::clock;
use crate::policy::Backoff;
use crate::secret::Secret;
use crate::store::pace::{Found, Pace};
use crate::telemetry::{CallbackOutcome, Telemetry};

/// The header carrying the signature.
pub const SIGNATURE_HEADER: &str = "Faregate-Signature";

/// How often the sender looks for due callbacks: every 500 ms while some are due, else when the
/// next falls due, at most 2 s later (`store::pace`); a job of this replica that ends with a
/// callback wakes it at once ([`Sender::wake`]).
const PACE: Pace = Pace::busy_every(Duration::from_millis(500));
/// How long a claimed callback is this replica's to send; after that another may try it. Longer
/// than one delivery can take (the client's timeout is 10 s), since each is sent on a task of
/// its own as soon as it is claimed.
const LEASE: Duration = Duration::from_secs(30);
/// Callbacks claimed per look: a burst of finished jobs is sent over a few polls.
const BATCH: u32 = 16;
/// Deliveries in flight at once, each on a task of its own: a slow receiver holds one of them,
/// not the sender, so one client's receiver never delays another's callbacks (nor outlasts the
/// lease of callbacks claimed beside it, which another replica would then send again).
const IN_FLIGHT: usize = 64;
/// Deliveries before giving up (the result stays in the job): waits of 1 s to 64 s, about two
/// minutes in all.
const ATTEMPTS: u32 = 8;
/// The wait after the first failed delivery; it doubles after each further one …
const FIRST_RETRY: Duration = Duration::from_secs(1);
/// … this many times at most (a ceiling of about 17 minutes, which [`ATTEMPTS`] does not reach).
const MAX_DOUBLINGS: u32 = 10;

/// The wait between deliveries: [`FIRST_RETRY`], doubled up to [`MAX_DOUBLINGS`] times.
const DELIVERY_BACKOFF: Backoff = Backoff::new(
    FIRST_RETRY,
    Duration::from_secs(FIRST_RETRY.as_secs() << MAX_DOUBLINGS),
);

/// The wait before the next delivery, after `failed` failed ones; `None` when it is time to
/// give up.
fn next_delivery_in(failed: u32) -> Option<Duration> {
    (failed < ATTEMPTS).then(|| DELIVERY_BACKOFF.ceiling(failed.saturating_sub(1)))
}

/// What one delivery came to, for the metrics: sent, failed and tried again after `retry_in`,
/// or failed for the last time.
fn delivery_outcome(sent: bool, retry_in: Option<Duration>) -> CallbackOutcome {
    match (sent, retry_in) {
        (true, _) => CallbackOutcome::Sent,
        (false, Some(_)) => CallbackOutcome::Retry,
        (false, None) => CallbackOutcome::Failed,
    }
}

/// Why a callback was not sent when there is no secret to sign it with (a reload took it away
/// after the URL was accepted).
pub const UNSIGNED: &str = "not sent: there is no signing secret for this client's callbacks any more (auth.callback_secret_env, or the client's own callback_secret_env)";
/// Why a callback was not sent when the gateway has no callback client.
pub const NO_CLIENT: &str =
    "not sent: the gateway could not build its callback client (its start-up log says why)";

/// `t=<t>,v1=<hex>` for `body` sent at unix time `t`.
pub fn sign(secret: &[u8], t: i64, body: &[u8]) -> String {
    // HMAC accepts keys of any length, so this cannot fail; an empty MAC would only make the
    // receiver refuse the callback, never panic the gateway.
    let hex = match <Hmac<Sha256> as KeyInit>::new_from_slice(secret) {
        Ok(mut mac) => {
            mac.update(t.to_string().as_bytes());
            mac.update(b".");
            mac.update(body);
            mac.finalize()
                .into_bytes()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        }
        Err(_) => String::new(),
    };
    format!("t={t},v1={hex}")
}

/// The callback body: the job's stored envelope; for a job that died without one (given up
/// after too many attempts, or a write whose outcome is unknown), an `unavailable` envelope with
/// its last error, so receivers parse one shape.
fn body(job: &Job) -> Vec<u8> {
    if let Some(result) = &job.result {
        // A stored `Value` always serializes; an empty body is refused by the receiver, which
        // is retried, never a panic.
        return serde_json::to_vec(result).unwrap_or_default();
    }
    // The call id the caller gave, else the job id (which the `queued` answer carried).
    let call_id = job.call_id.clone().unwrap_or_else(|| job.id.clone());
    let mut envelope = Envelope::unavailable(
        CallInfo::new(call_id, job.tool.clone()),
        job.last_error.clone().unwrap_or_default(),
        None,
        None,
    );
    envelope.job_id = Some(job.id.clone());
    envelope.to_json_bytes()
}

/// Sends due callbacks until shutdown.
#[derive(Debug)]
pub(super) struct Sender {
    pub(super) store: Store,
    pub(super) allowlists: Allowlists,
    /// The secret each client's callbacks are signed with.
    pub(super) signing: Signing,
    /// The callback client ([`guard::client`]); `None` if it could not be built, and then
    /// callbacks fail (and are retried) rather than go out without the SSRF guard.
    pub(super) http: Option<reqwest::Client>,
    pub(super) telemetry: Arc<Telemetry>,
    /// Records waiting for the store.
    pub(super) unstored: Unstored,
    /// Poked when a job of this replica ends with a callback to send.
    pub(super) wake: Arc<Notify>,
    /// Room for deliveries in flight ([`IN_FLIGHT`]).
    pub(super) deliveries: Arc<Semaphore>,
}

/// Room for [`IN_FLIGHT`] deliveries, for a new [`Sender`].
pub(super) fn deliveries() -> Arc<Semaphore> {
    Arc::new(Semaphore::new(IN_FLIGHT))
}

impl Sender {
    /// Claims, delivers and records due callbacks as [`PACE`] says until `shutdown`.
    pub(super) async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let mut wait = PACE.busy;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = self.wake.notified() => {},
                _ = tokio::time::sleep(wait) => {},
            }
            let found = match self.look().await {
                Ok(found) => found,
                Err(e) => {
                    tracing::warn!(error = %e, "could not read due callbacks");
                    Found::Work
                }
            };
            wait = PACE.wait(found, clock::epoch_ms());
        }
    }

    /// One look: claims as many due callbacks as there is room to send and sends each on a
    /// task of its own; when none was due, asks when the next one is.
    async fn look(self: &Arc<Self>) -> Result<Found, StoreError> {
        let room = self.deliveries.available_permits().min(BATCH as usize) as u32;
        if room == 0 {
            return Ok(Found::Work);
        }
        let lease_ms = LEASE.as_millis() as i64;
        let due = self
            .store
            .claim_callbacks(clock::epoch_ms(), lease_ms, room)
            .await?;
        if due.is_empty() {
            return Ok(Found::of(false, [self.store.next_callback_due().await?]));
        }
        for job in due {
            // Only this loop takes permits, and it claimed no more than were free.
            let Ok(permit) = Arc::clone(&self.deliveries).try_acquire_owned() else {
                break;
            };
            let sender = Arc::clone(self);
            tokio::spawn(async move {
                sender.send(&job).await;
                drop(permit);
            });
        }
        Ok(Found::Work)
    }

    /// One delivery of `job`'s callback, and its record.
    async fn send(&self, job: &Job) {
        let failure = self.deliver(job).await.err();
        let retry_in = match failure {
            None => None,
            Some(_) => next_delivery_in(job.callback_attempts + 1),
        };
        self.telemetry
            .metrics()
            .record_callback(delivery_outcome(failure.is_none(), retry_in));
        let now = clock::epoch_ms();
        let next = retry_in.map(|wait| clock::ms_after(now, wait));
        // Unrecorded, a sent callback would be sent again when its lease ends.
        let landed = land::until_stored(&self.unstored, "callback record", &job.id, || {
            self.store
                .callback_result(&job.id, failure.as_deref(), next, now)
        })
        .await;
        if landed.retried {
            tracing::info!(job = %job.id, "jobs: callback record stored after the job store answered again");
        }
    }

    /// POSTs the job's final envelope, signed; `Err` says why it was not delivered (the job
    /// keeps it for its client to read).
    async fn deliver(&self, job: &Job) -> Result<(), String> {
        let Some(url) = &job.callback_url else {
            return Err("not sent: the job has no callback URL".into());
        };
        let secret = self.signing.secret_for(&job.client);
        let outcome = match (&secret, &self.http) {
            (None, _) => Err(UNSIGNED.to_string()),
            (_, None) => Err(NO_CLIENT.to_string()),
            // Checked again at delivery, against the job's client's list now: it may have
            // changed since the job was stored (a reload, another replica, a restart). Host
            // names are re-resolved by the client's guarded resolver, which never connects to
            // a private address.
            (Some(secret), Some(http)) => {
                let allowlist = self.allowlists.of(&job.client);
                post_signed(http, url, &allowlist, secret, body(job)).await
            }
        };
        if let Err(why) = &outcome {
            tracing::warn!(
                job = %job.id,
                client = job.client.as_str(),
                host = %receiver_host(url),
                "callback not delivered: {why}"
            );
        }
        outcome
    }
}

/// The receiver a callback `url` names, as log lines name it: its host and any port written
/// in it (`hooks.example.com:8443`, `[::1]:9000`), so an operator sees which receiver fails.
/// Never its user, password, path or query, which often carry a token; `?` for a URL that
/// does not parse (it was checked when accepted, so only a stored row gone bad).
pub fn receiver_host(url: &str) -> String {
    let Ok(parsed) = Url::parse(url) else {
        return "?".into();
    };
    match (parsed.host_str(), parsed.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_string(),
        (None, _) => "?".into(),
    }
}

/// POSTs `body` as JSON to `url`, signed with `secret` ([`SIGNATURE_HEADER`]), after checking
/// the URL against the client's `allowlist` again (it may have changed since the URL was
/// accepted): the one delivery of job callbacks and notices. `Err` says why it was not
/// delivered.
pub async fn post_signed(
    http: &reqwest::Client,
    url: &str,
    allowlist: &Allowlist,
    secret: &Secret,
    body: Vec<u8>,
) -> Result<(), String> {
    let parsed = match Url::parse(url) {
        Ok(u) if guard::allowed(&u, allowlist.entries()) => u,
        _ => {
            return Err(
                "not sent: the URL is no longer on this client's callback allowlist".into(),
            );
        }
    };
    let signature = sign(secret.expose().as_bytes(), clock::epoch_ms() / 1000, &body);
    let sent = http
        .post(parsed)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(SIGNATURE_HEADER, signature)
        .body(body)
        .send()
        .await;
    match sent {
        Ok(res) if res.status().is_success() => Ok(()),
        Ok(res) => Err(format!("the receiver answered {}", res.status())),
        // Without the URL, which reqwest's error adds: a receiver's URL often carries a token
        // (in its path or query), and this text is logged at every failed delivery and shown
        // to the client.
        Err(e) => Err(format!(
            "could not reach the receiver: {}",
            causes(&e.without_url())
        )),
    }
}

/// `e` and its sources, outermost first (`error sending request: client error (Connect): tcp
/// connect error: Connection refused`): reqwest's own text alone does not say what failed.
fn causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        let more = inner.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = inner.source();
    }
    text
}

#[cfg(test)]
mod tests;
