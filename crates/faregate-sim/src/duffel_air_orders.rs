//! Duffel Air orders: `POST /air/orders` (book one offer) and `GET /air/orders` (list them,
//! newest first, `limit` 1–200 (default 50), cursor `after` from the previous page's
//! `meta.after`).
//!
//! Checks run in this order: body shape (422 `validation_error`, every problem at once), then,
//! under one lock, the idempotency key (`metadata.faregate_idempotency_key` already booked for
//! the same `metadata.faregate_client`: 422 `duplicate_booking`), the offer (unknown or expired: 422 `offer_no_longer_available`;
//! already booked: 422 `duplicate_booking`), passengers, services and payment against the
//! offer (422 naming the field), and finally the commit. Nothing is recorded for a refused
//! order except the duplicate counters.

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use super::data::{Rng, fmt_minor, parse_minor};
use super::store::{KEPT_ORDERS, OrderBook, StoredOffer};
use super::validate::Checker;
use super::wire::{DuffelError, ErrorItem, data_response, parse_data};
use super::{Simulator, lock};

pub(crate) fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// A validated order body.
struct OrderIn {
    instant: bool,
    offer_id: String,
    passengers: Vec<(usize, Map<String, Value>)>,
    payment: Option<(i64, String)>,
    services: Vec<(String, u64)>,
    metadata: Option<Map<String, Value>>,
}

fn parse_order(data: &Map<String, Value>) -> Result<OrderIn, DuffelError> {
    let mut c = Checker::default();
    let kind = c.one_of(data, "type", "/type", &["instant", "pay_later"]);
    let offer_id = match c.array(data, "selected_offers", "/selected_offers") {
        Some([Value::String(id)]) => Some(id.clone()),
        Some([_]) => {
            c.invalid("/selected_offers/0", "Offer ids must be strings");
            None
        }
        Some(_) => {
            c.invalid("/selected_offers", "Exactly one offer must be selected");
            None
        }
        None => None,
    };
    let mut passengers = Vec::new();
    for (i, v) in c
        .array(data, "passengers", "/passengers")
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let p = format!("/passengers/{i}");
        let Some(m) = c.item(v, &p) else { continue };
        c.string(m, "id", &format!("{p}/id"));
        c.string(m, "given_name", &format!("{p}/given_name"));
        c.string(m, "family_name", &format!("{p}/family_name"));
        if let Some(born) = c.date(m, "born_on", &format!("{p}/born_on"))
            && born >= Utc::now().date_naive()
        {
            c.invalid(
                &format!("{p}/born_on"),
                "Field 'born_on' must be in the past",
            );
        }
        c.one_of(m, "gender", &format!("{p}/gender"), &["m", "f"]);
        c.one_of(
            m,
            "title",
            &format!("{p}/title"),
            &["mr", "ms", "mrs", "miss", "dr"],
        );
        contact(&mut c, m, &p);
        passengers.push((i, m.clone()));
    }
    let mut payment = None;
    if kind == Some("instant") {
        match c.array(data, "payments", "/payments") {
            Some([Value::Object(m)]) => {
                c.one_of(m, "type", "/payments/0/type", &["balance", "arc_bsp_cash"]);
                let amount = c.string(m, "amount", "/payments/0/amount").and_then(|a| {
                    let parsed = parse_minor(a);
                    if parsed.is_none() {
                        c.invalid(
                            "/payments/0/amount",
                            format!(
                                "Field 'amount' must be a decimal string like \"812.40\", got '{a}'"
                            ),
                        );
                    }
                    parsed
                });
                let currency = c.string(m, "currency", "/payments/0/currency");
                if let (Some(a), Some(cur)) = (amount, currency) {
                    payment = Some((a, cur.to_owned()));
                }
            }
            Some(_) => c.invalid(
                "/payments",
                "Exactly one payment object is required for an instant order",
            ),
            None => {}
        }
    }
    let mut services = Vec::new();
    if let Some(v) = data.get("services").filter(|v| !v.is_null()) {
        match v.as_array() {
            Some(list) => {
                for (i, s) in list.iter().enumerate() {
                    let p = format!("/services/{i}");
                    let Some(m) = c.item(s, &p) else { continue };
                    let id = c.string(m, "id", &format!("{p}/id"));
                    let qty = c.int_in(m, "quantity", &format!("{p}/quantity"), 1, 9);
                    if let (Some(id), Some(q)) = (id, qty) {
                        services.push((id.to_owned(), q));
                    }
                }
            }
            None => c.invalid("/services", "Field 'services' must be an array"),
        }
    }
    let metadata = metadata(&mut c, data);
    match (kind, offer_id) {
        (Some(kind), Some(offer_id)) if c.errors.is_empty() => Ok(OrderIn {
            instant: kind == "instant",
            offer_id,
            passengers,
            payment,
            services,
            metadata,
        }),
        _ => Err(DuffelError::validation(c.errors)),
    }
}

