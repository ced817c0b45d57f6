//! faregate's provider simulator: fake Duffel (Air and Stays) and Amadeus APIs, and the example
//! APIs the shipped tools from configuration call (a flight tracker in FlightAware AeroAPI's
//! format, a hotel-content service), with fault injection, as a library ([`Simulator`], [`serve`]) and as a command ([`SimArgs`], [`run`]) that
//! the `faregate-sim` binary and the gateway's `faregate sim` both start.
//!
//! # Why
//! faregate's value is how it behaves when providers are slow, failing or rate limiting. The
//! simulator lets the demo, the end-to-end tests and a developer's laptop exercise exactly that
//! without credentials or network: it speaks the wire formats Duffel's and Amadeus's public API
//! documentation describes (Duffel Air and Stays; Amadeus Self-Service flight offers, pricing,
//! hotels and flight status), so faregate's *real* adapters run against it, and every route
//! group can be made slow, flaky, rate limited, down, hung or malformed at run time. Data is
//! deterministic: the same seed and request give the same offers and hotels.
//!
//! # Why a crate of its own
//! It is a second program, a quarter the size of the gateway, and it shares no code with it: the
//! gateway's library does not depend on it, so neither production builds nor the gateway's unit
//! tests compile it. The `faregate` binary's `demo` and `sim` commands (its default `demo`
//! feature) and the gateway's integration tests use it as an ordinary dependency.
//!
//! # Provider routes (Duffel v2 formats)
//! | route | group |
//! |---|---|
//! | `POST /air/offer_requests?return_offers=&supplier_timeout=` | `duffel_air_search` |
//! | `GET /air/offers/{id}?return_available_services=` | `duffel_air_offers` |
//! | `POST /air/orders` | `duffel_air_orders` |
//! | `GET /air/orders?limit=&after=` (newest first; `meta.after` is the next page's cursor) | `duffel_air_order_list` |
//! | `POST /stays/search` | `duffel_stays` |
//! | `POST /stays/search_results/{id}/actions/fetch_all_rates` | `duffel_stays` |
//! | `POST /stays/quotes` (a rate `fetch_all_rates` showed; its price and availability checked again) | `duffel_stays` |
//! | `POST /stays/bookings` (`metadata.faregate_idempotency_key` deduplicated like orders) | `duffel_stays_bookings` |
//! | `GET /stays/bookings?limit=&after=` (newest first, paged like `GET /air/orders`) | `duffel_stays_booking_list` |
//!
//! # Provider routes (Amadeus Self-Service formats)
//! | route | group |
//! |---|---|
//! | `POST /v1/security/oauth2/token` (form body) | `amadeus_auth` |
//! | `GET /v2/shopping/flight-offers?originLocationCode=&…` | `amadeus_flights` |
//! | `POST /v2/shopping/flight-offers` (`X-HTTP-Method-Override: GET`) | `amadeus_flights` |
//! | `POST /v1/shopping/flight-offers/pricing` (`X-HTTP-Method-Override: GET`) | `amadeus_flights` |
//! | `GET /v1/reference-data/locations/hotels/by-city?cityCode=` and `/by-geocode?latitude=&longitude=` | `amadeus_hotels` |
//! | `GET /v3/shopping/hotel-offers?hotelIds=` (≤ 20) and `/v3/shopping/hotel-offers/{offerId}` | `amadeus_hotels` |
//! | `GET /v2/schedule/flights?carrierCode=&flightNumber=&scheduledDepartureDate=` | `amadeus_status` |
//!
//! The token endpoint accepts any non-empty `client_id`/`client_secret` and issues tokens with
//! `expires_in` (1799 s; [`Simulator::set_amadeus_token_lifetime`] shortens it for tests). Every
//! other Amadeus route needs `Authorization: Bearer <issued token>`: missing or malformed is
//! 401 38191 (with `code`/`status` as strings, like Amadeus's own example), unknown 38190, expired
//! 38192 ([`Simulator::revoke_amadeus_tokens`] forgets all tokens). POST searches and pricing
//! without `X-HTTP-Method-Override: GET` are 400. Answers are `application/vnd.amadeus+json`
//! (the token endpoint's `application/json`); errors are `{"errors":[{status, code, title,
//! detail, source}]}`; no rate-limit headers are sent (none are documented). Pricing accepts
//! only offers exactly as search served them (else 400 4926). Data comes from the same
//! generators as the Duffel routes; see `amadeus_flights`, `amadeus_hotels`, `amadeus_status`
//! for the simulator's choices where Amadeus's docs are silent.
//!
//! Every provider request needs `Authorization: Bearer <any non-empty token>` (else 401
//! `authentication_error`) and `Duffel-Version: v2` (missing: 400 `missing_version_header`;
//! other: 400 `unsupported_version`). Every provider response carries `x-request-id`,
//! `ratelimit-limit`, `ratelimit-remaining` and `ratelimit-reset` (an HTTP-date), and echoes
//! `x-client-correlation-id`. An `Accept` header that allows neither JSON nor `*/*` is 406.
//! Unknown paths get a Duffel-shaped 404 `not_found` (not counted in any group). Errors use
//! Duffel's envelope
//! `{"meta":{"status","request_id"},"errors":[{type,code,title,message,documentation_url,source?}]}`.
//!
//! Choices where Duffel's docs are silent:
//! - An expired offer is 422 `invalid_state_error`/`offer_no_longer_available`, on
//!   `GET /air/offers/{id}` as on `POST /air/orders`; an unknown id is 404 `not_found`.
//! - A second order carrying the same `metadata.faregate_idempotency_key` for the same
//!   `metadata.faregate_client` (or without one), or for an offer that was already booked, is
//!   422 `invalid_state_error`/`duplicate_booking`. Another client's same key books.
//! - Headers are checked after fault injection: an outage answers 503 even without a token.
//! - Without a `requests_per_minute` fault the rate-limit headers advertise 600 per fixed
//!   minute window per group, counting down, but nothing is enforced.
//!
//! # Example APIs (for tools from configuration)
//! | route | group |
//! |---|---|
//! | `GET /aeroapi/flights/{ident}` (FlightAware AeroAPI's format; see `flight_tracker.rs`) | `flight_tracker` |
//! | `GET /content/v1/hotels/{hotel_id}` (a hotel's content by its `acc_…` id; see `hotel_content.rs`) | `hotel_content` |
//!
//! The shipped example tools (`tools/track_flight.toml`, `tools/get_hotel_content.toml`) call
//! these through providers of kind `http`. They check no credential or version header, send
//! the `ratelimit-*` headers as the Duffel groups do, and answer errors (injected ones too) as
//! `{"title", "reason", "detail", "status"}`.
//!
//! # Determinism
//! Offer content (carriers, flight numbers, times, durations, prices, fare brands, baggage,
//! emissions) is a pure function of the seed and the search (slices, passengers, cabin,
//! `max_connections`); hotels are a pure function of the seed, the coordinates, the radius,
//! the dates, rooms and guests. What varies between two identical searches: ids (`orq_`,
//! `off_`, `sli_`, `seg_`, `pas_`, `srr_`, `rat_`, `ase_`, `ord_`; drawn from a per-simulator
//! sequence, so a fresh simulator with the same seed repeats them too) and timestamps
//! (`created_at`, `updated_at`, `expires_at` = now + 30 min, payment deadlines).
//! Accommodation ids (`acc_…`) are stable. Issued offers and stays search results are kept in
//! memory, the most recent 10,000 of each; a restarted simulator answers 404 for older ids.
//!
//! # Faults
//! A [`Fault`] per [`RouteGroup`] is applied before the handler, in this order:
//! `outage` (503 at once) → `hang` (no answer until the fault is cleared, then normal
//! processing, or until [`serve`] shuts down, then 503) → `latency_ms` → `requests_per_minute`
//! (a fixed one-minute window per group; over the limit: 429) → `rate_limited` (always 429 with
//! `retry_after_s`) → `error_rate` (deterministic: the n-th request under the fault fails when
//! `floor(n*rate)` grows, so rate 0.5 fails requests 2, 4, 6…; the count restarts when the fault
//! is set) → header checks → handler → `malformed` (a 2xx body is replaced by
//! `{"data":{"unexpected":true}}`: valid JSON of the wrong shape, status kept) →
//! `latency_after_ms` (the handler has run, so an order is created, and its answer is late: a
//! client that stops waiting does not learn of it).
//! A 429 carries `ratelimit-remaining: 0`, `ratelimit-reset` (HTTP-date) and `Retry-After`
//! (seconds). Hanging or slow requests of one group never block another group.
//! Amadeus groups render injected errors in Amadeus's shape (5xx code 38189, 429 code 38194
//! with `Retry-After`), and have one more fault, `quota_exhausted` (after `rate_limited`,
//! before `error_rate`): 429 code 38195, "Quota limit exceeded", with no `Retry-After`.
//!
//! # Admin HTTP API (under `/_sim`, JSON, no auth)
//! - `GET /_sim/faults`: every group's current fault, `{"duffel_air_search": {...}, ...}`.
//! - `PUT /_sim/faults/{group}` with a [`Fault`] body (missing fields take their defaults;
//!   unknown fields or out-of-range values are 400 `{"message": ...}`; unknown group is 404
//!   `{"message": ..., "valid_groups": [...]}`): stores it and answers 200 with the stored fault.
//! - `DELETE /_sim/faults`: clears every group; answers like `GET /_sim/faults`.
//! - `DELETE /_sim/faults/{group}`: clears one group; answers 200 with its (default) fault.
//! - `GET /_sim/stats`: [`SimStats`]: per group `requests`, `statuses`, `arrivals` (requests
//!   per Unix second, the last hour) and `dropped` (requests whose caller went away before the
//!   answer), orders created,
//!   duplicate bookings, orders per `faregate_idempotency_key`, and Amadeus tokens issued.
//! - `POST /_sim/script` with `{"steps": [{"after_ms", "price_factor"?, "flight"?,
//!   "delay_minutes"?, "gate"?}, …]}`: scripted changes over time (`script.rs`): from
//!   `after_ms` after the script was set, every flight offer's price times `price_factor`, or
//!   one flight's (`"BA117"`) delay and gate in `GET /v2/schedule/flights`; `GET` shows it and
//!   the factor now, `DELETE` clears it. [`Simulator::script`] does the same in a test.
//!
//! ```text
//! curl -X PUT localhost:8081/_sim/faults/duffel_air_search \
//!      -H 'content-type: application/json' -d '{"latency_ms":15000}'
//! curl -X PUT localhost:8081/_sim/faults/duffel_stays -H 'content-type: application/json' \
//!      -d '{"rate_limited":{"retry_after_s":30}}'
//! curl -X PUT localhost:8081/_sim/faults/duffel_air_orders -H 'content-type: application/json' \
//!      -d '{"error_rate":0.5,"error_status":502}'
//! curl -X PUT localhost:8081/_sim/faults/amadeus_flights -H 'content-type: application/json' \
//!      -d '{"quota_exhausted":true}'
//! curl -X DELETE localhost:8081/_sim/faults
//! curl localhost:8081/_sim/stats
//! ```

