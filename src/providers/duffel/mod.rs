//! The Duffel adapter: Air (offer requests, offers, orders) and Stays (search, all rates,
//! quotes and bookings, in `stays.rs`); a booking found by its client and key, for
//! reconciliation and after a `duplicate_booking`, in `lookup.rs`.
//!
//! It speaks Duffel's documented wire format (API v2, Air and Stays): bearer token,
//! `Duffel-Version: v2`, `{"data": …}` bodies, the documented error body and rate-limit
//! headers. Wire types stay inside this module; callers see [`ToolRequest`] in and
//! [`ToolOutput`] out, or an [`UpstreamError`] saying what went wrong.
//!
//! Every answer is read with the access token replaced by `[redacted]` wherever it echoes it
//! (`super::redact`), before it is classified or decoded: a refusal's message never hands it
//! to the model or the log.
//!
//! The host always comes from configuration. Ids that come from tool arguments are appended as
//! encoded path segments, so no argument can change where a request goes.

mod cities;
mod convert;
mod decode;
mod errors;
mod lookup;
mod stays;
mod wire;

use std::time::Duration;

use futures::FutureExt;
use hyper::body::Bytes;
use reqwest::{Method, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::error::{ErrorKind, UpstreamError};
use super::http::{read_body, send, traced, transport_error};
use super::limits::LimitsSink;
use super::redact::redacted;
use crate::secret::Secret;
use crate::texts::budget as budget_texts;
use crate::tools::search_flights::CabinClass;
use crate::tools::spend::{Amount, SpendLimit};
use crate::tools::{
    ToolOutput, ToolRequest, WriteTerms, book_flight, check_hotel_availability, price_flight_offer,
    search_flights, search_hotels,
};
pub use decode::decode_response;
use decode::{book_output, decode, flights_output, hotel_location, hotels_output, price_output};
use lookup::{key_metadata, made_for, whose_duplicate};

/// The API version this adapter speaks.
pub const DUFFEL_VERSION: &str = "v2";

/// The tools Duffel serves.
pub const TOOLS: &[&str] = &[
    "search_flights",
    "price_flight_offer",
    "search_hotels",
    "check_hotel_availability",
    "book_flight",
    "book_hotel",
];

/// Whether the offers, hotels and rates this adapter hands out can be booked through this
/// gateway (their `bookable`): yes, it serves book_flight and book_hotel with its own ids.
const BOOKABLE: bool = true;

/// A Duffel API client for one configured provider.
#[derive(Debug, Clone)]
pub struct DuffelClient {
    http: reqwest::Client,
    base_url: Url,
    token: Secret,
    /// The digest of `token`: which account this client calls (`Secret::digest`).
    account: String,
    /// Where the `ratelimit-*` headers of every answer go, for the background pacer.
    limits: Option<LimitsSink>,
}

impl DuffelClient {
    /// A client for `base_url` authenticating with `token`.
    pub fn new(http: reqwest::Client, base_url: Url, token: Secret) -> Self {
        DuffelClient {
            http,
            base_url,
            account: token.digest(),
            token,
            limits: None,
        }
    }

    /// The account this client calls, as the digest of its access token.
    pub fn account(&self) -> &str {
        &self.account
    }

    /// The same client, recording the rate-limit headers of every answer into `sink`.
    pub fn with_limits(mut self, sink: LimitsSink) -> Self {
        self.limits = Some(sink);
        self
    }

    /// Runs one tool request. `timeout` is the attempt's budget; Duffel's own
    /// `supplier_timeout` is set below it so Duffel answers with what it has in time.
    pub async fn call(
        &self,
        request: &ToolRequest,
        timeout: Duration,
    ) -> Result<ToolOutput, UpstreamError> {
        match request {
            ToolRequest::SearchFlights(a) => self
                .search_flights(a, timeout)
                .await
                .map(ToolOutput::SearchFlights),
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
            // The writes are boxed: their several requests (order, then its lookup) would
            // otherwise size every search's future too, for as long as a slow provider holds
            // it (memory per held call, BENCHMARKS.md).
            ToolRequest::BookFlight(a, terms) => Box::pin(self.book(a, terms, timeout))
                .await
                .map(ToolOutput::BookFlight),
            ToolRequest::BookHotel(a, terms) => Box::pin(self.book_stay(a, terms, timeout))
                .await
                .map(ToolOutput::BookHotel),
            ToolRequest::GetFlightStatus(_) => Err(UpstreamError::new(
                ErrorKind::Rejected {
                    message: "Duffel has no flight status API; configure a provider that does"
                        .into(),
                },
                "get_flight_status routed to Duffel",
            )),
            ToolRequest::Configured(call) => Err(UpstreamError::new(
                ErrorKind::Misconfigured { status: 0 },
                format!(
                    "{} is a tool from configuration, served by http providers, not Duffel",
                    call.tool
                ),
            )
            .before_write()),
        }
    }

    /// `base_url` + fixed path segments + encoded dynamic segments.
    fn url(&self, fixed: &[&str], dynamic: &[&str]) -> Url {
        let mut url = self.base_url.clone();
        if let Ok(mut segs) = url.path_segments_mut() {
            segs.pop_if_empty();
            segs.extend(fixed);
            segs.extend(dynamic);
        }
        url
    }

    /// One request, its answer decoded as `T`.
    fn send<T: DeserializeOwned>(
        &self,
        method: Method,
        url: Url,
        body: Option<Bytes>,
    ) -> impl Future<Output = Result<T, UpstreamError>> + Send + '_ {
        // `map`, not an `async fn`: that would keep its arguments beside `exchange`'s.
        self.exchange(method, url, body)
            .map(|answer| answer.and_then(|answer| answer.decode()))
    }

    /// One request and its whole answer, not yet decoded: the caller decodes types that
    /// borrow from the body. `body` is JSON already ([`data_json`]): the request shares its
    /// bytes, and nothing the caller built it from is kept while the provider answers.
    ///
    /// An `async move` block, not an `async fn` (which would keep its arguments twice), and the
    /// answer is read by a future boxed once it comes: a future is as large as its largest
    /// step, and this one is kept for as long as a slow provider holds the call (memory per
    /// held call, BENCHMARKS.md).
    #[allow(
        clippy::manual_async_fn,
        reason = "an async fn keeps its arguments twice while it waits (memory per held call)"
    )]
    fn exchange(
        &self,
        method: Method,
        url: Url,
        body: Option<Bytes>,
    ) -> impl Future<Output = Result<Answer, UpstreamError>> + Send + '_ {
        async move {
            let response = send(|| {
                let req = self
                    .http
                    .request(method.clone(), url.clone())
                    .bearer_auth(self.token.expose())
                    .header("Duffel-Version", DUFFEL_VERSION)
                    .header(reqwest::header::ACCEPT, "application/json");
                traced(match &body {
                    Some(json) => req
                        .header(reqwest::header::CONTENT_TYPE, "application/json")
                        .body(json.clone()),
                    None => req,
                })
            })
            .await
            .map_err(transport_error)?;
            Box::pin(self.answer(response)).await
        }
    }

    /// The answer to a request, read whole; its rate-limit headers go to the pacer.
    async fn answer(&self, response: reqwest::Response) -> Result<Answer, UpstreamError> {
        let status = response.status();
        let headers = response.headers().clone();
        if let Some(sink) = &self.limits {
            sink.observe(&headers);
        }
        // Before anything reads it: an answer that echoes the access token would hand it to
        // the model, the envelope and the log.
        let bytes = redacted(read_body(response).await?, &[self.token.expose()]);
        Ok(Answer {
            status,
            headers,
            bytes,
        })
    }

    async fn search_flights(
        &self,
        a: &search_flights::Args,
        timeout: Duration,
    ) -> Result<search_flights::Output, UpstreamError> {
        // The request built in a block: what it was built from is gone before the wait.
        let answer = {
            let mut slices = vec![wire::SliceRequest {
                origin: a.origin.clone(),
                destination: a.destination.clone(),
                departure_date: a.departure_date.clone(),
            }];
            if let Some(ret) = &a.return_date {
                slices.push(wire::SliceRequest {
                    origin: a.destination.clone(),
                    destination: a.origin.clone(),
                    departure_date: ret.clone(),
                });
            }
            let mut passengers: Vec<wire::PassengerRequest> = (0..a.adults)
                .map(|_| wire::PassengerRequest::Adult { kind: "adult" })
                .collect();
            passengers.extend(
                a.child_ages
                    .iter()
                    .map(|age| wire::PassengerRequest::Child { age: age.0 }),
            );
            let body = data_json(&wire::CreateOfferRequest {
                slices,
                passengers,
                cabin_class: a.cabin_class.map(cabin),
                max_connections: a.max_connections,
            })?;
            // Duffel accepts 2 000–60 000 ms; leave a second of the attempt for the response.
            let supplier_ms = (timeout.as_millis() as u64)
                .saturating_sub(1000)
                .clamp(2000, 60_000);
            let mut url = self.url(&["air", "offer_requests"], &[]);
            url.query_pairs_mut()
                .append_pair("return_offers", "true")
                .append_pair("supplier_timeout", &supplier_ms.to_string());
            self.exchange(Method::POST, url, Some(body))
        }
        .await?;
        let res: wire::OfferRequest<'_> = answer.decode()?;
        Ok(flights_output(a, &res))
    }

    /// The offer's answer, to decode as a [`wire::Offer`] borrowing from it.
    async fn get_offer(&self, offer_id: &str) -> Result<Answer, UpstreamError> {
        let mut url = self.url(&["air", "offers"], &[offer_id]);
        url.query_pairs_mut()
            .append_pair("return_available_services", "false");
        self.exchange(Method::GET, url, None).await
    }

    async fn price_offer(
        &self,
        a: &price_flight_offer::Args,
    ) -> Result<price_flight_offer::Output, UpstreamError> {
        let answer = self.get_offer(&a.offer_id).await?;
        let o: wire::Offer<'_> = answer.decode()?;
        Ok(price_output(&o))
    }

    /// Reads the offer (within half the attempt's time, so the order keeps the other half),
    /// then orders it. Every failure before the order request is marked
    /// [`UpstreamError::before_write`]: nothing can have been booked, so the caller may say so
    /// and a background job may be requeued like a read.
    async fn book(
        &self,
        a: &book_flight::Args,
        terms: &WriteTerms,
        timeout: Duration,
    ) -> Result<book_flight::Output, UpstreamError> {
        let answer = read_before_write(
            timeout / 2,
            "the offer read before the order",
            self.get_offer(&a.offer_id),
        )
        .await?;
        let offer: wire::Offer<'_> = answer.decode().map_err(UpstreamError::before_write)?;
        if let Some(limit) = &terms.spend_limit {
            within_budget(&offer.total_amount, &offer.total_currency, limit).await?;
        }
        self.order(a, terms, offer).await
    }

    /// Orders the offer read just before, after checking the call against it (those refusals
    /// come before the order request, so they are marked so).
    async fn order(
        &self,
        a: &book_flight::Args,
        terms: &WriteTerms,
        offer: wire::Offer<'_>,
    ) -> Result<book_flight::Output, UpstreamError> {
        if offer.passengers.len() != a.travellers.len() {
            return Err(UpstreamError::new(
                ErrorKind::Rejected {
                    message: format!(
                        "the offer is for {} passenger(s) but {} traveller(s) were given; list one traveller per passenger, in the order price_flight_offer shows",
                        offer.passengers.len(),
                        a.travellers.len()
                    ),
                },
                "traveller count does not match the offer",
            )
            .before_write());
        }
        if let Some(confirmed) = &a.confirmed_total_amount
            && !same_amount(confirmed, &offer.total_amount)
        {
            return Err(UpstreamError::refused_by_gateway(
                crate::texts::call::price_not_confirmed(
                    "book_flight",
                    confirmed,
                    &offer.total_amount,
                    &offer.total_currency,
                ),
            ));
        }
        let body = wire::CreateOrder {
            kind: "instant",
            selected_offers: vec![offer.id.to_string()],
            passengers: offer
                .passengers
                .iter()
                .zip(&a.travellers)
                .map(|(p, t)| wire::OrderPassengerRequest {
                    id: p.id.to_string(),
                    title: title(t.title),
                    gender: match t.gender {
                        book_flight::Gender::M => "m",
                        book_flight::Gender::F => "f",
                    },
                    given_name: t.given_name.clone(),
                    family_name: t.family_name.clone(),
                    born_on: t.born_on.clone(),
                    email: t.email.clone(),
                    phone_number: t.phone_number.clone(),
                })
                .collect(),
            payments: vec![wire::Payment {
                kind: "balance",
                amount: offer.total_amount.to_string(),
                currency: offer.total_currency.to_string(),
            }],
            metadata: key_metadata(terms),
        };
        let url = self.url(&["air", "orders"], &[]);
        let refused = match self
            .send::<wire::Order>(Method::POST, url, Some(data_json(&body)?))
            .await
        {
            Ok(order) => return Ok(book_output(order, &terms.idempotency_key)),
            Err(e) if e.is_already_done() => e,
            Err(e) => return Err(e),
        };
        let listed = whose_duplicate(
            refused,
            self.find_order(made_for(terms), &terms.idempotency_key),
        )
        .await?;
        Ok(book_output(
            wire::Order {
                passengers: if listed.passengers.is_empty() {
                    a.travellers
                        .iter()
                        .map(|t| wire::OrderPassenger {
                            given_name: t.given_name.clone(),
                            family_name: t.family_name.clone(),
                        })
                        .collect()
                } else {
                    listed.passengers
                },
                id: listed.id,
                booking_reference: listed.booking_reference,
                total_amount: listed.total_amount,
                total_currency: listed.total_currency,
            },
            &terms.idempotency_key,
        ))
    }

    async fn search_hotels(
        &self,
        a: &search_hotels::Args,
    ) -> Result<search_hotels::Output, UpstreamError> {
        let (near, lat, lon) = hotel_location(a)?;
        let body = data_json(&wire::StaysSearchRequest {
            check_in_date: a.check_in_date.clone(),
            check_out_date: a.check_out_date.clone(),
            rooms: a.rooms,
            guests: (0..a.adults)
                .map(|_| wire::Guest { kind: "adult" })
                .collect(),
            location: wire::StaysLocation {
                radius: a.radius_km.unwrap_or(5.0),
                geographic_coordinates: wire::Coordinates {
                    latitude: lat,
                    longitude: lon,
                },
            },
        })?;
        let url = self.url(&["stays", "search"], &[]);
        let res: wire::StaysSearch = self.send(Method::POST, url, Some(body)).await?;
        Ok(hotels_output(a, near, &res))
    }

    async fn hotel_availability(
        &self,
        a: &check_hotel_availability::Args,
    ) -> Result<check_hotel_availability::Output, UpstreamError> {
        let url = self.url(
            &["stays", "search_results"],
            &[&a.hotel_result_id, "actions", "fetch_all_rates"],
        );
        let res: wire::StaysResult = self.send(Method::POST, url, None).await?;
        Ok(convert::availability(&res))
    }
}

