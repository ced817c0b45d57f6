//! The agent protocols, as pure code: what an agent sends and what it reads.
//!
//! Nothing here knows axum, hyper or rmcp, so the HTTP edge, the CLI and the fuzz targets use
//! the same functions, and a test needs no server.
//!
//! - `manifest`: every tool shape a model provider or MCP client reads.

pub mod manifest;
