//! The ids of the calls that came without one: `fg_<tag>_<n>`, as `fg_3f9a0c12d4_1`.
//!
//! An operator searches traces and logs for the call id a user quotes, so an id must name one
//! call. A bare counter (`fg_1`, `fg_2`, …) restarted at 1 on every start and on every replica,
//! and the search found unrelated calls. The tag is 10 random hex digits (40 bits) drawn when
//! the gateway is built: ids differ across replicas and restarts (the chance that two of 1,500
//! starts draw one tag is about one in a million), yet stay short enough to read out, and the
//! counter after the tag keeps one process's ids in order. A caller's own id is never changed.

use std::sync::atomic::{AtomicU64, Ordering};

/// Numbers the calls without an id, under a tag of this gateway's own.
#[derive(Debug)]
pub(crate) struct CallIds {
    /// `fg_<tag>_`, made once, so an id is one `format!` as the bare counter was.
    prefix: Box<str>,
    next: AtomicU64,
}

impl CallIds {
    /// Ids under a new random tag, from 1.
    pub(crate) fn new() -> Self {
        // The last hex digits of a UUIDv7 are its random bits (the time comes first).
        let random = uuid::Uuid::now_v7().simple().to_string();
        let tag = &random[random.len() - 10..];
        CallIds {
            prefix: format!("fg_{tag}_").into_boxed_str(),
            next: AtomicU64::new(1),
        }
    }

    /// The next id.
    pub(crate) fn next(&self) -> String {
        format!(
            "{}{}",
            self.prefix,
            self.next.fetch_add(1, Ordering::Relaxed)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tag of `id`, checking its shape: `fg_`, 10 lowercase hex digits, `_`, a number.
    fn tag(id: &str) -> &str {
        let rest = id.strip_prefix("fg_").unwrap_or_else(|| panic!("{id}"));
        let (tag, n) = rest.split_once('_').unwrap_or_else(|| panic!("{id}"));
        assert_eq!(tag.len(), 10, "{id}");
        assert!(
            tag.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
            "{id}"
        );
        assert!(n.parse::<u64>().is_ok(), "{id}");
        tag
    }

    #[test]
    fn ids_count_up_under_one_tag_and_two_gateways_never_share_one() {
        let (a, b) = (CallIds::new(), CallIds::new());
        let (a1, a2, b1) = (a.next(), a.next(), b.next());
        assert_eq!(tag(&a1), tag(&a2));
        assert!(a1.ends_with("_1") && a2.ends_with("_2"), "{a1} {a2}");
        assert_ne!(
            a1, b1,
            "a restart or another replica numbers its calls apart"
        );
        assert_ne!(tag(&a1), tag(&b1));
    }
}
