//! The task that holds each client's rate for the whole fleet: it tells the other replicas how
//! many calls of each client this one admitted and charges their calls to this replica's
//! buckets ([`Rates::charge`](crate::clients::Rates::charge)), beside the server and off the
//! call path (a call is admitted or refused in memory, never after a database round trip).
//!
//! While some client called here within the last 10 s, it exchanges every 100 ms
//! ([`SHARE_EVERY`]); otherwise it looks again every [`IDLE_LOOK`] and runs no statement, so an
//! idle replica writes nothing (and a client's first calls wait at most that long to be told). When PostgreSQL does not answer (each exchange is
//! bounded by [`STORE_WAIT`]) each replica goes on counting alone, as a replica without a
//! fleet does, says so once in its log, and rejoins when an exchange answers again. So what can
//! slip past a client's rate is, per replica, what it admits between two exchanges (at most one
//! burst), or everything while the database is away.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::limits::{ClientId, ClientLimits};
use crate::clients::{ClientKey, Heard, SHARE_EVERY, SharedRates, Told};
use crate::store::within;

/// The longest an exchange may take before this replica goes on alone for the moment.
const STORE_WAIT: Duration = Duration::from_secs(1);
/// How often a replica with no client calling it lately looks again.
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
        let admitted = limits.rates.admitted(Instant::now());
        if admitted.is_empty() {
            wait = IDLE_LOOK;
            continue;
        }
        wait = SHARE_EVERY;
        let now_ms = crate::clock::epoch_ms();
        let mut clients: HashMap<ClientKey, ClientId> = HashMap::with_capacity(admitted.len());
        let told: Vec<Told> = admitted
            .into_iter()
            .map(|a| {
                let key = a.client.shared_key();
                clients.insert(key.clone(), a.client);
                let age_ms = i64::try_from(a.stretch_age.as_millis()).unwrap_or(i64::MAX);
                Told {
                    client: key,
                    admitted: a.count,
                    since_ms: now_ms.saturating_sub(age_ms),
                }
            })
            .collect();
        match within(STORE_WAIT, shared.exchange(&told, now_ms)).await {
            Ok(read) => {
                if alone {
                    alone = false;
                    tracing::info!(
                        "client limits: the store answers again; client rates hold for the fleet again"
                    );
                }
                let now = Instant::now();
                for (key, calls) in heard.since_last(read, now_ms) {
                    if let Some(client) = clients.get(&key) {
                        limits.rates.charge(client, calls, now);
                    }
                }
            }
            Err(e) => {
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
