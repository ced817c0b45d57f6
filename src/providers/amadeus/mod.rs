//! The Amadeus adapter: flight offers search and pricing, hotel list and hotel offers, and
//! on-demand flight status, in the Amadeus Self-Service wire format (`reference/travel-apis.md`
//! §1; enterprise customers use the same shapes).
//!
//! - **Auth**: an OAuth2 client-credentials token, cached, shared and fetched single-flight
//!   ([`token`]). A 401 that a new token cures refreshes it once and retries the call once.
//!   Token endpoint failures are this call's `UpstreamError`, so they count against the
//!   tool's breaker like any other failure.
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
//! - **`book_flight` is not served**: Flight Create Orders needs an airline consolidator
//!   contract in production and documents no idempotency key, so a booking could never be
//!   safely retried (travel-apis §1.6).
//!
//! Ids are provider-specific: Amadeus ids start with [`OFFER_PREFIX`] or [`HOTEL_PREFIX`], and
//! [`AmadeusClient::refuse`] answers `Rejected` at once for ids it did not issue (Duffel's
//! `off_…`/`srr_…`), so a chain never sends one provider's id to the other.

mod convert;
mod errors;
mod recent;
mod token;
mod wire;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode, Url};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::error::{ErrorKind, UpstreamError};
use super::http::{read_body, transport_error};
use super::secret::Secret;
use crate::tools::search_flights::CabinClass;
use crate::tools::{
    ToolOutput, ToolRequest, check_hotel_availability, get_flight_status, price_flight_offer,
    search_flights, search_hotels,
};
use recent::Recent;

/// The tools Amadeus serves (not `book_flight`; see the module docs).
pub const TOOLS: &[&str] = &[
    "search_flights",
    "price_flight_offer",
    "search_hotels",
    "check_hotel_availability",
    "get_flight_status",
];

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
    tokens: token::TokenSource,
    /// Searched flight offers (raw JSON, as pricing needs them) by faregate id.
    offers: Recent<Value>,
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
    body: Vec<u8>,
}

