//! What a model reads from the agent protocols (OpenAI, Anthropic, MCP) and from the native
//! endpoint's background answers: the status prefixes of a tool result, the unknown-tool text,
//! the queued-job texts and the per-call argument problems.
//!
//! A status prefix comes first and in brackets (`[unavailable; retry after 30 s]`), so a model
//! (and a person reading a transcript) sees what happened before the details.

/// A result with data: the text, then the data as compact JSON (ids the model needs next, such
/// as `offer_id`, are in the data).
pub fn with_data(content: &str, data_json: &str) -> String {
    format!("{content}\n\nData (JSON): {data_json}")
}

/// A tool that cannot answer now, with when to try again if that is known.
pub fn unavailable(retry_after_s: Option<u64>, content: &str) -> String {
    match retry_after_s {
        Some(s) => format!("[unavailable; retry after {s} s] {content}"),
        None => format!("[unavailable] {content}"),
    }
}

/// The provider refused the request for a reason the model can fix.
pub fn rejected(content: &str) -> String {
    format!("[rejected] {content}")
}

/// The arguments (or the tool name) are wrong; `content` says what to fix.
pub fn invalid_arguments(content: &str) -> String {
    format!("[invalid_arguments] {content}")
}

/// The usage prompt of one tool (MCP `prompts/get`): what it does, the arguments it needs, and
/// how to treat a write. `required` and `optional` are argument names in schema order.
pub fn tool_usage(
    name: &str,
    title: &str,
    description: &str,
    required: &[&str],
    optional: &[&str],
    books: bool,
) -> String {
    let mut text = format!("Use the tool {name} ({title}). {}", description.trim());
    if !required.is_empty() {
        text.push_str(&format!("\n\nRequired arguments: {}.", required.join(", ")));
    }
    if !optional.is_empty() {
        text.push_str(&format!("\nOptional arguments: {}.", optional.join(", ")));
    }
    if books {
        text.push_str("\n\nThis tool books: call it only after the traveller agreed to the exact offer and price, and repeat a booking only with the same arguments, so that it can never book twice.");
    } else {
        text.push_str("\n\nThis tool only reads: calling it again is harmless.");
    }
    text.push_str(" Read the result's status first (ok, stale, unavailable, rejected, invalid_arguments) and follow the agent guidance for it.");
    text
}

/// A call stored as a background job.
pub fn queued(job_id: &str, content: &str) -> String {
    format!("[queued: job {job_id}] {content}")
}

/// A tool that is not served, naming the ones that are: the one text for it. The native
/// endpoint answers it as its 404 message, the agent protocols as an `invalid_arguments`
/// result, and MCP as its `-32602` error.
pub fn unknown_tool(name: &str, known: &[&str]) -> String {
    let known_list = known.join(", ");
    match closest(name, known) {
        Some(meant) => format!(
            "There is no tool \"{name}\". Did you mean {meant}? The tools are: {known_list}. Call one of them by its exact name."
        ),
        None => format!(
            "There is no tool \"{name}\"; the tools are: {known_list}. Call one of them by its exact name."
        ),
    }
}

/// Why `GET /v1/jobs?tool=name` found nothing: no tool `name` is served (the caller's tools are
/// `known`), so the filter was most likely mistyped.
pub fn no_jobs_of_unknown_tool(name: &str, known: &[&str]) -> String {
    let meant = closest(name, known).map_or(String::new(), |m| format!(" (did you mean {m}?)"));
    format!(
        "no tool \"{name}\" is served{meant} and no job of it is stored; filter by one of: {}",
        known.join(", ")
    )
}

