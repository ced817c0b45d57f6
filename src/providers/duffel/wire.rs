//! Duffel's wire types: exactly the documented fields faregate reads or writes, nothing more.
//!
//! Response types ignore unknown fields (Duffel adds fields without a version bump) but require
//! the documented ones, so a body that lacks them is reported as malformed. Request types
//! serialize only what faregate sends. These types never leave the Duffel adapter.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::providers::wire_str::WireStr;

/// Duffel wraps every request and response body in `{"data": …}`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Data<T> {
    /// The payload.
    pub data: T,
}

// === Requests ===

/// `POST /air/offer_requests` body.
#[derive(Debug, Serialize)]
pub(crate) struct CreateOfferRequest {
    pub slices: Vec<SliceRequest>,
    pub passengers: Vec<PassengerRequest>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cabin_class: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_connections: Option<u8>,
}

/// One requested slice.
#[derive(Debug, Serialize)]
pub(crate) struct SliceRequest {
    pub origin: String,
    pub destination: String,
    pub departure_date: String,
}

/// An adult (`type`) or a child (`age`); never both (Duffel rejects that).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum PassengerRequest {
    /// `{"type":"adult"}`.
    Adult {
        #[serde(rename = "type")]
        kind: &'static str,
    },
    /// `{"age":9}`.
    Child { age: u8 },
}

/// `POST /air/orders` body.
#[derive(Debug, Serialize)]
pub(crate) struct CreateOrder {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub selected_offers: Vec<String>,
    pub passengers: Vec<OrderPassengerRequest>,
    pub payments: Vec<Payment>,
    pub metadata: std::collections::BTreeMap<String, String>,
}

/// A passenger being booked.
#[derive(Debug, Serialize)]
pub(crate) struct OrderPassengerRequest {
    pub id: String,
    pub title: &'static str,
    pub gender: &'static str,
    pub given_name: String,
    pub family_name: String,
    pub born_on: String,
    pub email: String,
    pub phone_number: String,
}

/// A payment from the agency balance.
#[derive(Debug, Serialize)]
pub(crate) struct Payment {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub amount: String,
    pub currency: String,
}

/// `POST /stays/search` body.
#[derive(Debug, Serialize)]
pub(crate) struct StaysSearchRequest {
    pub check_in_date: String,
    pub check_out_date: String,
    pub rooms: u8,
    pub guests: Vec<Guest>,
    pub location: StaysLocation,
}

/// A guest.
#[derive(Debug, Serialize)]
pub(crate) struct Guest {
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// Search around a point.
#[derive(Debug, Serialize)]
pub(crate) struct StaysLocation {
    pub radius: f64,
    pub geographic_coordinates: Coordinates,
}

/// `POST /stays/quotes` body.
#[derive(Debug, Serialize)]
pub(crate) struct CreateQuote {
    pub rate_id: String,
}

/// `POST /stays/bookings` body.
#[derive(Debug, Serialize)]
pub(crate) struct CreateStaysBooking {
    pub quote_id: String,
    pub guests: Vec<StaysGuest>,
    pub email: String,
    pub phone_number: String,
    pub metadata: BTreeMap<String, String>,
}

/// A guest being booked (also how a booking lists its guests).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StaysGuest {
    pub given_name: String,
    pub family_name: String,
}

// === Responses ===

/// A quote: the final price and availability check of one rate.
#[derive(Debug, Deserialize)]
pub(crate) struct Quote {
    pub id: String,
    pub total_amount: String,
    pub total_currency: String,
}

/// A stays booking. The amount charged is the quote's; a listed booking (reconciliation) reads
/// it from the one rate its accommodation carries.
#[derive(Debug, Deserialize)]
pub(crate) struct StaysBooking {
    pub id: String,
    #[serde(default)]
    pub reference: Option<String>,
    #[serde(default)]
    pub check_in_date: Option<String>,
    #[serde(default)]
    pub check_out_date: Option<String>,
    #[serde(default)]
    pub accommodation: Option<Accommodation>,
    #[serde(default)]
    pub guests: Vec<StaysGuest>,
    #[serde(default)]
    pub metadata: Option<BTreeMap<String, serde_json::Value>>,
}

