//! Clients kept apart: each call and job carries the client whose key authenticated it
//! ([`jobs`]), named clients are configured and reloaded without a restart ([`reload`], and by
//! SIGHUP: [`sighup`]), and a client calls and sees only its tools ([`scopes`]).

mod jobs;
mod reload;
mod scopes;
mod sighup;
