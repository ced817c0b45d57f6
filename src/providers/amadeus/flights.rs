//! Flight offers search (GET, or POST with the method override) and pricing of a kept offer.

use std::sync::atomic::Ordering;

use reqwest::Method;
use serde_json::{Value, json};

use super::{AmadeusClient, MAX_OFFERS, OFFER_PREFIX, OFFER_TTL, convert, expiry, rejected, wire};
use crate::providers::error::{ErrorKind, UpstreamError};
use crate::tools::search_flights::CabinClass;
use crate::tools::{price_flight_offer, search_flights};

impl AmadeusClient {
    fn mint_offer_id(&self) -> String {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        let h =
            (self.salt ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        format!("{OFFER_PREFIX}{:016x}", h ^ (h >> 31))
    }

    pub(super) async fn search_flights(
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
        let mut minted = Vec::new();
        let output = flights_output(a, res, &expiry(self.offers.ttl()), |raw| {
            let id = self.mint_offer_id();
            minted.push((id.clone(), raw.to_string()));
            self.offers.insert(id.clone(), raw);
            id
        })?;
        // The store's copy is written before the answer, so the next call may go to any
        // replica; one statement, bounded, and a failure only narrows pricing to this replica.
        let expires_at_ms = crate::clock::epoch_ms()
            .saturating_add(i64::try_from(OFFER_TTL.as_millis()).unwrap_or(i64::MAX));
        if let Err(e) = self.kept.put(&minted, expires_at_ms).await {
            tracing::warn!(error = %e, "could not keep Amadeus offers in the store; only this replica can price them");
        }
        Ok(output)
    }

    /// The offer kept under `id`: from memory, else from the store (another replica's, or this
    /// one's before a restart).
    async fn kept_offer(&self, id: &str) -> Option<Value> {
        if let Some(raw) = self.offers.get(id) {
            return Some(raw);
        }
        match self.kept.get(id).await {
            Ok(text) => text.and_then(|t| serde_json::from_str(&t).ok()),
            Err(e) => {
                tracing::warn!(error = %e, "could not read a kept Amadeus offer from the store");
                None
            }
        }
    }

    pub(super) async fn price_offer(
        &self,
        a: &price_flight_offer::Args,
    ) -> Result<price_flight_offer::Output, UpstreamError> {
        let Some(raw) = self.kept_offer(&a.offer_id).await else {
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
        priced_output(&a.offer_id, res)
    }
}

/// Offers, cheapest first, at most `max_results`; `keep` stores each raw offer (pricing needs
/// it whole) and returns the id it is kept under.
pub(super) fn flights_output(
    a: &search_flights::Args,
    res: wire::FlightOffers,
    expires_at: &str,
    mut keep: impl FnMut(Value) -> String,
) -> Result<search_flights::Output, UpstreamError> {
    let carriers = res.dictionaries.map(|d| d.carriers).unwrap_or_default();
    let mut offers = Vec::with_capacity(res.data.len());
    for raw in res.data {
        let typed: wire::FlightOffer = serde_json::from_value(raw.clone()).map_err(|e| {
            UpstreamError::new(
                ErrorKind::Malformed,
                format!("flight offers search: an offer does not match the documented shape: {e}"),
            )
        })?;
        let id = keep(raw);
        offers.push(convert::offer(&typed, &id, &carriers, expires_at));
    }
    let kept = crate::tools::keep_cheapest(
        &mut offers,
        search_flights::FlightOffer::price,
        a.max_results,
    );
    Ok(search_flights::Output {
        origin: a.origin.clone(),
        destination: a.destination.clone(),
        departure_date: a.departure_date.clone(),
        offers,
        total_offers: kept.total,
        currencies: kept.currencies,
    })
}

/// The priced offer (the first of the answer), under the id it was searched as.
pub(super) fn priced_output(
    offer_id: &str,
    res: wire::Pricing,
) -> Result<price_flight_offer::Output, UpstreamError> {
    let carriers = res.dictionaries.map(|d| d.carriers).unwrap_or_default();
    let Some(priced) = res.data.flight_offers.first() else {
        return Err(UpstreamError::new(
            ErrorKind::Malformed,
            "flight offers price: no flight offer in the answer",
        ));
    };
    let offer = convert::offer(priced, offer_id, &carriers, &expiry(OFFER_TTL));
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
