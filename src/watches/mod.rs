//! Watches: a background call with a schedule, that tells its client only when something
//! changed ("tell me if the price drops below 400", "tell me if BA117 is delayed").
//!
//! # Why
//! Without them, a client that wants to watch a fare or a flight resubmits on its own timer and
//! hears about every run, changed or not. A watch is one request: the gateway runs the call on
//! a schedule, keeps the last result, and writes a notice only when a run's result meets the
//! watch's condition. It is also where silent requeue matters most: while the provider is down,
//! the run waits in the job queue without a sound, and the watch fires only when it has news.
//!
//! The folder, by idea:
//! - `condition.rs`: what counts as news, per tool (pure, table-tested);
//! - `schedule.rs`: when a watch runs and when it ends (pure, table-tested);
//! - `store.rs`: watches and notices in the shared database, with the conditional updates that
//!   make a fleet start and record each instant once;
//! - `retention.rs`: how long an ended watch and its notices are kept, and the sweep that
//!   deletes them after;
//! - `system.rs`: [`WatchSystem`], the checks and limits of the API and the loop that turns due
//!   instants into ordinary background jobs (with every guarantee of the job queue) and ended
//!   jobs into results and notices.

mod condition;
mod retention;
mod schedule;
mod store;
mod system;

pub use condition::Condition;
pub use schedule::{End, Schedule};
pub use store::{Notice, Watch, WatchState, WatchStore};
pub use system::{NewWatch, WatchError, WatchSystem};

/// Shared handle to the watch system.
pub type Watches = std::sync::Arc<WatchSystem>;
