//! A log written where a test can read it: give [`Captured`] to a tracing subscriber as its
//! writer, and read what the gateway logged with [`Captured::text`].

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use tracing::Dispatch;
use tracing::subscriber::NoSubscriber;
use tracing_subscriber::fmt::MakeWriter;

/// Everything the subscriber writes, shared with the test.
#[derive(Clone, Default)]
pub(crate) struct Captured(Arc<Mutex<Vec<u8>>>);

/// A second subscriber that lives as long as the tests, so that a capturing one is never the
/// only one registered: with exactly one, `tracing` asks the *current thread's* subscriber
/// whether a callsite is wanted when it is first reached, and another test's thread (with
/// none) reaching a line of the gateway's first would switch it off for every thread, this
/// one's capture included (the audit test lost every line so, about one run in four of the
/// bookings tests together). With two or more, every registered subscriber is asked.
static BESIDE: OnceLock<Dispatch> = OnceLock::new();

impl Captured {
    /// A log at debug level, as this thread's default subscriber while the guard lives (the
    /// default `#[tokio::test]` runtime runs the gateway's server tasks on this thread too).
    pub(crate) fn install() -> (Captured, tracing::subscriber::DefaultGuard) {
        BESIDE.get_or_init(|| Dispatch::new(NoSubscriber::default()));
        let captured = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(captured.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::DEBUG)
            .finish();
        (captured, tracing::subscriber::set_default(subscriber))
    }

    pub(crate) fn text(&self) -> String {
        let bytes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}