impl AmadeusClient {
    /// A client for `base_url` with the API key and secret.
    pub fn new(http: reqwest::Client, base_url: Url, client_id: Secret, secret: Secret) -> Self {
        let token_url = join(&base_url, &["v1", "security", "oauth2", "token"], &[]);
        let salt = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        AmadeusClient {
            tokens: token::TokenSource::new(http.clone(), token_url, client_id, secret),
            http,
            base_url,
            offers: Recent::new(OFFER_TTL, OFFER_CAPACITY),
            hotel_offers: Recent::new(OFFER_TTL, OFFER_CAPACITY),
            salt,
            seq: Arc::new(AtomicU64::new(1)),
        }
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
            ToolRequest::BookFlight(..) => Some(rejected(
                "bookings are not made through Amadeus by this gateway".into(),
                "book_flight routed to Amadeus",
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
        match request {
            ToolRequest::SearchFlights(a) => {
                self.search_flights(a).await.map(ToolOutput::SearchFlights)
            }
            ToolRequest::PriceFlightOffer(a) => {
                self.price_offer(a).await.map(ToolOutput::PriceFlightOffer)
            }
            ToolRequest::SearchHotels(a) => {
                self.search_hotels(a).await.map(ToolOutput::SearchHotels)
            }
            ToolRequest::CheckHotelAvailability(a) => self
                .hotel_availability(a)
                .await
                .map(ToolOutput::CheckHotelAvailability),
            ToolRequest::GetFlightStatus(a) => {
                self.flight_status(a).await.map(ToolOutput::GetFlightStatus)
            }
            ToolRequest::BookFlight(..) => Err(rejected(
                "bookings are not made through Amadeus by this gateway".into(),
                "book_flight routed to Amadeus",
            )),
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
        let token = self.tokens.get().await?;
        let reply = self.send_once(&method, &url, body, &token).await?;
        if reply.status == StatusCode::UNAUTHORIZED && errors::refreshable(&reply.body) {
            tracing::info!(
                path = url.path(),
                "Amadeus refused the access token; refreshing it and retrying once"
            );
            self.tokens.invalidate(&token);
            let token = self.tokens.get().await?;
            return self.send_once(&method, &url, body, &token).await;
        }
        Ok(reply)
    }

    async fn send_once(
        &self,
        method: &Method,
        url: &Url,
        body: Option<&Value>,
        token: &token::Token,
    ) -> Result<Reply, UpstreamError> {
        let mut req = self
            .http
            .request(method.clone(), url.clone())
            .bearer_auth(token.value.expose())
            .header(reqwest::header::ACCEPT, ACCEPT);
        if let Some(body) = body {
            // Every POST faregate sends is a search or a pricing: both need the override.
            req = req
                .header("X-HTTP-Method-Override", "GET")
                .header(
                    reqwest::header::CONTENT_TYPE,
                    "application/vnd.amadeus+json",
                )
                .body(body.to_string());
        }
        let response = req.send().await.map_err(transport_error)?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = read_body(response).await?;
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
        serde_json::from_slice(&reply.body).map_err(|e| {
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
            SystemTime::now(),
        )
    }

    /// A 400 carrying one of `codes`.
    fn is_400_with(reply: &Reply, codes: &[i64]) -> bool {
        reply.status == StatusCode::BAD_REQUEST
            && errors::codes(&errors::parse(&reply.body))
                .iter()
                .any(|c| codes.contains(c))
    }

    fn mint_offer_id(&self) -> String {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        let h =
            (self.salt ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        format!("{OFFER_PREFIX}{:016x}", h ^ (h >> 31))
    }

    async fn search_flights(
        &self,
        a: &search_flights::Args,
    ) -> Result<search_flights::Output, UpstreamError> {
        let post = !a.child_ages.is_empty() || a.max_connections.is_some_and(|m| m > 0);
        let path = ["v2", "shopping", "flight-offers"];
        let reply = if post {
            self.execute(Method::POST, self.url(&path, &[]), Some(&search_body(a)))
                .await?
        } else {
            let mut url = self.url(&path, &[]);
            {
                let mut q = url.query_pairs_mut();
                q.append_pair("originLocationCode", &a.origin)
                    .append_pair("destinationLocationCode", &a.destination)
                    .append_pair("departureDate", &a.departure_date)
                    .append_pair("adults", &a.adults.to_string());
                if let Some(r) = &a.return_date {
                    q.append_pair("returnDate", r);
                }
                if let Some(c) = a.cabin_class {
                    q.append_pair("travelClass", cabin(c));
                }
                if a.max_connections == Some(0) {
                    q.append_pair("nonStop", "true");
                }
                q.append_pair("max", &MAX_OFFERS.to_string());
            }
            self.execute(Method::GET, url, None).await?
        };
        let res: wire::FlightOffers = Self::decode("flight offers search", &reply)?;
        let carriers = res.dictionaries.map(|d| d.carriers).unwrap_or_default();
        let expires_at = expiry(self.offers.ttl());
        let mut offers = Vec::with_capacity(res.data.len());
        for raw in res.data {
            let typed: wire::FlightOffer = serde_json::from_value(raw.clone()).map_err(|e| {
                UpstreamError::new(
                    ErrorKind::Malformed,
                    format!(
                        "flight offers search: an offer does not match the documented shape: {e}"
                    ),
                )
            })?;
            let id = self.mint_offer_id();
            offers.push(convert::offer(&typed, &id, &carriers, &expires_at));
            self.offers.insert(id, raw);
        }
        offers.sort_by(|x, y| {
            crate::tools::amount_key(&x.total_amount)
                .total_cmp(&crate::tools::amount_key(&y.total_amount))
        });
        let total = offers.len() as u32;
        offers.truncate(usize::from(a.max_results.unwrap_or(10)));
        Ok(search_flights::Output {
            origin: a.origin.clone(),
            destination: a.destination.clone(),
            departure_date: a.departure_date.clone(),
            offers,
            total_offers: total,
        })
    }

    async fn price_offer(
        &self,
        a: &price_flight_offer::Args,
    ) -> Result<price_flight_offer::Output, UpstreamError> {
        let Some(raw) = self.offers.get(&a.offer_id) else {
            return Err(rejected(
                format!(
                    "offer {} is unknown or has expired (Amadeus offers can be priced for {} minutes after search_flights returned them); run search_flights again and price a new offer_id",
                    a.offer_id,
                    OFFER_TTL.as_secs() / 60
                ),
                "offer id not in the recent-offers map",
            ));
        };
        let body = json!({"data": {"type": "flight-offers-pricing", "flightOffers": [raw]}});
        let url = self.url(&["v1", "shopping", "flight-offers", "pricing"], &[]);
        let reply = self.execute(Method::POST, url, Some(&body)).await?;
        let res: wire::Pricing = Self::decode("flight offers price", &reply)?;
        let carriers = res.dictionaries.map(|d| d.carriers).unwrap_or_default();
        let Some(priced) = res.data.flight_offers.first() else {
            return Err(UpstreamError::new(
                ErrorKind::Malformed,
                "flight offers price: no flight offer in the answer",
            ));
        };
        let offer = convert::offer(priced, &a.offer_id, &carriers, &expiry(OFFER_TTL));
        Ok(price_flight_offer::Output {
            base_amount: priced.price.base.clone(),
            tax_amount: convert::tax(&offer.total_amount, priced.price.base.as_deref()),
            offer,
            passengers: priced
                .traveler_pricings
                .iter()
                .map(|t| price_flight_offer::OfferPassenger {
                    passenger_id: t.traveler_id.clone(),
                    passenger_type: convert::passenger_type(&t.traveler_type).to_string(),
                    age: None,
                })
                .collect(),
            price_guarantee_expires_at: None,
            requires_instant_payment: priced.instant_ticketing_required,
        })
    }

    async fn search_hotels(
        &self,
        a: &search_hotels::Args,
    ) -> Result<search_hotels::Output, UpstreamError> {
        let radius = a.radius_km.unwrap_or(5.0).ceil().clamp(1.0, 300.0) as u32;
        let (mut url, near) = match (a.latitude, a.longitude, a.city_code.as_deref()) {
            (Some(lat), Some(lon), city) => {
                let mut url = self.url(
                    &["v1", "reference-data", "locations", "hotels", "by-geocode"],
                    &[],
                );
                url.query_pairs_mut()
                    .append_pair("latitude", &format!("{lat:.5}"))
                    .append_pair("longitude", &format!("{lon:.5}"));
                (
                    url,
                    city.map_or_else(|| format!("{lat:.4},{lon:.4}"), str::to_string),
                )
            }
            (_, _, Some(code)) => {
                let mut url = self.url(
                    &["v1", "reference-data", "locations", "hotels", "by-city"],
                    &[],
                );
                url.query_pairs_mut().append_pair("cityCode", code);
                (url, code.to_string())
            }
            _ => {
                return Err(rejected(
                    "say where to search: a city_code or latitude and longitude".into(),
                    "no location",
                ));
            }
        };
        url.query_pairs_mut()
            .append_pair("radius", &radius.to_string())
            .append_pair("radiusUnit", "KM");
        let empty = search_hotels::Output {
            check_in_date: a.check_in_date.clone(),
            check_out_date: a.check_out_date.clone(),
            searched_near: near,
            hotels: Vec::new(),
            total_hotels: 0,
        };
        let reply = self.execute(Method::GET, url, None).await?;
        if Self::is_400_with(&reply, &[NOTHING_FOUND]) {
            return Ok(empty);
        }
        let mut listed = Self::decode::<wire::HotelList>("hotel list", &reply)?.data;
        listed.sort_by(|x, y| {
            let d = |h: &wire::ListedHotel| h.distance.map_or(f64::MAX, |d| d.value);
            d(x).total_cmp(&d(y))
        });
        listed.truncate(MAX_HOTELS);
        let per_room = a.adults.div_ceil(a.rooms.max(1)).clamp(1, 9);
        let batches = listed.chunks(HOTEL_BATCH).map(|chunk| {
            let ids: Vec<&str> = chunk.iter().map(|h| h.hotel_id.as_str()).collect();
            let mut url = self.url(&["v3", "shopping", "hotel-offers"], &[]);
            url.query_pairs_mut()
                .append_pair("hotelIds", &ids.join(","))
                .append_pair("adults", &per_room.to_string())
                .append_pair("checkInDate", &a.check_in_date)
                .append_pair("checkOutDate", &a.check_out_date)
                .append_pair("roomQuantity", &a.rooms.to_string())
                .append_pair("bestRateOnly", "true");
            self.hotel_batch(url)
        });
        let mut found = Vec::new();
        for batch in futures::future::join_all(batches).await {
            found.extend(batch?);
        }
        let by_id: BTreeMap<&str, &wire::ListedHotel> =
            listed.iter().map(|h| (h.hotel_id.as_str(), h)).collect();
        let mut hotels = Vec::new();
        for h in found.iter().filter(|h| h.available != Some(false)) {
            let Some(result) = convert::hotel(h, by_id.get(h.hotel.hotel_id.as_str()).copied())
            else {
                continue;
            };
            if let Some(offer_id) = result.hotel_result_id.strip_prefix(HOTEL_PREFIX) {
                self.hotel_offers.insert(
                    offer_id.to_string(),
                    HotelContext {
                        hotel_name: result.name.clone(),
                        check_in: a.check_in_date.clone(),
                        check_out: a.check_out_date.clone(),
                    },
                );
            }
            hotels.push(result);
        }
        hotels.sort_by(|x, y| {
            crate::tools::amount_key(&x.cheapest_total_amount)
                .total_cmp(&crate::tools::amount_key(&y.cheapest_total_amount))
        });
        let total = hotels.len() as u32;
        hotels.truncate(usize::from(a.max_results.unwrap_or(10)));
        Ok(search_hotels::Output {
            hotels,
            total_hotels: total,
            ..empty
        })
    }

    /// One Hotel Search request; "no rooms / no hotels" 400s are an empty batch.
    async fn hotel_batch(&self, url: Url) -> Result<Vec<wire::HotelOffers>, UpstreamError> {
        let reply = self.execute(Method::GET, url, None).await?;
        if Self::is_400_with(&reply, &NO_HOTEL_OFFERS) {
            return Ok(Vec::new());
        }
        Ok(
            Self::decode::<wire::HotelOffersResponse>("hotel search", &reply)?
                .data
                .into_vec(),
        )
    }

    async fn hotel_availability(
        &self,
        a: &check_hotel_availability::Args,
    ) -> Result<check_hotel_availability::Output, UpstreamError> {
        let offer_id = a
            .hotel_result_id
            .strip_prefix(HOTEL_PREFIX)
            .unwrap_or(&a.hotel_result_id);
        let context = self.hotel_offers.get(offer_id);
        let url = self.url(&["v3", "shopping", "hotel-offers"], &[offer_id]);
        let reply = self.execute(Method::GET, url, None).await?;
        let none = || check_hotel_availability::Output {
            hotel_result_id: a.hotel_result_id.clone(),
            hotel_name: context
                .as_ref()
                .map_or_else(|| "the hotel".to_string(), |c| c.hotel_name.clone()),
            check_in_date: context
                .as_ref()
                .map(|c| c.check_in.clone())
                .unwrap_or_default(),
            check_out_date: context
                .as_ref()
                .map(|c| c.check_out.clone())
                .unwrap_or_default(),
            available: false,
            rooms: Vec::new(),
        };
        // A-DG: "an empty response means the hotel is full"; 3664 says so explicitly.
        if Self::is_400_with(&reply, &[3664])
            || (reply.status.is_success() && reply.body.iter().all(u8::is_ascii_whitespace))
        {
            return Ok(none());
        }
        let res: wire::HotelOfferById = Self::decode("hotel offer", &reply)?;
        let Some(h) = res
            .data
            .map(wire::OneOrMany::into_vec)
            .and_then(|v| v.into_iter().next())
        else {
            return Ok(none());
        };
        let rooms: Vec<_> = if h.available == Some(false) {
            Vec::new()
        } else {
            h.offers.iter().map(convert::room).collect()
        };
        let first = h.offers.first();
        let mut out = none();
        out.hotel_name = h.hotel.name.clone().unwrap_or(out.hotel_name);
        if let Some(d) = first.and_then(|o| o.check_in_date.clone()) {
            out.check_in_date = d;
        }
        if let Some(d) = first.and_then(|o| o.check_out_date.clone()) {
            out.check_out_date = d;
        }
        out.available = !rooms.is_empty();
        out.rooms = rooms;
        Ok(out)
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
        let res: wire::DatedFlights = Self::decode("flight status", &reply)?;
        Ok(get_flight_status::Output {
            flights: res.data.iter().map(convert::flight_status).collect(),
        })
    }
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
    let at = chrono::Utc::now() + chrono::Duration::from_std(ttl).unwrap_or_default();
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn cabin(c: CabinClass) -> &'static str {
    match c {
        CabinClass::Economy => "ECONOMY",
        CabinClass::PremiumEconomy => "PREMIUM_ECONOMY",
        CabinClass::Business => "BUSINESS",
        CabinClass::First => "FIRST",
    }
}

/// The POST search body. Travellers are typed by age: under 2 a held infant on an adult's lap
/// (seated once every adult holds one), 2-11 a child, 12 and over an adult fare.
fn search_body(a: &search_flights::Args) -> Value {
    let mut ods = vec![wire::OriginDestination {
        id: "1".into(),
        origin_location_code: a.origin.clone(),
        destination_location_code: a.destination.clone(),
        departure_date_time_range: wire::DateRange {
            date: a.departure_date.clone(),
        },
    }];
    if let Some(r) = &a.return_date {
        ods.push(wire::OriginDestination {
            id: "2".into(),
            origin_location_code: a.destination.clone(),
            destination_location_code: a.origin.clone(),
            departure_date_time_range: wire::DateRange { date: r.clone() },
        });
    }
    let adults = u32::from(a.adults);
    let mut travelers: Vec<wire::Traveler> = (1..=adults)
        .map(|i| wire::Traveler {
            id: i.to_string(),
            traveler_type: "ADULT",
            associated_adult_id: None,
        })
        .collect();
    let mut held = 0u32;
    for age in &a.child_ages {
        let id = (travelers.len() + 1).to_string();
        let (traveler_type, associated_adult_id) = match age.0 {
            0..=1 if held < adults => {
                held += 1;
                ("HELD_INFANT", Some(held.to_string()))
            }
            0..=1 => ("SEATED_INFANT", None),
            2..=11 => ("CHILD", None),
            _ => ("ADULT", None),
        };
        travelers.push(wire::Traveler {
            id,
            traveler_type,
            associated_adult_id,
        });
    }
    let od_ids: Vec<String> = ods.iter().map(|o| o.id.clone()).collect();
    let query = wire::FlightOffersQuery {
        origin_destinations: ods,
        travelers,
        sources: vec!["GDS"],
        search_criteria: wire::SearchCriteria {
            max_flight_offers: MAX_OFFERS,
            flight_filters: wire::FlightFilters {
                cabin_restrictions: a
                    .cabin_class
                    .map(|c| wire::CabinRestriction {
                        cabin: cabin(c),
                        coverage: "MOST_SEGMENTS",
                        origin_destination_ids: od_ids,
                    })
                    .into_iter()
                    .collect(),
                connection_restriction: a.max_connections.map(|m| wire::ConnectionRestriction {
                    max_number_of_connections: m,
                }),
            },
        },
    };
    serde_json::to_value(query).unwrap_or(Value::Null)
}
