//! Cleartext provider URLs: an `http://` `base_url` or OAuth2 `token_url` to a host other than
//! this machine is refused unless the provider opts in with `allow_cleartext = true`, because a
//! provider's credentials and every booking would cross the network readable by anyone on the
//! path. Loopback (the simulator, a sidecar) needs no opt-in.

use reqwest::Url;

use super::model::{HttpAuth, ProviderKind};
use super::reader::Section;

/// Whether `url` would travel in cleartext beyond this machine: `http://` to a host other than
/// a loopback address (`127.0.0.0/8`, `::1`) or `localhost`.
fn is_remote_cleartext(url: &Url) -> bool {
    if url.scheme() != "http" {
        return false;
    }
    let Some(host) = url.host_str() else {
        return true;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => !ip.is_loopback(),
        Ok(std::net::IpAddr::V6(ip)) => {
            !(ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()))
        }
        Err(_) => {
            // Exactly `localhost`: a name under it may be looked up in DNS, which can answer
            // anything.
            !host.trim_end_matches('.').eq_ignore_ascii_case("localhost")
        }
    }
}

/// Refuses a provider's `http://` `base_url` or OAuth2 `token_url` whose host is not this
/// machine, unless the provider says `allow_cleartext = true`: its credentials (an access
/// token, an API key, a client secret, the token the token endpoint answers) and every request
/// and answer (travellers' names, bookings) would cross the network readable and changeable by
/// anyone on the path. The simulator and a sidecar on loopback need no opt-in. The URLs are
/// named (they hold no credential: `reader::parse_provider_url` refused those), with the `https://`
/// form to write instead. `allow_cleartext = true` where nothing needs it is a warning, so a
/// setting left over from a move to https does not wait to silently allow the next mistake.
pub(super) fn check_cleartext(
    name: &str,
    s: &Section<'_>,
    base_url: Option<&Url>,
    kind: Option<&ProviderKind>,
    allow_cleartext: Option<bool>,
) {
    let token_url = match kind {
        Some(ProviderKind::Http {
            auth: HttpAuth::OAuth2 { token_url, .. },
        }) => Some(token_url),
        _ => None,
    };
    let credential = match kind {
        Some(ProviderKind::Http {
            auth: HttpAuth::None,
        }) => "",
        _ => "the provider's credential and ",
    };
    let cleartext: Vec<(&str, &Url)> = [("base_url", base_url), ("token_url", token_url)]
        .into_iter()
        .filter_map(|(key, url)| url.filter(|u| is_remote_cleartext(u)).map(|u| (key, u)))
        .collect();
    match allow_cleartext {
        Some(true) if cleartext.is_empty() && base_url.is_some() => s.warning(
            "allow_cleartext",
            "is set, but every URL of this provider is https:// or on this machine, so nothing needs it; remove it, so that a cleartext URL written later is refused",
        ),
        Some(true) => {}
        _ => {
            for (key, url) in cleartext {
                let what = match key {
                    "token_url" => {
                        "the client id and secret, and the access token answered,".to_string()
                    }
                    _ => format!("{credential}every request and answer"),
                };
                let mut https = url.clone();
                let instead = match https.set_scheme("https") {
                    Ok(()) => format!("Write \"{https}\" if the provider serves https (most do)"),
                    Err(()) => "Write its https:// URL".to_string(),
                };
                s.error(
                    key,
                    format!(
                        "\"{url}\" is cleartext http to a host that is not this machine: {what} would cross the network readable and changeable by anyone on the path. {instead}; cleartext is accepted without more only on loopback (127.0.0.1, ::1, localhost). If the provider is reachable only over a network you trust to protect it (a private link, a mesh that encrypts), say so with `allow_cleartext = true` in [providers.{name}]"
                    ),
                );
            }
        }
    }
}
