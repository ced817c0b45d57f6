//! Every configuration problem found in one pass, each naming file, key and a fix.
//!
//! Operators fix config in a loop of edit and check. Reporting only the first problem turns that
//! loop into one round trip per mistake, so the loader never stops at the first error: it records
//! a [`Problem`] and carries on (as linkerd's `parse_config` does).

use std::fmt;
use std::path::{Path, PathBuf};

/// One thing wrong with the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file the problem is in.
    pub file: PathBuf,
    /// The dotted key path inside the file (`defaults.breaker.open_for`), or empty for the file.
    pub key: String,
    /// What is wrong and what would be valid.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.file.display(), self.message)
        } else {
            write!(f, "{}: {}: {}", self.file.display(), self.key, self.message)
        }
    }
}

/// The problems found so far, plus warnings that do not stop the gateway.
#[derive(Debug, Default)]
pub struct Problems {
    errors: Vec<Problem>,
    warnings: Vec<Problem>,
}

impl Problems {
    /// Records an error.
    pub fn error(&mut self, file: &Path, key: impl Into<String>, message: impl Into<String>) {
        self.errors.push(Problem {
            file: file.to_path_buf(),
            key: key.into(),
            message: message.into(),
        });
    }

    /// Records a warning: worth telling the operator, not worth refusing to start.
    pub fn warning(&mut self, file: &Path, key: impl Into<String>, message: impl Into<String>) {
        self.warnings.push(Problem {
            file: file.to_path_buf(),
            key: key.into(),
            message: message.into(),
        });
    }

    /// The errors, in the order found.
    pub fn errors(&self) -> &[Problem] {
        &self.errors
    }

    /// The warnings, in the order found.
    pub fn warnings(&self) -> &[Problem] {
        &self.warnings
    }

    /// Whether an error was recorded in `file` at `key` or at a key inside it (`binding.x`
    /// holds `binding.x.request.method`).
    pub fn has_error_under(&self, file: &Path, key: &str) -> bool {
        self.errors.iter().any(|p| {
            p.file == file
                && p.key
                    .strip_prefix(key)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
        })
    }

    /// True when no error was recorded (warnings allowed).
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }
}

/// The error returned when configuration cannot be used: every problem at once.
#[derive(Debug)]
pub struct ConfigErrors {
    /// The errors, never empty.
    pub errors: Vec<Problem>,
    /// Warnings found on the way.
    pub warnings: Vec<Problem>,
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.errors.len();
        writeln!(
            f,
            "{n} configuration problem{}:",
            if n == 1 { "" } else { "s" }
        )?;
        for p in &self.errors {
            writeln!(f, "  error: {p}")?;
        }
        for p in &self.warnings {
            writeln!(f, "  warning: {p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}
