//! Duffel Stays quotes and bookings: `POST /stays/quotes` (the final price and availability
//! check of one rate), `POST /stays/bookings` (book a quote) and `GET /stays/bookings` (list
//! them, newest first, paged like `GET /air/orders`).
//!
//! A quote is of a rate `fetch_all_rates` showed (unknown: 404 `not_found`; sold out: 422
//! `rate_unavailable`) and costs what the rate costs. A booking checks, in this order: body
//! shape (422 `validation_error`, every problem at once), then under one lock the idempotency
//! key (`metadata.faregate_idempotency_key` already booked for the same
//! `metadata.faregate_client`: 422 `duplicate_booking`), the quote
//! (unknown: 404; already booked: 422 `duplicate_booking`), and commits. The booking carries
//! the accommodation with the one room and rate booked, and the metadata it was sent with.

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use serde_json::{Value, json};

use super::data::{Rng, fmt_minor, parse_minor};
use super::duffel_air_orders::{
    ListQuery, contact, duplicate, idempotency_key, metadata, page, ts,
};
use super::store::{KEPT_ORDERS, StoredQuote, StoredRate};
use super::validate::Checker;
use super::wire::{DuffelError, data_response, parse_data};
use super::{Simulator, lock};

/// Keeps every rate of `rooms` (as `fetch_all_rates` answers them for `result`) for quoting.
pub(crate) fn keep_rates(sim: &Simulator, result: &Value, rooms: &Value) {
    let mut kept = lock(&sim.inner.stay_rates);
    for room in rooms.as_array().into_iter().flatten() {
        for rate in room["rates"].as_array().into_iter().flatten() {
            let (Some(id), Some(total)) = (
                rate["id"].as_str(),
                rate["total_amount"].as_str().and_then(parse_minor),
            ) else {
                continue;
            };
            let mut one = room.clone();
            one["rates"] = json!([rate]);
            kept.rates.insert(
                id.to_owned(),
                StoredRate {
                    result: result.clone(),
                    room: one,
                    total_minor: total,
                    currency: rate["total_currency"].as_str().unwrap_or("").to_owned(),
                    available: rate["quantity_available"].as_u64() != Some(0),
                },
            );
        }
    }
}

fn rate_unavailable() -> DuffelError {
    DuffelError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_state_error",
        "rate_unavailable",
        "Rate unavailable",
        "The rate is no longer available; fetch all rates again and choose another",
    )
}

/// `POST /stays/quotes`: quotes one rate, 201.
pub(crate) async fn create_quote(
    State(sim): State<Simulator>,
    body: Bytes,
) -> Result<Response, DuffelError> {
    let data = parse_data(&body)?;
    let mut c = Checker::default();
    let rate_id = c.string(&data, "rate_id", "/rate_id").map(str::to_owned);
    let Some(rate_id) = rate_id.filter(|_| c.errors.is_empty()) else {
        return Err(DuffelError::validation(c.errors));
    };
    let rate = lock(&sim.inner.stay_rates).rates.get(&rate_id).cloned();
    let Some(rate) = rate else {
        return Err(DuffelError::not_found(&format!("rate '{rate_id}'")));
    };
    if !rate.available {
        return Err(rate_unavailable());
    }
    let json = quote_json(&sim, &rate);
    let id = json["id"].as_str().unwrap_or_default().to_owned();
    lock(&sim.inner.stay_rates)
        .quotes
        .insert(id, StoredQuote { json: json.clone() });
    Ok(data_response(StatusCode::CREATED, json))
}

