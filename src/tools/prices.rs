//! Ranking prices without exchange rates: every search adapter sorts and cuts its list here,
//! and the tools' texts say which currencies a result is in.
//!
//! The gateway has no exchange rates and invents none, so an amount is compared only with
//! amounts in its own currency: a list in several currencies is ranked currency by currency,
//! the most used first, and "cheapest" means the cheapest in that first currency.

/// Orders decimal money strings numerically; unparsable amounts sort last. Only amounts in one
/// currency are compared this way: the gateway has no exchange rates.
pub(crate) fn amount_key(amount: &str) -> f64 {
    amount.parse::<f64>().unwrap_or(f64::MAX)
}

/// The currencies of a list's prices, each once, the most used first (a tie in alphabetical
/// order, so the order does not depend on how the provider listed them). The gateway has no
/// exchange rates and invents none: an amount is compared only with amounts in its own
/// currency, and a list in several currencies is ranked currency by currency in this order, so
/// "cheapest" means the cheapest in the first currency.
pub fn currencies_by_use<'a>(currencies: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for currency in currencies {
        match counts.iter_mut().find(|(c, _)| *c == currency) {
            Some((_, n)) => *n += 1,
            None => counts.push((currency, 1)),
        }
    }
    counts.sort_by(|(a, m), (b, n)| n.cmp(m).then(a.cmp(b)));
    counts.into_iter().map(|(c, _)| c).collect()
}

/// What [`keep_cheapest`] says of the whole list before its cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Kept {
    /// How many items there were, for the result's total.
    pub(crate) total: u32,
    /// Their currencies, the most used first ([`currencies_by_use`]).
    pub(crate) currencies: Vec<String>,
}

/// Sorts `items` cheapest first by `price` (amount, currency) and keeps the first `max_results`
/// (10 when not given). Prices in several currencies are not compared with each other: the
/// items of the most used currency come first, cheapest first, then each other currency's in
/// [`currencies_by_use`] order, so the cut never drops a price for a smaller number in another
/// currency. Every search adapter answers this way.
pub(crate) fn keep_cheapest<T>(
    items: &mut Vec<T>,
    price: impl Fn(&T) -> (&str, &str),
    max_results: Option<u8>,
) -> Kept {
    let currencies: Vec<String> = currencies_by_use(items.iter().map(|i| price(i).1))
        .into_iter()
        .map(str::to_string)
        .collect();
    let rank = |item: &T| {
        let (amount, currency) = price(item);
        let group = currencies.iter().position(|c| c == currency);
        (group, amount_key(amount))
    };
    items.sort_by(|x, y| {
        let ((gx, ax), (gy, ay)) = (rank(x), rank(y));
        gx.cmp(&gy).then(ax.total_cmp(&ay))
    });
    let total = items.len() as u32;
    items.truncate(usize::from(max_results.unwrap_or(10)));
    Kept { total, currencies }
}

/// The currencies a search result priced in, the most used first: as the result lists them
/// (every item the provider returned, before the cut), or as the items shown have them when it
/// lists none.
pub(crate) fn result_currencies<'a>(
    listed: &'a [String],
    shown: impl IntoIterator<Item = &'a str>,
) -> Vec<&'a str> {
    if listed.is_empty() {
        currencies_by_use(shown)
    } else {
        listed.iter().map(String::as_str).collect()
    }
}

/// The cheapest of `items` priced in `currency` (by `price`: amount, currency).
pub(crate) fn cheapest_in<'a, T>(
    items: &'a [T],
    currency: &str,
    price: impl Fn(&T) -> (&str, &str),
) -> Option<&'a T> {
    items
        .iter()
        .filter(|i| price(i).1 == currency)
        .min_by(|a, b| amount_key(price(a).0).total_cmp(&amount_key(price(b).0)))
}

/// "GBP and EUR", "USD, EUR and GBP".
pub(crate) fn list_words(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// What a search's text says when its prices are in several currencies: which, and that they
/// are not compared (no exchange rates), so "cheapest" is within the first.
pub(crate) fn mixed_currencies_note(currencies: &[&str]) -> String {
    format!(
        " Prices are in {}, which this gateway does not convert or compare: results are ranked cheapest first within each currency, {} first, and \"cheapest\" means the cheapest in {}; do not compare prices across currencies.",
        list_words(currencies),
        currencies.first().copied().unwrap_or_default(),
        currencies.first().copied().unwrap_or_default(),
    )
}
