//! The Amadeus adapter: flight offers search and pricing, hotel list and hotel offers, and
//! on-demand flight status, in the Amadeus Self-Service wire format (as its OpenAPI
//! specifications and developer guides document it; enterprise customers use the same shapes).
//!
//! - **Auth**: an OAuth2 client-credentials token, cached, shared and fetched single-flight
//!   (`providers/oauth2.rs`). A 401 that a new token cures refreshes it once and retries the
//!   call once.
//!   Token endpoint failures are this call's `UpstreamError`, so they count against the
//!   tool's breaker like any other failure.
//! - **Credentials echoed**: every answer is read with the access token in use, the API key
//!   and the API secret replaced by `[redacted]` wherever it echoes them (`super::redact`),
//!   before it is classified or decoded, so a refusal's `detail` never hands one to the model
//!   or the log; a token endpoint failure has the key and secret redacted the same way.
//! - **Media types**: requests send `Accept: application/json, application/vnd.amadeus+json`
//!   and bodies as `application/vnd.amadeus+json`; responses are parsed as JSON whatever
//!   their `Content-Type` says.
//! - **`search_flights`**: `GET /v2/shopping/flight-offers` when the query fits its
//!   parameters (adults only; any cabin; nonstop or any number of connections), else `POST`
//!   with `X-HTTP-Method-Override: GET`: children (each traveller typed by age) and a
//!   connection limit of 1 or 2 (`connectionRestriction`) need the POST body.
//! - **`price_flight_offer`**: Amadeus prices the *whole* offer object as search returned it,
//!   and an offer's own `id` is only unique within one answer. So search keeps each offer for
//!   [`OFFER_TTL`] in a bounded in-memory map and exposes it as `amx_<hex>`; pricing an
//!   unknown or expired id (or one from before a restart, or from another replica) is
//!   `Rejected` with "search again".
//! - **`search_hotels`**: Hotel List (`by-city`, or `by-geocode` when coordinates are given),
//!   then Hotel Search v3 for the nearest [`MAX_HOTELS`] hotels in batches of
//!   [`HOTEL_BATCH`] ids, run concurrently. Results are `amh_<offerId>` (the cheapest offer).
//! - **`check_hotel_availability`**: `GET /v3/shopping/hotel-offers/{offerId}`; an empty
//!   answer or 400 code 3664 means no rooms: `available: false`, not an error.
//! - **`get_flight_status`**: `GET /v2/schedule/flights`.
//! - **`book_flight` and `book_hotel` are not served**: Flight Create Orders needs an airline consolidator
//!   contract in production and documents no idempotency key, so a booking could never be
//!   safely retried.
//!
//! Ids are provider-specific: Amadeus ids start with [`OFFER_PREFIX`] or [`HOTEL_PREFIX`], and
//! [`AmadeusClient::refuse`] answers `Rejected` at once for ids it did not issue (Duffel's
//! `off_…`/`srr_…`), so a chain never sends one provider's id to the other.

mod convert;
mod decode;
mod errors;
mod flights;
mod hotels;
mod recent;
mod wire;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, SystemTime};

use hyper::body::Bytes;
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode, Url};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::error::{ErrorKind, UpstreamError};
use super::http::{read_body, send, traced, transport_error};
use super::oauth2::{Token, TokenSource};
use super::redact::{redacted, redacted_text};
use crate::secret::Secret;
use crate::tools::{ToolOutput, ToolRequest, get_flight_status};
pub use decode::decode_response;
use recent::Recent;

use super::kept::KeptOffers;

/// The tools Amadeus serves (not `book_flight`; see the module docs).
pub const TOOLS: &[&str] = &[
    "search_flights",
    "price_flight_offer",
    "search_hotels",
    "check_hotel_availability",
    "get_flight_status",
];

/// Whether the offers, hotels and rates this adapter hands out can be booked through this
/// gateway (their `bookable`): no, it serves neither booking tool (see the module docs), and a
/// booking provider never takes its ids. They are prices for comparison, and the tools' texts
/// say so.
const BOOKABLE: bool = false;