/// `value` as the JSON body of a Duffel request, `{"data": value}`.
fn data_json(value: &impl Serialize) -> Result<Bytes, UpstreamError> {
    serde_json::to_vec(&wire::Data { data: value })
        .map(Bytes::from)
        .map_err(|e| {
            UpstreamError::new(
                ErrorKind::Misconfigured { status: 0 },
                format!("the request body could not be written as JSON: {e}"),
            )
            .before_write()
        })
}

/// One answer as it came: status, headers and the whole body.
struct Answer {
    status: reqwest::StatusCode,
    headers: reqwest::header::HeaderMap,
    bytes: Bytes,
}

impl Answer {
    /// The answer as `T`, which may borrow from the body, or the error it means.
    fn decode<'a, T: serde::Deserialize<'a>>(&'a self) -> Result<T, UpstreamError> {
        decode(self.status, &self.headers, &self.bytes)
    }
}

fn cabin(c: CabinClass) -> &'static str {
    match c {
        CabinClass::Economy => "economy",
        CabinClass::PremiumEconomy => "premium_economy",
        CabinClass::Business => "business",
        CabinClass::First => "first",
    }
}

fn title(t: book_flight::Title) -> &'static str {
    match t {
        book_flight::Title::Mr => "mr",
        book_flight::Title::Ms => "ms",
        book_flight::Title::Mrs => "mrs",
        book_flight::Title::Miss => "miss",
        book_flight::Title::Dr => "dr",
    }
}

