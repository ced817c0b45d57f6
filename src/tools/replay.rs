//! What a booking's result says was booked, and a booking answered again from the ledger in
//! its tool's result shape: the ids and amounts the ledger keeps, and the names the arguments
//! sent again give (the ledger keeps none).

use serde_json::Value;

use super::book_hotel;

/// What a booking tool's result says was booked: what the ledger keeps of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Booked<'a> {
    /// The provider's order or booking id.
    pub id: &'a str,
    /// The reference to give the traveller.
    pub reference: &'a str,
    /// The amount charged, a decimal string.
    pub amount: &'a str,
    /// Its ISO 4217 currency.
    pub currency: &'a str,
}

/// The names a booking's arguments give, its travellers' or its guests' ("given family", in
/// their order), as its result lists them: an answer from the ledger, which keeps no names,
/// takes them from the arguments sent again with the key (the same arguments, or the key is
/// refused).
pub fn booked_names(arguments: &Value) -> Vec<String> {
    let people = arguments
        .get("travellers")
        .or_else(|| arguments.get("guests"))
        .and_then(Value::as_array);
    let name = |p: &Value| {
        let given = p.get("given_name")?.as_str()?;
        let family = p.get("family_name")?.as_str()?;
        Some(format!("{given} {family}"))
    };
    people.map_or_else(Vec::new, |people| people.iter().filter_map(name).collect())
}

/// The `data` of a booking answered again from the ledger, in the shape of `tool`'s result:
/// its ids and amounts, and `names` (from the arguments sent again, [`booked_names`]) as its
/// travellers or guests; a hotel's name and dates are not kept, so they are `null`.
pub fn replayed_data(
    tool: &str,
    booked: &Booked<'_>,
    idempotency_key: &str,
    names: &[String],
) -> Value {
    if tool == book_hotel::SPEC.name {
        serde_json::json!({
            "booking_reference": booked.reference,
            "booking_id": booked.id,
            "hotel_name": null,
            "check_in_date": null,
            "check_out_date": null,
            "total_amount": booked.amount,
            "total_currency": booked.currency,
            "guests": names,
            "idempotency_key": idempotency_key,
        })
    } else {
        serde_json::json!({
            "booking_reference": booked.reference,
            "order_id": booked.id,
            "total_amount": booked.amount,
            "total_currency": booked.currency,
            "travellers": names,
            "idempotency_key": idempotency_key,
        })
    }
}