/// The name in `known` that `name` most likely misspells: the same but for case and `-` for
/// `_`, or at most two edits away (`search_flight`, `serch_flights`); `None` when none is that
/// close or two are equally close.
pub fn closest<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    let plain = |s: &str| s.to_ascii_lowercase().replace('-', "_");
    let name = plain(name);
    let mut best: Option<(usize, &'a str)> = None;
    let mut tied = false;
    for candidate in known {
        let distance = strsim::levenshtein(&name, &plain(candidate));
        match best {
            _ if distance > 2 => {}
            Some((d, _)) if distance == d => tied = true,
            Some((d, _)) if distance > d => {}
            _ => {
                best = Some((distance, candidate));
                tied = false;
            }
        }
    }
    best.filter(|_| !tied).map(|(_, m)| m)
}

/// A background call stored as a new job; `callback` when the call named a callback URL (the
/// OpenAI and Anthropic routes take none, so their text names only the poll).
pub fn job_accepted(job_id: &str, callback: bool) -> String {
    let also = if callback { " and the callback" } else { "" };
    format!(
        "Accepted for background processing as job {job_id}. The result arrives through GET /v1/jobs/{job_id}{also}, not in this turn."
    )
}

/// A background call whose idempotency key names an existing job.
pub fn job_exists(tool: &str, job_id: &str, job_status: &str) -> String {
    format!(
        "This idempotency key was already used for {tool}: job {job_id} ({job_status}) is that request."
    )
}

/// A background call whose idempotency key names a job that ended without a result (`dead`
/// or `cancelled`; `last_error` is what the job says).
pub fn job_ended_without_result(
    tool: &str,
    job_id: &str,
    job_status: &str,
    last_error: Option<&str>,
) -> String {
    // A cancelled job's last error is the try before its client cancelled it, not why it
    // ended: said as such.
    let why = match (job_status, last_error) {
        ("cancelled", Some(e)) => {
            format!(": its client cancelled it before it ran (its last try had failed: {e})")
        }
        ("cancelled", None) => ": its client cancelled it before it ran".to_string(),
        (_, Some(e)) => format!(": {e}"),
        (_, None) => String::new(),
    };
    format!(
        "This idempotency key was already used for {tool}: job {job_id} is that request, and it ended {job_status} without a result{why}. Nothing more is done under this key; to run the call again, send it with a new idempotency key."
    )
}

/// A background call whose idempotency key starts as a watch's runs' keys do.
pub fn key_kept_for_watches(prefix: &str) -> String {
    format!(
        "idempotency_key must not start with \"{prefix}\" (in any case): keys that start so name the runs of watches; choose another key"
    )
}

/// A booking job's ledger entry while the job goes on after an attempt that booked nothing
/// (`last`: why that attempt failed, as the ledger says it).
pub fn job_booking_again(last: &str) -> String {
    format!(
        "not booked yet: the last attempt booked nothing ({last}), and the job tries again; this reads booked or failed once the job ends"
    )
}

/// An interactive booking sent under the idempotency key of a background job of the same
/// client and tool that has not ended: the key names that booking, so nothing is sent now.
pub fn booking_in_background(tool: &str, job_id: &str, job_status: &str) -> String {
    format!(
        "Nothing was sent by this call: this idempotency key is already being booked in the background, as {tool} job {job_id} ({job_status}), and that job may still book. Tell the traveller the booking is in progress, neither made nor failed yet. Its outcome arrives through GET /v1/jobs/{job_id}; sending this key again answers with it once the job has ended. Do not book again under a new key meanwhile."
    )
}

/// A job that is due but whose tool admits no calls now.
pub fn job_waiting_on_tool(tool: &str) -> String {
    format!(
        "due, and waiting: {tool} admits no calls now (its providers' breakers are open, forced open or in maintenance); the job runs once one admits calls again, and nothing needs to be done meanwhile"
    )
}

/// A job that is due while this replica does not serve its tool (a reload removed it, or a
/// rolling change has not reached this replica); `max_age` as the configuration writes it.
pub fn job_waiting_on_unserved_tool(tool: &str, max_age: &str) -> String {
    format!(
        "due, and waiting: this gateway's configuration does not serve {tool} now (a reload removed it, or has not reached this replica yet); the job runs once a replica serves {tool} again, and ends as dead once it is older than [jobs] max_age ({max_age}) without that"
    )
}

