//! [`BackInServiceSystem`]: what the API asks (set up a notice within its limits, read, delete),
//! and the loop that fires notices when their tool answers again, ends those that expired and
//! delivers the fired ones' callbacks.
//!
//! Why a loop that looks, rather than a listener on breaker transitions: a tool comes back in
//! three ways (a breaker closes after its probes, an operator ends a forced open, a maintenance
//! window ends), and only the first is an event; a window ending is only a time passing. So
//! while some notice waits, every replica looks every [`PACE`]`.busy` at the tools notices wait
//! for and asks the gateway
//! whether each answers now ([`Gateway::is_available`]: a provider whose breaker admits calls and
//! that no window holds), the same question the fallback texts and `/v1/breakers` ask. A half-open
//! breaker is not back: it admits probes only, and the notice fires once they close it.
//!
//! A tool nobody calls would never be found back: a breaker closes only after its half-open
//! probes succeed, and probes are calls, while the agent that set the notice up stopped calling.
//! So while a tool some notice waits for has a half-open breaker, the loop asks the tool again
//! itself, one call at a time, with the arguments of the last read it could not answer
//! ([`Gateway::probe`]); in a fleet, whichever replica saw that read fail, since the arguments
//! are shared through the store (`asking.rs`).
//!
//! In a fleet every replica looks, and the store's conditional update (`waiting` → `fired`) lets
//! one of them fire each notice; its callback is then leased and delivered by the outbox, as a
//! watch's notice is, and tried again after a doubling wait when the receiver does not take it.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::asking::Asking;
use super::store::{Notice, NoticeState, NoticeStore};
use crate::call::Gateway;
use crate::clients::ClientName;
use crate::clock;
use crate::jobs::callbacks::notice::{Delivery, NoticeSender};
use crate::jobs::{StoreError, rfc3339};
use crate::store::pace::{Found, Pace};
use crate::texts::back_in_service as texts;
use crate::texts::span;

/// How often the loop looks for tools back in service and due callbacks: every 500 ms while a
/// notice waits or a callback is due, else when the next callback falls due, at most 2 s later
/// (`store::pace`); a notice set up on this replica wakes it at once.
pub(super) const PACE: Pace = Pace::busy_every(Duration::from_millis(500));
/// How long a notice waits when its client does not say.
pub const DEFAULT_EXPIRY: Duration = Duration::from_secs(24 * 3600);
/// The longest a notice may wait: a traveller who asked a week ago has moved on.
pub const LONGEST_EXPIRY: Duration = Duration::from_secs(7 * 24 * 3600);
/// Notices one client may have waiting at once, so one client cannot fill the store; a
/// traveller's agent needs one per tool it found down, a busy application a few per traveller.
pub const MAX_WAITING_PER_CLIENT: u32 = 1000;
/// Callbacks started per look: a burst of notices is sent over a few looks.
const CALLBACKS: u32 = 32;
/// How long an ended notice stays readable before it is deleted.
const KEEP_ENDED: Duration = Duration::from_secs(7 * 24 * 3600);
/// How often ended notices (and old unanswered reads) are purged.
const PURGE_EVERY: Duration = Duration::from_secs(60);

/// What a look at the waiting notices did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Fired {
    /// Notices this replica fired (one another replica fired first is not counted again).
    pub here: u64,
    /// Whether any unexpired notice was waiting (then the loop keeps looking every 500 ms).
    pub waiting: bool,
}

/// A notice to set up, as the API read it (the tool is served and in the client's scope).
#[derive(Debug, Clone)]
pub struct NewNotice {
    /// Whose it is.
    pub client: ClientName,
    /// The tool to wait for.
    pub tool: String,
    /// Where it is POSTed, signed (allowlisted, as a job's callback).
    pub callback_url: String,
    /// How long it waits at most; `None` for [`DEFAULT_EXPIRY`].
    pub expires_in: Option<Duration>,
}

