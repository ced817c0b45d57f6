//! What a booking refused by the client's daily budget says. The budget is the operator's
//! limit on what one client may spend per UTC day, counted from the bookings that hold part of
//! it: booked ones, and those still pending or of unknown outcome.

/// The offer costs more than is left of today's budget.
pub fn over_budget(amount: &str, currency: &str, remaining: &str, budget: &str) -> String {
    format!(
        "Not booked: this booking costs {amount} {currency}, and only {remaining} {currency} of this client's daily booking budget of {budget} {currency} is left today (UTC). Nothing was booked and nothing was charged. Tell the traveller; a cheaper offer may fit, or the budget resets at midnight UTC."
    )
}

/// The offer is priced in another currency than the budget's.
pub fn other_currency(amount: &str, currency: &str, budget: &str, budget_currency: &str) -> String {
    format!(
        "Not booked: this booking costs {amount} {currency}, but this client's daily booking budget is {budget} {budget_currency}, and bookings in another currency are refused. Nothing was booked and nothing was charged. Tell the traveller."
    )
}

/// Today's budget is already spent.
pub fn budget_spent(budget: &str, currency: &str) -> String {
    format!(
        "Not booked: this client's daily booking budget of {budget} {currency} is spent for today (UTC), so the booking was not sent to the provider. Nothing was booked and nothing was charged. Tell the traveller; the budget resets at midnight UTC."
    )
}