mod admin;
mod air_data;
mod amadeus_auth;
mod amadeus_flights;
mod amadeus_hotels;
mod amadeus_status;
mod amadeus_wire;
mod command;
mod data;
mod duffel_air;
mod duffel_air_orders;
mod duffel_stays;
mod duffel_stays_bookings;
mod faults;
mod flight_tracker;
mod hotel_content;
mod problem;
mod script;
mod server;
mod stays_data;
mod store;
mod tables;
mod validate;
mod wire;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};

pub use command::{SimArgs, run};
pub use faults::{Fault, RateLimitFault};
pub use script::ScriptStep;
pub use server::{MAX_CONCURRENT_STREAMS, serve};

/// A group of provider routes that share one fault setting and one set of counters.
///
/// Serialized (and parsed with [`FromStr`]) as the snake_case names used by the admin API.
/// More groups may be added, so match on it with a wildcard arm outside this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RouteGroup {
    /// `POST /air/offer_requests`.
    DuffelAirSearch,
    /// `GET /air/offers/{id}`.
    DuffelAirOffers,
    /// `POST /air/orders`.
    DuffelAirOrders,
    /// `POST /stays/search` and `POST /stays/search_results/{id}/actions/fetch_all_rates`.
    DuffelStays,
    /// Amadeus `POST /v1/security/oauth2/token`.
    AmadeusAuth,
    /// Amadeus Flight Offers Search (GET, POST) and Flight Offers Price.
    AmadeusFlights,
    /// Amadeus Hotel List and Hotel Search v3.
    AmadeusHotels,
    /// Amadeus On-Demand Flight Status.
    AmadeusStatus,
    /// `GET /air/orders` (the order lookups reconciliation makes, apart from bookings so that
    /// a test can fault one and not the other, and count order requests alone).
    DuffelAirOrderList,
    /// `POST /stays/bookings` (apart from the quote before it, which is `duffel_stays`).
    DuffelStaysBookings,
    /// `GET /stays/bookings` (the stays booking lookups reconciliation makes).
    DuffelStaysBookingList,
    /// The example flight tracker's `GET /aeroapi/flights/{ident}` (AeroAPI's format).
    FlightTracker,
    /// The example hotel-content API's `GET /content/v1/hotels/{hotel_id}`.
    HotelContent,
}

