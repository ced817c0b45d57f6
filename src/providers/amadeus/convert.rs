//! Amadeus wire types → the tools' normalized results.

use std::collections::BTreeMap;

use crate::providers::duration::iso_minutes;
use crate::tools::check_hotel_availability as avail;
use crate::tools::get_flight_status as status;
use crate::tools::search_flights::{Airline, FlightOffer, FlightSlice};
use crate::tools::search_hotels::HotelResult;

use super::wire;

/// A flight offer under faregate's id, expiring at `expires_at` (RFC 3339): Amadeus gives no
/// offer expiry, so it is when this gateway forgets the offer (pricing is refused after that).
pub(crate) fn offer(
    o: &wire::FlightOffer,
    offer_id: &str,
    carriers: &BTreeMap<String, String>,
    expires_at: &str,
) -> FlightOffer {
    let code = o
        .validating_airline_codes
        .first()
        .cloned()
        .or_else(|| {
            o.itineraries
                .first()
                .and_then(|i| i.segments.first())
                .map(|s| s.carrier_code.clone())
        })
        .unwrap_or_default();
    FlightOffer {
        offer_id: offer_id.to_string(),
        total_amount: o
            .price
            .grand_total
            .clone()
            .unwrap_or_else(|| o.price.total.clone()),
        total_currency: o.price.currency.clone(),
        airline: Airline {
            name: carriers
                .get(&code)
                .map(|n| title_case(n))
                .unwrap_or_else(|| code.clone()),
            iata_code: code,
        },
        slices: o.itineraries.iter().map(slice).collect(),
        expires_at: expires_at.to_string(),
        bookable: super::BOOKABLE,
    }
}

fn slice(it: &wire::Itinerary) -> FlightSlice {
    let segment_minutes: u32 = it
        .segments
        .iter()
        .filter_map(|s| s.duration.as_deref().and_then(iso_minutes))
        .fold(0u32, u32::saturating_add);
    let first = it.segments.first();
    let last = it.segments.last();
    FlightSlice {
        origin: first
            .map(|s| s.departure.iata_code.clone())
            .unwrap_or_default(),
        destination: last
            .map(|s| s.arrival.iata_code.clone())
            .unwrap_or_default(),
        departing_at: first.map(|s| s.departure.at.clone()).unwrap_or_default(),
        arriving_at: last.map(|s| s.arrival.at.clone()).unwrap_or_default(),
        duration_minutes: it
            .duration
            .as_deref()
            .and_then(iso_minutes)
            .unwrap_or(segment_minutes),
        stops: it.segments.len().saturating_sub(1) as u32
            + it.segments.iter().map(|s| s.number_of_stops).sum::<u32>(),
        flights: it
            .segments
            .iter()
            .map(|s| format!("{}{}", s.carrier_code, s.number))
            .collect(),
    }
}