impl StaysBooking {
    /// The total and currency of the one rate the booking's accommodation carries (a listed
    /// booking has no total of its own).
    pub(crate) fn booked_rate(&self) -> Option<(String, String)> {
        let rate = self.accommodation.as_ref()?.rooms.first()?.rates.first()?;
        Some((rate.total_amount.clone(), rate.total_currency.clone()))
    }
}

/// The offer request with its offers. The offer types borrow their strings from the answer's
/// body ([`WireStr`]): a search answer holds hundreds of strings, and the result keeps few.
#[derive(Debug, Deserialize)]
pub(crate) struct OfferRequest<'a> {
    #[serde(borrow)]
    pub offers: Vec<Offer<'a>>,
}

/// One offer.
#[derive(Debug, Deserialize)]
pub(crate) struct Offer<'a> {
    #[serde(borrow)]
    pub id: WireStr<'a>,
    #[serde(borrow)]
    pub total_amount: WireStr<'a>,
    #[serde(borrow)]
    pub total_currency: WireStr<'a>,
    #[serde(borrow, default)]
    pub base_amount: Option<WireStr<'a>>,
    #[serde(borrow, default)]
    pub tax_amount: Option<WireStr<'a>>,
    #[serde(borrow)]
    pub expires_at: WireStr<'a>,
    #[serde(borrow)]
    pub owner: Carrier<'a>,
    #[serde(borrow)]
    pub slices: Vec<Slice<'a>>,
    #[serde(borrow)]
    pub passengers: Vec<OfferPassenger<'a>>,
    #[serde(borrow, default)]
    pub payment_requirements: Option<PaymentRequirements<'a>>,
}

/// An airline.
#[derive(Debug, Deserialize)]
pub(crate) struct Carrier<'a> {
    #[serde(borrow, default)]
    pub iata_code: Option<WireStr<'a>>,
    #[serde(borrow)]
    pub name: WireStr<'a>,
}

/// A passenger slot of an offer.
#[derive(Debug, Deserialize)]
pub(crate) struct OfferPassenger<'a> {
    #[serde(borrow)]
    pub id: WireStr<'a>,
    #[serde(borrow, default, rename = "type")]
    pub kind: Option<WireStr<'a>>,
    #[serde(default)]
    pub age: Option<u8>,
}

/// Payment terms of an offer.
#[derive(Debug, Deserialize)]
pub(crate) struct PaymentRequirements<'a> {
    #[serde(default)]
    pub requires_instant_payment: bool,
    #[serde(borrow, default)]
    pub price_guarantee_expires_at: Option<WireStr<'a>>,
}

/// One direction.
#[derive(Debug, Deserialize)]
pub(crate) struct Slice<'a> {
    #[serde(borrow)]
    pub origin: Place<'a>,
    #[serde(borrow)]
    pub destination: Place<'a>,
    #[serde(borrow, default)]
    pub duration: Option<WireStr<'a>>,
    #[serde(borrow)]
    pub segments: Vec<Segment<'a>>,
}

/// An airport or city.
#[derive(Debug, Deserialize)]
pub(crate) struct Place<'a> {
    #[serde(borrow)]
    pub iata_code: WireStr<'a>,
}

/// One flight.
#[derive(Debug, Deserialize)]
pub(crate) struct Segment<'a> {
    #[serde(borrow)]
    pub departing_at: WireStr<'a>,
    #[serde(borrow)]
    pub arriving_at: WireStr<'a>,
    #[serde(borrow, default)]
    pub duration: Option<WireStr<'a>>,
    #[serde(borrow)]
    pub marketing_carrier: Carrier<'a>,
    #[serde(borrow)]
    pub marketing_carrier_flight_number: WireStr<'a>,
}

/// A created order.
#[derive(Debug, Deserialize)]
pub(crate) struct Order {
    pub id: String,
    pub booking_reference: String,
    pub total_amount: String,
    pub total_currency: String,
    pub passengers: Vec<OrderPassenger>,
}

