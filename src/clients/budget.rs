//! [`DailyBudget`]: how much a client may book per UTC day, in one currency.
//!
//! The amount is held in ten-thousandths of the currency's unit ([`Amount`]), exactly, so a
//! budget and the booking amounts providers quote (decimal strings such as `"412.30"`) add up
//! without floating-point error. Enforcing the budget is the booking path's work; this room
//! only holds the configured value.

use std::fmt;

/// A non-negative amount of money in ten-thousandths of the currency's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Amount(u64);

/// Decimal places an [`Amount`] holds.
const PLACES: u32 = 4;

impl Amount {
    /// Parses a decimal such as `"412.3"` or `"500"` (at most 4 decimal places, no sign, no
    /// exponent); `None` otherwise.
    pub fn parse(text: &str) -> Option<Amount> {
        let text = text.trim();
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        if whole.is_empty()
            || fraction.len() > PLACES as usize
            || !whole.bytes().all(|b| b.is_ascii_digit())
            || !fraction.bytes().all(|b| b.is_ascii_digit())
            || (text.contains('.') && fraction.is_empty())
        {
            return None;
        }
        let whole: u64 = whole.parse().ok()?;
        let padded = format!("{fraction:0<width$}", width = PLACES as usize);
        let fraction: u64 = padded.parse().ok()?;
        whole
            .checked_mul(10u64.pow(PLACES))?
            .checked_add(fraction)
            .map(Amount)
    }

    /// The amount in ten-thousandths of the unit.
    pub fn ten_thousandths(self) -> u64 {
        self.0
    }

    /// The amount from ten-thousandths of the unit.
    pub fn from_ten_thousandths(value: u64) -> Amount {
        Amount(value)
    }
}

impl fmt::Display for Amount {
    /// Two decimals at least, more only when the amount has them (`500.00`, `0.125`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = 10u64.pow(PLACES);
        let fraction = format!("{:04}", self.0 % unit);
        let trimmed = fraction.trim_end_matches('0');
        let shown = if trimmed.len() < 2 {
            &fraction[..2]
        } else {
            trimmed
        };
        write!(f, "{}.{shown}", self.0 / unit)
    }
}

/// A client's booking budget per UTC day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DailyBudget {
    /// The most the client may book in one UTC day.
    pub amount: Amount,
    /// The ISO 4217 code of the budget's currency (`EUR`); bookings in another currency
    /// cannot be counted against it.
    pub currency: String,
}

impl DailyBudget {
    /// A budget of `amount` (a decimal) in `currency` (three upper-case letters); the text says
    /// what to fix otherwise.
    /// Both are checked: a wrong amount does not hide a wrong currency.
    pub fn new(amount: &str, currency: &str) -> Result<Self, String> {
        let parsed = Amount::parse(amount);
        let mut wrong = Vec::new();
        if parsed.is_none() {
            wrong.push(format!(
                "\"{amount}\" is not an amount; write a decimal such as \"500\" or \"1250.50\""
            ));
        }
        if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_uppercase()) {
            wrong.push(format!(
                "\"{currency}\" is not a currency code; write its ISO 4217 code, e.g. \"EUR\""
            ));
        }
        match parsed {
            Some(amount) if wrong.is_empty() => Ok(DailyBudget {
                amount,
                currency: currency.to_string(),
            }),
            _ => Err(wrong.join("; ")),
        }
    }
}

impl fmt::Display for DailyBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} per day", self.amount, self.currency)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_exact_decimals() {
        let ten_thousandths = |t: &str| Amount::parse(t).map(Amount::ten_thousandths);
        assert_eq!(ten_thousandths("500"), Some(5_000_000));
        assert_eq!(ten_thousandths("412.3"), Some(4_123_000));
        assert_eq!(ten_thousandths("0.0001"), Some(1));
        for bad in [
            "",
            "-1",
            "1e3",
            "1.",
            ".5",
            "1.23456",
            "1,5",
            "NaN",
            "99999999999999999999",
        ] {
            assert_eq!(Amount::parse(bad), None, "{bad:?}");
        }
        assert_eq!(
            Amount::parse("500").map(|a| a.to_string()).as_deref(),
            Some("500.00")
        );
        assert_eq!(
            Amount::parse("0.125").map(|a| a.to_string()).as_deref(),
            Some("0.125")
        );
    }

    #[test]
    fn budgets_name_what_is_wrong() {
        let ok = DailyBudget::new("1250.50", "EUR").map(|b| b.to_string());
        assert_eq!(ok.as_deref(), Ok("1250.50 EUR per day"));
        assert!(DailyBudget::new("lots", "EUR").is_err_and(|e| e.contains("decimal")));
        assert!(DailyBudget::new("10", "eur").is_err_and(|e| e.contains("ISO 4217")));
        assert!(
            DailyBudget::new("-5", "usd").is_err_and(|e| e.contains("\"-5\" is not an amount")
                && e.contains("\"usd\" is not a currency code")),
            "both mistakes at once"
        );
    }
}