/// Checks `email` and `phone_number` of `m` (at JSON pointer `p`), as orders and stays
/// bookings require them.
pub(crate) fn contact(c: &mut Checker, m: &Map<String, Value>, p: &str) {
    if let Some(email) = c.string(m, "email", &format!("{p}/email"))
        && (!email.contains('@') || email.starts_with('@') || email.ends_with('@'))
    {
        c.invalid(
            &format!("{p}/email"),
            format!("Field 'email' is not a valid email address: '{email}'"),
        );
    }
    if let Some(phone) = c.string(m, "phone_number", &format!("{p}/phone_number")) {
        let digits = phone.strip_prefix('+').unwrap_or("");
        if !(7..=15).contains(&digits.len())
            || !digits.bytes().all(|b| b.is_ascii_digit())
            || digits.starts_with('0')
        {
            c.invalid(&format!("{p}/phone_number"), format!("Field 'phone_number' must be in E.164 format (e.g. +442080160508), got '{phone}'"));
        }
    }
}

/// The optional `metadata` object: at most 50 string values, keys of at most 40 characters.
pub(crate) fn metadata(c: &mut Checker, data: &Map<String, Value>) -> Option<Map<String, Value>> {
    match data.get("metadata") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => {
            if m.len() > 50 {
                c.invalid("/metadata", "Field 'metadata' can have at most 50 keys");
            }
            for (k, v) in m {
                if !v.is_string() || k.len() > 40 || v.as_str().is_some_and(|s| s.len() > 500) {
                    c.invalid(&format!("/metadata/{k}"), "Metadata keys must be at most 40 characters and values strings of at most 500");
                }
            }
            Some(m.clone())
        }
        Some(_) => {
            c.invalid("/metadata", "Field 'metadata' must be an object of strings");
            None
        }
    }
}

/// The idempotency key a body's metadata carries, with the client it names
/// (`faregate_client`), if any: each client's keys are its own.
pub(crate) fn idempotency_key(
    metadata: Option<&Map<String, Value>>,
) -> Option<(Option<String>, String)> {
    let text = |k: &str| {
        metadata
            .and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    Some((text("faregate_client"), text("faregate_idempotency_key")?))
}

pub(crate) fn duplicate() -> DuffelError {
    DuffelError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_state_error",
        "duplicate_booking",
        "Duplicate booking",
        "A booking with the same details was already found",
    )
}

/// `POST /air/orders`: validates, checks the offer and the idempotency key, books, 201.
pub(crate) async fn create_order(
    State(sim): State<Simulator>,
    body: Bytes,
) -> Result<Response, DuffelError> {
    let data = parse_data(&body)?;
    let order = parse_order(&data)?;
    let key = idempotency_key(order.metadata.as_ref());
    let offer = lock(&sim.inner.offers).get(&order.offer_id).cloned();
    let now = Utc::now();

    // One critical section from the duplicate check to the commit, so two concurrent attempts
    // with the same key cannot both book.
    let mut book = lock(&sim.inner.orders);
    if book.repeated(key.as_ref()) {
        return Err(duplicate());
    }
    let Some(offer) = offer.filter(|o| o.expires_at > now) else {
        return Err(DuffelError::offer_gone());
    };
    if book.booked_offers.contains(&order.offer_id) {
        book.duplicates += 1;
        if let Some((_, k)) = &key {
            book.by_key
                .entry(k.clone())
                .or_default()
                .duplicates_rejected += 1;
        }
        return Err(duplicate());
    }
    let extra = check_against_offer(&order, &offer)?;
    book.booked_offers.insert(order.offer_id.clone());
    book.created += 1;
    book.booked(key);
    let json = order_json(&sim, &order, &offer, extra, now);
    book.orders.push_back(json.clone());
    if book.orders.len() > KEPT_ORDERS {
        book.orders.pop_front();
    }
    drop(book);
    Ok(data_response(StatusCode::CREATED, json))
}