impl RouteGroup {
    /// Every group, in admin-API order.
    pub const ALL: [RouteGroup; 13] = [
        RouteGroup::DuffelAirSearch,
        RouteGroup::DuffelAirOffers,
        RouteGroup::DuffelAirOrders,
        RouteGroup::DuffelStays,
        RouteGroup::AmadeusAuth,
        RouteGroup::AmadeusFlights,
        RouteGroup::AmadeusHotels,
        RouteGroup::AmadeusStatus,
        RouteGroup::DuffelAirOrderList,
        RouteGroup::DuffelStaysBookings,
        RouteGroup::DuffelStaysBookingList,
        RouteGroup::FlightTracker,
        RouteGroup::HotelContent,
    ];

    /// The admin-API name, e.g. `duffel_air_search`.
    pub fn as_str(self) -> &'static str {
        match self {
            RouteGroup::DuffelAirSearch => "duffel_air_search",
            RouteGroup::DuffelAirOffers => "duffel_air_offers",
            RouteGroup::DuffelAirOrders => "duffel_air_orders",
            RouteGroup::DuffelStays => "duffel_stays",
            RouteGroup::AmadeusAuth => "amadeus_auth",
            RouteGroup::AmadeusFlights => "amadeus_flights",
            RouteGroup::AmadeusHotels => "amadeus_hotels",
            RouteGroup::AmadeusStatus => "amadeus_status",
            RouteGroup::DuffelAirOrderList => "duffel_air_order_list",
            RouteGroup::DuffelStaysBookings => "duffel_stays_bookings",
            RouteGroup::DuffelStaysBookingList => "duffel_stays_booking_list",
            RouteGroup::FlightTracker => "flight_tracker",
            RouteGroup::HotelContent => "hotel_content",
        }
    }

    /// Whether the group speaks Amadeus's wire format (errors, headers) rather than Duffel's.
    pub fn is_amadeus(self) -> bool {
        matches!(
            self,
            RouteGroup::AmadeusAuth
                | RouteGroup::AmadeusFlights
                | RouteGroup::AmadeusHotels
                | RouteGroup::AmadeusStatus
        )
    }

    /// Whether the group is one of the example APIs (the flight tracker and the hotel-content
    /// service), which answer errors with `problem.rs`'s object and check no headers.
    pub fn is_example(self) -> bool {
        matches!(self, RouteGroup::FlightTracker | RouteGroup::HotelContent)
    }

    /// The position in [`RouteGroup::ALL`] (and in the per-group state array).
    fn index(self) -> usize {
        match self {
            RouteGroup::DuffelAirSearch => 0,
            RouteGroup::DuffelAirOffers => 1,
            RouteGroup::DuffelAirOrders => 2,
            RouteGroup::DuffelStays => 3,
            RouteGroup::AmadeusAuth => 4,
            RouteGroup::AmadeusFlights => 5,
            RouteGroup::AmadeusHotels => 6,
            RouteGroup::AmadeusStatus => 7,
            RouteGroup::DuffelAirOrderList => 8,
            RouteGroup::DuffelStaysBookings => 9,
            RouteGroup::DuffelStaysBookingList => 10,
            RouteGroup::FlightTracker => 11,
            RouteGroup::HotelContent => 12,
        }
    }
}

