//! The README's configuration examples, copied as a reader copies them, pass the check
//! `faregate check` runs.

use super::*;

const README: &str = include_str!("../../../README.md");

/// The ```toml block of the README whose first line is `# {name}`.
fn block(name: &str) -> &'static str {
    let opening = format!("```toml\n# {name}\n");
    let start = README
        .find(&opening)
        .unwrap_or_else(|| panic!("no ```toml block starting with # {name} in README.md"))
        + "```toml\n".len();
    let len = README[start..]
        .find("```")
        .unwrap_or_else(|| panic!("the block of {name} never closes"));
    &README[start..start + len]
}

#[test]
fn the_add_your_own_tool_example_passes_check() {
    let main = MapFiles::defaults()
        .0
        .get(Path::new("/cfg/faregate.toml"))
        .cloned()
        .unwrap_or_default();
    let config = MapFiles::defaults()
        .put(
            "faregate.toml",
            &format!("{main}\n{}", block("faregate.toml")),
        )
        .put(
            "tools/flight_position.toml",
            block("tools/flight_position.toml"),
        )
        .put(
            "prompts/flight_position.unavailable.md",
            "Live flight status from {provider} is unavailable; try again in {retry_after_s} seconds.",
        )
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    let tool = config.tool("flight_position");
    assert!(
        tool.is_some_and(|t| t.http.is_some() && t.providers == ["flights_api"]),
        "{tool:?}"
    );
}
