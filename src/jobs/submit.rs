//! Accepting a background call: the same argument checks an interactive call gets (one call
//! into the gateway), a booking's idempotency key against the ledger (a key it holds for
//! another request is refused as the interactive call is), the callback URL against the
//! client's allowlist and the SSRF guard, before the job is stored (in the store, or in the
//! spool while the store does not answer). A job is only stored when it can run; the caller
//! learns what is wrong at once.

use reqwest::Url;

use super::callbacks::allowlist::Allowlists;
use super::callbacks::guard;
use super::callbacks::signing::{self, Signing};
use super::store::{NewJob, StoreError};
use crate::call::{CheckError, Gateway};

/// Why a background call was not accepted.
#[derive(Debug)]
pub enum SubmitError {
    /// The arguments are wrong (the text names every field).
    Invalid(String),
    /// No such tool.
    UnknownTool,
    /// The callback URL is not allowed, or callbacks are not configured.
    Callback(String),
    /// The store failed.
    Store(StoreError),
}

/// Where callbacks may go, as submission checks it.
#[derive(Debug, Clone)]
pub(super) struct CallbackRules {
    /// Each client's callback allowlist.
    pub(super) allowlists: Allowlists,
    /// The secret each client's callbacks are signed with (unsigned callbacks are never sent).
    pub(super) signing: Signing,
}

/// Checks `job` as a submission: its arguments, and its callback URL against the rules.
pub(super) async fn check(
    gateway: &Gateway,
    callbacks: &CallbackRules,
    job: &NewJob,
) -> Result<(), SubmitError> {
    match gateway.check_arguments(&job.tool, &job.arguments, job.idempotency_key.as_deref()) {
        Ok(()) => {}
        Err(CheckError::UnknownTool) => return Err(SubmitError::UnknownTool),
        Err(CheckError::Invalid(text)) => return Err(SubmitError::Invalid(text)),
    }
    if let Some(key) = &job.idempotency_key
        && let Some(text) = gateway
            .key_taken(job.client.as_str(), &job.tool, key, &job.arguments)
            .await
    {
        return Err(SubmitError::Invalid(text));
    }
    if let Some(url) = &job.callback_url {
        let parsed = Url::parse(url)
            .map_err(|e| SubmitError::Callback(format!("callback_url is not a URL: {e}")))?;
        guard::check_target(&parsed, &callbacks.allowlists.of(&job.client))
            .await
            .map_err(SubmitError::Callback)?;
        if callbacks.signing.secret_for(&job.client).is_none() {
            return Err(SubmitError::Callback(signing::NO_SECRET.into()));
        }
    }
    Ok(())
}
