//! Public for fuzzing (`fuzz/fuzz_targets/provider_responses.rs`): an Amadeus answer mapped
//! into a tool result without I/O, through the same functions the adapter's calls use.

use hyper::body::Bytes;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;

use super::flights::{flights_output, priced_output};
use super::hotels::{availability_output, batch_offers, hotels_output, nearest};
use super::{AmadeusClient, OFFER_PREFIX, Reply, expiry, status_output, wire};
use crate::providers::error::{ErrorKind, UpstreamError};
use crate::tools::{ToolOutput, ToolRequest, search_hotels};

/// Decodes `body`, answered with `status`, as the answer to `request` and maps it into the
/// tool's result. `search_hotels` makes two requests (Hotel List, then Hotel Search); the one
/// body is given to both stages. Offer ids are minted from a counter and offers are not kept.
pub fn decode_response(
    request: &ToolRequest,
    status: u16,
    body: &[u8],
) -> Result<ToolOutput, UpstreamError> {
    if let Some(refusal) = AmadeusClient::refuse(request) {
        return Err(refusal);
    }
    let status = StatusCode::from_u16(status).map_err(|_| {
        UpstreamError::new(
            ErrorKind::Malformed,
            format!("HTTP status {status} is not a status code"),
        )
    })?;
    let reply = Reply {
        status,
        headers: HeaderMap::new(),
        body: Bytes::copy_from_slice(body),
    };
    match request {
        ToolRequest::SearchFlights(a) => {
            let res: wire::FlightOffers = AmadeusClient::decode("flight offers search", &reply)?;
            let mut n = 0u64;
            let mint = |_raw| {
                n += 1;
                format!("{OFFER_PREFIX}{n:016x}")
            };
            flights_output(a, res, &expiry(super::OFFER_TTL), mint).map(ToolOutput::SearchFlights)
        }
        ToolRequest::PriceFlightOffer(a) => {
            let res: wire::Pricing = AmadeusClient::decode("flight offers price", &reply)?;
            priced_output(&a.offer_id, res).map(ToolOutput::PriceFlightOffer)
        }
        ToolRequest::SearchHotels(a) => {
            let empty = search_hotels::Output {
                check_in_date: a.check_in_date.clone(),
                check_out_date: a.check_out_date.clone(),
                searched_near: String::new(),
                hotels: Vec::new(),
                total_hotels: 0,
                currencies: Vec::new(),
            };
            let listed = nearest(&reply)?.unwrap_or_default();
            let found = batch_offers(&reply)?;
            Ok(ToolOutput::SearchHotels(hotels_output(
                a,
                empty,
                &listed,
                &found,
                |_, _| {},
            )))
        }
        ToolRequest::CheckHotelAvailability(a) => {
            availability_output(a, None, &reply).map(ToolOutput::CheckHotelAvailability)
        }
        ToolRequest::GetFlightStatus(_) => status_output(&reply).map(ToolOutput::GetFlightStatus),
        ToolRequest::BookFlight(..) | ToolRequest::BookHotel(..) => Err(UpstreamError::new(
            ErrorKind::Rejected {
                message: "bookings are not made through Amadeus by this gateway".into(),
            },
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
