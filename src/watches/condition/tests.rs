use serde_json::{Value, json};

use super::*;

fn offers(prices: &[&str]) -> Value {
    json!({"status": "ok", "content": format!("{} offers", prices.len()), "data": {
        "offers": prices.iter().map(|p| json!({"offer_id": "off_x", "total_amount": p, "total_currency": "EUR"})).collect::<Vec<_>>()
    }})
}

fn flight(delay: Option<u32>, gate: &str) -> Value {
    json!({"status": "ok", "content": format!("BA 117 delay {delay:?} gate {gate}"), "data": {"flights": [{
    "carrier_code": "BA", "flight_number": "117", "scheduled_departure_date": "2026-12-03",
    "points": [
        {"airport": "LHR", "departure": {"scheduled": "2026-12-03T08:15+00:00", "latest": null,
          "delay_minutes": delay, "terminal": "5", "gate": gate}, "arrival": null},
        {"airport": "JFK", "departure": null, "arrival": {"scheduled": "2026-12-03T11:15-05:00",
          "latest": null, "delay_minutes": null, "terminal": null, "gate": null}}
    ]}]}})
}

#[test]
fn conditions_that_do_not_fit_the_tool_are_refused_naming_the_fix() {
    let cases: &[(&str, Value, &str)] = &[
        (
            "get_flight_status",
            json!({"kind": "price_below", "amount": 400}),
            "status_changed",
        ),
        (
            "search_hotels",
            json!({"kind": "delay_over", "minutes": 30}),
            "price_below",
        ),
        (
            "search_flights",
            json!({"kind": "price_below", "amount": -1}),
            "above 0",
        ),
        (
            "search_flights",
            json!({"kind": "price_change", "share": 5}),
            "at most 1",
        ),
        ("search_flights", json!({"kind": "cheaper"}), "price_below"),
        ("search_flights", json!({"kind": "price_below"}), "amount"),
    ];
    for (tool, body, fix) in cases {
        let err = Condition::parse(tool, Some(body)).expect_err("refused");
        assert!(err.contains(fix), "{tool} {body}: {err}");
    }
    assert_eq!(
        Condition::parse("search_flights", None),
        Ok(Condition::AnyChange)
    );
    assert_eq!(
        Condition::parse(
            "get_flight_status",
            Some(&json!({"kind": "delay_over", "minutes": 30}))
        ),
        Ok(Condition::DelayOver { minutes: 30 })
    );
}

/// The runs of a watch in order: which of them are news.
fn fired(condition: &Condition, runs: &[Value]) -> Vec<usize> {
    let mut previous: Option<&Value> = None;
    let mut out = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        if condition.news(previous, run).is_some() {
            out.push(i);
        }
        previous = Some(run);
    }
    out
}

#[test]
fn each_rule_fires_on_its_news_only() {
    let below = Condition::PriceBelow { amount: 400.0 };
    let prices = [
        offers(&["450.00", "470.00"]),
        offers(&["430.00"]),
        offers(&["399.00", "500.00"]),
        offers(&["380.00"]),
        offers(&["410.00"]),
        offers(&["390.00"]),
    ];
    assert_eq!(fired(&below, &prices), vec![2, 5], "each crossing once");
    assert_eq!(
        fired(&below, &[offers(&["380.00"]), offers(&["370.00"])]),
        vec![0],
        "already below on the first run: one notice"
    );
    let change = Condition::PriceChange { share: 0.05 };
    assert_eq!(fired(&change, &prices), vec![2, 4], "moves over 5 % only");

    let unavailable = json!({"status": "unavailable", "content": "down", "data": null});
    assert_eq!(
        fired(
            &below,
            &[
                offers(&["450.00"]),
                unavailable.clone(),
                offers(&["450.00"])
            ]
        ),
        Vec::<usize>::new(),
        "a failed run is no news"
    );

    let runs = [
        flight(None, "A1"),
        flight(None, "A1"),
        flight(Some(40), "A1"),
        flight(Some(40), "A1"),
        flight(Some(40), "B7"),
        flight(Some(40), "B7"),
    ];
    assert_eq!(fired(&Condition::StatusChanged, &runs), vec![2, 4]);
    assert_eq!(fired(&Condition::DelayOver { minutes: 30 }, &runs), vec![2]);
    assert_eq!(
        fired(&Condition::DelayOver { minutes: 60 }, &runs),
        Vec::<usize>::new()
    );
    assert_eq!(fired(&Condition::GateChanged, &runs), vec![4]);
    assert_eq!(fired(&Condition::AnyChange, &runs), vec![2, 4]);
}

#[test]
fn news_says_what_changed() {
    let text = Condition::PriceBelow { amount: 400.0 }
        .news(Some(&offers(&["450.00"])), &offers(&["399.00"]))
        .expect("news");
    assert_eq!(text, "price fell below 400: now 399.00 EUR");
    assert_eq!(
        departure(&flight(None, "A1")).as_deref(),
        Some("2026-12-03T08:15+00:00")
    );
}

fn priced(prices: &[(&str, &str)]) -> Value {
    json!({"status": "ok", "content": format!("{} hotels", prices.len()), "data": {
        "hotels": prices.iter().map(|(amount, currency)| json!({"hotel_result_id": "srr_x",
            "cheapest_total_amount": amount, "currency": currency})).collect::<Vec<_>>()
    }})
}

/// The gateway has no exchange rates: a result in several currencies is read in the one most
/// of its prices are in, and a price in another currency is never compared with a line or an
/// earlier price.
#[test]
fn price_rules_never_compare_amounts_across_currencies() {
    let mixed = priced(&[
        ("236.00", "EUR"),
        ("230.00", "GBP"),
        ("336.00", "GBP"),
        ("452.00", "EUR"),
        ("615.00", "GBP"),
    ]);
    assert_eq!(lowest_price(&mixed), Some((230.0, "GBP".to_string())));
    let tie = priced(&[
        ("236.00", "GBP"),
        ("120.00", "USD"),
        ("452.00", "EUR"),
        ("10.00", "USD"),
        ("9.00", "EUR"),
    ]);
    assert_eq!(
        lowest_price(&tie),
        Some((9.0, "EUR".to_string())),
        "a tie goes to the first currency alphabetically, as the search ranked it"
    );

    let change = Condition::PriceChange { share: 0.05 };
    let eur = priced(&[("300.00", "EUR")]);
    let gbp = priced(&[("200.00", "GBP")]);
    assert_eq!(
        fired(&change, &[eur.clone(), gbp.clone(), eur.clone()]),
        Vec::<usize>::new()
    );

    let below = Condition::PriceBelow { amount: 250.0 };
    assert_eq!(
        fired(
            &below,
            &[priced(&[("240.00", "GBP")]), priced(&[("245.00", "EUR")])]
        ),
        vec![0, 1],
        "below in GBP says nothing of EUR: the first EUR result is read as a first run"
    );
    assert_eq!(
        fired(&below, &[priced(&[("300.00", "EUR")]), mixed]),
        vec![1],
        "230 GBP is the lowest in the result's currency; 236 EUR would not cross"
    );
}
