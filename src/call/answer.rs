//! The two answer policies: what a call that got no fresh answer says.
//!
//! The pipeline only reports what happened ([`Failure`]); these two pure functions decide what
//! that means for whoever asked:
//!
//! - [`interactive`]: a model is waiting, so it gets an envelope now, in this order: a client
//!   that holds its share of the tool, or is over its share of every provider's rate-limit
//!   window the chain tried, is told so (`rejected` with its `limit`: its own doing, so neither
//!   a stale result nor the fallback, which would call the tool failing), else the
//!   provider's refusal (the model can fix it), else the last good result for the same
//!   arguments (`stale`, with its age), else for a write that may have reached the provider
//!   "outcome unknown" (never "nothing was booked"), else for a write the provider says it did
//!   not carry out "not booked", else for a chain whose every provider is in a scheduled
//!   maintenance window the maintenance text (each window's why and until when, and the first
//!   end as the tool's return), else the tool's fallback text (a write that failed before its
//!   request was sent gets it too: nothing was booked);
//! - [`background`]: nobody waits, so a job gets a [`Verdict`]: later (with the wait the
//!   provider side asked for, cut to the soonest another provider of the chain is back, or the
//!   first maintenance window's end, as its anchor; also a
//!   write that failed before its request was sent, which is as safe to repeat as a read, a
//!   job whose client held its share of the tool, as a full bulkhead, and a job whose client
//!   was over its share of the providers' windows, anchored on the first reset), or
//!   never (a refusal, a write the provider says it did not carry out, or a write whose outcome
//!   is unknown: repeating it could book twice).
//!
//! They take everything they need as values ([`Interactive`], [`Background`]), gathered by the
//! gateway at the moment of answering, so their tables are tested without a clock or a provider.

use std::time::Duration;

use super::envelope::{CallInfo, Data, Envelope};
use super::last_good::GoodResult;
use super::outcome::{Failure, Held, OverProvider, OverShare, Success};
use crate::breaker::BreakerState;
use crate::clients::{PROVIDER_SHARE_LIMIT, SHARE_LIMIT};
use crate::providers::{ErrorKind, UpstreamError, WriteEffect};
use crate::texts::call as texts;

/// The retry estimate after a transient failure that left the breaker closed.
pub(super) const TRANSIENT_RETRY: Duration = Duration::from_secs(10);

/// What the interactive answer is made from, besides the failure.
#[derive(Debug, Clone)]
pub(super) struct Interactive<'a> {
    /// The call; its `breaker` is the first breaker's state when the call started.
    pub(super) info: CallInfo,
    /// Whether the tool is a write.
    pub(super) write: bool,
    /// Whether the tool's answers are prices or availability (`ToolSpec::priced`), which a
    /// stale answer's text tells the model to confirm before booking.
    pub(super) priced: bool,
    /// The provider the failure names, or when it names none the first of the chain no
    /// maintenance window holds (the one the call was waiting on), else the first.
    pub(super) provider: &'a str,
    /// That provider's breaker now.
    pub(super) breaker: Option<BreakerState>,
    /// Whether that provider's latest calls failed (its breaker counts a run of failures); asked
    /// only of a passed deadline, false otherwise.
    pub(super) failing_run: bool,
    /// How much longer that breaker stays open.
    pub(super) remaining_open: Option<Duration>,
    /// The soonest another provider that failed the call may be asked again (its breaker's
    /// remaining open time, its window's end, or the transient estimate): the chain answers
    /// again when its first provider does.
    pub(super) others_back: Option<Duration>,
    /// The providers of the chain held by maintenance windows, for a failure that is not a
    /// maintenance failure: named apart, as held and until when, not as failing.
    pub(super) held: Vec<Held>,
    /// The tool's attempt timeout: a full bulkhead frees a slot within it.
    pub(super) timeout: Duration,
    /// The tool's bulkhead (`max_concurrent`), which a full one's text names.
    pub(super) max_concurrent: u32,
    /// The last good result for the same arguments and its age, when one may be served.
    pub(super) stale: Option<(&'a GoodResult, Duration)>,
    /// The tool's fallback prompt.
    pub(super) fallback: &'a str,
    /// The other tools whose breakers admit calls now.
    pub(super) available_tools: &'a [String],
    /// The tool's providers whose quota is used up, with the time until it resets.
    pub(super) quota_exhausted: &'a [(String, Duration)],
}

