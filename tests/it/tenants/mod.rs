//! Clients kept apart: each call and job carries the client whose key authenticated it
//! ([`jobs`]), named clients are configured and reloaded without a restart ([`reload`]).

mod jobs;
mod reload;
