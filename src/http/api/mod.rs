//! The gateway's own API: the native call endpoint, the catalog, the job API, watches,
//! back-in-service notices, the booking ledger, and the OpenAI
//! and Anthropic tool-call routes (their shapes are [`crate::agents`]'; running them is
//! [`super::calls`]).

pub(crate) mod agents;
pub(crate) mod back_in_service;
pub(crate) mod bookings;
pub(crate) mod catalog;
pub(crate) mod jobs;
pub(crate) mod native;
mod taken;
pub(crate) mod watch_tools;
pub(crate) mod watches;
