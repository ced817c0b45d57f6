//! Amadeus Self-Service wire types: the documented fields faregate reads or writes, nothing more.
//!
//! Response types ignore unknown fields but require the documented ones, so a body that lacks
//! them is reported as malformed. Two documented quirks are absorbed here, once:
//! - error `code`/`status` are integers in the specs but strings in some real answers
//!   ([`Code`] accepts both);
//! - Hotel Search v3 `data` is typed as one object in the schema but returned as an array
//!   ([`OneOrMany`] accepts both); `dupeId` is an integer in Hotel List and a string in Hotel
//!   Search, so it is not read at all (hotels are matched by `hotelId`).
//!
//! These types never leave the Amadeus adapter.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An integer that some answers send as a string (`38191` or `"38191"`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub(crate) enum Code {
    /// As the specs type it.
    Int(i64),
    /// As the 401 example of Amadeus's developer guides writes it.
    Str(String),
}

impl Code {
    /// The numeric value, if it has one.
    pub(crate) fn value(&self) -> Option<i64> {
        match self {
            Code::Int(n) => Some(*n),
            Code::Str(s) => s.trim().parse().ok(),
        }
    }

    /// The value as text (`"3166"` for an integer flight number).
    pub(crate) fn text(&self) -> String {
        match self {
            Code::Int(n) => n.to_string(),
            Code::Str(s) => s.clone(),
        }
    }
}

/// One object or an array of them.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum OneOrMany<T> {
    /// `"data": [ … ]`.
    Many(Vec<T>),
    /// `"data": { … }`.
    One(Box<T>),
}

impl<T> OneOrMany<T> {
    /// Every item, in order.
    pub(crate) fn into_vec(self) -> Vec<T> {
        match self {
            OneOrMany::Many(v) => v,
            OneOrMany::One(x) => vec![*x],
        }
    }
}

// === Errors ===

/// The error body of every API: `{"errors": [Issue, …]}`; the token endpoint's own shape
/// (`error`, `error_description`, `code`, `title`) is read from the same struct.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ErrorBody {
    #[serde(default)]
    pub errors: Vec<Issue>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub error_description: Option<String>,
    #[serde(default)]
    pub code: Option<Code>,
    #[serde(default)]
    pub title: Option<String>,
}

/// One documented issue.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Issue {
    #[serde(default)]
    pub code: Option<Code>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub detail: Option<String>,
    #[serde(default)]
    pub source: Option<IssueSource>,
}

/// Where an issue points.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct IssueSource {
    #[serde(default)]
    pub pointer: Option<String>,
    #[serde(default)]
    pub parameter: Option<String>,
    #[serde(default)]
    pub example: Option<String>,
}

// === Flight offers ===

/// Flight Offers Search answer. Offers are kept as raw JSON: pricing must send them back
/// exactly as returned; each is also read as a [`FlightOffer`].
#[derive(Debug, Deserialize)]
pub(crate) struct FlightOffers {
    pub data: Vec<Value>,
    #[serde(default)]
    pub dictionaries: Option<Dictionaries>,
}

/// `dictionaries` of flight answers.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Dictionaries {
    #[serde(default)]
    pub carriers: BTreeMap<String, String>,
}

/// One flight offer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FlightOffer {
    #[serde(default)]
    pub instant_ticketing_required: bool,
    pub itineraries: Vec<Itinerary>,
    pub price: FlightPrice,
    #[serde(default)]
    pub validating_airline_codes: Vec<String>,
    #[serde(default)]
    pub traveler_pricings: Vec<TravelerPricing>,
}

/// One direction.
#[derive(Debug, Deserialize)]
pub(crate) struct Itinerary {
    #[serde(default)]
    pub duration: Option<String>,
    pub segments: Vec<Segment>,
}

/// One flight.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Segment {
    pub departure: Endpoint,
    pub arrival: Endpoint,
    pub carrier_code: String,
    pub number: String,
    #[serde(default)]
    pub duration: Option<String>,
    #[serde(default)]
    pub number_of_stops: u32,
}

