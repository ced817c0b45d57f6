//! Duffel answers → tool results, without I/O: the half of each adapter call after the body
//! has been read. [`decode_response`] runs it for any tool request (public for fuzzing).

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde::Deserialize;

use super::{cities, convert, errors, wire};
use crate::providers::error::{ErrorKind, UpstreamError};
use crate::providers::wire_json;
use crate::tools::{
    ToolOutput, ToolRequest, book_flight, price_flight_offer, search_flights, search_hotels,
};

/// A Duffel answer as `T` (the `data` member), or the error it means. `T` may borrow from
/// `bytes` (the offer types do).
pub(super) fn decode<'a, T: Deserialize<'a>>(
    status: StatusCode,
    headers: &HeaderMap,
    bytes: &'a [u8],
) -> Result<T, UpstreamError> {
    if !status.is_success() {
        return Err(errors::classify(
            status,
            headers,
            bytes,
            crate::clock::system_now(),
        ));
    }
    if status == StatusCode::ACCEPTED {
        // Duffel: "processing hasn't been completed, do not retry". There is no result yet.
        return Err(UpstreamError::new(
            ErrorKind::Server {
                status: 202,
                retry_after: None,
            },
            "Duffel accepted the request but has not finished processing it",
        ));
    }
    wire_json::from_slice::<wire::Data<T>>(bytes)
        .map(|d| d.data)
        .map_err(|e| {
            let mut err = UpstreamError::new(
                ErrorKind::Malformed,
                format!(
                    "HTTP {} body does not match Duffel's documented shape: {e}",
                    status.as_u16()
                ),
            );
            err.request_id = headers
                .get("x-request-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            err
        })
}

/// Public for fuzzing (`fuzz/fuzz_targets/provider_responses.rs`): decodes `body`, answered
/// with `status`, as the answer to `request` and maps it into the tool's result, through the
/// same functions the adapter's calls use. For `book_flight` the body is the order (the
/// offer read before it is a `price_flight_offer` answer); for `book_hotel` it is the stays
/// booking, charged what its one rate costs (the quote before it is not decoded here).
pub fn decode_response(
    request: &ToolRequest,
    status: u16,
    body: &[u8],
) -> Result<ToolOutput, UpstreamError> {
    let status = StatusCode::from_u16(status).map_err(|_| {
        UpstreamError::new(
            ErrorKind::Malformed,
            format!("HTTP status {status} is not a status code"),
        )
    })?;
    let headers = HeaderMap::new();
    match request {
        ToolRequest::SearchFlights(a) => {
            let res: wire::OfferRequest<'_> = decode(status, &headers, body)?;
            Ok(ToolOutput::SearchFlights(flights_output(a, &res)))
        }
        ToolRequest::PriceFlightOffer(_) => {
            let offer: wire::Offer<'_> = decode(status, &headers, body)?;
            Ok(ToolOutput::PriceFlightOffer(price_output(&offer)))
        }
        ToolRequest::SearchHotels(a) => {
            let (near, _, _) = hotel_location(a)?;
            let res: wire::StaysSearch = decode(status, &headers, body)?;
            Ok(ToolOutput::SearchHotels(hotels_output(a, near, &res)))
        }
        ToolRequest::CheckHotelAvailability(_) => {
            let res: wire::StaysResult = decode(status, &headers, body)?;
            Ok(ToolOutput::CheckHotelAvailability(convert::availability(
                &res,
            )))
        }
        ToolRequest::BookFlight(_, terms) => {
            let order: wire::Order = decode(status, &headers, body)?;
            Ok(ToolOutput::BookFlight(book_output(
                order,
                &terms.idempotency_key,
            )))
        }
        ToolRequest::BookHotel(_, terms) => {
            let booking: wire::StaysBooking = decode(status, &headers, body)?;
            let (amount, currency) = booking.booked_rate().unwrap_or_default();
            Ok(ToolOutput::BookHotel(super::stays::output(
                booking,
                amount,
                currency,
                &terms.idempotency_key,
            )))
        }
        ToolRequest::GetFlightStatus(_) => Err(UpstreamError::new(
            ErrorKind::Rejected {
                message: "Duffel has no flight status API".into(),
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

/// Offers, cheapest first, at most `max_results` of them. The wire offers are sorted and cut
/// first (the same stable order by amount `keep_cheapest` gives), so only the kept ones are
/// converted.
pub(super) fn flights_output(
    a: &search_flights::Args,
    res: &wire::OfferRequest<'_>,
) -> search_flights::Output {
    let mut cheapest: Vec<&wire::Offer<'_>> = res.offers.iter().collect();
    let kept = crate::tools::keep_cheapest(
        &mut cheapest,
        |o| (&*o.total_amount, &*o.total_currency),
        a.max_results,
    );
    search_flights::Output {
        origin: a.origin.clone(),
        destination: a.destination.clone(),
        departure_date: a.departure_date.clone(),
        offers: cheapest.into_iter().map(convert::offer).collect(),
        total_offers: kept.total,
        currencies: kept.currencies,
    }
}

/// One offer, priced.
pub(super) fn price_output(o: &wire::Offer<'_>) -> price_flight_offer::Output {
    price_flight_offer::Output {
        offer: convert::offer(o),
        base_amount: o.base_amount.as_deref().map(str::to_string),
        tax_amount: o.tax_amount.as_deref().map(str::to_string),
        passengers: o
            .passengers
            .iter()
            .map(|p| price_flight_offer::OfferPassenger {
                passenger_id: p.id.to_string(),
                passenger_type: p.kind.as_deref().map(str::to_string).unwrap_or_else(|| {
                    if p.age.is_some_and(|a| a < 18) {
                        "child".into()
                    } else {
                        "adult".into()
                    }
                }),
                age: p.age,
            })
            .collect(),
        price_guarantee_expires_at: o
            .payment_requirements
            .as_ref()
            .and_then(|p| p.price_guarantee_expires_at.as_deref())
            .map(str::to_string),
        requires_instant_payment: o
            .payment_requirements
            .as_ref()
            .is_some_and(|p| p.requires_instant_payment),
    }
}

/// The booking as the tool reports it.
pub(super) fn book_output(order: wire::Order, idempotency_key: &str) -> book_flight::Output {
    book_flight::Output {
        travellers: order
            .passengers
            .iter()
            .map(|p| format!("{} {}", p.given_name, p.family_name))
            .collect(),
        booking_reference: order.booking_reference,
        order_id: order.id,
        total_amount: order.total_amount,
        total_currency: order.total_currency,
        idempotency_key: idempotency_key.to_string(),
    }
}

/// Where to search for hotels: a label and coordinates (Stays searches around coordinates).
pub(super) fn hotel_location(a: &search_hotels::Args) -> Result<(String, f64, f64), UpstreamError> {
    let (near, lat, lon) = match (a.latitude, a.longitude, a.city_code.as_deref()) {
        (Some(lat), Some(lon), city) => (
            city.map(str::to_string)
                .unwrap_or_else(|| format!("{lat:.4},{lon:.4}")),
            lat,
            lon,
        ),
        (_, _, Some(code)) => match cities::centre(code) {
            Some((name, lat, lon)) => (format!("{name} ({code})"), lat, lon),
            None => {
                return Err(UpstreamError::new(
                    ErrorKind::Rejected {
                        message: format!(
                            "the hotel provider searches around coordinates and does not know the city code {code}; call again with latitude and longitude of the place"
                        ),
                    },
                    "city code without coordinates",
                ));
            }
        },
        _ => {
            return Err(UpstreamError::new(
                ErrorKind::Rejected {
                    message: "say where to search: a city_code or latitude and longitude".into(),
                },
                "no location",
            ));
        }
    };
    Ok((near, lat, lon))
}

/// Hotels, cheapest first, at most `max_results` of them.
pub(super) fn hotels_output(
    a: &search_hotels::Args,
    near: String,
    res: &wire::StaysSearch,
) -> search_hotels::Output {
    let mut hotels: Vec<search_hotels::HotelResult> =
        res.results.iter().map(convert::hotel).collect();
    let kept = crate::tools::keep_cheapest(
        &mut hotels,
        search_hotels::HotelResult::price,
        a.max_results,
    );
    search_hotels::Output {
        check_in_date: a.check_in_date.clone(),
        check_out_date: a.check_out_date.clone(),
        searched_near: near,
        hotels,
        total_hotels: kept.total,
        currencies: kept.currencies,
    }
}
