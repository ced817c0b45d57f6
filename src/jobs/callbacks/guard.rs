//! The callback SSRF guard. A callback URL comes from a client, and the gateway posts to it
//! from inside the operator's network, so it is held to three rules:
//! 1. it must match an entry of the client's allowlist (its own `callback_allowlist`, else
//!    `[auth] callback_allowlist`, see [`super::allowlist`]): same scheme, host and port, and a
//!    path under the entry's path ([`allowed`]);
//! 2. a host *name* must resolve to public addresses only: loopback, private, link-local
//!    (cloud metadata at 169.254.169.254), unique-local, CGNAT and other special ranges are
//!    refused ([`is_private`]); an internal receiver is allowed by writing its address itself
//!    in the allowlist (`"http://10.0.0.5:8080/hooks/"`), which is an explicit decision;
//! 3. redirects are never followed (a public receiver cannot bounce the post inward).
//!
//! Rule 2 is checked at submission (a clear 422) and again at delivery by the HTTP client's own
//! resolver ([`GuardedResolver`]), which drops private addresses at connect time, so a DNS
//! answer that changes between the check and the post (rebinding) cannot reach inside.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::allowlist::Allowlist;

/// Whether `url` is allowed: same scheme and host (and port), and its path is the prefix's path
/// or under it (an entry `/hooks` admits `/hooks` and `/hooks/x`, not `/hooks-admin`). No user
/// info, no fragments.
pub fn allowed(url: &Url, allowlist: &[Url]) -> bool {
    if unsendable(url).is_some() {
        return false;
    }
    allowlist.iter().any(|prefix| {
        url.scheme() == prefix.scheme()
            && url.host_str() == prefix.host_str()
            && url.port_or_known_default() == prefix.port_or_known_default()
            && under(url.path(), prefix.path())
    })
}

/// What makes `url` no callback URL whatever the allowlist says, in words: credentials, a
/// fragment, or a path that steps elsewhere once decoded. `None` when it has none of these.
fn unsendable(url: &Url) -> Option<&'static str> {
    if !url.username().is_empty() || url.password().is_some() {
        return Some(
            "carries a user name or password: a callback URL carries none (credentials in a URL end up in logs; the receiver checks the Faregate-Signature instead)",
        );
    }
    if url.fragment().is_some() {
        return Some("has a #fragment, which is never sent; leave it out");
    }
    // (An encoded `.` or `..` segment the URL parser has already resolved, as a plain one.)
    let path = url.path().to_ascii_lowercase();
    if path.contains("%2f") || path.contains("%5c") {
        return Some(
            "has an encoded \"/\" or backslash in its path, which a receiver that decodes before routing would follow out of the allowlisted path; write the path plainly",
        );
    }
    None
}

/// Whether `path` is `prefix` or a path below it, segment by segment.
///
/// The URL parser has already resolved literal `.` and `..` segments, but not encoded ones: a
/// receiver that decodes `%2F` or `%2E` before it routes would read `/hooks/..%2Fadmin` as
/// `/admin`, outside the entry. So a segment below the prefix that decodes to `.` or `..` is
/// refused (an encoded slash or backslash anywhere is refused by [`unsendable`]).
fn under(path: &str, prefix: &str) -> bool {
    let Some(rest) = path.strip_prefix(prefix) else {
        return false;
    };
    if !(rest.is_empty() || prefix.ends_with('/') || rest.starts_with('/')) {
        return false;
    }
    let rest = rest.to_ascii_lowercase();
    !rest.split('/').any(|segment| {
        let decoded = segment.replace("%2e", ".");
        decoded == "." || decoded == ".."
    })
}

/// Whether `ip` is an address a callback must never reach through a host name: loopback,
/// private (RFC 1918), link-local, unique-local, CGNAT, unspecified, broadcast, multicast,
/// documentation, benchmarking and reserved ranges; IPv4-mapped IPv6 is judged as IPv4.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_private_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_private_v4(v4);
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00 // unique local fc00::/7
                || (first & 0xffc0) == 0xfe80 // link-local fe80::/10
                || (first == 0x2001 && v6.segments()[1] == 0x0db8) // documentation
                || (first == 0x0064 && v6.segments()[1] == 0xff9b) // NAT64 64:ff9b::/96, 64:ff9b:1::/48
                || (first & 0xffc0) == 0xfec0 // site-local fec0::/10 (deprecated, still routed by some)
                || v6.segments()[..6] == [0; 6] // IPv4-compatible ::a.b.c.d (deprecated)
                || v6 == Ipv6Addr::from([0u16; 8])
        }
    }
}