/// Departure or arrival of a segment: local time without offset.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Endpoint {
    pub iata_code: String,
    pub at: String,
}

/// An offer's price (decimal strings).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FlightPrice {
    pub currency: String,
    pub total: String,
    #[serde(default)]
    pub base: Option<String>,
    #[serde(default)]
    pub grand_total: Option<String>,
}

/// One traveller of an offer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TravelerPricing {
    pub traveler_id: String,
    pub traveler_type: String,
}

/// Flight Offers Search POST body (`GetFlightOffersQuery`), only the parts faregate sends.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FlightOffersQuery {
    pub origin_destinations: Vec<OriginDestination>,
    pub travelers: Vec<Traveler>,
    pub sources: Vec<&'static str>,
    pub search_criteria: SearchCriteria,
}

/// One requested direction.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OriginDestination {
    pub id: String,
    pub origin_location_code: String,
    pub destination_location_code: String,
    pub departure_date_time_range: DateRange,
}

/// `departureDateTimeRange`: the date only.
#[derive(Debug, Serialize)]
pub(crate) struct DateRange {
    pub date: String,
}

/// One traveller of a search.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Traveler {
    pub id: String,
    pub traveler_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub associated_adult_id: Option<String>,
}

/// `searchCriteria`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SearchCriteria {
    pub max_flight_offers: u16,
    pub flight_filters: FlightFilters,
}

/// `searchCriteria.flightFilters`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FlightFilters {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cabin_restrictions: Vec<CabinRestriction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_restriction: Option<ConnectionRestriction>,
}

/// A cabin for some directions.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CabinRestriction {
    pub cabin: &'static str,
    pub coverage: &'static str,
    pub origin_destination_ids: Vec<String>,
}

/// `connectionRestriction`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConnectionRestriction {
    pub max_number_of_connections: u8,
}

/// Flight Offers Price answer.
#[derive(Debug, Deserialize)]
pub(crate) struct Pricing {
    pub data: PricingData,
    #[serde(default)]
    pub dictionaries: Option<Dictionaries>,
}

/// `data` of a pricing answer (its `type` is spelled two ways in the spec; not checked).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PricingData {
    pub flight_offers: Vec<FlightOffer>,
}

// === Hotels ===

/// Hotel List answer (`by-city`, `by-geocode`).
#[derive(Debug, Deserialize)]
pub(crate) struct HotelList {
    pub data: Vec<ListedHotel>,
}

/// One hotel of a list.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListedHotel {
    pub hotel_id: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub geo_code: Option<GeoCode>,
    #[serde(default)]
    pub address: Option<HotelAddress>,
    #[serde(default)]
    pub distance: Option<Distance>,
}

/// A point.
#[derive(Debug, Clone, Copy, Deserialize)]
pub(crate) struct GeoCode {
    pub latitude: f64,
    pub longitude: f64,
}

/// The address parts Hotel List may carry (only `countryCode` is in the spec's example).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HotelAddress {
    #[serde(default)]
    pub lines: Vec<String>,
    #[serde(default)]
    pub postal_code: Option<String>,
    #[serde(default)]
    pub city_name: Option<String>,
    #[serde(default)]
    pub country_code: Option<String>,
}

/// Distance from the searched point.
#[derive(Debug, Clone, Copy, Deserialize)]
pub(crate) struct Distance {
    pub value: f64,
}

/// Hotel Search v3 answer: `data` as an array (documented) or one object (the schema).
#[derive(Debug, Deserialize)]
pub(crate) struct HotelOffersResponse {
    pub data: OneOrMany<HotelOffers>,
}

/// `GET /v3/shopping/hotel-offers/{offerId}` answer: `{data: HotelOffers}` (an object);
/// an empty answer (no `data`) means the hotel is full.
#[derive(Debug, Deserialize)]
pub(crate) struct HotelOfferById {
    #[serde(default)]
    pub data: Option<OneOrMany<HotelOffers>>,
}

