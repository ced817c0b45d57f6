//! What a model reads about watches: the watch tools' descriptions and argument descriptions,
//! their answers, why a watch was not created, changed or found (the native `/v1/watches` API
//! answers the same sentences as its error messages), and a notice's news.

/// `watch_create`'s title.
pub const CREATE_TITLE: &str = "Watch a fare or a flight";

/// `watch_create`'s description.
pub const CREATE_DESCRIPTION: &str = "Watch a fare or a flight for the traveller: faregate calls one of your read-only tools again and again in the background and keeps only news (a price under a line, a price move, a delay, a gate change), never the runs where nothing changed. Use it when the traveller asks to be told later, such as \"tell me if the price drops below 400\" or \"let me know if my flight is delayed\". The first run is the baseline later runs are compared with. Read the news with watch_list.";

/// `watch_list`'s title.
pub const LIST_TITLE: &str = "List watches and their news";

/// `watch_list`'s description.
pub const LIST_DESCRIPTION: &str = "List the traveller's watches: what each one calls, how often, its state, its next run and its latest news. Call it when the traveller asks what a watch found. A watch without news has seen no change; a watch also stays silent while its provider is down.";

/// `watch_delete`'s title.
pub const DELETE_TITLE: &str = "Stop a watch";

/// `watch_delete`'s description.
pub const DELETE_DESCRIPTION: &str = "Stop and remove a watch by its watch_id (from watch_create or watch_list), for example once the traveller has booked or no longer needs it. Its news goes with it.";

/// `watch_create`'s `tool`.
pub const ARG_TOOL: &str = "The name of one of your read-only tools to call on every run (a search, a price check or a flight status); a booking tool cannot be watched.";

/// `watch_create`'s `arguments`.
pub const ARG_ARGUMENTS: &str = "That tool's arguments, exactly as you would call the tool, written as a JSON object in a string, for example \"{\\\"origin\\\": \\\"LHR\\\", \\\"destination\\\": \\\"JFK\\\", \\\"departure_date\\\": \\\"2026-12-24\\\"}\".";

/// `watch_create`'s `every`.
pub const ARG_EVERY: &str = "How often to run it, as a duration such as \"15m\", \"1h\" or \"6h\". An interval under the tool's minimum is refused with the minimum named; the longest is \"30d\".";

/// `watch_create`'s `condition`.
pub const ARG_CONDITION: &str = "What counts as news; null means any change of the result. price_below and price_change read the lowest price of a search or price check; status_changed, delay_over and gate_changed read a flight status.";

/// `price_below`'s `amount`.
pub const ARG_AMOUNT: &str =
    "The price line, in the result's currency: news when the lowest price falls below it.";

/// `price_change`'s `share`.
pub const ARG_SHARE: &str = "The move, as a share of the last price (0.05 is 5 %): news when the lowest price moves by more.";

/// `delay_over`'s `minutes`.
pub const ARG_MINUTES: &str =
    "The delay line, in minutes: news when the flight's delay goes over it.";

/// `watch_create`'s `ends`.
pub const ARG_ENDS: &str = "When the watch ends; null means it runs until it is deleted.";

/// `ends.at`.
pub const ARG_ENDS_AT: &str =
    "No run after this time, in RFC 3339 such as \"2026-12-24T00:00:00Z\"; null for none.";

/// `ends.after_runs`.
pub const ARG_AFTER_RUNS: &str = "At most this many runs; null for no limit.";

/// `ends.at_departure`.
pub const ARG_AT_DEPARTURE: &str =
    "End once the watched flight has departed (flight status only); null or false otherwise.";

/// `watch_delete`'s `watch_id`.
pub const ARG_WATCH_ID: &str = "The watch's id, from watch_create or watch_list.";

/// A watch was created; `what` describes it (see [`watch`]).
pub fn created(id: &str, what: &str) -> String {
    format!(
        "Watch {id} is set: {what}. Its first run is now and is the baseline; later runs keep only news, which watch_list shows. Tell the traveller what is being watched, not that anything changed."
    )
}

/// One watch in words: `tool` with `arguments` (compact JSON) every `every`, its news rule and
/// its end.
pub fn watch(tool: &str, arguments: &str, every: &str, condition: &str, ends: &str) -> String {
    format!("{tool} {arguments} every {every}, news on {condition}, {ends}")
}

/// "1 run", "3 runs".
fn runs(n: u32) -> String {
    if n == 1 {
        "1 run".to_string()
    } else {
        format!("{n} runs")
    }
}

/// A watch's end in words, from its parts.
pub fn ends(at: Option<&str>, after_runs: Option<u32>, at_departure: bool) -> String {
    let mut parts = Vec::new();
    if let Some(at) = at {
        parts.push(format!("until {at}"));
    }
    if let Some(n) = after_runs {
        parts.push(format!("for at most {}", runs(n)));
    }
    if at_departure {
        parts.push("until the flight departs".to_string());
    }
    if parts.is_empty() {
        "until deleted".to_string()
    } else {
        parts.join(", ")
    }
}

