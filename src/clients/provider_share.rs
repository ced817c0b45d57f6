//! A client's share of a provider's rate-limit window: who sent this replica's requests to a
//! provider in its current window, and the rule that refuses a client over its fair part
//! while the provider's quota runs low.
//!
//! Why: a provider's rate limit is one quota for every client of the gateway (one account).
//! The per-client rate (`[limits] client_rate`) bounds each client alone, but the clients'
//! rates add up past the provider's quota, and nothing else weighs clients against each other
//! there: one noisy client spends the whole window, the provider answers 429 with
//! `Retry-After`, and the breaker pauses the tool for every client, so the others, who sent
//! almost nothing, are answered with fallbacks until the reset. Background jobs are paced
//! from the provider's allowance (`quota/`), but interactive calls are only counted.
//!
//! The rule ([`ProviderWindow::admit`]): while the provider's latest announcement is fresh
//! (its window has not reset since) and shows `remaining` at or below the reserve
//! (`[limits] provider_reserve` of `ratelimit-limit`, rounded up), a client whose requests
//! are more than `1/k` of the requests this replica sent to the provider in the window
//! (`k`: the clients that sent any) is refused before anything is sent, until the window
//! resets. With one client (`k = 1`) nobody is refused: there is nobody to keep the rest for.
//! A stale announcement (past its reset) refuses nobody: the window it described is over.
//!
//! Why a fraction, and per replica: behind a balancer every replica sees each client's calls
//! in about the same proportion, so a client's share of one replica's requests is its share
//! of the fleet's; and `remaining` comes from the provider itself, the fleet's truth, on every
//! replica. So the rule holds in a fleet without a shared table or a database round trip on
//! the call path. A provider that announces no window (Amadeus: a configured requests per
//! second) has no `remaining` to read, and is not covered.
//!
//! The count is a small map per provider behind the short lock that already holds the
//! provider's readings (`providers::RateLimits`), so a call takes one lock for the rule and
//! the count together, and allocates only for a client's first request of a window.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use tokio::time::Instant;

use super::ClientName;

/// The limit's name, as the answers and the metrics name it.
pub const PROVIDER_SHARE_LIMIT: &str = "client_share_of_provider";

/// One whole, in the parts a reserve is kept in.
const WHOLE: u32 = 1_000_000;

/// The part of a provider's window kept for the clients under their fair share: from 0 (off)
/// to 1 (every request of the window is shared fairly).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProviderReserve {
    /// Parts per million, `0..=WHOLE`.
    ppm: u32,
}

impl ProviderReserve {
    /// A fifth of the window, the default: the rule holds back a heavy client only over the
    /// window's last fifth, so a lone burst that keeps under the quota is never refused.
    pub const DEFAULT: ProviderReserve = ProviderReserve { ppm: WHOLE / 5 };

    /// No reserve: nobody is refused for its share of a provider.
    pub const OFF: ProviderReserve = ProviderReserve { ppm: 0 };

    /// The reserve written as `fraction` (0.2 is a fifth); `Err` says what to write instead.
    pub fn new(fraction: f64) -> Result<Self, String> {
        if !(0.0..=1.0).contains(&fraction) {
            return Err(format!(
                "{fraction} is not a reserve; write a fraction from 0 to 1, e.g. 0.2 (the last fifth of a provider's rate-limit window is kept for the clients under their fair share) or 0 (off)"
            ));
        }
        let ppm = (fraction * f64::from(WHOLE)).round() as u32;
        Ok(ProviderReserve {
            ppm: ppm.min(WHOLE),
        })
    }

    /// Whether it is off (0).
    pub fn is_off(self) -> bool {
        self.ppm == 0
    }

    /// The reserve as parts per million (to be kept in an atomic).
    pub fn parts_per_million(self) -> u32 {
        self.ppm
    }

    /// The reserve of `ppm` parts per million; `None` for 0 (off) or more than a whole.
    pub fn from_parts_per_million(ppm: u32) -> Option<Self> {
        (1..=WHOLE)
            .contains(&ppm)
            .then_some(ProviderReserve { ppm })
    }

