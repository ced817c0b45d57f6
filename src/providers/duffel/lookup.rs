//! Finding a booking the gateway sent to Duffel by the client and idempotency key it carries
//! in `metadata`: reconciliation asks it of a booking whose outcome is unknown, and a booking
//! Duffel refused as `duplicate_booking` asks it at once ([`whose_duplicate`]), so that the
//! call learns whether the booking found is its own.

use std::collections::BTreeMap;

use reqwest::Url;
use serde::de::DeserializeOwned;

use super::decode::decode;
use super::{DUFFEL_VERSION, DuffelClient, wire};
use crate::providers::booking::FoundBooking;
use crate::providers::error::{BOOKED_UNDER_ANOTHER_KEY, ErrorKind, UpstreamError};
use crate::providers::http::{read_body, send, traced, transport_error};
use crate::providers::redact::redacted;
use crate::tools::{WriteTerms, book_flight, book_hotel};

/// The order metadata key that carries the gateway's idempotency key; reconciliation finds
/// an order by it and [`CLIENT_METADATA`].
const IDEMPOTENCY_METADATA: &str = "faregate_idempotency_key";

/// The order metadata key that names the client the booking was made for. Idempotency keys
/// are each client's own, so a lookup by key alone could find another client's booking made
/// under the same key.
const CLIENT_METADATA: &str = "faregate_client";

/// How many pages of 200 orders a booking lookup reads before it gives up without concluding.
const LOOKUP_PAGES: usize = 5;

impl DuffelClient {
    /// The order of `client` under `idempotency_key`, newest first ([`Self::find_booking`]).
    pub(super) async fn find_order(
        &self,
        client: &str,
        idempotency_key: &str,
    ) -> Result<Option<wire::ListedOrder>, UpstreamError> {
        self.find_listed(&["air", "orders"], |o: &wire::ListedOrder| {
            carries_key(o.metadata.as_ref(), client, idempotency_key)
        })
        .await
    }

    /// The stays booking of `client` under `idempotency_key` ([`Self::find_booking`]).
    pub(super) async fn find_stay(
        &self,
        client: &str,
        idempotency_key: &str,
    ) -> Result<Option<wire::StaysBooking>, UpstreamError> {
        self.find_listed(&["stays", "bookings"], |b: &wire::StaysBooking| {
            carries_key(b.metadata.as_ref(), client, idempotency_key)
        })
        .await
    }

    /// Finds the booking of `tool` the gateway sent for `client` under `idempotency_key` (its
    /// `metadata.faregate_client` and `faregate_idempotency_key`; see [`carries_key`]): an
    /// order (`GET /air/orders`) or a stays booking
    /// (`GET /stays/bookings`). Duffel documents no metadata filter for either list, so the
    /// lookup reads pages of 200 (`limit`, `after`) and matches the metadata itself, up to
    /// [`LOOKUP_PAGES`] pages.
    pub async fn find_booking(
        &self,
        tool: &str,
        client: &str,
        idempotency_key: &str,
    ) -> Result<Option<FoundBooking>, UpstreamError> {
        if tool == book_flight::SPEC.name {
            let found = self.find_order(client, idempotency_key).await?;
            Ok(found.map(|order| FoundBooking {
                order_id: order.id,
                booking_reference: order.booking_reference,
                amount: order.total_amount,
                currency: order.total_currency,
            }))
        } else if tool == book_hotel::SPEC.name {
            let found = self.find_stay(client, idempotency_key).await?;
            found.map(stay_found).transpose()
        } else {
            Err(UpstreamError::new(
                ErrorKind::Misconfigured { status: 0 },
                format!("Duffel has no {tool} bookings to look up"),
            ))
        }
    }

    /// The newest item of the list at `path` that `wanted` picks, reading at most
    /// [`LOOKUP_PAGES`] pages; an error when none of those pages has it and more follow.
    async fn find_listed<T: DeserializeOwned>(
        &self,
        path: &[&str],
        wanted: impl Fn(&T) -> bool,
    ) -> Result<Option<T>, UpstreamError> {
        let mut after: Option<String> = None;
        for _ in 0..LOOKUP_PAGES {
            let mut url = self.url(path, &[]);
            url.query_pairs_mut().append_pair("limit", "200");
            if let Some(cursor) = &after {
                url.query_pairs_mut().append_pair("after", cursor);
            }
            let (items, next) = self.page::<T>(url).await?;
            if let Some(found) = items.into_iter().find(|i| wanted(i)) {
                return Ok(Some(found));
            }
            match next {
                Some(cursor) => after = Some(cursor),
                None => return Ok(None),
            }
        }
        Err(UpstreamError::new(
            ErrorKind::Server {
                status: 0,
                retry_after: None,
            },
            format!("no booking found in the newest {LOOKUP_PAGES} pages; not concluding"),
        ))
    }

