//! What one client may take of what every client shares: its share of a tool's bulkhead
//! ([`Share`], taken once per call) and its share of each provider's rate-limit window
//! (asked before every attempt, [`admit_client`]; and before a read leads a call other
//! clients may join, [`check_provider_shares`]). A provider whose breaker is open for everyone
//! tells no client from another, so it is left out of both (its own answer is the truer one).

use tokio::time::Instant;

use super::Context;
use crate::breaker::BreakerState;
use crate::call::outcome::{Failure, OverProvider, OverShare};
use crate::call::served::{Route, ServedTool};
use crate::clients::{ClientName, ProviderReserve, ShareSlot, ToolShare};
use crate::tools::ToolRequest;

/// Whose share of the tool's bulkhead a run of the pipeline counts against.
#[derive(Debug)]
pub(in crate::call) enum Share<'a> {
    /// No client's: one client calls the gateway (nobody to starve), or the gateway asks the
    /// tool itself (a back-in-service probe).
    Free,
    /// `client`'s, which holds at most `share` of the tool's slots: taken with the bulkhead.
    Client {
        /// The client the call is for.
        client: &'a ClientName,
        /// Its share of each tool.
        share: ToolShare,
    },
    /// Taken already: a read takes it before it leads a call that identical reads share, so
    /// that a refusal is the caller's alone and never handed to another client that joined.
    Taken(ShareSlot),
}

/// Takes a slot of the client's share of `tool` (nothing to take for [`Share::Free`]), or
/// refuses: the client holds its share already (a [`Failure::ClientShareFull`] once converted). A refusal is counted
/// (`faregate_client_limited_total{limit="client_share_of_tool"}`) and logged, naming the
/// client, and no breaker hears of it.
pub(in crate::call) fn take_share(
    tool: &ServedTool,
    share: Share<'_>,
    cx: &Context<'_>,
) -> Result<ShareSlot, OverShare> {
    let (client, share) = match share {
        Share::Free => return Ok(ShareSlot::free()),
        Share::Taken(slot) => return Ok(slot),
        Share::Client { client, share } => (client, share),
    };
    let max_concurrent = tool.config.max_concurrent;
    let slots = share.slots(max_concurrent);
    // The whole bulkhead: the bulkhead alone bounds the client, and nothing is counted.
    if slots >= max_concurrent {
        return Ok(ShareSlot::free());
    }
    tool.shares.take(client, slots).map_err(|_| {
        tracing::info!(
            tool = tool.spec.name,
            call_id = cx.call.call_id,
            client = client.as_str(),
            slots,
            max_concurrent,
            "client holds its share of the tool; call refused"
        );
        let over = OverShare {
            slots,
            max_concurrent,
            share,
        };
        cx.observer
            .failed(tool.spec.name, &Failure::ClientShareFull(over));
        over
    })
}

/// Whether `route`'s breaker refuses every call now (open, or forced open).
pub(super) fn rejects_everyone(route: &Route, now: Instant) -> bool {
    matches!(
        route.breaker.state(now),
        BreakerState::Open | BreakerState::ForcedOpen
    )
}

/// Which of a tool's providers a read's client may reach now, for its share of each
/// provider's window ([`check_provider_shares`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::call) enum Reach {
    /// Every provider that owns the request would take it: the call may be shared.
    Every,
    /// Some would refuse this client and some take it: what it reaches is not what another
    /// client would, so its call runs alone.
    Some,
}

/// Refuses a read's client before it leads a call that other clients' identical reads may
/// join, when the pipeline would refuse it at every provider of the chain for its share of
/// the provider's window (`RateLimits::would_admit_client`, counting nothing): a refusal handed
/// to the callers who joined would be another client's answer. When only some would refuse it,
/// says so ([`Reach::Some`]): the shared call would go past a provider that would take the
/// others, and hand them that outcome. The pipeline asks again, and counts, at each attempt. A
/// refusal is counted and logged as the pipeline's.
pub(in crate::call) fn check_provider_shares(
    tool: &ServedTool,
    request: &ToolRequest,
    cx: &Context<'_>,
) -> Result<Reach, Box<Failure>> {
    let (Some(reserve), Some(client)) = (cx.provider_reserve, cx.call.client) else {
        return Ok(Reach::Every);
    };
    let now = Instant::now();
    let mut over = Vec::new();
    let mut takes = false;
    for route in &tool.routes {
        // A provider that does not own the request is skipped by the pipeline too.
        if route.upstream.refuse(request).is_some() {
            continue;
        }
        match cx
            .rate_limits
            .would_admit_client(&route.name, client, reserve, now)
        {
            Ok(()) => takes = true,
            // Open for everyone: no client reaches it, so it tells no client from another.
            Err(_) if rejects_everyone(route, now) => {}
            Err(refused) => over.push(OverProvider {
                provider: route.name.clone(),
                over: refused,
            }),
        }
    }
    if over.is_empty() {
        return Ok(Reach::Every);
    }
    if takes {
        return Ok(Reach::Some);
    }
    tracing::info!(
        tool = tool.spec.name,
        call_id = cx.call.call_id,
        client = client.as_str(),
        providers = over.len(),
        "client over its share of the provider's rate-limit window; not sent"
    );
    let refused = Failure::ProviderShareFull { over };
    cx.observer.failed(tool.spec.name, &refused);
    Err(Box::new(refused))
}

/// Whether the call's client may send a request to `route`'s provider now, by its share of the
/// provider's rate-limit window (`providers::RateLimits::admit_client`): the client whose
/// request was counted (to give it back if it is not sent after all), none when nothing was
/// counted (no share in force, the gateway's own probe), or the refusal, logged. A `retry` is
/// only counted.
pub(super) fn admit_client<'a>(
    tool: &ServedTool,
    route: &Route,
    (now, retry): (Instant, bool),
    span: &tracing::Span,
    cx: &Context<'a>,
) -> Result<Option<&'a ClientName>, Box<OverProvider>> {
    let (Some(reserve), Some(client)) = (cx.provider_reserve, cx.call.client) else {
        return Ok(None);
    };
    // With no reserve, the rule refuses nobody and the request is counted.
    let reserve = if retry { ProviderReserve::OFF } else { reserve };
    match cx
        .rate_limits
        .admit_client(&route.name, client, reserve, now)
    {
        Ok(()) => Ok(Some(client)),
        Err(over) => {
            cx.observer.over_provider_share(span);
            tracing::info!(
                tool = tool.spec.name,
                provider = %route.name,
                call_id = cx.call.call_id,
                client = client.as_str(),
                sent = over.sent,
                total = over.total,
                clients = over.clients,
                remaining = over.remaining,
                limit = over.limit,
                reset_in_ms = over.reset_in.as_millis() as u64,
                "client over its share of the provider's rate-limit window; not sent"
            );
            Err(Box::new(OverProvider {
                provider: route.name.clone(),
                over,
            }))
        }
    }
}