/// `IBERIA` → `Iberia`; Amadeus dictionaries spell carrier names in capitals. An acronym stays
/// one: a name of three letters at most (`SAS`) and a word with no vowel (`KLM`).
fn title_case(name: &str) -> String {
    if name.chars().count() <= 3 {
        return name.to_string();
    }
    name.split(' ')
        .map(|w| {
            if !w.is_empty() && !w.chars().any(|c| "AEIOUYaeiouy".contains(c)) {
                return w.to_string();
            }
            let mut cs = w.chars();
            match cs.next() {
                Some(c) => c
                    .to_uppercase()
                    .chain(cs.flat_map(char::to_lowercase))
                    .collect(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// "adult" or "child", as `price_flight_offer` reports passengers (infants are children).
pub(crate) fn passenger_type(traveler_type: &str) -> &'static str {
    match traveler_type {
        "CHILD" | "HELD_INFANT" | "SEATED_INFANT" => "child",
        _ => "adult",
    }
}

/// `total - base` as a decimal string, when both parse: Amadeus reports the fare and the
/// total; the difference is taxes and fees.
pub(crate) fn tax(total: &str, base: Option<&str>) -> Option<String> {
    let (t, b) = (total.parse::<f64>().ok()?, base?.parse::<f64>().ok()?);
    (t >= b).then(|| format!("{:.2}", t - b))
}

/// The hotel id faregate exposes for an Amadeus hotel offer id.
pub(crate) fn hotel_result_id(offer_id: &str) -> String {
    format!("{}{offer_id}", super::HOTEL_PREFIX)
}

/// A hotel of the list and its offers → one search result (its cheapest offer).
pub(crate) fn hotel(
    h: &wire::HotelOffers,
    listed: Option<&wire::ListedHotel>,
) -> Option<HotelResult> {
    let cheapest = h.offers.iter().min_by(|a, b| {
        crate::tools::amount_key(offer_total(a))
            .total_cmp(&crate::tools::amount_key(offer_total(b)))
    })?;
    let address = listed
        .and_then(|l| l.address.clone())
        .map(|a| {
            a.lines
                .iter()
                .map(String::as_str)
                .chain(
                    [
                        a.postal_code.as_deref(),
                        a.city_name.as_deref(),
                        a.country_code.as_deref(),
                    ]
                    .into_iter()
                    .flatten(),
                )
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    let geo = listed.and_then(|l| l.geo_code);
    Some(HotelResult {
        hotel_result_id: hotel_result_id(&cheapest.id),
        // Amadeus's hotel ids (`HLPAR266`) name no hotel at the content service.
        hotel_id: None,
        name: h
            .hotel
            .name
            .clone()
            .or_else(|| listed.and_then(|l| l.name.clone()))
            .unwrap_or_else(|| h.hotel.hotel_id.clone()),
        address,
        rating: None,
        review_score: None,
        cheapest_total_amount: offer_total(cheapest).to_string(),
        currency: cheapest.price.currency.clone(),
        latitude: h.hotel.latitude.or(geo.map(|g| g.latitude)),
        longitude: h.hotel.longitude.or(geo.map(|g| g.longitude)),
        bookable: super::BOOKABLE,
    })
}

/// The price of a stay: `total`, else `sellingTotal`, else `base`.
fn offer_total(o: &wire::HotelOffer) -> &str {
    o.price
        .total
        .as_deref()
        .or(o.price.selling_total.as_deref())
        .or(o.price.base.as_deref())
        .unwrap_or("")
}

/// One offer as a room with one rate.
pub(crate) fn room(o: &wire::HotelOffer) -> avail::Room {
    let room = o.room.as_ref();
    let name = room
        .and_then(|r| r.description.as_ref())
        .and_then(|d| d.text.clone())
        .or_else(|| {
            room.and_then(|r| r.type_estimated.as_ref())
                .and_then(|t| t.category.as_ref())
                .map(|c| c.replace('_', " ").to_lowercase())
        })
        .unwrap_or_else(|| "Room".to_string());
    let policies = o.policies.as_ref();
    avail::Room {
        name,
        rates: vec![avail::Rate {
            rate_id: hotel_result_id(&o.id),
            total_amount: offer_total(o).to_string(),
            currency: o.price.currency.clone(),
            board_type: o.board_type.as_ref().map(|b| b.to_lowercase()),
            // The schema enum is upper case, the examples lower case: normalize.
            payment_type: policies
                .and_then(|p| p.payment_type.as_ref())
                .map(|p| p.to_lowercase()),
            quantity_available: None,
            free_cancellation_until: policies.and_then(free_cancellation_until),
            bookable: super::BOOKABLE,
        }],
    }
}

/// The deadline of a cancellation rule that is not a full-stay penalty and charges nothing
/// before it; `None` (not refundable, as far as faregate can tell) otherwise.
fn free_cancellation_until(p: &wire::Policies) -> Option<String> {
    p.cancellation
        .iter()
        .chain(&p.cancellations)
        .filter(|c| {
            !c.kind
                .as_deref()
                .is_some_and(|k| k.eq_ignore_ascii_case("FULL_STAY"))
        })
        .filter_map(|c| c.deadline.clone())
        .min()
}

/// A dated flight → the tool's flight status.
pub(crate) fn flight_status(f: &wire::DatedFlight) -> status::FlightStatus {
    status::FlightStatus {
        carrier_code: f.flight_designator.carrier_code.clone(),
        flight_number: format!(
            "{}{}",
            f.flight_designator.flight_number.text(),
            f.flight_designator
                .operational_suffix
                .as_deref()
                .unwrap_or("")
        ),
        scheduled_departure_date: f.scheduled_departure_date.clone(),
        points: f
            .flight_points
            .iter()
            .map(|p| status::FlightPoint {
                airport: p.iata_code.clone(),
                departure: p.departure.as_ref().map(|e| timing(e, "STD")),
                arrival: p.arrival.as_ref().map(|e| timing(e, "STA")),
            })
            .collect(),
    }
}

/// Scheduled time from the `STD`/`STA` timing; the latest other timing (estimated or actual,
/// qualifiers Amadeus does not enumerate) as `latest`, actual ones preferred; the largest delay.
fn timing(e: &wire::PointEvent, scheduled: &str) -> status::Timing {
    let other: Vec<&wire::Timing> = e
        .timings
        .iter()
        .filter(|t| t.qualifier != scheduled)
        .collect();
    let latest = other
        .iter()
        .find(|t| t.qualifier.starts_with('A'))
        .or_else(|| other.last())
        .map(|t| t.value.clone());
    status::Timing {
        scheduled: e
            .timings
            .iter()
            .find(|t| t.qualifier == scheduled)
            .map(|t| t.value.clone()),
        latest,
        delay_minutes: e
            .timings
            .iter()
            .flat_map(|t| &t.delays)
            .filter_map(|d| d.duration.as_deref().and_then(iso_minutes))
            .max(),
        terminal: e.terminal.as_ref().and_then(|t| t.code.clone()),
        gate: e.gate.as_ref().and_then(|g| g.main_gate.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_conversions() {
        assert_eq!(title_case("BRITISH AIRWAYS"), "British Airways");
        assert_eq!(title_case("AIR FRANCE"), "Air France");
        assert_eq!(title_case("KLM"), "KLM");
        assert_eq!(title_case("SAS"), "SAS");
        assert_eq!(
            title_case("KLM ROYAL DUTCH AIRLINES"),
            "KLM Royal Dutch Airlines"
        );
        assert_eq!(tax("149.02", Some("58.00")).as_deref(), Some("91.02"));
        assert_eq!(tax("149.02", None), None);
        assert_eq!(passenger_type("HELD_INFANT"), "child");
        assert_eq!(passenger_type("ADULT"), "adult");
    }
}
