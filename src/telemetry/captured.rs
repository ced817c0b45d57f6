//! Log lines captured in unit tests, to check what an operator reads: a text `fmt` subscriber
//! writing into a buffer, this thread's default while the guard lives.
//!
//! Thread-local, so tests running beside each other never see each other's lines; a
//! `#[tokio::test]` runtime runs its spawned tasks on the test's thread, so their lines are
//! captured too. (`tests/it/bookings/audit.rs` captures the same way for the whole server.)

use std::io;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use tracing::Dispatch;
use tracing::subscriber::{DefaultGuard, NoSubscriber};
use tracing_subscriber::fmt::MakeWriter;

/// The lines logged on this thread since [`capture`], until dropped.
#[derive(Debug)]
pub(crate) struct Captured {
    written: Buffer,
    _default: DefaultGuard,
}

/// A second subscriber that lives as long as the tests, so that a capturing one is never the
/// only one registered: with exactly one, `tracing` asks the *current thread's* subscriber
/// whether a callsite is wanted when it is first reached, and a test on another thread (with
/// none) reaching the same line first would switch it off for every thread. With two or more,
/// every registered subscriber is asked.
static BESIDE: OnceLock<Dispatch> = OnceLock::new();

/// Starts capturing this thread's log lines (every level).
pub(crate) fn capture() -> Captured {
    BESIDE.get_or_init(|| Dispatch::new(NoSubscriber::default()));
    let written = Buffer::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(written.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::TRACE)
        .finish();
    Captured {
        written,
        _default: tracing::subscriber::set_default(subscriber),
    }
}

impl Captured {
    /// Everything captured so far.
    pub(crate) fn text(&self) -> String {
        let bytes = self
            .written
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The lines captured so far that contain `text`.
    pub(crate) fn lines_with(&self, text: &str) -> Vec<String> {
        self.text()
            .lines()
            .filter(|line| line.contains(text))
            .map(str::to_string)
            .collect()
    }
}

/// Where the subscriber writes.
#[derive(Debug, Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl io::Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Buffer {
    type Writer = Buffer;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}
