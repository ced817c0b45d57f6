//! Renders a tool's fallback text from `prompts/`, and the few fixed sentences the pipeline adds:
//! honest words, never invented data.

use crate::providers::ErrorKind;

/// The values a fallback prompt may use.
#[derive(Debug, Clone)]
pub struct FallbackValues<'a> {
    /// `{tool}`.
    pub tool: &'a str,
    /// `{retry_after_s}`.
    pub retry_after_s: u64,
    /// `{provider}`.
    pub provider: &'a str,
    /// `{available_tools}`: tools whose breakers are closed right now.
    pub available_tools: &'a [String],
}

/// Replaces the placeholders of `template` (checked at config load, so every `{…}` left is text).
pub fn render(template: &str, v: &FallbackValues<'_>) -> String {
    let available = if v.available_tools.is_empty() {
        "none at the moment".to_string()
    } else {
        v.available_tools.join(", ")
    };
    template
        .replace("{tool}", v.tool)
        .replace("{retry_after_s}", &v.retry_after_s.to_string())
        .replace("{provider}", v.provider)
        .replace("{available_tools}", &available)
        .trim()
        .to_string()
}

/// Whether a failed write may still have been carried out by the provider.
pub(crate) fn may_have_executed(kind: &ErrorKind) -> bool {
    !matches!(
        kind,
        ErrorKind::Connect
            | ErrorKind::RateLimited { .. }
            | ErrorKind::Misconfigured { .. }
            | ErrorKind::Rejected { .. }
    )
}

/// The answer for a write whose request reached the provider without a confirmation back.
pub(crate) fn uncertain_write_text(tool: &str, provider: &str) -> String {
    format!(
        "The {tool} request reached the provider ({provider}) but no confirmation came back, so it is not known whether it went through. Do not tell the traveller it is booked, and do not say nothing was booked either. Do not book again with a new idempotency key: call {tool} again later with the same idempotency key, which can never book twice, to learn the outcome."
    )
}

/// The sentence added while a provider's quota is exhausted (it resets in `left`).
pub(crate) fn quota_note(provider: &str, tool: &str, left: std::time::Duration) -> String {
    let days = left.as_secs() / 86_400;
    let when = if days >= 1 {
        format!("{days} day{}", if days == 1 { "" } else { "s" })
    } else {
        "a few hours".to_string()
    };
    format!(
        "\nThe {provider} account's request quota is used up and resets in about {when}; until then this provider cannot answer, so do not promise {tool} sooner."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_is_filled() {
        let text = render(
            "{tool} down at {provider}; back in {retry_after_s}s; try {available_tools}.\n",
            &FallbackValues {
                tool: "search_flights",
                retry_after_s: 30,
                provider: "duffel",
                available_tools: &["search_hotels".into(), "check_hotel_availability".into()],
            },
        );
        assert_eq!(
            text,
            "search_flights down at duffel; back in 30s; try search_hotels, check_hotel_availability."
        );
    }

    #[test]
    fn no_available_tools_is_said_in_words() {
        let text = render(
            "Use {available_tools}.",
            &FallbackValues {
                tool: "t",
                retry_after_s: 1,
                provider: "p",
                available_tools: &[],
            },
        );
        assert_eq!(text, "Use none at the moment.");
    }
}