/// What the background verdict is made from, besides the failure.
#[derive(Debug, Clone)]
pub(super) struct Background {
    /// The call (no breaker: a job's result names none unless a provider answered).
    pub(super) info: CallInfo,
    /// Whether the tool is a write.
    pub(super) write: bool,
    /// How much longer the breaker of the provider the failure names stays open.
    pub(super) remaining_open: Option<Duration>,
    /// The soonest another provider that failed the job may be asked again, as for
    /// [`Interactive::others_back`]: a wait the failure asks for is cut to it, since the chain
    /// answers again when its first provider does.
    pub(super) others_back: Option<Duration>,
}

/// What one background attempt came to, for the job system.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// Done; the envelope is the result.
    Done(Envelope),
    /// Not now: try again after at least `anchor`, silently.
    Later {
        /// The wait the provider side asked for (the breaker's remaining open time or the
        /// provider's `Retry-After`), if known, cut to the soonest another provider of the
        /// chain is back.
        anchor: Option<Duration>,
        /// The failure, for `last_error`.
        error: String,
        /// Whether a provider was reached (only those attempts count).
        attempted: bool,
        /// The provider answered 429 (the job system paces that tool's backlog from it).
        rate_limited: Option<RateLimitHit>,
    },
    /// Never: a refusal the model must fix, arguments no longer valid, or a write whose outcome
    /// is unknown.
    Never {
        /// The envelope to store and send, when there is one.
        envelope: Option<Envelope>,
        /// The reason, for `last_error`.
        error: String,
        /// Whether a provider was reached.
        attempted: bool,
    },
}

/// A provider's "too many requests" answer to a background attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimitHit {
    /// The provider's `Retry-After`, if it sent one (the time to its window's reset).
    pub retry_after: Option<Duration>,
}

/// The envelope of a provider's good answer, to either kind of call.
pub(super) fn fresh(info: CallInfo, success: Success) -> Envelope {
    let content = success.output.content();
    let data = Data::serialize(&success.output);
    let info = CallInfo {
        breaker: success.breaker.as_str().to_string(),
        ..info
    };
    Envelope::ok(info, content, data, success.provider)
}

/// How long a client refused for holding its share of a tool is told to wait: as the edge
/// tells a client over its calls in flight, a second (one of its calls may finish any moment).
pub(super) const SHARE_RETRY: Duration = Duration::from_secs(1);

/// The answer to a call refused because its client holds its share of the tool, or is over
/// its share of the rate-limit window of every provider the chain tried, when `failure` is
/// that refusal (`info` is given back otherwise). The client's own doing, not the tool's: no
/// stale result and no fallback text (both would say the tool is failing), but `rejected`
/// naming the limit and how to keep under it, as the edge's 429 does (for a provider's window:
/// until it resets). It needs no fact of the tool's state, so the gateway asks it before
/// gathering them.
pub(super) fn limited(info: CallInfo, failure: &Failure) -> Result<Envelope, CallInfo> {
    match failure {
        Failure::ClientShareFull(OverShare {
            slots,
            max_concurrent,
            share,
        }) => {
            let content =
                texts::client_share_full(&info.tool, *slots, *max_concurrent, &share.to_string());
            Ok(Envelope::limited(
                info,
                content,
                SHARE_LIMIT,
                SHARE_RETRY.as_secs(),
            ))
        }
        Failure::ProviderShareFull { over } => {
            let Some(first) = OverProvider::first(over) else {
                return Err(info);
            };
            let o = &first.over;
            let reset_s = ceil_secs(o.reset_in);
            let others: Vec<&str> = over
                .iter()
                .filter(|other| other.provider != first.provider)
                .map(|other| other.provider.as_str())
                .collect();
            let reserve = o.reserve.to_string();
            let content =
                texts::client_share_of_provider(&info.tool, &share_said(first, &reserve), &others);
            Ok(Envelope::limited(
                info,
                content,
                PROVIDER_SHARE_LIMIT,
                reset_s,
            ))
        }
        _ => Err(info),
    }
}

