//! What a provider's order lookup found: the booking a gateway sent under an idempotency key,
//! for reconciling a booking whose outcome was unknown.

/// A booking the provider holds under the idempotency key the gateway sent with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundBooking {
    /// The provider's order id.
    pub order_id: String,
    /// The booking reference to give the traveller.
    pub booking_reference: String,
    /// The amount charged, a decimal string.
    pub amount: String,
    /// Its ISO 4217 currency.
    pub currency: String,
}