    /// The reserve clients are held to when `clients` clients may call: this one while there
    /// are several, none while there is one (nobody to keep anything for) or while it is off.
    pub fn among(self, clients: usize) -> Option<Self> {
        (clients > 1 && !self.is_off()).then_some(self)
    }

    /// The requests kept of a window of `limit`: `ceil(limit × reserve)`. Integer arithmetic,
    /// so `30 × 0.2` is 6, not the float product's 6.000000000000001 rounded up to 7.
    pub fn requests(self, limit: u32) -> u32 {
        let product = u64::from(limit) * u64::from(self.ppm);
        // At most `limit`, since the reserve is at most a whole.
        u32::try_from(product.div_ceil(u64::from(WHOLE))).unwrap_or(limit)
    }
}

impl fmt::Display for ProviderReserve {
    /// As written in the configuration: `0.2`, `1`, `0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", f64::from(self.ppm) / f64::from(WHOLE))
    }
}

/// What a provider said of its window in its latest answer, as the rule reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Announced {
    /// Requests the window allows (`ratelimit-limit`).
    pub limit: u32,
    /// Requests left in it when the answer came (`ratelimit-remaining`).
    pub remaining: u32,
    /// When it resets (`ratelimit-reset`, on tokio's clock).
    pub resets_at: Instant,
}

/// A client refused for being over its share of a provider's window while the window runs
/// low: what it sent, what the others sent, and when the window resets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverProviderShare {
    /// The requests this client sent to the provider in the window, from this replica.
    pub sent: u32,
    /// The requests every client sent to it in the window, from this replica.
    pub total: u32,
    /// The clients that sent them (`k`: a client's fair part is `1/k`).
    pub clients: u32,
    /// Requests the provider said were left.
    pub remaining: u32,
    /// Requests its window allows.
    pub limit: u32,
    /// The time until the window resets, from the refusal.
    pub reset_in: Duration,
    /// The reserve that was reached.
    pub reserve: ProviderReserve,
}

/// One provider's current window as this replica counted it: who sent how many requests.
#[derive(Debug, Default)]
pub struct ProviderWindow {
    /// When the counted window ends: the reset the provider announced when the window's
    /// first request was counted; `None` until a fresh announcement says.
    ends: Option<Instant>,
    /// The requests counted in it.
    total: u32,
    /// Each client's part of them; only clients that sent any have an entry.
    sent: HashMap<ClientName, u32>,
}

impl ProviderWindow {
    /// Whether `client` may send a request to the provider now, by the rule in the module's
    /// docs; if it may, the request is counted as sent (give it back with
    /// [`ProviderWindow::unsent`] when it is not sent after all). `announced` is the
    /// provider's latest announcement; without one (the provider has not answered yet, or
    /// announces nothing) nobody is refused, and the request is counted all the same: the
    /// first requests of a window go out before its first answer announces it.
    pub fn admit(
        &mut self,
        client: &ClientName,
        now: Instant,
        announced: Option<Announced>,
        reserve: ProviderReserve,
    ) -> Result<(), OverProviderShare> {
        self.roll(now, announced);
        if let Some(announced) = announced {
            let sent = self.sent.get(client).copied().unwrap_or(0);
            let clients = u32::try_from(self.sent.len()).unwrap_or(u32::MAX);
            if let Some(over) = over_share(sent, self.total, clients, announced, reserve, now) {
                return Err(over);
            }
        }
        self.total = self.total.saturating_add(1);
        match self.sent.get_mut(client) {
            Some(n) => *n = n.saturating_add(1),
            None => {
                self.sent.insert(client.clone(), 1);
            }
        }
        Ok(())
    }

