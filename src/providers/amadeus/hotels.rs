//! Hotel list (by city or geocode) → Hotel Search v3 in batches, and one offer by id.

use std::collections::BTreeMap;

use reqwest::{Method, Url};

use super::{
    AmadeusClient, HOTEL_BATCH, HOTEL_PREFIX, HotelContext, MAX_HOTELS, NO_HOTEL_OFFERS,
    NOTHING_FOUND, Reply, convert, rejected, wire,
};
use crate::providers::error::UpstreamError;
use crate::tools::{check_hotel_availability, search_hotels};

impl AmadeusClient {
    pub(super) async fn search_hotels(
        &self,
        a: &search_hotels::Args,
    ) -> Result<search_hotels::Output, UpstreamError> {
        let radius = a.radius_km.unwrap_or(5.0).ceil().clamp(1.0, 300.0) as u32;
        let (mut url, near) = match (a.latitude, a.longitude, a.city_code.as_deref()) {
            (Some(lat), Some(lon), city) => {
                let mut url = self.url(
                    &["v1", "reference-data", "locations", "hotels", "by-geocode"],
                    &[],
                );
                url.query_pairs_mut()
                    .append_pair("latitude", &format!("{lat:.5}"))
                    .append_pair("longitude", &format!("{lon:.5}"));
                (
                    url,
                    city.map_or_else(|| format!("{lat:.4},{lon:.4}"), str::to_string),
                )
            }
            (_, _, Some(code)) => {
                let mut url = self.url(
                    &["v1", "reference-data", "locations", "hotels", "by-city"],
                    &[],
                );
                url.query_pairs_mut().append_pair("cityCode", code);
                (url, code.to_string())
            }
            _ => {
                return Err(rejected(
                    "say where to search: a city_code or latitude and longitude".into(),
                    "no location",
                ));
            }
        };
        url.query_pairs_mut()
            .append_pair("radius", &radius.to_string())
            .append_pair("radiusUnit", "KM");
        let empty = search_hotels::Output {
            check_in_date: a.check_in_date.clone(),
            check_out_date: a.check_out_date.clone(),
            searched_near: near,
            hotels: Vec::new(),
            total_hotels: 0,
            currencies: Vec::new(),
        };
        let reply = self.execute(Method::GET, url, None).await?;
        let Some(listed) = nearest(&reply)? else {
            return Ok(empty);
        };
        let per_room = a.adults.div_ceil(a.rooms.max(1)).clamp(1, 9);
        let batches = listed.chunks(HOTEL_BATCH).map(|chunk| {
            let ids: Vec<&str> = chunk.iter().map(|h| h.hotel_id.as_str()).collect();
            let mut url = self.url(&["v3", "shopping", "hotel-offers"], &[]);
            url.query_pairs_mut()
                .append_pair("hotelIds", &ids.join(","))
                .append_pair("adults", &per_room.to_string())
                .append_pair("checkInDate", &a.check_in_date)
                .append_pair("checkOutDate", &a.check_out_date)
                .append_pair("roomQuantity", &a.rooms.to_string())
                .append_pair("bestRateOnly", "true");
            self.hotel_batch(url)
        });
        let mut found = Vec::new();
        for batch in futures::future::join_all(batches).await {
            found.extend(batch?);
        }
        Ok(hotels_output(
            a,
            empty,
            &listed,
            &found,
            |offer_id, context| {
                self.hotel_offers.insert(offer_id.to_string(), context);
            },
        ))
    }

    /// One Hotel Search request; "no rooms / no hotels" 400s are an empty batch.
    async fn hotel_batch(&self, url: Url) -> Result<Vec<wire::HotelOffers>, UpstreamError> {
        let reply = self.execute(Method::GET, url, None).await?;
        batch_offers(&reply)
    }

    pub(super) async fn hotel_availability(
        &self,
        a: &check_hotel_availability::Args,
    ) -> Result<check_hotel_availability::Output, UpstreamError> {
        let offer_id = a
            .hotel_result_id
            .strip_prefix(HOTEL_PREFIX)
            .unwrap_or(&a.hotel_result_id);
        let context = self.hotel_offers.get(offer_id);
        let url = self.url(&["v3", "shopping", "hotel-offers"], &[offer_id]);
        let reply = self.execute(Method::GET, url, None).await?;
        availability_output(a, context, &reply)
    }
}

