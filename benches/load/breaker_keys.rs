//! Memory of many breaker keys, for `benches/load/run-all.sh` (scenario 5, scale).
//!
//! `cargo run --release --example breaker_keys -- [KEYS]` (default 10,000) creates that many
//! tool × provider breakers in one [`BreakerRegistry`] with the shipped default policy, records
//! 100 successful calls on each (so every window holds state, as a live breaker's does), and
//! prints the process's resident memory (VmRSS from `/proc/self/status`) before and after, and
//! the growth per key, as one `key=value` line the script parses.

use std::time::Duration;

use faregate::breaker::{BreakerConfig, BreakerKey, BreakerRegistry, Outcome};
use tokio::time::Instant;

#[path = "vm_rss.rs"]
mod vm_rss;
use vm_rss::rss_kib;

fn main() {
    let keys: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let before = rss_kib("self");
    let registry = BreakerRegistry::new(1024);
    let config = BreakerConfig::builder()
        .build()
        .expect("the standard tuning is valid");
    let now = Instant::now();
    let ok = Outcome::Success {
        latency: Duration::from_millis(120),
    };
    for i in 0..keys {
        let key = BreakerKey::new(format!("tool_{:05}", i / 4), format!("provider_{}", i % 4));
        let breaker = registry.get_or_insert(key, config.clone());
        for _ in 0..100 {
            if let Ok(permit) = breaker.try_acquire(now) {
                permit.record(ok, now);
            }
        }
    }
    let after = rss_kib("self");
    let per_key = (after.saturating_sub(before) * 1024) / keys.max(1) as u64;
    println!(
        "keys={} breakers={} rss_before_kib={before} rss_after_kib={after} bytes_per_key={per_key}",
        keys,
        registry.len()
    );
}
