//! The agent protocols, as pure code: what an agent sends and what it reads.
//!
//! Nothing here knows axum, hyper or rmcp, so the HTTP edge, the CLI and the fuzz targets use
//! the same functions, and a test needs no server. A body is read in two steps, as the edge
//! reads it: [`body::read_json`] (strict JSON), then the protocol's `parse`, which returns the
//! calls or a [`ProtocolError`]. Running the calls is the edge's business; rendering their
//! results is back here.
//!
//! - `body`: a request body read as strict JSON;
//! - `options`: `mode` and `deadline_ms`, read once for every protocol;
//! - `native`: the native call body;
//! - `openai`, `anthropic`: the two vendors' tool-call shapes, parsed and rendered;
//! - `mcp`: MCP's `_meta` keys and which JSON-RPC messages are tool calls;
//! - `call`, `text`: one call as a model sent it, and the one text a model reads back;
//! - `idempotency`: the key a booking gets when the protocol carried none;
//! - `manifest`: every tool shape a model provider or MCP client reads;
//! - `guidance`: the agent guidance as one client reads it (no line about a tool it may not
//!   call);
//! - `watch_tools`: the tools a model starts, lists and stops watches with, and their
//!   arguments read.

pub mod anthropic;
pub mod body;
pub mod call;
pub mod error;
pub mod guidance;
pub mod idempotency;
pub mod manifest;
pub mod mcp;
pub mod native;
pub mod openai;
pub mod options;
pub mod text;
pub mod watch_tools;

pub use call::{AgentCall, AgentResult};
pub use error::ProtocolError;
pub use options::CallOptions;
pub use text::model_text;