    /// Whether [`ProviderWindow::admit`] would let `client` send a request now, counting
    /// nothing: asked before a read leads a call that other clients' identical reads may join,
    /// so that a refusal is its client's alone.
    pub fn check(
        &self,
        client: &ClientName,
        now: Instant,
        announced: Option<Announced>,
        reserve: ProviderReserve,
    ) -> Result<(), OverProviderShare> {
        let Some(announced) = announced else {
            return Ok(());
        };
        // The counted window has ended: nobody has sent anything in the new one yet.
        if self.ends.is_some_and(|ends| now >= ends) {
            return Ok(());
        }
        let sent = self.sent.get(client).copied().unwrap_or(0);
        let clients = u32::try_from(self.sent.len()).unwrap_or(u32::MAX);
        match over_share(sent, self.total, clients, announced, reserve, now) {
            Some(over) => Err(over),
            None => Ok(()),
        }
    }

    /// A request [`ProviderWindow::admit`] counted was not sent (its breaker refused it).
    pub fn unsent(&mut self, client: &ClientName) {
        if let Some(n) = self.sent.get_mut(client) {
            *n -= 1;
            self.total = self.total.saturating_sub(1);
            if *n == 0 {
                self.sent.remove(client);
            }
        }
    }

    /// The requests `client` sent in the window counted now.
    pub fn sent_by(&self, client: &ClientName) -> u32 {
        self.sent.get(client).copied().unwrap_or(0)
    }

    /// Starts a new count once the counted window has ended, and learns when a window ends
    /// from a fresh announcement (until one comes, the count runs on).
    fn roll(&mut self, now: Instant, announced: Option<Announced>) {
        if self.ends.is_some_and(|ends| now >= ends) {
            self.ends = None;
            self.total = 0;
            self.sent.clear();
        }
        if self.ends.is_none() {
            self.ends = announced
                .map(|a| a.resets_at)
                .filter(|resets_at| *resets_at > now);
        }
    }
}

