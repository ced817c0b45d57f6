//! The call path's texts: fallbacks, stale answers, refusals, unknown outcomes, and what a
//! background job says when it cannot run.

use std::fmt::Write as _;
use std::time::Duration;

use chrono::{DateTime, Utc};

/// The placeholders a fallback prompt may use; the config loader refuses any other.
pub const PLACEHOLDERS: &[&str] = &["tool", "retry_after_s", "provider", "available_tools"];

/// The values of a fallback prompt's placeholders.
#[derive(Debug, Clone)]
pub struct FallbackValues<'a> {
    /// `{tool}`.
    pub tool: &'a str,
    /// `{retry_after_s}`.
    pub retry_after_s: u64,
    /// `{provider}`: every provider that failed the call ([`providers`]).
    pub provider: &'a str,
    /// `{available_tools}`: tools whose breakers admit calls right now.
    pub available_tools: &'a [String],
}

/// A tool's fallback prompt with its placeholders filled (they were checked at config load, so
/// every `{…}` left is text). Every embedded prompt says "about {retry_after_s} seconds", which
/// reads "about 1 second" for 1, as a traveller would be told.
pub fn fallback(template: &str, v: &FallbackValues<'_>) -> String {
    let available = if v.available_tools.is_empty() {
        "none at the moment".to_string()
    } else {
        v.available_tools.join(", ")
    };
    let template = if v.retry_after_s == 1 {
        std::borrow::Cow::Owned(template.replace("{retry_after_s} seconds", "1 second"))
    } else {
        std::borrow::Cow::Borrowed(template)
    };
    template
        .replace("{tool}", v.tool)
        .replace("{retry_after_s}", &v.retry_after_s.to_string())
        .replace("{provider}", v.provider)
        .replace("{available_tools}", &available)
        .trim()
        .to_string()
}

