//! What the booking ledger answers for a client's idempotency key, before any provider is
//! asked: a booking asked again (booked, its outcome still being learned, nothing booked), a
//! key used before with other arguments, and a ledger the gateway cannot reach or write.
//!
//! Each says exactly what is known of the key and no more: a model relays it to a traveller
//! who may be charged, so "nothing was booked" appears only where the ledger shows it.

/// A booking asked again under its idempotency key, answered from the ledger.
pub fn booked_earlier(
    tool: &str,
    booking_reference: &str,
    order_id: &str,
    amount: &str,
    currency: &str,
) -> String {
    // A hotel booking is a "booking" at its provider, a flight booking an "order".
    let noun = if tool == "book_hotel" {
        "booking"
    } else {
        "order"
    };
    format!(
        "Already booked under this idempotency key: booking reference {booking_reference} ({noun} {order_id}), {amount} {currency} charged. Nothing new was booked by this {tool} call; give the traveller this booking reference."
    )
}

/// A background booking whose key the ledger holds `pending` for this same booking (another
/// request of its client, on any replica, is at the provider): the job's `last_error` while it
/// waits for that request's outcome, which it then answers with, booking nothing beside it.
pub fn pending_elsewhere(tool: &str) -> String {
    format!(
        "not run yet: a {tool} request under this idempotency key is at the provider now (another request of this client, with the same arguments); the job books nothing beside it and asks again until its outcome is known, then answers with that"
    )
}

/// A booking asked again under its idempotency key while its outcome is still being learned.
pub fn booking_unresolved(tool: &str) -> String {
    format!(
        "The earlier {tool} request with this idempotency key may have reached the provider and its outcome is not known yet (that request may still be under way; if it never answers, the gateway looks the booking up at the provider). Do not tell the traveller it is booked, and do not say nothing was booked either. Do not book again with a new idempotency key: call {tool} again in a minute with the same idempotency key to learn the outcome."
    )
}

/// A background booking's key sent again after its job ended and the ledger settled it as not
/// booked: a job's key is not run twice, so trying again takes a new key.
pub fn booking_failed_earlier(tool: &str) -> String {
    format!(
        "The earlier {tool} request with this idempotency key booked nothing and charged nothing (the provider holds no booking under it). Its background job has ended, so this key is not tried again: to book, send {tool} again with a new idempotency key, after checking the price with the traveller."
    )
}

/// An idempotency key used before with other arguments, or by another write tool
/// (`earlier_tool`; the key names one booking whatever the tool); `earlier_failed`: that
/// request booked nothing, so its outcome needs no looking up.
pub fn key_reused(tool: &str, earlier_tool: &str, earlier_failed: bool) -> String {
    if earlier_tool != tool {
        let earlier = if earlier_failed {
            ", which booked nothing"
        } else {
            ""
        };
        let next = if earlier_failed {
            "Send it again with a new idempotency key.".to_string()
        } else {
            format!(
                "For this booking use a new idempotency key; to learn the outcome of the earlier one, call {earlier_tool} again with its arguments exactly."
            )
        };
        return format!(
            "idempotency_key: this key was already used for a {earlier_tool} request{earlier}; a key names one booking whatever the tool, so nothing was sent for this {tool} call. {next}"
        );
    }
    if earlier_failed {
        return format!(
            "idempotency_key: this key was already used for a different {tool} request (other arguments), which booked nothing, so nothing was booked now either. A key stays tied to the arguments it was first sent with: send this request again with a new idempotency key."
        );
    }
    format!(
        "idempotency_key: this key was already used for a different {tool} request (other arguments), so nothing was booked. For a new booking use a new idempotency key; to learn the outcome of the earlier one, repeat its arguments exactly."
    )
}

/// A booking refused because its ledger entry could not be written or read before anything
/// was sent. The gateway does not know whether the key is new: an earlier request under it may
/// have booked (on this replica or another), so the text says what this request did and no
/// more.
pub fn ledger_unreachable(tool: &str) -> String {
    format!(
        "The {tool} request was not sent: the gateway could not reach its booking ledger, which it must write before any booking, so this request booked nothing and charged nothing. If this idempotency key was used before, whether that earlier request booked cannot be read right now. Tell the traveller exactly that, and call again in a minute with the same idempotency key to learn the outcome; do not book again under a new key before then."
    )
}

/// A booking refused because the gateway could not keep its budget in the ledger, after its
/// entry was written (so no earlier request under its key booked).
pub fn ledger_unwritable(tool: &str) -> String {
    format!(
        "The {tool} request was not sent: the gateway could not record it in its booking ledger first, so nothing was booked and nothing was charged. Tell the traveller exactly that, and offer to try again in a minute with the same idempotency key."
    )
}