/// The interactive answer to a failure.
pub(super) fn interactive(failure: &Failure, facts: Interactive<'_>) -> Envelope {
    let facts = match limited(facts.info, failure) {
        Ok(envelope) => return envelope,
        Err(info) => Interactive { info, ..facts },
    };
    let breaker = match failure {
        Failure::Breaker { rejected, .. } => Some(rejected.state),
        // A maintenance window acts as a breaker forced open.
        Failure::Maintenance { .. } => Some(BreakerState::ForcedOpen),
        _ => facts.breaker,
    };
    let info = CallInfo {
        breaker: breaker.map_or(facts.info.breaker.clone(), |s| s.as_str().to_string()),
        ..facts.info
    };
    let provider = facts.provider.to_string();

    // A refusal the model can fix is an answer, not an outage; but a backup listing nothing
    // while the provider before it is down is the outage's answer (the fallback below).
    let unlisted_behind = failure.unlisted_behind().is_some();
    if !unlisted_behind && let Some((message, error)) = refusal(failure) {
        let content = if error.is_refused_by_gateway() {
            message.to_string()
        } else if error.is_not_listed() {
            // The binding's sentence says what to check and that a later ask may find it.
            texts::rejected_background(&info.tool, message)
        } else if error.is_booked_under_another_key() {
            texts::booked_under_another_key(&info.tool, message)
        } else {
            texts::rejected(&info.tool, message, error.is_already_done(), facts.write)
        };
        return Envelope::rejected(info, content, provider);
    }

    let estimate = retry_estimate(failure, facts.remaining_open, facts.timeout);
    let retry_after_s = ceil_secs(facts.others_back.map_or(estimate, |o| o.min(estimate)));
    // Forced open by an operator: it stays so until someone hands it back, so no time of
    // return is known, and the configured fallback's "back in about N seconds" would be made up
    // (a stale answer says no time either).
    let forced_open = matches!(failure, Failure::Breaker { rejected, .. }
        if rejected.state == BreakerState::ForcedOpen);
    if let Some((entry, age)) = facts.stale {
        let content = texts::stale(&info.tool, age, &entry.content, facts.priced);
        return Envelope::stale(
            info,
            content,
            entry.data.clone(),
            age.as_secs(),
            (!forced_open).then_some(retry_after_s),
            entry.provider.clone(),
        )
        .with_content_tail(&entry.content);
    }
    if forced_open {
        let mut failed = failure.failed_providers();
        if failed.is_empty() {
            failed.push(&provider);
        }
        let content = texts::forced_open(
            &info.tool,
            &texts::providers(&failed),
            facts.available_tools,
        );
        return Envelope::unavailable(info, content, None, Some(provider));
    }
    // The caller's deadline passed first, on a read no provider failed, whose provider's
    // breaker admits calls and has not seen it fail since its last answer: not an outage the
    // gateway knows of, so no fallback ("down", "back in about N seconds") and no time to wait.
    if matches!(failure, Failure::DeadlinePassed)
        && !facts.write
        && !facts.failing_run
        && matches!(
            facts.breaker,
            Some(BreakerState::Closed | BreakerState::Ramp | BreakerState::ForcedClosed)
        )
    {
        let mut content = texts::deadline_cut(&info.tool, &provider);
        if !facts.held.is_empty() {
            content.push_str(&texts::held_note(&holds(&facts.held)));
        }
        return Envelope::unavailable(info, content, None, Some(provider));
    }
    // A full bulkhead asked no provider: the tool is busy here, and nothing is down.
    if matches!(failure, Failure::BulkheadFull) {
        let content = texts::busy(&info.tool, facts.max_concurrent, retry_after_s);
        return Envelope::unavailable(info, content, Some(retry_after_s), None);
    }
    let content = if let Failure::Maintenance { held } = failure
        && let Some(first) = Held::first(held)
    {
        texts::maintenance(&info.tool, &holds(held), first.until, facts.available_tools)
    } else if facts.write && may_have_executed(failure) {
        texts::uncertain_write(&info.tool, &provider)
    } else if facts.write && provider_says_not_done(failure) {
        texts::write_not_done(&info.tool, &provider)
    } else {
        // Every provider that failed, not only the last: "duffel and amadeus" tells the model
        // (and whoever reads the transcript) that the whole chain is down, not one provider. A
        // provider a window holds did not fail: it is named apart, with its window's end.
        let mut failed = failure.failed_providers();
        failed.retain(|p| !facts.held.iter().any(|h| h.provider == *p));
        // A backup that listed nothing did not fail: it answered what it knows.
        if unlisted_behind {
            failed.retain(|p| Some(*p) != failure.provider());
        }
        if failed.is_empty() {
            failed.push(&provider);
        }
        let mut text = texts::fallback(
            facts.fallback,
            &texts::FallbackValues {
                tool: &info.tool,
                retry_after_s,
                provider: &texts::providers(&failed),
                available_tools: facts.available_tools,
            },
        );
        if !facts.held.is_empty() {
            text.push_str(&texts::held_note(&holds(&facts.held)));
        }
        for (exhausted, left) in facts.quota_exhausted {
            text.push_str(&texts::quota_note(exhausted, &info.tool, *left));
        }
        text
    };
    Envelope::unavailable(info, content, Some(retry_after_s), Some(provider))
}