/// The query of `GET /air/orders`.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct ListQuery {
    limit: Option<String>,
    after: Option<String>,
}

/// The cursor prefix: a cursor is the count of newer orders already listed.
const CURSOR: &str = "g2w_";

/// `GET /air/orders`: one page of orders, newest first, and the next page's cursor.
pub(crate) async fn list_orders(
    State(sim): State<Simulator>,
    Query(q): Query<ListQuery>,
) -> Result<Response, DuffelError> {
    page(&lock(&sim.inner.orders), &q)
}

/// One page of `book`'s orders (or stays bookings), newest first, as Duffel lists them:
/// `limit` 1–200 (default 50) and the cursor `after` from the previous page's `meta.after`.
pub(crate) fn page(book: &OrderBook, q: &ListQuery) -> Result<Response, DuffelError> {
    let limit = match q.limit.as_deref().map(str::parse::<usize>) {
        None => 50,
        Some(Ok(n)) if (1..=200).contains(&n) => n,
        Some(_) => {
            return Err(DuffelError::validation(vec![ErrorItem::validation(
                "invalid_field",
                "/limit",
                "Field 'limit' must be an integer between 1 and 200",
            )]));
        }
    };
    let skip = match q.after.as_deref() {
        None => 0,
        Some(c) => match c.strip_prefix(CURSOR).and_then(|n| n.parse::<usize>().ok()) {
            Some(n) => n,
            None => {
                return Err(DuffelError::validation(vec![ErrorItem::validation(
                    "invalid_field",
                    "/after",
                    "Field 'after' is not a cursor this API issued",
                )]));
            }
        },
    };
    let page: Vec<Value> = book
        .orders
        .iter()
        .rev()
        .skip(skip)
        .take(limit)
        .cloned()
        .collect();
    let next =
        (skip + page.len() < book.orders.len()).then(|| format!("{CURSOR}{}", skip + page.len()));
    let body = json!({
        "data": page,
        "meta": {"limit": limit, "after": next, "before": null},
    });
    Ok((StatusCode::OK, axum::Json(body)).into_response())
}

/// Checks passengers, services and payment against the offer; returns the chosen services.
fn check_against_offer(
    order: &OrderIn,
    offer: &StoredOffer,
) -> Result<(i64, Vec<Value>), DuffelError> {
    let mut errors = Vec::new();
    let mut seen = Vec::new();
    for (i, m) in &order.passengers {
        let id = m.get("id").and_then(Value::as_str).unwrap_or_default();
        if !offer.passenger_ids.iter().any(|p| p == id) {
            errors.push(ErrorItem::validation(
                "invalid_field",
                &format!("/passengers/{i}/id"),
                format!(
                    "Passenger '{id}' is not a passenger of offer '{}'",
                    order.offer_id
                ),
            ));
        } else if seen.contains(&id) {
            errors.push(ErrorItem::validation(
                "invalid_field",
                &format!("/passengers/{i}/id"),
                format!("Passenger '{id}' is listed twice"),
            ));
        }
        seen.push(id);
    }
    for p in &offer.passenger_ids {
        if !seen.contains(&p.as_str()) {
            errors.push(ErrorItem::validation(
                "validation_required",
                "/passengers",
                format!("Passenger '{p}' of the offer is missing from 'passengers'"),
            ));
        }
    }
    if !order.instant && offer.requires_instant_payment {
        errors.push(ErrorItem::validation(
            "invalid_field",
            "/type",
            "This offer requires instant payment; use type 'instant'",
        ));
    }
    let mut services_minor = 0;
    let mut chosen = Vec::new();
    let offered = offer.services.value();
    let offered = offered.as_array().map_or(&[][..], Vec::as_slice);
    for (i, (id, qty)) in order.services.iter().enumerate() {
        match offered.iter().find(|s| s["id"] == id.as_str()) {
            Some(s)
                if s["maximum_quantity"]
                    .as_u64()
                    .is_some_and(|max| *qty <= max) =>
            {
                let price = s["total_amount"]
                    .as_str()
                    .and_then(parse_minor)
                    .unwrap_or(0);
                services_minor += price * *qty as i64;
                let mut s = s.clone();
                s["quantity"] = json!(qty);
                chosen.push(s);
            }
            Some(_) => errors.push(ErrorItem::validation(
                "invalid_field",
                &format!("/services/{i}/quantity"),
                "Quantity exceeds the service's maximum_quantity",
            )),
            None => errors.push(ErrorItem::validation(
                "invalid_field",
                &format!("/services/{i}/id"),
                format!("Service '{id}' is not available on this offer"),
            )),
        }
    }
    let expected = offer.total_minor + services_minor;
    if let Some((amount, currency)) = &order.payment {
        if *currency != offer.currency {
            errors.push(ErrorItem::validation(
                "invalid_field",
                "/payments/0/currency",
                format!(
                    "Payment currency '{currency}' does not match the offer currency '{}'",
                    offer.currency
                ),
            ));
        } else if *amount != expected {
            errors.push(ErrorItem::validation("invalid_field", "/payments/0/amount", format!(
                "Payment amount {} {currency} does not match the amount due {} {currency} (offer total_amount plus services)",
                fmt_minor(*amount), fmt_minor(expected))));
        }
    }
    if errors.is_empty() {
        Ok((services_minor, chosen))
    } else {
        Err(DuffelError::validation(errors))
    }
}