/// Prefix of the flight offer ids this adapter issues.
pub const OFFER_PREFIX: &str = "amx_";
/// Prefix of the hotel result ids this adapter issues (`amh_` + the Amadeus offer id).
pub const HOTEL_PREFIX: &str = "amh_";
/// How long a searched offer can be priced: the "about 30 minutes" search results promise.
pub const OFFER_TTL: Duration = Duration::from_secs(30 * 60);
/// How many searched offers are kept (a few KB each: tens of MB at most).
pub const OFFER_CAPACITY: usize = 5_000;
/// Hotel Search v3 takes at most 20 hotel ids per request.
pub const HOTEL_BATCH: usize = 20;
/// Hotels priced per search (the nearest ones), so one search makes at most 3 offer requests.
pub const MAX_HOTELS: usize = 60;
/// Offers asked of Flight Offers Search (the tool shows at most 50).
const MAX_OFFERS: u16 = 50;
/// Hotel Search 400 codes that mean "nothing to offer", not a bad request.
const NO_HOTEL_OFFERS: [i64; 2] = [3664, 424];
/// Hotel List 400 code "nothing found for requested city".
const NOTHING_FOUND: i64 = 895;
/// What Amadeus documents it answers with.
const ACCEPT: &str = "application/json, application/vnd.amadeus+json";

/// Whether an offer or hotel id was issued by this adapter.
pub fn owns_id(id: &str) -> bool {
    id.starts_with(OFFER_PREFIX) || id.starts_with(HOTEL_PREFIX)
}

fn rejected(message: String, detail: &str) -> UpstreamError {
    UpstreamError::new(ErrorKind::Rejected { message }, detail)
}

/// What a hotel search said about one offer, to describe it if it has sold out since.
#[derive(Debug, Clone)]
struct HotelContext {
    hotel_name: String,
    check_in: String,
    check_out: String,
}

/// An Amadeus API client for one configured provider; clones share the token and the maps.
#[derive(Debug, Clone)]
pub struct AmadeusClient {
    http: reqwest::Client,
    base_url: Url,
    tokens: TokenSource,
    /// The digest of the API key (the key names the account; the secret only proves it).
    account: String,
    /// Searched flight offers (raw JSON, as pricing needs them) by faregate id.
    offers: Recent<Value>,
    /// The same offers in the store, for other replicas and the next start.
    kept: Arc<KeptOffers>,
    /// Hotel offers handed out by search, by Amadeus offer id.
    hotel_offers: Recent<HotelContext>,
    /// Id minting: a per-process salt and a sequence.
    salt: u64,
    seq: Arc<AtomicU64>,
}