/// One hotel with its offers.
#[derive(Debug, Deserialize)]
pub(crate) struct HotelOffers {
    pub hotel: OfferHotel,
    #[serde(default)]
    pub available: Option<bool>,
    #[serde(default)]
    pub offers: Vec<HotelOffer>,
}

/// The hotel of an offer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OfferHotel {
    pub hotel_id: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub latitude: Option<f64>,
    #[serde(default)]
    pub longitude: Option<f64>,
}

/// One room offer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HotelOffer {
    pub id: String,
    #[serde(default)]
    pub check_in_date: Option<String>,
    #[serde(default)]
    pub check_out_date: Option<String>,
    #[serde(default)]
    pub board_type: Option<String>,
    #[serde(default)]
    pub room: Option<OfferRoom>,
    pub price: HotelPrice,
    #[serde(default)]
    pub policies: Option<Policies>,
}

/// The room of an offer.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OfferRoom {
    #[serde(default)]
    pub type_estimated: Option<TypeEstimated>,
    #[serde(default)]
    pub description: Option<Text>,
}

/// Estimated room category.
#[derive(Debug, Deserialize)]
pub(crate) struct TypeEstimated {
    #[serde(default)]
    pub category: Option<String>,
}

/// A text with its language.
#[derive(Debug, Deserialize)]
pub(crate) struct Text {
    #[serde(default)]
    pub text: Option<String>,
}

/// An offer's price for the stay.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HotelPrice {
    pub currency: String,
    #[serde(default)]
    pub total: Option<String>,
    #[serde(default)]
    pub selling_total: Option<String>,
    #[serde(default)]
    pub base: Option<String>,
}

/// An offer's policies.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Policies {
    #[serde(default)]
    pub payment_type: Option<String>,
    #[serde(default)]
    pub cancellation: Option<Cancellation>,
    #[serde(default)]
    pub cancellations: Vec<Cancellation>,
}

/// A cancellation rule.
#[derive(Debug, Deserialize)]
pub(crate) struct Cancellation {
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub deadline: Option<String>,
}

// === Flight status ===

/// On-Demand Flight Status answer.
#[derive(Debug, Deserialize)]
pub(crate) struct DatedFlights {
    pub data: Vec<DatedFlight>,
}

/// One dated flight.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DatedFlight {
    pub scheduled_departure_date: String,
    pub flight_designator: FlightDesignator,
    #[serde(default)]
    pub flight_points: Vec<FlightPoint>,
}

/// Carrier and number.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FlightDesignator {
    pub carrier_code: String,
    /// An integer in the spec; read leniently.
    pub flight_number: Code,
    #[serde(default)]
    pub operational_suffix: Option<String>,
}

/// One airport of a dated flight.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FlightPoint {
    pub iata_code: String,
    #[serde(default)]
    pub departure: Option<PointEvent>,
    #[serde(default)]
    pub arrival: Option<PointEvent>,
}

/// Departure or arrival at one airport.
#[derive(Debug, Deserialize)]
pub(crate) struct PointEvent {
    #[serde(default)]
    pub terminal: Option<Terminal>,
    #[serde(default)]
    pub gate: Option<Gate>,
    #[serde(default)]
    pub timings: Vec<Timing>,
}

/// A terminal.
#[derive(Debug, Deserialize)]
pub(crate) struct Terminal {
    #[serde(default)]
    pub code: Option<String>,
}

/// A gate.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Gate {
    #[serde(default)]
    pub main_gate: Option<String>,
}

/// One timing: `STD`/`STA` are documented; other qualifiers pass through.
#[derive(Debug, Deserialize)]
pub(crate) struct Timing {
    pub qualifier: String,
    pub value: String,
    #[serde(default)]
    pub delays: Vec<Delay>,
}

/// A delay.
#[derive(Debug, Deserialize)]
pub(crate) struct Delay {
    #[serde(default)]
    pub duration: Option<String>,
}
