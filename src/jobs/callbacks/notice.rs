//! Notices posted to a client's callback URL (a watch's news, a tool back in service): the job
//! callbacks' signature (`Faregate-Signature`, HMAC-SHA256 over `"<t>.<body>"` with the callback
//! secret), allowlist and SSRF guard, so a receiver of job callbacks checks a notice the same
//! way.
//!
//! A notice is delivered at least once: its row says `pending` until a 2xx, and a failed
//! delivery is tried again after a doubling wait ([`next_delivery_in`]), up to [`ATTEMPTS`]
//! times; the notice itself stays readable through the API whatever happens to the callback.
//! The rooms that keep notices (watches, back-in-service) lease and record each delivery in
//! their own rows; this module is only where a notice may go and how it is sent.

use std::time::Duration;

use reqwest::Url;

use super::{guard, post_signed};
use crate::policy::Backoff;
use crate::providers::Secret;

/// Deliveries before a notice's callback is given up.
pub const ATTEMPTS: u32 = 8;
/// The wait after the first failed delivery, doubling up to about 4 minutes.
const BACKOFF: Backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(256));

/// The wait before the next delivery after `failed` failed ones; `None` to give up.
pub fn next_delivery_in(failed: u32) -> Option<Duration> {
    (failed < ATTEMPTS).then(|| BACKOFF.ceiling(failed.saturating_sub(1)))
}

/// Where notices may go and how they are signed.
#[derive(Debug)]
pub struct NoticeSender {
    allowlist: Vec<Url>,
    secret: Option<Secret>,
    /// The guarded callback client; `None` if it could not be built (then deliveries fail and
    /// are retried, never sent without the guard).
    http: Option<reqwest::Client>,
}

impl NoticeSender {
    /// Notices to URLs in `allowlist`, signed with `secret` (none = callbacks refused).
    pub fn new(allowlist: Vec<Url>, secret: Option<Secret>) -> Self {
        let http = guard::client()
            .map_err(|e| tracing::error!(error = %e, "cannot build the notice HTTP client; notice callbacks will fail"))
            .ok();
        NoticeSender {
            allowlist,
            secret,
            http,
        }
    }

    /// Checks a notice's callback URL as a job's is checked, with a message naming the fix.
    pub async fn check(&self, url: &str) -> Result<(), String> {
        let parsed = Url::parse(url).map_err(|e| format!("callback_url is not a URL: {e}"))?;
        guard::check_target(&parsed, &self.allowlist).await?;
        if self.secret.is_none() {
            return Err("callbacks need a signing secret: set the variable named by auth.callback_secret_env on the gateway".into());
        }
        Ok(())
    }

    /// Posts `body` to `url`, signed; true on a 2xx.
    pub async fn deliver(&self, url: &str, body: Vec<u8>) -> bool {
        let (Some(secret), Some(http)) = (&self.secret, &self.http) else {
            return false;
        };
        // Checked again at delivery: the allowlist may have changed since the watch was made.
        match post_signed(http, url, &self.allowlist, secret, body).await {
            Ok(()) => true,
            Err(why) => {
                tracing::warn!(%url, "notice callback not delivered: {why}");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deliveries_wait_longer_each_time_then_give_up() {
        let waits: Vec<Option<Duration>> = (1..=ATTEMPTS).map(next_delivery_in).collect();
        assert_eq!(waits[0], Some(Duration::from_secs(1)));
        assert!(waits.windows(2).take(6).all(|w| w[0] < w[1]), "{waits:?}");
        assert_eq!(
            waits[ATTEMPTS as usize - 1],
            None,
            "given up after {ATTEMPTS}"
        );
    }
}
