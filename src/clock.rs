//! The one place that reads the wall clock: wall-clock time (epoch milliseconds, `SystemTime`,
//! UTC dates) that moves with tokio's clock, beside tokio instants for durations.
//!
//! Durations are measured on `tokio::time::Instant`, so tests can pause and advance time. Stored
//! times (job due times, leases) and dates must be wall-clock time, because several gateway
//! processes compare them through one shared database. A plain `SystemTime::now()` would ignore
//! a paused test clock, and the job dispatcher could then not be tested on it.
//!
//! So the wall clock here is the system's, shifted by however far tokio's clock stands from the
//! real monotonic clock. In production the two are the same clock and the shift is zero, so
//! every process keeps reading the true wall time (an epoch anchored once on the monotonic clock
//! would drift from it after a suspend or a clock step, and replicas would then misjudge each
//! other's leases). On a paused test clock the shift is exactly what the test advanced (less the
//! real time that passed meanwhile), so epoch milliseconds move with `tokio::time::advance`.
//!
//! `clippy.toml` forbids reading `std::time::Instant`, `SystemTime::now` and `chrono::Utc::now`
//! anywhere else.

// This module is where those reads are allowed (see `clippy.toml`).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Utc};
use tokio::time::Instant;

/// Now, on tokio's clock (paused and advanced by tests).
pub fn now() -> Instant {
    Instant::now()
}

/// Now, as wall-clock time that follows tokio's clock.
pub fn system_now() -> SystemTime {
    // Read back to back, so in production (one clock) the shift is a few nanoseconds at most.
    let tokio_now = Instant::now().into_std();
    let real_now = std::time::Instant::now();
    let wall = SystemTime::now();
    match tokio_now.checked_duration_since(real_now) {
        Some(ahead) => wall + ahead,
        None => wall - real_now.saturating_duration_since(tokio_now),
    }
}

/// Now, in milliseconds since the Unix epoch: the unit every stored time uses.
pub fn epoch_ms() -> i64 {
    to_epoch_ms(system_now())
}

/// Now, as a UTC date and time.
pub fn utc_now() -> DateTime<Utc> {
    DateTime::<Utc>::from(system_now())
}

/// A wall-clock time in epoch milliseconds (0 before the epoch, which no clock reads today).
fn to_epoch_ms(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Epoch milliseconds `delay` after `at_ms`, for due times.
pub fn ms_after(at_ms: i64, delay: Duration) -> i64 {
    at_ms.saturating_add(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn wall_time_moves_with_the_paused_clock() {
        let (instant, ms) = (now(), epoch_ms());
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert_eq!(now() - instant, Duration::from_secs(3600));
        // Only the real time that passed while the test ran (well under a second) is added.
        let moved = epoch_ms() - ms;
        assert!(
            (3_600_000..3_601_000).contains(&moved),
            "epoch ms moved {moved}"
        );
    }

    #[tokio::test]
    async fn on_a_running_clock_it_is_the_system_wall_clock() {
        let ours = epoch_ms();
        let system = to_epoch_ms(SystemTime::now());
        assert!((ours - system).abs() < 1000, "{ours} vs {system}");
    }

    #[test]
    fn due_times_saturate_instead_of_overflowing() {
        assert_eq!(ms_after(1_000, Duration::from_millis(500)), 1_500);
        assert_eq!(ms_after(i64::MAX - 1, Duration::from_secs(1)), i64::MAX);
    }
}