/// A response before classification.
struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl AmadeusClient {
    /// A client for `base_url` with the API key and secret.
    pub fn new(http: reqwest::Client, base_url: Url, client_id: Secret, secret: Secret) -> Self {
        let token_url = join(&base_url, &["v1", "security", "oauth2", "token"], &[]);
        let salt = crate::clock::system_now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        AmadeusClient {
            account: client_id.digest(),
            // Its token endpoint is under the base URL, on the API's own server: the same
            // client, HTTP/2 with prior knowledge too when the provider is configured so.
            tokens: TokenSource::new(
                "amadeus",
                http.clone(),
                token_url,
                (client_id, secret),
                |status, headers, body, now| {
                    errors::classify("token endpoint", status, headers, body, now)
                },
            ),
            http,
            base_url,
            offers: Recent::new(OFFER_TTL, OFFER_CAPACITY),
            kept: Arc::default(),
            hotel_offers: Recent::new(OFFER_TTL, OFFER_CAPACITY),
            salt,
            seq: Arc::new(AtomicU64::new(1)),
        }
    }

    /// The account this client calls, as the digest of its API key.
    pub fn account(&self) -> &str {
        &self.account
    }

    /// The same client, keeping the flight offers it hands out in `kept` too (shared with the
    /// other replicas and the next start once a store is attached).
    pub fn with_kept(mut self, kept: Arc<KeptOffers>) -> Self {
        self.kept = kept;
        self
    }

    /// `Some(Rejected)` for a request this adapter cannot serve whatever Amadeus says: an
    /// offer or hotel id another provider issued, or a booking.
    pub fn refuse(request: &ToolRequest) -> Option<UpstreamError> {
        match request {
            ToolRequest::PriceFlightOffer(a) if !a.offer_id.starts_with(OFFER_PREFIX) => {
                Some(rejected(
                    format!(
                        "offer_id {} was not issued by Amadeus (its ids start with {OFFER_PREFIX})",
                        a.offer_id
                    ),
                    "foreign offer id",
                ))
            }
            ToolRequest::CheckHotelAvailability(a)
                if !a.hotel_result_id.starts_with(HOTEL_PREFIX) =>
            {
                Some(rejected(
                    format!(
                        "hotel_result_id {} was not issued by Amadeus (its ids start with {HOTEL_PREFIX})",
                        a.hotel_result_id
                    ),
                    "foreign hotel id",
                ))
            }
            ToolRequest::BookFlight(..) | ToolRequest::BookHotel(..) => Some(rejected(
                "bookings are not made through Amadeus by this gateway".into(),
                "a booking routed to Amadeus",
            )),
            _ => None,
        }
    }

    /// Runs one tool request.
    pub async fn call(
        &self,
        request: &ToolRequest,
        _timeout: Duration,
    ) -> Result<ToolOutput, UpstreamError> {
        if let Some(refusal) = Self::refuse(request) {
            return Err(refusal);
        }
        // Each tool's future is boxed: inline, the largest of them (several KB) would size every
        // Amadeus call's, for as long as a slow provider holds it (memory per held call,
        // BENCHMARKS.md). One allocation per request is small beside the request.
        match request {
            ToolRequest::SearchFlights(a) => Box::pin(self.search_flights(a))
                .await
                .map(ToolOutput::SearchFlights),
            ToolRequest::PriceFlightOffer(a) => Box::pin(self.price_offer(a))
                .await
                .map(ToolOutput::PriceFlightOffer),
            ToolRequest::SearchHotels(a) => Box::pin(self.search_hotels(a))
                .await
                .map(ToolOutput::SearchHotels),
            ToolRequest::CheckHotelAvailability(a) => Box::pin(self.hotel_availability(a))
                .await
                .map(ToolOutput::CheckHotelAvailability),
            ToolRequest::GetFlightStatus(a) => Box::pin(self.flight_status(a))
                .await
                .map(ToolOutput::GetFlightStatus),
            ToolRequest::BookFlight(..) | ToolRequest::BookHotel(..) => Err(rejected(
                "bookings are not made through Amadeus by this gateway".into(),
                "a booking routed to Amadeus",
            )),
            ToolRequest::Configured(call) => Err(UpstreamError::new(
                ErrorKind::Misconfigured { status: 0 },
                format!(
                    "{} is a tool from configuration, served by http providers, not Amadeus",
                    call.tool
                ),
            )
            .before_write()),
        }
    }

    fn url(&self, fixed: &[&str], dynamic: &[&str]) -> Url {
        join(&self.base_url, fixed, dynamic)
    }

    /// Sends one request with a token; a 401 a new token cures refreshes it and retries once.
    async fn execute(
        &self,
        method: Method,
        url: Url,
        body: Option<&Value>,
    ) -> Result<Reply, UpstreamError> {
        let token = self.tokens.get().await.map_err(|e| self.scrubbed(e))?;
        let reply = self.send_once(&method, &url, body, &token).await?;
        if reply.status == StatusCode::UNAUTHORIZED && errors::refreshable(&reply.body) {
            tracing::info!(
                path = url.path(),
                "Amadeus refused the access token; refreshing it and retrying once"
            );
            self.tokens.invalidate(&token);
            let token = self.tokens.get().await.map_err(|e| self.scrubbed(e))?;
            return self.send_once(&method, &url, body, &token).await;
        }
        Ok(reply)
    }

    /// Every credential value a request with `token` carries or stands for: the access token,
    /// the API key and the API secret (an answer that echoes one of them has it replaced by
    /// `[redacted]` before anything reads it).
    fn secrets<'a>(&'a self, token: Option<&'a Token>) -> Vec<&'a str> {
        let mut secrets = vec![
            self.tokens.client_id().expose(),
            self.tokens.client_secret(),
        ];
        secrets.extend(token.map(|t| t.value.expose()));
        secrets
    }

    /// A token endpoint failure with the API key and secret it may echo redacted, in its
    /// detail and in the message a refusal carries.
    fn scrubbed(&self, mut e: UpstreamError) -> UpstreamError {
        let secrets = self.secrets(None);
        e.detail = redacted_text(&e.detail, &secrets);
        if let ErrorKind::Rejected { message } = &mut e.kind {
            *message = redacted_text(message, &secrets);
        }
        e
    }

    async fn send_once(
        &self,
        method: &Method,
        url: &Url,
        body: Option<&Value>,
        token: &Token,
    ) -> Result<Reply, UpstreamError> {
        // Every POST faregate sends is a search or a pricing: both need the override.
        // Bytes: the request shares them (a resend clones a handle, not the body).
        let body = body.map(|body| Bytes::from(body.to_string()));
        let response = send(|| {
            let req = self
                .http
                .request(method.clone(), url.clone())
                .bearer_auth(token.value.expose())
                .header(reqwest::header::ACCEPT, ACCEPT);
            traced(match &body {
                Some(body) => req
                    .header("X-HTTP-Method-Override", "GET")
                    .header(
                        reqwest::header::CONTENT_TYPE,
                        "application/vnd.amadeus+json",
                    )
                    .body(body.clone()),
                None => req,
            })
        })
        .await
        .map_err(transport_error)?;
        let status = response.status();
        let headers = response.headers().clone();
        // Before anything reads it: an answer that echoes a credential (`sent Bearer …`)
        // would hand it to the model, the envelope and the log.
        let body = redacted(read_body(response).await?, &self.secrets(Some(token)));
        Ok(Reply {
            status,
            headers,
            body,
        })
    }

    /// A success body as `T`; anything else classified.
    fn decode<T: DeserializeOwned>(what: &str, reply: &Reply) -> Result<T, UpstreamError> {
        if !reply.status.is_success() {
            return Err(Self::classify(what, reply));
        }
        crate::providers::wire_json::from_slice(&reply.body).map_err(|e| {
            UpstreamError::new(
                ErrorKind::Malformed,
                format!(
                    "{what}: HTTP {} body does not match Amadeus's documented shape: {e}",
                    reply.status.as_u16()
                ),
            )
        })
    }

    fn classify(what: &str, reply: &Reply) -> UpstreamError {
        errors::classify(
            what,
            reply.status,
            &reply.headers,
            &reply.body,
            crate::clock::system_now(),
        )
    }

    /// A 400 carrying one of `codes`.
    fn is_400_with(reply: &Reply, codes: &[i64]) -> bool {
        reply.status == StatusCode::BAD_REQUEST
            && errors::codes(&errors::parse(&reply.body))
                .iter()
                .any(|c| codes.contains(c))
    }

    async fn flight_status(
        &self,
        a: &get_flight_status::Args,
    ) -> Result<get_flight_status::Output, UpstreamError> {
        let mut url = self.url(&["v2", "schedule", "flights"], &[]);
        url.query_pairs_mut()
            .append_pair("carrierCode", &a.carrier_code)
            .append_pair("flightNumber", &a.flight_number)
            .append_pair("scheduledDepartureDate", &a.departure_date);
        let reply = self.execute(Method::GET, url, None).await?;
        status_output(&reply)
    }
}

/// A flight status answer as the tool's result.
fn status_output(reply: &Reply) -> Result<get_flight_status::Output, UpstreamError> {
    let res: wire::DatedFlights = AmadeusClient::decode("flight status", reply)?;
    Ok(get_flight_status::Output {
        flights: res.data.iter().map(convert::flight_status).collect(),
    })
}

/// `base` + fixed path segments + encoded dynamic segments.
fn join(base: &Url, fixed: &[&str], dynamic: &[&str]) -> Url {
    let mut url = base.clone();
    if let Ok(mut segs) = url.path_segments_mut() {
        segs.pop_if_empty();
        segs.extend(fixed);
        segs.extend(dynamic);
    }
    url
}

/// Now + `ttl` as RFC 3339.
fn expiry(ttl: Duration) -> String {
    let at = crate::clock::utc_now() + chrono::Duration::from_std(ttl).unwrap_or_default();
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
