//! Where configuration files come from: the disk, or the copies embedded in the binary.
//!
//! `faregate demo` must run on a fresh machine from any directory, so the default
//! `faregate.toml`, `tools/` and `prompts/` are compiled in. The loader reads both through
//! [`Files`], so the embedded defaults pass exactly the checks a file on disk passes.

use std::io;
use std::path::{Path, PathBuf};

/// Read access to a tree of configuration files.
pub trait Files {
    /// The file's text.
    fn read(&self, path: &Path) -> io::Result<String>;
    /// The files directly in `dir` whose names end with `suffix`, sorted.
    fn list(&self, dir: &Path, suffix: &str) -> io::Result<Vec<PathBuf>>;
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct DiskFiles;

impl Files for DiskFiles {
    fn read(&self, path: &Path) -> io::Result<String> {
        std::fs::read_to_string(path)
    }

    fn list(&self, dir: &Path, suffix: &str) -> io::Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let matches = path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(suffix) && !n.starts_with('.'));
            if matches && path.is_file() {
                out.push(path);
            }
        }
        out.sort();
        Ok(out)
    }
}

/// The default configuration compiled into the binary, rooted at `embedded:`.
#[derive(Debug, Default, Clone, Copy)]
pub struct EmbeddedFiles;

/// The path under which the embedded `faregate.toml` is reported.
pub const EMBEDDED_CONFIG: &str = "embedded:/faregate.toml";

macro_rules! embed {
    ($($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!("../../", $path)))),*]
    };
}

/// Every embedded file: its path relative to the config directory, and its text.
static EMBEDDED: &[(&str, &str)] = embed!(
    "faregate.toml",
    "tools/book_flight.toml",
    "tools/book_hotel.toml",
    "tools/check_hotel_availability.toml",
    "tools/get_flight_status.toml",
    "tools/get_hotel_content.toml",
    "tools/price_flight_offer.toml",
    "tools/search_flights.toml",
    "tools/search_hotels.toml",
    "tools/track_flight.toml",
    "prompts/agent-guidance.md",
    "prompts/book_flight.unavailable.md",
    "prompts/book_hotel.unavailable.md",
    "prompts/check_hotel_availability.unavailable.md",
    "prompts/get_flight_status.unavailable.md",
    "prompts/get_hotel_content.unavailable.md",
    "prompts/price_flight_offer.unavailable.md",
    "prompts/search_flights.unavailable.md",
    "prompts/search_hotels.unavailable.md",
    "prompts/track_flight.unavailable.md",
);

fn embedded_relative(path: &Path) -> Option<String> {
    let s = path.to_str()?;
    let rest = s.strip_prefix("embedded:")?;
    Some(rest.trim_start_matches('/').to_string())
}

impl Files for EmbeddedFiles {
    fn read(&self, path: &Path) -> io::Result<String> {
        let rel = embedded_relative(path).unwrap_or_default();
        EMBEDDED
            .iter()
            .find(|(p, _)| *p == rel)
            .map(|(_, text)| (*text).to_string())
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "not an embedded file"))
    }

    fn list(&self, dir: &Path, suffix: &str) -> io::Result<Vec<PathBuf>> {
        let rel = embedded_relative(dir).unwrap_or_default();
        let prefix = format!("{}/", rel.trim_end_matches('/'));
        let mut out: Vec<PathBuf> = EMBEDDED
            .iter()
            .filter(|(p, _)| {
                p.strip_prefix(&prefix)
                    .is_some_and(|name| !name.contains('/') && name.ends_with(suffix))
            })
            .map(|(p, _)| PathBuf::from(format!("embedded:/{p}")))
            .collect();
        out.sort();
        Ok(out)
    }
}
