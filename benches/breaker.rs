//! Breaker hot-path microbenchmarks: acquire + record on one key from one thread and from two
//! threads, and registry lookup + acquire + record over 10,000 keys.
//!
//! Run: `cargo bench --bench breaker -- --warm-up-time 1 --measurement-time 3`.
//! Targets: under 100 ns per acquire + record uncontended, under 300 ns with two threads.
//!
//! Every call succeeds quickly, so the breakers stay closed: this measures the path that every
//! tool call pays. `now` is read once per batch, as the executor reads it once per call anyway.

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use tokio::sync::broadcast;
use tokio::time::Instant;

use faregate::breaker::{Breaker, BreakerConfig, BreakerKey, BreakerRegistry, Outcome};

const FAST: Outcome = Outcome::Success {
    latency: Duration::from_millis(120),
};

/// The standard breaker tuning.
fn standard() -> BreakerConfig {
    BreakerConfig::builder()
        .build()
        .expect("the standard tuning is valid")
}

fn one_breaker() -> Arc<Breaker> {
    let (tx, _) = broadcast::channel(16);
    Breaker::new(BreakerKey::new("search_flights", "duffel"), standard(), tx)
}

fn acquire_record(breaker: &Arc<Breaker>, now: Instant) {
    let permit = breaker.try_acquire(now).expect("closed breaker admits");
    permit.record(black_box(FAST), now);
}

fn uncontended(c: &mut Criterion) {
    let breaker = one_breaker();
    let now = Instant::now();
    c.bench_function("acquire_record/1_thread", |b| {
        b.iter(|| acquire_record(&breaker, now))
    });
}

fn two_threads(c: &mut Criterion) {
    let breaker = one_breaker();
    c.bench_function("acquire_record/2_threads_one_key", |b| {
        // Both threads run `iters` pairs at once; the figure is the slower thread's time per pair.
        b.iter_custom(|iters| {
            let barrier = Barrier::new(2);
            thread::scope(|s| {
                let workers: Vec<_> = (0..2)
                    .map(|_| {
                        s.spawn(|| {
                            let now = Instant::now();
                            barrier.wait();
                            let start = Instant::now();
                            for _ in 0..iters {
                                acquire_record(&breaker, now);
                            }
                            start.elapsed()
                        })
                    })
                    .collect();
                workers
                    .into_iter()
                    .map(|w| w.join().expect("bench thread"))
                    .max()
                    .unwrap_or_default()
            })
        })
    });
}

fn many_keys(c: &mut Criterion) {
    let registry = BreakerRegistry::default();
    let keys: Vec<_> = (0..10_000)
        .map(|i| BreakerKey::new(format!("tool_{}", i % 100), format!("provider_{}", i / 100)))
        .collect();
    for key in &keys {
        registry.get_or_insert(key.clone(), standard());
    }
    let now = Instant::now();
    let mut i = 0usize;
    c.bench_function("lookup_acquire_record/10000_keys", |b| {
        b.iter(|| {
            i = (i + 7919) % keys.len();
            let breaker = registry.get(&keys[i]).expect("registered");
            acquire_record(&breaker, now);
        })
    });
}

criterion_group!(benches, uncontended, two_threads, many_keys);
criterion_main!(benches);
