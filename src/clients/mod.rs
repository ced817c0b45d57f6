//! Who a call is for: the client identity the edge establishes from a presented key and every
//! room below it carries (the call path, the job queue, and whatever keeps per-client state).
//!
//! It is a room of its own, below `call/` and `jobs/`, so those rooms can hold a client's name
//! without importing the HTTP edge that resolved it.
//!
//! - `name.rs`: [`ClientName`], the one way a client is named in jobs, logs and answers;
//! - `scope.rs`: [`Scope`], the tools a client may call and whether it may book;
//! - `budget.rs`: [`DailyBudget`] and the exact [`Amount`] it is counted in;
//! - `roster.rs`: [`Roster`], every accepted key as a digest with the [`ClientProfile`] it
//!   names, and the [`Directory`] that swaps the roster whole on a reload;
//! - `rate.rs`: [`Rates`], each client's request rate, which a fleet's replicas charge for each
//!   other's calls, and `fleet_rate.rs`: [`SharedRates`], how they tell each other;
//! - `share.rs`: [`ToolShare`], how many of a tool's concurrent calls one client may hold while
//!   several clients call, and [`Shares`], what each client holds of one tool;
//! - `provider_share.rs`: [`ProviderWindow`], who sent a replica's requests to a provider in
//!   its rate-limit window, and the rule that refuses a client over its fair part of them
//!   while the window runs low ([`ProviderReserve`]).

mod budget;
mod fleet_rate;
mod name;
mod provider_share;
mod rate;
mod roster;
mod scope;
mod share;

pub use budget::{Amount, DailyBudget};
pub use fleet_rate::{ClientKey, Heard, SharedRates, Told};
pub use name::{ClientName, InvalidClientName};
pub use provider_share::{
    Announced, OverProviderShare, PROVIDER_SHARE_LIMIT, ProviderReserve, ProviderWindow, over_share,
};
pub use rate::{Admitted, Quota, Rates, SHARE_EVERY};
pub use roster::{
    ClientProfile, Directory, Identified, KeyDigest, Roster, digest, digest_from_hex,
};
pub use scope::Scope;
pub use share::{SHARE_LIMIT, ShareFull, ShareSlot, Shares, ToolShare};
