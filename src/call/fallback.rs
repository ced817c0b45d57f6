//! Renders a tool's fallback text from `prompts/`: honest words, never invented data.

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
