//! Duffel Stays bookings: quote the chosen rate (Duffel's final price and availability check),
//! then book the quote; and what reconciliation reads of a listed booking.
//!
//! Only the booking request can book: a failed or slow quote is marked
//! [`UpstreamError::before_write`], so the caller says "nothing was booked" and a background job
//! is requeued like a read. The booking carries the gateway's idempotency key in `metadata`
//! (Duffel's Booking object has a free `metadata` map), which `GET /stays/bookings` shows, so an
//! unknown outcome is looked up by it.

use std::time::Duration;

use reqwest::Method;

use super::lookup::{key_metadata, made_for, whose_duplicate};
use super::{DuffelClient, data_json, read_before_write, same_amount, wire, within_budget};
use crate::providers::error::UpstreamError;
use crate::tools::{WriteTerms, book_hotel};

impl DuffelClient {
    /// Quotes the rate (within half the attempt's time, so the booking keeps the other half),
    /// checks it against the call and the client's budget, then books it.
    pub(super) async fn book_stay(
        &self,
        a: &book_hotel::Args,
        terms: &WriteTerms,
        timeout: Duration,
    ) -> Result<book_hotel::Output, UpstreamError> {
        let url = self.url(&["stays", "quotes"], &[]);
        let body = wire::CreateQuote {
            rate_id: a.rate_id.clone(),
        };
        let quote: wire::Quote = read_before_write(
            timeout / 2,
            "the quote before the booking",
            self.send(Method::POST, url, Some(data_json(&body)?)),
        )
        .await?;
        if let Some(confirmed) = &a.confirmed_total_amount
            && !same_amount(confirmed, &quote.total_amount)
        {
            return Err(UpstreamError::refused_by_gateway(
                crate::texts::call::price_not_confirmed(
                    "book_hotel",
                    confirmed,
                    &quote.total_amount,
                    &quote.total_currency,
                ),
            ));
        }
        if let Some(limit) = &terms.spend_limit {
            within_budget(&quote.total_amount, &quote.total_currency, limit).await?;
        }
        let body = wire::CreateStaysBooking {
            quote_id: quote.id.clone(),
            guests: a
                .guests
                .iter()
                .map(|g| wire::StaysGuest {
                    given_name: g.given_name.clone(),
                    family_name: g.family_name.clone(),
                })
                .collect(),
            email: a.email.clone(),
            phone_number: a.phone_number.clone(),
            metadata: key_metadata(terms),
        };
        let url = self.url(&["stays", "bookings"], &[]);
        let booking = match self
            .send::<wire::StaysBooking>(Method::POST, url, Some(data_json(&body)?))
            .await
        {
            Ok(booking) => booking,
            Err(e) if e.is_already_done() => {
                let lookup = self.find_stay(made_for(terms), &terms.idempotency_key);
                whose_duplicate(e, lookup).await?
            }
            Err(e) => return Err(e),
        };
        Ok(output(
            booking,
            quote.total_amount,
            quote.total_currency,
            &terms.idempotency_key,
        ))
    }
}

/// The booking as the tool reports it, charged what the quote said.
pub(super) fn output(
    booking: wire::StaysBooking,
    total_amount: String,
    total_currency: String,
    idempotency_key: &str,
) -> book_hotel::Output {
    book_hotel::Output {
        booking_reference: booking
            .reference
            .clone()
            .unwrap_or_else(|| booking.id.clone()),
        hotel_name: booking.accommodation.map(|h| h.name),
        check_in_date: booking.check_in_date,
        check_out_date: booking.check_out_date,
        total_amount,
        total_currency,
        guests: booking
            .guests
            .iter()
            .map(|g| format!("{} {}", g.given_name, g.family_name))
            .collect(),
        booking_id: booking.id,
        idempotency_key: idempotency_key.to_string(),
    }
}