/// The background verdict on a failure.
///
/// A later verdict's anchor is the chain's: the wait the failure asks for (a `Retry-After`, the
/// breaker's remaining open time), cut to the soonest another provider of the chain is back
/// ([`Background::others_back`]). A failure that asks for no wait keeps none: the job's own
/// backoff then decides, and that provider may be asked again sooner than any other.
pub(super) fn background(failure: Failure, facts: Background) -> Verdict {
    let soonest = |anchor: Option<Duration>| {
        anchor.map(|anchor| facts.others_back.map_or(anchor, |back| back.min(anchor)))
    };
    let behind = failure
        .unlisted_behind_failed()
        .map(|f| (f.provider.clone(), f.misconfigured));
    match failure {
        Failure::Upstream {
            provider, error, ..
        } => match &error.kind {
            // Not listed now may be listed later (a backup that lists only days near today):
            // a read's job asks again, silently, as for an outage. Behind a provider that did
            // not answer, it is that outage, said as such, and the job waits for that provider.
            ErrorKind::Rejected { message } if error.is_not_listed() && !facts.write => {
                let (anchor, error) = match &behind {
                    Some((down, true)) => (
                        facts.others_back,
                        texts::unlisted_behind_misconfigured(&facts.info.tool, down, &provider),
                    ),
                    Some((down, false)) => (
                        facts.others_back,
                        texts::unlisted_behind_outage(&facts.info.tool, down, &provider),
                    ),
                    None => (None, texts::rejected_background(&facts.info.tool, message)),
                };
                Verdict::Later {
                    anchor,
                    error,
                    attempted: true,
                    rate_limited: None,
                }
            }
            ErrorKind::Rejected { message } => {
                let content = if error.is_refused_by_gateway() {
                    message.clone()
                } else {
                    texts::rejected_background(&facts.info.tool, message)
                };
                Verdict::Never {
                    error: content.clone(),
                    envelope: Some(Envelope::rejected(facts.info, content, provider)),
                    attempted: true,
                }
            }
            // Never repeat a write that may have been carried out.
            _ if facts.write && error.write_may_have_happened() => Verdict::Never {
                envelope: None,
                error: texts::uncertain_write(&facts.info.tool, &provider),
                attempted: true,
            },
            // The provider says the write was not carried out: final for the job, which says so.
            _ if facts.write && error.effect == WriteEffect::NotDone => {
                let content = texts::write_not_done(&facts.info.tool, &provider);
                Verdict::Never {
                    error: content.clone(),
                    envelope: Some(Envelope::unavailable(
                        facts.info,
                        content,
                        None,
                        Some(provider),
                    )),
                    attempted: true,
                }
            }
            kind => Verdict::Later {
                anchor: soonest(kind.retry_after().or(facts.remaining_open)),
                rate_limited: matches!(kind, ErrorKind::RateLimited { .. }).then(|| RateLimitHit {
                    retry_after: kind.retry_after(),
                }),
                error: format!("{provider}: {error}"),
                attempted: true,
            },
        },
        Failure::Breaker {
            provider, rejected, ..
        } => Verdict::Later {
            anchor: soonest(Some(rejected.retry_after)),
            error: format!("{provider}: {rejected}"),
            attempted: false,
            rate_limited: None,
        },
        // The job waits out the windows: its requeue is anchored on the first one's end.
        Failure::Maintenance { held } => {
            let first = Held::first(&held);
            Verdict::Later {
                anchor: first.map(|first| first.left),
                error: first.map_or_else(String::new, |first| {
                    texts::maintenance_background(&holds(&held), first.until)
                }),
                attempted: false,
                rate_limited: None,
            }
        }
        Failure::BulkheadFull => Verdict::Later {
            anchor: None,
            error: texts::bulkhead_full(),
            attempted: false,
            rate_limited: None,
        },
        // As a full bulkhead: silently later, no attempt counted (no provider was asked), the
        // requeue's own short wait (one of the client's calls may finish any moment).
        Failure::ClientShareFull(OverShare { slots, share, .. }) => Verdict::Later {
            anchor: None,
            error: texts::client_share_full_background(&facts.info.tool, slots, &share.to_string()),
            attempted: false,
            rate_limited: None,
        },
        // Silently later, no attempt counted (no provider was asked), until the first window
        // resets; not a 429 the pacer should learn from (the provider said nothing new).
        Failure::ProviderShareFull { over } => {
            let first = OverProvider::first(&over);
            Verdict::Later {
                anchor: first.map(|first| first.over.reset_in),
                error: first.map_or_else(String::new, |first| {
                    let reserve = first.over.reserve.to_string();
                    texts::client_share_of_provider_background(&share_said(first, &reserve))
                }),
                attempted: false,
                rate_limited: None,
            }
        }
        Failure::DeadlinePassed => Verdict::Later {
            anchor: None,
            error: texts::deadline_passed(),
            attempted: false,
            rate_limited: None,
        },
    }
}