impl fmt::Display for RouteGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing an unknown route group name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRouteGroup(pub String);

impl fmt::Display for UnknownRouteGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let valid: Vec<&str> = RouteGroup::ALL.iter().map(|g| g.as_str()).collect();
        write!(
            f,
            "unknown route group '{}'; valid groups: {}",
            self.0,
            valid.join(", ")
        )
    }
}

impl std::error::Error for UnknownRouteGroup {}

impl FromStr for RouteGroup {
    type Err = UnknownRouteGroup;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RouteGroup::ALL
            .into_iter()
            .find(|g| g.as_str() == s)
            .ok_or_else(|| UnknownRouteGroup(s.to_owned()))
    }
}

/// Counters since the simulator was created (faults do not reset them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SimStats {
    /// Requests and answered statuses per route group (every group is present).
    pub groups: BTreeMap<RouteGroup, GroupStats>,
    /// Orders created (201).
    pub orders_created: u64,
    /// Orders refused with 422 `duplicate_booking`.
    pub duplicate_bookings: u64,
    /// Per `metadata.faregate_idempotency_key` seen on `POST /air/orders`.
    pub orders_by_idempotency_key: BTreeMap<String, IdempotencyStats>,
    /// Amadeus access tokens issued by `POST /v1/security/oauth2/token`.
    #[serde(default)]
    pub amadeus_tokens_issued: u64,
    /// Stays bookings created (201 on `POST /stays/bookings`).
    #[serde(default)]
    pub stays_bookings_created: u64,
    /// Per `metadata.faregate_idempotency_key` seen on `POST /stays/bookings`.
    #[serde(default)]
    pub stays_bookings_by_idempotency_key: BTreeMap<String, IdempotencyStats>,
}

