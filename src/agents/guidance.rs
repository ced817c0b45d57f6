//! The agent guidance a client reads: `prompts/agent-guidance.md` without the lines that name a
//! tool the client may not call.
//!
//! A model must not be told about tools it cannot use (it would try them, or tell the traveller
//! they exist), so the operator writes advice about one tool on a line of its own, and a client
//! whose scope leaves that tool out never sees the line.

/// `text` without the lines naming any of `catalog` that is not in `allowed`. A name counts only
/// as a whole word (`book_flight` does not name `book_flights`).
pub fn for_tools(text: &str, catalog: &[&str], allowed: &[&str]) -> String {
    let hidden: Vec<&str> = catalog
        .iter()
        .copied()
        .filter(|t| !allowed.contains(t))
        .collect();
    let kept: Vec<&str> = text
        .lines()
        .filter(|line| !hidden.iter().any(|tool| names(line, tool)))
        .collect();
    kept.join("\n").trim().to_string()
}

/// Whether `line` holds `tool` as a whole word (tool names are `[a-z0-9_]`).
fn names(line: &str, tool: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    line.match_indices(tool).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + tool.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_about_tools_out_of_scope_are_left_out() {
        let text = "Every result has a status.\n\n- stale: confirm before booking.\n- For flights, confirm with price_flight_offer first.\n\nBookings: book_flight needs a key.\nbook_flights is not a tool.";
        let catalog = ["search_flights", "price_flight_offer", "book_flight"];
        let reader = for_tools(text, &catalog, &["search_flights"]);
        assert_eq!(
            reader,
            "Every result has a status.\n\n- stale: confirm before booking.\n\nbook_flights is not a tool."
        );
        assert_eq!(for_tools(text, &catalog, &catalog), text);
    }
}
