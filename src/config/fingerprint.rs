//! The configuration's fingerprint: a short digest of exactly what a load read, so an operator
//! can tell at a glance whether two replicas (or one replica before and after a reload) run the
//! same configuration.
//!
//! It covers every file the loader read (`faregate.toml`, `tools/*.toml`, `prompts/*.md`): each
//! file's path relative to the configuration's directory and its bytes. The loader reads
//! through [`Recorded`], which keeps what it was handed, so the fingerprint cannot miss a file a
//! later change starts reading. The files are taken in the order of their paths, whatever order
//! they were read in.
//!
//! What is not a file is not in it: the values of environment variables (client keys, provider
//! credentials, secrets) never are, so the fingerprint says nothing about a secret and two
//! replicas with different keys but the same files agree. Nor is a listen address given on the
//! command line.
//!
//! SHA-256 (the digest the client keys are held as), cut to 12 hex digits: 48 bits tell a
//! handful of configurations apart with no realistic chance of two colliding, and stay short
//! enough for a log line and a metric label.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::files::Files;

/// How many hex digits a fingerprint keeps.
const DIGITS: usize = 12;

/// The fingerprint of `files`, each a path relative to the configuration's directory and the
/// file's bytes, in any order.
pub fn fingerprint<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> String {
    let mut files: Vec<(&str, &[u8])> = files.into_iter().collect();
    files.sort_unstable();
    let mut hasher = Sha256::new();
    for (path, bytes) in files {
        // Each part with its length in front, so no two different sets of files write the
        // same stream (a path that ends where the next begins, a file split in two).
        for part in [path.as_bytes(), bytes] {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
    }
    hasher
        .finalize()
        .iter()
        .take(DIGITS / 2)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// [`Files`] that remembers every file read through it, by its path relative to `base` (the
/// configuration's directory; a file outside it keeps its whole path).
pub(super) struct Recorded<'a> {
    files: &'a dyn Files,
    base: PathBuf,
    /// Relative path → text, as read.
    read: RefCell<BTreeMap<String, String>>,
}

impl<'a> Recorded<'a> {
    /// Reads through `files`, naming each file relative to `base`.
    pub(super) fn new(files: &'a dyn Files, base: &Path) -> Self {
        Recorded {
            files,
            base: base.to_path_buf(),
            read: RefCell::new(BTreeMap::new()),
        }
    }

    /// The fingerprint of every file read so far.
    pub(super) fn fingerprint(&self) -> String {
        let read = self.read.borrow();
        fingerprint(
            read.iter()
                .map(|(path, text)| (path.as_str(), text.as_bytes())),
        )
    }

    fn relative(&self, path: &Path) -> String {
        let relative = path.strip_prefix(&self.base).unwrap_or(path);
        let parts: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        parts.join("/")
    }
}

impl Files for Recorded<'_> {
    fn read(&self, path: &Path) -> io::Result<String> {
        let text = self.files.read(path)?;
        self.read
            .borrow_mut()
            .insert(self.relative(path), text.clone());
        Ok(text)
    }

    fn list(&self, dir: &Path, suffix: &str) -> io::Result<Vec<PathBuf>> {
        self.files.list(dir, suffix)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// Files in memory, listed sorted as the disk lists them.
    struct InMemory(HashMap<PathBuf, String>);

    impl Files for InMemory {
        fn read(&self, path: &Path) -> io::Result<String> {
            self.0
                .get(path)
                .cloned()
                .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
        }

        fn list(&self, dir: &Path, suffix: &str) -> io::Result<Vec<PathBuf>> {
            let mut out: Vec<PathBuf> = self
                .0
                .keys()
                .filter(|p| p.parent() == Some(dir) && p.to_string_lossy().ends_with(suffix))
                .cloned()
                .collect();
            out.sort();
            Ok(out)
        }
    }

    const FILES: [(&str, &[u8]); 3] = [
        ("faregate.toml", b"[server]\nlisten = \"127.0.0.1:8080\"\n"),
        ("tools/search_flights.toml", b"name = \"search_flights\"\n"),
        ("prompts/agent-guidance.md", b"Ask before booking.\n"),
    ];

    #[test]
    fn the_same_files_give_the_same_short_hex_digest() {
        let once = fingerprint(FILES);
        assert_eq!(once, fingerprint(FILES));
        assert_eq!(once.len(), DIGITS);
        assert!(
            once.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
    }

    #[test]
    fn the_order_files_are_read_in_does_not_matter() {
        let mut reversed = FILES;
        reversed.reverse();
        assert_eq!(fingerprint(FILES), fingerprint(reversed));
    }

    #[test]
    fn any_byte_changed_changes_it() {
        let before = fingerprint(FILES);
        for file in 0..FILES.len() {
            for at in 0..FILES[file].1.len() {
                let mut bytes = FILES[file].1.to_vec();
                bytes[at] ^= 0x01;
                let mut changed = FILES;
                changed[file].1 = &bytes;
                assert_ne!(fingerprint(changed), before, "file {file}, byte {at}");
            }
        }
        let mut renamed = FILES;
        renamed[1].0 = "tools/search_flight.toml";
        assert_ne!(fingerprint(renamed), before, "a path is part of it");
        assert_ne!(
            fingerprint(FILES[..2].iter().copied()),
            before,
            "a file left out"
        );
    }

    #[test]
    fn a_file_s_end_cannot_move_into_the_next() {
        let split = [("a", b"xy".as_slice()), ("b", b"z".as_slice())];
        let moved = [("a", b"x".as_slice()), ("b", b"yz".as_slice())];
        assert_ne!(fingerprint(split), fingerprint(moved));
    }

    #[test]
    fn a_load_read_through_it_is_named_relative_to_the_configuration_s_directory() {
        let base = Path::new("/etc/faregate");
        let disk = InMemory(
            FILES
                .iter()
                .map(|(p, b)| (base.join(p), String::from_utf8_lossy(b).into_owned()))
                .collect(),
        );
        // Read in another order than the paths sort in, and one file twice.
        let recorded = Recorded::new(&disk, base);
        for path in ["tools/search_flights.toml", "faregate.toml"] {
            recorded
                .read(&base.join(path))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        for path in recorded
            .list(&base.join("prompts"), ".md")
            .unwrap_or_else(|e| panic!("{e}"))
        {
            recorded.read(&path).unwrap_or_else(|e| panic!("{e}"));
        }
        recorded
            .read(&base.join("faregate.toml"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(recorded.fingerprint(), fingerprint(FILES));
        // The same files somewhere else: the same fingerprint.
        let elsewhere = Path::new("/srv/gateway");
        let moved = InMemory(
            FILES
                .iter()
                .map(|(p, b)| (elsewhere.join(p), String::from_utf8_lossy(b).into_owned()))
                .collect(),
        );
        let recorded = Recorded::new(&moved, elsewhere);
        for (path, _) in FILES {
            recorded
                .read(&elsewhere.join(path))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        assert_eq!(recorded.fingerprint(), fingerprint(FILES));
    }
}