/// Why a notice was not set up or found; each text names the fix.
#[derive(Debug)]
pub enum NoticeError {
    /// The request does not describe a notice that can be kept (422).
    Invalid(String),
    /// The client waits on as many notices as it may (409).
    Full(String),
    /// No such notice (404).
    NotFound,
    /// The store failed (503).
    Store(StoreError),
}

impl From<StoreError> for NoticeError {
    fn from(e: StoreError) -> Self {
        NoticeError::Store(e)
    }
}

/// Back-in-service notices over the gateway's breakers and maintenance windows.
#[derive(Debug)]
pub struct BackInServiceSystem {
    store: NoticeStore,
    gateway: Arc<Gateway>,
    sender: Arc<NoticeSender>,
    /// The tools this replica asks again itself, and the arguments it shares for that.
    asking: Asking,
    /// Poked when a notice is set up here, so the loop looks every 500 ms from then on.
    wake: Notify,
}

impl BackInServiceSystem {
    /// Notices kept in `store`, fired by what `gateway` says of its tools, sent by `sender`.
    pub fn new(store: NoticeStore, gateway: Arc<Gateway>, sender: NoticeSender) -> Self {
        let asking = Asking::new(Arc::clone(&gateway), store.unanswered_reads().clone());
        BackInServiceSystem {
            store,
            gateway,
            sender: Arc::new(sender),
            asking,
            wake: Notify::new(),
        }
    }

    /// The store (for the API's reads).
    pub fn store(&self) -> &NoticeStore {
        &self.store
    }

    /// Whether `tool` answers calls now (a notice asked for it fires at the next look).
    pub fn available_now(&self, tool: &str) -> bool {
        self.gateway
            .tool(tool)
            .is_some_and(|t| self.gateway.is_available(&t, Instant::now()))
    }

    /// Checks `new` (its callback URL, its expiry) and stores it, waiting, when its client has
    /// fewer than [`MAX_WAITING_PER_CLIENT`] notices waiting (counted in the same step as the
    /// insert, [`NoticeStore::insert`], so concurrent requests never pass it).
    pub async fn create(&self, new: NewNotice) -> Result<Notice, NoticeError> {
        let expires_in = new.expires_in.unwrap_or(DEFAULT_EXPIRY);
        if expires_in.is_zero() || expires_in > LONGEST_EXPIRY {
            return Err(NoticeError::Invalid(texts::expires_in_out_of_range(
                &span(expires_in),
                &span(LONGEST_EXPIRY),
            )));
        }
        self.sender
            .check(&new.client, &new.callback_url)
            .await
            .map_err(NoticeError::Invalid)?;
        let now = clock::epoch_ms();
        let notice = Notice {
            id: uuid::Uuid::now_v7().to_string(),
            client: new.client,
            tool: new.tool,
            callback_url: new.callback_url,
            state: NoticeState::Waiting,
            created_at_ms: now,
            expires_at_ms: clock::ms_after(now, expires_in),
            fired_at_ms: None,
            callback: None,
            callback_attempts: 0,
            next_callback_at_ms: None,
            callback_error: None,
            updated_at_ms: now,
        };
        if !self.store.insert(&notice, MAX_WAITING_PER_CLIENT).await? {
            return Err(NoticeError::Full(texts::full(MAX_WAITING_PER_CLIENT)));
        }
        self.wake.notify_one();
        Ok(notice)
    }

    /// Notice `id` when `client` may see it (every notice for `None`, the admin); another
    /// client's reads as none at all.
    pub async fn own(&self, id: &str, client: Option<&ClientName>) -> Result<Notice, NoticeError> {
        match self.store.get(id).await? {
            Some(n) if client.is_none_or(|c| *c == n.client) => Ok(n),
            _ => Err(NoticeError::NotFound),
        }
    }

    /// Deletes notice `id` (a callback under way still ends, unrecorded).
    pub async fn delete(&self, id: &str, client: Option<&ClientName>) -> Result<(), NoticeError> {
        self.own(id, client).await?;
        if self.store.delete(id).await? {
            Ok(())
        } else {
            Err(NoticeError::NotFound)
        }
    }