/// The providers that failed, for a fallback's `{provider}`: "duffel", "duffel and amadeus",
/// "a, b and c".
pub fn providers(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The sentence added to a fallback while a provider's quota is used up (it resets in `left`).
pub fn quota_note(provider: &str, tool: &str, left: Duration) -> String {
    let days = left.as_secs() / 86_400;
    let when = if days >= 1 {
        format!("{days} day{}", if days == 1 { "" } else { "s" })
    } else {
        "a few hours".to_string()
    };
    format!(
        "\nThe {provider} account's request quota is used up and resets in about {when}; until then this provider cannot answer, so do not promise {tool} sooner."
    )
}

/// A stale answer: the last good result's `content`, introduced with its age. `priced` says
/// whether the tool's answers are prices or availability (`ToolSpec::priced`): only then does
/// the text say that they may have changed and must be confirmed before booking; any other
/// tool's (a flight's status, a developer's own http tool) says only that it may have changed.
pub fn stale(tool: &str, age: Duration, content: &str, priced: bool) -> String {
    // Sized once and written in place: `content` is the whole earlier answer (kilobytes), which
    // `format!` would copy again each time its guess of the length ran out, on every call a
    // stale result answers.
    let mut text = String::with_capacity(STALE_HEAD_LEN + tool.len() + content.len() + 16);
    text.push_str(STALE_MARK);
    write_age(&mut text, age);
    text.push_str(" old: ");
    text.push_str(tool);
    text.push_str(STALE_WHY);
    text.push_str(if priced { STALE_PRICED } else { STALE_UNPRICED });
    text.push(' ');
    text.push_str(content);
    text
}

/// The words that start every stale answer (the one stale mark the protocols look for).
const STALE_MARK: &str = "STALE RESULT, ";

/// Why an earlier result answers, after the tool's name.
const STALE_WHY: &str =
    " is not answering right now, so this is the last good result for the same request. ";

/// What a model is to do with an earlier answer of prices or availability.
const STALE_PRICED: &str =
    "Prices and availability may have changed since; say how old it is and confirm before booking.";

/// What a model is to do with any other earlier answer.
const STALE_UNPRICED: &str = "It may have changed since; say how old it is.";

/// The length of [`stale`]'s fixed words (the age and the tool's name aside), with the longer
/// of its two notes.
const STALE_HEAD_LEN: usize =
    STALE_MARK.len() + " old: ".len() + STALE_WHY.len() + STALE_PRICED.len() + 1;

/// "4 min", "35 s", "2 h 5 min": an age a model can repeat.
pub fn describe_age(age: Duration) -> String {
    let mut text = String::new();
    write_age(&mut text, age);
    text
}

fn write_age(text: &mut String, age: Duration) {
    let s = age.as_secs();
    // Writing to a String cannot fail.
    let _ = match s {
        0..60 => write!(text, "{s} s"),
        60..3600 => write!(text, "{} min", s / 60),
        _ => write!(text, "{} h {} min", s / 3600, (s % 3600) / 60),
    };
}

/// A provider refused an interactive call for a reason the model can fix, or because a booking
/// with the same details was already made and the adapter could not yet tell whose it is
/// (`already_done`; one it found under the call's own key is answered as booked instead).
/// A refused write (`write`) booked nothing; its key stays tied to the arguments it was sent
/// with, so a corrected call takes a new one.
pub fn rejected(tool: &str, message: &str, already_done: bool, write: bool) -> String {
    let next = if already_done {
        "Do not book again: tell the traveller that a booking with these details already exists, and that whether it is theirs is being checked; call again later with the same idempotency key to learn it (or see GET /v1/bookings)."
    } else if write {
        "Nothing was booked. Correct the arguments (or ask the traveller) and call again with a new idempotency key: a key stays tied to the arguments it was first sent with."
    } else {
        "Correct the arguments (or ask the traveller) and call again."
    };
    format!("{} {next}", rejected_background(tool, message))
}

/// A booking refused before its order request because the `confirmed` total is not what the
/// provider quotes now (`amount` `currency`): the gateway's own answer, whole. Whether the price
/// moved or the amount was copied wrong, the traveller must agree to the current total first.
pub fn price_not_confirmed(tool: &str, confirmed: &str, amount: &str, currency: &str) -> String {
    let what = if tool == "book_hotel" {
        "rate"
    } else {
        "offer"
    };
    format!(
        "Nothing was booked: confirmed_total_amount {confirmed} is not the total the provider quotes for this {what} now, {amount} {currency} (the price changed since it was shown, or the amount was copied wrong). Tell the traveller the current total and ask before booking; to book at it, call {tool} again with confirmed_total_amount \"{amount}\" and a new idempotency key."
    )
}

/// A booking of an offer or rate that `issuer` priced, sent to `booker`, the provider this
/// gateway books through: `issuer` takes no bookings here, so nothing the model corrects in
/// the arguments can help; only a new search that `booker` answers gives a bookable one.
pub fn not_bookable_here(tool: &str, id: &str, issuer: &str, booker: &str) -> String {
    let next = if tool == "book_hotel" {
        format!(
            "call search_hotels again (once {booker} answers it), check_hotel_availability on a hotel whose bookable is true, and book one of its rates"
        )
    } else {
        format!(
            "call search_flights again (once {booker} answers it) and book an offer whose bookable is true"
        )
    };
    format!(
        "Nothing was booked: {id} was priced by {issuer} for comparison only, and this gateway books only through {booker}, so {tool} cannot book it. Tell the traveller this price cannot be booked as it is; to book, {next}, with a new idempotency key."
    )
}

/// A booking refused because its offer was booked under another key (another client's, or
/// this client's earlier one): nothing was booked, and booking another offer at once could
/// book the traveller twice.
pub fn booked_under_another_key(tool: &str, message: &str) -> String {
    format!(
        "{} If this traveller booked it before under another idempotency key, that booking stands: GET /v1/bookings lists this client's bookings. Otherwise someone else has booked it. Do not book another offer before asking the traveller.",
        rejected_background(tool, message)
    )
}

/// A provider refused a background job: the job's result, with no next step (nobody waits).
pub fn rejected_background(tool: &str, message: &str) -> String {
    // A provider's (or a binding's) message may end a sentence itself: "… ask again later."
    let stop = if message.ends_with(['.', '!', '?']) {
        ""
    } else {
        "."
    };
    format!("The provider refused this {tool} request: {message}{stop}")
}

/// A background read the provider that would know could not answer (down, or its breaker
/// open), while the backup behind it lists nothing for it: the job's `last_error` while it
/// waits, saying it is an outage, never that the arguments are wrong.
pub fn unlisted_behind_outage(tool: &str, down: &str, backup: &str) -> String {
    format!(
        "{tool} not answered yet: {down} did not answer (down, or its breaker open), and {backup}, the backup, lists nothing for this call; the job asks again once {down} may be asked, and nothing needs to be done meanwhile"
    )
}

/// As [`unlisted_behind_outage`], when the provider that would know refused the gateway's own
/// credentials or setup: an operator must fix that (waiting does not), and the job's
/// `last_error` says so, as the log does.
pub fn unlisted_behind_misconfigured(tool: &str, down: &str, backup: &str) -> String {
    format!(
        "{tool} not answered yet: {down} refused the gateway's credentials or setup (misconfigured: an operator must fix the gateway's configuration for {down}; its log says what {down} answered), and {backup}, the backup, lists nothing for this call; the job asks again later"
    )
}

/// A write whose request reached the provider without a confirmation back.
pub fn uncertain_write(tool: &str, provider: &str) -> String {
    format!(
        "The {tool} request reached the provider ({provider}) but no confirmation came back, so it is not known whether it went through. Do not tell the traveller it is booked, and do not say nothing was booked either. Do not book again with a new idempotency key: call {tool} again later with the same idempotency key, which can never book twice, to learn the outcome."
    )
}

/// A write still under way when its caller's deadline came: it runs on to its end, and its
/// outcome lands in the ledger under the idempotency key.
pub fn write_still_running(tool: &str) -> String {
    format!(
        "The {tool} request is still under way at the provider: it takes longer than this call waited, and it is not known yet whether it will go through. Do not tell the traveller it is booked, and do not say nothing was booked either. Do not book again with a new idempotency key: call {tool} again shortly with the same idempotency key, which can never book twice, to learn the outcome."
    )
}

/// A write from configuration the provider confirmed with a success status and an empty body
/// (`204 No Content`, or `201 Created` with only a `Location` header): done, with no details.
pub fn done_without_details(tool: &str, status: u16) -> String {
    format!(
        "The {tool} request was carried out: the provider confirmed it (HTTP {status}) and sent no details back."
    )
}

/// A write the provider answered it did not carry out (Duffel `order_not_created`).
pub fn write_not_done(tool: &str, provider: &str) -> String {
    format!(
        "The {tool} request was not carried out: the provider ({provider}) answered that it could not create the order, so nothing was booked and nothing was charged. Tell the traveller exactly that. Do not retry on your own; if the traveller wants, check the price again and call {tool} again."
    )
}

/// A background call under an idempotency key its client used for job `job_id` with other
/// arguments.
pub fn job_key_reused(tool: &str, job_id: &str) -> String {
    format!(
        "idempotency_key: this key was already used for a different {tool} request (other arguments), job {job_id}, so nothing new was queued. For a new call use a new idempotency key; to follow the earlier one, poll job {job_id} or repeat its arguments exactly."
    )
}

/// An end as a model should repeat it: `2026-12-05 04:00 UTC`, to the minute, rounded up (a
/// window ending at 09:35:48 is "09:36": shown as 09:35, the model would call again too soon).
pub fn utc_time(at: DateTime<Utc>) -> String {
    let into_minute = at.timestamp_millis().rem_euclid(60_000);
    let at = match into_minute {
        0 => at,
        ms => at + chrono::TimeDelta::milliseconds(60_000 - ms),
    };
    at.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// A provider held by a scheduled maintenance window, as the maintenance texts name it.
#[derive(Debug, Clone, Copy)]
pub struct Hold<'a> {
    /// The provider not asked.
    pub provider: &'a str,
    /// When its window ends.
    pub until: DateTime<Utc>,
    /// The operator's reason.
    pub reason: &'a str,
}

/// "duffel until 2026-12-05 04:00 UTC (upgrade) and amadeus until …": each provider held, with
/// its window's end and reason, in the order given.
fn holds(held: &[Hold<'_>]) -> String {
    let each: Vec<String> = held
        .iter()
        .map(|h| format!("{} until {} ({})", h.provider, utc_time(h.until), h.reason))
        .collect();
    let each: Vec<&str> = each.iter().map(String::as_str).collect();
    providers(&each)
}

/// The sentence added to a fallback when some providers of the chain were not asked because a
/// scheduled maintenance window holds them (the others failed otherwise): each with its end.
pub fn held_note(held: &[Hold<'_>]) -> String {
    format!(
        "\nNot asked, held for scheduled maintenance: {}.",
        holds(held)
    )
}

/// A tool refused because every provider it was asked of is in a scheduled maintenance window
/// (`held`, each with its end and reason), so it is back at `back`, when the first window ends
/// (instead of the tool's fallback prompt, which speaks of an outage).
pub fn maintenance(
    tool: &str,
    held: &[Hold<'_>],
    back: DateTime<Utc>,
    available_tools: &[String],
) -> String {
    let available = if available_tools.is_empty() {
        "none at the moment".to_string()
    } else {
        available_tools.join(", ")
    };
    let (held, back) = (holds(held), utc_time(back));
    format!(
        "{tool} is down for scheduled maintenance: nothing is being asked of {held}. Nothing was fetched, so there are no results to show, and none should be guessed or made up. Tell the traveller this is planned maintenance and that {tool} should be back at {back}; do not call {tool} again before then. Meanwhile, offer to help with the tools that work now: {available}."
    )
}

/// A tool whose breaker an operator forced open (`POST /v1/breakers/{key}/force`): out of
/// service until it is handed back, with no time of return known.
pub fn forced_open(tool: &str, provider: &str, available_tools: &[String]) -> String {
    let available = if available_tools.is_empty() {
        "none at the moment".to_string()
    } else {
        available_tools.join(", ")
    };
    format!(
        "{tool} has been taken out of service by the gateway's operator: nothing is being asked of {provider}, and no time has been set for its return. Nothing was fetched, so there are no results to show, and none should be guessed or made up. Tell the traveller {tool} is unavailable for now, without promising when it will be back. Meanwhile, offer to help with the tools that work now: {available}."
    )
}

/// A read whose caller's own deadline (`deadline_ms`, `Faregate-Deadline-Ms`, MCP's `_meta`)
/// passed before `provider` answered, while no provider had failed it and its breaker admits
/// calls and has not seen it fail since its last answer: the tool is not known to be down, so neither "down" nor a time of return is said
/// (the fallback would say both, made up); whether the provider hangs or the deadline is
/// shorter than any answer takes, this is what is known.
pub fn deadline_cut(tool: &str, provider: &str) -> String {
    format!(
        "{tool} took longer than this call allowed, so the gateway stopped waiting: {provider} had not answered by then. Nothing came back, so there are no results to show, and none should be guessed or made up. Tell the traveller it took too long this time, and offer to try again."
    )
}

/// A background attempt held back by maintenance windows (`held`, the first ending at `back`):
/// the job's `last_error`.
pub fn maintenance_background(held: &[Hold<'_>], back: DateTime<Utc>) -> String {
    let each: Vec<String> = held
        .iter()
        .map(|h| {
            format!(
                "{}: scheduled maintenance until {} ({})",
                h.provider,
                utc_time(h.until),
                h.reason
            )
        })
        .collect();
    format!(
        "{}; the job waits until {}",
        each.join("; "),
        utc_time(back)
    )
}

/// A stored job not run because this replica does not serve its tool now; tried again after
/// `wait`.
pub fn job_tool_not_served_now(tool: &str, wait: std::time::Duration) -> String {
    format!(
        "not run: tool {tool} is not served by this replica's configuration (a reload removed it, or the configuration that adds it has not reached this replica yet); nothing was sent, and it is tried again in {} s until [jobs] max_age",
        wait.as_secs()
    )
}

/// A stored job not run because its client may not call `tool` now by this replica's client
/// configuration; tried again after `wait`.
pub fn job_not_allowed_now(tool: &str, wait: std::time::Duration) -> String {
    format!(
        "not run: this job's client may not call {tool} by the gateway's client configuration (a reload removed its key or narrowed what it may call, or has not reached this replica yet); nothing was sent, and it is tried again in {} s until [jobs] max_age",
        wait.as_secs()
    )
}

/// An interactive call refused because `tool`'s bulkhead was full: no provider was asked, so
/// none is named as failing (a model told "no answer is coming from amadeus" would report an
/// outage), and the wait is the time a slot needs to free.
pub fn busy(tool: &str, max_concurrent: u32, retry_after_s: u64) -> String {
    let calls = if max_concurrent == 1 { "call" } else { "calls" };
    let seconds = if retry_after_s == 1 {
        "1 second".to_string()
    } else {
        format!("{retry_after_s} seconds")
    };
    format!(
        "{tool} is busy: this gateway already has {max_concurrent} {tool} {calls} in progress, as many as it runs at once (the tool's max_concurrent). Nothing was sent to a provider, and no provider is known to be failing. Call {tool} again in about {seconds}."
    )
}

/// A background attempt that found the tool's bulkhead full.
pub fn bulkhead_full() -> String {
    "the tool's bulkhead was full".to_string()
}

/// A call refused because its client already has `slots` calls of `tool` in flight, all that
/// its share (`share`, as the configuration writes it) of the tool's `max_concurrent` allows:
/// the client's own doing, said so, with the limit's name and how to keep under it. Nothing was
/// sent, so the call may simply be made again once one of the client's calls has finished.
pub fn client_share_full(tool: &str, slots: u32, max_concurrent: u32, share: &str) -> String {
    let calls = if slots == 1 { "call" } else { "calls" };
    format!(
        "{tool} was not called: this client already has {slots} {tool} {calls} in flight, its share of the tool's {max_concurrent} concurrent calls ([limits] client_share_of_tool = {share}), which keeps one client from taking the tool from the others. Nothing was sent to the provider, and the tool itself is not failing. Make fewer {tool} calls at once: wait for one to finish, then call again."
    )
}

/// A background attempt refused because its client held its share of the tool: the job's
/// `last_error` while it waits, silently, for one of them to finish.
pub fn client_share_full_background(tool: &str, slots: u32, share: &str) -> String {
    format!(
        "not run: this job's client already had {slots} {tool} calls in flight, its share of the tool ([limits] client_share_of_tool = {share}); nothing was sent, and the job waits for one of them to finish"
    )
}

/// What a client over its share of a provider's rate-limit window sent, and what was left.
#[derive(Debug, Clone, Copy)]
pub struct ProviderShare<'a> {
    /// The provider.
    pub provider: &'a str,
    /// The requests the client sent to it in its window, from this replica.
    pub sent: u32,
    /// The requests every client sent to it in the window, from this replica.
    pub total: u32,
    /// The clients that sent them.
    pub clients: u32,
    /// The requests the provider said were left.
    pub remaining: u32,
    /// The requests its window allows.
    pub limit: u32,
    /// Whole seconds until the window resets.
    pub reset_s: u64,
    /// `[limits] provider_reserve`, as the configuration writes it.
    pub reserve: &'a str,
}

/// A call refused because its client sent more than its fair part of the requests to the
/// provider in the provider's current rate-limit window while the window runs low: the
/// client's own doing, said so, with the limit's name, why the quota is shared, and when to
/// call again. `others` are the chain's other providers that refused the client the same way.
pub fn client_share_of_provider(tool: &str, share: &ProviderShare<'_>, others: &[&str]) -> String {
    let ProviderShare {
        provider,
        sent,
        total,
        clients,
        remaining,
        limit,
        reset_s,
        reserve,
    } = *share;
    let also = if others.is_empty() {
        String::new()
    } else {
        format!(
            " The tool's other providers ({}) refused it for the same reason.",
            providers(others)
        )
    };
    format!(
        "{tool} was not called: this client sent {sent} of the {total} requests this gateway sent to {provider} in {provider}'s current rate-limit window, more than its fair part (1/{clients}: {clients} clients are calling {provider}), and {provider} has {remaining} of its {limit} requests left ([limits] provider_reserve = {reserve}). {provider}'s quota is shared by every client of this gateway, so what is left is kept for the others.{also} Nothing was sent, and the tool itself is not failing. Slow down: make fewer {tool} calls, and call again in {reset_s} s, when {provider}'s window resets."
    )
}

/// A background attempt refused because its client was over its share of the provider's
/// rate-limit window: the job's `last_error` while it waits, silently, for the window's reset.
pub fn client_share_of_provider_background(share: &ProviderShare<'_>) -> String {
    let ProviderShare {
        provider,
        sent,
        total,
        clients,
        remaining,
        limit,
        reset_s,
        reserve,
    } = *share;
    format!(
        "not run: this job's client had sent {sent} of the {total} requests this gateway sent to {provider} in its rate-limit window, more than its fair part (1/{clients}), with {remaining} of {limit} left ([limits] provider_reserve = {reserve}); nothing was sent, and the job waits for the window to reset in {reset_s} s"
    )
}

/// A background attempt whose deadline passed before a provider could be asked.
pub fn deadline_passed() -> String {
    "the deadline passed before a provider answered".to_string()
}

/// A progress message while a call waits: `failed` did not answer (`why`) and `next` is asked.
pub fn failing_over(tool: &str, failed: &str, why: &str, next: &str) -> String {
    format!("{tool}: {failed} failed ({why}), trying {next}")
}

/// A progress message while a call waits: `provider` failed (`why`) and is asked again after
/// `wait`.
pub fn retrying(tool: &str, provider: &str, why: &str, wait: Duration) -> String {
    format!(
        "{tool}: {provider} failed ({why}), trying it again in {:.1} s",
        wait.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_answer_says_its_age_then_repeats_the_old_text() {
        for (secs, age) in [(35, "35 s"), (240, "4 min"), (7_500, "2 h 5 min")] {
            let text = stale(
                "search_flights",
                Duration::from_secs(secs),
                "3 offers: BA117 …",
                true,
            );
            assert_eq!(
                text,
                format!(
                    "STALE RESULT, {age} old: search_flights is not answering right now, so this is the last good result for the same request. Prices and availability may have changed since; say how old it is and confirm before booking. 3 offers: BA117 …"
                )
            );
            assert_eq!(describe_age(Duration::from_secs(secs)), age);
        }
    }

    /// A tool whose answers are no prices (a flight's status, a developer's own tool) is not
    /// said to have prices that may have changed, nor to need confirming before a booking.
    #[test]
    fn a_stale_answer_without_prices_says_only_that_it_may_have_changed() {
        let text = stale(
            "get_flight_status",
            Duration::from_secs(240),
            "BA117 departs 15:45, gate B12.",
            false,
        );
        assert_eq!(
            text,
            "STALE RESULT, 4 min old: get_flight_status is not answering right now, so this is the last good result for the same request. It may have changed since; say how old it is. BA117 departs 15:45, gate B12."
        );
    }

    #[test]
    fn the_stale_head_is_sized_for_its_longest_words() {
        for priced in [true, false] {
            let text = stale("", Duration::ZERO, "", priced);
            assert!(text.len() - "0 s".len() <= STALE_HEAD_LEN, "{text}");
        }
    }

    #[test]
    fn one_second_is_one_second() {
        let values = |retry_after_s| FallbackValues {
            tool: "get_hotel_content",
            retry_after_s,
            provider: "amadeus",
            available_tools: &[],
        };
        let template = "Ask again in about {retry_after_s} seconds ({retry_after_s} s).";
        assert_eq!(
            fallback(template, &values(1)),
            "Ask again in about 1 second (1 s)."
        );
        assert_eq!(
            fallback(template, &values(2)),
            "Ask again in about 2 seconds (2 s)."
        );
    }

    #[test]
    fn every_placeholder_is_filled() {
        let text = fallback(
            "{tool} down at {provider}; back in {retry_after_s}s; try {available_tools}.\n",
            &FallbackValues {
                tool: "search_flights",
                retry_after_s: 30,
                provider: "duffel",
                available_tools: &["search_hotels".into(), "check_hotel_availability".into()],
            },
        );
        assert_eq!(
            text,
            "search_flights down at duffel; back in 30s; try search_hotels, check_hotel_availability."
        );
        let all: String = PLACEHOLDERS.iter().map(|p| format!("{{{p}}}")).collect();
        let values = FallbackValues {
            tool: "t",
            retry_after_s: 1,
            provider: "p",
            available_tools: &[],
        };
        assert!(!fallback(&all, &values).contains('{'), "every listed one");
    }

    #[test]
    fn no_available_tools_is_said_in_words() {
        let text = fallback(
            "Use {available_tools}.",
            &FallbackValues {
                tool: "t",
                retry_after_s: 1,
                provider: "p",
                available_tools: &[],
            },
        );
        assert_eq!(text, "Use none at the moment.");
    }

    #[test]
    fn failed_providers_are_listed_in_words() {
        assert_eq!(providers(&["duffel"]), "duffel");
        assert_eq!(providers(&["duffel", "amadeus"]), "duffel and amadeus");
        assert_eq!(providers(&["a", "b", "c"]), "a, b and c");
    }

    #[test]
    fn an_end_is_never_shown_before_it_comes() {
        let at = |text: &str| {
            DateTime::parse_from_rfc3339(text)
                .map(|t| t.with_timezone(&Utc))
                .unwrap_or_else(|e| panic!("{e}"))
        };
        assert_eq!(utc_time(at("2026-12-06T09:35:48Z")), "2026-12-06 09:36 UTC");
        assert_eq!(
            utc_time(at("2026-12-06T09:35:00.001Z")),
            "2026-12-06 09:36 UTC"
        );
        assert_eq!(utc_time(at("2026-12-06T09:35:00Z")), "2026-12-06 09:35 UTC");
        assert_eq!(utc_time(at("2026-12-31T23:59:30Z")), "2027-01-01 00:00 UTC");
    }

    #[test]
    fn ages_read_naturally() {
        assert_eq!(describe_age(Duration::from_secs(35)), "35 s");
        assert_eq!(describe_age(Duration::from_secs(240)), "4 min");
        assert_eq!(describe_age(Duration::from_secs(7500)), "2 h 5 min");
    }

    #[test]
    fn refusals_say_what_to_do_next_only_when_someone_waits() {
        assert_eq!(
            rejected("search_flights", "unknown airport XXX", false, false),
            "The provider refused this search_flights request: unknown airport XXX. Correct the arguments (or ask the traveller) and call again."
        );
        assert!(
            rejected("book_hotel", "the rate is no longer available", false, true).ends_with(
                "Nothing was booked. Correct the arguments (or ask the traveller) and call again with a new idempotency key: a key stays tied to the arguments it was first sent with."
            )
        );
        assert!(rejected("book_flight", "already booked", true, true).ends_with(
            "call again later with the same idempotency key to learn it (or see GET /v1/bookings)."
        ));
        assert_eq!(
            rejected_background("book_flight", "offer expired"),
            "The provider refused this book_flight request: offer expired."
        );
        assert_eq!(
            rejected_background("get_flight_status", "none listed; ask again later."),
            "The provider refused this get_flight_status request: none listed; ask again later.",
            "one full stop"
        );
    }

    #[test]
    fn maintenance_names_every_window_and_the_first_end() {
        let at = |h, m| {
            DateTime::parse_from_rfc3339(&format!("2026-12-06T{h:02}:{m:02}:48Z"))
                .map(|t| t.to_utc())
                .unwrap_or_default()
        };
        let held = [
            Hold {
                provider: "amadeus",
                until: at(10, 20),
                reason: "Probe weekly",
            },
            Hold {
                provider: "duffel",
                until: at(9, 35),
                reason: "upgrade",
            },
        ];
        let text = maintenance("search_flights", &held, at(9, 35), &[]);
        assert!(text.starts_with(
            "search_flights is down for scheduled maintenance: nothing is being asked of amadeus until 2026-12-06 10:21 UTC (Probe weekly) and duffel until 2026-12-06 09:36 UTC (upgrade). "
        ), "{text}");
        assert!(text.contains("search_flights should be back at 2026-12-06 09:36 UTC; do not call search_flights again before then."), "{text}");
        assert_eq!(
            maintenance_background(&held[..1], at(10, 20)),
            "amadeus: scheduled maintenance until 2026-12-06 10:21 UTC (Probe weekly); the job waits until 2026-12-06 10:21 UTC"
        );
    }

    #[test]
    fn a_quota_note_counts_days_or_says_hours() {
        let day = Duration::from_secs(86_400);
        assert!(quota_note("amadeus", "search_flights", day * 3).contains("about 3 days;"));
        assert!(quota_note("amadeus", "search_flights", day).contains("about 1 day;"));
        assert!(quota_note("amadeus", "search_flights", day / 2).contains("about a few hours;"));
    }
}