/// `DELETE /v1/jobs/{id}` of a job running now.
pub fn job_running_not_cancelled(job_id: &str) -> String {
    format!(
        "job {job_id} is running at the provider now and is not cancelled (a booking may be under way); its result comes as usual: poll GET /v1/jobs/{job_id}"
    )
}

/// `DELETE /v1/jobs/{id}` of a job that has ended.
pub fn job_ended(job_id: &str, status: &str) -> String {
    format!("job {job_id} has already ended ({status}); there is nothing to cancel")
}

/// `DELETE /v1/jobs/{id}` of a job waiting in a replica's spool for the store.
pub fn job_spooled_not_cancelled(job_id: &str) -> String {
    format!(
        "job {job_id} waits in this replica's spool because the job store is not answering; it can be cancelled once it is in the store: ask again shortly"
    )
}

/// The `spooled` field of a job the job store did not take yet.
pub fn job_spooled(replica: &str) -> String {
    format!("spooled on replica {replica} until the job store returns; it is queued and runs then")
}

/// The `as_seen` field of a job read while the job store does not answer.
pub fn job_as_seen(as_of: &str) -> String {
    format!(
        "the job store is not answering; this is the job as this replica last saw it, at {as_of}; ask again shortly for its current state"
    )
}

/// The `partial` field of a job listing made while the job store does not answer.
pub const JOBS_PARTIAL: &str = "the job store is not answering; only the jobs this replica holds or has seen are listed, each as it last saw it; ask again shortly for the whole list";

/// Background mode on a gateway without a job store.
pub const NO_JOB_STORE: &str =
    "mode \"background\" needs a job store; this gateway runs without one";

/// The job store did not answer, so a background call was not stored.
pub const JOB_STORE_DOWN: &str =
    "the job store is not answering, so the call was not accepted; try again shortly";

/// A call mode that is neither `interactive` nor `background` (`value` as JSON).
pub fn invalid_mode(value: &str) -> String {
    format!("mode {value} is not valid; use \"interactive\" or \"background\"")
}

/// An OpenAI `arguments` string that is not JSON.
pub fn arguments_not_json(error: &str) -> String {
    format!(
        "the arguments string is not valid JSON ({error}); send the arguments as one JSON object"
    )
}

/// An OpenAI custom tool call (free-form `input`, Chat Completions `type: "custom"` or a
/// Responses API `custom_tool_call`): every tool here is a function tool, taking one JSON object.
pub fn custom_tool_call() -> String {
    "it was called as a custom tool, with free-form input, and this gateway's tools are function tools: call it as a function, with its arguments as one JSON object (GET /v1/tools?format=openai declares them so)".to_string()
}

/// OpenAI `arguments` that are neither a JSON string nor an object (`got` as JSON).
pub fn arguments_not_a_string(got: &str) -> String {
    format!("arguments must be a JSON object encoded as a string, got {got}")
}

/// A call whose arguments sit under another protocol's member name (`found`) where this
/// protocol reads `wanted`: without this, the call would run with no arguments and be told
/// that every required field is missing.
pub fn arguments_misplaced(block: &str, found: &str, wanted: &str) -> String {
    format!(
        "this {block} has its arguments in \"{found}\", but it carries them in \"{wanted}\"; move them there and call again"
    )
}

/// Two tool calls of one body under the same id (`field`, the protocol's name for it): their
/// results could not be told apart.
pub fn repeated_call_id(field: &str, id: &str) -> String {
    format!(
        "two tool calls have the {field} \"{id}\": each result is matched to its call by that id, so every call needs its own"
    )
}

/// An Anthropic `input` that is not an object (`got` as JSON).
pub fn input_not_an_object(got: &str) -> String {
    format!("input must be a JSON object, got {got}")
}