fn is_private_v4(v4: Ipv4Addr) -> bool {
    let [a, b, _, _] = v4.octets();
    v4.is_private()
        || v4.is_loopback()
        || v4.is_link_local()
        || v4.is_unspecified()
        || v4.is_broadcast()
        || v4.is_multicast()
        || v4.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // CGNAT 100.64.0.0/10
        || (a == 192 && b == 0 && v4.octets()[2] == 0) // IETF 192.0.0.0/24
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240 // reserved
}

/// How long the submission check waits for DNS before leaving the decision to delivery.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(2);

/// The submission check: the client's allowlist, then (for a host name) its addresses. `Err` is
/// the message for the client (a 422). A name that does not resolve now is accepted: delivery
/// resolves again and refuses private addresses then.
pub async fn check_target(url: &Url, allowlist: &Allowlist) -> Result<(), String> {
    if !allowed(url, allowlist.entries()) {
        // A URL that could be under an entry but for what it carries is told what that is: "use
        // a URL under …" would read as nonsense beside a URL that visibly starts with one.
        return Err(match unsendable(url) {
            Some(why) => format!("callback_url {url} {why}"),
            None => allowlist.refusal(url),
        });
    }
    let host = url.host_str().unwrap_or_default();
    if host.trim_matches(['[', ']']).parse::<IpAddr>().is_ok() {
        // An address literal passed the allowlist, so the operator wrote that address.
        return Ok(());
    }
    let name = host;
    let port = url.port_or_known_default().unwrap_or(443);
    let lookup = tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((name, port)));
    let Ok(Ok(addrs)) = lookup.await else {
        return Ok(());
    };
    if let Some(private) = addrs.map(|a| a.ip()).find(|ip| is_private(*ip)) {
        return Err(format!(
            "callback_url host {name} resolves to {private}, a private or local address; callbacks go to public addresses only, unless the allowlist names the address itself (e.g. \"{}://{}/…\")",
            url.scheme(),
            SocketAddr::new(private, port)
        ));
    }
    Ok(())
}

/// The callback HTTP client's resolver: the system's answer without private addresses.
#[derive(Debug, Clone, Copy, Default)]
pub struct GuardedResolver;

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let public: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|a| !is_private(a.ip()))
                .collect();
            if public.is_empty() {
                return Err(format!(
                    "callback host {host} resolves only to private or local addresses; not sent"
                )
                .into());
            }
            Ok(Box::new(public.into_iter()) as Addrs)
        })
    }
}

