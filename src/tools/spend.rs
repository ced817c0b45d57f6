//! Money a booking may spend: amounts as the providers write them (decimal strings) read into
//! exact integers, and the limit a client's daily budget leaves for one booking.
//!
//! The adapter learns a booking's price only when it reads the offer (or quotes the rate), so
//! the budget is held there, through [`Reserve`]: the call path implements it over the ledger,
//! where the check and the hold are one step for all of a client's bookings at once.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;

/// How many units of an amount make one unit of currency: amounts are kept in ten-thousandths,
/// exact for every ISO 4217 currency (none has more than four decimals).
const SCALE: i64 = 10_000;

/// An exact, non-negative amount of money (ten-thousandths of the currency unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Amount(i64);

impl Amount {
    /// Reads `"812.40"`, `"12"` or `"0.5"`: digits, at most one dot, at most four decimals.
    pub fn parse(text: &str) -> Option<Amount> {
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() || !digits(whole) || !digits(fraction) || fraction.len() > 4 {
            return None;
        }
        let whole: i64 = whole.parse().ok()?;
        let padded = format!("{fraction:0<4}");
        let fraction: i64 = padded.parse().ok()?;
        whole.checked_mul(SCALE)?.checked_add(fraction).map(Amount)
    }

    /// The amount in ten-thousandths of the currency unit.
    pub fn units(self) -> i64 {
        self.0
    }

    /// The amount of `units` ten-thousandths (a negative count is zero).
    pub fn from_units(units: i64) -> Amount {
        Amount(units.max(0))
    }

    /// The sum, or `None` past what an `i64` holds.
    pub fn checked_add(self, other: Amount) -> Option<Amount> {
        self.0.checked_add(other.0).map(Amount)
    }

    /// What is left of `self` after `spent` (zero when nothing is).
    pub fn saturating_sub(self, spent: Amount) -> Amount {
        Amount((self.0 - spent.0).max(0))
    }
}

impl fmt::Display for Amount {
    /// Two decimals, or as many as the amount needs (up to four).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.0 / SCALE;
        let mut fraction = format!("{:04}", self.0 % SCALE);
        while fraction.len() > 2 && fraction.ends_with('0') {
            fraction.pop();
        }
        write!(f, "{whole}.{fraction}")
    }
}

/// A client's daily booking budget: what its confirmed bookings may cost per UTC day, in one
/// currency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    /// The most per UTC day.
    pub per_day: Amount,
    /// Its ISO 4217 currency; bookings priced in another are refused.
    pub currency: String,
}

/// What a client's daily budget leaves for one booking, handed to the provider adapter, which
/// learns the price only when it reads the offer: an order that costs more, or is priced in
/// another currency, is refused before the order request, and one that fits is held with
/// [`SpendLimit::reserve`] before it is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpendLimit {
    /// What was left of today's budget when the booking began (other bookings may hold more
    /// of it by the time the price is known: the reservation decides).
    pub remaining: Amount,
    /// The budget's ISO 4217 currency.
    pub currency: String,
    /// The whole daily budget, for the refusal's text.
    pub budget: Amount,
    /// Holds the price in the ledger, atomically with the client's other bookings.
    pub reserve: Reservation,
}

/// Holds part of a client's daily budget for one booking.
pub trait Reserve: Send + Sync + fmt::Debug {
    /// Holds `amount` (the budget's currency) for this booking, in one step with every other
    /// booking of the client. `Err` is the whole text to answer: the budget has no room left
    /// for it, or the hold could not be written; either way nothing may be sent.
    fn reserve(&self, amount: Amount) -> BoxFuture<'_, Result<(), String>>;
}

/// A shared [`Reserve`]; two are equal when they are the same one.
#[derive(Debug, Clone)]
pub struct Reservation(pub Arc<dyn Reserve>);

impl PartialEq for Reservation {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Reservation {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_read_exactly_and_print_as_written() {
        let read = |s| Amount::parse(s).map(|a| a.to_string());
        assert_eq!(read("812.40").as_deref(), Some("812.40"));
        assert_eq!(read("12").as_deref(), Some("12.00"));
        assert_eq!(read("0.5").as_deref(), Some("0.50"));
        assert_eq!(read("1.2345").as_deref(), Some("1.2345"));
        for bad in ["", ".5", "1.23456", "-1", "1,5", "1.2.3", "abc"] {
            assert_eq!(Amount::parse(bad), None, "{bad}");
        }
        let a = Amount::parse("0.10").unwrap_or_default();
        let b = Amount::parse("0.20").unwrap_or_default();
        assert_eq!(
            a.checked_add(b),
            Amount::parse("0.30"),
            "exact, unlike floats"
        );
        assert_eq!(a.saturating_sub(b), Amount::default());
    }
}