/// The pure rule: a client that sent `sent` of the `total` requests `clients` clients sent in
/// the window is refused when the announcement is fresh, its `remaining` is at or below the
/// reserve, and `sent` is more than `total / clients`. Nobody is refused with one client.
pub fn over_share(
    sent: u32,
    total: u32,
    clients: u32,
    announced: Announced,
    reserve: ProviderReserve,
    now: Instant,
) -> Option<OverProviderShare> {
    let fresh = announced.resets_at > now;
    let low = !reserve.is_off() && announced.remaining <= reserve.requests(announced.limit);
    // sent / total > 1 / clients, without division.
    let over = u64::from(sent) * u64::from(clients) > u64::from(total);
    (fresh && low && clients > 1 && over).then(|| OverProviderShare {
        sent,
        total,
        clients,
        remaining: announced.remaining,
        limit: announced.limit,
        reset_in: announced.resets_at - now,
        reserve,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reserve(fraction: f64) -> ProviderReserve {
        ProviderReserve::new(fraction).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A window of 30 with `remaining` left, resetting 40 s after `now`.
    fn announced(now: Instant, remaining: u32) -> Announced {
        Announced {
            limit: 30,
            remaining,
            resets_at: now + Duration::from_secs(40),
        }
    }

    /// Admits `n` requests of `client` (each must be admitted).
    fn send(
        window: &mut ProviderWindow,
        client: &ClientName,
        n: u32,
        now: Instant,
        said: Announced,
    ) {
        for i in 0..n {
            let admitted = window.admit(client, now, Some(said), ProviderReserve::DEFAULT);
            assert_eq!(admitted, Ok(()), "request {i} of {client}");
        }
    }

    #[test]
    fn a_reserve_is_a_fraction_from_0_to_1_kept_as_whole_requests_rounded_up() {
        for bad in [-0.1, 1.000_001, 2.0, f64::NAN, f64::INFINITY] {
            let refused = ProviderReserve::new(bad).expect_err("refused");
            assert!(refused.contains("a fraction from 0 to 1"), "{refused}");
        }
        assert!(reserve(0.0).is_off());
        assert_eq!(reserve(0.2), ProviderReserve::DEFAULT);
        assert_eq!(reserve(0.2).to_string(), "0.2");
        // (limit, reserve, requests kept)
        for (limit, fraction, kept) in [
            (30, 0.2, 6),
            (120, 0.2, 24),
            (7, 0.2, 2),
            (1, 0.2, 1),
            (30, 1.0, 30),
            (30, 0.0, 0),
            (u32::MAX, 1.0, u32::MAX),
        ] {
            assert_eq!(
                reserve(fraction).requests(limit),
                kept,
                "{limit} × {fraction}"
            );
        }
        assert_eq!(
            reserve(0.2).among(1),
            None,
            "one client: nobody to keep for"
        );
        assert_eq!(reserve(0.0).among(3), None, "off");
        assert_eq!(reserve(0.2).among(2), Some(reserve(0.2)));
        let kept = ProviderReserve::from_parts_per_million(reserve(0.25).parts_per_million());
        assert_eq!(kept, Some(reserve(0.25)));
        assert_eq!(ProviderReserve::from_parts_per_million(0), None);
    }

    #[tokio::test(start_paused = true)]
    async fn one_client_is_never_refused_however_low_the_window() {
        let now = Instant::now();
        let mut window = ProviderWindow::default();
        let alone = ClientName::stored("alone");
        send(&mut window, &alone, 29, now, announced(now, 25));
        // The provider says one request is left, then none: still nobody else to keep it for.
        for remaining in [1, 0] {
            let said = announced(now, remaining);
            let admitted = window.admit(&alone, now, Some(said), reserve(1.0));
            assert_eq!(admitted, Ok(()), "remaining {remaining}");
        }
        assert_eq!(window.sent_by(&alone), 31);
    }

    #[tokio::test(start_paused = true)]
    async fn the_heavy_client_is_refused_only_below_the_reserve_and_only_while_over_its_part() {
        let now = Instant::now();
        let mut window = ProviderWindow::default();
        let (heavy, light) = (ClientName::stored("heavy"), ClientName::stored("light"));
        send(&mut window, &light, 2, now, announced(now, 28));
        // Above the reserve (6 of 30), the heavy client sends as much as it likes.
        send(&mut window, &heavy, 20, now, announced(now, 7));
        // At the reserve: refused, with what it sent and when the window resets.
        let later = now + Duration::from_secs(10);
        let low = announced(now, 6);
        let refused = window.admit(&heavy, later, Some(low), ProviderReserve::DEFAULT);
        assert_eq!(
            refused,
            Err(OverProviderShare {
                sent: 20,
                total: 22,
                clients: 2,
                remaining: 6,
                limit: 30,
                reset_in: Duration::from_secs(30),
                reserve: ProviderReserve::DEFAULT,
            })
        );
        assert_eq!(window.sent_by(&heavy), 20, "a refusal is not counted");
        assert_eq!(
            window.check(&heavy, later, Some(low), ProviderReserve::DEFAULT),
            refused,
            "the check without counting says the same"
        );
        assert_eq!(
            window.check(&light, later, Some(low), ProviderReserve::DEFAULT),
            Ok(())
        );
        assert_eq!(window.sent_by(&light), 2, "a check counts nothing");
        // The light client, under its half, still sends, down to the window's last request.
        for remaining in [6, 3, 0] {
            let said = announced(now, remaining);
            let admitted = window.admit(&light, later, Some(said), ProviderReserve::DEFAULT);
            assert_eq!(admitted, Ok(()), "remaining {remaining}");
        }
        // The heavy client is refused only while over its part: once the light one has sent as
        // many, they are even (20 of 40 is not more than half), and it may send again.
        send(&mut window, &light, 15, later, announced(now, 30));
        assert_eq!(window.sent_by(&light), 20);
        let even = window.admit(&heavy, later, Some(low), ProviderReserve::DEFAULT);
        assert_eq!(even, Ok(()), "even: not over its part");
        let over = window.admit(&heavy, later, Some(low), ProviderReserve::DEFAULT);
        assert!(over.is_err(), "21 of 41 is over half again");
    }

    #[tokio::test(start_paused = true)]
    async fn a_stale_announcement_refuses_nobody_and_a_new_window_counts_afresh() {
        let now = Instant::now();
        let mut window = ProviderWindow::default();
        let (heavy, light) = (ClientName::stored("heavy"), ClientName::stored("light"));
        let said = announced(now, 20);
        send(&mut window, &light, 1, now, said);
        send(&mut window, &heavy, 9, now, said);
        let low = Announced {
            remaining: 0,
            ..said
        };
        assert!(
            window
                .admit(&heavy, now, Some(low), ProviderReserve::DEFAULT)
                .is_err(),
            "fresh and spent: refused"
        );
        // The reset has passed, and no answer has come since: the announcement describes a
        // window that is over, so it refuses nobody, and the count starts again.
        let after = said.resets_at;
        let checked = window.check(&heavy, after, Some(low), ProviderReserve::DEFAULT);
        assert_eq!(checked, Ok(()), "stale: nobody refused");
        let admitted = window.admit(&heavy, after, Some(low), ProviderReserve::DEFAULT);
        assert_eq!(admitted, Ok(()), "stale: nobody refused");
        assert_eq!(window.sent_by(&heavy), 1, "a new window: counted afresh");
        assert_eq!(window.sent_by(&light), 0);
        // Until an answer announces the new window, the old announcement (nothing left) says
        // nothing of it: the heavy client, over its half of what was sent since, still sends.
        send(&mut window, &light, 1, after, low);
        for n in 0..3 {
            let admitted = window.admit(&heavy, after, Some(low), ProviderReserve::DEFAULT);
            assert_eq!(admitted, Ok(()), "stale: request {n} not refused");
        }
        // The next announcement, low at once: the heavy client (4 of 5) is over its part.
        let next = Announced {
            remaining: 2,
            resets_at: after + Duration::from_secs(60),
            ..said
        };
        assert!(
            window
                .admit(&heavy, after, Some(next), ProviderReserve::DEFAULT)
                .is_err()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_requests_count_before_any_announcement_and_an_unsent_one_is_given_back() {
        let now = Instant::now();
        let mut window = ProviderWindow::default();
        let (heavy, light) = (ClientName::stored("heavy"), ClientName::stored("light"));
        // The window's first request goes out before its first answer announces it.
        let first = window.admit(&light, now, None, ProviderReserve::DEFAULT);
        assert_eq!(first, Ok(()), "nothing announced: nobody refused");
        assert_eq!(window.sent_by(&light), 1, "but counted");
        for _ in 0..5 {
            let admitted = window.admit(&heavy, now, None, ProviderReserve::DEFAULT);
            assert_eq!(admitted, Ok(()));
        }
        // Announced low: the heavy client (5 of 6) is over its half.
        let said = announced(now, 0);
        assert!(
            window
                .admit(&heavy, now, Some(said), ProviderReserve::DEFAULT)
                .is_err()
        );
        // A new window (the announced one reset): counted afresh.
        let next = now + Duration::from_secs(40);
        send(&mut window, &light, 1, next, announced(next, 20));
        send(&mut window, &heavy, 1, next, announced(next, 20));
        let said = announced(next, 0);
        let now = next;
        assert_eq!(
            window.admit(&heavy, now, Some(said), ProviderReserve::DEFAULT),
            Ok(()),
            "1 of 2 is its half, not more"
        );
        window.unsent(&heavy);
        assert_eq!(
            window.sent_by(&heavy),
            1,
            "the breaker refused it: not sent"
        );
        window.unsent(&light);
        assert_eq!(window.sent_by(&light), 0);
        assert!(!window.sent.contains_key(&light), "no entry kept at 0");
        assert_eq!(window.total, 1);
        assert_eq!(
            window.admit(&heavy, now, Some(said), ProviderReserve::OFF),
            Ok(()),
            "a reserve of 0 refuses nobody"
        );
    }
}