/// The HTTP client that posts callbacks: short timeouts, no redirects, the guarded resolver.
pub fn client() -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .connect_timeout(Duration::from_secs(3))
        .redirect(reqwest::redirect::Policy::none())
        // Straight to the receiver, never through a proxy from the environment
        // (`HTTPS_PROXY`): a proxy would resolve the host itself, past the guarded resolver.
        .no_proxy()
        .dns_resolver(GuardedResolver)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::ClientName;
    use crate::jobs::callbacks::allowlist::Allowlists;

    #[test]
    fn only_allowlisted_prefixes_pass() {
        let allow =
            vec![Url::parse("https://chat.example.com/hooks/").unwrap_or_else(|e| panic!("{e}"))];
        let ok = |u: &str| allowed(&Url::parse(u).unwrap_or_else(|e| panic!("{e}")), &allow);
        assert!(ok("https://chat.example.com/hooks/faregate?x=1"));
        assert!(!ok("http://chat.example.com/hooks/faregate"), "scheme");
        assert!(!ok("https://chat.example.com.evil.net/hooks/"), "host");
        assert!(!ok("https://chat.example.com:8443/hooks/"), "port");
        assert!(!ok("https://chat.example.com/other"), "path");
        assert!(!ok("https://user:pw@chat.example.com/hooks/"), "user info");
        assert!(!ok("https://169.254.169.254/hooks/"), "metadata address");
        assert!(
            !ok("https://chat.example.com/hooks"),
            "the prefix's own parent"
        );
        assert!(
            !ok("https://chat.example.com/hooks/../admin"),
            "dot segments are resolved before the prefix check"
        );
        for encoded in [
            "https://chat.example.com/hooks/..%2fadmin",
            "https://chat.example.com/hooks/..%2Fadmin",
            "https://chat.example.com/hooks/%2e%2e/admin",
            "https://chat.example.com/hooks/.%2E/admin",
            "https://chat.example.com/hooks/x%5c..%5cadmin",
        ] {
            assert!(!ok(encoded), "an encoded way out: {encoded}");
        }
        assert!(
            ok("https://chat.example.com/hooks/a%20b/v1.2/..x"),
            "other escapes and dots inside a segment are fine"
        );
    }

    #[test]
    fn an_entry_without_a_trailing_slash_admits_its_path_and_below_only() {
        let allow =
            vec![Url::parse("https://chat.example.com/hooks").unwrap_or_else(|e| panic!("{e}"))];
        let ok = |u: &str| allowed(&Url::parse(u).unwrap_or_else(|e| panic!("{e}")), &allow);
        assert!(ok("https://chat.example.com/hooks"));
        assert!(ok("https://chat.example.com/hooks/faregate"));
        assert!(
            !ok("https://chat.example.com/hooks-admin"),
            "a sibling path"
        );
        assert!(
            !ok("https://chat.example.com/hooksX/faregate"),
            "a sibling path"
        );
    }

    #[test]
    fn private_and_special_addresses_are_recognised() {
        let private = [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
            "64:ff9b:1::a00:1",
            "fec0::1",
            "::7f00:1",
        ];
        for ip in private {
            let ip: IpAddr = ip.parse().unwrap_or_else(|e| panic!("{ip}: {e}"));
            assert!(is_private(ip), "{ip} is private");
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "172.32.0.1",
            "100.128.0.1",
        ] {
            let ip: IpAddr = ip.parse().unwrap_or_else(|e| panic!("{ip}: {e}"));
            assert!(!is_private(ip), "{ip} is public");
        }
    }

    #[tokio::test]
    async fn names_that_resolve_inward_are_refused_and_literals_are_explicit() {
        let gateways = |list: Vec<Url>| Allowlists::from(list).of(&ClientName::local());
        let allow = |u: &str| gateways(vec![Url::parse(u).unwrap_or_else(|e| panic!("{e}"))]);
        let url = |u: &str| Url::parse(u).unwrap_or_else(|e| panic!("{e}"));
        // localhost is a name: it resolves to loopback, so it is refused even when listed.
        let e = check_target(
            &url("http://localhost:9/hooks/x"),
            &allow("http://localhost:9/hooks/"),
        )
        .await
        .unwrap_err();
        assert!(
            e.contains("resolves to 127.0.0.1") || e.contains("resolves to ::1"),
            "{e}"
        );
        assert!(
            e.contains("unless the allowlist names the address itself"),
            "{e}"
        );
        // The address written in the allowlist is the operator's explicit choice.
        assert_eq!(
            check_target(
                &url("http://127.0.0.1:9/hooks/x"),
                &allow("http://127.0.0.1:9/hooks/")
            )
            .await,
            Ok(())
        );
        let e = check_target(
            &url("http://127.0.0.1:9/other"),
            &allow("http://127.0.0.1:9/hooks/"),
        )
        .await
        .unwrap_err();
        assert!(e.contains("not on the gateway's callback allowlist; use a URL under one of: http://127.0.0.1:9/hooks/"), "{e}");
        // A URL under an entry but for what it carries is told what that is.
        for (refused, says) in [
            (
                "http://user:pw@127.0.0.1:9/hooks/x",
                "carries a user name or password",
            ),
            ("http://127.0.0.1:9/hooks/..%2fadmin", "encoded \"/\""),
            (
                "http://127.0.0.1:9/hooks/a%5c..%5cb",
                "encoded \"/\" or backslash",
            ),
            ("http://127.0.0.1:9/hooks/x#top", "#fragment"),
        ] {
            let e = check_target(&url(refused), &allow("http://127.0.0.1:9/hooks/"))
                .await
                .unwrap_err();
            assert!(
                e.contains(says) && !e.contains("use a URL under"),
                "{refused}: {e}"
            );
        }
        let e = check_target(&url("http://127.0.0.1:9/hooks/"), &gateways(Vec::new()))
            .await
            .unwrap_err();
        assert!(e.contains("no callback allowlist"), "{e}");
    }

    #[tokio::test]
    async fn the_delivery_resolver_never_answers_a_private_address() {
        let name: Name = "localhost".parse().unwrap_or_else(|_| panic!("name"));
        let res = GuardedResolver.resolve(name).await;
        let e = match res {
            Ok(addrs) => panic!("resolved to {:?}", addrs.collect::<Vec<_>>()),
            Err(e) => e.to_string(),
        };
        assert!(e.contains("only to private or local addresses"), "{e}");
    }
}