/// What the texts say of a client over its share of `first`'s window (its reserve written as
/// `reserve`).
fn share_said<'a>(first: &'a OverProvider, reserve: &'a str) -> texts::ProviderShare<'a> {
    let o = &first.over;
    texts::ProviderShare {
        provider: &first.provider,
        sent: o.sent,
        total: o.total,
        clients: o.clients,
        remaining: o.remaining,
        limit: o.limit,
        reset_s: ceil_secs(o.reset_in),
        reserve,
    }
}

/// The providers held by maintenance windows, as the texts name them.
fn holds(held: &[Held]) -> Vec<texts::Hold<'_>> {
    held.iter()
        .map(|h| texts::Hold {
            provider: &h.provider,
            until: h.until,
            reason: &h.reason,
        })
        .collect()
}

/// The provider's refusal, when the failure is one.
fn refusal(failure: &Failure) -> Option<(&str, &UpstreamError)> {
    match failure {
        Failure::Upstream { error, .. } => match &error.kind {
            ErrorKind::Rejected { message } => Some((message, error)),
            _ => None,
        },
        _ => None,
    }
}

/// Whether a failed write may still have been carried out by the provider: it may have been
/// sent, and nothing says it was refused (see [`UpstreamError::write_may_have_happened`]).
fn may_have_executed(failure: &Failure) -> bool {
    match failure {
        Failure::Upstream { error, .. } => error.write_may_have_happened(),
        Failure::BulkheadFull
        | Failure::ClientShareFull(_)
        | Failure::ProviderShareFull { .. }
        | Failure::Breaker { .. }
        | Failure::Maintenance { .. }
        | Failure::DeadlinePassed => false,
    }
}

/// Whether the provider answered that the write was not carried out.
fn provider_says_not_done(failure: &Failure) -> bool {
    matches!(failure, Failure::Upstream { error, .. } if error.effect == WriteEffect::NotDone)
}

/// When calling again is worth it: the provider's own wait, else the breaker's remaining open
/// time, else the time a bulkhead slot needs to free, else a short estimate.
fn retry_estimate(
    failure: &Failure,
    remaining_open: Option<Duration>,
    timeout: Duration,
) -> Duration {
    match failure {
        Failure::Breaker { rejected, .. } => rejected.retry_after,
        Failure::Maintenance { held } => Held::first(held).map_or(TRANSIENT_RETRY, |f| f.left),
        Failure::Upstream { error, .. } => error
            .kind
            .retry_after()
            .or(remaining_open)
            .unwrap_or(TRANSIENT_RETRY),
        // A slot frees at the latest when the calls holding them time out.
        Failure::BulkheadFull => timeout.min(TRANSIENT_RETRY),
        Failure::ClientShareFull(_) => SHARE_RETRY,
        Failure::ProviderShareFull { over } => {
            OverProvider::first(over).map_or(TRANSIENT_RETRY, |first| first.over.reset_in)
        }
        // A caller that stopped waiting while the breaker opened (on the shared call's
        // failures): when it admits calls again.
        Failure::DeadlinePassed => remaining_open.unwrap_or(TRANSIENT_RETRY),
    }
}

/// Whole seconds, rounded up, at least 1: "retry in 0 s" would invite a hot loop.
fn ceil_secs(d: Duration) -> u64 {
    (d.as_millis().div_ceil(1000) as u64).max(1)
}