    /// One page of a Duffel list and the cursor of the next, if any.
    async fn page<T: DeserializeOwned>(
        &self,
        url: Url,
    ) -> Result<(Vec<T>, Option<String>), UpstreamError> {
        let response = send(|| {
            traced(
                self.http
                    .get(url.clone())
                    .bearer_auth(self.token.expose())
                    .header("Duffel-Version", DUFFEL_VERSION)
                    .header(reqwest::header::ACCEPT, "application/json"),
            )
        })
        .await
        .map_err(transport_error)?;
        let status = response.status();
        let headers = response.headers().clone();
        // An echo of the access token is redacted before anything reads the answer.
        let bytes = redacted(read_body(response).await?, &[self.token.expose()]);
        let items: Vec<T> = decode(status, &headers, &bytes)?;
        let cursor = crate::providers::wire_json::from_slice::<wire::PageMeta>(&bytes)
            .ok()
            .and_then(|p| p.meta)
            .and_then(|m| m.after);
        Ok((items, cursor))
    }
}

/// Whether `metadata` carries `client`'s `idempotency_key`. A booking made before bookings
/// named their client carries the key alone, and is taken as any client's: only an upgrade
/// with a booking in doubt could meet one.
fn carries_key(
    metadata: Option<&BTreeMap<String, serde_json::Value>>,
    client: &str,
    idempotency_key: &str,
) -> bool {
    let text = |key: &str| metadata.and_then(|m| m.get(key)).and_then(|v| v.as_str());
    text(IDEMPOTENCY_METADATA) == Some(idempotency_key)
        && text(CLIENT_METADATA).is_none_or(|named| named == client)
}

/// The client a write is made for, as its booking's metadata names it (none: `""`, which
/// matches only a booking sent without one).
pub(super) fn made_for(terms: &WriteTerms) -> &str {
    terms.client.as_deref().unwrap_or_default()
}

/// What a booking Duffel refused as `duplicate_booking` (`refused`) came to for this call,
/// once `lookup` has looked for a booking under the call's own client and key:
/// - found: the booking this key made earlier, which the call answers as its own (the same
///   key never books twice, and the caller learns the booking it has);
/// - not found: the offer (or rate) was booked, but not under this key (by another client, or
///   by this one under another key). Nothing was booked for this call, and saying "the earlier
///   booking stands" would tell a traveller who holds none that they do;
/// - the lookup failed: the refusal as it came, an outcome unknown until reconciliation asks
///   again.
pub(super) async fn whose_duplicate<T>(
    refused: UpstreamError,
    lookup: impl Future<Output = Result<Option<T>, UpstreamError>>,
) -> Result<T, UpstreamError> {
    match lookup.await {
        Ok(Some(found)) => Ok(found),
        Ok(None) => Err(UpstreamError::new(
            ErrorKind::Rejected {
                message: format!(
                    "{BOOKED_UNDER_ANOTHER_KEY}: Duffel refused the booking as a duplicate and holds none under this call's idempotency key, so this call booked nothing and charged nothing"
                ),
            },
            format!(
                "{}; the provider holds no booking under this call's key",
                refused.detail
            ),
        )),
        Err(e) => {
            tracing::info!(error = %e, "after a duplicate_booking answer, the lookup of this call's own booking failed; its outcome is left to reconciliation");
            Err(refused)
        }
    }
}

/// The metadata a booking is sent with: the gateway's idempotency key and the client it is
/// made for, which reconciliation finds it by.
pub(super) fn key_metadata(terms: &WriteTerms) -> BTreeMap<String, String> {
    let mut metadata = BTreeMap::from([(
        IDEMPOTENCY_METADATA.to_string(),
        terms.idempotency_key.clone(),
    )]);
    if let Some(client) = &terms.client {
        metadata.insert(CLIENT_METADATA.to_string(), client.clone());
    }
    metadata
}

/// A listed booking as reconciliation records it: the amount is that of the one rate its
/// accommodation carries (a listed booking has no total of its own); a booking without one
/// cannot be recorded, and concludes nothing.
fn stay_found(booking: wire::StaysBooking) -> Result<FoundBooking, UpstreamError> {
    let Some((amount, currency)) = booking.booked_rate() else {
        return Err(UpstreamError::new(
            ErrorKind::Malformed,
            format!(
                "stays booking {} lists no rate to read its amount from",
                booking.id
            ),
        ));
    };
    Ok(FoundBooking {
        booking_reference: booking
            .reference
            .clone()
            .unwrap_or_else(|| booking.id.clone()),
        amount,
        currency,
        order_id: booking.id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(pairs: &[(&str, &str)]) -> BTreeMap<String, serde_json::Value> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
            .collect()
    }

    /// A booking is found by its client's key only; one made before bookings named their
    /// client is found by the key alone.
    #[test]
    fn a_booking_is_found_by_its_clients_key_only() {
        let mut terms = WriteTerms::new("trip-1".into());
        terms.client = Some("travel-app".into());
        let sent: BTreeMap<String, serde_json::Value> = key_metadata(&terms)
            .into_iter()
            .map(|(k, v)| (k, serde_json::Value::from(v)))
            .collect();
        assert!(carries_key(Some(&sent), "travel-app", "trip-1"));
        assert!(!carries_key(Some(&sent), "key-3b6424f5", "trip-1"));
        assert!(!carries_key(Some(&sent), "travel-app", "trip-2"));
        let legacy = metadata(&[(IDEMPOTENCY_METADATA, "trip-1")]);
        assert!(carries_key(Some(&legacy), "travel-app", "trip-1"));
        assert!(!carries_key(None, "travel-app", "trip-1"));
    }
}
