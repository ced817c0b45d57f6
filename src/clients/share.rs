//! A client's share of a tool's concurrent calls: how many of a tool's bulkhead slots
//! (`max_concurrent`) one client may hold at once, and the count of what each client holds.
//!
//! Why: the bulkhead bounds a tool's calls in flight for everyone, so without a share one
//! client's burst (a runaway agent, a team's 1,000 queued jobs, a slow provider holding its
//! calls) takes every slot, and every other client is answered `unavailable` for a tool that
//! is healthy: one caller's trouble becomes everyone's outage. The per-client in-flight cap
//! (`[limits] client_max_concurrent_calls`) does not prevent it, since it counts a client's
//! calls across all tools and may well be larger than one tool's bulkhead.
//!
//! The rule: while more than one client may call the gateway, a client holds at most
//! `ceil(max_concurrent × share)` of a tool's slots, and at least one ([`ToolShare::slots`]).
//! With one client there is nobody to starve, and the bulkhead alone bounds it. Like the
//! bulkheads, the count is per replica.
//!
//! A share is kept in parts per million, so `slots` is integer arithmetic: `30 × 0.1` is 3,
//! where the float product (3.0000000000000004) would round up to 4.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use super::ClientName;

/// The limit's name, as the configuration, the answers and the metrics name it.
pub const SHARE_LIMIT: &str = "client_share_of_tool";

/// One whole, in the parts a share is kept in.
const WHOLE: u32 = 1_000_000;

/// The share of a tool's concurrent calls one client may hold: more than 0, at most 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ToolShare {
    /// Parts per million, `1..=WHOLE`.
    ppm: u32,
}

impl ToolShare {
    /// Half of a tool's concurrent calls: the default. Two clients at their share fill the
    /// bulkhead between them; with more, one client at its share leaves the others half.
    pub const HALF: ToolShare = ToolShare { ppm: WHOLE / 2 };

    /// The share written as `fraction` (0.5 is half); `Err` says what to write instead.
    pub fn new(fraction: f64) -> Result<Self, String> {
        if !(fraction > 0.0 && fraction <= 1.0) {
            return Err(format!(
                "{fraction} is not a share; write a fraction greater than 0 and at most 1, e.g. 0.5 (a client may hold half of a tool's concurrent calls) or 1 (no share beyond the bulkhead)"
            ));
        }
        // A share under one part per million is still one slot at least: kept as the least.
        let ppm = ((fraction * f64::from(WHOLE)).round() as u32).clamp(1, WHOLE);
        Ok(ToolShare { ppm })
    }

    /// The share as parts per million (to be kept in an atomic).
    pub fn parts_per_million(self) -> u32 {
        self.ppm
    }

    /// The share of `ppm` parts per million; `None` for 0 (no share) or more than a whole.
    pub fn from_parts_per_million(ppm: u32) -> Option<Self> {
        (1..=WHOLE).contains(&ppm).then_some(ToolShare { ppm })
    }

    /// Whether the share is the whole tool: no cap beyond the bulkhead.
    pub fn is_whole(self) -> bool {
        self.ppm == WHOLE
    }

    /// The share clients are held to when `clients` clients may call (the distinct clients
    /// holding a key; the admin key is the operator's, not a client's): this one while there
    /// are several, none while there is one (or none: auth off, the one local client), since
    /// one client starves nobody; none either for the whole tool, which caps nothing.
    pub fn among(self, clients: usize) -> Option<Self> {
        (clients > 1 && !self.is_whole()).then_some(self)
    }

    /// How many of a tool's `max_concurrent` slots one client may hold:
    /// `ceil(max_concurrent × share)`, at least 1, never more than `max_concurrent` (nor less
    /// than 1 when `max_concurrent` is 0, which configuration never allows).
    pub fn slots(self, max_concurrent: u32) -> u32 {
        let product = u64::from(max_concurrent) * u64::from(self.ppm);
        let slots = product.div_ceil(u64::from(WHOLE));
        // At most `max_concurrent`, since the share is at most a whole.
        u32::try_from(slots).unwrap_or(max_concurrent).max(1)
    }
}

impl fmt::Display for ToolShare {
    /// As written in the configuration: `0.5`, `1`, `0.125`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", f64::from(self.ppm) / f64::from(WHOLE))
    }
}

/// The slots of one tool each client holds now. Shared (`Arc`) by the tool and every
/// [`ShareSlot`] taken from it, and carried over by a reload, so calls in flight still count.
#[derive(Debug, Default)]
pub struct Shares {
    /// A std mutex: held only to count a slot in or out, never across an await. Only clients
    /// holding a slot have an entry, so it is as small as the clients calling the tool now.
    held: Mutex<HashMap<ClientName, u32>>,
}

/// A client that holds all the slots its share allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareFull {
    /// The slots the client holds, all its share allows.
    pub held: u32,
}

