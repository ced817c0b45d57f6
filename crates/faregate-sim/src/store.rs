//! In-memory state the provider routes share: issued offers, stays search results and orders.
//!
//! Offers and search results are bounded (oldest evicted first) so a long-running demo or a
//! load test cannot grow the simulator without limit.

use std::collections::{HashMap, HashSet, VecDeque};

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::IdempotencyStats;

/// How many offers (and, separately, stays search results) are kept.
pub(crate) const CAPACITY: usize = 10_000;

/// A map that forgets its oldest entries beyond a capacity.
#[derive(Debug)]
pub(crate) struct Bounded<T> {
    capacity: usize,
    map: HashMap<String, T>,
    order: VecDeque<String>,
}

impl<T> Bounded<T> {
    pub(crate) fn new(capacity: usize) -> Self {
        Bounded {
            capacity,
            map: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    pub(crate) fn insert(&mut self, id: String, value: T) {
        if self.map.insert(id.clone(), value).is_none() {
            self.order.push_back(id);
        }
        while self.order.len() > self.capacity {
            if let Some(old) = self.order.pop_front() {
                self.map.remove(&old);
            }
        }
    }

    pub(crate) fn get(&self, id: &str) -> Option<&T> {
        self.map.get(id)
    }
}

/// A JSON value kept as its text.
///
/// Why: a parsed offer (a `Value`'s maps, keys and strings, each its own allocation) took about
/// 44 KB, so the 10,000 offers [`CAPACITY`] keeps held 440 MB of a simulator that serves load
/// tests for hours; its text is a tenth of that. An offer is read back (its page, an order,
/// a pricing) far less often than it is issued, so parsing it again then costs little.
#[derive(Debug, Clone)]
pub(crate) struct KeptJson(Box<str>);

impl KeptJson {
    pub(crate) fn keep(value: &Value) -> Self {
        KeptJson(value.to_string().into_boxed_str())
    }

    /// The value again. The text is what `keep` wrote from a `Value`, so it always parses; were
    /// it not to, the reader gets `null` and answers as for a missing field.
    pub(crate) fn value(&self) -> Value {
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }
}

/// An offer as issued: its full JSON plus what orders need to check.
#[derive(Debug, Clone)]
pub(crate) struct StoredOffer {
    /// The offer object as returned (without `available_services`).
    pub(crate) json: KeptJson,
    /// The services `GET /air/offers/{id}?return_available_services=true` shows, a JSON array.
    pub(crate) services: KeptJson,
    pub(crate) expires_at: DateTime<Utc>,
    /// Total in minor units and its currency.
    pub(crate) total_minor: i64,
    pub(crate) currency: String,
    pub(crate) passenger_ids: Vec<String>,
    pub(crate) requires_instant_payment: bool,
}

/// A stays search result as issued, with the rooms `fetch_all_rates` reveals.
#[derive(Debug, Clone)]
pub(crate) struct StoredStay {
    /// The search result object as returned by search (accommodation rooms empty).
    pub(crate) json: Value,
    /// The rooms and rates generated at search time.
    pub(crate) rooms: Vec<super::stays_data::RoomSpec>,
    /// How availability looks when rates are fetched.
    pub(crate) availability: super::stays_data::Availability,
    pub(crate) currency: &'static str,
    pub(crate) check_in: chrono::NaiveDate,
}

/// A rate as `fetch_all_rates` showed it, for quoting.
#[derive(Debug, Clone)]
pub(crate) struct StoredRate {
    /// The search result it belongs to (its accommodation without rooms).
    pub(crate) result: Value,
    /// Its room, with this rate alone.
    pub(crate) room: Value,
    /// Total in minor units, and its currency.
    pub(crate) total_minor: i64,
    pub(crate) currency: String,
    /// Whether rooms were left at it.
    pub(crate) available: bool,
}

/// A quote as issued: the quote object, and what a booking of it charges.
#[derive(Debug, Clone)]
pub(crate) struct StoredQuote {
    pub(crate) json: Value,
}

/// Stays rates shown and quotes made (each bounded).
#[derive(Debug)]
pub(crate) struct StayRates {
    pub(crate) rates: Bounded<StoredRate>,
    pub(crate) quotes: Bounded<StoredQuote>,
}

impl Default for StayRates {
    fn default() -> Self {
        StayRates {
            rates: Bounded::new(CAPACITY),
            quotes: Bounded::new(CAPACITY),
        }
    }
}

/// Orders (or stays bookings) created and the idempotency bookkeeping that feeds the stats.
#[derive(Debug, Default)]
pub(crate) struct OrderBook {
    pub(crate) created: u64,
    pub(crate) duplicates: u64,
    /// Stats per idempotency key (the key alone, whichever client sent it).
    pub(crate) by_key: std::collections::BTreeMap<String, IdempotencyStats>,
    /// The (client, key) pairs already booked: a repeat is a duplicate. Keys are each client's
    /// own (`metadata.faregate_client`), so another client's same key books.
    pub(crate) booked_keys: HashSet<(Option<String>, String)>,
    /// Offers (or quotes) already booked (booking one again is a duplicate).
    pub(crate) booked_offers: HashSet<String>,
    /// The orders created, oldest first (the most recent [`KEPT_ORDERS`]), as
    /// `GET /air/orders` lists them.
    pub(crate) orders: std::collections::VecDeque<Value>,
}

impl OrderBook {
    /// Whether an order (or stays booking) was already made for this client under this key;
    /// a repeat is counted.
    pub(crate) fn repeated(&mut self, key: Option<&(Option<String>, String)>) -> bool {
        let Some(k) = key.filter(|k| self.booked_keys.contains(*k)) else {
            return false;
        };
        self.duplicates += 1;
        self.by_key
            .entry(k.1.clone())
            .or_default()
            .duplicates_rejected += 1;
        true
    }

    /// Counts a booking made under `key` (the client's, when it names one).
    pub(crate) fn booked(&mut self, key: Option<(Option<String>, String)>) {
        if let Some(k) = key {
            self.by_key.entry(k.1.clone()).or_default().orders += 1;
            self.booked_keys.insert(k);
        }
    }
}

/// How many created orders the simulator keeps for listing.
pub(crate) const KEPT_ORDERS: usize = 10_000;

/// A hotel offer as served by the simulated Amadeus Hotel Search.
#[derive(Debug, Clone)]
pub(crate) struct StoredHotelOffer {
    /// The `HotelOffers` object with only this offer, as `GET …/{offerId}` returns it.
    pub(crate) json: Value,
    /// Whether it sold out since the search (the check answers 400 3664).
    pub(crate) sold_out: bool,
}

/// The simulated Amadeus state: issued tokens, served flight offers, listed hotels, offers.
#[derive(Debug)]
pub(crate) struct AmadeusState {
    pub(crate) tokens: super::amadeus_wire::Tokens,
    /// Flight offers as served, by a hash of their JSON (pricing accepts only these).
    pub(crate) flight_offers: Bounded<KeptJson>,
    /// Listed hotels by Amadeus hotel id, with their city code.
    pub(crate) hotels: Bounded<(super::stays_data::Hotel, String)>,
    /// Hotel offers by offer id.
    pub(crate) hotel_offers: Bounded<StoredHotelOffer>,
}

impl Default for AmadeusState {
    fn default() -> Self {
        AmadeusState {
            tokens: Default::default(),
            flight_offers: Bounded::new(CAPACITY),
            hotels: Bounded::new(CAPACITY),
            hotel_offers: Bounded::new(CAPACITY),
        }
    }
}
