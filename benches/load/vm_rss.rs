//! Resident memory of a process, read from `/proc`, for the load examples that measure memory
//! (`breaker_keys`, `hold_h2`); included with `#[path]`, as each example is its own crate.

/// VmRSS of `/proc/{who}/status` in KiB, `who` a pid or `self` (0 where it cannot be read).
pub(crate) fn rss_kib(who: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{who}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}