/// Counters of one route group.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupStats {
    /// Requests received, including ones still in flight (hung or slow).
    pub requests: u64,
    /// Responses sent, by HTTP status.
    pub statuses: BTreeMap<u16, u64>,
    /// Requests received per wall-clock second (Unix seconds → count), the last
    /// [`ARRIVAL_SECONDS`] seconds that saw any: load scripts read a breaker's ramp off it.
    #[serde(default)]
    pub arrivals: BTreeMap<u64, u64>,
    /// Requests whose caller went away before they were answered (the connection closed while
    /// a fault held them): a gateway that cancels a call shows here that the provider saw it
    /// dropped.
    #[serde(default)]
    pub dropped: u64,
}

/// How many seconds of per-second arrival counts a group keeps.
pub const ARRIVAL_SECONDS: usize = 3600;

impl GroupStats {
    /// Counts one request arriving at Unix second `second`, forgetting the oldest seconds
    /// beyond [`ARRIVAL_SECONDS`].
    pub(crate) fn arrive(&mut self, second: u64) {
        self.requests += 1;
        *self.arrivals.entry(second).or_insert(0) += 1;
        while self.arrivals.len() > ARRIVAL_SECONDS {
            self.arrivals.pop_first();
        }
    }
}

/// What happened to order attempts carrying one idempotency key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IdempotencyStats {
    /// Orders created with this key (at most 1).
    pub orders: u64,
    /// Later attempts refused as `duplicate_booking`.
    pub duplicates_rejected: u64,
}

/// The simulator: cheap to clone (an `Arc` inside), shared by its router and its tests.
#[derive(Debug, Clone)]
pub struct Simulator {
    inner: Arc<Inner>,
}

/// Shared state. The mutexes are `std::sync::Mutex`: every critical section is a few map
/// operations that never `.await`, so a blocking lock is cheaper than an async one.
#[derive(Debug)]
struct Inner {
    /// Seed of every generated offer and hotel.
    seed: u64,
    /// Per-group fault, limiter window and counters, indexed by [`RouteGroup::index`].
    groups: Mutex<[faults::GroupState; RouteGroup::ALL.len()]>,
    /// Orders and idempotency bookkeeping (feeds [`SimStats`]).
    orders: Mutex<store::OrderBook>,
    /// Issued offers (bounded).
    offers: Mutex<store::Bounded<store::StoredOffer>>,
    /// Issued stays search results (bounded).
    stays: Mutex<store::Bounded<store::StoredStay>>,
    /// Rates shown by `fetch_all_rates` and the quotes made of them (bounded).
    stay_rates: Mutex<store::StayRates>,
    /// Stays bookings and their idempotency bookkeeping (feeds [`SimStats`]).
    stay_bookings: Mutex<store::OrderBook>,
    /// Amadeus tokens, served flight offers, listed hotels and hotel offers (bounded).
    amadeus: Mutex<store::AmadeusState>,
    /// Scripted price and flight-status changes (`/_sim/script`).
    script: Mutex<script::Script>,
    /// Sequence for ids and request ids.
    seq: AtomicU64,
    /// Bumped on every fault change and at shutdown; hung requests wait on it.
    epoch: tokio::sync::watch::Sender<u64>,
    /// Set when [`serve`]'s shutdown future completes; hung and slow requests then end.
    closing: AtomicBool,
}

