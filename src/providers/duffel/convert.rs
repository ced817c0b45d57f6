//! Duffel wire types → the tools' normalized results.

use crate::tools::check_hotel_availability as avail;
use crate::tools::search_flights::{Airline, FlightOffer, FlightSlice};
use crate::tools::search_hotels::HotelResult;

use super::wire;
use crate::providers::duration::iso_minutes;

pub(crate) fn offer(o: &wire::Offer<'_>) -> FlightOffer {
    FlightOffer {
        offer_id: o.id.to_string(),
        total_amount: o.total_amount.to_string(),
        total_currency: o.total_currency.to_string(),
        airline: Airline {
            iata_code: o.owner.iata_code.as_deref().unwrap_or_default().to_string(),
            name: o.owner.name.to_string(),
        },
        slices: o.slices.iter().map(slice).collect(),
        expires_at: o.expires_at.to_string(),
        bookable: super::BOOKABLE,
    }
}

fn slice(s: &wire::Slice<'_>) -> FlightSlice {
    let segment_minutes: u32 = s
        .segments
        .iter()
        .filter_map(|seg| seg.duration.as_deref().and_then(iso_minutes))
        .fold(0u32, u32::saturating_add);
    FlightSlice {
        origin: s.origin.iata_code.to_string(),
        destination: s.destination.iata_code.to_string(),
        departing_at: s
            .segments
            .first()
            .map(|seg| seg.departing_at.to_string())
            .unwrap_or_default(),
        arriving_at: s
            .segments
            .last()
            .map(|seg| seg.arriving_at.to_string())
            .unwrap_or_default(),
        duration_minutes: s
            .duration
            .as_deref()
            .and_then(iso_minutes)
            .unwrap_or(segment_minutes),
        stops: s.segments.len().saturating_sub(1) as u32,
        flights: s
            .segments
            .iter()
            .map(|seg| {
                let carrier = seg.marketing_carrier.iata_code.as_deref().unwrap_or("");
                let number = &*seg.marketing_carrier_flight_number;
                let mut flight = String::with_capacity(carrier.len() + number.len());
                flight.push_str(carrier);
                flight.push_str(number);
                flight
            })
            .collect(),
    }
}

pub(crate) fn hotel(r: &wire::StaysResult) -> HotelResult {
    let loc = r.accommodation.location.as_ref();
    let address = loc
        .and_then(|l| l.address.as_ref())
        .map(|a| {
            [
                a.line_one.as_deref(),
                a.postal_code.as_deref(),
                a.city_name.as_deref(),
                a.country_code.as_deref(),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", ")
        })
        .unwrap_or_default();
    let coords = loc.and_then(|l| l.geographic_coordinates);
    HotelResult {
        hotel_result_id: r.id.clone(),
        hotel_id: r.accommodation.id.clone(),
        name: r.accommodation.name.clone(),
        address,
        rating: r.accommodation.rating,
        review_score: r.accommodation.review_score,
        cheapest_total_amount: r.cheapest_rate_total_amount.clone().unwrap_or_default(),
        currency: r.cheapest_rate_currency.clone().unwrap_or_default(),
        latitude: coords.map(|c| c.latitude),
        longitude: coords.map(|c| c.longitude),
        bookable: super::BOOKABLE,
    }
}

pub(crate) fn availability(r: &wire::StaysResult) -> avail::Output {
    let rooms: Vec<avail::Room> = r
        .accommodation
        .rooms
        .iter()
        .map(|room| avail::Room {
            name: room.name.clone().unwrap_or_else(|| "Room".into()),
            rates: room
                .rates
                .iter()
                .filter(|rate| rate.quantity_available != Some(0))
                .map(|rate| avail::Rate {
                    rate_id: rate.id.clone(),
                    total_amount: rate.total_amount.clone(),
                    currency: rate.total_currency.clone(),
                    board_type: rate.board_type.clone(),
                    payment_type: rate.payment_type.clone(),
                    quantity_available: rate.quantity_available,
                    free_cancellation_until: free_cancellation_until(rate),
                    bookable: super::BOOKABLE,
                })
                .collect(),
        })
        .filter(|room| !room.rates.is_empty())
        .collect();
    avail::Output {
        hotel_result_id: r.id.clone(),
        hotel_name: r.accommodation.name.clone(),
        check_in_date: r.check_in_date.clone(),
        check_out_date: r.check_out_date.clone(),
        available: !rooms.is_empty(),
        rooms,
    }
}

/// The latest time before which the whole amount is refunded.
fn free_cancellation_until(rate: &wire::Rate) -> Option<String> {
    let total: f64 = rate.total_amount.parse().ok()?;
    rate.cancellation_timeline
        .iter()
        .filter(|step| {
            step.refund_amount
                .parse::<f64>()
                .is_ok_and(|r| (r - total).abs() < 0.005)
        })
        .map(|step| step.before.clone())
        .max()
}