/// The answer to MCP's `"faregate/mode": "background"` from a client without the Tasks
/// extension. An MCP result of a tool with an `outputSchema` must carry structured content
/// matching it (the official SDK refuses one that does not), and a queued job has no such
/// result yet; a task is MCP's way to answer later.
pub const MCP_BACKGROUND: &str = "Background mode is not available over MCP to a client without the Tasks extension: a queued job has no result matching the tool's outputSchema yet. Declare the extension io.modelcontextprotocol/tasks in the client's capabilities to get a task (its result through tasks/get), call without \"faregate/mode\" for an answer now, or submit the job to POST /v1/tools/{tool}/call with \"mode\": \"background\" (or the OpenAI/Anthropic endpoints with \"mode\": \"background\").";

/// A `_meta` entry of an MCP call that is not valid (`key` names it).
pub fn invalid_meta(key: &str, problem: &str) -> String {
    format!("_meta {key}: {problem}")
}

/// An HTTP header of an MCP call that is not valid (`name` names it).
pub fn invalid_header(name: &str, problem: &str) -> String {
    format!("header {name}: {problem}")
}

/// A tool outside the calling client's scope; `allowed` are the tools it may call.
pub fn not_in_scope(tool: &str, allowed: &[&str]) -> String {
    if allowed.is_empty() {
        format!(
            "This client may not call {tool}, nor any other tool; the gateway's operator decides which tools each client may call."
        )
    } else {
        format!(
            "This client may not call {tool}. The tools it may call are: {}.",
            allowed.join(", ")
        )
    }
}

/// The JSON-RPC error of an MCP read cancelled in flight (by the client, or by its connection
/// closing).
pub fn mcp_cancelled(tool: &str) -> String {
    format!(
        "The {tool} call was cancelled before it finished, as the client asked or because its connection closed; nothing was booked or changed. Call it again for an answer."
    )
}

/// An MCP tool call that reached the handler without the client the edge identified (a
/// gateway bug): refused rather than run for a client it may not be.
pub const CLIENT_UNKNOWN: &str =
    "The gateway could not tell which client made this call, so it did not run it; retry the call.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_tool_is_told_the_one_it_likely_meant() {
        let known = [
            "search_flights",
            "search_hotels",
            "book_flight",
            "book_hotel",
        ];
        for (typed, meant) in [
            ("search_flight", Some("search_flights")),
            ("Search_Flights", Some("search_flights")),
            ("search-flights", Some("search_flights")),
            ("serch_hotels", Some("search_hotels")),
            ("book_flights", Some("book_flight")),
            ("flights", None),
            ("book_hotell", Some("book_hotel")),
        ] {
            assert_eq!(closest(typed, &known), meant, "{typed}");
        }
        assert_eq!(
            closest("book_x", &["book_a", "book_b"]),
            None,
            "a tie names neither"
        );
        assert_eq!(
            unknown_tool("search_flight", &known),
            "There is no tool \"search_flight\". Did you mean search_flights? The tools are: search_flights, search_hotels, book_flight, book_hotel. Call one of them by its exact name."
        );
    }

    /// A cancelled job's last error is the try before its client cancelled it: said so, never
    /// as if the error had ended the job.
    #[test]
    fn a_cancelled_job_under_a_key_is_told_as_cancelled_by_its_client() {
        let cancelled = job_ended_without_result(
            "search_flights",
            "j1",
            "cancelled",
            Some("amadeus: breaker open rejected the call"),
        );
        assert!(
            cancelled.contains("ended cancelled without a result: its client cancelled it before it ran (its last try had failed: amadeus: breaker open rejected the call)"),
            "{cancelled}"
        );
        let dead = job_ended_without_result("search_flights", "j2", "dead", Some("too old"));
        assert!(
            dead.contains("ended dead without a result: too old."),
            "{dead}"
        );
    }
}