/// The caller has no watches.
pub const NO_WATCHES: &str = "There are no watches.";

/// The head of a list of `n` watches.
pub fn listed(n: usize) -> String {
    match n {
        1 => "1 watch:".to_string(),
        n => format!("{n} watches:"),
    }
}

/// One listed watch: its id and description, state and run count, next run or last error, and
/// its newest news as `(when, text)`, newest first.
pub fn list_entry(
    id: &str,
    what: &str,
    state: &str,
    runs: u32,
    next_run: Option<&str>,
    last_error: Option<&str>,
    news: &[(String, String)],
) -> String {
    let mut out = format!("- watch {id}: {what}; {state}, {}", self::runs(runs));
    if let Some(next) = next_run {
        out.push_str(&format!(", next run at {next}"));
    }
    if let Some(error) = last_error {
        out.push_str(&format!(
            "; last run had no answer: {}",
            error.trim_end_matches('.')
        ));
    }
    if news.is_empty() {
        out.push_str(". No news yet.");
    } else {
        out.push_str(". News, newest first:");
        for (when, text) in news {
            out.push_str(&format!("\n  - {when}: {text}"));
        }
    }
    out
}

/// A watch was deleted.
pub fn deleted(id: &str) -> String {
    format!("Watch {id} is stopped and removed; it will report nothing more.")
}

/// No watch by that id belongs to the caller.
pub fn no_watch(id: &str) -> String {
    format!("There is no watch {id}; watch_list lists the watches there are.")
}

/// The gateway keeps no watches.
pub const WATCHES_OFF: &str =
    "watches are off: this gateway runs without a job store, so nothing can be watched";

/// The watch store did not answer.
pub const WATCH_STORE_DOWN: &str = "the watch store is not answering; try again shortly";

/// `every` is not a duration.
pub fn every_not_a_duration(every: &str, why: &str) -> String {
    format!("every = \"{every}\" is not a duration ({why}); write e.g. \"15m\" or \"1h\"")
}

/// `ends.at` is not a time.
pub fn ends_at_not_a_time(at: &str, why: &str) -> String {
    format!(
        "ends.at = \"{at}\" is not an RFC 3339 time ({why}); write e.g. \"2026-12-24T18:00:00Z\""
    )
}

/// `ends.at` has passed.
pub fn ends_at_passed(at: &str) -> String {
    format!(
        "ends.at = \"{at}\" has passed, so the watch would never run; give a time to come, or leave ends.at out"
    )
}

/// `ends.after_runs` is zero.
pub const NO_RUNS: &str = "ends.after_runs = 0 would never run; use 1 or more, or leave it out";

/// `arguments` of `watch_create` is a string that is not a JSON object.
pub fn arguments_not_an_object(why: &str) -> String {
    format!(
        "arguments must be the watched tool's arguments as a JSON object (or that object written in a string): {why}"
    )
}

/// A watch's run refused by the provider as it stands (an offer that has expired, a flight it
/// does not know): asking again would be refused again, so the watch has ended. `why` is the
/// run's text.
pub fn refused_ended(tool: &str, why: &str) -> String {
    let why = why.trim_end_matches('.');
    format!(
        "This watch has ended: {tool} refused its call ({why}), and would refuse it again at every run. Set a new watch with arguments that hold now (for an offer that has expired, search again and watch the new one)."
    )
}

/// Why a watch's instant passed without a run: its client may not call `tool` now (a reload
/// narrowed its scope, or took its key away). `ended`: that was its last instant.
pub fn no_longer_allowed(tool: &str, ended: bool) -> String {
    let then = if ended {
        "and the watch has reached its end"
    } else {
        "it runs again once the client may, or delete it"
    };
    format!(
        "not run: this watch's client may no longer call {tool} (the gateway's client configuration changed); {then}"
    )
}

/// No tool `tool` is served; `watchable` are the read tools that are.
pub fn not_served(tool: &str, watchable: &[&str]) -> String {
    let meant = super::agents::closest(tool, watchable)
        .map_or(String::new(), |m| format!(" (did you mean {m}?)"));
    format!(
        "no tool \"{tool}\" is served{meant}; watchable tools: {}",
        watchable.join(", ")
    )
}

/// `tool` books, and a watch repeats its call; `watchable` are the read tools to watch instead.
pub fn write_tool(tool: &str, watchable: &[&str]) -> String {
    let head = format!(
        "{tool} is a write tool, and a watch calls read-only tools only (it runs again and again)"
    );
    match watchable {
        [] => format!("{head}; this client may call no read-only tool to watch"),
        _ => format!("{head}; watch one of {}", watchable.join(", ")),
    }
}

