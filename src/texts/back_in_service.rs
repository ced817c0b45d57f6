//! What a back-in-service notice says: the news its callback carries (an application relays it to
//! the traveller or hands it to its model), and why a notice was not set up or found (the
//! `/v1/back-in-service` API answers these sentences as its error messages).

/// The news of a notice: `tool` answers again.
pub fn back(tool: &str) -> String {
    format!(
        "{tool} is available again: it answers calls now. Call it again to carry on where the traveller left off."
    )
}

/// The gateway keeps no job store, so it cannot keep notices either.
pub const OFF: &str = "back-in-service notices are off: this gateway runs without a job store, so there is nowhere to keep them";

/// The store did not answer.
pub const STORE_DOWN: &str = "the notice store is not answering; try again shortly";

/// A notice needs somewhere to go.
pub const NO_CALLBACK: &str = "callback_url is required: a back-in-service notice is POSTed there, signed, when the tool answers again";

/// `expires_in` is not a duration.
pub fn expires_in_not_a_duration(text: &str, why: &str) -> String {
    format!("expires_in {text:?} is not a duration ({why}); write it like \"2h\" or \"3d\"")
}

/// `expires_in` is zero or longer than the gateway keeps a notice waiting.
pub fn expires_in_out_of_range(text: &str, longest: &str) -> String {
    format!("expires_in {text:?} is out of range; give more than 0 and at most {longest}")
}

/// The client already waits on as many notices as it may.
pub fn full(max: u32) -> String {
    format!(
        "this client already waits on {max} back-in-service notices, the most it may; delete one it no longer needs (DELETE /v1/back-in-service/{{id}}) or wait for one to fire or expire"
    )
}

/// No notice `id` belongs to the caller.
pub fn no_notice(id: &str) -> String {
    format!("no back-in-service notice {id}")
}