/// Locks a mutex, recovering from poisoning: a panicked request must not wedge the simulator.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Simulator {
    /// A simulator whose generated data derives from `seed`.
    pub fn new(seed: u64) -> Self {
        let (epoch, _) = tokio::sync::watch::channel(0);
        Simulator {
            inner: Arc::new(Inner {
                seed,
                groups: Mutex::new(Default::default()),
                orders: Mutex::new(store::OrderBook::default()),
                offers: Mutex::new(store::Bounded::new(store::CAPACITY)),
                stays: Mutex::new(store::Bounded::new(store::CAPACITY)),
                stay_rates: Mutex::new(store::StayRates::default()),
                stay_bookings: Mutex::new(store::OrderBook::default()),
                amadeus: Mutex::new(store::AmadeusState::default()),
                script: Mutex::new(script::Script::default()),
                seq: AtomicU64::new(1),
                epoch,
                closing: AtomicBool::new(false),
            }),
        }
    }

    /// Every provider route (each behind its group's fault layer) plus the admin routes under
    /// `/_sim`. Unknown paths get a Duffel-shaped 404.
    pub fn router(&self) -> Router {
        let group = |g: RouteGroup, r: Router<Simulator>| {
            r.route_layer(axum::middleware::from_fn_with_state(
                (self.clone(), g),
                faults::fault_layer,
            ))
        };
        let search = group(
            RouteGroup::DuffelAirSearch,
            Router::new().route(
                "/air/offer_requests",
                post(duffel_air::create_offer_request),
            ),
        );
        let offers = group(
            RouteGroup::DuffelAirOffers,
            Router::new().route("/air/offers/{id}", get(duffel_air::get_offer)),
        );
        let orders = group(
            RouteGroup::DuffelAirOrders,
            Router::new().route("/air/orders", post(duffel_air_orders::create_order)),
        );
        let order_list = group(
            RouteGroup::DuffelAirOrderList,
            Router::new().route("/air/orders", get(duffel_air_orders::list_orders)),
        );
        let stays = group(
            RouteGroup::DuffelStays,
            Router::new()
                .route("/stays/search", post(duffel_stays::search))
                .route(
                    "/stays/search_results/{id}/actions/fetch_all_rates",
                    post(duffel_stays::fetch_all_rates),
                )
                .route("/stays/quotes", post(duffel_stays_bookings::create_quote)),
        );
        let stay_bookings = group(
            RouteGroup::DuffelStaysBookings,
            Router::new().route(
                "/stays/bookings",
                post(duffel_stays_bookings::create_booking),
            ),
        );
        let stay_booking_list = group(
            RouteGroup::DuffelStaysBookingList,
            Router::new().route("/stays/bookings", get(duffel_stays_bookings::list_bookings)),
        );
        let amadeus_auth = group(
            RouteGroup::AmadeusAuth,
            Router::new().route("/v1/security/oauth2/token", post(amadeus_auth::token)),
        );
        let amadeus_flights = group(
            RouteGroup::AmadeusFlights,
            Router::new()
                .route(
                    "/v2/shopping/flight-offers",
                    get(amadeus_flights::search_get).post(amadeus_flights::search_post),
                )
                .route(
                    "/v1/shopping/flight-offers/pricing",
                    post(amadeus_flights::price),
                ),
        );
        let amadeus_hotels = group(
            RouteGroup::AmadeusHotels,
            Router::new()
                .route(
                    "/v1/reference-data/locations/hotels/by-city",
                    get(amadeus_hotels::by_city),
                )
                .route(
                    "/v1/reference-data/locations/hotels/by-geocode",
                    get(amadeus_hotels::by_geocode),
                )
                .route("/v3/shopping/hotel-offers", get(amadeus_hotels::offers))
                .route(
                    "/v3/shopping/hotel-offers/{offer_id}",
                    get(amadeus_hotels::offer),
                ),
        );
        let amadeus_status = group(
            RouteGroup::AmadeusStatus,
            Router::new().route("/v2/schedule/flights", get(amadeus_status::flights)),
        );
        let flight_tracker = group(
            RouteGroup::FlightTracker,
            Router::new().route("/aeroapi/flights/{ident}", get(flight_tracker::flights)),
        );
        let hotel_content = group(
            RouteGroup::HotelContent,
            Router::new().route("/content/v1/hotels/{hotel_id}", get(hotel_content::hotel)),
        );
        Router::new()
            .merge(search)
            .merge(offers)
            .merge(orders)
            .merge(order_list)
            .merge(stays)
            .merge(stay_bookings)
            .merge(stay_booking_list)
            .merge(amadeus_auth)
            .merge(amadeus_flights)
            .merge(amadeus_hotels)
            .merge(amadeus_status)
            .merge(flight_tracker)
            .merge(hotel_content)
            .merge(admin::routes())
            .fallback(faults::unknown_route)
            .with_state(self.clone())
    }

    /// Sets one group's fault (as `PUT /_sim/faults/{group}` does, values clamped to range).
    pub fn set_fault(&self, group: RouteGroup, fault: Fault) {
        let fault = fault.normalized();
        {
            let mut groups = lock(&self.inner.groups);
            groups[group.index()].set_fault(fault);
        }
        self.inner.epoch.send_modify(|e| *e += 1);
    }

    /// Replaces the script of price and flight-status changes with `steps`, timed from now
    /// (see `script.rs`); an empty list clears it. Refuses a step that changes nothing.
    pub fn script(&self, steps: Vec<ScriptStep>) -> Result<(), String> {
        if let Some(problem) = steps.iter().find_map(ScriptStep::problem) {
            return Err(problem);
        }
        *lock(&self.inner.script) = script::Script::new(steps);
        Ok(())
    }

    /// The factor on flight prices now (the script's; 1.0 without one).
    pub(crate) fn price_factor(&self) -> f64 {
        lock(&self.inner.script).price_factor()
    }

    /// Clears every group's fault.
    pub fn clear_faults(&self) {
        for g in RouteGroup::ALL {
            self.set_fault(g, Fault::default());
        }
    }

    /// One group's current fault.
    pub fn fault(&self, group: RouteGroup) -> Fault {
        lock(&self.inner.groups)[group.index()].fault.clone()
    }

    /// Sets the lifetime (`expires_in`) of Amadeus tokens issued from now on (default 1799 s).
    pub fn set_amadeus_token_lifetime(&self, lifetime: std::time::Duration) {
        lock(&self.inner.amadeus).tokens.lifetime = lifetime;
    }

    /// Forgets every Amadeus token issued so far: the next API call with one gets 401 38190.
    pub fn revoke_amadeus_tokens(&self) {
        lock(&self.inner.amadeus).tokens.revoke_all();
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> SimStats {
        let amadeus_tokens_issued = lock(&self.inner.amadeus).tokens.issued;
        let groups = lock(&self.inner.groups);
        let orders = lock(&self.inner.orders);
        let stay_bookings = lock(&self.inner.stay_bookings);
        SimStats {
            groups: RouteGroup::ALL
                .into_iter()
                .map(|g| (g, groups[g.index()].stats.clone()))
                .collect(),
            orders_created: orders.created,
            duplicate_bookings: orders.duplicates,
            orders_by_idempotency_key: orders.by_key.clone(),
            amadeus_tokens_issued,
            stays_bookings_created: stay_bookings.created,
            stays_bookings_by_idempotency_key: stay_bookings.by_key.clone(),
        }
    }

    /// The next value of the id sequence.
    pub(crate) fn next_seq(&self) -> u64 {
        self.inner.seq.fetch_add(1, Ordering::Relaxed)
    }

    /// A fresh Duffel-style id with the given prefix (`off`, `orq`, ...).
    pub(crate) fn new_id(&self, prefix: &str) -> String {
        wire::duffel_id(
            prefix,
            self.inner.seed ^ self.next_seq().wrapping_mul(0x9E37_79B9),
        )
    }
}