/// One order of a `GET /air/orders` page: only what a booking lookup reads.
#[derive(Debug, Deserialize)]
pub(crate) struct ListedOrder {
    pub id: String,
    pub booking_reference: String,
    pub total_amount: String,
    pub total_currency: String,
    /// The booked passengers (a listed order is a whole order; an answer from an earlier
    /// booking of the same key reports them).
    #[serde(default)]
    pub passengers: Vec<OrderPassenger>,
    #[serde(default)]
    pub metadata: Option<BTreeMap<String, serde_json::Value>>,
}

/// A list page's cursor (`meta.after`: the cursor of the next page, `null` on the last).
#[derive(Debug, Deserialize)]
pub(crate) struct PageMeta {
    #[serde(default)]
    pub meta: Option<PageCursor>,
}

/// The cursor object of a list page.
#[derive(Debug, Deserialize)]
pub(crate) struct PageCursor {
    #[serde(default)]
    pub after: Option<String>,
}

/// A booked passenger.
#[derive(Debug, Deserialize)]
pub(crate) struct OrderPassenger {
    pub given_name: String,
    pub family_name: String,
}

/// `POST /stays/search` answer.
#[derive(Debug, Deserialize)]
pub(crate) struct StaysSearch {
    pub results: Vec<StaysResult>,
}

/// One search result (a hotel with its cheapest rate), also the body of `fetch_all_rates`.
#[derive(Debug, Deserialize)]
pub(crate) struct StaysResult {
    pub id: String,
    pub check_in_date: String,
    pub check_out_date: String,
    #[serde(default)]
    pub cheapest_rate_total_amount: Option<String>,
    #[serde(default)]
    pub cheapest_rate_currency: Option<String>,
    pub accommodation: Accommodation,
}

/// A hotel.
#[derive(Debug, Deserialize)]
pub(crate) struct Accommodation {
    /// `acc_…`: the hotel's own id, the same in every search.
    #[serde(default)]
    pub id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub rating: Option<u8>,
    #[serde(default)]
    pub review_score: Option<f64>,
    #[serde(default)]
    pub location: Option<AccommodationLocation>,
    #[serde(default)]
    pub rooms: Vec<Room>,
}

/// Where a hotel is.
#[derive(Debug, Deserialize)]
pub(crate) struct AccommodationLocation {
    #[serde(default)]
    pub address: Option<Address>,
    #[serde(default)]
    pub geographic_coordinates: Option<Coordinates>,
}

/// A postal address.
#[derive(Debug, Deserialize)]
pub(crate) struct Address {
    #[serde(default)]
    pub line_one: Option<String>,
    #[serde(default)]
    pub city_name: Option<String>,
    #[serde(default)]
    pub postal_code: Option<String>,
    #[serde(default)]
    pub country_code: Option<String>,
}

/// A point.
#[derive(Debug, Serialize, Deserialize, Clone, Copy)]
pub(crate) struct Coordinates {
    pub latitude: f64,
    pub longitude: f64,
}

/// A room type with rates.
#[derive(Debug, Deserialize)]
pub(crate) struct Room {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub rates: Vec<Rate>,
}

/// A bookable rate.
#[derive(Debug, Deserialize)]
pub(crate) struct Rate {
    pub id: String,
    pub total_amount: String,
    pub total_currency: String,
    #[serde(default)]
    pub board_type: Option<String>,
    #[serde(default)]
    pub payment_type: Option<String>,
    #[serde(default)]
    pub quantity_available: Option<u32>,
    #[serde(default)]
    pub cancellation_timeline: Vec<CancellationStep>,
}

/// Refund available before a time.
#[derive(Debug, Deserialize)]
pub(crate) struct CancellationStep {
    pub before: String,
    pub refund_amount: String,
}

/// The documented error body.
#[derive(Debug, Deserialize)]
pub(crate) struct ErrorBody {
    #[serde(default)]
    pub meta: Option<ErrorMeta>,
    pub errors: Vec<ErrorItem>,
}

/// `meta` of an error body.
#[derive(Debug, Deserialize)]
pub(crate) struct ErrorMeta {
    #[serde(default)]
    pub request_id: Option<String>,
}

/// One error.
#[derive(Debug, Deserialize)]
pub(crate) struct ErrorItem {
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    /// Untyped: an object in validation errors, a string in some airline errors.
    #[serde(default)]
    pub source: Option<serde_json::Value>,
}
