//! The task that holds each client's rate for the whole fleet: it tells the other replicas how
//! many calls of each client this one admitted and when its bucket is full again, charges their
//! calls to this replica's buckets ([`Rates::charge`](crate::clients::Rates::charge)) and keeps
//! each bucket no fuller than theirs ([`Rates::floor`](crate::clients::Rates::floor)), beside
//! the server and off the call path (a call is admitted or refused in memory, never after a
//! database round trip).
//!
//! While some client called here within the last 10 s, or some other replica's bucket of a
//! client is not full, it exchanges every 100 ms ([`SHARE_EVERY`]); otherwise it only reads,
//! every [`IDLE_LOOK`], and writes nothing (and with no rate configured, it runs no statement), so a client's first call on any replica is heard by
//! the others within about that long (a slow rate, one call in ten seconds, holds for the fleet
//! although no replica sees a second call). When PostgreSQL does not answer (each exchange is
//! bounded by [`STORE_WAIT`]) each replica goes on counting alone, as a replica without a
//! fleet does, says so once in its log, and rejoins when an exchange answers again. So what can
//! slip past a client's rate is, per replica, what it admits before it hears of the others'
//! calls (at most one burst), or everything while the database is away. The buckets' instants
//! cross replicas as wall-clock times, so replicas' clocks must agree (NTP) to well under a
//! rate's interval.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::limits::{ClientId, ClientLimits};
use crate::clients::{Heard, SHARE_EVERY, SharedRates, Told};
use crate::store::within;

/// The longest an exchange may take before this replica goes on alone for the moment.
const STORE_WAIT: Duration = Duration::from_secs(1);
/// How often a replica with no client calling it lately, and no other replica's bucket heard
/// of that is not full, reads again.
const IDLE_LOOK: Duration = Duration::from_millis(250);
/// How often old rows (of replicas gone, of clients gone quiet) are deleted.
const FORGET_EVERY: Duration = Duration::from_secs(60);

/// Shares `limits`' counts through `shared` until `stop`.
pub(crate) async fn share(limits: Arc<ClientLimits>, shared: SharedRates, stop: CancellationToken) {
    let mut heard = Heard::default();
    let mut alone = false;
    let mut forgot_at = Instant::now();
    let mut wait = IDLE_LOOK;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
        }
        if !limits.any_rate() {
            wait = IDLE_LOOK;
            continue;
        }
        let now = Instant::now();
        let now_ms = crate::clock::epoch_ms();
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        let told: Vec<Told> = limits
            .rates
            .admitted(now)
            .into_iter()
            .map(|a| Told {
                client: a.client.shared_key(),
                admitted: a.count,
                since_ms: now_ms.saturating_sub(ms(a.stretch_age)),
                full_at_ms: now_ms.saturating_add(ms(a.full_in)),
            })
            .collect();
        let busy_here = !told.is_empty();
        match within(STORE_WAIT, shared.exchange(&told, now_ms)).await {
            Ok(read) => {
                if alone {
                    alone = false;
                    tracing::info!(
                        "client limits: the store answers again; client rates hold for the fleet again"
                    );
                }
                let now = Instant::now();
                let news = heard.since_last(read, now_ms);
                let busy_there = !news.full_at_ms.is_empty();
                for (key, calls) in news.calls {
                    if let Some(client) = ClientId::from_shared_key(&key) {
                        limits.rates.charge(&client, calls, now);
                    }
                }
                for (key, full_at_ms) in news.full_at_ms {
                    if let Some(client) = ClientId::from_shared_key(&key) {
                        let ahead = u64::try_from(full_at_ms.saturating_sub(now_ms)).unwrap_or(0);
                        let full_at = now + Duration::from_millis(ahead);
                        limits.rates.floor(&client, full_at, now);
                    }
                }
                wait = if busy_here || busy_there {
                    SHARE_EVERY
                } else {
                    IDLE_LOOK
                };
            }
            Err(e) => {
                wait = if busy_here { SHARE_EVERY } else { IDLE_LOOK };
                if !alone {
                    alone = true;
                    tracing::warn!(error = %e, "client limits: the store does not answer; each client's rate is counted by this replica alone until it does");
                }
            }
        }
        if forgot_at.elapsed() >= FORGET_EVERY {
            forgot_at = Instant::now();
            if let Err(e) = within(STORE_WAIT, shared.forget_old(crate::clock::epoch_ms())).await {
                tracing::debug!(error = %e, "client limits: old rows were not deleted this time");
            }
        }
    }
}
