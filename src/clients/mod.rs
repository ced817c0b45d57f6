//! Who a call is for: the client identity the edge establishes from a presented key and every
//! room below it carries (the call path, the job queue, and whatever keeps per-client state).
//!
//! It is a room of its own, below `call/` and `jobs/`, so those rooms can hold a client's name
//! without importing the HTTP edge that resolved it.
//!
//! - `name.rs`: [`ClientName`], the one way a client is named in jobs, logs and answers.

mod name;

pub use name::{ClientName, InvalidClientName};