/// The hotels of a Hotel List answer, nearest first, at most [`MAX_HOTELS`]; `None` when
/// Amadeus found nothing for the place.
pub(super) fn nearest(reply: &Reply) -> Result<Option<Vec<wire::ListedHotel>>, UpstreamError> {
    if AmadeusClient::is_400_with(reply, &[NOTHING_FOUND]) {
        return Ok(None);
    }
    let mut listed = AmadeusClient::decode::<wire::HotelList>("hotel list", reply)?.data;
    listed.sort_by(|x, y| {
        let d = |h: &wire::ListedHotel| h.distance.map_or(f64::MAX, |d| d.value);
        d(x).total_cmp(&d(y))
    });
    listed.truncate(MAX_HOTELS);
    Ok(Some(listed))
}

/// The offers of one Hotel Search answer; "no rooms / no hotels" 400s are an empty batch.
pub(super) fn batch_offers(reply: &Reply) -> Result<Vec<wire::HotelOffers>, UpstreamError> {
    if AmadeusClient::is_400_with(reply, &NO_HOTEL_OFFERS) {
        return Ok(Vec::new());
    }
    Ok(
        AmadeusClient::decode::<wire::HotelOffersResponse>("hotel search", reply)?
            .data
            .into_vec(),
    )
}

/// Hotels with an available offer, cheapest first, at most `max_results`; `keep` remembers
/// each offer handed out (by Amadeus offer id) to describe it if it sells out.
pub(super) fn hotels_output(
    a: &search_hotels::Args,
    empty: search_hotels::Output,
    listed: &[wire::ListedHotel],
    found: &[wire::HotelOffers],
    mut keep: impl FnMut(&str, HotelContext),
) -> search_hotels::Output {
    let by_id: BTreeMap<&str, &wire::ListedHotel> =
        listed.iter().map(|h| (h.hotel_id.as_str(), h)).collect();
    let mut hotels = Vec::new();
    for h in found.iter().filter(|h| h.available != Some(false)) {
        let Some(result) = convert::hotel(h, by_id.get(h.hotel.hotel_id.as_str()).copied()) else {
            continue;
        };
        if let Some(offer_id) = result.hotel_result_id.strip_prefix(HOTEL_PREFIX) {
            keep(
                offer_id,
                HotelContext {
                    hotel_name: result.name.clone(),
                    check_in: a.check_in_date.clone(),
                    check_out: a.check_out_date.clone(),
                },
            );
        }
        hotels.push(result);
    }
    let kept = crate::tools::keep_cheapest(
        &mut hotels,
        search_hotels::HotelResult::price,
        a.max_results,
    );
    search_hotels::Output {
        hotels,
        total_hotels: kept.total,
        currencies: kept.currencies,
        ..empty
    }
}

/// One hotel offer's answer as availability; `context` is what search said about the offer.
pub(super) fn availability_output(
    a: &check_hotel_availability::Args,
    context: Option<HotelContext>,
    reply: &Reply,
) -> Result<check_hotel_availability::Output, UpstreamError> {
    let none = || check_hotel_availability::Output {
        hotel_result_id: a.hotel_result_id.clone(),
        hotel_name: context
            .as_ref()
            .map_or_else(|| "the hotel".to_string(), |c| c.hotel_name.clone()),
        check_in_date: context
            .as_ref()
            .map(|c| c.check_in.clone())
            .unwrap_or_default(),
        check_out_date: context
            .as_ref()
            .map(|c| c.check_out.clone())
            .unwrap_or_default(),
        available: false,
        rooms: Vec::new(),
    };
    // Amadeus's developer guides: "an empty response means the hotel is full"; 3664 says so
    // explicitly.
    if AmadeusClient::is_400_with(reply, &[3664])
        || (reply.status.is_success() && reply.body.iter().all(u8::is_ascii_whitespace))
    {
        return Ok(none());
    }
    let res: wire::HotelOfferById = AmadeusClient::decode("hotel offer", reply)?;
    let Some(h) = res
        .data
        .map(wire::OneOrMany::into_vec)
        .and_then(|v| v.into_iter().next())
    else {
        return Ok(none());
    };
    let rooms: Vec<_> = if h.available == Some(false) {
        Vec::new()
    } else {
        h.offers.iter().map(convert::room).collect()
    };
    let first = h.offers.first();
    let mut out = none();
    out.hotel_name = h.hotel.name.clone().unwrap_or(out.hotel_name);
    if let Some(d) = first.and_then(|o| o.check_in_date.clone()) {
        out.check_in_date = d;
    }
    if let Some(d) = first.and_then(|o| o.check_out_date.clone()) {
        out.check_out_date = d;
    }
    out.available = !rooms.is_empty();
    out.rooms = rooms;
    Ok(out)
}
