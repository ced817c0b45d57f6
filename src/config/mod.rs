//! Configuration: `faregate.toml`, `tools/*.toml` and `prompts/`, typed and validated once, with
//! the fingerprint of the files read (`fingerprint.rs`).
//!
//! The keys are a contract with operators and scripts: renaming one breaks their files. Loading
//! reports every problem at once, each naming the file, the key and what would be valid, so
//! that `faregate check` turns a broken config into one list of fixes.
//!
//! Secrets never appear here: the config names environment variables, and only the provider
//! adapters and the auth layer read them.

mod bindings;
mod breakers;
mod cleartext;
mod clients;
mod files;
mod fingerprint;
mod http_tools;
mod load;
mod maintenance;
mod model;
mod openapi;
mod policies;
mod problems;
mod reader;
mod restart;
mod server;
mod share;
mod tools_files;

#[cfg(test)]
mod tests;

pub use files::{DiskFiles, EMBEDDED_CONFIG, EmbeddedFiles, Files};
pub use fingerprint::fingerprint;
pub use load::{DEFAULT_SPOOL, load, placeholders};
pub use model::*;
pub use openapi::{ImportedTool, import_openapi};
pub use problems::{ConfigErrors, Problem, Problems};
pub use restart::{Settled, settle};
pub use share::unshared_tools;
pub use tools_files::is_tool_name;