/// `every` (as written back) is under `tool`'s `minimum`.
pub fn under_minimum(every: &str, tool: &str, minimum: &str) -> String {
    format!(
        "every = \"{every}\" is under {tool}'s minimum interval of {minimum} (so watches cannot exhaust the provider's quota); use \"{minimum}\" or longer"
    )
}

/// An interval over the longest a watch may wait between runs.
pub fn over_maximum(every: &str, maximum: &str) -> String {
    format!(
        "every = \"{every}\" is over the longest interval a watch may have, {maximum}; use \"{maximum}\" or shorter (a watch that runs that seldom would report news too late to act on)"
    )
}

/// `ends.at_departure` on a tool that watches no flight.
pub fn departure_needs_a_flight(tool: &str, flight_status: &str) -> String {
    format!(
        "ends.at_departure needs a flight to depart, and only {flight_status} watches one; for {tool} end with ends.at or ends.after_runs"
    )
}

/// The client keeps `max` active watches already.
pub fn full(max: u32) -> String {
    format!(
        "this client already has {max} active watches, the most it may keep ([watches] max_active_per_client); delete one first (watch_delete, or DELETE /v1/watches/{{id}}), or pause one through the API (POST /v1/watches/{{id}}/pause): a paused watch does not count"
    )
}

/// Watch `id` is in `state`, not active.
pub fn not_active(id: &str, state: &str) -> String {
    format!("watch {id} is {state}, not active; only an active watch can be paused")
}

/// Watch `id` is in `state`, not paused.
pub fn not_paused(id: &str, state: &str) -> String {
    format!("watch {id} is {state}, not paused; only a paused watch can be resumed")
}

/// Watch `id` changed between its read and its write.
pub fn changed_meanwhile(id: &str) -> String {
    format!("watch {id} changed meanwhile; read it again")
}

/// A condition that is not one; `why` is the reader's complaint.
pub fn condition_unreadable(why: &str) -> String {
    format!(
        "condition: {why}; write {{\"kind\": \"any_change\"}}, {{\"kind\": \"price_below\", \"amount\": 400}}, {{\"kind\": \"price_change\", \"share\": 0.05}}, {{\"kind\": \"status_changed\"}}, {{\"kind\": \"delay_over\", \"minutes\": 30}} or {{\"kind\": \"gate_changed\"}}"
    )
}

/// A price rule `kind` on `tool`, whose results carry no price; `priced` are the tools whose
/// results do, `instead` the other rules that fit `tool` (written after "any_change").
pub fn reads_no_price(kind: &str, tool: &str, priced: &[&str], instead: &str) -> String {
    format!(
        "condition {kind} reads a price, and {tool} has none; use it with {}, or use any_change{instead}",
        priced.join(", ")
    )
}

/// A flight rule `kind` on `tool`, which watches no flight; `instead` as for
/// [`reads_no_price`].
pub fn reads_no_status(kind: &str, tool: &str, flight_status: &str, instead: &str) -> String {
    format!(
        "condition {kind} reads a flight's status, and only {flight_status} has one; for {tool} use any_change{instead}"
    )
}

/// `price_below` with an amount that is no price.
pub fn bad_amount(amount: f64) -> String {
    format!("condition price_below needs an amount above 0, got {amount}")
}

/// `price_change` with a share out of range.
pub fn bad_share(share: f64) -> String {
    format!("condition price_change needs a share above 0 and at most 1 (0.05 = 5 %), got {share}")
}

/// News: the result's text changed to `now`.
pub fn changed(now: &str) -> String {
    format!("changed: {now}")
}

/// News: the lowest price fell below `amount`.
pub fn price_below(amount: f64, now: f64, currency: &str) -> String {
    format!("price fell below {amount}: now {now:.2} {currency}")
}

/// News: the lowest price moved from `before` to `now`.
pub fn price_moved(before: f64, now: f64, currency: &str) -> String {
    format!(
        "price moved {:+.1} %: from {before:.2} to {now:.2} {currency}",
        (now - before) / before * 100.0
    )
}

/// News: a flight's status changed; `status` is its text now.
pub fn status_changed(status: &str) -> String {
    format!("status changed: {status}")
}

/// News: the delay went over `minutes`.
pub fn delayed(now: u32, minutes: u32, status: &str) -> String {
    format!("delayed {now} min (over {minutes}): {status}")
}

/// News: a gate or terminal changed.
pub fn gate_changed(status: &str) -> String {
    format!("gate or terminal changed: {status}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_counted_in_words() {
        assert_eq!(ends(None, Some(1), false), "for at most 1 run");
        assert_eq!(ends(None, Some(3), false), "for at most 3 runs");
        let one = list_entry("w1", "search_flights", "active", 1, None, None, &[]);
        assert!(
            one.starts_with("- watch w1: search_flights; active, 1 run. "),
            "{one}"
        );
        let none = list_entry("w2", "search_flights", "active", 0, None, None, &[]);
        assert!(none.contains("active, 0 runs"), "{none}");
    }
}