    /// Looks as [`PACE`] says until `shutdown`.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let mut wait = PACE.busy;
        let mut purged = Instant::now();
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = self.wake.notified() => {},
                _ = tokio::time::sleep(wait) => {},
            }
            // A look the store keeps waiting (a database out of reach) does not hold a shutdown:
            // each of its steps is a conditional update, taken up again by the next look.
            let found = tokio::select! {
                _ = shutdown.cancelled() => return,
                found = self.look() => found,
            };
            wait = PACE.wait(found, clock::epoch_ms());
            if purged.elapsed() >= PURGE_EVERY {
                purged = Instant::now();
                let before = clock::epoch_ms().saturating_sub(KEEP_ENDED.as_millis() as i64);
                if let Err(e) = self.store.purge(before).await {
                    tracing::warn!(error = %e, "back-in-service: ended notices not purged");
                }
                if let Err(e) = self.asking.purge().await {
                    tracing::warn!(error = %e, "back-in-service: old unanswered reads not purged");
                }
            }
        }
    }

    /// One look: fires and expires notices, then delivers the due callbacks. What it found:
    /// work while a notice waits or a callback was due (or the store failed), else when the
    /// next callback falls due.
    async fn look(&self) -> Found {
        let fired = self.fire_and_expire().await;
        if let Err(e) = &fired {
            tracing::warn!(error = %e, "back-in-service: look failed; retrying");
        }
        let sent = self.send_due().await;
        if let Err(e) = &sent {
            tracing::warn!(error = %e, "back-in-service: callbacks not read; retrying");
        }
        match (fired, sent) {
            (Ok(Fired { waiting: false, .. }), Ok(0)) => match self.store.callbacks().await {
                Ok(callbacks) => match callbacks.next_due().await {
                    Ok(next) => Found::of(false, [next]),
                    Err(_) => Found::Work,
                },
                Err(_) => Found::Work,
            },
            _ => Found::Work,
        }
    }

    /// Fires the notices of every tool that answers again, after ending those that expired.
    pub async fn fire_and_expire(&self) -> Result<Fired, StoreError> {
        let now = clock::epoch_ms();
        let mut fired = Fired::default();
        let expired = self.store.expire(now).await?;
        if expired > 0 {
            tracing::info!(expired, "back-in-service notices expired unfired");
        }
        // The shared arguments are the probes' help, not the notices' state: a store that
        // refuses them leaves the notices to fire as the breakers say.
        if let Err(e) = self.asking.share().await {
            tracing::warn!(error = %e, "back-in-service: unanswered reads not shared; retrying");
        }
        for tool in self.store.waited_for(now).await? {
            fired.waiting = true;
            if !self.available_now(&tool) {
                if let Err(e) = self.asking.ask_again(tool).await {
                    tracing::warn!(error = %e, "back-in-service: shared unanswered read not read");
                }
                continue;
            }
            let now_fired = self.store.fire(&tool, now).await?;
            if now_fired > 0 {
                tracing::info!(%tool, fired = now_fired, "tool back in service: notices fired");
            }
            fired.here += now_fired;
        }
        Ok(fired)
    }

    /// Leases the due callbacks and delivers each on a task of its own (the outbox records how
    /// it went and when to try again); how many were due.
    pub async fn send_due(&self) -> Result<usize, StoreError> {
        let callbacks = self.store.callbacks().await?;
        self.sender.send_due(&callbacks, CALLBACKS, notice).await
    }
}

/// Where a fired notice's callback goes, and what it says.
fn notice(due: &Notice) -> Delivery {
    let body = serde_json::json!({
        "notice_id": due.id,
        "tool": due.tool,
        "available_since": due.fired_at_ms.map(rfc3339),
        "news": texts::back(&due.tool),
    });
    Delivery {
        client: due.client.clone(),
        url: due.callback_url.clone(),
        body,
    }
}

#[cfg(test)]
mod tests;
