//! Back-in-service notices: a client asks to be told when a tool answers again, and the gateway
//! POSTs one signed notice to the client's allowlisted callback URL when it does.
//!
//! # Why
//! A traveller who hears "flight search is down" would rather be told when it is back than try
//! again on a guess. The agent's application asks once (`POST /v1/back-in-service`), and the
//! gateway, which knows its breakers and maintenance windows, tells it the moment the tool
//! answers: once, then the notice is done, or never, when it expires first.
//!
//! The folder, by idea:
//! - `store.rs`: notices in the shared database, with the conditional updates that make a fleet
//!   fire each notice once and send each delivery once;
//! - `reads.rs`: the arguments of each tool's last unanswered read in the shared database, so
//!   any replica can ask a tool again, not only the one that saw its reads fail;
//! - `asking.rs`: the tools the loop asks again itself, and the arguments it shares through
//!   `reads.rs` and takes from there when it has none of its own;
//! - `system.rs`: [`BackInServiceSystem`], the API's checks and limits, and the loop that fires
//!   notices whose tool answers again, expires the others and delivers callbacks (signed,
//!   allowlisted and retried as a watch's notices are).

mod asking;
mod reads;
mod store;
mod system;

pub use reads::UnansweredReads;
pub use store::{Notice, NoticeState, NoticeStore};
pub use system::{
    BackInServiceSystem, DEFAULT_EXPIRY, Fired, LONGEST_EXPIRY, MAX_WAITING_PER_CLIENT, NewNotice,
    NoticeError,
};

/// Shared handle to the back-in-service notices.
pub type BackInService = std::sync::Arc<BackInServiceSystem>;