fn order_json(
    sim: &Simulator,
    order: &OrderIn,
    offer: &StoredOffer,
    (services_minor, services): (i64, Vec<Value>),
    now: DateTime<Utc>,
) -> Value {
    let o = &offer.json.value();
    let mut rng = Rng::new(sim.inner.seed ^ sim.next_seq());
    const PNR: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let booking_reference: String = (0..6).map(|_| *rng.pick(PNR) as char).collect();
    let passengers: Vec<Value> = order
        .passengers
        .iter()
        .map(|(_, m)| {
            let id = m.get("id").cloned().unwrap_or(Value::Null);
            let kind = o["passengers"]
                .as_array()
                .and_then(|ps| ps.iter().find(|p| p["id"] == id))
                .map_or(Value::Null, |p| p["type"].clone());
            let mut p = m.clone();
            p.insert("type".into(), kind);
            p.entry("infant_passenger_id").or_insert(Value::Null);
            Value::Object(p)
        })
        .collect();
    let documents: Vec<Value> = if order.instant {
        passengers.iter().map(|p| json!({ "type": "electronic_ticket", "unique_identifier": format!("125{:010}", rng.range(0, 9_999_999_999)), "passenger_ids": [p["id"]] })).collect()
    } else {
        Vec::new()
    };
    let payment_status = if order.instant {
        json!({ "awaiting_payment": false, "payment_required_by": null, "price_guarantee_expires_at": null, "paid_at": ts(now) })
    } else {
        json!({ "awaiting_payment": true, "payment_required_by": o["payment_requirements"]["payment_required_by"],
                "price_guarantee_expires_at": o["payment_requirements"]["price_guarantee_expires_at"], "paid_at": null })
    };
    json!({
        "id": sim.new_id("ord"),
        "booking_reference": booking_reference,
        "live_mode": false,
        "type": if order.instant { "instant" } else { "pay_later" },
        "offer_id": order.offer_id,
        "total_amount": fmt_minor(offer.total_minor + services_minor),
        "total_currency": offer.currency,
        "base_amount": o["base_amount"], "base_currency": o["base_currency"],
        "tax_amount": o["tax_amount"], "tax_currency": o["tax_currency"],
        "payment_status": payment_status,
        "available_actions": if order.instant { json!(["cancel", "change", "update"]) } else { json!(["cancel", "update"]) },
        "owner": o["owner"],
        "created_at": ts(now),
        "synced_at": ts(now),
        "cancelled_at": null,
        "passengers": passengers,
        "slices": o["slices"],
        "services": services,
        "documents": documents,
        "conditions": o["conditions"],
        "content": "managed",
        "metadata": order.metadata.clone().map_or(Value::Null, Value::Object),
    })
}