/// One slot of a client's share, given back when dropped; or no slot at all, for a call that
/// counts against no share (a single client, the gateway's own probe).
#[derive(Debug)]
pub struct ShareSlot {
    held: Option<(Arc<Shares>, ClientName)>,
}

impl ShareSlot {
    /// A slot of no share.
    pub fn free() -> Self {
        ShareSlot { held: None }
    }
}

impl Drop for ShareSlot {
    fn drop(&mut self) {
        if let Some((shares, client)) = self.held.take() {
            shares.give_back(&client);
        }
    }
}

impl Shares {
    /// Takes one of `client`'s slots, of which it may hold `cap`; refused when it holds them
    /// all already.
    pub fn take(self: &Arc<Self>, client: &ClientName, cap: u32) -> Result<ShareSlot, ShareFull> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let count = held.entry(client.clone()).or_insert(0);
        if *count >= cap {
            let full = ShareFull { held: *count };
            if *count == 0 {
                held.remove(client);
            }
            return Err(full);
        }
        *count += 1;
        Ok(ShareSlot {
            held: Some((Arc::clone(self), client.clone())),
        })
    }

    /// The slots `client` holds now.
    pub fn held(&self, client: &ClientName) -> u32 {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.get(client).copied().unwrap_or(0)
    }

    /// The slots each client holds now, of the clients that hold some (for the job
    /// dispatcher, which claims no more of a client's jobs than its share has room for).
    pub fn holding(&self) -> Vec<(ClientName, u32)> {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.iter()
            .map(|(client, n)| (client.clone(), *n))
            .collect()
    }

    fn give_back(&self, client: &ClientName) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = held.get_mut(client) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                held.remove(client);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(fraction: f64) -> ToolShare {
        ToolShare::new(fraction).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_client_holds_the_ceiling_of_its_share_and_at_least_one_slot() {
        // (max_concurrent, share, slots one client may hold)
        let cases = [
            (16, 0.5, 8),
            (17, 0.5, 9),
            (3, 0.5, 2),
            (2, 0.5, 1),
            (1, 0.5, 1),
            (64, 0.25, 16),
            (30, 0.1, 3),
            (10, 0.3, 3),
            (7, 0.01, 1),
            (1, 0.000_000_1, 1),
            (16, 1.0, 16),
            (100_000, 0.5, 50_000),
            (u32::MAX, 1.0, u32::MAX),
        ];
        for (max_concurrent, fraction, slots) in cases {
            assert_eq!(
                share(fraction).slots(max_concurrent),
                slots,
                "{max_concurrent} × {fraction}"
            );
        }
    }

    #[test]
    fn a_share_is_more_than_nothing_and_at_most_the_whole() {
        for bad in [0.0, -0.5, 1.000_001, 2.0, f64::NAN, f64::INFINITY] {
            let refused = ToolShare::new(bad).expect_err("refused");
            assert!(
                refused.contains("greater than 0 and at most 1"),
                "{refused}"
            );
        }
        assert!(share(1.0).is_whole());
        assert!(!share(0.999_999).is_whole());
        assert_eq!(share(0.5).to_string(), "0.5");
        assert_eq!(share(1.0).to_string(), "1");
        let kept = ToolShare::from_parts_per_million(share(0.125).parts_per_million());
        assert_eq!(kept, Some(share(0.125)));
        assert_eq!(ToolShare::from_parts_per_million(0), None);
        assert_eq!(ToolShare::from_parts_per_million(WHOLE + 1), None);
    }

    #[test]
    fn only_several_clients_are_held_to_a_share() {
        assert_eq!(share(0.5).among(0), None, "auth off: the one local client");
        assert_eq!(share(0.5).among(1), None, "one key: nobody to starve");
        assert_eq!(share(0.5).among(2), Some(share(0.5)));
        assert_eq!(share(1.0).among(5), None, "the whole tool caps nothing");
    }

    #[test]
    fn slots_are_counted_per_client_and_given_back_when_dropped() {
        let shares = Arc::new(Shares::default());
        let (a, b) = (ClientName::stored("a"), ClientName::stored("b"));
        let first = shares.take(&a, 2);
        let second = shares.take(&a, 2);
        assert!(first.is_ok() && second.is_ok());
        assert_eq!(shares.take(&a, 2).err(), Some(ShareFull { held: 2 }));
        assert!(shares.take(&b, 2).is_ok(), "another client has its own");
        assert_eq!(shares.held(&a), 2);
        drop(first);
        assert_eq!(shares.held(&a), 1);
        let third = shares.take(&a, 2);
        assert!(third.is_ok(), "a slot given back is taken again");
        drop((second, third));
        assert_eq!(shares.held(&a), 0);
        assert!(
            shares.held.lock().map(|h| h.is_empty()).unwrap_or(false),
            "nobody holds a slot: no entry is kept"
        );
        drop(ShareSlot::free());
    }
}
