//! Notices posted to a client's callback URL (a watch's news, a tool back in service): the job
//! callbacks' signature (`Faregate-Signature`, HMAC-SHA256 over `"<t>.<body>"` with the callback
//! secret), allowlist and SSRF guard, so a receiver of job callbacks checks a notice the same
//! way.
//!
//! A notice is delivered at least once: its row says `pending` until a 2xx, and a failed
//! delivery is tried again after a doubling wait, up to a number of times; the notice itself
//! stays readable through the API whatever happens to the callback. The rooms that keep notices
//! (watches, back-in-service) lease, retry and record each delivery in their own rows through
//! the outbox; this module is only where a notice may go and how it is sent.

use std::sync::Arc;

use reqwest::Url;
use serde_json::Value;

use super::allowlist::Allowlists;
use super::signing::{self, Signing};
use super::{guard, post_signed};
use crate::clients::ClientName;
use crate::clock;
use crate::outbox::{Delivered, Outbox};
use crate::store::StoreError;
use crate::telemetry::{CallbackOutcome, Telemetry};

/// One notice to deliver: whose it is, where it goes and what it says.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// The client that asked for it (its allowlist applies).
    pub client: ClientName,
    /// Its callback URL.
    pub url: String,
    /// The JSON body.
    pub body: Value,
}

/// Where notices may go and how they are signed.
#[derive(Debug)]
pub struct NoticeSender {
    allowlists: Allowlists,
    signing: Signing,
    /// The guarded callback client; `None` if it could not be built (then deliveries fail and
    /// are retried, never sent without the guard).
    http: Option<reqwest::Client>,
    /// Where each delivery is counted (`faregate_notice_callbacks_total`), once given.
    telemetry: Option<Arc<Telemetry>>,
}

impl NoticeSender {
    /// Notices to URLs on their client's list of `allowlists` (a `Vec<Url>` is the gateway's
    /// list for every client), signed as `signing` says (an `Option<Secret>` is the gateway's
    /// secret for every client; none = callbacks refused).
    pub fn new(allowlists: impl Into<Allowlists>, signing: impl Into<Signing>) -> Self {
        let http = guard::client()
            .map_err(|e| tracing::error!(error = %e, "cannot build the notice HTTP client; notice callbacks will fail"))
            .ok();
        NoticeSender {
            allowlists: allowlists.into(),
            signing: signing.into(),
            http,
            telemetry: None,
        }
    }

    /// Counts each delivery in `telemetry`'s metrics, so that an operator sees a receiver
    /// that refuses notices as one that refuses job callbacks.
    pub fn counted_in(self, telemetry: Arc<Telemetry>) -> Self {
        NoticeSender {
            telemetry: Some(telemetry),
            ..self
        }
    }

    /// Checks `client`'s callback URL for its notices as a job's is checked, with a message
    /// naming the fix.
    pub async fn check(&self, client: &ClientName, url: &str) -> Result<(), String> {
        let parsed = Url::parse(url).map_err(|e| format!("callback_url is not a URL: {e}"))?;
        guard::check_target(&parsed, &self.allowlists.of(client)).await?;
        if self.signing.secret_for(client).is_none() {
            return Err(signing::NO_SECRET.into());
        }
        Ok(())
    }

    /// Delivers the callbacks `outbox` finds due now (at most `limit`): each is posted, signed,
    /// to the URL and with the JSON body `notice` makes of it, and the outbox records how it went;
    /// how many were due.
    pub async fn send_due<T: Send + 'static>(
        self: &Arc<Self>,
        outbox: &Outbox<T>,
        limit: u32,
        notice: fn(&T) -> Delivery,
    ) -> Result<usize, StoreError> {
        let sender = Arc::clone(self);
        let telemetry = self.telemetry.clone();
        let heard = move |delivered| {
            if let Some(telemetry) = &telemetry {
                telemetry.metrics().record_notice_callback(match delivered {
                    Delivered::Sent => CallbackOutcome::Sent,
                    Delivered::Retry => CallbackOutcome::Retry,
                    Delivered::Failed => CallbackOutcome::Failed,
                });
            }
        };
        outbox
            .send_due(
                clock::epoch_ms(),
                limit,
                move |due| {
                    let sender = Arc::clone(&sender);
                    let delivery = notice(&due);
                    async move {
                        let body = delivery.body.to_string().into_bytes();
                        sender.deliver(&delivery.client, &delivery.url, body).await
                    }
                },
                heard,
            )
            .await
    }

    /// Posts `body` to `client`'s `url`, signed; `Err` says why it was not delivered (the
    /// notice keeps it for its client to read).
    pub async fn deliver(
        &self,
        client: &ClientName,
        url: &str,
        body: Vec<u8>,
    ) -> Result<(), String> {
        let secret = self.signing.secret_for(client);
        let outcome = match (&secret, &self.http) {
            (None, _) => Err(super::UNSIGNED.to_string()),
            (_, None) => Err(super::NO_CLIENT.to_string()),
            // Checked again at delivery, against the client's list now: it may have changed
            // since the notice was asked for (a reload, a restart).
            (Some(secret), Some(http)) => {
                let allowlist = self.allowlists.of(client);
                post_signed(http, url, &allowlist, secret, body).await
            }
        };
        if let Err(why) = &outcome {
            tracing::warn!(
                client = client.as_str(),
                host = %super::receiver_host(url),
                "notice callback not delivered: {why}"
            );
        }
        outcome
    }
}
