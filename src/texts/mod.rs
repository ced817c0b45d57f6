//! Every sentence a model reads that the gateway writes itself, in one place.
//!
//! A model acts on these texts (it relays them, retries, or stops), so their wording is part of
//! the product: kept together, they keep one voice, and a reviewer reads all of them at once.
//! The functions are pure (values in, `String` out; they know no gateway type, so every floor
//! above can use them); the modules that answer calls pick which text applies.
//!
//! - `call`: what the call path says (fallbacks, stale answers, refusals, unknown outcomes,
//!   background jobs that cannot run);
//! - `ledger`: what the booking ledger answers for an idempotency key (booked earlier, still
//!   being learned, reused with other arguments, a ledger out of reach);
//! - `agents`: what the protocols add (the status prefixes of a tool result, unknown tools,
//!   queued jobs, arguments a protocol could not read);
//! - `tasks`: what an MCP client reads about a task (its status message, why it cannot be read
//!   or cancelled);
//! - `watches`: the watch tools' descriptions and answers, and why a watch was not made,
//!   changed or found;
//! - `back_in_service`: the news a back-in-service notice carries, and why one was not set up.
//!
//! Not here: the tools' own summaries of their results and the field errors of arguments
//! (`tools/`: they are generated from each tool's types and schema), and the fallback prompts an
//! operator writes (`prompts/`), which [`call::fallback`] renders.

pub mod agents;
pub mod back_in_service;
pub mod budget;
pub mod call;
pub mod ledger;
pub mod tasks;
pub mod watches;