/// `read`, given at most `bound`: a read made before a write request (the offer before the
/// order, the quote before the stays booking). Every failure of it, a timeout included, is
/// marked [`UpstreamError::before_write`]: the bound is the adapter's own, so a slow read ends
/// here as "not sent" instead of at the pipeline's attempt timeout, where it could not be told
/// from a slow write.
async fn read_before_write<T>(
    bound: Duration,
    what: &str,
    read: impl Future<Output = Result<T, UpstreamError>>,
) -> Result<T, UpstreamError> {
    match tokio::time::timeout(bound, read).await {
        Ok(read) => read.map_err(UpstreamError::before_write),
        Err(_) => Err(UpstreamError::new(
            ErrorKind::Timeout,
            format!(
                "{what} got no answer within {}",
                humantime::format_duration(bound)
            ),
        )
        .before_write()),
    }
}

/// Refuses, before the order request, an offer that the client's daily budget cannot pay: in
/// another currency than the budget's, or costing more than is left of it today; and holds the
/// price of one that fits, in one step with the client's other bookings (so two bookings
/// racing cannot both take the last of the budget).
async fn within_budget(
    amount: &str,
    currency: &str,
    limit: &SpendLimit,
) -> Result<(), UpstreamError> {
    if currency != limit.currency {
        return Err(UpstreamError::refused_by_gateway(
            budget_texts::other_currency(
                amount,
                currency,
                &limit.budget.to_string(),
                &limit.currency,
            ),
        ));
    }
    match Amount::parse(amount) {
        Some(cost) if cost <= limit.remaining => limit
            .reserve
            .0
            .reserve(cost)
            .await
            .map_err(UpstreamError::refused_by_gateway),
        Some(_) => Err(UpstreamError::refused_by_gateway(
            budget_texts::over_budget(
                amount,
                currency,
                &limit.remaining.to_string(),
                &limit.budget.to_string(),
            ),
        )),
        None => Err(UpstreamError::new(
            ErrorKind::Malformed,
            format!("the offer's total_amount {amount:?} is not a decimal amount"),
        )
        .before_write()),
    }
}

fn same_amount(a: &str, b: &str) -> bool {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => (x - y).abs() < 0.005,
        _ => a == b,
    }
}