fn quote_json(sim: &Simulator, rate: &StoredRate) -> Value {
    let r = &rate.result;
    let mut accommodation = r["accommodation"].clone();
    accommodation["rooms"] = json!([rate.room]);
    let booked = &rate.room["rates"][0];
    json!({
        "id": sim.new_id("quo"),
        "check_in_date": r["check_in_date"],
        "check_out_date": r["check_out_date"],
        "rooms": r["rooms"],
        "guests": r["guests"],
        "total_amount": fmt_minor(rate.total_minor),
        "total_currency": rate.currency,
        "base_amount": booked["base_amount"],
        "base_currency": booked["base_currency"],
        "tax_amount": booked["tax_amount"],
        "tax_currency": booked["tax_currency"],
        "fee_amount": booked["fee_amount"],
        "fee_currency": booked["fee_currency"],
        "due_at_accommodation_amount": booked["due_at_accommodation_amount"],
        "due_at_accommodation_currency": booked["due_at_accommodation_currency"],
        "deposit_amount": null,
        "deposit_currency": rate.currency,
        "supported_loyalty_programme": null,
        "accommodation": accommodation,
    })
}

/// `POST /stays/bookings`: validates, checks the key and the quote, books, 201.
pub(crate) async fn create_booking(
    State(sim): State<Simulator>,
    body: Bytes,
) -> Result<Response, DuffelError> {
    let data = parse_data(&body)?;
    let mut c = Checker::default();
    let quote_id = c.string(&data, "quote_id", "/quote_id").map(str::to_owned);
    let mut guests = Vec::new();
    for (i, g) in c
        .array(&data, "guests", "/guests")
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let p = format!("/guests/{i}");
        let Some(m) = c.item(g, &p) else { continue };
        let given = c.string(m, "given_name", &format!("{p}/given_name"));
        let family = c.string(m, "family_name", &format!("{p}/family_name"));
        if let (Some(given), Some(family)) = (given, family) {
            guests.push(json!({"given_name": given, "family_name": family}));
        }
    }
    if data.contains_key("guests") && guests.is_empty() && c.errors.is_empty() {
        c.invalid("/guests", "At least one guest is required");
    }
    contact(&mut c, &data, "");
    let metadata = metadata(&mut c, &data);
    let Some(quote_id) = quote_id.filter(|_| c.errors.is_empty()) else {
        return Err(DuffelError::validation(c.errors));
    };
    let key = idempotency_key(metadata.as_ref());
    let quote = lock(&sim.inner.stay_rates).quotes.get(&quote_id).cloned();

    // One critical section from the duplicate check to the commit, so two concurrent attempts
    // with the same key cannot both book.
    let mut book = lock(&sim.inner.stay_bookings);
    if book.repeated(key.as_ref()) {
        return Err(duplicate());
    }
    let Some(quote) = quote else {
        return Err(DuffelError::not_found(&format!("quote '{quote_id}'")));
    };
    if !book.booked_offers.insert(quote_id) {
        book.duplicates += 1;
        return Err(duplicate());
    }
    book.created += 1;
    book.booked(key);
    let mut rng = Rng::new(sim.inner.seed ^ sim.next_seq());
    const REF: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let reference: String = (0..8).map(|_| *rng.pick(REF) as char).collect();
    let q = &quote.json;
    let now = ts(Utc::now());
    let json = json!({
        "id": sim.new_id("bok"),
        "reference": reference,
        "status": "confirmed",
        "check_in_date": q["check_in_date"],
        "check_out_date": q["check_out_date"],
        "rooms": q["rooms"],
        "accommodation": q["accommodation"],
        "guests": guests,
        "email": data.get("email"),
        "phone_number": data.get("phone_number"),
        "confirmed_at": now,
        "cancelled_at": null,
        "supported_loyalty_programme": null,
        "loyalty_programme_account_number": null,
        "metadata": metadata.map_or(Value::Null, Value::Object),
    });
    book.orders.push_back(json.clone());
    if book.orders.len() > KEPT_ORDERS {
        book.orders.pop_front();
    }
    drop(book);
    Ok(data_response(StatusCode::CREATED, json))
}

/// `GET /stays/bookings`: one page of bookings, newest first, and the next page's cursor.
pub(crate) async fn list_bookings(
    State(sim): State<Simulator>,
    Query(q): Query<ListQuery>,
) -> Result<Response, DuffelError> {
    page(&lock(&sim.inner.stay_bookings), &q)
}
